"""The ddp mode: DistributedDataParallel over the local GPUs, one process per rank.

``run_ddp`` starts ``python PACKAGE_DIR --ddp-worker CONFIG`` per rank with an env://
rendezvous (torchrun-style) and compares the total with the single-GPU rate of the
same config; ``ddp_worker_main`` is one rank.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Any, Dict, List, Tuple

from . import common
from .common import _T0, EXIT_NO_TORCH, EXIT_OK, PACKAGE_DIR, _round, _stop_processes, log
from .context import Context, import_torch, is_oom, oom_reason
from .gpus import measured_devices, visible_devices
from .modes import MODES, OPTIMIZER_IMPLS, empty_result, mfu, precision_key, unsupported_reason
from .train import summarize_windows, train_benchmark


def _free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ddp_base_mode(ctx: Context) -> Tuple[str, str]:
    requested = ctx.plan["ddp_mode"]
    if requested != "auto":
        return requested, "requested with --ddp-mode"
    measured = [
        (res["img_s"], name)
        for name, res in ctx.results.items()
        if name in ("amp_fp16_cl", "amp_bf16_cl") and res["status"] == "ok" and res["img_s"]
    ]
    if measured:
        img_s, name = max(measured)
        return name, f"the best eager AMP channels_last mode of this run ({img_s} img/s)"
    for name in ("amp_fp16_cl", "amp_bf16_cl"):
        if unsupported_reason(ctx, name, MODES[name]["amp"]) is None:
            return name, "no channels_last mode measured in this run; first supported"
    return "fp32", "no AMP channels_last mode is supported on this device"


def run_ddp(ctx: Context) -> Dict[str, Any]:
    torch, plan = ctx.torch, ctx.plan
    base, why = ddp_base_mode(ctx)
    spec = MODES[base]
    base_res = ctx.results.get(base)
    base_ok = bool(base_res and base_res["status"] == "ok" and base_res["img_s"])
    # Same config as the single-GPU run it is compared with: its batch and optimizer.
    batch = plan["batch_overrides"].get(
        "ddp",
        base_res["batch_size"]
        if base_ok and base_res
        else plan["batch_sizes"].get(base, plan["batch_size"]),
    )
    optimizer_impl = (
        base_res["optimizer_impl"]
        if base_ok and base_res and base_res["optimizer_impl"] in OPTIMIZER_IMPLS
        else plan["optimizer_impl"]
    )
    result = empty_result("ddp", batch)
    result.update(
        {
            "base_mode": base,
            "base_reason": why,
            "amp_dtype": spec["amp"],
            "precision": precision_key(spec["amp"], spec["tf32"]),
            "channels_last": spec["channels_last"],
            "tf32": spec["tf32"],
            "backend": plan["ddp_backend"],
            "launcher": "subprocess per rank, env:// rendezvous (torchrun-style)",
            "world_size": None,
            "gpus": [],
            "img_s_per_gpu": None,
            "single_gpu_img_s": None,
            "scaling_efficiency": None,
        }
    )
    cuda = ctx.device == "cuda"
    visible = torch.cuda.device_count() if cuda else 0
    # The GPUs of --gpus, those the single-GPU modes measured: a GPU the caller left out
    # (busy with another process) is not in the ddp world either.
    devices = measured_devices(plan, visible)
    world = plan["world_size"] or len(devices)
    result["world_size"] = world
    result["gpus"] = devices[:world] if world <= len(devices) else list(range(world))
    reason = ctx.over_budget() or unsupported_reason(ctx, base, spec["amp"])
    if not reason and not torch.distributed.is_available():
        reason = "torch.distributed is not available in this torch build"
    if not reason and plan["ddp_backend"] == "nccl":
        if not cuda:
            reason = "the nccl backend needs CUDA; use --ddp-backend gloo on cpu"
        elif not torch.distributed.is_nccl_available():
            reason = "this torch build has no NCCL; use --ddp-backend gloo"
    if not reason and cuda and world > visible:
        reason = f"--world-size {world} but only {visible} GPU(s) are visible"
    if not reason and plan["gpus"] != "all" and world > len(devices):
        reason = f"--world-size {world} but --gpus gives {len(devices)} GPU(s): {devices}"
    if reason:
        result["reason"] = reason
        log(f"ddp: skipped: {reason}")
        return result
    if cuda and result["gpus"] != list(range(visible)):
        result["notes"].append(
            f"ran on GPU(s) {result['gpus']} of {visible} (--gpus): the others were not used"
        )
    if cuda and world == 1:
        result["notes"].append(
            "only 1 GPU visible: ran DDP with world size 1, so scaling efficiency measures "
            "DDP overhead only"
        )
    log(
        f"ddp: {world} process(es) on GPU(s) {result['gpus']}, {plan['ddp_backend']}, "
        f"config {base} ({why}), batch {batch} per process"
    )
    tmp = tempfile.mkdtemp(prefix="gpu_throughput_ddp_", dir=plan["tmp_dir"])
    procs: List[subprocess.Popen] = []
    try:
        config = {
            "plan": {k: v for k, v in plan.items() if k != "sweep"},
            "amp": spec["amp"],
            "channels_last": spec["channels_last"],
            "tf32": spec["tf32"],
            "batch": batch,
            "optimizer_impl": optimizer_impl,
            "world_size": world,
            "timeout": plan["ddp_timeout"],
            "results_dir": tmp,
            "quiet": common._QUIET,
        }
        config_path = os.path.join(tmp, "config.json")
        with open(config_path, "w") as fh:
            json.dump(config, fh)
        port = _free_port()
        threads = max(1, (os.cpu_count() or 2) // world)
        for rank in range(world):
            env = dict(os.environ)
            if cuda:
                # Each rank sees the world's GPUs only, rank r's as its cuda:r.
                env["CUDA_VISIBLE_DEVICES"] = visible_devices(
                    result["gpus"], os.environ.get("CUDA_VISIBLE_DEVICES")
                )
                env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
            env.update(
                {
                    "MASTER_ADDR": "127.0.0.1",
                    "MASTER_PORT": str(port),
                    "RANK": str(rank),
                    "LOCAL_RANK": str(rank),
                    "WORLD_SIZE": str(world),
                    "OMP_NUM_THREADS": str(plan["threads"] or threads),
                }
            )
            procs.append(
                subprocess.Popen(
                    [sys.executable, PACKAGE_DIR, "--ddp-worker", config_path],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=sys.stderr.fileno(),
                    stderr=sys.stderr.fileno(),
                )
            )
        deadline = time.monotonic() + plan["ddp_timeout"]
        failure = None
        while True:
            codes = [p.poll() for p in procs]
            if all(c is not None for c in codes):
                bad = [(r, c) for r, c in enumerate(codes) if c != 0]
                if bad:
                    failure = "ddp worker(s) exited non-zero: " + ", ".join(
                        f"rank {r} rc {c}" for r, c in bad
                    )
                break
            if any(c not in (None, 0) for c in codes):
                bad = [(r, c) for r, c in enumerate(codes) if c not in (None, 0)]
                failure = "ddp worker(s) exited non-zero: {} (stopped the others)".format(
                    ", ".join(f"rank {r} rc {c}" for r, c in bad)
                )
                break
            if time.monotonic() > deadline:
                failure = f"ddp workers did not finish within --ddp-timeout {plan['ddp_timeout']} s"
                break
            time.sleep(0.2)
        _stop_processes(procs)
        ranks = []
        for rank in range(world):
            path = os.path.join(tmp, f"rank{rank}.json")
            if os.path.exists(path):
                with open(path) as fh:
                    ranks.append(json.load(fh))
        errors = [r["error"] for r in ranks if r.get("error")]
        if errors:
            failure = errors[0]
        if failure is None and len(ranks) != world:
            failure = f"only {len(ranks)} of {world} ddp workers reported"
        if failure:
            result["status"] = "failed"
            result["reason"] = failure
            log(f"ddp: failed: {failure}")
            return result
    finally:
        _stop_processes(procs)
        shutil.rmtree(tmp, ignore_errors=True)
    steps = plan["steps"]
    per_window = [max(r["window_ms"][i] for r in ranks) for i in range(plan["windows"])]
    result.update(summarize_windows(per_window, batch * world, steps))
    rank0 = next(r for r in ranks if r["rank"] == 0)
    result.update(
        {
            "status": "ok",
            "optimizer_impl": rank0["optimizer_impl"],
            "peak_memory_mib": _round(rank0["peak_memory_mib"], 1),
            "warmup_seconds": _round(rank0["warmup_s"], 2),
        }
    )
    result["notes"].extend(rank0.get("notes", []))
    img_s = result["img_s"]
    result["img_s_per_gpu"] = _round(img_s / world) if img_s else None
    if base_ok and base_res:
        if base_res["batch_size"] == batch:
            result["single_gpu_img_s"] = base_res["img_s"]
            result["scaling_efficiency"] = _round(img_s / (world * base_res["img_s"]), 4)
        else:
            result["notes"].append(
                f"no scaling efficiency: {base} ran at batch {base_res['batch_size']}, "
                f"ddp at {batch}"
            )
    else:
        result["notes"].append(
            f"no scaling efficiency: {base} was not measured in this run (add it to --modes)"
        )
    result["mfu"] = mfu(ctx, result["img_s_per_gpu"], result["precision"])
    log(
        "ddp: {} img/s total, {} per process, scaling efficiency {}".format(
            img_s, result["img_s_per_gpu"], result["scaling_efficiency"]
        )
    )
    return result


def ddp_worker_main(config_path: str) -> int:
    """One DDP rank (started by run_ddp with RANK/WORLD_SIZE/MASTER_* in the environment)."""
    with open(config_path) as fh:
        config = json.load(fh)
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    common._QUIET = bool(config.get("quiet")) or rank != 0
    out_path = os.path.join(config["results_dir"], f"rank{rank}.json")
    torch, torchvision, error = import_torch()
    log(f"ddp rank 0: torch imported in {time.monotonic() - _T0:.1f} s")
    if error:
        with open(out_path, "w") as fh:
            json.dump({"rank": rank, "error": error}, fh)
        return EXIT_NO_TORCH
    import torch.distributed as dist

    plan = dict(config["plan"])
    plan["sweep"] = {}
    if plan["threads"]:
        torch.set_num_threads(plan["threads"])
    cuda = plan["device"] == "cuda"
    try:
        if cuda:
            torch.cuda.set_device(rank)
        kwargs: Dict[str, Any] = {
            "backend": plan["ddp_backend"],
            "init_method": "env://",
            "rank": rank,
            "world_size": world,
            "timeout": datetime.timedelta(seconds=config["timeout"]),
        }
        if cuda:
            kwargs["device_id"] = torch.device("cuda", rank)
        try:
            dist.init_process_group(**kwargs)
        except TypeError:
            kwargs.pop("device_id", None)
            dist.init_process_group(**kwargs)
        log(f"ddp rank 0: {plan['ddp_backend']} process group of {world} up")
        ctx = Context(torch, torchvision, plan, index=rank if cuda else 0)

        def wrap(model: Any) -> Any:
            from torch.nn.parallel import DistributedDataParallel

            return DistributedDataParallel(
                model, device_ids=[rank] if cuda else None, gradient_as_bucket_view=True
            )

        def barrier() -> None:
            ctx.sync()
            dist.barrier()

        measured = train_benchmark(
            ctx,
            config["amp"],
            config["channels_last"],
            config["tf32"],
            config["batch"],
            config["optimizer_impl"],
            ddp_wrap=wrap,
            window_barrier=barrier,
        )
        measured["rank"] = rank
        log(f"ddp rank 0: done, warm-up {measured['warmup_s']:.1f} s")
        with open(out_path, "w") as fh:
            json.dump(measured, fh)
        return EXIT_OK
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        if is_oom(torch, exc):
            message = f"rank {rank}: " + oom_reason("ddp", config["batch"], plan["device"])
        else:
            message = f"rank {rank}: {type(exc).__name__}: {str(exc)[:800]}"
        with open(out_path, "w") as fh:
            json.dump({"rank": rank, "error": message}, fh)
        return 1
    finally:
        if dist.is_initialized():
            with contextlib.suppress(Exception):
                dist.destroy_process_group()
