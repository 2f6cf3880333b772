#!/bin/sh
# bench/gpu/ledger_probe.sh - build and run ledger_probe.cu on the GPU
# machine (nvcc is there): what the launch ledger must know about real
# CUPTI (issue 31; results in doc/benchmarks.md "GPU: ledger probe").
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${TMPDIR:-/tmp}/ledger_probe.$$
trap 'rm -f "$out"' EXIT
nvcc -O2 -std=c++17 -o "$out" "$here/ledger_probe.cu" -lcupti -lcuda
"$out"
