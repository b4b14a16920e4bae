"""The torch/CUDA probe: its source (one copy), and how to read and judge its output.

``PROBE_SOURCE`` is a small Python program that ``torch_cuda_facts`` runs as
``<python> -c PROBE_SOURCE`` inside the PyTorch environment. It never raises: it
prints one line ``KINDLING_TORCH_PROBE=<json>`` (after anything torch itself prints)
describing what torch sees. ``parse_probe_output`` reads that line, ``normalize``
turns it into the ``torch_cuda`` fact, and ``verdict`` judges it with the
compatibility data in gpu_compat.

Runs on target hosts: Python 3.8 compatible, standard library only. The probe itself
also avoids anything newer than Python 3.6.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional

from ansible.module_utils.gpu_compat import (
    arch_coverage,
    best_variant,
    driver_branch,
    driver_supports_cuda,
    min_driver_for_cuda,
    normalize_cc,
    sm_name,
    suggest_torch_for_cc,
    torch_local_variant,
    torch_release,
    variants_for_driver,
    version_cmp,
)

PROBE_MARKER = "KINDLING_TORCH_PROBE="

#: Default interpreter: the PyTorch environment Kindling's roles create.
DEFAULT_PYTHON = "/opt/conda/envs/pytorch/bin/python"

PROBE_SOURCE = r"""
import json
import sys
import warnings

MARK = "KINDLING_TORCH_PROBE="
out = {
    "python_version": "%d.%d.%d" % tuple(sys.version_info[:3]),
    "python_executable": sys.executable,
    "importable": False,
    "import_error": None,
}


def emit():
    sys.stdout.write("\n" + MARK + json.dumps(out, default=str) + "\n")
    sys.stdout.flush()


def err(exc):
    return "%s: %s" % (type(exc).__name__, str(exc).strip())


try:
    import torch
except BaseException as exc:  # ImportError, or OSError for a missing shared library
    out["import_error"] = err(exc)
    emit()
    sys.exit(0)

out["importable"] = True
out["torch_version"] = str(getattr(torch, "__version__", ""))
out["built_cuda_version"] = getattr(getattr(torch, "version", None), "cuda", None)
try:
    out["cudnn_version"] = torch.backends.cudnn.version()
except Exception as exc:
    out["cudnn_version"] = None
    out["cudnn_error"] = err(exc)

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        out["cuda_available"] = bool(torch.cuda.is_available())
    except Exception as exc:
        out["cuda_available"] = False
        out["cuda_error"] = err(exc)
    try:
        out["driver_cuda_version"] = int(torch._C._cuda_getDriverVersion())
    except Exception:
        out["driver_cuda_version"] = None
    out["device_count"] = 0
    out["devices"] = []
    out["tensor_ops"] = []
    try:
        out["arch_list"] = list(torch.cuda.get_arch_list())
    except Exception:
        out["arch_list"] = []
    try:
        nccl = torch.cuda.nccl.version()
        out["nccl_version"] = list(nccl) if isinstance(nccl, (tuple, list)) else nccl
    except Exception:
        out["nccl_version"] = None
    out["bf16_supported"] = None
    if out["cuda_available"]:
        try:
            out["device_count"] = int(torch.cuda.device_count())
        except Exception as exc:
            out["cuda_error"] = err(exc)
        for i in range(out["device_count"]):
            try:
                props = torch.cuda.get_device_properties(i)
                out["devices"].append(
                    {
                        "index": i,
                        "name": props.name,
                        "major": props.major,
                        "minor": props.minor,
                        "total_memory": props.total_memory,
                    }
                )
            except Exception as exc:
                out["devices"].append({"index": i, "error": err(exc)})
        try:
            out["bf16_supported"] = bool(torch.cuda.is_bf16_supported())
        except Exception:
            out["bf16_supported"] = None
        for i in range(out["device_count"]):
            try:
                x = torch.ones((64, 64), device="cuda:%d" % i)
                value = float((x @ x).sum().item())
                torch.cuda.synchronize(i)
                out["tensor_ops"].append({"index": i, "ok": value == 64.0 ** 3, "value": value})
            except Exception as exc:
                out["tensor_ops"].append({"index": i, "ok": False, "error": err(exc)})
    out["cuda_warnings"] = [str(w.message).strip() for w in caught]

