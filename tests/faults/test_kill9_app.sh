#!/bin/sh
# test_kill9_app.sh - fault row 1: kill -9 of the traced application at
# random points of its run (5 in make check, 20 under check-faults).
# Checked after each kill: the store opens; the session is crashed
# (dead pid) and INCOMPLETE (cuptop check exit 1, sessions --json);
# no torn rows: agentctl dump decodes every row, cuptop export --format
# jsonl of the whole session succeeds and is strict JSON with one line per
# stored record, mdb_stat -a reads the environment.  Then a kill while
# the agent is still starting: its process is written down before any
# health row, so the session is judged crashed (dead pid), not "no process
# recorded".
. "${top_srcdir:?}/tests/faults/lib.sh"
need_sim
need_tools python3 mdb_stat

points=5
[ "$LONG" = 1 ] && points=20
secs=1
i=0
while [ "$i" -lt "$points" ]; do
    i=$((i + 1))
    # a random delay across the run: 50 .. 950 ms after the session exists
    delay=$(awk -v s="$$$i" 'BEGIN { srand(s); printf "%.3f", 0.05 + rand() * 0.9 }')
    name=kill$i
    sim_start "$name" -- --seconds 30 --exit return --ready-file "$WORK/$name.ready"
    if ! wait_until 60 test -s "$WORK/$name.ready"; then
        fail "$name: the application did not start"
        continue
    fi
    sleep "$delay"
    kill -9 "$SIM_PID"
    wait_pid "$SIM_PID" 60
    check "$name (after ${delay}s): killed" "$WAIT_RC" 137
    st=$SIM_DIR/store
    id=$(sessions "$st" | head -1)
    if [ -z "$id" ]; then
        fail "$name: no session in the store"
        continue
    fi
    check "$name: verdict" "$(verdict "$st" "$id")" "1 crashed INCOMPLETE"
    if "$CTL" dump "$st" "$id" >"$WORK/$name.d" 2>"$WORK/$name.derr"; then
        pass "$name: every row decodes ($(val "$WORK/$name.d" records.total) records)"
    else
        fail "$name: agentctl dump: $(head -3 "$WORK/$name.derr")"
    fi
    check "$name: no final status" "$(val "$WORK/$name.d" final)" none
    recs=$(val "$WORK/$name.d" records.total)
    "$CUPTOP" export --store "$st" "$id" --from start --to end --format jsonl \
        -o "$WORK/$name.jsonl" >"$WORK/$name.eout" 2>"$WORK/$name.eerr"
    erc=$?
    if [ "${recs:-0}" = 0 ]; then
        # nothing stored yet: an empty window is a clear exit 2, not a crash
        case $erc in 0 | 2) pass "$name: export of an empty session: exit $erc" ;;
            *) fail "$name: export exit $erc: $(cat "$WORK/$name.eerr")" ;; esac
    else
        check "$name: export jsonl" "$erc" 0
        if strict_json "$WORK/$name.jsonl" jsonl 2>"$WORK/$name.jerr"; then
            pass "$name: export is strict JSON lines"
        else
            fail "$name: export is not strict JSON: $(tail -1 "$WORK/$name.jerr")"
        fi
        got=$(grep '^{"kind"' "$WORK/$name.jsonl" | grep -vc '^{"kind":"session"')
        check "$name: one exported line per stored record" "$got" "$recs"
        check "$name: the first line is the session's" \
            "$(head -c 18 "$WORK/$name.jsonl")" '{"kind":"session",'

    fi
    if mdb_stat -a "$st/$id" >"$WORK/$name.stat" 2>&1; then
        pass "$name: mdb_stat reads the environment"
    else
        fail "$name: mdb_stat: $(head -2 "$WORK/$name.stat")"
    fi
done

# killed while the agent starts: the simulated CUPTI takes 600 ms to enable
# each record kind (fault enable_slow), so the agent's threads have started
# and written a health row long before it has turned every kind on; the
# kill lands then.  The process was written down right after the store was
# opened (before: only once every kind was on, so this session had health
# rows and no pid: INCOMPLETE, "no process recorded", its liveness
# unchecked; seed 9101030705 of the truth matrix hit that window by chance)
name=starting
sim_start "$name" CUPTOPSIM_FAULTS=enable_slow=600 -- --seconds 30 --exit return
st=$SIM_DIR/store
has_row() {
    _id=$(sessions "$st" | head -1)
    [ -n "$_id" ] && "$CTL" dump "$st" "$_id" >"$WORK/$name.poll" 2>/dev/null &&
        [ "$(val "$WORK/$name.poll" health.rows)" -ge 1 ] 2>/dev/null
}
if wait_until 60 has_row; then
    kill -9 "$SIM_PID"
    wait_pid "$SIM_PID" 60
    id=$(sessions "$st" | head -1)
    "$CTL" dump "$st" "$id" >"$WORK/$name.d" 2>&1
    check "$name: killed inside that window (the session's metadata not written yet)" \
        "$(val "$WORK/$name.d" meta.agent_version)" ""
    check "$name: the process is written down" "$(val "$WORK/$name.d" meta.pid)" "$SIM_PID"
    check "$name: verdict" "$(verdict "$st" "$id")" "1 crashed INCOMPLETE"
else
    fail "$name: no health row within 60 s"
fi
finish
