#!/bin/bash
# bench/gpu/nvtx.sh BUILD_DIR [REPS] - issue 15 on the GPU.  Table in
# $OUT/nvtx.md (default OUT=./gpu-out), raw logs beside it.  About 3-4 min.
#
#  1. PyTorch (bench/gpu/nvtx_torch.py, 4 threads x 20 steps of nested
#     torch.cuda.nvtx ranges) under `cuptop run --kinds kernel,runtime,marker`:
#     the stored range counts per name (cuptop ranges --json) must equal
#     what the program pushed (it prints them), with 0 open and 0
#     unbalanced; `cuptop export --range step --slowest --format chrome`
#     must be valid JSON holding that step's window and the NVTX slices
#     (category nvtx).  Skipped without PyTorch.
#  2. NVTX routing cost: bench/gpu/nvtx_storm.cu (300k launches, each in an
#     NVTX range, a step range per 1000), REPS (default 7) interleaved
#     repetitions of {no agent; agent default kinds, NVTX not routed; agent
#     default kinds, NVTX routed (CUPTI's handlers, marker off); agent
#     default kinds + marker, routed}: medians and spread of the ratio to no
#     agent, to decide whether marker joins the default kinds.
#  3. A range pushed before CUDA is initialised (bench/gpu/nvtx_preinit.py,
#     issue 27 item 3): torch.cuda.nvtx.range_push("pre_init") before the
#     first CUDA call, 100 kernels, pop, then three "post" ranges.  All four
#     must be listed by cuptop ranges (pre_init 1, post 3), 0 unbalanced.
#     Skipped without PyTorch.
set -u
B=$(cd "${1:?usage: nvtx.sh BUILD_DIR [REPS]}" && pwd)
REPS=${2:-7}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
AGENT=$B/libcuptop-agent.so CUPTOP=$B/cuptop
MD=$OUT/nvtx.md
for f in "$AGENT" "$CUPTOP"; do [ -e "$f" ] || { echo "missing $f"; exit 2; }; done
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$NVCC" -O2 -std=c++17 -o "$OUT/nvtx_storm" "$here/nvtx_storm.cu" >"$OUT/nvcc.log" 2>&1 ||
    { cat "$OUT/nvcc.log"; exit 2; }
nvidia-smi -L >"$OUT/gpu.txt" 2>&1
fail=0
: >"$MD"
echo "## NVTX on the GPU ($(head -1 "$OUT/gpu.txt"))" >>"$MD"
echo >>"$MD"

# ---- 1. PyTorch nested ranges over threads ----
echo "### 1. PyTorch: torch.cuda.nvtx, 4 threads x 20 steps" >>"$MD"
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    rm -rf "$OUT/st-torch"
    "$CUPTOP" run --store "$OUT/st-torch" --kinds kernel,runtime,marker -- \
        python3 "$here/nvtx_torch.py" 4 20 >"$OUT/torch.out" 2>"$OUT/torch.err"
    id=$(ls "$OUT/st-torch" | head -1)
    "$CUPTOP" ranges --store "$OUT/st-torch" --json --slowest 1 "$id" >"$OUT/torch-ranges.json"
    "$CUPTOP" ranges --store "$OUT/st-torch" "$id" >"$OUT/torch-ranges.txt"
    "$CUPTOP" export --store "$OUT/st-torch" "$id" --range step --slowest --format chrome \
        -o "$OUT/slow_step.json" --force 2>"$OUT/export.err"
    python3 - "$OUT/torch.out" "$OUT/torch-ranges.json" "$OUT/slow_step.json" >>"$MD" 2>&1 <<'PY' || fail=1
import json, sys
pushed = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
r = json.load(open(sys.argv[2]))
got = {n["name"]: n["count"] for n in r["names"] if n["domain"] == ""}
ok = all(got.get(k) == v for k, v in pushed.items()) and r["open"] == 0 and r["unbalanced"] == 0
print("| range | pushed | stored | p50 us | p99 us | max us |")
print("|---|---|---|---|---|---|")
for n in r["names"]:
    print("| %s | %s | %d | %.1f | %.1f | %.1f |" % (n["name"], pushed.get(n["name"], "-"), n["count"],
          n["p50_ns"] / 1e3, n["p99_ns"] / 1e3, n["max_ns"] / 1e3))
print()
print("open %d, unbalanced %d: counts %s" % (r["open"], r["unbalanced"], "**equal**" if ok else "**DIFFER**"))
slow = [n for n in r["names"] if n["name"] == "step"][0]["slowest"][0]
t = json.load(open(sys.argv[3]))
nv = [e for e in t["traceEvents"] if e.get("cat") == "nvtx"]
w = t["otherData"]["window"]
good = w == {"from_ns": slow["start_ns"], "to_ns": slow["end_ns"]} and any(
    e["name"] == "step" and e["args"]["id"] == slow["id"] for e in nv)
