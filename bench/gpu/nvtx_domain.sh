#!/bin/bash
# bench/gpu/nvtx_domain.sh BUILD_DIR - issue 16's nvtx:NAME@DOMAIN on real
# CUPTI, and domains/registered strings made before CUPTI is attached.
# bench/gpu/nvtx_domain.cu makes its domains and its registered string
# before its first CUDA call, then pushes "step" in the default domain, in
# "other" and in "io".  Under `cuptop run --capture-range nvtx:step@io
# --kinds kernel,marker` exactly the 1000 launches inside io's step must be
# stored, and the stored ranges must be step@io (1) and load@io (1): the
# domain and the registered name of handles made while dormant.  With
# nvtx:step@ (the default domain) the 100 of the default step.  Table in
# $OUT/nvtx_domain.md.  Under a minute.
set -u
B=$(cd "${1:?usage: nvtx_domain.sh BUILD_DIR}" && pwd)
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
CUPTOP=$B/cuptop MD=$OUT/nvtx_domain.md
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$NVCC" -O2 -std=c++17 -o "$OUT/nvtx_domain" "$here/nvtx_domain.cu" >"$OUT/nvcc.log" 2>&1 ||
    { cat "$OUT/nvcc.log"; exit 2; }
fail=0
{
    echo "## nvtx:NAME@DOMAIN on the GPU ($(nvidia-smi -L 2>&1 | head -1))"
    echo
    echo "| capture range | kernel records | want | ranges stored | want | result |"
    echo "|---|---:|---:|---|---|---|"
} >"$MD"
one() { # SPEC WANT_KERNELS WANT_RANGES
    st=$OUT/st-$2
    rm -rf "$st"
    "$CUPTOP" run --store "$st" --kinds kernel,marker --capture-range "nvtx:$1" -- \
        "$OUT/nvtx_domain" >"$OUT/run-$2.out" 2>"$OUT/run-$2.err"
    id=$(ls "$st" | head -1)
    "$CUPTOP" ranges --store "$st" --json "$id" >"$OUT/ranges-$2.json" 2>"$OUT/ranges-$2.err"
    r=$(python3 -c 'import json,sys; print(" ".join(sorted("%s@%s:%d" % (n["name"], n["domain"], n["count"]) for n in json.load(open(sys.argv[1]))["names"])))' "$OUT/ranges-$2.json")
    "$CUPTOP" export --store "$st" "$id" --from start --to end --format jsonl -o "$OUT/exp-$2.jsonl" --force 2>/dev/null
    kx=$(grep -c '"kind":"kernel"' "$OUT/exp-$2.jsonl" 2>/dev/null)
    res=PASS
    [ "$kx" = "$2" ] && [ "$r" = "$3" ] || { res=FAIL; fail=1; }
    echo "| nvtx:$1 | $kx | $2 | $r | $3 | $res |" >>"$MD"
}
one "step@io" 1000 "load@io:1 step@io:1"
one "step@" 100 "step@:1"
one "step@other" 200 "step@other:1"
echo >>"$MD"
[ $fail = 0 ] && echo "ALL PASS" >>"$MD" || echo "**FAIL**" >>"$MD"
cat "$MD"
exit $fail
