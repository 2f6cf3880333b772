#!/bin/sh
# sim_windows.sh - periodic capture windows (--capture-range every:P/W)
# over the simulated CUPTI: the producer threads run for ~3.5 s under
# every:1s/300ms; the store has one epoch per window, each opened within a
# bound of a whole second (the wall clock) and closed 300 ms later, with
# out-of-scope epochs between; every stored record starts inside a window;
# stored + counted losses == the simulator's truth (the simulator produces
# nothing while the kinds are off, so its truth is the windows' work);
# `cuptop check` says COMPLETE, `cuptop report` says which epochs were
# windows and which out of scope.  Then a control request switches a
# session without windows to every: and back.  Exits 77 without the
# simulator.
SIM_LIB_NAME=windows
. "${top_srcdir:?}/tests/agent/sim_lib.sh"
export CUPTOPSIM_DEVICES=1 CUPTOPSIM_RATES=kernel=2000,runtime=2000
# how late an open or close may come: ~1 ms on an idle machine (the first
# window a few more: it attaches, as every window does after the teardown
# between windows); a busy CI box, or a sanitizer build, more
case ${CUPTOP_TEST_SANITIZER:-no} in
no | "") BOUND_MS=${WINDOWS_BOUND_MS:-150} ;;
*) BOUND_MS=${WINDOWS_BOUND_MS:-500} ;;
esac

# the epochs of a dump that are windows: "ID SCHED_NS START_NS END_NS"
windows() {
    sed -n 's/^epoch\.\([0-9]*\)\.window=sched_ns:\([0-9]*\) .*/\1 \2/p' "$1" |
        while read -r id sched; do
            flags=$(val "$1" "epoch.$id.scope" | cut -d' ' -f1)
            case $flags in *out_of_scope*) continue ;; esac
            echo "$id $sched $(val "$1" "epoch.$id.start_ns") $(val "$1" "epoch.$id.end_ns")"
        done
}

d=$tmp/every
mkdir -p "$d"
env CUPTOP_STORE="$d/store" CUPTOP_CAPTURE_RANGE=every:1s/300ms \
    timeout 300 "$drive" "$sim" "$agent" "$d/truth" "seq:ctx,run:3.5" return >"$d/out" 2>"$d/err" ||
    { echo "FAIL every: the application failed"; cat "$d/err"; fail=1; }
"$ctl" dump "$d/store" >"$d/dump"
if python3 "$s/tests/agent/check_truth.py" "$d/dump" "$d/truth" --exit return >"$d/check"
then echo "ok   every: every record accounted for against the truth"
else echo "FAIL every accounting:"; grep FAIL "$d/check"; fail=1; fi
windows "$d/dump" >"$d/windows"
"$b/cuptop" report --store "$d/store" "$("$ctl" sessions "$d/store" | head -1)" >"$d/report0" 2>&1
n=$(wc -l <"$d/windows")
# (the session spans the 3.5 s run and the agent's start and stop)
check "every: 3 to 5 windows in 3.5 s" "$([ "$n" -ge 3 ] && [ "$n" -le 5 ] && echo yes)" yes
check "every: epoch 1 out of scope (before the first window)" \
    "$(val "$d/dump" epoch.1.scope | cut -d' ' -f1 | sed 's/^flags://' | tr , '\n' | grep -cx 'out_of_scope\|capture')" 2
# each window: due at a whole second, opened within the bound, 300 ms long
while read -r id sched start end; do
    check "every: window epoch $id due at a whole second" "$((sched % 1000000000))" 0
    late=$(( (start - sched) / 1000000 ))
    check "every: window epoch $id opened within ${BOUND_MS} ms of its boundary (${late} ms)" \
        "$([ "$start" -ge "$sched" ] && [ "$late" -le "$BOUND_MS" ] && echo yes)" yes
    next=$((id + 1))
    closed=$(sed -n "s/^epoch\.$next\.window=sched_ns:\([0-9]*\) .*/\1/p" "$d/dump")
    if [ -n "$closed" ]; then
        check "every: window epoch $id closes at its boundary + 300 ms" \
            "$(( closed - sched ))" 300000000
        late=$(( (end - sched - 300000000) / 1000000 ))
        check "every: window epoch $id closed within ${BOUND_MS} ms (${late} ms)" \
            "$([ "$late" -ge 0 ] && [ "$late" -le "$BOUND_MS" ] && echo yes)" yes
    else
        # the session ended inside it: judged as far as it went; or at or
        # after its due close, before the close was applied (a loaded
        # machine): it ran its whole length, not cut short
        check "every: window epoch $id, cut short by the session's end, is the last" \
            "$next" "$(( $(val "$d/dump" epochs) + 1 ))"
        if [ "$end" -lt $((sched + 300000000)) ]; then
            grep -q "1 ended before its close (judged as far as it went)" "$d/report0" ||
                { echo "FAIL every: the report does not say the last window was cut short"; fail=1; }
        elif grep -q "ended before its close" "$d/report0"; then
            echo "FAIL every: the report says a window that ran its length was cut short"; fail=1
        else
            echo "ok   every: the last window ended at or after its close: not called cut short"
        fi
    fi
    check "every: window epoch $id holds records" \
        "$([ "$(val "$d/dump" "records_epoch.$id")" -gt 0 ] && echo yes)" yes
