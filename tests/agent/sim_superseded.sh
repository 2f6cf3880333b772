#!/bin/sh
# sim_superseded.sh - `cuptop control --wait` when a later request overtakes
# its own before the agent polls (known.txt 29.10: two cuptop attach of one
# process at once, the loader's agent asking the same kinds after the
# waiting one).  The application is stopped (SIGSTOP) while the two
# requests are written, so the agent sees both at its next poll and applies
# only the later one:
#  same   the later one asks the same kinds: cuptop control says so and
#         exits 0 (what it asked for is in force)
#  other  the later one asks other kinds: superseded, exit 1
# Exits 77 when the simulator or python3 is missing.
SIM_LIB_NAME=superseded
. "${top_srcdir:?}/tests/agent/sim_lib.sh"
d=$tmp/app
mkdir -p "$d"
env CUPTOP_STORE="$d/store" CUPTOP_DORMANT=1 timeout 300 "$drive" "$sim" "$agent" "$d/truth" \
    "seq:ctx,emit:50,mark:ready,wait:go,emit:50" return >"$d/out" 2>"$d/err" &
pid=$!
id=$("$ctl" wait-session "$d/store" 1 30)
# the application itself: $pid is timeout's, which runs it as a child (a
# SIGSTOP to timeout would leave the agent polling); the session's id ends
# with the application's pid
app=${id##*-}
i=0
while [ ! -e "$d/ready" ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i + 1)); done
# heartbeats are written: the session runs
i=0
while [ "$("$ctl" seconds "$d/store" "$id" | wc -l)" -lt 1 ] && [ $i -lt 600 ]; do
    sleep 0.1; i=$((i + 1)); done

# overtake KINDS LATER NAME: cuptop control --kinds KINDS, overtaken by a
# request for LATER written before the agent polls; its exit status in
# $tmp/NAME.rc, its output in $tmp/NAME.out
overtake() {
    kill -STOP "$app"
    "$b/cuptop" control --store "$d/store" "$id" --kinds "$1" --wait 60 >"$tmp/$3.out" 2>&1 &
    c=$!
    i=0
    while ! grep -q "requested" "$tmp/$3.out" && [ $i -lt 3000 ]; do sleep 0.02; i=$((i + 1)); done
    "$ctl" control "$d/store" "$id" "$2" >/dev/null || { echo "FAIL $3: agentctl control"; fail=1; }
    kill -CONT "$app"
    wait "$c"
    echo $? >"$tmp/$3.rc"
}

overtake kernel,runtime kernel,runtime same
check "same: exit status" "$(cat "$tmp/same.rc")" 0
grep -q "which asked the same: applied" "$tmp/same.out" ||
    { echo "FAIL same: output: $(cat "$tmp/same.out")"; fail=1; }

overtake kernel kernel,memcpy other
check "other: exit status" "$(cat "$tmp/other.rc")" 1
grep -q "superseded by a later request" "$tmp/other.out" ||
    { echo "FAIL other: output: $(cat "$tmp/other.out")"; fail=1; }

touch "$d/go"
wait "$pid" || { echo "FAIL: the application exited with $?"; cat "$d/err"; fail=1; }
pid=
exit $fail
