#!/bin/bash
# bench/gpu/dormant.sh BUILD_DIR [REPS] - issue 16 on the GPU: what a
# dormant agent costs, a late attach, torch.profiler inside a dormant
# session, and a capture range.  Tables go to $OUT/dormant.md (default
# OUT=./gpu-out), raw logs beside it.
#
#  1. launch storm (300k empty kernels over 4 streams), interleaved REPS
#     (default 9) times: {no agent, agent dormant, full agent (kernel,
#     runtime, driver)}: per-rep seconds, median ratios to no agent with
#     min and max.  Target: dormant / no agent <= 1.02.  Each dormant
#     session is checked to have loaded no CUPTI at all.
#  2. late attach mid-run: bench/gpu/scope_app.cu "late" launches 100k
#     kernels dormant, waits until `cuptop control --attach` is
#     acknowledged, then launches 200k: stored kernel records must be 200k.
#  3. torch.profiler (bench/gpu/torch_bench.py profiler ops) with no agent,
#     inside a dormant cuptop session, and under a full agent: GPU events
#     the profiler produced (dormant must equal no agent; the full agent
#     holds CUPTI's one subscriber slot).  Skipped without PyTorch.
#  4. --capture-range cudaProfilerApi: scope_app "capture" launches 50k,
#     100k inside cudaProfilerStart/Stop, 50k after: stored kernel records
#     must be 100k, with the range as its own epoch.
#
# BUILD_DIR as for run_all.sh (bench/gpu/prepare_carry.sh BUILD_DIR first).
set -u
B=$(cd "${1:?usage: dormant.sh BUILD_DIR [REPS]}" && pwd)
REPS=${2:-9}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
AGENT=$B/libcuptop-agent.so CTL=$B/agentctl CUPTOP=$B/cuptop
MD=$OUT/dormant.md
for f in "$AGENT" "$CTL" "$CUPTOP"; do
    [ -e "$f" ] || { echo "missing $f"; exit 2; }
done
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$NVCC" -O2 -std=c++17 -o "$OUT/launch_storm" "$here/launch_storm.cu" >"$OUT/nvcc.log" 2>&1 &&
    "$NVCC" -O2 -std=c++17 -o "$OUT/scope_app" "$here/scope_app.cu" >>"$OUT/nvcc.log" 2>&1 ||
    { cat "$OUT/nvcc.log"; exit 2; }
STORM=$OUT/launch_storm APP=$OUT/scope_app
nvidia-smi -L >"$OUT/gpu.txt" 2>&1
secs() { sed -n 's/.* seconds=\([0-9.]*\).*/\1/p'; }
kernels() { # STORE SESSION: kernel records stored, all devices
    "$CTL" dump "$1" "$2" | awk -F= '$1 ~ /^records\.kernel\.[0-9]+$/ { n += $2 } END { print n + 0 }'
}
median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
spread() { tr ' ' '\n' | grep . | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }'; }
: >"$MD"
{
echo "## Lazy attach on the GPU ($(head -1 "$OUT/gpu.txt"))"
echo
echo "### 1. Launch storm, 300k empty kernels over 4 streams, $REPS interleaved repetitions"
echo
echo "| rep | no agent s | dormant s | full s | dormant / none | full / none | dormant: CUPTI loaded |"
echo "|---|---|---|---|---|---|---|"
} >>"$MD"
rd="" rf=""
for rep in $(seq 1 "$REPS"); do
    n=$("$STORM" -n 300000 -s 4 | secs)
    rm -rf "$OUT/st-d" "$OUT/st-f"
    d=$(CUDA_INJECTION64_PATH=$AGENT CUPTOP_STORE=$OUT/st-d CUPTOP_DORMANT=1 \
        CUPTOP_KINDS=kernel,runtime,driver "$STORM" -n 300000 -s 4 | secs)
    f=$(CUDA_INJECTION64_PATH=$AGENT CUPTOP_STORE=$OUT/st-f CUPTOP_KINDS=kernel,runtime,driver \
        "$STORM" -n 300000 -s 4 | secs)
    lib=$("$CTL" dump "$OUT/st-d" 2>/dev/null | sed -n 's/^meta.cupti_library=//p' | head -1)
    [ -n "$lib" ] || lib=$("$CUPTOP" sessions --store "$OUT/st-d" --json 2>/dev/null |
        grep -o '"cupti_library":"[^"]*"' | head -1)
    a=$(awk -v x="$d" -v y="$n" 'BEGIN { printf "%.3f", x / y }')
    c=$(awk -v x="$f" -v y="$n" 'BEGIN { printf "%.3f", x / y }')
    rd="$rd $a" rf="$rf $c"
    echo "| $rep | $n | $d | $f | $a | $c | ${lib:-see dump} |" >>"$MD"
    "$CTL" dump "$OUT/st-d" >"$OUT/dormant-dump-$rep.txt" 2>&1
