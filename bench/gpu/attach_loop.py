#!/usr/bin/env python3
"""attach_loop.py DIR SECONDS [eager|graph] - a PyTorch loop that knows
nothing of cuptop, for bench/gpu/attach.sh (cuptop attach PID, issue 20)
and bench/gpu/teardown.sh (speed after a detach).

Each iteration is 100 in-place x.add_(1) ops on a 1024-float tensor: one
kernel each, counted by the program itself; launched one by one (eager,
the default) or as one replay of a CUDA graph that holds the 100 (graph).  Every second it prints
"rate t=S its_per_s=R".  When DIR/pause-N appears it synchronises the
device, prints "paused N kernels=K" (K: kernels launched so far) and waits
until DIR/go-N appears; so the caller can attach or detach while no kernel
is in flight and compare the stored kernel records with the differences of
K.  Ends after SECONDS of running (pauses not counted), prints "end
kernels=K".
"""
import os
import sys
import time

import torch

d, seconds = sys.argv[1], float(sys.argv[2])
mode = sys.argv[3] if len(sys.argv) > 3 else "eager"
x = torch.zeros(1024, device="cuda", dtype=torch.float64)   # exact counts past 2**24
torch.cuda.synchronize()
kernels = 0
graph = None
if mode == "graph":
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):   # warm-up on a side stream, as PyTorch asks
        for _ in range(3):
            x.add_(1)
            kernels += 1
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(100):
            x.add_(1)
    torch.cuda.synchronize()
elif mode != "eager":
    sys.exit("attach_loop.py: mode must be eager or graph")
ran = 0.0
n_pause = 1
t_sec = time.perf_counter()
its = 0
print("ready pid=%d" % os.getpid(), flush=True)
while ran < seconds:
    t0 = time.perf_counter()
    if graph is not None:
        graph.replay()
    else:
        for _ in range(100):
            x.add_(1)
    kernels += 100
    its += 1
    now = time.perf_counter()
    ran += now - t0
    if now - t_sec >= 1.0:
        torch.cuda.synchronize()
        now = time.perf_counter()
        print("rate t=%.1f its_per_s=%.1f" % (ran, its / (now - t_sec)), flush=True)
        t_sec, its = now, 0
        if os.path.exists(os.path.join(d, "pause-%d" % n_pause)):
            torch.cuda.synchronize()
            print("paused %d kernels=%d" % (n_pause, kernels), flush=True)
            while not os.path.exists(os.path.join(d, "go-%d" % n_pause)):
                time.sleep(0.01)
            n_pause += 1
            t_sec, its = time.perf_counter(), 0
torch.cuda.synchronize()
assert float(x[0].item()) == float(kernels), "lost an op?"
print("end kernels=%d" % kernels, flush=True)
