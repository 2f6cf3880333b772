#!/bin/bash
# bench/gpu/graph_cost.sh BUILD_DIR [REPS] [N] - the cost of tracing a
# CUDA-graph workload (issue 32 item 1): bench/gpu/graph_cost.cu, a graph of
# 50 empty kernels replayed N times (default 100000), interleaved REPS times
# (default 5) in each mode of $MODES:
#   none          no agent, no CUPTI
#   cupti-kernel  count-only CUPTI client, CONCURRENT_KERNEL (per-node records)
#   cupti-graph   count-only CUPTI client, GRAPH_TRACE (one record per launch)
#   agent-kernel  the cuptop agent, CUPTOP_KINDS=kernel
#   agent-graph   the cuptop agent, CUPTOP_KINDS=graph (once the agent has
#                 the graph kind; cuptop check judges the store)
#   agent-K1,K2   the agent with those kinds (e.g. agent-kernel,graph)
#   agent-ledger-KINDS  the same with the launch ledger (CUPTOP_LEDGER=1)
# Default MODES: all of them.  First prints the probe (what
# cuptiActivityEnable returns for GRAPH_TRACE with CONCURRENT_KERNEL/KERNEL,
# and which records one graph launch plus one plain kernel give), then a
# markdown table: median seconds, us per graph launch, ratio to none, and
# whether the count-only records were exact.  Exit 77 without a GPU.
set -u
B=${1:?usage: graph_cost.sh BUILD_DIR [REPS] [N]}
REPS=${2:-5}
N=${3:-100000}
MODES=${MODES:-none cupti-kernel cupti-graph agent-kernel agent-graph}
B=$(cd "$B" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$PWD/gpu-out}/graph_cost
mkdir -p "$OUT"
nvidia-smi -L >/dev/null 2>&1 || { echo "graph_cost: no GPU"; exit 77; }
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
CUDA=$(cd "$(dirname "$NVCC")/.." && pwd)
prog=$OUT/graph_cost
if ! "$NVCC" -O2 -std=c++17 -I"$CUDA/extras/CUPTI/include" -o "$prog" \
    "$here/graph_cost.cu" -L"$CUDA/extras/CUPTI/lib64" -lcupti >"$OUT/nvcc.log" 2>&1; then
    cat "$OUT/nvcc.log"; echo "graph_cost: nvcc failed"; exit 2
fi
export LD_LIBRARY_PATH="$CUDA/extras/CUPTI/lib64:$CUDA/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

echo "## CUPTI limits (probe)"
"$prog" probe 1 50 | sed 's/^/    /'
echo

# one MODE REP: one run, one row "mode=... seconds=... check=..." in rows
one() {
    local mode=$1 rep=$2 store=$OUT/store-$1-$2 line kinds ledger rc=0
    rm -rf "$store"
    case $mode in
    none|cupti-*) line=$("$prog" "$mode" "$N") || rc=$? ;;
    agent-*)
        kinds=${mode#agent-} ledger=0
        case $kinds in ledger-*) kinds=${kinds#ledger-} ledger=1 ;; esac
        line=$(CUDA_INJECTION64_PATH="$B/libcuptop-agent.so" CUPTOP_STORE="$store" \
            CUPTOP_KINDS=$kinds CUPTOP_LEDGER=$ledger "$prog" none "$N") || rc=$?
        line="${line/mode=none/mode=$mode}"
        "$B/cuptop" check --store "$store" --all >"$OUT/check-$mode-$rep.txt" 2>&1
        line="$line check=$?" ;;
    esac
    [ $rc -eq 0 ] || line="mode=$mode failed=rc$rc"
    echo "$line" >>"$OUT/rows"
}

# an agent without the graph kind warns and falls back to its default
# kinds: such a run would time the wrong thing, so it is not run
krc=0
"$B/cuptop" run --kinds graph --store "$OUT/probe-store" -- true >/dev/null 2>&1 || krc=$?
if [ $krc -eq 2 ]; then
    echo "(this cuptop has no graph kind: agent-graph not run)"
    MODES=${MODES/agent-graph/}
fi
rm -rf "$OUT/probe-store"
rm -f "$OUT/rows"
r=0
while [ $r -lt "$REPS" ]; do
    for m in $MODES; do one "$m" "$r"; done
    r=$((r + 1))
done
python3 - "$OUT/rows" "$REPS" "$N" "$MODES" <<'PY'
import sys, statistics
rows = [dict(f.split("=", 1) for f in l.split()) for l in open(sys.argv[1]) if l.strip()]
reps, n, modes = sys.argv[2], int(sys.argv[3]), sys.argv[4].split()
by, notes = {}, {}
for d in rows:
    m = d["mode"]
    if "failed" in d:
        notes.setdefault(m, []).append("failed: " + d["failed"])
        continue
    by.setdefault(m, []).append(float(d["seconds"]))
    g, k = int(d["graphs"]), int(d["nodes"])
    want = {"cupti-kernel": ("kernel_records", g * k), "cupti-graph": ("graph_records", g)}
    if m in want and int(d[want[m][0]]) != want[m][1]:
        notes.setdefault(m, []).append(f"{want[m][0]}={d[want[m][0]]} want {want[m][1]}")
    if "check" in d and d["check"] != "0":
        notes.setdefault(m, []).append("cuptop check rc=" + d["check"])
print(f"CUDA graph of 50 empty kernels replayed {n} times, {reps} interleaved repetitions (median)")
print()
print("| mode | seconds | us/graph launch | x none | records |")
print("|---|---|---|---|---|")
base = statistics.median(by["none"]) if "none" in by else None
for m in modes:
    if m not in by:
        print(f"| {m} | - | - | - | {'; '.join(notes.get(m, ['no run']))} |")
        continue
    s = statistics.median(by[m])
    ratio = f"{s/base:.2f}" if base else "-"
    print(f"| {m} | {s:.4f} | {s*1e6/n:.2f} | {ratio} | {'; '.join(notes.get(m, [])) or 'exact/ok'} |")
print()
print("all seconds:", {m: [round(x, 4) for x in v] for m, v in by.items()})
sys.exit(1 if notes else 0)
PY
