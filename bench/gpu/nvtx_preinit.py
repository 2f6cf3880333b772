"""nvtx_preinit.py - issue 27 item 3 on the GPU: an NVTX range pushed before
the first CUDA call (so before CUPTI is attached), 100 kernels, pop, then
three "post" ranges around a few kernels each.  Prints the ranges it
pushed as JSON on its last line: {"pre_init": 1, "post": 3}.
"""
import json

import torch

torch.cuda.nvtx.range_push("pre_init")   # NVTX only: CUDA not initialised yet
x = torch.ones(1024, device="cuda")      # the first CUDA call: the agent attaches here
for _ in range(100):
    x = x * 1.0001
torch.cuda.synchronize()
torch.cuda.nvtx.range_pop()
for _ in range(3):
    torch.cuda.nvtx.range_push("post")
    for _ in range(10):
        x = x + 1
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
print(json.dumps({"pre_init": 1, "post": 3}))
