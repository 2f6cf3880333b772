#!/bin/sh
# idle.sh - CPU of `cuptop exporter` on a store of 64 sessions (16 of each
# state, one running session written every second): with no scrapes, then
# scraped every 15 s (Prometheus' default interval) and every 1 s.  CPU
# from /proc/PID/stat (utime + stime).  Target (issue 18): idle <= 0.5 %.
#
#   bench/exporter/idle.sh BUILDDIR [SECONDS-PER-ROW]
set -eu
b=${1:?usage: idle.sh BUILDDIR [SECONDS]}
secs=${2:-60}
tmp=$(mktemp -d)
"$b/tui-fill-store" --store "$tmp/store" --sessions 64 --seconds 600 --live 0 >"$tmp/ids" &
fill=$!
exp=""
trap 'kill $fill $exp 2>/dev/null || true; rm -rf "$tmp"' EXIT
while [ "$(wc -l <"$tmp/ids" 2>/dev/null || echo 0)" -lt 64 ]; do sleep 0.2; done
"$b/cuptop" exporter --store "$tmp/store" --listen 127.0.0.1:0 --retention 3600 2>"$tmp/err" &
exp=$!
while ! grep -q serving "$tmp/err"; do sleep 0.1; done
url=$(sed -n 's|.*serving \(http://[^ ]*\).*|\1|p' "$tmp/err")
curl -sf "$url" >/dev/null   # the first scrape opens every session
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$exp/stat"; }
measure() { # NAME INTERVAL (0: no scrapes)
    t0=$(ticks); s0=$(date +%s.%N); n=0
    end=$(($(date +%s) + secs))
    while [ "$(date +%s)" -lt $end ]; do
        if [ "$2" = 0 ]; then sleep 1; else curl -sf "$url" >/dev/null; n=$((n + 1)); sleep "$2"; fi
    done
    t1=$(ticks); s1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" -v s0="$s0" -v s1="$s1" -v hz="$hz" -v name="$1" -v n="$n" \
        -v lim="$3" 'BEGIN { cpu = (b - a) / hz; wall = s1 - s0;
                 printf "| %-28s | %7d | %6.1f | %6.2f | %6.3f %% | %s |\n", name, n, wall, cpu,
                        100 * cpu / wall, lim == "" ? "-" : (100 * cpu / wall <= lim) ? "yes" : "NO" }'
}
echo "| exporter, 64 sessions        | scrapes | wall s | CPU s  | CPU     | <= 0.5 % |"
echo "|------------------------------|---------|--------|--------|---------|----------|"
measure "idle (no scrapes)" 0 0.5
measure "scraped every 15 s" 15 0.5
measure "scraped every 1 s" 1 ""
