#!/bin/sh
# test_fork_conflict.sh - fault rows 3 and 12.
# Row 3: the application forks a worker that uses CUDA, without and with
# exec.  The parent's session holds exactly the parent's records
# (simulator truth: a child's records in it would break the equality);
# the child gets a session of its own with its own pid, holding exactly
# the child's records; both COMPLETE.
# Row 12: a second CUPTI client in the process (the simulator's conflict
# fault: a subscriber already registered, foreign buffers): the conflict is
# counted, a note names the other subscriber, the verdict is INCOMPLETE and
# names the conflict.
. "${top_srcdir:?}/tests/faults/lib.sh"
need_sim
need_tools python3

for mode in fork exec; do
    if [ "$mode" = fork ] && [ -n "$SANITIZED" ]; then
        # GCC's libasan takes no allocator locks around fork(): a forked
        # child of a threaded process can deadlock in malloc (seen here).
        skip_part "fork without exec: not under the sanitizer (libasan deadlocks in the forked child)"
        continue
    fi
    args="--fork"
    [ "$mode" = exec ] && args="--fork --exec"
    # shellcheck disable=SC2086
    sim_run "$mode" -- --seconds 0.6 --exit return $args
    check "$mode: the application's exit status" "$SIM_RC" 0
    st=$SIM_DIR/store
    sessions "$st" >"$WORK/$mode.ids"
    check "$mode: sessions (parent, child)" "$(wc -l <"$WORK/$mode.ids" | tr -d ' ')" 2
    ppid=$(sed -n 's/^pid //p' "$SIM_DIR/truth")
    cpid=$(sed -n 's/^pid //p' "$SIM_DIR/truth.child")
    pid_of() { "$CTL" dump "$st" "$1" | sed -n 's/^meta.pid=//p'; }
    parent="" child=""
    while read -r id; do
        p=$(pid_of "$id")
        [ "$p" = "$ppid" ] && parent=$id
        [ "$p" = "$cpid" ] && child=$id
    done <"$WORK/$mode.ids"
    if [ -z "$parent" ] || [ -z "$child" ]; then
        fail "$mode: sessions do not match the pids (parent $ppid, child $cpid): $(cat "$WORK/$mode.ids")"
        continue
    fi
    pass "$mode: parent $ppid and child $cpid have a session each"
    truth_check "$mode-parent" "$st" "$parent" "$SIM_DIR/truth" --exit ctx_destroy
    check "$mode: parent verdict" "$(verdict "$st" "$parent")" "0 ended COMPLETE"
    # the forked child (no exec) ends with exit() after destroying its
    # contexts; the exec'd one is a fresh simapp returning from main
    truth_check "$mode-child" "$st" "$child" "$SIM_DIR/truth.child" --exit ctx_destroy
    check "$mode: child verdict" "$(verdict "$st" "$child")" "0 ended COMPLETE"
done

# row 12: a second CUPTI client. Every 8th buffer completed is also
# delivered as a foreign copy: 64 KiB buffers make a run slowed down by the
# sanitizers (which completed fewer than 8 of the default size) still have
# dozens, so the conflict is always there to be counted.
sim_run conflict CUPTOP_BUFFER_SIZE=64K -- --seconds 0.6 --exit return --scenario conflict
check "conflict: the application is unharmed" "$SIM_RC" 0
check_ge "conflict: the simulator delivered foreign buffers" \
    "$(awk '$1 == "buffers_foreign" { print $2 }' "$SIM_DIR/truth")" 1
st=$SIM_DIR/store
id=$(sessions "$st" | head -1)
"$CTL" dump "$st" "$id" >"$WORK/conflict.d"
check_ge "conflict: conflict loss counted" "$(val "$WORK/conflict.d" loss.conflict)" 1
check "conflict: verdict" "$(verdict "$st" "$id")" "1 ended INCOMPLETE"
grep -q 'conflict' "$WORK/verdict.out" ||
    fail "conflict: the verdict does not name the conflict: $(cat "$WORK/verdict.out")"
# a foreign buffer is counted in buf_foreign, not as one of ours completed
# and never consumed: no bogus "unconsumed" reason next to the conflict
if grep -q 'unconsumed' "$WORK/verdict.out"; then
    fail "conflict: the verdict adds an unconsumed reason: $(grep unconsumed "$WORK/verdict.out")"
else
    pass "conflict: no unconsumed reason next to the conflict"
fi
# (every 8th buffer is also delivered as a foreign copy: a slow run may
# have fewer than 8; the count must be the simulator's, foreign + dup)
want_foreign=$(awk '$1 == "buffers_foreign" || $1 == "buffers_dup" { n += $2 } END { print n + 0 }' \
    "$SIM_DIR/truth")
check "conflict: buf_foreign == foreign + duplicate buffers delivered" \
    "$(val "$WORK/conflict.d" health.buf_foreign)" "$want_foreign"
if grep -q '^note\..*subscriber conflict.*torch.profiler (simulated)' "$WORK/conflict.d"; then
    pass "conflict: a note in the session names the other subscriber"
else
    fail "conflict: no note naming the other subscriber 'torch.profiler (simulated)'"
fi
"$CUPTOP" report --store "$st" "$id" >"$WORK/conflict.report" 2>&1
grep -q 'torch.profiler (simulated)' "$WORK/conflict.report" ||
    skip_part "report names the other subscriber: cuptop report shows no session notes"
# after a refused subscription there is no context-destroy flush: the stop
# runs from atexit (exit path return)
check "conflict: final exit path" "$(final_field "$WORK/conflict.d" exit_path)" return
check "conflict: stop protocol complete" "$(final_field "$WORK/conflict.d" protocol_complete)" 1
# --exit also checks buffers consumed == completed (foreign ones are in
# neither)
truth_check conflict "$st" "$id" "$SIM_DIR/truth" --exit return --expect conflict
finish
