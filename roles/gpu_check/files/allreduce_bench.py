#!/usr/bin/env python3
"""All-reduce bus bandwidth across every process of a (multi-node) job.

Start it with torchrun on every host of a group, the first host as rendezvous:

    torchrun --nnodes N --node-rank R --nproc-per-node G \\
        --master-addr FIRST_HOST --master-port 29500 allreduce_bench.py --output out.json

Each process all-reduces float32 buffers of several sizes (NCCL on GPUs, gloo on CPUs)
and times them after a warm-up. Rank 0 writes one JSON document with, per size, the
median time, the algorithm bandwidth (bytes / time) and the bus bandwidth by
nccl-tests' formula for all-reduce: busbw = algbw x 2 (n - 1) / n, where n is the
number of processes. The result of every all-reduce is checked, so a wrong sum fails
the run instead of producing a fast number.

Exit status: 0 ok, 2 bad arguments, 3 torch missing, 4 the collective failed or gave a
wrong result.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import socket
import statistics
import sys
import time
from typing import Any, Dict, List, Optional


def bus_bandwidth(algbw: float, world_size: int) -> float:
    """nccl-tests' all-reduce bus bandwidth: algbw x 2(n-1)/n."""
    if world_size < 1:
        raise ValueError("world_size must be at least 1")
    return algbw * 2.0 * (world_size - 1) / world_size


def _parse_sizes(text: str) -> List[int]:
    sizes = []
    for part in text.split(","):
        part = part.strip().upper()
        scale = 1
        for suffix, factor in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)):
            if part.endswith(suffix):
                part, scale = part[:-1], factor
        if not part.isdigit() or int(part) * scale < 4:
            raise argparse.ArgumentTypeError(f"bad size {text!r}: use e.g. 1M,64M,1G")
        sizes.append(int(part) * scale)
    return sizes


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["auto", "nccl", "gloo"], default="auto")
    parser.add_argument("--sizes", type=_parse_sizes, default=_parse_sizes("1M,16M,256M,1G"))
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--timeout", type=int, default=300, help="collective timeout, seconds")
    parser.add_argument("--output", help="JSON file written by rank 0 (default: stdout)")
    args = parser.parse_args(argv)
    try:
        import torch
        import torch.distributed as dist
    except ImportError as exc:
        print(f"allreduce_bench: torch is not importable: {exc}", file=sys.stderr)
        return 3
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        if var not in os.environ:
            print(f"allreduce_bench: {var} is not set: start me with torchrun", file=sys.stderr)
            return 2
    local_rank = int(os.environ["LOCAL_RANK"])
    backend = args.backend
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    device = torch.device("cuda", local_rank) if backend == "nccl" else torch.device("cpu")
    if backend == "nccl":
        torch.cuda.set_device(device)
    dist.init_process_group(backend, timeout=dt.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    results: List[Dict[str, Any]] = []
    status = 0
    try:
        for size in args.sizes:
            numel = size // 4
            buf = torch.empty(numel, dtype=torch.float32, device=device)
            times = []
            for i in range(args.warmup + args.iters):
                buf.fill_(float(rank + 1))
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                start = time.perf_counter()
                dist.all_reduce(buf)
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                if i >= args.warmup:
                    times.append(time.perf_counter() - start)
            expected = world * (world + 1) / 2.0
            if not torch.allclose(buf[:: max(1, numel // 1024)].cpu(), torch.tensor(expected)):
                raise RuntimeError(f"all-reduce of {size} bytes gave a wrong sum")
            median = statistics.median(times)
            algbw = size / median / 1e9
            results.append(
                {
                    "bytes": size,
                    "median_seconds": median,
                    "algbw_gb_s": algbw,
                    "busbw_gb_s": bus_bandwidth(algbw, world),
                }
            )
    except Exception as exc:  # a hung or broken collective: say so, don't hang
        print(f"allreduce_bench: rank {rank} failed: {exc}", file=sys.stderr)
        status = 4
    finally:
        dist.destroy_process_group()
    if rank == 0 and status == 0:
        report = {
            "schema_version": 1,
            "backend": backend,
            "world_size": world,
            "nodes": int(os.environ.get("GROUP_WORLD_SIZE", os.environ.get("NNODES", "1")) or 1),
            "master": f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}",
            "host": socket.gethostname(),
            "nccl_socket_ifname": os.environ.get("NCCL_SOCKET_IFNAME"),
            "sizes": results,
            "peak_busbw_gb_s": max(r["busbw_gb_s"] for r in results),
        }
        text = json.dumps(report, indent=2)
        if args.output:
            with open(args.output, "w") as handle:
                handle.write(text + "\n")
        else:
            print(text)
    return status


if __name__ == "__main__":
    sys.exit(main())
