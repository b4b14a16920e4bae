"""The training modes (fp32, tf32, AMP, channels_last, compile, CUDA graphs) and their runs.

``MODES`` says how each mode trains; ``run_mode_with_sweep`` runs one mode in this
process (every variant of a ``--sweep``) and returns its entry of the report.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import traceback
from typing import Any, Dict, List, Optional, Tuple

from .common import _round, log, progress
from .context import Context, is_oom, oom_reason
from .reference import model_flops_utilisation
from .train import GraphCaptureError, summarize_windows, train_benchmark

# mode -> how it trains. amp: None (full precision), "fp16", "bf16" or "auto" (compile:
# the best AMP channels_last dtype measured in this run). tf32: True/False, or None for
# torch's defaults (matmul TF32 off, cuDNN conv TF32 on), which is what AMP recipes use.
MODES: Dict[str, Dict[str, Any]] = {
    "fp32": {
        "amp": None,
        "channels_last": False,
        "tf32": False,
        "compiled": False,
        "label": "FP32, TF32 off for matmul and cuDNN (the seed's FP32)",
    },
    "tf32": {
        "amp": None,
        "channels_last": False,
        "tf32": True,
        "compiled": False,
        "label": "FP32 tensors with TF32 tensor cores",
    },
    "amp_fp16": {
        "amp": "fp16",
        "channels_last": False,
        "tf32": None,
        "compiled": False,
        "label": "AMP fp16 + GradScaler, NCHW (the seed's AMP recipe)",
    },
    "amp_bf16": {
        "amp": "bf16",
        "channels_last": False,
        "tf32": None,
        "compiled": False,
        "label": "AMP bf16, NCHW",
    },
    "amp_fp16_cl": {
        "amp": "fp16",
        "channels_last": True,
        "tf32": None,
        "compiled": False,
        "label": "AMP fp16 + GradScaler, channels_last",
    },
    "amp_bf16_cl": {
        "amp": "bf16",
        "channels_last": True,
        "tf32": None,
        "compiled": False,
        "label": "AMP bf16, channels_last",
    },
    "compile": {
        "amp": "auto",
        "channels_last": True,
        "tf32": None,
        "compiled": True,
        "label": "torch.compile, AMP channels_last (best dtype of this run)",
    },
    "ddp": {
        "amp": "auto",
        "channels_last": True,
        "tf32": None,
        "compiled": False,
        "label": "DDP over all local GPUs, best eager AMP channels_last config",
    },
}
MODE_ORDER = list(MODES)
MODE_ALIASES = {"seed_recipe": "amp_fp16"}
SEED_MODE = "amp_fp16"
COMPILE_MODES = ["default", "max-autotune-no-cudagraphs", "reduce-overhead", "max-autotune"]
OPTIMIZER_IMPLS = ["foreach", "fused"]


def sweep_variants(axes: Dict[str, List[Any]], mode: Optional[str] = None) -> List[Dict[str, Any]]:
    """Cartesian product of the sweep axes; axes that cannot affect ``mode`` are dropped."""
    if mode is not None:
        compiled = MODES[mode]["compiled"]
        axes = {
            k: v for k, v in axes.items() if k not in ("compile_mode", "compile_dtype") or compiled
        }
    if not axes:
        return [{}]
    keys = list(axes)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(axes[k] for k in keys))]


def unsupported_reason(ctx: Context, mode: str, amp: Optional[str]) -> Optional[str]:
    """Why a mode cannot run on this device, or None."""
    torch = ctx.torch
    spec = MODES[mode]
    if ctx.device == "cpu":
        if mode == "tf32":
            return "TF32 is a CUDA tensor-core format; it has no CPU equivalent"
        if amp == "fp16":
            return (
                "fp16 autocast + GradScaler is the CUDA AMP recipe; on CPU only bf16 autocast "
                "is measured (amp_bf16 / amp_bf16_cl)"
            )
    else:
        major, minor = torch.cuda.get_device_capability(0)
        if mode == "tf32" and major < 8:
            return f"GPU capability {major}.{minor} has no TF32 (needs 8.0+, Ampere or later)"
    if amp == "bf16":
        ok, why = ctx.bf16
        if not ok:
            return why
    if spec["compiled"] and not hasattr(torch, "compile"):
        return f"torch {torch.__version__} has no torch.compile (needs 2.0+)"
    return None


def precision_key(amp: Optional[str], tf32: Optional[bool]) -> str:
    if amp in ("fp16", "bf16"):
        return amp
    return "tf32" if tf32 else "fp32"


def empty_result(mode: str, batch: int) -> Dict[str, Any]:
    spec = MODES[mode]
    return {
        "status": "skipped",
        "reason": None,
        "label": spec["label"],
        "batch_size": batch,
        "precision": None,
        "amp_dtype": None,
        "channels_last": spec["channels_last"],
        "compiled": spec["compiled"],
        "tf32": None,
        "optimizer_impl": None,
        "cuda_graphs": False,
        "img_s": None,
        "ms_per_step": None,
        "peak_memory_mib": None,
        "mfu": None,
        "windows": [],
        "window_spread": None,
        "warmup_seconds": None,
        "first_step_seconds": None,
        "compile_seconds": None,
        "compile_mode": None,
        "cudnn_algorithms": None,
        "tf32_state": None,
        "notes": [],
    }


def mfu(ctx: Context, img_s: Optional[float], key: str) -> Optional[float]:
    peak = ctx.plan["peak_tflops"].get(key)
    if not img_s or not peak:
        return None
    return _round(model_flops_utilisation(img_s, peak, ctx.plan["flop_per_image"]), 4)


def compile_dtype_choice(ctx: Context, requested: str) -> Tuple[Optional[str], str]:
    """(amp dtype, why) for the compile mode."""
    if requested in ("fp16", "bf16"):
        return requested, "requested with --compile-dtype/--sweep"
    measured = [
        (res["img_s"], res["amp_dtype"])
        for name, res in ctx.results.items()
        if name in ("amp_fp16_cl", "amp_bf16_cl") and res["status"] == "ok" and res["img_s"]
    ]
    if measured:
        best = max(measured)
        return best[1], f"the faster eager channels_last dtype of this run ({best[0]} img/s)"
    if ctx.device == "cuda":
        return (
            ("bf16", "no channels_last mode measured; bf16 is supported")
            if ctx.bf16[0]
            else ("fp16", "no channels_last mode measured; bf16 unsupported")
        )
    if ctx.bf16[0]:
        return "bf16", "cpu: bf16 autocast"
    return None, "cpu without bf16 autocast"


def run_single_mode(ctx: Context, mode: str, variant: Dict[str, Any]) -> Dict[str, Any]:
    """One single-process mode; never raises."""
    torch, plan = ctx.torch, ctx.plan
    spec = MODES[mode]
    batch = variant.get("batch", plan["batch_sizes"].get(mode, plan["batch_size"]))
    result = empty_result(mode, batch)
    amp = spec["amp"]
    compile_mode = variant.get("compile_mode", plan["compile_mode"])
    if spec["compiled"]:
        amp, why = compile_dtype_choice(ctx, variant.get("compile_dtype", plan["compile_dtype"]))
        result["notes"].append(f"compile dtype {amp}: {why}")
        result["compile_mode"] = compile_mode
    result["amp_dtype"] = amp
    result["precision"] = precision_key(amp, spec["tf32"])
    result["tf32"] = spec["tf32"]
    over = ctx.over_budget()
    reason = over or unsupported_reason(ctx, mode, amp)
    if reason:
        result["reason"] = reason
        log(f"{mode}: skipped: {reason}")
        return result
    opt_impl = variant.get("optimizer", plan["optimizer_impl"])
    graphs = variant.get("cuda_graphs", mode in plan["cuda_graphs_modes"])
    layout = "channels_last" if spec["channels_last"] else "NCHW"
    autotune = mode not in plan.get("cudnn_heuristic_modes", [])
    extras = f", torch.compile({compile_mode})" if spec["compiled"] else ""
    extras += ", cuda graphs" if graphs else ""
    extras += "" if autotune else ", cuDNN heuristics (no autotune)"
    log(
        f"{mode}: batch {batch}, {amp or result['precision']}, {layout}{extras}, {opt_impl} SGD, "
        f"warm-up {plan['warmup']} steps, {plan['windows']} windows x {plan['steps']} steps"
    )
    measured = None
    try:
        try:
            measured = train_benchmark(
                ctx,
                amp,
                spec["channels_last"],
                spec["tf32"],
                batch,
                opt_impl,
                compiled=spec["compiled"],
                compile_mode=compile_mode,
                cuda_graphs=graphs,
                cudnn_autotune=autotune,
            )
        except GraphCaptureError as exc:
            ctx.cleanup()
            result["notes"].append(f"cuda_graphs capture failed ({exc}); measured plain eager")
            log(f"{mode}: CUDA-graph capture failed ({exc}); re-running eager")
            measured = train_benchmark(
                ctx,
                amp,
                spec["channels_last"],
                spec["tf32"],
                batch,
                opt_impl,
                compiled=spec["compiled"],
                compile_mode=compile_mode,
                cuda_graphs=False,
                cudnn_autotune=autotune,
            )
    except Exception as exc:
        result["status"] = "failed"
        if is_oom(torch, exc):
            result["reason"] = oom_reason(mode, batch, ctx.device)
        else:
            result["reason"] = f"{type(exc).__name__}: {str(exc)[:800]}"
            traceback.print_exc(file=sys.stderr)
        log("{}: failed: {}".format(mode, result["reason"]))
    finally:
        if spec["compiled"]:
            with contextlib.suppress(Exception):
                torch._dynamo.reset()
        ctx.cleanup()
    if measured is None:
        return result
    result.update(summarize_windows(measured["window_ms"], batch, plan["steps"]))
    result.update(
        {
            "status": "ok",
            "optimizer_impl": measured["optimizer_impl"],
            "cuda_graphs": measured["cuda_graphs"],
            "peak_memory_mib": _round(measured["peak_memory_mib"], 1),
            "warmup_seconds": _round(measured["warmup_s"], 2),
            "first_step_seconds": _round(measured["first_step_s"], 2),
            "tf32_state": measured["tf32_state"],
            "cudnn_algorithms": measured["cudnn_algorithms"],
        }
    )
    if spec["compiled"]:
        result["compile_seconds"] = _round(measured["first_step_s"], 2)
    result["notes"].extend(measured["notes"])
    result["mfu"] = mfu(ctx, result["img_s"], result["precision"])
    details = f"{result['ms_per_step']} ms/step"
    if result["peak_memory_mib"] is not None:
        details += f", peak {result['peak_memory_mib']} MiB"
    if result["mfu"] is not None:
        details += f", MFU {result['mfu']:.1%}"
    if spec["compiled"]:
        details += f", compile {result['compile_seconds']} s"
    log(f"{mode}: {result['img_s']} img/s ({details})")
    return result


def progress_done(mode: str, result: Dict[str, Any]) -> None:
    progress(done={mode: {"status": result["status"], "img_s": result["img_s"]}})


def run_mode_with_sweep(ctx: Context, mode: str) -> Dict[str, Any]:
    progress(phase="mode", current=mode)
    result = _run_mode_with_sweep(ctx, mode)
    progress(current=None)
    progress_done(mode, result)
    return result


def _run_mode_with_sweep(ctx: Context, mode: str) -> Dict[str, Any]:
    if mode not in ctx.plan["sweep_modes"]:
        return run_single_mode(ctx, mode, {})
    best: Optional[Dict[str, Any]] = None
    first: Optional[Dict[str, Any]] = None
    variants = sweep_variants(ctx.plan["sweep"], mode)
    for variant in variants:
        result = run_single_mode(ctx, mode, variant)
        result["variant"] = dict(variant)
        ctx.sweep.append(
            {
                "mode": mode,
                "variant": dict(variant),
                "status": result["status"],
                "reason": result["reason"],
                "batch_size": result["batch_size"],
                "img_s": result["img_s"],
                "ms_per_step": result["ms_per_step"],
                "peak_memory_mib": result["peak_memory_mib"],
                "optimizer_impl": result["optimizer_impl"],
                "cuda_graphs": result["cuda_graphs"],
                "compile_seconds": result["compile_seconds"],
                "amp_dtype": result["amp_dtype"],
                "notes": list(result["notes"]),
            }
        )
        first = first or result
        if result["status"] == "ok" and (best is None or result["img_s"] > best["img_s"]):
            best = result
    chosen = best or first
    assert chosen is not None
    chosen["notes"].append(f"fastest of {len(variants)} sweep variants (see 'sweep')")
    return chosen
