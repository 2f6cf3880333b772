#!/bin/sh
# test_concurrent.sh - fault row 9: eight traced applications writing
# sessions into one store while two readers poll it (cuptop sessions
# --json and cuptop check --all, in loops).  Checked: every session's
# stored records and counted losses equal its simulator truth; the readers
# never fail (sessions: exit 0 and strict JSON; check --all: exit 0 or 1,
# never 2 or a crash); all eight sessions end COMPLETE.
# make check: 1 s runs at a quarter of the clean rate; check-faults: 4 s at
# the full clean rate.
. "${top_srcdir:?}/tests/faults/lib.sh"
need_sim
need_tools python3
secs=1 scale=0.25
[ "$LONG" = 1 ] && secs=4 scale=1
st=$WORK/shared.store
procs=8
# the store exists before the readers start (as a user's store does)
mkdir -m 700 "$st"

# the readers: loop until told to stop; count polls and failures
reader() {
    polls=0 bad=0
    while [ ! -e "$WORK/stop" ]; do
        if [ "$1" = sessions ]; then
            "$CUPTOP" sessions --store "$st" --json >"$WORK/r1.out" 2>"$WORK/r1.err"
            rc=$?
            if [ "$rc" != 0 ] && [ -e "$st" ]; then
                bad=$((bad + 1)); echo "sessions exit $rc: $(head -2 "$WORK/r1.err")" >>"$WORK/r.log"
            elif [ "$rc" = 0 ] && ! strict_json "$WORK/r1.out" 2>>"$WORK/r.log"; then
                bad=$((bad + 1)); echo "sessions: not strict JSON" >>"$WORK/r.log"
            fi
        else
            "$CUPTOP" check --store "$st" --all >"$WORK/r2.out" 2>"$WORK/r2.err"
            rc=$?
            if [ "$rc" != 0 ] && [ "$rc" != 1 ] && [ -e "$st" ]; then
                bad=$((bad + 1)); echo "check --all exit $rc: $(head -2 "$WORK/r2.err")" >>"$WORK/r.log"
            fi
        fi
        polls=$((polls + 1))
    done
    echo "$polls $bad" >"$WORK/reader-$1"
}
pids=""
i=0
while [ "$i" -lt "$procs" ]; do
    i=$((i + 1))
    sim_start "w$i" CUPTOP_STORE="$st" CUPTOPSIM_SEED="$i" -- --seconds "$secs" \
        --scale "$scale" --exit return
    pids="$pids $SIM_PID"
done
# the readers start once a session exists (check --all on an empty store
# is a usage error, exit 2)
wait_until 60 sh -c "[ -n \"\$('$CTL' sessions '$st')\" ]"
reader sessions &
r1=$!
track $r1
reader check &
r2=$!
track $r2

i=0
for p in $pids; do
    i=$((i + 1))
    wait_pid "$p" 300
    check "writer $i: exit status" "$WAIT_RC" 0
done
touch "$WORK/stop"
wait_pid $r1 120
wait_pid $r2 120

ids=$(sessions "$st")
check "sessions in the store" "$(echo "$ids" | grep -c .)" "$procs"
i=0
while [ "$i" -lt "$procs" ]; do
    i=$((i + 1))
    pid=$(sed -n 's/^pid //p' "$WORK/w$i/truth")
    id=$(echo "$ids" | grep -- "-$pid\(-[0-9]*\)\?\$" | head -1)
    if [ -z "$id" ]; then
        fail "writer $i (pid $pid): no session"
        continue
    fi
    truth_check "writer$i" "$st" "$id" "$WORK/w$i/truth" --exit ctx_destroy
    check "writer $i: verdict" "$(verdict "$st" "$id")" "0 ended COMPLETE"
done
read -r p1 b1 <"$WORK/reader-sessions"
read -r p2 b2 <"$WORK/reader-check"
check_ge "reader sessions --json: polls" "$p1" 1
check "reader sessions --json: failures (of $p1 polls)" "$b1" 0
check_ge "reader check --all: polls" "$p2" 1
check "reader check --all: failures (of $p2 polls)" "$b2" 0
[ -s "$WORK/r.log" ] && head -5 "$WORK/r.log"
finish
