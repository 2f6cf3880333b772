#!/bin/sh
# tmux_ledger.sh - the launch ledger's pending records in the monitor's
# kind panel (issue 31).  The simulated application runs with the ledger
# on (CUPTOP_LEDGER=1) on a CUPTI that loses 1 kernel record in 97 without
# a word (fault silent=97): records launched over 2 s ago that have not
# arrived are pending, so the kernel row's PEND column rises above 0;
# memcpy and memset have a value too, kinds the ledger does not count none.  A narrow panel has no room
# for the column: the pending go on the line under the kinds.  A session
# without the ledger shows neither.  The dashboard has a "launch ledger"
# panel (expected and arrived per second, pending) only with the ledger.  Skips (77) until the agent and the
# simulated CUPTI are built.
set -u
. "${top_srcdir:-.}/tests/tui/tui_lib.sh"

b=$top_builddir
for f in libcuptop-agent.so libcuptop-simcupti.so cuptop-simapp cuptop; do
    [ -e "$b/$f" ] || { echo "SKIP: $f not built"; exit 77; }
done
TUI_DEADLINE=${TUI_DEADLINE:-90}
cd "$TUI_TMP" || exit 1

# app STORE [VAR=VALUE...]: the simulated application, 120 s at most
# (killed by the cleanup when the test ends).
app() {
    st=$1
    shift
    env CUPTOP_STORE="$st" CUDA_INJECTION64_PATH="$b/libcuptop-agent.so" \
        CUPTOP_CUPTI_LIBRARY="$b/libcuptop-simcupti.so" CUPTOPSIM_SCENARIO=clean "$@" \
        "$b/cuptop-simapp" --seconds 120 --streams 4 --exit return --faults silent=97 \
        >"$TUI_TMP/app.out" 2>&1 &
    TUI_PIDS="$TUI_PIDS $!"
}

# the kernel row's PEND (the 5th field of " [x] kernel REC/S EST PEND")
kernel_pending() {
    tui_screen | awk '$1 == "[x]" && $2 == "kernel" { print $5; exit }' | grep -Eq '^[1-9]'
}

# ---- with the ledger: the column, kernel pending above 0 ------------------
app "$TUI_TMP/led" CUPTOP_LEDGER=1
tui_start_size 120 40 "$b/cuptop" --store "$TUI_TMP/led"
tui_wait "running" "the session"
tui_keys Enter
tui_wait "callback latency" "the dashboard"
# the dashboard's launch ledger panel: expected and arrived per second, and
# pending above 0 once a lost record is older than the grace period
tui_wait_re "launch ledger" "the ledger's panel on the dashboard"
tui_wait_re "expected [0-9.]+[kM]? .*arrived [0-9.]+[kM]?" "the ledger panel's expected and arrived"
tui_wait_re "pending [1-9][0-9.]*[kM]?" "records pending in the ledger panel"
ex=$(tui_screen | sed -n 's/.*expected \([0-9][0-9.]*[kM]\{0,1\}\).*/\1/p' | head -1)
case $ex in 0 | "") fail "the ledger panel's expected per second is '$ex' while kernels are launched" ;; esac
echo "ok   the dashboard's launch ledger panel: expected $ex/s, records pending"
tui_keys k
tui_wait_re "KIND +REC/S +EST.DROP/S +PEND" "the ledger's PEND column"
tui_wait_until kernel_pending
row() { tui_screen | awk -v k="$1" '$1 == "[x]" && $2 == k { print $5; exit }'; }
for k in memcpy memset; do
    row $k | grep -Eq '^[0-9]' || fail "$k has no PEND value: '$(row $k)'"
done
rt=$(tui_screen | awk '$1 == "[x]" && $2 == "runtime" { print NF; exit }')
[ "$rt" = 4 ] || fail "the runtime row has a PEND value ($rt fields): the ledger does not count it"
echo "ok   kernel records pending in the PEND column, memcpy and memset counted, runtime not"

# ---- narrow: the line under the kinds -------------------------------------
tui_resize 70 40
tui_wait_re "ledger pending: K [1-9][0-9.kM]* C [0-9.kM]+ S [0-9.kM]+" "the ledger's pending line (narrow panel)"
tui_screen | grep -q "PEND" && fail "a narrow panel still has the PEND column"
echo "ok   a narrow panel puts the pending on a line of its own"
tui_keys q
st=$(tui_wait_exit)
[ "$st" = 0 ] || fail "q should exit 0, got $st"

# ---- without the ledger: neither ----------------------------------------
tmux -L "$TUI_SOCK" kill-server >/dev/null 2>&1
app "$TUI_TMP/plain"
tui_start_size 120 40 "$b/cuptop" --store "$TUI_TMP/plain"
tui_wait "running" "the session without the ledger"
tui_keys Enter
tui_wait "callback latency" "the dashboard"
sleep 3   # health rows come (a ledger would be counting by now)
tui_screen | grep -q "launch ledger" && fail "the ledger's panel is shown for a session without it"
tui_keys k
tui_wait_re "KIND +REC/S +EST.DROP/S" "the kind panel"
tui_screen | grep -Eq "PEND|ledger pending" && fail "the ledger is shown for a session without it"
echo "ok   no ledger column without the ledger"
tui_keys q
st=$(tui_wait_exit)
[ "$st" = 0 ] || fail "q should exit 0, got $st"
echo "PASS"
