#!/bin/bash
# bench/gpu/window_cost.sh BUILD_DIR [REPS] [SECONDS] - periodic windows on
# real CUPTI (issue 32 item 2): a PyTorch training loop
# (bench/gpu/torch_window.py) for SECONDS (default 30) with no agent and
# under `--capture-range every:10s/1s` (CUPTOP_CAPTURE_RANGE), interleaved
# REPS times (default 5).  Cost: steps per second, none / windowed, over the
# whole run.  Exactness, per window opened after the model was built: the GPU records stored in the window's
# epoch against the program's own count - the steps launched entirely inside
# the window times the records per step (torch.profiler, in a separate
# process), up to the steps that straddle its open or close, which may fall
# on either side; and the session's verdict.  Where the cost goes, per rep:
# the step rate inside the windows and between them (from 200 ms after a
# close to 50 ms before the next open) against the no-agent run's, each
# attach's cost (the epochs' attach_cost_ns) and the agent's note on how the
# rests went (torn down or kept attached).  Both runs are pinned to the CPUs
# in PIN (default 2-7, empty: not pinned; the launch-bound loop's rate
# follows the core it lands on).  KINDS (CUPTOP_KINDS for the windowed runs;
# default: the agent's defaults) measures the windows with fewer kinds, e.g.
# KINDS=kernel,memcpy,memset (the GPU records the windows are judged by).
# Writes window_cost.md in $OUT;
# exit 1 when a window is off or a verdict is not COMPLETE.
set -u
B=$(cd "${1:?usage: window_cost.sh BUILD_DIR [REPS] [SECONDS]}" && pwd)
REPS=${2:-5} SECS=${3:-30}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
W=$here/torch_window.py
PIN=${PIN-2-7}
KINDS=${KINDS:-}
kenv=()
[ -n "$KINDS" ] && kenv=(CUPTOP_KINDS="$KINDS")
pin=()
[ -n "$PIN" ] && command -v taskset >/dev/null && pin=(taskset -c "$PIN")
md=$OUT/window_cost.md
k=$(python3 "$W" calibrate 100 | sed -n 's/^gpu_per_step=//p')
[ -n "$k" ] || { echo "window_cost: calibration failed" | tee "$md"; exit 1; }
raw=$OUT/window.raw
: >"$raw"
for rep in $(seq 1 "$REPS"); do
    "${pin[@]}" python3 "$W" run "$SECS" | sed "s/^/none rep=$rep /" >>"$raw"
    st=$OUT/w-$rep
    rm -rf "$st"
    env CUDA_INJECTION64_PATH=$B/libcuptop-agent.so CUPTOP_STORE=$st \
        CUPTOP_CAPTURE_RANGE=every:10s/1s "${kenv[@]}" "${pin[@]}" python3 "$W" run "$SECS" "$OUT/steps-$rep" 2>>"$OUT/window.err" |
        sed "s/^/window rep=$rep /" >>"$raw"
    id=$("$B/cuptop" sessions --store "$st" | awk 'NR == 2 { print $1 }')
    "$B/agentctl" dump "$st" "$id" >"$OUT/w-$rep.dump"
    "$B/cuptop" check --store "$st" "$id" >"$OUT/w-$rep.check" 2>&1
    rm -rf "$st"
done
python3 - "$raw" "$OUT" "$REPS" "$k" "$SECS" "${KINDS:-the defaults}" <<'PY' | tee "$md"
import statistics, sys
raw, out, reps, k, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
kinds = sys.argv[6]
rate = {"none": [], "window": []}
for line in open(raw):
    f = dict(w.split("=", 1) for w in line.split()[1:])
    rate[line.split()[0]].append(float(f["steps_per_s"]))
pairs = [n / w for n, w in zip(rate["none"], rate["window"])]
print(f"## Periodic windows every:10s/1s on a PyTorch training loop ({secs} s runs, {reps} interleaved repetitions)")
print()
print(f"GPU records per training step (torch.profiler): {k}; kinds in the windows: {kinds}")
print()
print("| rep | none steps/s | every:10s/1s steps/s | cost (none / windowed) |")
print("|---|---|---|---|")
for i, (n, w) in enumerate(zip(rate["none"], rate["window"]), 1):
    print(f"| {i} | {n:.1f} | {w:.1f} | {n / w:.3f} |")
print(f"| median | {statistics.median(rate['none']):.1f} | {statistics.median(rate['window']):.1f} | "
      f"{statistics.median(pairs):.3f} |")
