"""The copy loop of call 1 (device memory, pinned h2d and d2h), as run; reformatted for ruff."""

import json
import time

import torch

d = torch.device("cuda")
out = {"name": torch.cuda.get_device_name(0), "torch": torch.__version__}
n = 1 << 30  # 1 GiB of bytes
a = torch.empty(n, dtype=torch.uint8, device=d)
b = torch.empty_like(a)
for _ in range(3):
    b.copy_(a)
torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(20):
    b.copy_(a)
torch.cuda.synchronize()
dt = time.perf_counter() - t
out["d2d_copy_gb_s_rw"] = 2 * n * 20 / dt / 1e9
h = torch.empty(256 << 20, dtype=torch.uint8, pin_memory=True)
g = torch.empty(256 << 20, dtype=torch.uint8, device=d)
for name, f in (
    ("h2d", lambda: g.copy_(h, non_blocking=True)),
    ("d2h", lambda: h.copy_(g, non_blocking=True)),
):
    f()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(20):
        f()
    torch.cuda.synchronize()
    out[name + "_gb_s"] = (256 << 20) * 20 / (time.perf_counter() - t) / 1e9
print(json.dumps(out))
