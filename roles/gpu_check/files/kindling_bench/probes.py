"""The probes: pinned copies both ways and the PCIe link under load, device memory
bandwidth, matmul throughput, the input pipeline.

``h2d`` measures both directions over one pair of pinned buffers: host-to-device is
``gb_s``, device-to-host its second figure ``d2h_gb_s`` (one probe, one link reading).
Each is meant to take a second or two on a GPU (docs/BENCHMARKS.md, "Probes").

:func:`run_probes` runs the probes that the floors judge (``PER_GPU_PROBES``) on every
GPU the single-GPU modes measured, one GPU at a time after the modes: copies on several
GPUs at once would share the host's PCIe root complex and CPU memory bandwidth, so only
a sequential reading is each GPU's own. The report's ``probes.<name>`` stays the first
probed GPU's result (what a one-GPU report always had), and ``probes.<name>.gpus`` lists
every probed GPU's, each with its ``gpu_index``. ``input_pipeline`` measures the host
(its DataLoader workers and page cache) and runs once, on the first GPU.
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Tuple

from .common import _round, list_children, log, progress
from .context import Context, is_oom, oom_reason, set_tf32
from .gpus import bus_id

PROBE_ORDER = ["h2d", "membw", "matmul", "input_pipeline"]
# The probes that the floors judge: run on every measured GPU, one at a time.
PER_GPU_PROBES = ("h2d", "membw", "matmul")
# nvidia-smi's link now (an idle GPU lowers it) and the most GPU and slot support; the
# card's own maximum (pcie.link.gen.gpumax) is asked apart: older drivers lack the field.
LINK_QUERY = "pcie.link.gen.current,pcie.link.width.current,pcie.link.gen.max,pcie.link.width.max"
LINK_KEYS = ("gen", "width", "gen_max", "width_max")
# The copies keep running until nvidia-smi has answered, at most this long.
LINK_READ_SECONDS = 5.0


def probe_skeleton(reason: Optional[str] = None) -> Dict[str, Any]:
    return {"status": "skipped" if reason else "ok", "reason": reason}


def _int_or_none(text: str) -> Optional[int]:
    text = text.strip().lower().rstrip("x")
    return int(text) if text.isdigit() else None


def parse_link_csv(text: str) -> Dict[str, Any]:
    """nvidia-smi's ``LINK_QUERY`` answer ("5, 16, 5, 16") -> {gen, width, gen_max, width_max}."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return {"reason": "nvidia-smi gave no answer"}
    values = [_int_or_none(v) for v in lines[0].split(",")]
    if len(values) != len(LINK_KEYS) or values[0] is None or values[1] is None:
        return {"reason": f"nvidia-smi's answer is not a link: {lines[0].strip()[:120]!r}"}
    return dict(zip(LINK_KEYS, values))


def _smi_target(torch: Any, index: int = 0) -> str:
    """What ``nvidia-smi -i`` calls this process's cuda:index: its PCI bus id where torch
    has it, else its entry of CUDA_VISIBLE_DEVICES, else the index (PCI bus order)."""
    with contextlib.suppress(Exception):
        found = bus_id(torch.cuda.get_device_properties(index))
        if found:
            return found
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")]
    visible = [v for v in visible if v]
    return visible[index] if index < len(visible) else str(index)


