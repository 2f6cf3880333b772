#!/bin/bash
# bench/run-sim.sh [BUILD_DIR] - issue 7's figures on any machine (the
# simulated CUPTI), in one run, printed as one markdown report.
#
# Builds what it needs (tools/build.sh into BUILD_DIR, default build), then:
#   1. store ingest and bytes/record (bench_store);
#   2. the agent: ingest at maximum rate on one core, bytes/record,
#      request/completion callback latency, stop protocol (bench/agent/run.sh),
#      full agent against count-only in the same loop;
#   3. the simulator at 1x, 2x and 5x the sustainable rate: queue and pool
#      high-water, losses by class, where loss begins, exit -> final status;
#   4. TUI frame cost (tui-bench) and export rate (bench/export).
# REPS (default 3) repetitions, interleaved; medians and min-max.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-build}
case $B in /*) ;; *) B=$here/$B ;; esac
REPS=${REPS:-3}
if [ "${NO_BUILD:-0}" != 1 ]; then
    BUILD_DIR=$B "$here/tools/build.sh" >/dev/null || { echo "run-sim: build failed" >&2; exit 2; }
    make -C "$B" -s agentctl bench_store tui-bench tests/cli/fill_store fakeapp fake_cupti.so >/dev/null 2>&1 ||
        make -C "$B" -s agentctl bench_store tui-bench tests/cli/fill_store >/dev/null
fi
for f in cuptop cuptop-simapp libcuptop-agent.so libcuptop-simcupti.so agentctl; do
    [ -e "$B/$f" ] || { echo "run-sim: $B/$f missing (CUPTI headers needed for the agent and simulator)" >&2; exit 2; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-run-sim.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
val() { sed -n "s/^$2=//p" "$1" | head -1; }
med() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END { if (NR) printf "%s (%s-%s)", a[int((NR + 1) / 2)], a[1], a[NR]; else print "-" }'; }

echo "# cuptop on the simulated CUPTI"
echo
echo "$(date -u +%F), $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), REPS=$REPS"
echo
echo "## 1. Store (bench_store)"
echo
"$B/bench_store" 2>/dev/null | sed -n '/^|/p'
echo
echo "## 2. Agent (bench/agent/run.sh)"
echo
REPS=$REPS sh "$here/bench/agent/run.sh" "$B" 2>/dev/null || echo "(bench/agent/run.sh failed)"
echo

# ---- 3. the simulator at multiples of the sustainable rate ---------------
# Sustainable rate: what the agent stores per second with the simulator at
# maximum rate (taskset to one core when available).
pin=""
command -v taskset >/dev/null && pin="taskset -c 0"
sim() { # STORE SECONDS ARGS... ; writes STORE.dump and STORE.truth
    local st=$1 secs=$2; shift 2
    CUPTOP_STORE=$st CUDA_INJECTION64_PATH=$B/libcuptop-agent.so CUPTOP_CUPTI_LIBRARY=$B/libcuptop-simcupti.so \
        CUPTOPSIM_TRUTH=$st.truth $pin "$B/cuptop-simapp" --seconds "$secs" "$@" >/dev/null 2>"$st.err"
    "$B/agentctl" dump "$st" >"$st.dump" 2>/dev/null
}
rates=""
for rep in $(seq 1 "$REPS"); do
    st=$tmp/max-$rep
    t0=$(date +%s%N)
    sim "$st" 3 --scenario clean --max-rate
    t1=$(date +%s%N)
    stored=$(val "$st.dump" records.total)
    rates="$rates $(awk -v n="${stored:-0}" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / ((b - a) / 1e9) }')"
done
sus=$(echo $rates | tr ' ' '\n' | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
# The clean scenario's own rate at scale 1, from the simulator's truth.
sim "$tmp/base" 2 --scenario clean
base=$(awk '$1 == "produced" { n += $4 } END { print n / 2 }' "$tmp/base.truth")
echo "## 3. Simulator at multiples of the sustainable rate"
echo
echo "Sustainable rate (simulator at maximum rate, process pinned to one core, records stored per second of wall time, median of $REPS): $sus records/s. Clean scenario at scale 1: $base records/s."
echo
echo "| load | records/s offered | stored / produced | queue high-water / capacity | pool high-water / limit | losses (by class) | exit -> final ms | verdict |"
echo "|---|---|---|---|---|---|---|---|"
for mult in 0.5 1 2 5; do
    scale=$(awk -v s="$sus" -v b="$base" -v m="$mult" 'BEGIN { printf "%.3f", (b > 0 ? s * m / b : 1) }')
    for rep in $(seq 1 "$REPS"); do
        st=$tmp/x$mult-$rep
        sim "$st" 3 --scenario clean --scale "$scale"
        prod=$(awk '$1 == "produced" { n += $4 } END { print n + 0 }' "$st.truth" 2>/dev/null)
        stored=$(val "$st.dump" records.total)
        qhw=$(val "$st.dump" health.queue_high_water); phw=$(val "$st.dump" health.pool_high_water)
        # capacity and limit from the health rows (csv export), largest seen
        "$B/cuptop" export --store "$st" "$(sed -n 's/^session=//p' "$st.dump")" --from start --to end \
            --format csv -o "$st.csv" --force >/dev/null 2>&1
        colmax() { awk -F, -v c="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next }
            k && $k + 0 > m { m = $k + 0 } END { print m + 0 }' "$st.csv" 2>/dev/null; }
        qcap=$(colmax queue_capacity); plim=$(colmax pool_limit)
        losses=$(for l in cupti_dropped declined queue_overflow parse_error store_refused zero_ts tail conflict; do
            v=$(val "$st.dump" loss.$l); [ "${v:-0}" != 0 ] && printf '%s=%s ' "$l" "$v"; done)
        stop=$(grep '^step\.' "$st.dump" | sed -n 's/.* us:\([0-9]*\)$/\1/p' | awk '{ s += $1 } END { printf "%.1f", s / 1000 }')
        "$B/cuptop" check --store "$st" --all >/dev/null 2>&1 && v=COMPLETE || v=INCOMPLETE
        echo "| ${mult}x (rep $rep) | $(awk -v p="$prod" 'BEGIN { printf "%.0f", p / 3 }') | ${stored:-?} / $prod | ${qhw:-?} / ${qcap:-?} | ${phw:-?} / ${plim:-?} | ${losses:-none} | $stop | $v |"
    done
done
echo

echo "## 4. TUI and export"
echo
"$B/tui-bench" 2>/dev/null | sed -n '/^|/p'
echo
sh "$here/bench/export/bench_export.sh" "$B" "${EXPORT_RECORDS:-2000000}" 2>/dev/null | sed -n '/^|/p'