emit()
"""


BUILD_PROBE_SOURCE = r"""
import importlib.util
import json
import os
import sys

MARK = "KINDLING_TORCH_PROBE="
out = {
    "python_version": "%d.%d.%d" % tuple(sys.version_info[:3]),
    "python_executable": sys.executable,
    "found": False,
    "error": None,
}
try:
    spec = importlib.util.find_spec("torch")
    places = list(spec.submodule_search_locations or []) if spec else []
    if not places:
        out["error"] = "ModuleNotFoundError: No module named 'torch'"
    else:
        path = os.path.join(places[0], "version.py")
        names = {"__file__": path, "__name__": "torch.version"}
        with open(path) as handle:
            exec(compile(handle.read(), path, "exec"), names)
        out["found"] = True
        out["torch_version"] = str(names.get("__version__", ""))
        out["built_cuda_version"] = names.get("cuda")
except BaseException as exc:
    out["error"] = "%s: %s" % (type(exc).__name__, str(exc).strip())
sys.stdout.write("\n" + MARK + json.dumps(out, default=str) + "\n")
"""


def build_probe_command(python: str) -> List[str]:
    """argv that reads torch's build (its version.py) in ``python`` without importing torch.

    Importing torch takes seconds (CUDA libraries, the operator registry); a role that needs
    only the release and the CUDA it was built with reads torch/version.py, which holds
    plain assignments (__version__, cuda), found with importlib.util.find_spec.
    """
    return [python, "-c", BUILD_PROBE_SOURCE]


def probe_command(python: str) -> List[str]:
    """argv that runs the probe in ``python``."""
    return [python, "-c", PROBE_SOURCE]


def parse_probe_output(stdout: str) -> Dict[str, Any]:
    """The probe's JSON from its stdout (the last marker line). ValueError if absent."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(PROBE_MARKER):
            try:
                data = json.loads(line[len(PROBE_MARKER) :])
            except ValueError as exc:
                raise ValueError(f"the probe printed a malformed result: {exc}") from exc
            if not isinstance(data, dict):
                raise ValueError("the probe printed a result that is not an object")
            return data
    raise ValueError("the probe printed no result line")


def cudnn_version_string(value: Any) -> Optional[str]:
    """torch.backends.cudnn.version() -> "X.Y.Z": 91900 -> "9.19.0", 8302 -> "8.3.2"."""
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        return str(value)
    if number >= 90000:  # cuDNN 9: major*10000 + minor*100 + patch
        return f"{number // 10000}.{number % 10000 // 100}.{number % 100}"
    return f"{number // 1000}.{number % 1000 // 100}.{number % 100}"  # cuDNN <= 8


def nccl_version_string(value: Any) -> Optional[str]:
    """torch.cuda.nccl.version() -> "X.Y.Z": (2, 28, 9) -> "2.28.9", 21003 -> "2.10.3"."""
    if value is None or value == "":
        return None
    if isinstance(value, (list, tuple)):
        return ".".join(str(v) for v in value)
    try:
        number = int(value)
    except (TypeError, ValueError):
        return str(value)
    if number >= 10000:  # NCCL >= 2.9: major*10000 + minor*100 + patch
        return f"{number // 10000}.{number % 10000 // 100}.{number % 100}"
    return f"{number // 1000}.{number % 1000 // 100}.{number % 100}"


def driver_cuda_string(value: Any) -> Optional[str]:
    """cuDriverGetVersion() -> "X.Y": 13000 -> "13.0", 11040 -> "11.4"."""
    if value is None:
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return f"{number // 1000}.{number % 1000 // 10}"


