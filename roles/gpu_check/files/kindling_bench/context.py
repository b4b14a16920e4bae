"""torch set-up: importing torch lazily, TF32, bf16 support, out-of-memory, the Context."""

from __future__ import annotations

import contextlib
import gc
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from .common import _T0


def import_torch(with_torchvision: bool = True) -> Tuple[Any, Any, Optional[str]]:
    """(torch, torchvision or None, None) or (None, None, message)."""
    try:
        import torch
    except Exception as exc:  # ImportError, or an OSError from a broken CUDA library
        return (
            None,
            None,
            f"torch is not importable with {sys.executable}: {type(exc).__name__}: {exc}",
        )
    if not with_torchvision:
        return torch, None, None
    try:
        import torchvision
    except Exception as exc:
        return (
            None,
            None,
            f"torchvision is not importable with {sys.executable} "
            f"(torch {torch.__version__} is): {type(exc).__name__}: {exc}",
        )
    return torch, torchvision, None


def set_tf32(torch: Any, enabled: Optional[bool]) -> Dict[str, Any]:
    """Set TF32 for matmul and cuDNN convolutions; None restores torch's defaults.

    torch >= 2.9 has per-backend ``fp32_precision`` and raises when it is mixed with the
    legacy ``allow_tf32`` flags, so only one of the two APIs is ever used.
    """
    matmul = torch.backends.cuda.matmul
    conv = getattr(torch.backends.cudnn, "conv", None)
    new_api = conv is not None and _has_attr(matmul, "fp32_precision")
    if new_api:
        if enabled is None:
            matmul.fp32_precision, conv.fp32_precision = "none", "tf32"
        else:
            value = "tf32" if enabled else "ieee"
            matmul.fp32_precision, conv.fp32_precision = value, value
        return {
            "api": "fp32_precision",
            "matmul": matmul.fp32_precision,
            "cudnn_conv": conv.fp32_precision,
        }
    if enabled is None:
        matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = False, True
    else:
        matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = bool(enabled)
    return {
        "api": "allow_tf32",
        "matmul": "tf32" if matmul.allow_tf32 else "ieee",
        "cudnn_conv": "tf32" if torch.backends.cudnn.allow_tf32 else "ieee",
    }


def _has_attr(obj: Any, name: str) -> bool:
    try:
        getattr(obj, name)
    except Exception:
        return False
    return True


def is_oom(torch: Any, exc: BaseException) -> bool:
    oom_type = getattr(torch.cuda, "OutOfMemoryError", None)
    if oom_type is not None and isinstance(exc, oom_type):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and (
        "out of memory" in text or "can't allocate memory" in text
    )


def oom_reason(mode: str, batch: int, device: str) -> str:
    return (
        f"{device.upper()} out of memory at batch size {batch}: try a smaller batch, e.g. "
        f"--batch {mode}={max(1, batch // 2)} (or --batch-size {max(1, batch // 2)} for every mode)"
    )


def bf16_support(torch: Any, device: str, index: int = 0) -> Tuple[bool, Optional[str]]:
    if device == "cpu":
        try:
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
                probe = torch.nn.functional.linear(torch.ones(2, 2), torch.ones(2, 2))
            if probe.dtype != torch.bfloat16:
                return False, "CPU autocast does not produce bf16 with this torch build"
        except Exception as exc:
            return False, f"CPU autocast bf16 failed: {exc}"
        return True, None
    major, minor = torch.cuda.get_device_capability(index)
    if major < 8:
        return False, (
            f"GPU capability {major}.{minor} has no bf16 tensor cores (bf16 needs 8.0+, "
            "Ampere or later)"
        )
    return True, None


class Context:
    """What every mode and probe needs: torch, the device, the plan, the results.

    ``index`` is the GPU this context measures (this process's cuda:index; the probes
    take each measured GPU in turn); on the CPU it only labels a simulated device.
    """

    def __init__(self, torch: Any, torchvision: Any, plan: Dict[str, Any], index: int = 0) -> None:
        self.torch = torch
        self.tv = torchvision
        self.plan = plan
        self.device = plan["device"]
        self.index = index
        cuda = self.device == "cuda"
        self.dev = torch.device("cuda", index) if cuda else torch.device("cpu")
        self.results: Dict[str, Dict[str, Any]] = {}
        self.sweep: List[Dict[str, Any]] = []
        self.bf16 = bf16_support(torch, self.device, index if cuda else 0)
        self.deadline = _T0 + plan["max_seconds"]
        self.used_compile = False

    def over_budget(self) -> Optional[str]:
        now = time.monotonic()
        if now > self.deadline:
            return "the --max-seconds budget of {:g} s was used up ({:.0f} s elapsed)".format(
                self.plan["max_seconds"], now - _T0
            )
        return None

    def sync(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.synchronize(self.dev)

    def cleanup(self) -> None:
        gc.collect()
        if self.device == "cuda":
            with contextlib.suppress(Exception):
                self.torch.cuda.synchronize(self.dev)
            self.torch.cuda.empty_cache()
