#!/bin/bash
# bench/gpu/session3b.sh BUILD_DIR - second device call: advice.sh, names.sh
# (with the names counted differently spelled out) and late_debug.sh.
set -u
B=${1:?usage: session3b.sh BUILD_DIR}
OUT=${OUT:-$PWD/gpu-out}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
for s in "late_debug 120" "advice 200" "names 120"; do
    set -- $s
    d=/tmp/gpu3-$1; rm -rf "$d"; mkdir -p "$d"
    start=$(date +%s)
    OUT=$d timeout "$2" bash "$here/$1.sh" "$B" > "$d/stdout.log" 2>&1
    rc=$?
    echo "== $1: rc $rc, $(( $(date +%s) - start )) s" | tee -a "$OUT/summary.txt"
    cp "$d/$1.md" "$OUT/$1.md" 2>/dev/null
    tail -c 12000 "$d/stdout.log" > "$OUT/$1.tail"
done
