"""The probes: pinned host-to-device copies, matmul throughput, the input pipeline."""

from __future__ import annotations

import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Tuple

from .common import _round, list_children, log
from .context import Context

PROBE_ORDER = ["h2d", "matmul", "input_pipeline"]


def probe_skeleton(reason: Optional[str] = None) -> Dict[str, Any]:
    return {"status": "skipped" if reason else "ok", "reason": reason}


def probe_h2d(ctx: Context) -> Dict[str, Any]:
    torch = ctx.torch
    size_mib = ctx.plan["h2d_mib"]
    result = probe_skeleton()
    result.update({"size_mib": size_mib, "gb_s": None, "d2h_gb_s": None, "samples": []})
    if ctx.device != "cuda":
        result.update(probe_skeleton("device is cpu: there is no host-to-device link to measure"))
        return result
    nbytes = size_mib * 2**20
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    device = torch.empty(nbytes, dtype=torch.uint8, device=ctx.dev)
    try:

        def measure(dst: Any, src: Any) -> List[float]:
            for _ in range(2):
                dst.copy_(src, non_blocking=True)
            torch.cuda.synchronize()
            samples = []
            for _ in range(7):
                begin = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                begin.record()
                dst.copy_(src, non_blocking=True)
                end.record()
                end.synchronize()
                samples.append(nbytes / (begin.elapsed_time(end) / 1000.0) / 1e9)
            return samples

        h2d = measure(device, host)
        d2h = measure(host, device)
        result.update(
            {
                "gb_s": _round(statistics.median(h2d)),
                "d2h_gb_s": _round(statistics.median(d2h)),
                "samples": [_round(s) for s in h2d],
                "pinned": True,
            }
        )
    finally:
        del host, device
        ctx.cleanup()
    log(
        "h2d: {} GB/s pinned host-to-device ({} GB/s back)".format(
            result["gb_s"], result["d2h_gb_s"]
        )
    )
    return result


def probe_matmul(ctx: Context) -> Dict[str, Any]:
    torch = ctx.torch
    n = ctx.plan["matmul_size"]
    cuda = ctx.device == "cuda"
    result = probe_skeleton()
    result.update({"size": n, "device": ctx.device, "results": {}})
    dtypes = [("bf16", torch.bfloat16), ("fp16", torch.float16)]
    if not cuda:
        dtypes = [("fp32", torch.float32), ("bf16", torch.bfloat16)]
    reps = 10 if cuda else 3
    for name, dtype in dtypes:
        if name == "bf16" and cuda and not ctx.bf16[0]:
            result["results"][name] = {"status": "skipped", "reason": ctx.bf16[1]}
            continue
        try:
            a = torch.randn(n, n, device=ctx.dev).to(dtype)
            b = torch.randn(n, n, device=ctx.dev).to(dtype)
            for _ in range(3):
                a @ b
            ctx.sync()
            samples = []
            for _ in range(5):
                if cuda:
                    begin = torch.cuda.Event(enable_timing=True)
                    end = torch.cuda.Event(enable_timing=True)
                    begin.record()
                    for _ in range(reps):
                        a @ b
                    end.record()
                    end.synchronize()
                    seconds = begin.elapsed_time(end) / 1000.0
                else:
                    t = time.perf_counter()
                    for _ in range(reps):
                        a @ b
                    seconds = time.perf_counter() - t
                samples.append(2.0 * n**3 * reps / seconds)
            flops = statistics.median(samples)
            result["results"][name] = {
                "status": "ok",
                "tflop_s": _round(flops / 1e12, 3),
                "gflop_s": _round(flops / 1e9, 1),
                "ms": _round(2.0 * n**3 / flops * 1000.0, 4),
            }
            del a, b
        except Exception as exc:
            result["results"][name] = {"status": "failed", "reason": f"{type(exc).__name__}: {exc}"}
    ctx.cleanup()
    unit = "tflop_s" if cuda else "gflop_s"
    rates = ", ".join(f"{k} {v.get(unit)}" for k, v in result["results"].items())
    log(f"matmul {n}^3 ({unit.replace('_s', '/s')}): {rates}")
    return result


class MemmapImages:
    """Map-style dataset over a uint8 (N, 3, H, W) np.memmap, opened lazily per worker."""

    def __init__(self, path: str, count: int, size: int) -> None:
        self.path, self.count, self.size = path, count, size
        self._mm: Any = None

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> Tuple[Any, int]:
        import numpy as np

        if self._mm is None:
            self._mm = np.memmap(
                self.path, dtype=np.uint8, mode="r", shape=(self.count, 3, self.size, self.size)
            )
        return np.array(self._mm[index]), index % 1000

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        state["_mm"] = None
        return state


