#!/bin/bash
# bench/gpu/session3d.sh BUILD_DIR - the final check of this session's agent
# on the H200: late_debug.sh (late attach, stop at exit), names.sh, and the
# launch storm of run_all.sh at default settings (REPS 1).
set -u
B=${1:?usage: session3d.sh BUILD_DIR}
OUT=${OUT:-$PWD/gpu-out}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
for s in "late_debug 90" "names 120" "run_all 240"; do
    set -- $s
    d=/tmp/gpu3-$1; rm -rf "$d"; mkdir -p "$d"
    start=$(date +%s)
    if [ "$1" = run_all ]; then
        OUT=$d timeout "$2" bash "$here/run_all.sh" "$B" 1 > "$d/stdout.log" 2>&1
    else
        OUT=$d timeout "$2" bash "$here/$1.sh" "$B" > "$d/stdout.log" 2>&1
    fi
    rc=$?
    echo "== $1: rc $rc, $(( $(date +%s) - start )) s" | tee -a "$OUT/summary.txt"
    cp "$d/$1.md" "$OUT/$1.md" 2>/dev/null || cp "$d/results.md" "$OUT/$1.md" 2>/dev/null
    tail -c 8000 "$d/stdout.log" > "$OUT/$1.tail"
done