def normalize(raw: Dict[str, Any]) -> Dict[str, Any]:
    """The ``torch_cuda`` fact (without its verdict) from the probe's raw output."""
    devices = []
    for dev in raw.get("devices") or []:
        if "major" in dev:
            cc = normalize_cc((dev["major"], dev["minor"]))
            memory = dev.get("total_memory")
            devices.append(
                {
                    "index": dev.get("index"),
                    "name": dev.get("name"),
                    "capability": cc,
                    "sm": sm_name(cc),
                    "memory_total_mib": int(memory) // (1024 * 1024) if memory else None,
                }
            )
        else:
            devices.append(
                {
                    "index": dev.get("index"),
                    "name": None,
                    "capability": None,
                    "sm": None,
                    "memory_total_mib": None,
                    "error": dev.get("error"),
                }
            )
    built = raw.get("built_cuda_version")
    importable = bool(raw.get("importable"))
    return {
        "importable": importable,
        "import_error": raw.get("import_error"),
        "python_version": raw.get("python_version"),
        "python_executable": raw.get("python_executable"),
        "torch_version": raw.get("torch_version"),
        "built_cuda_version": built,
        "cpu_only_build": importable and not built,
        "cudnn_version": cudnn_version_string(raw.get("cudnn_version")),
        "cuda_available": bool(raw.get("cuda_available")),
        "driver_cuda_version": driver_cuda_string(raw.get("driver_cuda_version")),
        "device_count": int(raw.get("device_count") or 0),
        "devices": devices,
        "arch_list": list(raw.get("arch_list") or []),
        "nccl_version": nccl_version_string(raw.get("nccl_version")),
        "bf16_supported": raw.get("bf16_supported"),
        "tensor_ops": list(raw.get("tensor_ops") or []),
        "cuda_warnings": list(raw.get("cuda_warnings") or []),
        "cuda_error": raw.get("cuda_error"),
    }


def unimportable_facts(import_error: str, python_version: Optional[str] = None) -> Dict[str, Any]:
    """The ``torch_cuda`` fact when torch (or its interpreter) is not usable."""
    facts = normalize({"importable": False, "import_error": import_error})
    facts["python_version"] = python_version
    facts["verdict"] = {
        "ok": False,
        "checks": [
            _check(name, False, f"skipped: torch is not importable ({import_error})", True)
            for name in ("arch_covered", "driver_new_enough", "tensor_op")
        ],
    }
    return facts


def _check(name: str, ok: bool, message: str, skipped: bool = False) -> Dict[str, Any]:
    return {"name": name, "ok": ok, "message": message, "skipped": skipped}


def _variant_hint(facts: Dict[str, Any], driver_version: Optional[str]) -> str:
    """Which conda_pytorch_cuda_variant to set for this torch release and driver."""
    row = torch_release(facts.get("torch_version") or "")
    if row is None:
        return "set conda_pytorch_cuda_variant to a CUDA wheel (cuXYZ) that the driver supports"
    current = torch_local_variant(facts.get("torch_version"))
    usable = [
        v
        for v in variants_for_driver(row, driver_version, facts.get("driver_cuda_version"))
        if v != current
    ]
    if usable:
        wheel = usable[-1]
        return f"set conda_pytorch_cuda_variant to {wheel} (a CUDA wheel of torch {row['series']})"
    if driver_version or facts.get("driver_cuda_version"):
        return (
            f"no other CUDA wheel of torch {row['series']} runs on this driver, so choose an "
            "older conda_pytorch_version and its conda_pytorch_cuda_variant"
        )
    wheel = best_variant(row)
    return f"set conda_pytorch_cuda_variant to {wheel} (a CUDA wheel of torch {row['series']})"


