#!/bin/sh
# sim_capture.sh - capture ranges (CUPTOP_CAPTURE_RANGE=cudaProfilerApi)
# over the simulated CUPTI: only the operations between cudaProfilerStart
# and cudaProfilerStop are stored, exactly; each range is an epoch and the
# time between ranges an out-of-scope one; the activity side of CUPTI is
# attached only at the first range (the simulator's call log), and after
# the last range the agent detaches and tears CUPTI down (cuptiFinalize at
# the exit of the next API call).  End modes: stop (one
# range), repeat (every range), repeat:1.  Exits 77 without the simulator.
SIM_LIB_NAME=capture
. "${top_srcdir:?}/tests/agent/sim_lib.sh"
export CUPTOPSIM_DEVICES=2
# two ranges of 1000 and 200 operations per kind and device, with work
# before, between and after them (and time for the agent to detach after
# the first one when it is the last: its health tick, at most 1 s)
SEQ=ctx,emit:500,mark:before,pstart,emit:1000,pstop,sleep:1300,emit:300,pstart,emit:200,pstop,emit:100
run() { # NAME END WANT_KERNELS WANT_EPOCHS
    d=$tmp/$1
    mkdir -p "$d"
    env CUPTOP_STORE="$d/store" CUPTOP_CAPTURE_RANGE=cudaProfilerApi ${2:+CUPTOP_CAPTURE_RANGE_END=$2} \
        timeout 300 "$drive" "$sim" "$agent" "$d/truth" "seq:$SEQ" return >"$d/out" 2>"$d/err" ||
        { echo "FAIL $1: the application failed"; cat "$d/err"; fail=1; }
    "$ctl" dump "$d/store" >"$d/dump"
    if python3 "$s/tests/agent/check_truth.py" "$d/dump" "$d/truth" --exit return >"$d/check"
    then echo "ok   $1: every record accounted for against the truth"
    else echo "FAIL $1 accounting:"; grep FAIL "$d/check"; fail=1; fi
    for dev in 0 1; do
        check "$1: kernel records on device $dev" "$(val "$d/dump" records.kernel.$dev)" "$3"
        check "$1: memcpy records on device $dev" "$(val "$d/dump" records.memcpy.$dev)" "$3"
    done
    check "$1: epochs" "$(val "$d/dump" epochs)" "$4"
    check "$1: epoch 1 (before the first range)" "$(val "$d/dump" epoch.1.scope | cut -d' ' -f1)" \
        flags:out_of_scope,capture
    check "$1: epoch 2 (the first range)" "$(val "$d/dump" epoch.2.scope | cut -d' ' -f1)" \
        flags:attached,late_attach,capture
    check "$1: epoch 3 (after it)" "$(val "$d/dump" epoch.3.scope | cut -d' ' -f1)" \
        flags:out_of_scope,capture
    # nothing of the activity API before the first cudaProfilerStart
    before=$(cat "$d/before")
    for fn in cuptiActivityRegisterCallbacks cuptiActivityEnable cuptiActivityFlushPeriod; do
        first=$(val "$d/truth" "call.$fn" | cut -d' ' -f2)
        check "$1: $fn only after the first cudaProfilerStart" \
            "$([ "${first:-0}" -gt "$before" ] && echo yes)" yes
    done
    "$b/cuptop" report --store "$d/store" "$("$ctl" sessions "$d/store" | head -1)" >"$d/report" 2>&1
    grep -q "epoch 2: in scope: a capture range" "$d/report" &&
        grep -q "epoch 1: out of scope (outside the capture range)" "$d/report" ||
        { echo "FAIL $1: the report does not say which windows were in scope"; fail=1; }
}
run stop "" 1000 3
check "stop: torn down after the range, at an API exit" \
    "$(val "$tmp/stop/truth" finalize_in_api_exit)/$(val "$tmp/stop/truth" finalize_outside)" 1/0
check "stop: the subscriber slot is free" "$(val "$tmp/stop/truth" subscribed)" 0
run repeat repeat 1200 5
check "repeat: epoch 4 (the second range)" "$(val "$tmp/repeat/dump" epoch.4.scope | cut -d' ' -f1)" \
    flags:attached,capture
check "repeat: epoch 5 (after it)" "$(val "$tmp/repeat/dump" epoch.5.scope | cut -d' ' -f1)" \
    flags:out_of_scope,capture
run repeat1 repeat:1 1000 3
exit $fail
