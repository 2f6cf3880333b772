#!/bin/sh
# sim_attach.sh - lazy attach over the simulated CUPTI, against its truth
# (which logs every CUPTI entry point called, with its first and last time):
#  late    a dormant session makes no CUPTI call at all until the request
#          that turns kinds on; then attach, detach (kinds none), attach
#          again: records equal the truth exactly, per kind and device, and
#          each epoch says what it was (dormant / attached late, cost)
#  after   contexts created after a late attach: drops attributed per
#          device, exactly as the simulator reported them
#  before  contexts that predate the attach (CONTEXT records of the dump):
#          their drops go to device none and the epoch and the report say so
#  other   a second CUPTI client subscribes while cuptop is dormant; once
#          cuptop is attached the one-subscriber rule refuses it
#  held    the other client still holds the slot at the attach: activity
#          records only, flagged in the epoch
#  eager   a non-dormant agent holds the slot from the start
#  teardown  the detach tears CUPTI down (cuptiFinalize) at the exit of the
#          next application API call; no CUPTI call follows, not even at exit
#  keep    CUPTOP_ON_DETACH=keep: no teardown, unsubscribed, noted why
#  idle    no API call between a detach and the next attach: the attach
#          cancels the teardown and goes on with the subscription
#  atexit  no API call between a detach and the exit: the stop takes the
#          teardown back and unsubscribes (not inside CUDA's own exit)
#  nvtx    NVTX handed to CUPTI: no teardown (its handlers stay), noted
# Exits 77 when the simulator or python3 is missing.
SIM_LIB_NAME=attach
. "${top_srcdir:?}/tests/agent/sim_lib.sh"
wait_file() { # PATH: the simulated application reached a step (60 s at most)
    i=0
    while [ ! -e "$1" ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i + 1)); done
    [ -e "$1" ] || { echo "FAIL: $1 never appeared"; fail=1; }
}
# start DIR SEQ ENV...: the simulated application in the background
start() {
    d=$1 seq=$2
    shift 2
    mkdir -p "$d"
    env CUPTOP_STORE="$d/store" "$@" timeout 300 "$drive" "$sim" "$agent" "$d/truth" "seq:$seq" \
        return >"$d/out" 2>"$d/err" &
    pid=$!
    id=$("$ctl" wait-session "$d/store" 1 30)
}
# request DIR KINDS: a control request, acknowledged; prints the generation
request() {
    g=$("$ctl" control "$1/store" "$id" "$2")
    "$ctl" wait-ack "$1/store" "$id" "$g" 60 >/dev/null || { echo "FAIL: generation $g not acknowledged" >&2; fail=1; }
    echo "$g"
}
finish() { # DIR [CHECK-ARGS...]: wait for the end, dump, compare with the truth
    d=$1
    shift
    wait "$pid" || { echo "FAIL $d: the application exited with $?"; cat "$d/err"; fail=1; }
    pid=
    "$ctl" dump "$d/store" "$id" >"$d/dump"
    if python3 "$s/tests/agent/check_truth.py" "$d/dump" "$d/truth" --exit return "$@" >"$d/check"
    then echo "ok   $(basename "$d"): every record accounted for against the truth"
    else echo "FAIL $(basename "$d") accounting:"; grep FAIL "$d/check"; fail=1; fi
}

# ---- late: dormant -> attach -> detach -> attach ---------------------------
d=$tmp/late
start "$d" ctx,emit:500,mark:dormant,wait:go1,emit:1000,mark:p1,wait:go2,emit:400,mark:p2,wait:go3,emit:700 \
    CUPTOP_DORMANT=1 CUPTOPSIM_DEVICES=2 CUPTOP_DEVICE_BUFFER_SIZE=16M
wait_file "$d/dormant"
# the dormant agent is alive (heartbeat rows, control polling) for >= 2 s
i=0
while [ "$("$ctl" seconds "$d/store" "$id" | wc -l)" -lt 2 ] && [ $i -lt 600 ]; do
    sleep 0.1; i=$((i + 1)); done
g1=$(request "$d" kernel,memcpy,runtime); touch "$d/go1"; wait_file "$d/p1"
# the detach is acknowledged only once every flushed record is stored (parsed
# and committed): a reader right after `cuptop control --detach --wait` sees
# the 1000 of each kind and device (the H200 read 388360 of 402100 there when
# the acknowledgement only waited for the queue, not the consumer's batch)
"$b/cuptop" control --store "$d/store" "$id" --detach --wait 60 >"$d/detach.out" 2>&1 ||
    { echo "FAIL late: control --detach: $(cat "$d/detach.out")"; fail=1; }
