#!/usr/bin/env python3
"""names_workload.py - one PyTorch workload for bench/gpu/names.sh (issue 14).

Usage: names_workload.py MODE TRACE
  MODE   cuptop    nothing special: the caller injects the agent (cuptop run)
         profiler  the whole workload inside torch.profiler, chrome trace to TRACE
Every CUDA call of the script happens inside the profiled block in profiler
mode, so both modes see the same kernels.  Prints torch.version.cuda and the
device name torch reports, as key=value lines.
"""
import sys

import torch


def workload():
    torch.manual_seed(0)
    dev = "cuda"
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Flatten(), torch.nn.Linear(16 * 16 * 16, 256), torch.nn.GELU(),
        torch.nn.LayerNorm(256), torch.nn.Linear(256, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(64, 3, 16, 16, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    for _ in range(40):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    a = torch.randn(512, 512, device=dev, dtype=torch.half)
    for _ in range(20):
        b = torch.softmax(a @ a, dim=-1).sum(dim=0)
        a.add_(b.unsqueeze(0) * 1e-3)
    torch.cuda.synchronize()


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("cuptop", "profiler"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, trace = sys.argv[1:]
    if mode == "profiler":
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            workload()
        prof.export_chrome_trace(trace)
    else:
        workload()
    print(f"torch_cuda={torch.version.cuda}")
    print(f"torch_device={torch.cuda.get_device_name(0)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