kern = sum(1 for e in t["traceEvents"] if e.get("cat") == "kernel")
print()
print("export --range step --slowest: valid chrome JSON, window = the slowest step (%.1f us): %s; "
      "%d NVTX slices, %d kernels drawn" % (slow["duration_ns"] / 1e3, "**yes**" if good else "**NO**", len(nv), kern))
sys.exit(0 if ok and good else 1)
PY
else
    echo "skipped: no PyTorch with CUDA" >>"$MD"
fi
echo >>"$MD"

# ---- 2. routing cost ----
echo "### 2. NVTX routing cost: 300k launches, each in an NVTX range, $REPS interleaved repetitions" >>"$MD"
echo >>"$MD"
echo "| rep | no agent s | agent, not routed | routed, marker off | routed + marker |" >>"$MD"
echo "|---|---|---|---|---|" >>"$MD"
secs() { sed -n 's/.* seconds=\([0-9.]*\).*/\1/p'; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
spread() { tr ' ' '\n' | grep . | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%s-%s", lo, hi }'; }
r1="" r2="" r3=""
DEF=kernel,memcpy,memset,runtime,driver,overhead
for rep in $(seq 1 "$REPS"); do
    rm -rf "$OUT"/st-c*
    n=$(env -u NVTX_INJECTION64_PATH "$OUT/nvtx_storm" | secs)
    # not routed: a path that does not load (the agent would otherwise set
    # NVTX_INJECTION64_PATH itself when CUDA loads it, before the first range)
    a=$(NVTX_INJECTION64_PATH=/nonexistent/libnone.so CUDA_INJECTION64_PATH=$AGENT CUPTOP_STORE=$OUT/st-c1 \
        CUPTOP_KINDS=$DEF "$OUT/nvtx_storm" | secs)
    b=$(NVTX_INJECTION64_PATH=$AGENT CUDA_INJECTION64_PATH=$AGENT CUPTOP_STORE=$OUT/st-c2 \
        CUPTOP_KINDS=$DEF "$OUT/nvtx_storm" | secs)
    c=$(NVTX_INJECTION64_PATH=$AGENT CUDA_INJECTION64_PATH=$AGENT CUPTOP_STORE=$OUT/st-c3 \
        CUPTOP_KINDS=$DEF,marker "$OUT/nvtx_storm" | secs)
    x=$(awk -v p="$a" -v q="$n" 'BEGIN { printf "%.3f", p / q }')
    y=$(awk -v p="$b" -v q="$n" 'BEGIN { printf "%.3f", p / q }')
    z=$(awk -v p="$c" -v q="$n" 'BEGIN { printf "%.3f", p / q }')
    r1="$r1 $x" r2="$r2 $y" r3="$r3 $z"
    echo "| $rep | $n | $a ($x) | $b ($y) | $c ($z) |" >>"$MD"
done
c3=$(ls "$OUT/st-c3" | head -1)
stored=$("$CUPTOP" ranges --store "$OUT/st-c3" --json --slowest 0 "$c3" |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print(sum(n["count"] for n in r["names"]))')
{
echo
echo "median ratio to no agent: not routed $(echo $r1 | median) ($(echo $r1 | spread)), routed with marker off $(echo $r2 | median) ($(echo $r2 | spread)), routed + marker $(echo $r3 | median) ($(echo $r3 | spread))"
echo
echo "ranges stored in the last routed + marker run: $stored (the program opened 300300)"
} >>"$MD"
[ "$stored" = 300300 ] || fail=1

# ---- 3. a range pushed before CUDA is initialised ----
echo >>"$MD"
echo "### 3. torch.cuda.nvtx.range_push before the first CUDA call (issue 27 item 3)" >>"$MD"
echo >>"$MD"
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    rm -rf "$OUT/st-preinit"
    "$CUPTOP" run --store "$OUT/st-preinit" --kinds kernel,runtime,marker -- \
        python3 "$here/nvtx_preinit.py" >"$OUT/preinit.out" 2>"$OUT/preinit.err"
    id=$(ls "$OUT/st-preinit" | head -1)
    "$CUPTOP" ranges --store "$OUT/st-preinit" --json "$id" >"$OUT/preinit-ranges.json"
    "$CUPTOP" ranges --store "$OUT/st-preinit" "$id" >"$OUT/preinit-ranges.txt"
    "$CUPTOP" check --store "$OUT/st-preinit" "$id" >"$OUT/preinit-check.txt" 2>&1
    python3 - "$OUT/preinit.out" "$OUT/preinit-ranges.json" >>"$MD" 2>&1 <<'PY' || fail=1
import json, sys
pushed = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
r = json.load(open(sys.argv[2]))
got = {n["name"]: n["count"] for n in r["names"] if n["count"]}
ok = got == pushed and r["unbalanced"] == 0
print("pushed %s, listed %s, open %d, unbalanced %d: %s" % (
    pushed, got, r["open"], r["unbalanced"], "**all four listed**" if ok else "**MISSING**"))
sys.exit(0 if ok else 1)
PY
else
    echo "skipped: no PyTorch with CUDA" >>"$MD"
fi
cat "$MD"
exit $fail
