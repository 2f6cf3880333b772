#!/bin/bash
# bench/gpu/session3.sh BUILD_DIR - one device call for the GPU checks of
# issues 12 (advice.sh), 14 (names.sh) and 16 (dormant.sh): each script runs
# with its own time limit and raw-output folder under /tmp; only its table
# and the tail of its log come back in $OUT (the device tool returns few
# files).
set -u
B=${1:?usage: session3.sh BUILD_DIR}
OUT=${OUT:-$PWD/gpu-out}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,uuid --format=csv > "$OUT/gpu.csv" 2>&1
for s in "advice 170" "names 170" "dormant 240"; do
    set -- $s
    d=/tmp/gpu3-$1; rm -rf "$d"; mkdir -p "$d"
    start=$(date +%s)
    OUT=$d timeout "$2" "$here/$1.sh" "$B" > "$d/stdout.log" 2>&1
    rc=$?
    echo "== $1: rc $rc, $(( $(date +%s) - start )) s" | tee -a "$OUT/summary.txt"
    cp "$d/$1.md" "$OUT/$1.md" 2>/dev/null
    tail -c 6000 "$d/stdout.log" > "$OUT/$1.tail"
done
