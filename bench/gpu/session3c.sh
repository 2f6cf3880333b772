#!/bin/bash
# bench/gpu/session3c.sh BUILD_DIR - third device call: the late attach
# (dormant.sh, with the stop protocol re-registered before CUDA's exit
# handlers) and names.sh (demangled names cut at 16 KiB, not 4 KiB).
set -u
B=${1:?usage: session3c.sh BUILD_DIR}
OUT=${OUT:-$PWD/gpu-out}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
for s in "late_debug 90" "dormant 240" "names 120"; do
    set -- $s
    d=/tmp/gpu3-$1; rm -rf "$d"; mkdir -p "$d"
    start=$(date +%s)
    OUT=$d timeout "$2" bash "$here/$1.sh" "$B" > "$d/stdout.log" 2>&1
    rc=$?
    echo "== $1: rc $rc, $(( $(date +%s) - start )) s" | tee -a "$OUT/summary.txt"
    cp "$d/$1.md" "$OUT/$1.md" 2>/dev/null
    tail -c 8000 "$d/stdout.log" > "$OUT/$1.tail"
done
