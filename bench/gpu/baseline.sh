#!/bin/bash
# bench/gpu/baseline.sh BUILD_DIR [RUNS] - issue 17 on the GPU: the seed's
# control runs on a small PyTorch loop, then a compare of two full runs.
# Tables go to $OUT/baseline.md (default OUT=./gpu-out), raw logs beside it.
#
#  1. cuptop baseline --runs RUNS (default 3) -- python3 torch_bench.py none
#     train 300: collection off (agent dormant), narrowed (kernel) and full
#     (the default kinds), interleaved; its table and conclusion as printed.
#  2. cuptop compare of the first and the last full session (same label):
#     the comparability verdict, losses and the top 10 key durations.
# About 9 runs of ~10 s each (PyTorch import included): under 4 minutes.
# BUILD_DIR as for run_all.sh (bench/gpu/prepare_carry.sh BUILD_DIR first).
# Skips (exit 77) without PyTorch with CUDA.
set -u
B=$(cd "${1:?usage: baseline.sh BUILD_DIR [RUNS]}" && pwd)
RUNS=${2:-3}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
CUPTOP=$B/cuptop
MD=$OUT/baseline.md
[ -x "$CUPTOP" ] && [ -e "$B/libcuptop-agent.so" ] || { echo "missing $CUPTOP or the agent"; exit 2; }
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
    { echo "no PyTorch with CUDA: skipped"; exit 77; }
STORE=$(mktemp -d /tmp/cuptop-baseline.XXXXXX)
{
    echo "# cuptop baseline on the GPU ($(date -u +%FT%TZ))"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/GPU: /'
    echo
    echo '## 1. cuptop baseline --runs '"$RUNS"' -- python3 torch_bench.py none train 300'
    echo '```'
} >"$MD"
"$CUPTOP" baseline --store "$STORE" --runs "$RUNS" --label torch-train-300 -- \
    python3 "$here/torch_bench.py" none train 300 >"$OUT/baseline.out" 2>"$OUT/baseline.err"
rc=$?
cat "$OUT/baseline.out" >>"$MD"
echo "(exit $rc)" >>"$MD"
echo '```' >>"$MD"
full=$(sed -n 's/^sessions://p' "$OUT/baseline.out" | tr ' ' '\n' | sed -n 's/^full=//p')
first=$(echo "$full" | head -n 1) last=$(echo "$full" | tail -n 1)
if [ -n "$first" ] && [ "$first" != "$last" ] && [ "$first" != "(none)" ]; then
    {
        echo
        echo "## 2. cuptop compare --top 10 $first $last (two full runs)"
        echo '```'
        "$CUPTOP" compare --store "$STORE" --top 10 "$first" "$last"
        echo "(exit $?)"
        echo '```'
    } >>"$MD" 2>&1
fi
cat "$MD"
rm -rf "$STORE"
exit $rc