"$ctl" dump "$d/store" "$id" >"$d/dump-ack"
for dev in 0 1; do check "late: kernel records on device $dev at the detach ack" \
    "$(val "$d/dump-ack" records.kernel.$dev)" 1000; done
touch "$d/go2"; wait_file "$d/p2"
g3=$(request "$d" kernel,memcpy,runtime); touch "$d/go3"
finish "$d"
dump=$d/dump
python3 - "$d/truth" "$(val "$dump" "control.$g1.requested_ns")" <<'PY' >"$d/calls" 2>&1
import sys
t0 = int(sys.argv[2])
calls = {}
for line in open(sys.argv[1]):
    if line.startswith("call."):
        k, v = line[5:].split("=", 1)
        n, first, last = map(int, v.split())
        calls[k] = (n, first, last)
assert t0 > 0, "no request time"
assert calls, "the truth logged no CUPTI call at all"
early = {k: (first - t0) / 1e6 for k, (n, first, last) in calls.items() if first < t0}
assert not early, "CUPTI called before the request (ms before): %s" % early
print("%d entry points called, the first %.1f ms after the request" %
      (len(calls), (min(f for _, f, _ in calls.values()) - t0) / 1e6))
PY
if [ $? = 0 ]; then echo "ok   late: no CUPTI call while dormant: $(cat "$d/calls")"
else echo "FAIL late: $(tail -1 "$d/calls")"; fail=1; fi
# hand-counted: 1000 + 700 operations per kind and device were made while
# attached, the 500 and 400 while dormant or detached produce nothing
for k in kernel memcpy; do
    for dev in 0 1; do check "late: $k records on device $dev" "$(val "$dump" records.$k.$dev)" 1700; done
done
m=$(val "$dump" records.memset.0); check "late: memset records (never on)" "${m:-0}" 0
check "late: epochs" "$(val "$dump" epochs)" 4
check "late: epoch 1 dormant" "$(val "$dump" epoch.1.scope | cut -d' ' -f1)" flags:out_of_scope
# (api_unfiltered: CUPTI started after CUDA, so the API kinds are recorded
# whole - per-call-id enables do nothing then on the H200 - and say so)
check "late: epoch 2 attached" "$(val "$dump" epoch.2.scope | cut -d' ' -f1)" \
    flags:attached,late_attach,drops_unattributed,api_unfiltered
check "late: epoch 3 detached" "$(val "$dump" epoch.3.scope | cut -d' ' -f1)" \
    flags:out_of_scope,api_unfiltered
check "late: epoch 4 attached again" "$(val "$dump" epoch.4.scope | cut -d' ' -f1)" \
    flags:attached,late_attach,drops_unattributed,api_unfiltered
check "late: epoch 2 contexts before the attach" \
    "$(val "$dump" epoch.2.scope | sed 's/.*pre_contexts:\([0-9]*\).*/\1/')" 2
cost=$(val "$dump" epoch.2.scope | sed 's/.*attach_cost_ns:\([0-9]*\).*/\1/')
at=$(val "$dump" epoch.2.scope | sed 's/.*attach_ns:\([0-9]*\).*/\1/')
check "late: epoch 2 records the attach" "$([ "$at" -gt 0 ] && [ "$cost" -gt 0 ] && echo yes)" yes
check "late: epoch 3 no attach" "$(val "$dump" epoch.3.scope | sed 's/.*attach_ns:\([0-9]*\).*/\1/')" 0
check "late: subscribed twice" "$(val "$d/truth" call.cuptiSubscribe_v2 | cut -d' ' -f1)" 2
check "late: torn down after the detach, at an API exit" \
    "$(val "$d/truth" finalize_in_api_exit)/$(val "$d/truth" finalize_outside)" 1/0
m=$(val "$d/truth" call.cuptiUnsubscribe); check "late: no unsubscribe (the teardown frees the slot)" "${m:-0}" 0
check "late: contexts dumped per attach" "$(val "$d/truth" dumped_contexts.0)" 2
grep -q "detached from CUPTI.*CUPTI is torn down (cuptiFinalize) at the exit of the next CUDA call" "$dump" ||
    { echo "FAIL late: no detach note saying what follows"; fail=1; }
grep -q "CUPTI torn down (cuptiFinalize) [0-9.]* ms after the detach" "$dump" ||
    { echo "FAIL late: no note of the teardown"; fail=1; }
