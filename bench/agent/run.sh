#!/bin/sh
# bench/agent/run.sh BUILD_DIR - the agent's own figures on the dev machine:
# ingest rate (records/s through parse + store, whole process pinned to one
# core), stored bytes per record, callback latencies, the stop protocol's
# duration, for the full agent and count-only (CUPTOP_SINK=null), driven by
# the fake CUPTI (tests/agent/fake_cupti.c: synchronous, at maximum rate).
# Prints a markdown table.
set -eu
B=$(cd "${1:?usage: run.sh BUILD_DIR}" && pwd)
N=${N:-2000000}
REPS=${REPS:-3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-bench-agent.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pin="${PIN-}"
[ -z "$pin" ] && command -v taskset >/dev/null && pin="taskset -c 0"
val() { sed -n "s/^$2=//p" "$1" | head -1; }

echo "| sink | records | wall s (median of $REPS) | records/s | bytes/record | req p50/p99/max us | cmp p50/p99/max us | stop ms | lost |"
echo "|---|---|---|---|---|---|---|---|---|"
for sink in store null; do
    walls=""
    for rep in $(seq 1 "$REPS"); do
        st=$tmp/$sink-$rep
        t0=$(date +%s.%N)
        CUPTOP_STORE=$st CUPTOP_SINK=$sink CUPTOP_KINDS=kernel,runtime \
            $pin "$B/fakeapp" "$B/fake_cupti.so" "$B/libcuptop-agent.so" \
            $((N / 2)) $((N / 2)) return 2>/dev/null
        t1=$(date +%s.%N)
        walls="$walls $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
        "$B/agentctl" dump "$st" >"$tmp/$sink.dump"
    done
    d=$tmp/$sink.dump
    wall=$(echo $walls | tr ' ' '\n' | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    stored=$(val "$d" store.records)
    parsed=$(val "$d" health.records_parsed)
    bytes=$(val "$d" store.bytes)
    bpr=$(awk -v b="$bytes" -v r="$stored" 'BEGIN { printf r ? "%.1f" : "-", r ? b / r : 0 }')
    stop=$(grep '^step\.' "$d" | sed -n 's/.* us:\([0-9]*\)$/\1/p' | awk '{ s += $1 } END { printf "%.1f", s / 1000 }')
    lost=0
    for l in cupti_dropped declined queue_overflow parse_error store_refused zero_ts tail conflict; do
        lost=$((lost + $(val "$d" loss.$l)))
    done
    lat() { awk -v a="$(val "$d" lat.$1_p50_ns)" -v b="$(val "$d" lat.$1_p99_ns)" -v c="$(val "$d" lat.$1_max_ns)" \
        'BEGIN { printf "%.2f / %.2f / %.1f", a / 1000, b / 1000, c / 1000 }'; }
    echo "| $sink | $parsed | $wall | $(awk -v n="$parsed" -v w="$wall" 'BEGIN { printf "%.2fM", n / w / 1e6 }') | $bpr | $(lat req) | $(lat cmp) | $stop | $lost |"
done

# ---- the simulated CUPTI (src/sim): realistic records and rate control ----
[ -e "$B/libcuptop-simcupti.so" ] && [ -e "$B/simdrive" ] || exit 0
SIM=$B/libcuptop-simcupti.so
echo
echo "Simulated CUPTI at its maximum rate, kernel+runtime+driver, one device, 1.5 s (pinned: ${pin:-no}):"
echo
echo "| sink | records | records/s | bytes/record | cmp p50/p99/max us | queue hw | lost |"
echo "|---|---|---|---|---|---|---|"
for sink in store null; do
    st=$tmp/sim-$sink
    t0=$(date +%s.%N)
    CUPTOP_STORE=$st CUPTOP_SINK=$sink CUPTOP_KINDS=kernel,runtime,driver CUPTOPSIM_MAX_RATE=1 \
        CUPTOPSIM_RATES=kernel=1,memcpy=0,memset=0,sync=0,overhead=0,marker=0 \
        $pin "$B/simdrive" "$SIM" "$B/libcuptop-agent.so" "$tmp/truth" run:1.5 return 2>/dev/null
    t1=$(date +%s.%N)
    d=$tmp/sim-$sink.dump
    "$B/agentctl" dump "$st" >"$d"
    parsed=$(val "$d" health.records_parsed)
    bytes=$(val "$d" store.bytes)
    stored=$(val "$d" store.records)
    lost=0
    for l in cupti_dropped declined queue_overflow parse_error store_refused zero_ts tail conflict; do
        lost=$((lost + $(val "$d" loss.$l)))
    done
    lat() { awk -v a="$(val "$d" lat.$1_p50_ns)" -v b="$(val "$d" lat.$1_p99_ns)" -v c="$(val "$d" lat.$1_max_ns)" \
        'BEGIN { printf "%.2f / %.2f / %.1f", a / 1000, b / 1000, c / 1000 }'; }
    echo "| $sink | $parsed | $(awk -v n="$parsed" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2fM", n / (b - a) / 1e6 }') | $(awk -v b="$bytes" -v r="$stored" 'BEGIN { printf r ? "%.1f" : "-", r ? b / r : 0 }') | $(lat cmp) | $(val "$d" health.queue_high_water) | $lost |"
done

echo
echo "Rate sweep (kernel launches/s per device; each launch also gives a runtime and a driver record), 3 s each, default settings, unpinned:"
echo
echo "| launches/s | records/s stored | queue high-water | pool high-water / limit | cmp p99 us (worst s) | lost |"
echo "|---|---|---|---|---|---|"
for r in ${RATES:-100000 300000 1000000 3000000}; do
    st=$tmp/rate-$r
    CUPTOP_STORE=$st CUPTOP_KINDS=kernel,runtime,driver \
        CUPTOPSIM_RATES=kernel=$r,memcpy=0,memset=0,sync=0,overhead=0,marker=0 \
        "$B/simdrive" "$SIM" "$B/libcuptop-agent.so" "$tmp/truth" run:3 return 2>/dev/null
    d=$tmp/rate-$r.dump
    "$B/agentctl" dump "$st" >"$d"
    sec=$("$B/agentctl" seconds "$st" "$(val "$d" session)")
    cap=$(echo "$sec" | head -1 | sed -n 's/.*pool_hw=[0-9]*\/\([0-9]*\).*/\1/p')
    lost=0
    for l in cupti_dropped declined queue_overflow parse_error store_refused zero_ts tail conflict; do
        lost=$((lost + $(val "$d" loss.$l)))
    done
    echo "| $r | $(awk -v n="$(val "$d" records.total)" 'BEGIN { printf "%.0f", n / 3 }') | $(val "$d" health.queue_high_water) | $(val "$d" health.pool_high_water) / $cap | $(awk -v c="$(val "$d" lat.cmp_p99_ns)" 'BEGIN { printf "%.1f", c / 1000 }') | $lost |"
done