def probe_input_pipeline(ctx: Context) -> Dict[str, Any]:
    torch = ctx.torch
    plan = ctx.plan
    count, size, batch = plan["pipeline_images"], plan["image_size"], plan["pipeline_batch_size"]
    cuda = ctx.device == "cuda"
    result = probe_skeleton()
    result.update(
        {
            "images": count,
            "image_size": size,
            "batch_size": batch,
            "pin_memory": cuda,
            "persistent_workers": False,
            "dataset_mib": _round(count * 3 * size * size / 2**20, 1),
            "page_cache": "warm (dataset written just before)",
            "results": [],
            "best_img_s": None,
            "workers_alive_after": None,
        }
    )
    try:
        import numpy as np
    except Exception as exc:
        result.update(probe_skeleton(f"numpy is not importable: {exc}"))
        return result
    if batch > count:
        result.update(probe_skeleton(f"--pipeline-batch-size {batch} > --pipeline-images {count}"))
        return result
    tmp = tempfile.mkdtemp(prefix="gpu_throughput_data_", dir=plan["tmp_dir"])
    before = {c["pid"] for c in list_children()}
    try:
        path = os.path.join(tmp, "images.u8")
        shape = (count, 3, size, size)
        mm = np.memmap(path, dtype=np.uint8, mode="w+", shape=shape)
        rng = np.random.default_rng(plan["seed"])
        chunk = rng.integers(0, 256, size=(min(count, 256), 3, size, size), dtype=np.uint8)
        for start in range(0, count, chunk.shape[0]):
            stop = min(count, start + chunk.shape[0])
            mm[start:stop] = chunk[: stop - start]
        mm.flush()
        del mm
        dataset = MemmapImages(path, count, size)
        for workers in plan["num_workers"]:
            reason = ctx.over_budget()
            if reason:
                result["results"].append(
                    {"num_workers": workers, "status": "skipped", "reason": reason}
                )
                continue
            extra: Dict[str, Any] = {}
            if workers > 0 and sys.platform.startswith("linux"):
                # fork: no forkserver or resource-tracker process outlives the probe.
                extra["multiprocessing_context"] = "fork"
            loader = torch.utils.data.DataLoader(
                dataset,
                batch_size=batch,
                shuffle=True,
                num_workers=workers,
                pin_memory=cuda,
                drop_last=True,
                persistent_workers=False,
                **extra,
            )
            delivered = 0
            iterator = iter(loader)
            try:
                started = time.perf_counter()
                first_at = None
                for images, labels in iterator:
                    images = images.to(ctx.dev, non_blocking=True)
                    labels = labels.to(ctx.dev, non_blocking=True)
                    images = images.float().div_(255.0)
                    if first_at is None:
                        ctx.sync()
                        first_at = time.perf_counter()
                    delivered += images.shape[0]
                ctx.sync()
                ended = time.perf_counter()
            finally:
                shutdown = getattr(iterator, "_shutdown_workers", None)
                if shutdown is not None:
                    shutdown()
                del iterator, loader
                gc.collect()
            total_s = ended - started
            steady_s = ended - (first_at or started)
            steady = (delivered - batch) / steady_s if steady_s > 0 and delivered > batch else None
            entry = {
                "num_workers": workers,
                "status": "ok",
                # Steady rate after the first batch; worker start-up is reported apart.
                "img_s": _round(steady if steady else delivered / total_s) if total_s > 0 else None,
                "img_s_with_startup": _round(delivered / total_s) if total_s > 0 else None,
                "first_batch_seconds": _round((first_at or ended) - started, 3),
                "seconds": _round(total_s, 3),
                "images_delivered": delivered,
            }
            result["results"].append(entry)
            log(
                f"input_pipeline: {workers} workers: {entry['img_s']} img/s delivered to "
                f"{ctx.device} ({entry['img_s_with_startup']} with the "
                f"{entry['first_batch_seconds']} s start-up)"
            )
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        result.update({"status": "failed", "reason": f"{type(exc).__name__}: {exc}"})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        deadline = time.monotonic() + 10
        leftover = [c for c in list_children() if c["pid"] not in before]
        while leftover and time.monotonic() < deadline:
            time.sleep(0.1)
            leftover = [c for c in list_children() if c["pid"] not in before]
        result["workers_alive_after"] = len(leftover)
        result["dataset_removed"] = not os.path.exists(tmp)
    rates = [r["img_s"] for r in result["results"] if r.get("img_s")]
    result["best_img_s"] = max(rates) if rates else None
    return result


PROBES: Dict[str, Callable[[Context], Dict[str, Any]]] = {
    "h2d": probe_h2d,
    "matmul": probe_matmul,
    "input_pipeline": probe_input_pipeline,
}
