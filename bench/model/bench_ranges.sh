#!/bin/sh
# bench_ranges.sh - time `cuptop ranges` (text and --json) over 1M NVTX
# ranges built by bench_ranges (issue 15: under 1 s on the dev VM), best of
# three runs each.  Usage: bench/model/bench_ranges.sh BUILDDIR [N]
b=${1:?usage: bench_ranges.sh BUILDDIR [N]}
n=${2:-1000000}
dir=$(mktemp -d /tmp/bench-ranges.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$b/bench_ranges" --ranges "$n" --keep "$dir/store" || exit 1
id=$(ls "$dir/store" | head -1)
best() { # CMD...: best wall time of three, in seconds
    bt=
    for i in 1 2 3; do
        t0=$(date +%s.%N)
        "$@" >/dev/null || exit 1
        t=$(echo "$(date +%s.%N) - $t0" | bc)
        if [ -z "$bt" ] || [ "$(echo "$t < $bt" | bc)" = 1 ]; then bt=$t; fi
    done
    printf '%.3f' "$bt"
}
printf '%-36s %10s\n' "command ($n ranges)" "best (s)"
printf '%-36s %10s\n' "cuptop ranges" "$(best "$b/cuptop" ranges --store "$dir/store" "$id")"
printf '%-36s %10s\n' "cuptop ranges --json" "$(best "$b/cuptop" ranges --json --store "$dir/store" "$id")"
printf '%-36s %10s\n' "cuptop ranges --name 'range_0*'" \
    "$(best "$b/cuptop" ranges --name 'range_0*' --store "$dir/store" "$id")"
