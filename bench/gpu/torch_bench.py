#!/usr/bin/env python3
"""torch_bench.py - PyTorch workloads for the evidence table (issue 7).

Usage: torch_bench.py MODE WORKLOAD [N]
  MODE      none | profiler | cuptop   (cuptop: the agent is injected by the
            caller through CUDA_INJECTION64_PATH; this script does nothing
            special for it, which is the point)
  WORKLOAD  ops (N small x.add_(1) ops, default 50000)
            train (N training steps of a small MLP, default 300)
            graph (N replays of a CUDA graph of 100 small ops, default 500)

Prints one line of key=value pairs:
  loop_s    time of the loop (cuda synchronised)
  total_s   loop plus the profiler's post-processing (export) when MODE=profiler
  gpu_events  GPU events the profiler captured (profiler mode only)
  exit_wall_ns  CLOCK_REALTIME ns just before the interpreter exits, so the
              caller can compare it with the store's final status time.
"""
import os
import sys
import time

import torch


def workload_ops(n):
    x = torch.zeros(1024, device="cuda")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        x.add_(1)
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def workload_train(n):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(512, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(256, 512, device="cuda")
    y = torch.randint(0, 10, (256,), device="cuda")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def workload_graph(n):
    x = torch.zeros(1024, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):   # warm up on a side stream, as the docs say
        for _ in range(3):
            x.add_(1)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(100):
            x.add_(1)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        g.replay()
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    mode, work = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else {"ops": 50000, "graph": 500}.get(work, 300)
    fn = {"ops": workload_ops, "train": workload_train, "graph": workload_graph}.get(work)
    if fn is None or mode not in ("none", "profiler", "cuptop"):
        print(__doc__, file=sys.stderr)
        return 2
    # Warm-up outside the measurement (CUDA context, kernels loaded).
    fn(min(n, 200))
    gpu_events = -1
    if mode == "profiler":
        from torch.profiler import profile, ProfilerActivity
        t0 = time.perf_counter()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            loop_s = fn(n)
        out = os.environ.get("TORCH_TRACE", "/tmp/torch_trace.json")
        prof.export_chrome_trace(out)
        gpu_events = sum(1 for e in prof.events()
                         if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA)
        total_s = time.perf_counter() - t0
    else:
        t0 = time.perf_counter()
        loop_s = fn(n)
        total_s = time.perf_counter() - t0
    print(f"mode={mode} workload={work} n={n} loop_s={loop_s:.4f} total_s={total_s:.4f} "
          f"gpu_events={gpu_events} exit_wall_ns={time.time_ns()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