print()
print("| rep | window | due (s of the minute) | opened late ms | GPU records stored | steps inside | straddling | program's count | verdict |")
print("|---|---|---|---|---|---|---|---|---|")
bad = 0
for rep in range(1, reps + 1):
    d = dict(l.rstrip("\n").split("=", 1) for l in open(f"{out}/w-{rep}.dump") if "=" in l)
    lines = open(f"{out}/steps-{rep}").read().split("\n")
    setup_done = int(lines[0].split()[1])
    steps = [tuple(map(int, l.split())) for l in lines[1:] if l]
    verdict = open(f"{out}/w-{rep}.check").read().split("\n")[0]
    if "INCOMPLETE" in verdict or "COMPLETE" not in verdict:
        bad += 1
    n = int(d.get("epochs", "0").split()[0])
    for i in range(1, n + 1):
        if "out_of_scope" in d.get(f"epoch.{i}.scope", "") or not d.get(f"epoch.{i}.window"):
            continue
        w = dict(x.split(":", 1) for x in d[f"epoch.{i}.window"].split())
        sched, start = int(w["sched_ns"]), int(d[f"epoch.{i}.start_ns"])
        end = int(d.get(f"epoch.{i + 1}.start_ns", "0")) or (1 << 63)
        if start < setup_done:
            print(f"| {rep} | {i} | {sched // 10**9 % 60} | - | - | - | - | not judged: opened before the model was built | - |")
            continue
        # GPU records: not API calls, nor CUPTI's own OVERHEAD records (a
        # few a window with the defaults; session 16 took them for 29.2)
        gpu = int(d.get(f"records_epoch.{i}", "0")) - int(d.get(f"records_epoch.{i}.api", "0")) - \
            int(d.get(f"records_epoch.{i}.overhead", "0"))
        inside = sum(1 for a, b in steps if a >= start and b <= end)
        cross = sum(1 for a, b in steps if a < end and b > start) - inside
        lo, hi = inside * k, (inside + cross) * k
        ok = lo <= gpu <= hi
        bad += not ok
        print(f"| {rep} | {i} | {sched // 10**9 % 60} | {(start - sched) / 1e6:.2f} | {gpu} | {inside} | {cross} | "
              f"{lo}..{hi}{'' if ok else ' OFF'} | {verdict.split(': ')[-1]} |")
print()
print("Where the cost goes: step rates inside the windows and between them (200 ms after a close to")
print("50 ms before the next open), against the same rep's run without the agent; the attaches' cost.")
print()
print("| rep | none steps/s | in windows steps/s | in / none | between steps/s | between / none | attach ms (mean, max) |")
print("|---|---|---|---|---|---|---|")
notes = []
for rep in range(1, reps + 1):
    d = dict(l.rstrip("\n").split("=", 1) for l in open(f"{out}/w-{rep}.dump") if "=" in l)
    lines = open(f"{out}/steps-{rep}").read().split("\n")
    steps = [tuple(map(int, l.split())) for l in lines[1:] if l]
    loop0 = steps[50][0] if len(steps) > 50 else 0   # after the warm-up
    n = int(d.get("epochs", "0").split()[0])
    wins, costs = [], []
    for i in range(1, n + 1):
        if "out_of_scope" in d.get(f"epoch.{i}.scope", "") or not d.get(f"epoch.{i}.window"):
            continue
        start = int(d[f"epoch.{i}.start_ns"])
        end = int(d.get(f"epoch.{i + 1}.start_ns", "0")) or steps[-1][1]
        wins.append((start, end))
        sc = dict(x.split(":", 1) for x in d.get(f"epoch.{i}.scope", "").split() if ":" in x)
        if int(sc.get("attach_cost_ns", "0")):
            costs.append(int(sc["attach_cost_ns"]) / 1e6)
    def span_rate(spans):
        t = sum(b - a for a, b in spans)
        k = sum(1 for s0, _ in steps if any(a <= s0 < b for a, b in spans))
        return k / (t / 1e9) if t > 0 else float("nan")
    inside = [(max(a, loop0), b) for a, b in wins if b > loop0]
    gaps = []
    for (a0, b0), (a1, b1) in zip(wins, wins[1:]):
        g0, g1 = max(b0 + 200_000_000, loop0), a1 - 50_000_000
        if g1 > g0:
            gaps.append((g0, g1))
    none = rate["none"][rep - 1]
    ri, rb = span_rate(inside), span_rate(gaps)
    cs = f"{sum(costs) / len(costs):.1f}, {max(costs):.1f}" if costs else "-"
    print(f"| {rep} | {none:.1f} | {ri:.1f} | {none / ri:.3f} | {rb:.1f} | {none / rb:.3f} | {cs} |")
    notes += [f"rep {rep}: {v.split(' ', 1)[1]}" for k, v in d.items()
              if k.startswith("note.") and "periodic windows:" in v and "rests" in v]
print()
for line in notes:
    print(f"- {line}")
print()
print(f"window_cost: {'PASS' if not bad else 'FAIL'}")
sys.exit(1 if bad else 0)
PY