done <"$d/windows"
# nothing stored outside a window: out-of-scope epochs and no epoch hold none
outside=$(val "$d/dump" records_no_epoch)
for id in $(sed -n 's/^epoch\.\([0-9]*\)\.scope=flags:[^ ]*out_of_scope.*/\1/p' "$d/dump"); do
    outside=$((outside + $(val "$d/dump" "records_epoch.$id")))
done
check "every: records stored outside the windows" "$outside" 0
# 700 ms between windows: too short for a teardown and an attach (the
# next window would open late): kinds off only, CUPTI stays initialised
check "every: no teardown between windows 700 ms apart" "$(val "$d/truth" finalize_in_api_exit)" 0
check "every: the stop's summary says each rest was too short for a teardown" \
    "$(grep -c '^note\.[0-9]*=0 periodic windows: [0-9]* rests: torn down after 0 .*, [1-9][0-9]* (next window under 2 s)$' "$d/dump")" 1
sid=$("$ctl" sessions "$d/store" | head -1)
"$b/cuptop" check --store "$d/store" "$sid" >"$d/verdict" 2>&1
check "every: cuptop check" "$?/$(grep -c COMPLETE "$d/verdict")" 0/1
# the verdict covers the windows and says the rest was out of scope
grep -q "windows: $n periodic windows every:1s/300ms, opened at most .*the time between them was out of scope" \
    "$d/verdict" || { echo "FAIL every: check does not say the windows were judged, the rest out of scope"; cat "$d/verdict"; fail=1; }
check "every: check names no lossy window" "$(grep -c '^  window [0-9]* (epoch' "$d/verdict")" 0
"$b/cuptop" check --json --store "$d/store" "$sid" >"$d/verdict.json" 2>&1
check "every: check --json carries the windows" "$(python3 -c '
import json, sys
w = json.load(open(sys.argv[1]))[0]["windows"]
print(w["n"], w["every"], w["lossy"], len(w["lossy_windows"]))' "$d/verdict.json")" "$n 1s/300ms 0 0"

# windows 2.7 s apart: between them CUPTI is torn down as a detach does
# (cuptiFinalize at the exit of the next CUDA call), so CUDA runs as without
# CUPTI, and the next window attaches again: one teardown after each window
# that closed (the last may close just before the end, with no CUDA call
# after it); every record still accounted for; the routine notes of the
# detach and the teardown said once
d=$tmp/rest
mkdir -p "$d"
env CUPTOP_STORE="$d/store" CUPTOP_CAPTURE_RANGE=every:3s/300ms \
    timeout 300 "$drive" "$sim" "$agent" "$d/truth" "seq:ctx,run:7.5" return >"$d/out" 2>"$d/err" ||
    { echo "FAIL rest: the application failed"; cat "$d/err"; fail=1; }
"$ctl" dump "$d/store" >"$d/dump"
if python3 "$s/tests/agent/check_truth.py" "$d/dump" "$d/truth" --exit return >"$d/check"
then echo "ok   rest: every record accounted for against the truth"
else echo "FAIL rest accounting:"; grep FAIL "$d/check"; fail=1; fi
windows "$d/dump" >"$d/windows"
nclosed=0
while read -r id _; do
    grep -q "^epoch\.$((id + 1))\.window=" "$d/dump" && nclosed=$((nclosed + 1))
    check "rest: window epoch $id holds records" \
        "$([ "$(val "$d/dump" "records_epoch.$id")" -gt 0 ] && echo yes)" yes
done <"$d/windows"
fin=$(val "$d/truth" finalize_in_api_exit)
check "rest: CUPTI torn down after each window that closed ($fin of $nclosed)" \
    "$([ "$nclosed" -ge 2 ] && [ "$fin" -ge $((nclosed - 1)) ] && [ "$fin" -le "$nclosed" ] && echo yes)" yes
