#!/usr/bin/env python3
"""Where a ResNet-50 training step's GPU time goes: the top CUDA kernels and their share.

A measurement tool for the GPU machine (docs/BENCHMARKS.md, "Where the time goes"), not
part of the check. It trains torchvision's ResNet-50 the way the benchmark program's
(roles/gpu_check/files/kindling_bench) amp_fp16_cl mode does (AMP fp16 + GradScaler,
channels_last, fused SGD, synthetic data on the device), optionally under torch.compile
(default mode, no CUDA graph, so that the profiler sees each kernel), warms up, then
records --steps steps with torch.profiler and prints one JSON document: img/s of the
profiled steps, and per kernel the CUDA time, its share of the step and how often it
ran, largest first, grouped into families (convolution, batch norm, elementwise,
optimizer, other).

    python3 tools/device/kernel_profile.py --batch 256 --steps 10 [--compile] > out.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time

# Checked in order: cuDNN's batch-norm kernels are named cudnn::batchnorm_*, Inductor's
# fused reductions triton_red_fused_* (a batch norm where the name says so).
FAMILIES = (
    ("batch norm", re.compile(r"batch_?norm|bn_fw|bn_bw", re.I)),
    ("convolution", re.compile(r"conv|implicit_gemm|xmma|dgrad|wgrad|fprop", re.I)),
    ("gemm", re.compile(r"gemm|cutlass", re.I)),
    ("optimizer", re.compile(r"fused_sgd|multi_tensor_apply|_foreach_|FusedSgd", re.I)),
    ("pooling", re.compile(r"pool", re.I)),
    ("pointwise", re.compile(r"elementwise|vectorized|triton_poi|pointwise", re.I)),
    ("other reduction", re.compile(r"triton_red|reduce", re.I)),
)


def family(name: str) -> str:
    for label, pattern in FAMILIES:
        if pattern.search(name):
            return label
    return "other"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=15)
    parser.add_argument("--compile", action="store_true", help="torch.compile (default mode)")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()

    import torch
    import torchvision
    from torch.profiler import ProfilerActivity, profile

    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda", 0)
    model = torchvision.models.resnet50(weights=None).to(dev, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4, fused=True)
    scaler = torch.amp.GradScaler("cuda")
    loss_fn = torch.nn.CrossEntropyLoss()
    images = torch.randn(args.batch, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
    labels = torch.randint(0, 1000, (args.batch,), device=dev)

    def forward_loss():
        with torch.autocast("cuda", dtype=torch.float16):
            return loss_fn(model(images), labels)

    step_fn = torch.compile(forward_loss) if args.compile else forward_loss

    def step():
        opt.zero_grad(set_to_none=True)
        loss = step_fn()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        start = time.perf_counter()
        for _ in range(args.steps):
            step()
        torch.cuda.synchronize()
        wall = time.perf_counter() - start
    rows = []
    total_us = 0.0
    for evt in prof.key_averages():
        cuda_us = float(
            getattr(evt, "device_time_total", 0.0) or getattr(evt, "cuda_time_total", 0.0)
        )
        if cuda_us <= 0 or evt.key.startswith("ProfilerStep"):
            continue
        # Device-side kernels only (memcpy/memset included); CPU ops carry their children's time.
        if getattr(evt, "device_type", None) is not None and "CUDA" not in str(evt.device_type):
            continue
        rows.append({"kernel": evt.key, "cuda_ms": cuda_us / 1000.0, "calls": evt.count})
        total_us += cuda_us
    rows.sort(key=lambda r: r["cuda_ms"], reverse=True)
    per_step_ms = total_us / 1000.0 / args.steps
    families: dict = {}
    for row in rows:
        row["share"] = round(row["cuda_ms"] * 1000.0 / total_us, 4) if total_us else None
        row["family"] = family(row["kernel"])
        families[row["family"]] = families.get(row["family"], 0.0) + row["cuda_ms"]
    doc = {
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0),
        "config": {
            "batch": args.batch,
            "steps": args.steps,
            "compile": args.compile,
            "mode": "amp_fp16_cl",
        },
        "img_s_profiled": round(args.batch * args.steps / wall, 1),
        "gpu_ms_per_step": round(per_step_ms, 3),
        "wall_ms_per_step": round(wall * 1000.0 / args.steps, 3),
        "families": {
            k: {"ms_per_step": round(v / args.steps, 3), "share": round(v * 1000.0 / total_us, 4)}
            for k, v in sorted(families.items(), key=lambda kv: -kv[1])
        },
        "top_kernels": [
            {**r, "cuda_ms": round(r["cuda_ms"] / args.steps, 4)} for r in rows[: args.top]
        ],
        "kernel_count": len(rows),
    }
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
