#!/bin/bash
# bench/gpu/batch.sh BUILD_DIR SCRIPT:SECONDS[:ARG+ARG...]... - several
# bench/gpu scripts in one device call.  Each runs as `SCRIPT.sh BUILD_DIR
# [ARG...]` (run_all as `run_all.sh BUILD_DIR 1`) under its own time limit, with its raw output in
# /tmp/gpu-batch-SCRIPT; only its table (SCRIPT.md, or run_all's
# results.md) and the tail of its log come back in $OUT, since the device
# tool returns few files.  $OUT/summary.txt has each script's exit status.
# Calls recorded in doc/benchmarks.md, e.g. session 6:
#   batch.sh B nvtx_domain:60 attach:80 nvtx:200 job:50 baseline:190
# and earlier:
#   batch.sh B advice:170 names:170 dormant:240
#   batch.sh B late_debug:120 advice:200 names:120
#   batch.sh B late_debug:90 dormant:240 names:120
#   batch.sh B late_debug:90 names:120 run_all:240
set -u
B=${1:?usage: batch.sh BUILD_DIR SCRIPT:SECONDS...}
shift
OUT=${OUT:-$PWD/gpu-out}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
for job in "$@"; do
    name=${job%%:*} limit=${job#*:} extra=
    case $limit in *:*) extra=${limit#*:} limit=${limit%%:*} ;; esac
    d=/tmp/gpu-batch-$name
    rm -rf "$d"; mkdir -p "$d"
    args=("$B")
    [ "$name" = run_all ] && args+=(1)
    [ -n "$extra" ] && IFS=+ read -r -a more <<<"$extra" && args+=("${more[@]}")
    start=$(date +%s)
    OUT=$d timeout "$limit" bash "$here/$name.sh" "${args[@]}" >"$d/stdout.log" 2>&1
    rc=$?
    echo "== $name: rc $rc, $(( $(date +%s) - start )) s" | tee -a "$OUT/summary.txt"
    cp "$d/$name.md" "$OUT/$name.md" 2>/dev/null || cp "$d/results.md" "$OUT/$name.md" 2>/dev/null
    tail -c 8000 "$d/stdout.log" >"$OUT/$name.tail"
    # a script that writes its table to stdout only (graph_cost): keep it whole
    [ -e "$OUT/$name.md" ] || tail -c 20000 "$d/stdout.log" >"$OUT/$name.md"
done