check "rest: no teardown outside an API exit" "$(val "$d/truth" finalize_outside)" 0
# the stop's summary: as many rests torn down as windows closed before the
# stop (the last window's rest may be cut short by the end), the process's
# cuptiFinalize count the truth's, none kept attached
sum=$(grep '^note\.[0-9]*=0 periodic windows: [0-9]* rests' "$d/dump")
torn=$(echo "$sum" | sed -n 's/.*torn down after \([0-9]*\) (cuptiFinalize x\([0-9]*\)).*/\1 \2/p')
check "rest: the stop's summary note counts the teardowns ($sum)" \
    "$([ -n "$torn" ] && [ "${torn% *}" -ge $((nclosed - 1)) ] && [ "${torn% *}" -le "$nclosed" ] &&
       [ "${torn#* }" = "$fin" ] && echo yes)" yes
check "rest: the summary says none kept attached" \
    "$(echo "$sum" | grep -c 'kept attached after 0 (buffers still being stored), 0 (a refusal)')" 1
check "rest: the detach and teardown notes said once" \
    "$(grep -c '^note\.[0-9]*=0 detached from CUPTI' "$d/dump")/$(grep -c 'torn down as a detach does' "$d/dump")" 1/1
"$b/cuptop" check --store "$d/store" "$("$ctl" sessions "$d/store" | head -1)" >"$d/verdict" 2>&1
check "rest: cuptop check" "$?/$(grep -c COMPLETE "$d/verdict")" 0/1

# windows under drops: each window that lost records is named, with its
# time and loss class, by check (text and JSON) and report alike
d=$tmp/drops
mkdir -p "$d"
env CUPTOP_STORE="$d/store" CUPTOP_CAPTURE_RANGE=every:1s/300ms CUPTOPSIM_RATES= \
    CUPTOPSIM_SCENARIO=drops CUPTOPSIM_THREADS=4 CUPTOP_POOL=1 CUPTOP_BUFFER_SIZE=64K \
    timeout 300 "$drive" "$sim" "$agent" "$d/truth" "seq:ctx,run:2.5" return >"$d/out" 2>"$d/err" ||
    { echo "FAIL drops: the application failed"; cat "$d/err"; fail=1; }
sid=$("$ctl" sessions "$d/store" | head -1)
"$b/cuptop" check --store "$d/store" "$sid" >"$d/verdict" 2>&1
check "drops: cuptop check INCOMPLETE" "$?/$(grep -c '^[^ ].*: INCOMPLETE' "$d/verdict")" 1/1
lossy=$(grep -c '^  window [0-9]* (epoch [0-9]*, due [0-9T:-]*\.[0-9]*Z): INCOMPLETE, [0-9]* records lost (.*dropped [0-9]*' "$d/verdict")
check "drops: check names the windows that lost records" "$([ "$lossy" -ge 1 ] && echo yes)" yes
grep -q "windows: .* with a loss; the time between them was out of scope" "$d/verdict" ||
    { echo "FAIL drops: check's windows line does not count the lossy windows"; fail=1; }
"$b/cuptop" check --json --store "$d/store" "$sid" >"$d/verdict.json" 2>&1
check "drops: check --json names the same windows" "$(python3 -c '
import json, sys
w = json.load(open(sys.argv[1]))[0]["windows"]
print(len(w["lossy_windows"]))' "$d/verdict.json")" "$lossy"
"$b/cuptop" report --store "$d/store" "$sid" >"$d/report" 2>&1
check "drops: report names the same windows as check" \
    "$(grep '^  window [0-9]* (epoch' "$d/report")" "$(grep '^  window [0-9]* (epoch' "$d/verdict")"
"$b/cuptop" report --store "$d/store" "$sid" >"$d/report" 2>&1
grep -q "in scope: a periodic window (every:1s/300ms" "$d/report" &&
    grep -q "out of scope (between periodic windows every:1s/300ms)" "$d/report" ||
    { echo "FAIL every: the report does not say which epochs were windows"; fail=1; }
grep -q "windows: .* opened at most .* ms after their boundary" "$d/report" ||
    { echo "FAIL every: the report does not say how late the windows opened"; fail=1; }

# a job of two processes, each with its own store (as gathered from two
# hosts): check --job says how far apart the processes opened the window of
# one boundary, the same figure the two stores' epochs give
d=$tmp/job
mkdir -p "$d"
for r in 0 1; do
    env CUPTOP_STORE="$d/store$r" CUPTOP_CAPTURE_RANGE=every:1s/300ms CUPTOP_JOB=winjob RANK=$r \
        WORLD_SIZE=2 timeout 300 "$drive" "$sim" "$agent" "$d/truth$r" "seq:ctx,run:2.5" return \
        >"$d/out$r" 2>"$d/err$r" &
    eval "pid$r=\$!"