done
{
echo
echo "median dormant / no agent: **$(echo $rd | median)** (spread $(echo $rd | spread)); target <= 1.02"
echo "median full / no agent: $(echo $rf | median) (spread $(echo $rf | spread))"
echo
} >>"$MD"

# 2. late attach mid-run
{
echo "### 2. Late attach mid-run (scope_app late: 100k dormant, attach, 200k)"
echo
echo "| rep | launches after the ack | kernel records stored | attach ms | equal |"
echo "|---|---|---|---|---|"
} >>"$MD"
for rep in 1 2 3; do
    dir=$OUT/late-$rep st=$OUT/st-late-$rep
    rm -rf "$dir" "$st"; mkdir -p "$dir"
    CUDA_INJECTION64_PATH=$AGENT CUPTOP_STORE=$st CUPTOP_DORMANT=1 CUPTOP_KINDS=kernel \
        "$APP" late 100000 200000 "$dir" >"$dir/app.out" 2>"$dir/app.err" &
    pid=$!
    id=$("$CTL" wait-session "$st" 1 60)
    for i in $(seq 1 6000); do [ -e "$dir/ready" ] && break; sleep 0.02; done
    "$CUPTOP" control --store "$st" "$id" --attach --wait 60 >"$dir/ctl.out" 2>&1
    touch "$dir/go"
    wait $pid
    got=$(kernels "$st" "$id")
    "$CTL" dump "$st" "$id" >"$dir/dump.txt" 2>&1
    cost=$(sed -n 's/^epoch.2.scope=.*attach_cost_ns:\([0-9]*\).*/\1/p' "$dir/dump.txt")
    ms=$(awk -v c="${cost:-0}" 'BEGIN { printf "%.1f", c / 1e6 }')
    echo "| $rep | 200000 | $got | $ms | $([ "$got" = 200000 ] && echo yes || echo NO) |" >>"$MD"
done
echo >>"$MD"

# 3. torch.profiler inside a dormant session
{
echo "### 3. torch.profiler inside a cuptop session (torch_bench.py profiler ops 20000)"
echo
} >>"$MD"
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    echo "| cuptop | GPU events torch.profiler produced | loop s |" >>"$MD"
    echo "|---|---|---|" >>"$MD"
    for mode in none dormant full; do
        envs=()
        case $mode in
        dormant) envs=(CUDA_INJECTION64_PATH="$AGENT" CUPTOP_STORE="$OUT/st-torch-d" CUPTOP_DORMANT=1) ;;
        full) envs=(CUDA_INJECTION64_PATH="$AGENT" CUPTOP_STORE="$OUT/st-torch-f") ;;
        esac
        line=$(env "${envs[@]}" TORCH_TRACE="$OUT/torch-$mode.json" \
            python3 "$here/torch_bench.py" profiler ops 20000 2>"$OUT/torch-$mode.err")
        ev=$(echo "$line" | sed -n 's/.*gpu_events=\([0-9-]*\).*/\1/p')
        lp=$(echo "$line" | sed -n 's/.*loop_s=\([0-9.]*\).*/\1/p')
        echo "| $mode | ${ev:-?} | ${lp:-?} |" >>"$MD"
    done
    grep -h "MULTIPLE_SUBSCRIBERS\|profiler activities" "$OUT"/torch-*.err | sort | uniq -c |
        sed 's/^/    /' >>"$MD"
else
    echo "skipped: no PyTorch with CUDA on this machine" >>"$MD"
fi
echo >>"$MD"

# 4. capture range
{
echo "### 4. --capture-range cudaProfilerApi (scope_app capture: 50k, 100k in range, 50k)"
echo
echo "| rep | launches in range | kernel records stored | epochs | equal |"
echo "|---|---|---|---|---|"
} >>"$MD"
for rep in 1 2 3; do
    st=$OUT/st-cap-$rep
    rm -rf "$st"
    CUDA_INJECTION64_PATH=$AGENT CUPTOP_STORE=$st CUPTOP_KINDS=kernel \
        CUPTOP_CAPTURE_RANGE=cudaProfilerApi "$APP" capture 50000 100000 50000 \
        >"$OUT/cap-$rep.out" 2>"$OUT/cap-$rep.err"
    id=$("$CTL" sessions "$st" | head -1)
    got=$(kernels "$st" "$id")
    "$CTL" dump "$st" "$id" >"$OUT/cap-dump-$rep.txt" 2>&1
    "$CUPTOP" report --store "$st" "$id" >"$OUT/cap-report-$rep.txt" 2>&1
    ep=$(sed -n 's/^epochs=//p' "$OUT/cap-dump-$rep.txt")
    echo "| $rep | 100000 | $got | $ep | $([ "$got" = 100000 ] && echo yes || echo NO) |" >>"$MD"
done
cat "$MD"
