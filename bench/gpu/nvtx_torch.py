"""nvtx_torch.py - nested torch.cuda.nvtx ranges over several threads, for
bench/gpu/nvtx.sh.  Each of THREADS threads runs STEPS steps of
step > {forward, backward > {grad}} around small matmuls; prints the
ranges it pushed as one JSON line ({"step": N, ...}).

Usage: nvtx_torch.py [THREADS] [STEPS]
"""
import json
import sys
import threading

import torch

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 4
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
pushed = {}
lock = threading.Lock()


def count(name):
    with lock:
        pushed[name] = pushed.get(name, 0) + 1


def work(idx):
    torch.cuda.set_device(0)
    a = torch.randn(256 + 64 * idx, 256, device="cuda")
    b = torch.randn(256, 256, device="cuda")
    for i in range(steps):
        torch.cuda.nvtx.range_push("step")
        count("step")
        torch.cuda.nvtx.range_push("forward")
        count("forward")
        c = a @ b
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_push("backward")
        count("backward")
        torch.cuda.nvtx.range_push("grad")
        count("grad")
        for _ in range(1 + (i % 5) * 3):   # some steps are slower
            c = c @ b
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_pop()


ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
for t in ts:
    t.start()
for t in ts:
    t.join()
torch.cuda.synchronize()
print(json.dumps(pushed))
