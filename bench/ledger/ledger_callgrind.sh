#!/bin/sh
# bench/ledger/ledger_callgrind.sh BUILD_DIR [OPS] - what the launch ledger
# costs the launching thread, in instructions (callgrind: repeatable on a
# noisy machine where wall time is not), on the simulated CUPTI.
#
# The simulated application makes OPS kernel launches, OPS copies and OPS
# sets on one thread, with the agent injected, kinds kernel,memcpy,memset,
# once without the ledger and once with it (CUPTOP_LEDGER=1).  Callgrind
# counts only inside the agent's subscriber callback (agent_resource_cb and
# what it calls) on the application's threads; the final sweep (which runs
# in the stop protocol, itself inside the context-destroy callback) apart.  The simulated CUPTI's own cuptiGetStreamIdEx and
# cuStreamIsCapturing are in the count (real CUPTI's cost for them is not
# known here: the H200 figure is bench/gpu/ledger_cost.sh's).
set -eu
B=${1:?usage: ledger_callgrind.sh BUILD_DIR [OPS]}
OPS=${2:-20000}
B=$(cd "$B" && pwd)
command -v valgrind >/dev/null || { echo "ledger_callgrind.sh: needs valgrind" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ledger-cg.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
ir() {   # OUT FUNCTION: inclusive Ir of FUNCTION
    callgrind_annotate --inclusive=yes "$1" 2>/dev/null |
        awk -v f=":$2 " 'index($0, f) { gsub(",", "", $1); print $1; exit }'
}
run() {   # LEDGER
    d=$tmp/l$1
    mkdir -p "$d"
    CUPTOP_STORE=$d/store CUDA_INJECTION64_PATH=$B/libcuptop-agent.so \
        CUPTOP_CUPTI_LIBRARY=$B/libcuptop-simcupti.so CUPTOP_LEDGER=$1 \
        CUPTOPSIM_OPS=$OPS CUPTOP_KINDS=kernel,memcpy,memset \
        valgrind --tool=callgrind --callgrind-out-file="$d/out" \
        --toggle-collect=agent_resource_cb \
        "$B/cuptop-simapp" --seconds 600 --threads 1 --max-rate --truth "$d/truth" \
        >"$d/log" 2>&1
    launches=$(awk '$1 == "produced" && ($3 == "kernel" || $3 == "memcpy" || $3 == "memset") { s += $4 }
                    END { print s + 0 }' "$d/truth")
    # the stop protocol runs inside a resource callback (the context's
    # destruction): its final sweep is counted apart
    cb=$(ir "$d/out" agent_resource_cb) sw=$(ir "$d/out" agent_launches_final)
    echo "$launches $((cb - ${sw:-0})) ${sw:-0}"
}
r0=$(run 0); r1=$(run 1)
set -- $r0 ${r0:+} ; n0=${1:-0} cb0=${2:-0}
set -- $r1 ; n1=${1:-0} cb1=${2:-0} sweep=${3:-0}
printf '| ledger | launches | Ir in the callback | Ir per launch (enter+exit) | final sweep Ir |\n'
printf '|---|---:|---:|---:|---:|\n'
printf '| off | %s | %s | %s | - |\n' "$n0" "$cb0" "$(awk -v a="$cb0" -v n="$n0" 'BEGIN { printf "%.1f", a / n }')"
printf '| on | %s | %s | %s | %s |\n' "$n1" "$cb1" "$(awk -v a="$cb1" -v n="$n1" 'BEGIN { printf "%.1f", a / n }')" "$sweep"
printf '\nthe ledger adds %s instructions per launch on the launching thread\n' \
    "$(awk -v a="$cb1" -v b="$cb0" -v n="$n1" 'BEGIN { printf "%.1f", (a - b) / n }')"
