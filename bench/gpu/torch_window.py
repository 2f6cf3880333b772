#!/usr/bin/env python3
"""torch_window.py - a PyTorch training loop for the periodic windows'
figure (issue 32: `--capture-range every:10s/1s`, bench/gpu/window_cost.sh).

Usage: torch_window.py run SECONDS [STEPS_FILE]
       torch_window.py calibrate STEPS

run: a small MLP's training steps for SECONDS of wall clock (after a
warm-up), printing `steps=N loop_s=S steps_per_s=R`; with STEPS_FILE, each
step's CPU wall-clock start and end (CLOCK_REALTIME ns, the clock CUPTI's
timestamps and the windows' boundaries use), one step per line, warm-up
included, after a line `setup_done NS` (the model built: a window that
opened before it also holds the setup's records, not counted by steps).
calibrate: the GPU records (kernels, copies, sets) one step makes, counted
by torch.profiler over STEPS steps in this process (run it with no other
CUPTI client): prints `gpu_per_step=K` (an integer, or the script fails).
"""
import sys
import time

import torch


def make_step():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(512, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(256, 512, device="cuda")
    y = torch.randint(0, 10, (256,), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    return step


def run(seconds, steps_file):
    step = make_step()
    torch.cuda.synchronize()
    setup_done = time.time_ns()
    warm = []
    for _ in range(50):
        a = time.time_ns()
        step()
        warm.append((a, time.time_ns()))
    torch.cuda.synchronize()
    times = []
    t0 = time.perf_counter()
    end = t0 + seconds
    while time.perf_counter() < end:
        a = time.time_ns()
        step()
        times.append((a, time.time_ns()))
    torch.cuda.synchronize()
    loop = time.perf_counter() - t0
    if steps_file:
        with open(steps_file, "w") as f:
            f.write(f"setup_done {setup_done}\n")
            f.writelines(f"{a} {b}\n" for a, b in warm + times)
    print(f"steps={len(times)} loop_s={loop:.4f} steps_per_s={len(times) / loop:.1f}")


def calibrate(n):
    from torch.profiler import profile, ProfilerActivity
    step = make_step()
    for _ in range(50):
        step()
    torch.cuda.synchronize()
    counts = []
    for _ in range(2):
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(n):
                step()
            torch.cuda.synchronize()
        counts.append(sum(1 for e in prof.events()
                          if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA))
    if counts[0] != counts[1] or counts[0] % n:
        print(f"calibrate: GPU events per {n} steps not steady: {counts}", file=sys.stderr)
        return 1
    print(f"gpu_per_step={counts[0] // n}")
    return 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "run":
        run(float(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None)
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "calibrate":
        return calibrate(int(sys.argv[2]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
