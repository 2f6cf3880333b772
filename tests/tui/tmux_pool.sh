#!/bin/sh
# tmux_pool.sh - pool starvation in the monitor: the simulated application
# runs 4 CUDA threads on a pool of 1 buffer (CUPTOP_POOL=1), so CUPTI holds
# the whole pool and records are dropped whatever the kinds.  The kind
# panel shows the pool and the model's advice: raise the pool, with '+' (not narrowing); pressing '+'
# doubles the limit through an acknowledged control request, and once the
# pool is large enough the losses stop with every kind still on.  '-'
# halves it.  Skips (77) until the agent and the simulated CUPTI are built.
set -u
. "${top_srcdir:-.}/tests/tui/tui_lib.sh"

b=$top_builddir
for f in libcuptop-agent.so libcuptop-simcupti.so cuptop-simapp cuptop; do
    [ -e "$b/$f" ] || { echo "SKIP: $f not built"; exit 77; }
done
TUI_DEADLINE=${TUI_DEADLINE:-90}
store="$TUI_TMP/store"
cd "$TUI_TMP" || exit 1

# The application: 120 s at most; killed by the cleanup when the test ends.
env CUPTOP_STORE="$store" CUDA_INJECTION64_PATH="$b/libcuptop-agent.so" \
    CUPTOP_CUPTI_LIBRARY="$b/libcuptop-simcupti.so" CUPTOPSIM_SCENARIO=clean \
    CUPTOPSIM_THREADS=4 CUPTOPSIM_DEVICES=2 CUPTOP_POOL=1 CUPTOP_BUFFER_SIZE=64K \
    "$b/cuptop-simapp" --seconds 120 --exit return >"$TUI_TMP/app.out" 2>&1 &
TUI_PIDS="$TUI_PIDS $!"

tui_start "$b/cuptop" --store "$store"
tui_wait "running" "the session"
tui_keys Enter
tui_wait "callback latency" "the dashboard"
tui_keys k
tui_wait "buffer pool: limit 1," "the pool line in the kind panel"
tui_wait "Raise the pool 1 -> " "the suggestion to raise the pool"
tui_wait "Press + to double the pool" "the key that raises it"
tui_screen | grep -q "Narrow " && fail "suggested narrowing under pool starvation"

# '+' until the losses stop (1 -> 2 -> ... -> 64 at most).
limit=1
while [ "$limit" -lt 64 ]; do
    tui_screen | grep -qF "No losses now" && break
    tui_keys +
    limit=$((limit * 2))
    tui_wait "buffer pool $((limit / 2)) -> $limit" "request for a pool of $limit"
    tui_wait "buffer pool: limit $limit," "pool of $limit acknowledged"
    # Until the new pool is starved too (CUPTI holds all of it) or the
    # losses have stopped: then press again, or stop.
    tui_wait_re "(^| )out $limit( |\$)|No losses now" \
        "the pool of $limit starved or enough"
done
tui_wait "No losses now" "losses stopped after the pool grew (limit $limit)"
tui_screen | grep -E -q '^ \[x\] kernel' || fail "kernel was turned off"

# '-' halves it (acknowledged as well).
tui_keys -
tui_wait "buffer pool $limit -> $((limit / 2))" "request to halve the pool"
tui_wait "buffer pool: limit $((limit / 2))," "halved pool acknowledged"
tui_keys q
st=$(tui_wait_exit)
[ "$st" = 0 ] || fail "q should exit 0, got $st"
echo "PASS (losses stopped at a pool of $limit)"
