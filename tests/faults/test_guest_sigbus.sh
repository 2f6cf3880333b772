#!/bin/sh
# test_guest_sigbus.sh - fault row 16: a live session's files truncated
# under the application (truncate -s 0 data.mdb, lock.mdb).  The agent's
# next access to its mapping raises SIGBUS, in the consumer, the health
# thread or the application's own thread at exit; it used to kill the
# application (exit 135).  Now the agent's guard turns the fault into the
# end of the session's storing (agent_guard.h): the application finishes
# its work and exits 0, and the agent says why on stderr (CUPTOP_LOG).
# And the guard is a guest's: a SIGBUS that is the application's own (a
# read past the end of a file it mapped) still reaches the application's
# handler, or kills it with SIGBUS when it has none, as without the agent.
. "${top_srcdir:?}/tests/faults/lib.sh"
need_sim
DRIVE=$B/simdrive
[ -e "$DRIVE" ] || skip "$DRIVE not built"
export CUPTOPSIM_SEED=7 CUPTOPSIM_SCENARIO=clean CUPTOP_STOP_TIMEOUT_MS=20000
# A store access that faults jumps back past the frames that had allocated
# (agent_guard.c): what they held (an LMDB transaction, say) is left behind
# by design, and LeakSanitizer would turn the application's exit status 0
# into 1 at exit.  The truncation runs go without leak checking; the other
# sanitizer checks stay on, and the own-SIGBUS runs below keep it.
guard_env=
[ -n "$SANITIZED" ] && guard_env="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

for f in data.mdb lock.mdb; do
    d=$WORK/$f
    mkdir -p "$d"
    env $guard_env CUPTOP_LOG=1 CUPTOP_STORE=$d/store "$DRIVE" "$SIMLIB" "$AGENT" "$d/truth" \
        seq:ctx,emit:2000,mark:ready,wait:go,emit:2000,sleep:300,emit:2000 return \
        >"$d/out" 2>"$d/err" &
    pid=$!
    track $pid
    if ! wait_until 60 test -e "$d/ready"; then
        fail "$f: the application did not start"
        continue
    fi
    id=$(sessions "$d/store" | head -1)
    truncate -s 0 "$d/store/$id/$f"
    touch "$d/go"
    wait_pid "$pid" 120
    check "$f truncated under the application: its exit status" "$WAIT_RC" 0
    check "$f: the application finished its work (its atexit wrote the truth)" \
        "$(val "$d/truth" host_handler)" 0
    check "$f: the agent said the store faulted" \
        "$(grep -c 'mapping faulted under the agent' "$d/err")" 1
    check "$f: nothing on stdout" "$(wc -c <"$d/out")" 0
done

# the application's own SIGBUS: its handler, or the default action
d=$WORK/own
mkdir -p "$d"
CUPTOP_STORE=$d/store "$DRIVE" "$SIMLIB" "$AGENT" "$d/truth" emit:100 bus >"$d/out" 2>"$d/err"
check "own SIGBUS, own handler: exit status 128+7 from it" "$?" 135
check "own SIGBUS, own handler: the handler ran" "$(val "$d/truth" host_handler)" 7
CUPTOP_STORE=$d/store2 "$DRIVE" "$SIMLIB" "$AGENT" "$d/truth2" emit:100 bus-dfl \
    >"$d/out2" 2>"$d/err2" &
pid=$!
track $pid
wait_pid "$pid" 60
if [ -n "$SANITIZED" ]; then
    # the sanitizer's own SIGBUS handler is the disposition the agent found:
    # it reports and exits; what matters is that the process dies, not loops
    case $WAIT_RC in
    0 | timeout) fail "own SIGBUS, no handler (sanitizer's): exit status $WAIT_RC" ;;
    *) pass "own SIGBUS, no handler (sanitizer's): dies ($WAIT_RC)" ;;
    esac
else
    check "own SIGBUS, no handler: dies of SIGBUS (no loop)" "$WAIT_RC" 135
fi
finish