check "late: attributes set again after the teardown (once per CUPTI)" \
    "$(val "$d/truth" call.cuptiActivitySetAttribute | cut -d' ' -f1)" 2
grep -q "attached to CUPTI in" "$dump" || { echo "FAIL late: no attach note"; fail=1; }

# detached DIR KINDS WORK1 WORK2 ENV...: a dormant start, a request for
# KINDS, WORK1 attached, `cuptop control --detach --wait`; the application
# then waits for DIR/go2 before WORK2 (none when empty)
detached() {
    _d=$1 _k=$2 _w1=$3 _w2=$4
    shift 4
    start "$_d" "ctx,mark:ready,wait:go1,$_w1,mark:p1,wait:go2${_w2:+,$_w2}" CUPTOP_DORMANT=1 "$@"
    wait_file "$_d/ready"
    request "$_d" "$_k" >/dev/null; touch "$_d/go1"; wait_file "$_d/p1"
    "$b/cuptop" control --store "$_d/store" "$id" --detach --wait 60 >/dev/null 2>&1 ||
        { echo "FAIL $(basename "$_d"): control --detach"; fail=1; }
}
kept() { # NAME DIR UNSUBSCRIBES: no teardown; the subscriber released that often
    m=$(val "$2/truth" call.cuptiFinalize); check "$1: no cuptiFinalize" "${m:-0}" 0
    m=$(val "$2/truth" call.cuptiUnsubscribe | cut -d' ' -f1)
    check "$1: unsubscribed" "${m:-0}" "$3"
}
noted() { # NAME DIR PATTERN WHAT: the session's notes say it
    grep -q "$3" "$2/dump" || { echo "FAIL $1: no note $4"; fail=1; }
}

# ---- teardown: after the detach's cuptiFinalize, no CUPTI call at all ------
# (the next application call's exit runs it; the stop at exit calls nothing)
d=$tmp/teardown
detached "$d" kernel emit:300 emit:200
touch "$d/go2"
finish "$d"
check "teardown: kernel records (attached only)" "$(val "$d/dump" records.kernel.0)" 300
check "teardown: cuptiFinalize at an API exit" \
    "$(val "$d/truth" finalize_in_api_exit)/$(val "$d/truth" finalize_outside)" 1/0
check "teardown: the subscriber slot is free" "$(val "$d/truth" subscribed)" 0
python3 - "$d/truth" <<'PY' >"$d/after" 2>&1
import sys
calls = {}
for line in open(sys.argv[1]):
    if line.startswith("call."):
        k, v = line[5:].split("=", 1)
        calls[k] = list(map(int, v.split()))
fin = calls["cuptiFinalize"][2]
late = sorted(k for k, (n, first, last) in calls.items() if k != "cuptiFinalize" and last > fin)
assert not late, "called after cuptiFinalize: %s" % late
print("%d entry points, none after cuptiFinalize" % len(calls))
PY
if [ $? = 0 ]; then echo "ok   teardown: $(cat "$d/after")"
else echo "FAIL teardown: $(tail -1 "$d/after")"; fail=1; fi
"$b/cuptop" check --store "$d/store" "$id" >"$d/check.out" 2>&1
check "teardown: cuptop check" "$?" 0

# ---- keep: --on-detach keep leaves CUPTI initialised, says so --------------
d=$tmp/keep
detached "$d" kernel emit:300 emit:200 CUPTOP_ON_DETACH=keep
touch "$d/go2"
finish "$d"
check "keep: kernel records" "$(val "$d/dump" records.kernel.0)" 300
kept keep "$d" 1
noted keep "$d" "not torn down (--on-detach keep)" "saying why CUPTI stays"
check "keep: the setting is kept with the session" "$(val "$d/dump" meta.config.on_detach)" keep

# ---- idle: no CUDA call between the detach and the next attach -------------
# the teardown never ran; the attach disarms it and goes on subscribed
d=$tmp/idle
detached "$d" kernel emit:300 emit:200
request "$d" kernel >/dev/null; touch "$d/go2"
finish "$d"
check "idle: kernel records (both attached spans)" "$(val "$d/dump" records.kernel.0)" 500
kept idle "$d" 0
check "idle: subscribed once" "$(val "$d/truth" call.cuptiSubscribe_v2 | cut -d' ' -f1)" 1
noted idle "$d" "teardown was still waiting for a CUDA call: cancelled by the attach" \
    "of the cancelled teardown"

