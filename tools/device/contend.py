#!/usr/bin/env python3
"""Another process on the GPU, for the throughput check's contention runs (issue 32).

    python3 tools/device/contend.py busy        # a bf16 8192x8192 matmul loop (~1 GiB)
    python3 tools/device/contend.py memheld 74  # hold 74 GiB of device memory, compute nothing

The same two loads as the real readings in tests/fixtures/captures/h100-contention/. It runs
until it is killed; `run-on-gpu.sh contention` starts and stops it around each play.
"""

import sys
import time

import torch


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "busy"
    if mode == "busy":
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        b = torch.randn_like(a)
        print("busy: started", flush=True)
        while True:
            for _ in range(50):
                a @ b
            torch.cuda.synchronize()
    elif mode == "memheld":
        gib = int(sys.argv[2]) if len(sys.argv) > 2 else 74
        held = torch.empty(gib << 30, dtype=torch.uint8, device="cuda")
        print(f"memheld: holding {held.numel() >> 30} GiB", flush=True)
        while True:
            time.sleep(1)
    else:
        sys.exit(f"contend.py: unknown load {mode!r} (busy or memheld)")


if __name__ == "__main__":
    main()
