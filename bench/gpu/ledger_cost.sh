#!/bin/sh
# bench/gpu/ledger_cost.sh [REPS] [LAUNCHES] - the launch ledger's cost on
# the launching thread (issue 31 item 4), before the agent calls it: a
# launch storm under no CUPTI, kernel records only, kernel records plus
# counting callbacks on cuLaunchKernel, and kernel records plus the real
# ledger (bench/gpu/ledger_cost.cu), interleaved REPS times (default 5).
# Prints a table: median seconds and ns per launch, ratios to no CUPTI and
# to kernel records only, and the ledger's missing count (must be 0).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
reps=${1:-5}
n=${2:-300000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ledger_cost.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
gcc -std=gnu11 -O2 -c -I"$src/src/agent" "$src/src/agent/agent_ledger.c" -o "$tmp/agent_ledger.o"
gcc -std=gnu11 -O2 -c -I"$src/src/agent" "$here/ledger_cost_glue.c" -o "$tmp/glue.o"
nvcc -O2 -std=c++17 -o "$tmp/ledger_cost" "$here/ledger_cost.cu" \
    "$tmp/glue.o" "$tmp/agent_ledger.o" -lcupti -lcuda
modes="none kernels callbacks ledger"
r=0
while [ $r -lt "$reps" ]; do
    for m in $modes; do
        "$tmp/ledger_cost" "$m" "$n" >> "$tmp/out"
    done
    r=$((r + 1))
done
python3 - "$tmp/out" "$reps" "$n" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
by = {}
bad = []
for r in rows:
    d = dict(zip(r[0::2], r[1::2]))
    by.setdefault(d["mode"], []).append(float(d["seconds"]))
    if d["mode"] == "ledger" and d["missing"] != "0":
        bad.append(d)
med = {m: statistics.median(v) for m, v in by.items()}
print(f"launch storm: {sys.argv[3]} empty kernels over 4 streams, {sys.argv[2]} interleaved repetitions (median)")
print()
print("| mode | seconds | ns/launch | x no CUPTI | x kernel records |")
print("|---|---|---|---|---|")
n = int(sys.argv[3])
for m in ["none", "kernels", "callbacks", "ledger"]:
    s = med[m]
    print(f"| {m} | {s:.4f} | {s*1e9/n:.0f} | {s/med['none']:.2f} | {s/med['kernels']:.2f} |")
print()
print("ledger runs with records missing:", len(bad), bad[:2])
print("all seconds:", {m: [round(x, 4) for x in v] for m, v in by.items()})
sys.exit(1 if bad else 0)
PY