def _nvml_reader(target: str) -> Optional[Callable[[], Dict[str, Any]]]:
    """A reader of the link through pynvml (nvidia-ml-py) where it is importable, else None."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = (
            pynvml.nvmlDeviceGetHandleByPciBusId(target)
            if ":" in target
            else pynvml.nvmlDeviceGetHandleByIndex(int(target))
        )
    except Exception:
        return None

    def read() -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "gen": pynvml.nvmlDeviceGetCurrPcieLinkGeneration(handle),
            "width": pynvml.nvmlDeviceGetCurrPcieLinkWidth(handle),
            "gen_max": pynvml.nvmlDeviceGetMaxPcieLinkGeneration(handle),
            "width_max": pynvml.nvmlDeviceGetMaxPcieLinkWidth(handle),
        }
        with contextlib.suppress(Exception):
            out["gen_gpu_max"] = pynvml.nvmlDeviceGetGpuMaxPcieLinkGeneration(handle)
        return out

    return read


def _gpu_max_gen(exe: str, target: str) -> Optional[int]:
    try:
        out = subprocess.run(
            [
                exe,
                "--query-gpu=pcie.link.gen.gpumax",
                "--format=csv,noheader,nounits",
                "-i",
                target,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=15,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.decode("utf-8", "replace").strip().splitlines()
    return _int_or_none(lines[0]) if out.returncode == 0 and lines else None


def read_link_under_load(ctx: Context, copy_once: Callable[[], None]) -> Dict[str, Any]:
    """The GPU's PCIe link, read while ``copy_once`` keeps it busy (never at idle).

    pynvml where importable (read between copies in flight), else nvidia-smi, started
    before the copies, which run until it answers (at most ``LINK_READ_SECONDS``).
    """
    target = _smi_target(ctx.torch, getattr(ctx, "index", 0))
    started = time.monotonic()
    reader = _nvml_reader(target)
    if reader is not None:
        try:
            readings = []
            for _ in range(3):
                copy_once()
                readings.append(reader())  # the copies are still in flight
                ctx.sync()
            link = dict(readings[-1], source="nvml", target=target, copies=3)
            link["seconds"] = _round(time.monotonic() - started, 3)
            return link
        except Exception as exc:
            ctx.sync()
            log(f"h2d: pynvml could not read the link ({exc}); asking nvidia-smi")
    exe = shutil.which("nvidia-smi")
    if not exe:
        return {
            "reason": "nvidia-smi is not on PATH and pynvml is not importable",
            "target": target,
        }
    cmd = [exe, "--query-gpu=" + LINK_QUERY, "--format=csv,noheader,nounits", "-i", target]
    copy_once()
    ctx.sync()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    copies = 0
    deadline = time.monotonic() + LINK_READ_SECONDS
    while proc.poll() is None and time.monotonic() < deadline:
        copy_once()
        ctx.sync()
        copies += 1
    if proc.poll() is None:
        proc.kill()
        proc.communicate()
        return {
            "reason": f"nvidia-smi did not answer within {LINK_READ_SECONDS:g} s",
            "target": target,
        }
    output = proc.communicate()[0].decode("utf-8", "replace")
    if proc.returncode != 0:
        return {
            "reason": f"nvidia-smi exited {proc.returncode}: {output.strip()[:200]}",
            "target": target,
        }
    link = parse_link_csv(output)
    if copies == 0 and "reason" not in link:
        # nvidia-smi answered before a second copy began: only the first one loaded the link.
        link["note"] = "nvidia-smi answered within one copy"
    link.update({"source": "nvidia-smi", "target": target, "copies": copies})
    if "reason" not in link:
        link["gen_gpu_max"] = _gpu_max_gen(exe, target)
    link["seconds"] = _round(time.monotonic() - started, 3)
    return link


def probe_h2d(ctx: Context) -> Dict[str, Any]:
    """Pinned copies both ways (median of 7 each) and the PCIe link read while they ran."""
    torch = ctx.torch
    size_mib = ctx.plan["h2d_mib"]
    result = probe_skeleton()
    result.update(
        {
            "size_mib": size_mib,
            "gb_s": None,
            "d2h_gb_s": None,
            "samples": [],
            "d2h_samples": [],
            "gpu_index": ctx.index,
            "link_under_load": None,
        }
    )
    if ctx.device != "cuda":
        result.update(probe_skeleton("device is cpu: there is no host-to-device link to measure"))
        return result
    nbytes = size_mib * 2**20
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    device = torch.empty(nbytes, dtype=torch.uint8, device=ctx.dev)

    def copy_once(h: Any = host, d: Any = device) -> None:
        d.copy_(h, non_blocking=True)
        h.copy_(d, non_blocking=True)

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
        link = read_link_under_load(ctx, copy_once)
        result.update(
            {
                "gb_s": _round(statistics.median(h2d)),
                "d2h_gb_s": _round(statistics.median(d2h)),
                "samples": [_round(s) for s in h2d],
                "d2h_samples": [_round(s) for s in d2h],
                "pinned": True,
                "link_under_load": link,
            }
        )
    finally:
        del host, device, copy_once
        ctx.cleanup()
    link = result["link_under_load"] or {}
    where = (
        "Gen{} x{} under load (max Gen{} x{})".format(
            link.get("gen"), link.get("width"), link.get("gen_max"), link.get("width_max")
        )
        if "reason" not in link
        else "link not read: " + str(link["reason"])
    )
    log(
        "h2d GPU {}: {} GB/s pinned host-to-device, {} GB/s back; {}".format(
            ctx.index, result["gb_s"], result["d2h_gb_s"], where
        )
    )
    return result


def probe_membw(ctx: Context) -> Dict[str, Any]:
    """Device memory bandwidth: a device-to-device copy of ``membw_mib``, read + write counted.

    The median of 5 windows of 10 copies each (CUDA events). On an H100 a 1 GiB copy takes
    under a millisecond, so the probe is its allocation and warm-up more than its copies.
    """
    torch = ctx.torch
    size_mib = ctx.plan["membw_mib"]
    windows, reps = 5, 10
    result = probe_skeleton()
    result.update(
        {
            "size_mib": size_mib,
            "gb_s": None,
            "samples": [],
            "windows": windows,
            "copies_per_window": reps,
            "counted": "read + write: 2 x size per copy",
            "gpu_index": ctx.index,
        }
    )
    if ctx.device != "cuda":
        result.update(probe_skeleton("device is cpu: device memory bandwidth is a GPU's"))
        return result
    nbytes = size_mib * 2**20
    src = torch.empty(nbytes, dtype=torch.uint8, device=ctx.dev)
    dst = torch.empty_like(src)
    try:
        src.fill_(1)
        for _ in range(3):
            dst.copy_(src)
        torch.cuda.synchronize()
        samples = []
        for _ in range(windows):
            begin = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            begin.record()
            for _ in range(reps):
                dst.copy_(src)
            end.record()
            end.synchronize()
            samples.append(2.0 * nbytes * reps / (begin.elapsed_time(end) / 1000.0) / 1e9)
        result.update(
            {"gb_s": _round(statistics.median(samples)), "samples": [_round(s) for s in samples]}
        )
    finally:
        del src, dst
        ctx.cleanup()
    log(
        f"membw GPU {ctx.index}: {result['gb_s']} GB/s device memory ({size_mib} MiB copies, "
        "read + write)"
    )
    return result


def probe_matmul(ctx: Context) -> Dict[str, Any]:
    torch = ctx.torch
    n = ctx.plan["matmul_size"]
    cuda = ctx.device == "cuda"
    result = probe_skeleton()
    result.update({"size": n, "device": ctx.device, "gpu_index": ctx.index, "results": {}})
    # On a GPU every precision of the datasheet: fp32 (TF32 off), tf32, bf16, fp16.
    dtypes = [
        ("fp32", torch.float32),
        ("tf32", torch.float32),
        ("bf16", torch.bfloat16),
        ("fp16", torch.float16),
    ]
    if not cuda:
        dtypes = [("fp32", torch.float32), ("bf16", torch.bfloat16)]
    for name, dtype in dtypes:
        if name == "bf16" and cuda and not ctx.bf16[0]:
            result["results"][name] = {"status": "skipped", "reason": ctx.bf16[1]}
            continue
        if name == "tf32" and torch.cuda.get_device_capability(ctx.dev)[0] < 8:
            result["results"][name] = {
                "status": "skipped",
                "reason": "GPU capability below 8.0 has no TF32 (Ampere or later)",
            }
            continue
        if cuda and name in ("fp32", "tf32"):
            set_tf32(torch, name == "tf32")
        reps = 3
        try:
            a = torch.randn(n, n, device=ctx.dev).to(dtype)
            b = torch.randn(n, n, device=ctx.dev).to(dtype)
            for _ in range(3):
                a @ b
            ctx.sync()
            if cuda:
                # About 50 ms a window whatever the card: 10 matmuls on an H100, fewer on
                # a T4 in fp32 (one 8192^3 fp32 matmul there takes over 100 ms).
                t = time.perf_counter()
                a @ b
                ctx.sync()
                reps = max(1, min(10, int(0.05 / max(time.perf_counter() - t, 1e-6))))
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
                "reps": reps,
            }
            del a, b
        except Exception as exc:
            result["results"][name] = {"status": "failed", "reason": f"{type(exc).__name__}: {exc}"}
    if cuda:
        set_tf32(torch, None)
    ctx.cleanup()
    unit = "tflop_s" if cuda else "gflop_s"
    rates = ", ".join(f"{k} {v.get(unit)}" for k, v in result["results"].items())
    log(f"matmul {n}^3 GPU {ctx.index} ({unit.replace('_s', '/s')}): {rates}")
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
    "membw": probe_membw,
    "matmul": probe_matmul,
    "input_pipeline": probe_input_pipeline,
}


def run_one_probe(ctx: Context, name: str) -> Dict[str, Any]:
    """One probe on the context's GPU: its result, or skipped (budget) or failed, with why."""
    reason = ctx.over_budget()
    if reason:
        log(f"{name} GPU {ctx.index}: skipped: {reason}")
        result = probe_skeleton(reason)
    else:
        try:
            result = PROBES[name](ctx)
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            why = (
                oom_reason(name, 0, ctx.device)
                if is_oom(ctx.torch, exc)
                else f"{type(exc).__name__}: {exc}"
            )
            result = {"status": "failed", "reason": why}
            ctx.cleanup()
    if name in PER_GPU_PROBES:
        result["gpu_index"] = ctx.index
    return result


