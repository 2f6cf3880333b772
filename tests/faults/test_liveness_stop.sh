#!/bin/sh
# test_liveness_stop.sh - fault row 23 (issue 28 item 12): a traced
# application stopped (SIGSTOP, what Ctrl-Z does) for longer than the
# heartbeat's staleness (MODEL_STALE_SECONDS, 5 s) under `cuptop run`.
# Checked while stopped: `sessions` (text and --json) and `check` say
# "stopped" (never "crashed"), INCOMPLETE so far with the not_responding
# reason naming state T, `check` exit 1; `report` says it has not ended;
# `cuptop control` queues its request and says the process is stopped (not
# "no agent would apply it", exit 2).  After SIGCONT: the application
# finishes (exit 0), the queued request was applied (a second epoch), the
# session ended COMPLETE.  Before the fix the session read "crashed" 5 s
# after the stop and control refused it.
. "${top_srcdir:?}/tests/faults/lib.sh"
need_sim
need_tools python3

st=$WORK/store
env $SIM_DFL CUPTOP_CUPTI_LIBRARY="$SIMLIB" "$CUPTOP" run --store "$st" -- \
    "$SIMAPP" --seconds 20 --ready-file "$WORK/ready" >"$WORK/run.out" 2>"$WORK/run.err" &
RUN=$!
track "$RUN"
wait_until 60 test -s "$WORK/ready" || fail "the application did not start"
id=$(sessions "$st" | head -1)
[ -n "$id" ] || { fail "no session"; finish; }
app=${id##*-}   # the session id ends with the application's pid
track "$app"
state() {
    "$CUPTOP" sessions --store "$st" --json 2>/dev/null | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["id"] == sys.argv[1]:
        print(s["state"])' "$id"
}
check "running before the stop" "$(state)" running
kill -STOP "$app"
t0=$(now_ms)
# poll until stale: never crashed on the way
seen=
while [ $(($(now_ms) - t0)) -lt 20000 ]; do
    s=$(state)
    case $s in crashed) seen=crashed; break ;; stopped) seen=stopped; break ;; esac
    sleep 0.5
done
check "stopped, not crashed, once the heartbeat is stale" "$seen" stopped
check_ge "judged stopped only after the staleness (ms)" "$(($(now_ms) - t0))" 4000
sleep 1
check "sessions --json and check" "$(verdict "$st" "$id")" "1 stopped INCOMPLETE"
if grep -q "INCOMPLETE so far (stopped" "$WORK/verdict.out" &&
    grep -q "stopped: no heartbeat for .*state T" "$WORK/verdict.out"; then
    pass "check says stopped, state T"
else
    fail "check: $(cat "$WORK/verdict.out")"
fi
python3 - "$WORK/verdict.json" "$id" "$app" >"$WORK/proc.txt" <<'PY'
import json, sys
for s in json.load(open(sys.argv[1])):
    if s["id"] == sys.argv[2]:
        p = s.get("process", {})
        print(p.get("visible"), p.get("state"), p.get("pid_here") == int(sys.argv[3]),
              [r["class"] for r in s["reasons"]])
PY
check "sessions --json process" "$(cat "$WORK/proc.txt")" "True T True ['not_responding']"
"$CUPTOP" sessions --store "$st" >"$WORK/sessions.txt" 2>&1
if awk -v id="$id" '$1 == id && $3 == "stopped"' "$WORK/sessions.txt" | grep -q .; then
    pass "sessions: state column stopped"
else
    fail "sessions: $(cat "$WORK/sessions.txt")"
fi
"$CUPTOP" report --store "$st" "$id" >"$WORK/report.txt" 2>&1
grep -q "state            stopped, INCOMPLETE so far" "$WORK/report.txt" &&
    grep -q "not yet: the session has not ended (its process is stopped)" "$WORK/report.txt" &&
    pass "report: stopped, not ended" || fail "report: $(grep -E 'state|not yet|never' "$WORK/report.txt")"
"$CUPTOP" control --store "$st" "$id" --kinds kernel,runtime --wait 1 \
    >"$WORK/ctl.out" 2>"$WORK/ctl.err"
crc=$?
check "control on a stopped session: not applied in time (exit 1, not refused)" "$crc" 1
grep -q "stopped.*the request is queued" "$WORK/ctl.out" &&
    pass "control says the process is stopped and the request is queued" ||
    fail "control: $(cat "$WORK/ctl.out" "$WORK/ctl.err")"
check "still stopped after the control request" "$(state)" stopped
kill -CONT "$app"
wait_pid "$RUN" 120
check "cuptop run exit after SIGCONT" "$WAIT_RC" 0
check "ended COMPLETE" "$(verdict "$st" "$id")" "0 ended COMPLETE"
epoch=$(python3 -c '
import json, sys
for s in json.load(open(sys.argv[1])):
    if s["id"] == sys.argv[2]:
        print(s["epoch"], s["kinds_enabled"])' "$WORK/verdict.json" "$id")
check "the queued request was applied after SIGCONT (epoch, kinds)" "$epoch" "2 kernel,runtime"
finish
