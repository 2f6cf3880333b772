#!/bin/sh
# tests/gpu/gpu_agent.sh - the agent on real CUPTI: a real CUDA program
# (tests/gpu/gpu_smoke.cu) with the agent injected, through each exit path;
# every kernel launch must be stored on device 0 and the session COMPLETE,
# and count-only must count the same kernels.  Needs an NVIDIA GPU and nvcc:
# exits 77 (skip) without them.
set -u
B=${top_builddir:?}; S=${top_srcdir:?}
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"   # the GPU machine lacks libmicrohttpd (bench/gpu/prepare_carry.sh)
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 || { echo "SKIP: no NVIDIA GPU"; exit 77; }
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$NVCC" ] || { echo "SKIP: no nvcc"; exit 77; }
[ -f "$B/libcuptop-agent.so" ] || { echo "SKIP: agent not built (no CUPTI headers)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-gpu.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prog=${GPU_SMOKE:-$tmp/gpu_smoke}
[ -x "$prog" ] || "$NVCC" -O2 -o "$prog" "$S/tests/gpu/gpu_smoke.cu" || exit 1
fail=0
N=20000
for how in return exit reset; do
    st=$tmp/store-$how
    out=$(CUPTOP_STORE=$st CUDA_INJECTION64_PATH=$B/libcuptop-agent.so "$prog" $N 4 "$how") || { echo "FAIL: app rc $? ($how)"; fail=1; continue; }
    "$B/cuptop" sessions --store "$st" --json >"$tmp/s.json" || { echo "FAIL: sessions ($how)"; fail=1; continue; }
    k=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))[-1]; print(s["records_by_device"].get("0",0) and s["records_by_kind"].get("kernel",0))' "$tmp/s.json")
    if [ "$k" != $N ]; then echo "FAIL: $how: $k kernel records on device 0, launched $N"; fail=1; fi
    if ! "$B/cuptop" check --store "$st" --all >"$tmp/check.txt" 2>&1; then
        echo "FAIL: $how: not COMPLETE"; cat "$tmp/check.txt"; fail=1
    fi
    echo "ok: $how: $out; $k kernels stored"
done
st=$tmp/store-count
CUPTOP_SINK=null CUPTOP_STORE=$st CUDA_INJECTION64_PATH=$B/libcuptop-agent.so "$prog" $N 4 >/dev/null || fail=1
"$B/cuptop" sessions --store "$st" --json >"$tmp/s.json"
c=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))[-1]; print(s["records_by_kind"].get("kernel",0), s["count_only"])' "$tmp/s.json")
case $c in "$N True") echo "ok: count-only counted $N kernels" ;; *) echo "FAIL: count-only: $c"; fail=1 ;; esac
exit $fail