def run_probes(ctx: Context, devices: List[int]) -> Dict[str, Any]:
    """The plan's probes: the floors' probes on each of ``devices`` in turn, then the rest
    once on the first. ``probes.<name>`` is the first GPU's result with ``gpus``, every
    GPU's result, beside it (a one-GPU run lists one)."""
    torch, plan = ctx.torch, ctx.plan
    devices = list(devices) or [ctx.index]
    names = list(plan["probes"])
    each = [n for n in names if n in PER_GPU_PROBES]
    found: Dict[str, List[Dict[str, Any]]] = {n: [] for n in names}
    cuda = ctx.device == "cuda"
    if each and len(devices) > 1:
        log(f"probes {', '.join(each)} on {len(devices)} GPU(s), one GPU at a time: {devices}")
    for index in devices if each else []:
        try:
            gpu_ctx = Context(torch, ctx.tv, plan, index=index)
            with torch.cuda.device(index) if cuda else contextlib.nullcontext():
                for name in each:
                    label = name if len(devices) == 1 else f"{name} on GPU {index}"
                    progress(phase="probe", current=label)
                    found[name].append(run_one_probe(gpu_ctx, name))
        except Exception as exc:  # the GPU itself refused (set-up, or leaving it)
            traceback.print_exc(file=sys.stderr)
            why = f"GPU {index} could not be probed: {type(exc).__name__}: {exc}"
            for name in each:
                if len(found[name]) < devices.index(index) + 1:
                    found[name].append({"status": "failed", "reason": why, "gpu_index": index})
    # The host's probes (input_pipeline) once, after every GPU's.
    host = [n for n in names if n not in PER_GPU_PROBES]
    if host:
        try:
            gpu_ctx = Context(torch, ctx.tv, plan, index=devices[0])
            with torch.cuda.device(devices[0]) if cuda else contextlib.nullcontext():
                for name in host:
                    progress(phase="probe", current=name)
                    found[name].append(run_one_probe(gpu_ctx, name))
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            for name in host:
                if not found[name]:
                    found[name].append(
                        {"status": "failed", "reason": f"{type(exc).__name__}: {exc}"}
                    )
    out: Dict[str, Any] = {}
    for name in names:
        results = found[name]
        out[name] = dict(results[0], gpus=results) if name in PER_GPU_PROBES else results[0]
    return out
