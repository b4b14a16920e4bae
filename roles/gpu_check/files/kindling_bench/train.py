"""One training configuration timed: ResNet-50 + SGD, warm-up, CUDA graphs, timed windows."""

from __future__ import annotations

import contextlib
import statistics
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from .common import _round
from .context import Context, _has_attr, set_tf32


def make_optimizer(torch: Any, params: Any, impl: str, device: str) -> Tuple[Any, str, List[str]]:
    notes: List[str] = []
    kwargs = {"lr": 0.1, "momentum": 0.9, "weight_decay": 1e-4}
    params = list(params)
    if impl == "fused":
        try:
            return torch.optim.SGD(params, fused=True, **kwargs), "fused", notes
        except (TypeError, RuntimeError, ValueError) as exc:
            notes.append(f"fused SGD unavailable ({exc}); used foreach")
    try:
        return torch.optim.SGD(params, foreach=True, **kwargs), "foreach", notes
    except TypeError:
        notes.append("this torch has no foreach SGD; used the default implementation")
        return torch.optim.SGD(params, **kwargs), "default", notes


def make_grad_scaler(torch: Any) -> Any:
    amp = getattr(torch, "amp", None)
    if amp is not None and hasattr(amp, "GradScaler"):
        return amp.GradScaler("cuda")
    return torch.cuda.amp.GradScaler()


class GraphCaptureError(Exception):
    """The CUDA-graph capture failed; the caller re-runs the mode without graphs."""


def train_benchmark(
    ctx: Context,
    amp: Optional[str],
    channels_last: bool,
    tf32: Optional[bool],
    batch: int,
    optimizer_impl: str,
    compiled: bool = False,
    compile_mode: str = "default",
    cuda_graphs: bool = False,
    ddp_wrap: Optional[Callable[[Any], Any]] = None,
    window_barrier: Optional[Callable[[], None]] = None,
    cudnn_autotune: bool = True,
) -> Dict[str, Any]:
    """Build ResNet-50 + SGD, warm up, time the windows. Raises on failure (OOM included)."""
    torch, plan, dev = ctx.torch, ctx.plan, ctx.dev
    cuda = ctx.device == "cuda"
    notes: List[str] = []
    tf32_state = set_tf32(torch, tf32) if cuda else None
    # Autotune: the first step of each conv shape times cuDNN's candidate algorithms.
    # Off: cuDNN's heuristics pick one without timing (no candidate is compiled or run).
    torch.backends.cudnn.benchmark = bool(cudnn_autotune)
    if plan.get("cudnn_benchmark_limit") is not None and _has_attr(
        torch.backends.cudnn, "benchmark_limit"
    ):
        torch.backends.cudnn.benchmark_limit = plan["cudnn_benchmark_limit"]
    torch.manual_seed(plan["seed"])
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    size = plan["image_size"]

    model = ctx.tv.models.resnet50(weights=None, num_classes=plan["num_classes"])
    model = model.to(dev, memory_format=fmt)
    model.train()
    images = torch.randn(batch, 3, size, size, device=dev).contiguous(memory_format=fmt)
    labels = torch.randint(0, plan["num_classes"], (batch,), device=dev)
    criterion = torch.nn.CrossEntropyLoss()
    net = ddp_wrap(model) if ddp_wrap is not None else model
    optimizer, opt_used, opt_notes = make_optimizer(
        torch, net.parameters(), optimizer_impl, ctx.device
    )
    notes.extend(opt_notes)
    amp_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(amp or "")
    scaler = make_grad_scaler(torch) if (amp == "fp16" and cuda) else None
    forward = net
    if compiled:
        ctx.used_compile = True
        forward = torch.compile(net, mode=None if compile_mode == "default" else compile_mode)
    mark_step = None
    if compiled and compile_mode == "reduce-overhead":
        mark_step = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)

    def body(cache: bool = True) -> None:
        if amp_dtype is not None:
            autocast: Any = torch.autocast(
                device_type=dev.type, dtype=amp_dtype, cache_enabled=cache
            )
        else:
            autocast = contextlib.nullcontext()
        with autocast:
            loss = criterion(forward(images), labels)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()

    def step() -> None:
        if mark_step is not None:
            mark_step()
        optimizer.zero_grad(set_to_none=True)
        body()

    started = time.perf_counter()
    step()
    ctx.sync()
    first_step_s = time.perf_counter() - started
    for _ in range(max(0, plan["warmup"] - 1)):
        step()
    ctx.sync()
    warmup_s = time.perf_counter() - started

    run_step = step
    graphs_used = False
    if cuda_graphs:
        if not cuda:
            notes.append("cuda_graphs ignored: device is cpu")
        elif compiled and compile_mode in ("reduce-overhead", "max-autotune"):
            notes.append(f"cuda_graphs ignored: compile mode {compile_mode} uses CUDA graphs")
        elif ddp_wrap is not None:
            notes.append("cuda_graphs ignored for ddp")
        elif scaler is not None and opt_used != "fused":
            notes.append(
                f"cuda_graphs not used: GradScaler with a {opt_used} optimizer syncs the host "
                "every step; use --optimizer-impl fused"
            )
        else:
            try:
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(3):
                        optimizer.zero_grad(set_to_none=True)
                        body(cache=False)
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                optimizer.zero_grad(set_to_none=True)
                with torch.cuda.graph(graph):
                    body(cache=False)
                torch.cuda.synchronize()
                run_step = graph.replay
                graphs_used = True
            except Exception as exc:
                raise GraphCaptureError(f"{type(exc).__name__}: {exc}") from exc

    window_ms: List[float] = []
    steps = plan["steps"]
    for _ in range(plan["windows"]):
        if window_barrier is not None:
            window_barrier()
        if cuda:
            begin = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            begin.record()
            for _ in range(steps):
                run_step()
            end.record()
            end.synchronize()
            window_ms.append(float(begin.elapsed_time(end)))
        else:
            t = time.perf_counter()
            for _ in range(steps):
                run_step()
            window_ms.append((time.perf_counter() - t) * 1000.0)
    peak = torch.cuda.max_memory_allocated() / 2**20 if cuda else None
    return {
        "window_ms": window_ms,
        "first_step_s": first_step_s,
        "warmup_s": warmup_s,
        "optimizer_impl": opt_used,
        "cuda_graphs": graphs_used,
        "peak_memory_mib": peak,
        "tf32_state": tf32_state,
        # Read back from torch: what the convolutions of this measurement really used.
        "cudnn_algorithms": "autotune" if torch.backends.cudnn.benchmark else "heuristics",
        "notes": notes,
    }


def summarize_windows(window_ms: List[float], images_per_step: int, steps: int) -> Dict[str, Any]:
    rates = [images_per_step * steps / (ms / 1000.0) for ms in window_ms if ms > 0]
    median = statistics.median(rates) if rates else None
    return {
        "img_s": _round(median) if rates else None,
        "ms_per_step": _round(statistics.median(window_ms) / steps, 3) if window_ms else None,
        "windows": [_round(r) for r in rates],
        # (fastest - slowest window) / median: how much a shorter run could mislead.
        "window_spread": _round((max(rates) - min(rates)) / median, 4) if median else None,
    }