def diagnose_cuda_unavailable(
    facts: Dict[str, Any],
    expect_gpus: Optional[int],
    driver_version: Optional[str] = None,
    required: bool = False,
) -> Optional[str]:
    """Say plainly why torch cannot use CUDA where GPUs are expected; None otherwise.

    Returns None when CUDA works, torch is not importable, or nothing expected a GPU
    (``expect_gpus`` falsy and not ``required``): a CPU host with a CPU wheel is fine.
    """
    if facts.get("cuda_available") or not facts.get("importable"):
        return None
    if not expect_gpus and not required:
        return None
    prefix = f"nvidia-smi sees {expect_gpus} GPU(s) but " if expect_gpus else ""
    version = facts.get("torch_version")
    built = facts.get("built_cuda_version")
    if not built:
        return (
            f"{prefix}torch {version} is a CPU-only build (torch.version.cuda is None): this is "
            f"the CPU-only wheel mistake; reinstall torch from the CUDA wheel index: "
            f"{_variant_hint(facts, driver_version)}."
        )
    need = min_driver_for_cuda(built)
    warnings_text = " ".join(facts.get("cuda_warnings") or [])
    driver_cuda = facts.get("driver_cuda_version")
    too_old = "too old" in warnings_text.lower()
    if driver_version and need and not driver_supports_cuda(driver_version, built):
        too_old = True
    if driver_cuda and version_cmp(driver_cuda, built) < 0:
        too_old = True
    if too_old:
        if driver_version:
            have = driver_version
        elif driver_cuda:
            have = f"one that supports CUDA {driver_cuda} only"
        else:
            have = "older than that"
        raise_to = f"raise nvidia_driver_branch to {driver_branch(need)}" if need else "upgrade it"
        return (
            f"{prefix}torch {version} was built with CUDA {built}, which needs driver "
            f">= {need or 'a newer driver'}, and the driver is {have}: the driver is too old "
            f"for this wheel; {raise_to}, or {_variant_hint(facts, driver_version)}."
        )
    detail = facts.get("cuda_error") or warnings_text or "no error text"
    return (
        f"{prefix}torch {version} (CUDA {built}) cannot initialise CUDA ({detail}); check "
        "that the driver is loaded (nvidia_smi_facts), CUDA_VISIBLE_DEVICES and /dev/nvidia* "
        f"permissions; if torch is the wrong wheel, {_variant_hint(facts, driver_version)}."
    )