done
wait "$pid0" || { echo "FAIL job: rank 0 failed"; cat "$d/err0"; fail=1; }
wait "$pid1" || { echo "FAIL job: rank 1 failed"; cat "$d/err1"; fail=1; }
for r in 0 1; do "$ctl" dump "$d/store$r" >"$d/dump$r"; windows "$d/dump$r" >"$d/win$r"; done
# the expected figures from the epochs: boundaries, in both, largest spread (us)
want=$(python3 -c '
import sys
o = [{int(l.split()[1]): int(l.split()[2]) for l in open(f)} for f in sys.argv[1:]]
b = set(o[0]) | set(o[1])
both = set(o[0]) & set(o[1])
sp = max([abs(o[0][k] - o[1][k]) for k in both] or [0])
print(len(b), len(both), "%.3f" % (sp / 1e6))' "$d/win0" "$d/win1")
"$b/cuptop" check --store "$d/store0" --store "$d/store1" --job winjob --json >"$d/job.json" 2>"$d/job.err"
check "job: check --job exit status" "$?" 0
check "job: check --job --json windows (boundaries, in all, spread ms) == the epochs'" "$(python3 -c '
import json, sys
w = json.load(open(sys.argv[1]))["windows"]
print(w["boundaries"], w["in_all"], "%.3f" % w["open_spread_ms"], w["processes"])' "$d/job.json")" "$want 2"
check "job: at least 2 windows opened by both" "$([ "$(echo "$want" | cut -d' ' -f2)" -ge 2 ] && echo yes)" yes
"$b/cuptop" check --store "$d/store0" --store "$d/store1" --job winjob >"$d/job.txt" 2>&1
grep -q "^  windows: 2 processes opened windows at $(echo "$want" | cut -d' ' -f1) boundaries, $(echo "$want" | cut -d' ' -f2) of them in every such process; the opens of one boundary at most [0-9.]* ms apart" "$d/job.txt" ||
    { echo "FAIL job: check --job does not say how far apart the ranks opened their windows"; cat "$d/job.txt"; fail=1; }
pid0= pid1=

# a control request: windows on in a session without them, then off
d=$tmp/ctl
mkdir -p "$d"
env CUPTOP_STORE="$d/store" timeout 300 "$drive" "$sim" "$agent" "$d/truth" \
    "seq:ctx,run:1,mark:on,wait:on_done,run:2.6,mark:off,wait:off_done,run:1" return \
    >"$d/out" 2>"$d/err" &
pid=$!
for i in $(seq 1 600); do [ -e "$d/on" ] && break; sleep 0.1; done
sid=$("$ctl" sessions "$d/store" | head -1)
"$b/cuptop" control --store "$d/store" "$sid" --capture-range every:1s/300ms >"$d/c1" 2>&1 ||
    { echo "FAIL ctl: control --capture-range every:1s/300ms"; cat "$d/c1"; fail=1; }
touch "$d/on_done"
for i in $(seq 1 600); do [ -e "$d/off" ] && break; sleep 0.1; done
"$b/cuptop" control --store "$d/store" "$sid" --capture-range none >"$d/c2" 2>&1 ||
    { echo "FAIL ctl: control --capture-range none"; cat "$d/c2"; fail=1; }
touch "$d/off_done"
wait "$pid" || { echo "FAIL ctl: the application failed"; cat "$d/err"; fail=1; }
pid=
"$ctl" dump "$d/store" >"$d/dump"
if python3 "$s/tests/agent/check_truth.py" "$d/dump" "$d/truth" --exit return >"$d/check"
then echo "ok   ctl: every record accounted for against the truth"
else echo "FAIL ctl accounting:"; grep FAIL "$d/check"; fail=1; fi
n=$(windows "$d/dump" | wc -l)
# at least the 2.6 s run between the two acknowledged requests
check "ctl: 2 to 4 windows under every:1s/300ms" "$([ "$n" -ge 2 ] && [ "$n" -le 4 ] && echo yes)" yes
last=$(val "$d/dump" epochs)
check "ctl: the last epoch collects again (windows off)" \
    "$(val "$d/dump" "epoch.$last.scope" | cut -d' ' -f1 | grep -c out_of_scope)/$(grep -c "^epoch\.$last\.window=" "$d/dump")" 0/0
check "ctl: both requests applied" "$(grep -c 'applied:1 result:0' "$d/dump")" 2
exit $fail
