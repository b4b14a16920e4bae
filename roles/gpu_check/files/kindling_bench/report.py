"""The JSON document (schema_version 1): the environment, the seed ratio, and the run.

``run`` measures what the plan asks (modes in this process or on every GPU at once,
ddp, probes) and returns the exit code and the report; ``cli.main`` writes it.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import platform
import shutil
import socket
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from .common import _T0, EXIT_BAD_ARGS, EXIT_NO_CUDA, EXIT_NO_TORCH, EXIT_OK, _round, log, progress
from .context import Context, import_torch
from .ddp import run_ddp
from .gpus import bus_id, host_entry, measured_devices, run_gpu_workers
from .modes import SEED_MODE, progress_done, run_mode_with_sweep
from .probes import run_probes

PROGRAM_VERSION = "1.0.0"
SCHEMA_VERSION = 1


def _nvidia_smi_driver() -> Optional[str]:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run(
            [exe, "--query-gpu=driver_version", "--format=csv,noheader"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=15,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.decode("utf-8", "replace").strip().splitlines()
    return lines[0].strip() if out.returncode == 0 and lines else None


def collect_environment(torch: Any, torchvision: Any, device: str) -> Dict[str, Any]:
    env: Dict[str, Any] = {
        "hostname": socket.gethostname(),
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__ if torchvision is not None else None,
        "numpy": None,
        "cuda_built": torch.version.cuda,
        "cuda": torch.version.cuda,
        "cuda_available": bool(torch.cuda.is_available()) if device == "cuda" else None,
        "cudnn": None,
        "nccl": None,
        "driver": None,
        "device": device,
        "gpu_count": 0,
        "gpus": [],
        "arch_list": [],
        "bf16_supported": None,
    }
    with contextlib.suppress(Exception):
        import numpy

        env["numpy"] = numpy.__version__
    with contextlib.suppress(Exception):
        env["cudnn"] = torch.backends.cudnn.version()
    if device == "cuda":
        with contextlib.suppress(Exception):
            version = torch.cuda.nccl.version()
            env["nccl"] = (
                ".".join(str(v) for v in version)
                if isinstance(version, (tuple, list))
                else str(version)
            )
        env["gpu_count"] = torch.cuda.device_count()
        for index in range(env["gpu_count"]):
            props = torch.cuda.get_device_properties(index)
            env["gpus"].append(
                {
                    "index": index,
                    "name": props.name,
                    "capability": f"{props.major}.{props.minor}",
                    "memory_mib": int(props.total_memory // 2**20),
                    "multi_processor_count": props.multi_processor_count,
                    "bus_id": bus_id(props),
                }
            )
        with contextlib.suppress(Exception):
            env["arch_list"] = list(torch.cuda.get_arch_list())
        env["driver"] = _nvidia_smi_driver()
    return env


def seed_ratio(results: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    seed = results.get(SEED_MODE)
    singles = [
        (res["img_s"], name)
        for name, res in results.items()
        if name != "ddp" and res["status"] == "ok" and res["img_s"]
    ]
    best_img_s, best_mode = max(singles) if singles else (None, None)
    out: Dict[str, Any] = {
        "seed_mode": SEED_MODE,
        "seed_recipe": "AMP fp16 + GradScaler, NCHW, no channels_last (seed 001's AMP row)",
        "seed_img_s": None,
        "best_mode": best_mode,
        "best_img_s": best_img_s,
        "ratio": None,
        "reason": None,
    }
    if seed is None:
        out["reason"] = f"{SEED_MODE} (seed_recipe) was not in this run's modes"
    elif seed["status"] != "ok" or not seed["img_s"]:
        out["reason"] = "{} was {}: {}".format(SEED_MODE, seed["status"], seed["reason"])
    else:
        out["seed_img_s"] = seed["img_s"]
        out["ratio"] = _round(best_img_s / seed["img_s"], 3) if best_img_s else None
    return out


def run(plan: Dict[str, Any], argv: List[str]) -> Tuple[int, Optional[Dict[str, Any]]]:
    # torch first: a host without CUDA is told so before torchvision's import cost.
    torch, _, error = import_torch(with_torchvision=False)
    if error:
        log(error)
        log(
            "install torch and torchvision into this environment (the conda_pytorch role does "
            "it), or run the program with the environment's python"
        )
        return EXIT_NO_TORCH, None
    if plan["threads"]:
        torch.set_num_threads(plan["threads"])
    if plan["device"] == "cuda" and not torch.cuda.is_available():
        built = torch.version.cuda
        log(
            "CUDA requested but torch.cuda.is_available() is False (torch {}, built for CUDA {}): "
            "{}. Check nvidia-smi and the torch_cuda facts, or use --device cpu.".format(
                torch.__version__,
                built or "none",
                "this is a CPU-only torch wheel: install a CUDA build"
                if not built
                else "a CPU-only torch wheel or a driver problem (no GPU visible to this "
                f"process, driver missing, or too old for CUDA {built})",
            )
        )
        return EXIT_NO_CUDA, None
    torch, torchvision, error = import_torch(with_torchvision=bool(plan["modes"]))
    if error:
        log(error)
        return EXIT_NO_TORCH, None
    environment = collect_environment(torch, torchvision, plan["device"])
    if plan["device"] == "cuda":
        gpu0 = environment["gpus"][0]
        log(
            f"GPU: {gpu0['name']} x{environment['gpu_count']} (capability {gpu0['capability']}), "
            f"driver {environment['driver']}, torch {environment['torch']}, CUDA "
            f"{environment['cuda_built']}, cuDNN {environment['cudnn']}"
        )
    ctx = Context(torch, torchvision, plan)
    environment["bf16_supported"] = ctx.bf16[0]
    try:
        devices = measured_devices(plan, environment["gpu_count"])
    except ValueError as exc:
        log(str(exc))
        return EXIT_BAD_ARGS, None
    singles = [m for m in plan["modes"] if m != "ddp"]
    per_gpu: List[Dict[str, Any]] = []
    # In this process only GPU 0 alone; any other GPU, or several, in their own processes.
    if singles and devices != [0]:
        per_gpu = run_gpu_workers(ctx, devices, singles)
        for mode in singles:
            ctx.results[mode] = host_entry(per_gpu, mode)
            progress_done(mode, ctx.results[mode])
        for gpu in per_gpu:
            ctx.sweep.extend(gpu.pop("sweep", []) or [])
    else:
        for mode in singles:
            ctx.results[mode] = run_mode_with_sweep(ctx, mode)
        if singles:
            gpu = environment["gpus"][0] if environment["gpus"] else {}
            per_gpu = [
                {
                    "index": 0,
                    "name": gpu.get("name", "cpu"),
                    "bus_id": gpu.get("bus_id"),
                    "modes": {m: ctx.results[m] for m in singles},
                }
            ]
    if "ddp" in plan["modes"]:
        progress(phase="mode", current="ddp")
        ctx.results["ddp"] = run_ddp(ctx)
        progress(current=None)
        progress_done("ddp", ctx.results["ddp"])
    # Keep the plan's order of modes in the report.
    ctx.results = {m: ctx.results[m] for m in plan["modes"] if m in ctx.results}
    # The probes after the modes and ddp: the floors' on each measured GPU in turn (never
    # a GPU the --gpus list left out), the host's once.
    probes = run_probes(ctx, devices)
    if ctx.used_compile:
        with contextlib.suppress(Exception):
            from torch._inductor.async_compile import shutdown_compile_workers

            shutdown_compile_workers()
    config = {k: v for k, v in plan.items() if k != "tmp_dir"}
    config["argv"] = argv
    config["program_version"] = PROGRAM_VERSION
    report = {
        "schema_version": SCHEMA_VERSION,
        "program": "gpu_throughput_measure.py",
        "started_at": datetime.datetime.fromtimestamp(
            time.time() - (time.monotonic() - _T0), datetime.timezone.utc
        ).isoformat(timespec="seconds"),
        "environment": environment,
        "config": config,
        "modes": ctx.results,
        "per_gpu": per_gpu,
        "probes": probes,
        "seed_ratio": seed_ratio(ctx.results),
        "sweep": ctx.sweep,
        "children_at_exit": [],
        "wall_seconds": None,
    }
    ratio = report["seed_ratio"]
    if ratio["ratio"]:
        log(
            "best single-GPU mode {}: {} img/s = {:.2f}x the seed recipe ({}, {} img/s)".format(
                ratio["best_mode"],
                ratio["best_img_s"],
                ratio["ratio"],
                SEED_MODE,
                ratio["seed_img_s"],
            )
        )
    return EXIT_OK, report
