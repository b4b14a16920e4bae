"""Every GPU at once: the single-GPU modes on each GPU, one process per GPU.

``run_gpu_workers`` starts ``python PACKAGE_DIR --gpu-worker CONFIG`` per device (one
GPU visible to each as cuda:0) and reads back their results; ``host_entry`` makes the
host's entry of a mode, its median GPU.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

from . import common
from .common import _PROGRESS, EXIT_OK, PACKAGE_DIR, _stop_processes, log, progress
from .context import Context, import_torch
from .modes import empty_result, run_mode_with_sweep


def measured_devices(plan: Dict[str, Any], visible: int) -> List[int]:
    """The device indices the single-GPU modes measure (on cpu: simulated devices)."""
    wanted = plan["gpus"]
    if plan["device"] == "cpu":
        # A list keeps its indices (labels only), as on a GPU host with some left out.
        if isinstance(wanted, list):
            return list(wanted)
        return list(range(1 if wanted == "all" else wanted))
    if wanted == "all":
        return list(range(visible))
    if isinstance(wanted, int):
        if wanted > visible:
            raise ValueError(f"--gpus {wanted}: only {visible} GPU(s) are visible")
        return list(range(wanted))
    missing = [i for i in wanted if i >= visible]
    if missing:
        raise ValueError(f"--gpus: GPU(s) {missing} not visible ({visible} visible)")
    return list(wanted)


def bus_id(props: Any) -> Optional[str]:
    """nvidia-smi's bus id (00000000:18:00.0) from torch's device properties, if it has them."""
    try:
        domain, bus, device = (
            int(props.pci_domain_id),
            int(props.pci_bus_id),
            int(props.pci_device_id),
        )
    except (AttributeError, TypeError, ValueError):
        return None
    return f"{domain:08X}:{bus:02X}:{device:02X}.0"


def host_entry(per_gpu: List[Dict[str, Any]], mode: str) -> Dict[str, Any]:
    """The host's entry for a mode: the median GPU's result (of those that measured it)."""
    results = [(g["index"], (g["modes"] or {}).get(mode)) for g in per_gpu]
    ok = sorted(
        ((r["img_s"], i, r) for i, r in results if r and r["status"] == "ok" and r["img_s"]),
        key=lambda x: (x[0], x[1]),
    )
    if not ok:
        first = next((r for _, r in results if r), None)
        return dict(first) if first else {"status": "failed", "reason": "no GPU result"}
    _, index, result = ok[(len(ok) - 1) // 2]  # the lower median: a real GPU's result
    entry = dict(result)
    entry["gpu_index"] = index
    entry["gpu_count"] = len(per_gpu)
    entry["img_s_by_gpu"] = {str(i): r["img_s"] if r else None for i, r in results}
    entry["notes"] = [
        *(result.get("notes") or []),
        f"the median of {len(ok)} GPU(s) measured at once (GPU {index}); per_gpu has each",
    ]
    return entry


def visible_devices(indices: List[int], parent: Optional[str]) -> str:
    """CUDA_VISIBLE_DEVICES for a child that should see these of this process's GPUs.

    GPU i of this process is the i-th entry of its own CUDA_VISIBLE_DEVICES where it has
    one, else GPU i of the host (PCI bus order, as nvidia-smi numbers them).
    """
    listed = [v.strip() for v in (parent or "").split(",") if v.strip()]
    return ",".join(listed[i] if i < len(listed) else str(i) for i in indices)


def _worker_env(index: int, device: str) -> Dict[str, str]:
    env = dict(os.environ)
    if device == "cuda":
        env["CUDA_VISIBLE_DEVICES"] = visible_devices([index], env.get("CUDA_VISIBLE_DEVICES"))
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    return env


def run_gpu_workers(ctx: Context, devices: List[int], modes: List[str]) -> List[Dict[str, Any]]:
    """The single-GPU modes on every device at once, one process per device."""
    plan = ctx.plan
    workdir = tempfile.mkdtemp(prefix="kindling-gpus-")
    remaining = max(1.0, ctx.deadline - time.monotonic())
    procs: List[Tuple[int, subprocess.Popen]] = []
    try:
        for index in devices:
            config = {
                "plan": dict(plan, modes=modes, probes=[], max_seconds=remaining),
                "index": index,
                "out": os.path.join(workdir, f"gpu{index}.json"),
                "quiet": common._QUIET,
                "progress": f"{_PROGRESS['path']}.gpu{index}" if _PROGRESS["path"] else None,
            }
            path = os.path.join(workdir, f"gpu{index}.config.json")
            with open(path, "w") as fh:
                json.dump(config, fh)
            cmd = [sys.executable, PACKAGE_DIR, "--gpu-worker", path]
            procs.append(
                (
                    index,
                    subprocess.Popen(
                        cmd,
                        stdin=subprocess.DEVNULL,
                        stdout=sys.stderr,
                        env=_worker_env(index, plan["device"]),
                    ),
                )
            )
        log(f"measuring {', '.join(modes)} on {len(devices)} GPU(s) at once: {devices}")
        progress(phase="every GPU", current=", ".join(modes), gpus=devices)
        # The workers stop starting modes at the budget; a mode already running (a compile)
        # may take a while longer.
        deadline = time.monotonic() + remaining + 300
        for _, proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        late = [index for index, proc in procs if proc.poll() is None]
        _stop_processes([proc for _, proc in procs])
        per_gpu = []
        for index, proc in procs:
            out_path = os.path.join(workdir, f"gpu{index}.json")
            try:
                with open(out_path) as fh:
                    data = json.load(fh)
            except (OSError, ValueError):
                why = (
                    "did not finish in time"
                    if index in late
                    else f"exited {proc.returncode} without a result"
                )
                data = {
                    "index": index,
                    "name": None,
                    "bus_id": None,
                    "modes": {
                        m: dict(
                            empty_result(m, plan["batch_sizes"].get(m, plan["batch_size"])),
                            status="failed",
                            reason=f"the measuring process of GPU {index} {why}",
                        )
                        for m in modes
                    },
                    "sweep": [],
                }
            per_gpu.append(data)
        return per_gpu
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        for index in devices:
            if _PROGRESS["path"]:
                with contextlib.suppress(OSError):
                    os.unlink(f"{_PROGRESS['path']}.gpu{index}")


def gpu_worker_main(config_path: str) -> int:
    """One GPU's single-GPU modes (started by run_gpu_workers, one GPU visible as cuda:0)."""
    with open(config_path) as fh:
        config = json.load(fh)
    index = int(config["index"])
    common._QUIET = bool(config.get("quiet"))
    common._LOG_TAG = f"gpu_throughput_measure gpu{index}"
    _PROGRESS["path"] = config.get("progress")
    progress(gpu=index, phase="starting")
    plan = config["plan"]
    result: Dict[str, Any] = {"index": index, "name": None, "bus_id": None, "modes": {}}
    torch, torchvision, error = import_torch()
    if error:
        result["modes"] = {
            m: dict(empty_result(m, plan["batch_size"]), status="failed", reason=error)
            for m in plan["modes"]
        }
    else:
        if plan["threads"]:
            torch.set_num_threads(plan["threads"])
        ctx = Context(torch, torchvision, plan)
        if ctx.device == "cuda":
            props = torch.cuda.get_device_properties(0)
            result.update(name=props.name, bus_id=bus_id(props))
        else:
            result["name"] = "cpu"
        for mode in plan["modes"]:
            ctx.results[mode] = run_mode_with_sweep(ctx, mode)
        result["modes"] = ctx.results
        result["sweep"] = [dict(s, gpu=index) for s in ctx.sweep]
        if ctx.used_compile:
            with contextlib.suppress(Exception):
                from torch._inductor.async_compile import shutdown_compile_workers

                shutdown_compile_workers()
    tmp = config["out"] + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(result, fh, allow_nan=False)
    os.replace(tmp, config["out"])
    return EXIT_OK