# ---- atexit: no CUDA call between the detach and the exit: the stop takes
# the teardown back (CUDA's own exit must not run it) and unsubscribes
d=$tmp/atexit
detached "$d" kernel emit:300 ""
touch "$d/go2"
finish "$d"
check "atexit: kernel records" "$(val "$d/dump" records.kernel.0)" 300
kept atexit "$d" 1
noted atexit "$d" "teardown was still waiting for a CUDA call when the session stopped" \
    "of the teardown not done"

# ---- nvtx: once CUPTI's NVTX handlers sit in a library's table, no teardown
d=$tmp/nvtx
detached "$d" kernel,marker push:step,emit:100,pop emit:100 NVTX_INJECTION64_PATH="$agent"
touch "$d/go2"
finish "$d"
check "nvtx: kernel records" "$(val "$d/dump" records.kernel.0)" 100
kept nvtx "$d" 1
noted nvtx "$d" "not torn down (NVTX was handed to CUPTI" "saying why CUPTI stays"

# ---- after: contexts created after a late attach, drops per device ---------
d=$tmp/after
start "$d" mark:ready,wait:go,ctx,run:3 CUPTOP_DORMANT=1 CUPTOP_POOL=2 CUPTOPSIM_DEVICES=2 \
    CUPTOPSIM_DEVICE_SCALE=1,20 CUPTOPSIM_THREADS=4
wait_file "$d/ready"
request "$d" default >/dev/null; touch "$d/go"
finish "$d" --expect cupti_dropped
check "after: drops on device 1 attributed" \
    "$([ "$(val "$d/dump" loss.cupti_dropped.all.1)" -gt 0 ] && echo yes)" yes
check "after: no context before the attach" \
    "$(val "$d/dump" epoch.2.scope | sed 's/.*pre_contexts:\([0-9]*\).*/\1/')" 0

# ---- before: contexts that predate the attach ---------------------------------
d=$tmp/before
start "$d" ctx,mark:ready,wait:go,run:3 CUPTOP_DORMANT=1 CUPTOP_POOL=2 CUPTOPSIM_DEVICES=2 \
    CUPTOPSIM_DEVICE_SCALE=1,20 CUPTOPSIM_THREADS=4
wait_file "$d/ready"
request "$d" default >/dev/null; touch "$d/go"
finish "$d" --expect cupti_dropped
check "before: drops under device none" \
    "$([ "$(val "$d/dump" loss.cupti_dropped.all.none)" -gt 0 ] && echo yes)" yes
m=$(val "$d/dump" loss.cupti_dropped.all.1); check "before: drops on device 1" "${m:-0}" 0
check "before: epoch 2 flags" "$(val "$d/dump" epoch.2.scope | cut -d' ' -f1)" \
    flags:attached,late_attach,drops_unattributed,api_unfiltered
"$b/cuptop" report --store "$d/store" "$id" >"$d/report" 2>&1
grep -q "not attributed per device" "$d/report" ||
    { echo "FAIL before: the report does not say the drops are unattributed"; fail=1; }

# ---- other: a second client while cuptop is dormant ------------------------
d=$tmp/other
start "$d" ctx,sub,unsub,mark:ready,wait:go,emit:300,sub CUPTOP_DORMANT=1
wait_file "$d/ready"
check "other: the second client subscribes while cuptop is dormant" "$(cat "$d/sub.1")" 0
request "$d" kernel >/dev/null; touch "$d/go"
finish "$d"
check "other: refused once cuptop is attached (one subscriber)" "$(cat "$d/sub.2")" 39
check "other: kernel records" "$(val "$d/dump" records.kernel.0)" 300

# ---- held: the other client still subscribed at the attach -----------------
d=$tmp/held
start "$d" ctx,sub,mark:ready,wait:go,emit:300,unsub CUPTOP_DORMANT=1
wait_file "$d/ready"
request "$d" kernel >/dev/null; touch "$d/go"
finish "$d" --allow conflict
check "held: activity records still stored" "$(val "$d/dump" records.kernel.0)" 300
check "held: epoch 2 flags" "$(val "$d/dump" epoch.2.scope | cut -d' ' -f1)" \
    flags:attached,late_attach,drops_unattributed,no_callbacks
grep -q "subscriber conflict" "$d/dump" || { echo "FAIL held: no conflict note"; fail=1; }

# ---- eager: without --dormant the agent holds the slot from the start ------
d=$tmp/eager
start "$d" ctx,sub,emit:100
finish "$d"
check "eager: the second client is refused" "$(cat "$d/sub.1")" 39
exit $fail
