#!/bin/bash
# bench/gpu/ratio.sh BUILD_DIR [N] [S] [REPS] - full agent against count-only
# on one launch-storm shape, interleaved (count, full, count, full, ...),
# REPS times, to pin down the ratio; prints per-pair ratios and the median.
set -u
B=$(cd "${1:?usage: ratio.sh BUILD_DIR [N] [S] [REPS]}" && pwd)
N=${2:-300000} S=${3:-4} REPS=${4:-7}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
STORM=$OUT/launch_storm
[ -x "$STORM" ] || nvcc -O2 -std=c++17 -o "$STORM" "$here/launch_storm.cu" || exit 2
secs() { sed -n 's/.* seconds=\([0-9.]*\).*/\1/p'; }
ratios=""
echo "| rep | none s | count-only s | full s | full / count-only |"
echo "|---|---|---|---|---|"
for rep in $(seq 1 "$REPS"); do
    n=$("$STORM" -n "$N" -s "$S" | secs)
    c=$(CUDA_INJECTION64_PATH=$B/libcuptop-agent.so CUPTOP_STORE=$OUT/r-c CUPTOP_SINK=null \
        CUPTOP_KINDS=kernel,runtime,driver "$STORM" -n "$N" -s "$S" | secs)
    f=$(CUDA_INJECTION64_PATH=$B/libcuptop-agent.so CUPTOP_STORE=$OUT/r-f \
        CUPTOP_KINDS=kernel,runtime,driver "$STORM" -n "$N" -s "$S" | secs)
    r=$(awk -v f="$f" -v c="$c" 'BEGIN { printf "%.3f", f / c }')
    ratios="$ratios $r"
    echo "| $rep | $n | $c | $f | $r |"
    rm -rf "$OUT/r-c" "$OUT/r-f"
done
echo
echo "median full / count-only at $N launches over $S streams: $(echo $ratios | tr ' ' '\n' | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }') (min $(echo $ratios | tr ' ' '\n' | sort -g | head -1), max $(echo $ratios | tr ' ' '\n' | sort -g | tail -1))"
