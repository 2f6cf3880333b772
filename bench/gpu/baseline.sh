#!/bin/bash
# bench/gpu/baseline.sh BUILD_DIR [RUNS] - issue 17 on the GPU: the seed's
# control runs on a small PyTorch loop, then a compare of two full runs.
# Tables go to $OUT/baseline.md (default OUT=./gpu-out), raw logs beside it.
#
#  1. cuptop baseline --runs RUNS (default 3) -- python3 torch_bench.py none
#     train 300: collection off (agent dormant), narrowed (kernel) and full
#     (the default kinds), interleaved; its table and conclusion as printed.
#     One warm-up run without the agent comes first (not counted) and the
#     order rotates each round (issue 27 item 10): "vs off" near 1.0 for
#     narrowed, and a note where the effect is within the spread.
#  2. cuptop compare of the first and the last full session (same label):
#     the comparability verdict, losses and the top 10 key durations.
#  3. cuptop baseline --json --runs 1 of the same workload, which prints to
#     standard output: the JSON must parse (the workload's lines go to
#     standard error), with the warm-up, the order and the notes.
# About 14 runs of ~10 s each (PyTorch import included): under 5 minutes.
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
{
    echo
    echo '## 3. cuptop baseline --json --runs 1 -- python3 torch_bench.py none train 300'
    echo '```'
} >>"$MD"
"$CUPTOP" baseline --store "$STORE" --json --runs 1 --label torch-train-300-json -- \
    python3 "$here/torch_bench.py" none train 300 >"$OUT/baseline.json" 2>"$OUT/baseline.json.err"
jrc=$?
python3 - "$OUT/baseline.json" "$OUT/baseline.json.err" >>"$MD" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))          # fails here if the workload's stdout got in
err = open(sys.argv[2]).read()
assert "mode=none" in err, "the workload's own output is not on stderr"
assert d["warmup"]["counted"] is False, d["warmup"]
assert [o[0] for o in d["order"]] == ["off"], d["order"]
print("JSON parses: warm-up %.3f s (not counted), order %s" % (d["warmup"]["wall_s"], d["order"]))
for c in d["configs"]:
    print("%-9s median %.3f s, ratio to off %.3f, spread %.1f%%, within spread %s, lost %d"
          % (c["config"], c["wall_median_s"], c["ratio_to_off"], 100 * c["spread"],
             c["within_spread"], c["lost_records"]))
for n in d["notes"]:
    print("note:", n)
print("conclusion:", d["conclusion"]["id"])
PY
prc=$?
echo "(exit $jrc; JSON check $([ $prc = 0 ] && echo PASS || echo FAIL))" >>"$MD"
echo '```' >>"$MD"
cat "$MD"
rm -rf "$STORE"
[ $prc = 0 ] || exit 1
exit $rc