def verdict(
    facts: Dict[str, Any],
    driver_version: Optional[str] = None,
    expect_gpus: Optional[int] = None,
) -> Dict[str, Any]:
    """Judge a normalized fact: ``{"ok", "checks": [{"name", "ok", "message", "skipped"}]}``.

    Checks: ``arch_covered`` (each device's sm_XX is in the arch list, binary-compatible,
    or reachable by PTX), ``driver_new_enough`` (gpu_compat.min_driver_for_cuda of torch's
    CUDA; ``driver_version`` if given, else torch's view of the driver's CUDA version),
    ``tensor_op`` (a 64x64 matmul ran on every device), and, when ``expect_gpus`` is
    given, ``gpus_visible``.
    """
    if not facts.get("importable"):
        return unimportable_facts(str(facts.get("import_error")))["verdict"]
    checks: List[Dict[str, Any]] = []
    available = facts.get("cuda_available")
    built = facts.get("built_cuda_version")
    unavailable = diagnose_cuda_unavailable(facts, expect_gpus, driver_version) or (
        "CUDA is not available to torch"
        + (f" (torch {facts.get('torch_version')} is a CPU-only build)" if not built else "")
    )

    # arch_covered
    if not available or not facts.get("devices"):
        checks.append(_check("arch_covered", False, f"skipped: {unavailable}", True))
    else:
        missing = []
        for dev in facts["devices"]:
            cc = dev.get("capability")
            if not cc or not arch_coverage(facts.get("arch_list"), cc):
                missing.append(dev)
        if missing:
            dev = missing[0]
            pick = suggest_torch_for_cc(dev["capability"], facts.get("torch_version"), None, None)
            advice = (
                f"; install torch {pick[0]} with conda_pytorch_cuda_variant {pick[1]} (or newer)"
                if pick
                else ""
            )
            names = ", ".join(f"GPU {d['index']} {d.get('name')} ({d.get('sm')})" for d in missing)
            checks.append(
                _check(
                    "arch_covered",
                    False,
                    f"{names} not covered by torch {facts.get('torch_version')}'s arch list "
                    f"{' '.join(facts.get('arch_list') or []) or '(empty)'}: no cubin or PTX "
                    f"for it, kernels fail with 'no kernel image is available'{advice}.",
                )
            )
        else:
            how = sorted(
                {
                    f"{d['sm']} via {arch_coverage(facts.get('arch_list'), d['capability'])}"
                    for d in facts["devices"]
                }
            )
            checks.append(_check("arch_covered", True, "covered: " + ", ".join(how)))

    # driver_new_enough
    if not built:
        checks.append(
            _check(
                "driver_new_enough",
                False,
                f"skipped: torch {facts.get('torch_version')} is a CPU-only build",
                True,
            )
        )
    else:
        need = min_driver_for_cuda(built)
        driver_cuda = facts.get("driver_cuda_version")
        if driver_version and need:
            ok = bool(driver_supports_cuda(driver_version, built))
            relation = ">=" if ok else "<"
            tail = "" if ok else f"; raise nvidia_driver_branch to {driver_branch(need)}"
            checks.append(
                _check(
                    "driver_new_enough",
                    ok,
                    f"driver {driver_version} {relation} {need}, the minimum for torch's "
                    f"CUDA {built}{tail}.",
                )
            )
        elif driver_cuda:
            ok = version_cmp(driver_cuda, built) >= 0
            relation = ">=" if ok else "<"
            tail = "" if ok or not need else f" (needs driver >= {need})"
            checks.append(
                _check(
                    "driver_new_enough",
                    ok,
                    f"the driver supports CUDA {driver_cuda} (torch's view), {relation} torch's "
                    f"CUDA {built}{tail}.",
                )
            )
        else:
            checks.append(
                _check(
                    "driver_new_enough",
                    False,
                    f"could not tell the driver version (pass driver_version from "
                    f"nvidia_smi_facts); torch's CUDA {built} needs driver >= {need or '?'}.",
                )
            )

    # tensor_op
    ops = facts.get("tensor_ops") or []
    if not available or not ops:
        checks.append(_check("tensor_op", False, f"skipped: {unavailable}", True))
    else:
        failed = [op for op in ops if not op.get("ok")]
        if failed:
            detail = "; ".join(
                f"cuda:{op.get('index')}: {op.get('error') or op.get('value')}" for op in failed
            )
            checks.append(_check("tensor_op", False, f"a 64x64 CUDA matmul failed: {detail}"))
        else:
            checks.append(
                _check("tensor_op", True, f"a 64x64 CUDA matmul ran on {len(ops)} device(s)")
            )

    # gpus_visible
    if expect_gpus is not None:
        count = facts.get("device_count") or 0
        if count == expect_gpus:
            checks.append(
                _check("gpus_visible", True, f"torch sees {count} GPU(s), as nvidia-smi does")
            )
        elif not available and expect_gpus > 0:
            checks.append(_check("gpus_visible", False, unavailable))
        else:
            checks.append(
                _check(
                    "gpus_visible",
                    False,
                    f"torch sees {count} GPU(s) but {expect_gpus} were expected: check "
                    "CUDA_VISIBLE_DEVICES and MIG settings.",
                )
            )
    return {"ok": all(c["ok"] for c in checks), "checks": checks}


def summarize(facts: Dict[str, Any]) -> str:
    """One line for the task result."""
    if not facts.get("importable"):
        return f"torch is not importable: {facts.get('import_error')}"
    head = (
        f"torch {facts.get('torch_version')} (CUDA {facts.get('built_cuda_version') or 'none'}) "
        f"on Python {facts.get('python_version')}"
    )
    if not facts.get("cuda_available"):
        return head + ": CUDA not available"
    names = ", ".join(sorted({str(d.get("name")) for d in facts.get("devices") or []}))
    state = "ok" if facts.get("verdict", {}).get("ok") else "NOT ok"
    return f"{head}: {facts.get('device_count')} GPU(s) [{names}], verdict {state}"


PROC_DRIVER_VERSION = "/proc/driver/nvidia/version"


def parse_proc_driver_version(text: str) -> Optional[str]:
    """The loaded kernel module's version from /proc/driver/nvidia/version, or None.

    e.g. "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build".
    """
    match = re.search(r"Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)", text or "")
    return match.group(1) if match else None
