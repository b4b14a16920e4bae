"""The command line: arguments, profiles, the plan they resolve to, and main (exit codes).

Exit codes: 0 the report was written (modes may still be skipped or failed inside it);
2 bad arguments; 3 torch or torchvision not importable; 4 CUDA requested but unavailable.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from . import common
from .common import _PROGRESS, _T0, _round, list_children, log, progress
from .ddp import ddp_worker_main
from .gpus import gpu_worker_main
from .modes import COMPILE_MODES, MODE_ALIASES, MODE_ORDER, MODES, OPTIMIZER_IMPLS
from .probes import PROBE_ORDER
from .reference import flop_per_image
from .report import run

PROFILES: Dict[str, Dict[str, Any]] = {
    # Judges a host in about 35 s on an H200: the seed's FP32 and AMP rows plus the
    # fastest eager mode that every tensor-core GPU (V100 included) can run.
    "quick": {
        "modes": ["fp32", "amp_fp16", "amp_fp16_cl"],
        # The probes that the floors judge (module_utils/gpu_floors.py): pinned copies both
        # ways with the PCIe link read under load, device memory bandwidth, dense matmul per
        # precision. About a second or two each on an H100: 512 MiB copies, a 1 GiB
        # device copy, 8192^3 matmuls in windows of about 50 ms (docs/BENCHMARKS.md).
        "probes": ["h2d", "membw", "matmul"],
        # 5 + 3 x 5 steps: most of a mode's time is its first step. In fp32 that is cuDNN's
        # autotune (17 s on the H200), which buys 16% over its heuristics' choice. In the
        # fp16 modes the autotune buys nothing measurable (within 0.3% on the H200) and,
        # on a host's first run, costs 10-12 s per mode compiling candidate kernels into
        # CUDA's JIT cache (11 MB), so they take cuDNN's heuristic choice: 33-34 s in all
        # against 54-59 s (docs/BENCHMARKS.md, 2026-12-02, "the quick profile's first run").
        "cudnn_heuristic_modes": ["amp_fp16", "amp_fp16_cl"],
        "warmup": 5,
        "steps": 5,
        "windows": 3,
        "max_seconds": 85.0,
        "mode_defaults": {},
    },
    "full": {
        "modes": list(MODE_ORDER),
        "probes": list(PROBE_ORDER),
        "warmup": 15,
        "steps": 20,
        "windows": 5,
        "max_seconds": 540.0,
        # The fastest single-H200 config measured: compile (fp16 when it is the faster
        # eager dtype) at batch 512 with the whole step in a CUDA graph (7,894 img/s;
        # 7,622 at batch 384; docs/BENCHMARKS.md).
        "mode_defaults": {"compile": {"batch": 512, "cuda_graphs": True}},
    },
}
SWEEP_KEYS = {
    "batch": "batch size per GPU (positive integers)",
    "optimizer": "SGD implementation: foreach, fused",
    "cuda_graphs": "eager CUDA-graph capture: on, off",
    "compile_mode": "torch.compile mode: " + ", ".join(COMPILE_MODES),
    "compile_dtype": "AMP dtype of the compile mode: fp16, bf16",
}
PRECISION_KEYS = ("fp32", "tf32", "fp16", "bf16")
DEFAULT_BATCH = 256


def _split_list(text: str) -> List[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def parse_mode_list(text: str) -> List[str]:
    """Comma list of modes (aliases resolved), in the canonical run order.

    ``none`` runs no training mode: only the probes (torchvision is then not needed).
    """
    if text.strip().lower() == "none":
        return []
    wanted = []
    for name in _split_list(text):
        name = MODE_ALIASES.get(name, name)
        if name not in MODES:
            raise ValueError(
                "unknown mode {!r}; known modes: {} (alias: seed_recipe = amp_fp16)".format(
                    name, ", ".join(MODE_ORDER)
                )
            )
        wanted.append(name)
    if not wanted:
        raise ValueError("--modes is empty; known modes: {}".format(", ".join(MODE_ORDER)))
    return [m for m in MODE_ORDER if m in wanted]


def parse_probe_list(text: str) -> List[str]:
    if text.strip().lower() in ("", "none"):
        return []
    wanted = _split_list(text)
    for name in wanted:
        if name not in PROBE_ORDER:
            raise ValueError(
                "unknown probe {!r}; known probes: {} (or none)".format(
                    name, ", ".join(PROBE_ORDER)
                )
            )
    return [p for p in PROBE_ORDER if p in wanted]


def parse_batch_overrides(items: List[str]) -> Dict[str, int]:
    """``--batch amp_bf16_cl=384`` (repeatable, or comma-separated) -> {mode: size}."""
    result: Dict[str, int] = {}
    for item in items:
        for part in _split_list(item):
            if "=" not in part:
                raise ValueError(f"--batch wants MODE=SIZE, got {part!r}")
            mode, _, size = part.partition("=")
            mode = MODE_ALIASES.get(mode.strip(), mode.strip())
            if mode not in MODES:
                raise ValueError(f"--batch: unknown mode {mode!r}")
            try:
                value = int(size)
            except ValueError:
                raise ValueError(f"--batch {mode}: size {size!r} is not an integer") from None
            if value < 1:
                raise ValueError(f"--batch {mode}: size must be >= 1")
            result[mode] = value
    return result


def parse_peak_tflops(text: Optional[str]) -> Dict[str, float]:
    """``989`` (all precisions) or ``fp32=67,tf32=494.7,bf16=989.4,fp16=989.4``."""
    if not text:
        return {}
    result: Dict[str, float] = {}
    for part in _split_list(text):
        if "=" in part:
            key, _, value = part.partition("=")
            key = key.strip()
            if key not in PRECISION_KEYS:
                raise ValueError(
                    "--peak-tflops: unknown precision {!r} (use {})".format(
                        key, ", ".join(PRECISION_KEYS)
                    )
                )
            keys: Tuple[str, ...] = (key,)
        else:
            value, keys = part, PRECISION_KEYS
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"--peak-tflops: {value!r} is not a number") from None
        if not number > 0:
            raise ValueError("--peak-tflops: values must be > 0")
        for key in keys:
            result[key] = number
    return result


def parse_sweep(items: List[str]) -> Dict[str, List[Any]]:
    """``--sweep batch=256,384 --sweep optimizer=foreach,fused`` -> cartesian axes."""
    axes: Dict[str, List[Any]] = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--sweep wants KEY=V1,V2,..., got {item!r}")
        key, _, values_text = item.partition("=")
        key = key.strip()
        values = _split_list(values_text)
        if key not in SWEEP_KEYS:
            raise ValueError(
                "--sweep: unknown key {!r}; keys: {}".format(
                    key, "; ".join("{} ({})".format(*kv) for kv in SWEEP_KEYS.items())
                )
            )
        if not values:
            raise ValueError(f"--sweep {key}: no values")
        parsed: List[Any] = []
        for value in values:
            if key == "batch":
                if not value.isdigit() or int(value) < 1:
                    raise ValueError(f"--sweep batch: {value!r} is not a positive integer")
                parsed.append(int(value))
            elif key == "optimizer":
                if value not in OPTIMIZER_IMPLS:
                    raise ValueError(f"--sweep optimizer: {value!r} (use foreach, fused)")
                parsed.append(value)
            elif key == "cuda_graphs":
                lowered = value.lower()
                if lowered not in ("on", "off", "true", "false", "1", "0"):
                    raise ValueError(f"--sweep cuda_graphs: {value!r} (use on, off)")
                parsed.append(lowered in ("on", "true", "1"))
            elif key == "compile_mode":
                if value not in COMPILE_MODES:
                    raise ValueError(
                        "--sweep compile_mode: {!r} (use {})".format(
                            value, ", ".join(COMPILE_MODES)
                        )
                    )
                parsed.append(value)
            elif key == "compile_dtype":
                if value not in ("fp16", "bf16"):
                    raise ValueError(f"--sweep compile_dtype: {value!r} (use fp16, bf16)")
                parsed.append(value)
        axes[key] = parsed
    return axes


def parse_gpus(text: str) -> Any:
    """--gpus: 'all', a count N (the first N devices) or a comma list of indices."""
    text = text.strip()
    if text == "all":
        return "all"
    if text.isdigit():
        if int(text) < 1:
            raise ValueError("--gpus must be 'all', a count >= 1 or a list of GPU indices")
        return int(text)
    indices = []
    for part in _split_list(text):
        if not part.isdigit():
            raise ValueError(f"--gpus: {part!r} is not a GPU index")
        indices.append(int(part))
    if not indices or len(set(indices)) != len(indices):
        raise ValueError("--gpus: give 'all', a count, or distinct GPU indices")
    return indices


def _worker_list(text: str) -> List[int]:
    if text == "auto":
        return [min(12, max(1, (os.cpu_count() or 2) - 2))]
    values = []
    for part in _split_list(text):
        if not part.isdigit():
            raise ValueError(f"--num-workers: {part!r} is not a non-negative integer")
        values.append(int(part))
    if not values:
        raise ValueError("--num-workers is empty")
    return values


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpu_throughput_measure.py",
        description=(
            "Measure ResNet-50 training throughput (synthetic data on the device) in several "
            "numeric modes and write one JSON report. Modes: {} (alias seed_recipe = amp_fp16). "
            "Probes: {}.".format(", ".join(MODE_ORDER), ", ".join(PROBE_ORDER))
        ),
        epilog=(
            "Exit codes: 0 report written; 2 bad arguments; 3 torch/torchvision not importable; "
            "4 CUDA requested but unavailable. Examples: --profile quick; --profile full --output "
            "/tmp/r.json; --modes amp_fp16_cl --sweep batch=256,384 --sweep optimizer=foreach,fused"
        ),
    )
    add = parser.add_argument
    add(
        "--profile",
        choices=sorted(PROFILES),
        default="quick",
        help="quick: fp32, amp_fp16 (seed recipe), amp_fp16_cl, the h2d, membw and matmul "
        "probes (about 35 s on an H200 before the two newer probes); "
        "full: every mode and probe (default: %(default)s)",
    )
    add(
        "--modes",
        help="comma list of modes to run instead of the profile's, or 'none' (probes only)",
    )
    add(
        "--probes",
        help="comma list of probes (h2d: pinned copies both ways and the PCIe link under load; "
        "membw; matmul; input_pipeline) or 'none'",
    )
    add(
        "--device",
        choices=["cuda", "cpu"],
        default="cuda",
        help="cuda (default) or cpu (for CI: use a tiny --image-size and --batch-size)",
    )
    add(
        "--batch-size",
        type=int,
        help=f"batch size per GPU for every mode (default: {DEFAULT_BATCH}; the full profile "
        "runs compile at 512 unless this or --batch compile=N is given)",
    )
    add(
        "--batch",
        action="append",
        default=[],
        metavar="MODE=N",
        help="per-mode batch size, e.g. --batch amp_bf16_cl=384 (repeatable or comma list)",
    )
    add("--image-size", type=int, default=224, help="square image side (default: %(default)s)")
    add("--num-classes", type=int, default=1000, help="classifier width (default: %(default)s)")
    add("--warmup", type=int, help="warm-up steps per mode (default: from the profile)")
    add("--steps", type=int, help="timed steps per window (default: from the profile)")
    add("--windows", type=int, help="timed windows per mode; the median counts (default: profile)")
    add(
        "--optimizer-impl",
        choices=OPTIMIZER_IMPLS,
        default="fused",
        help="SGD implementation; fused falls back to foreach where unsupported (default: "
        "%(default)s)",
    )
    add(
        "--compile-mode",
        choices=COMPILE_MODES,
        default="default",
        help="torch.compile mode for the compile mode (default: %(default)s)",
    )
    add(
        "--compile-dtype",
        choices=["auto", "fp16", "bf16"],
        default="auto",
        help="AMP dtype for the compile mode; auto = the faster channels_last dtype measured "
        "in this run, else bf16 where supported (default: %(default)s)",
    )
    add(
        "--cuda-graphs",
        action="store_true",
        default=None,
        help="capture the whole training step in a CUDA graph in every single-GPU mode (best "
        "effort: falls back with a reported reason; fp16 needs the fused optimizer). Default: "
        "only the full profile's compile mode",
    )
    add(
        "--no-cuda-graphs",
        dest="cuda_graphs",
        action="store_false",
        help="no CUDA-graph capture in any mode",
    )
    add(
        "--ddp-backend",
        choices=["nccl", "gloo"],
        help="process-group backend for ddp (default: nccl on cuda, gloo on cpu)",
    )
    add(
        "--world-size",
        type=int,
        help="ddp processes (default: one per --gpus GPU, on those GPUs; 1 on cpu unless "
        "--gpus says more)",
    )
    add(
        "--gpus",
        default="all",
        help="GPUs the single-GPU modes measure, all at once, one process each, then the "
        "h2d, membw and matmul probes on each in turn, and ddp over them: all "
        "(default: every visible GPU; 1 on cpu), a count N (the first N; on cpu, N "
        "processes), or a comma list of indices",
    )
    add(
        "--ddp-mode",
        choices=["auto", "amp_fp16_cl", "amp_bf16_cl", "amp_fp16", "amp_bf16", "fp32", "tf32"],
        default="auto",
        help="single-process config that ddp replicates (default: the best eager AMP "
        "channels_last mode of this run)",
    )
    add(
        "--ddp-timeout",
        type=int,
        default=300,
        help="seconds the ddp workers may take in all (default: %(default)s)",
    )
    add(
        "--num-workers",
        default="auto",
        help="DataLoader workers for the input_pipeline probe; comma list to compare "
        "(default: auto = min(12, cpus - 2))",
    )
    add(
        "--pipeline-images",
        type=int,
        help="images in the on-disk memmap dataset (default: 8192 on cuda, 256 on cpu)",
    )
    add(
        "--pipeline-batch-size",
        type=int,
        help="DataLoader batch size for input_pipeline (default: --batch-size)",
    )
    add(
        "--h2d-mib",
        type=int,
        default=512,
        help="size of the pinned host-to-device copy (default: %(default)s)",
    )
    add(
        "--membw-mib",
        type=int,
        default=1024,
        help="size of the device-to-device copy of the membw probe (default: %(default)s)",
    )
    add(
        "--matmul-size",
        type=int,
        help="square matmul side for the matmul probe (default: 8192 on cuda, 256 on cpu)",
    )
    add(
        "--peak-tflops",
        metavar="SPEC",
        help="peak dense TFLOP/s for MFU: one number, or fp32=..,tf32=..,bf16=..,fp16=.. "
        "(default: MFU is reported as null)",
    )
    add(
        "--max-seconds",
        type=float,
        help="global budget; modes and probes not started by then are skipped with a reason "
        "(default: 85 quick, 540 full)",
    )
    add(
        "--sweep",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="run every combination for the sweep modes; keys: "
        + ", ".join(SWEEP_KEYS)
        + ". The mode's entry is the fastest variant; all variants go to 'sweep'",
    )
    add(
        "--sweep-modes", help="modes the sweep applies to (default: every selected mode except ddp)"
    )
    add(
        "--cudnn-benchmark-limit",
        type=int,
        help="cuDNN algorithms the first step of each conv shape times (0: all of them; "
        "default: from the profile, else torch's)",
    )
    add(
        "--cudnn-heuristics",
        help="comma list of modes whose convolutions take cuDNN's heuristic choice instead of "
        "autotuning (torch.backends.cudnn.benchmark off), or 'none' (default: from the profile; "
        "quick: amp_fp16,amp_fp16_cl)",
    )
    add("--threads", type=int, help="torch.set_num_threads (default: torch's choice)")
    add("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    add("--tmp-dir", help="where the input_pipeline dataset is written (default: system temp)")
    add("--output", help="write the JSON here instead of stdout")
    add(
        "--progress",
        metavar="FILE",
        help="keep FILE up to date with the step running now and the steps done (JSON)",
    )
    add("--quiet", action="store_true", help="no progress lines on stderr")
    add("--ddp-worker", help=argparse.SUPPRESS)
    add("--gpu-worker", help=argparse.SUPPRESS)
    return parser


def resolve_plan(args: argparse.Namespace) -> Dict[str, Any]:
    """Validate the arguments and fill profile defaults. Raises ValueError when bad."""
    profile = PROFILES[args.profile]
    mode_defaults: Dict[str, Dict[str, Any]] = profile["mode_defaults"]
    modes = parse_mode_list(args.modes) if args.modes is not None else list(profile["modes"])
    probes = parse_probe_list(args.probes) if args.probes is not None else list(profile["probes"])
    if args.batch_size is not None and args.batch_size < 1:
        raise ValueError("--batch-size must be >= 1")
    global_batch = args.batch_size or DEFAULT_BATCH

    def mode_batch(mode: str) -> int:
        if args.batch_size is not None:
            return args.batch_size
        return int(mode_defaults.get(mode, {}).get("batch", DEFAULT_BATCH))

    for name in ("image_size", "num_classes", "h2d_mib", "membw_mib", "ddp_timeout"):
        if getattr(args, name) < 1:
            raise ValueError("--{} must be >= 1".format(name.replace("_", "-")))
    if args.image_size < 16:
        raise ValueError("--image-size must be >= 16 (ResNet-50 downsamples 32x)")
    for name in (
        "warmup",
        "steps",
        "windows",
        "world_size",
        "pipeline_images",
        "pipeline_batch_size",
        "matmul_size",
        "threads",
        "cudnn_benchmark_limit",
    ):
        value = getattr(args, name)
        zero_ok = name in ("warmup", "cudnn_benchmark_limit")
        if value is not None and value < (0 if zero_ok else 1):
            raise ValueError(
                "--{} must be {}".format(name.replace("_", "-"), ">= 0" if zero_ok else "positive")
            )
    if args.max_seconds is not None and args.max_seconds < 0:
        raise ValueError("--max-seconds must be >= 0")
    batches = parse_batch_overrides(args.batch)
    sweep = parse_sweep(args.sweep)
    sweep_modes = (
        parse_mode_list(args.sweep_modes) if args.sweep_modes else [m for m in modes if m != "ddp"]
    )
    if sweep and "ddp" in sweep_modes:
        raise ValueError("--sweep does not apply to ddp; leave it out of --sweep-modes")
    cpu = args.device == "cpu"
    return {
        "profile": args.profile,
        "device": args.device,
        "modes": modes,
        "probes": probes,
        "batch_size": global_batch,
        "batch_overrides": batches,
        "batch_sizes": {m: batches.get(m, mode_batch(m)) for m in modes},
        "image_size": args.image_size,
        "num_classes": args.num_classes,
        "warmup": args.warmup if args.warmup is not None else profile["warmup"],
        "steps": args.steps if args.steps is not None else profile["steps"],
        "windows": args.windows if args.windows is not None else profile["windows"],
        "optimizer_impl": args.optimizer_impl,
        "compile_mode": args.compile_mode,
        "compile_dtype": args.compile_dtype,
        "cuda_graphs_modes": [
            m
            for m in modes
            if m != "ddp"
            and (
                args.cuda_graphs
                if args.cuda_graphs is not None
                else mode_defaults.get(m, {}).get("cuda_graphs", False)
            )
        ],
        "gpus": parse_gpus(args.gpus),
        "ddp_backend": args.ddp_backend or ("gloo" if cpu else "nccl"),
        "world_size": args.world_size,
        "ddp_mode": args.ddp_mode,
        "ddp_timeout": args.ddp_timeout,
        "num_workers": _worker_list(args.num_workers),
        "pipeline_images": args.pipeline_images or (256 if cpu else 8192),
        "pipeline_batch_size": args.pipeline_batch_size or global_batch,
        "h2d_mib": args.h2d_mib,
        "membw_mib": args.membw_mib,
        "matmul_size": args.matmul_size or (256 if cpu else 8192),
        "peak_tflops": parse_peak_tflops(args.peak_tflops),
        "max_seconds": (
            args.max_seconds if args.max_seconds is not None else profile["max_seconds"]
        ),
        "sweep": sweep,
        "sweep_modes": sweep_modes if sweep else [],
        "threads": args.threads,
        "cudnn_benchmark_limit": (
            args.cudnn_benchmark_limit
            if args.cudnn_benchmark_limit is not None
            else profile.get("cudnn_benchmark_limit")
        ),
        "cudnn_heuristic_modes": (
            parse_mode_list(args.cudnn_heuristics)
            if args.cudnn_heuristics is not None
            else list(profile.get("cudnn_heuristic_modes", []))
        ),
        "seed": args.seed,
        "tmp_dir": args.tmp_dir,
        "flop_per_image": flop_per_image(args.image_size),
        "timing": "CUDA events" if not cpu else "time.perf_counter",
    }


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.ddp_worker:
        return ddp_worker_main(args.ddp_worker)
    if args.gpu_worker:
        return gpu_worker_main(args.gpu_worker)
    _PROGRESS["path"] = args.progress
    progress(phase="starting", current=None)
    # GPU i is nvidia-smi's GPU i (CUDA's default order is fastest first).
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    try:
        plan = resolve_plan(args)
    except ValueError as exc:
        parser.error(str(exc))  # exits 2
    common._QUIET = bool(args.quiet)
    # Anything that prints to fd 1 while we run (libraries, NCCL, compilers) lands on
    # stderr; the JSON document alone goes to the real stdout at the end.
    sys.stdout.flush()
    real_stdout = os.dup(1)
    os.dup2(2, 1)
    try:
        code, report = run(plan, argv)
    finally:
        sys.stdout.flush()
        os.dup2(real_stdout, 1)
        os.close(real_stdout)
    if report is None:
        return code
    deadline = time.monotonic() + 10
    children = list_children()
    while children and time.monotonic() < deadline:
        time.sleep(0.2)
        children = list_children()
    report["children_at_exit"] = children
    report["wall_seconds"] = _round(time.monotonic() - _T0, 2)
    progress(phase="done", current=None)
    text = json.dumps(report, indent=2, sort_keys=False, allow_nan=False)
    if args.output:
        directory = os.path.dirname(os.path.abspath(args.output))
        os.makedirs(directory, exist_ok=True)
        tmp_path = args.output + ".tmp"
        with open(tmp_path, "w") as fh:
            fh.write(text + "\n")
        os.replace(tmp_path, args.output)
        log(f"report written to {args.output}")
    else:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    log("done in {:.1f} s".format(report["wall_seconds"]))
    # If interpreter shutdown ever hangs (a stray non-daemon thread or worker), dump the
    # stacks and exit instead of running into the caller's timeout.
    faulthandler.dump_traceback_later(60, exit=True)
    return code
