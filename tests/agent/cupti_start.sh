#!/bin/sh
# cupti_start.sh - issue 13 item 11: a session whose CUPTI could not start.
# The simulator's fault enable_fail=CODE makes cuptiActivityEnable (and
# Disable) return CODE, as a CUPTI that cannot start does; a CUPTI library
# that cannot be loaded is the other way in.  Before the fix such a session
# read "stop protocol: disable failed (rc 999 ...)", with every kind
# recorded as enabled.
# Checked: the application is unharmed (exit 0, nothing on stdout); the
# agent stores why (meta cupti_error: CUPTI's error name, code and text;
# cupti_error_code) and no kind as enabled (no epoch with a kind, sessions
# --json kinds_enabled "none"); the stop protocol does not fail; `cuptop check`
# says first that CUPTI could not start, with the error, then what to do
# (advice by error: privileges, another profiler, an unknown error, no
# library); `cuptop report` the same; sessions --json: first reason
# cupti_start.
. "${top_srcdir:?}/tests/faults/lib.sh"
need_sim
need_tools python3

# NAME: check the session of $SIM_DIR (or STORE) for a CUPTI start failure
# with error text ERR and advice word ADVICE
judge() {
    name=$1 st=$2 err=$3 advice=$4
    id=$(sessions "$st" | head -1)
    [ -n "$id" ] || { fail "$name: no session"; return; }
    "$CTL" dump "$st" "$id" >"$WORK/$name.d"
    case $(val "$WORK/$name.d" meta.cupti_error) in
    *"$err"*) pass "$name: the agent stored why CUPTI could not start" ;;
    *) fail "$name: meta.cupti_error '$(val "$WORK/$name.d" meta.cupti_error)', want '$err'" ;;
    esac
    check "$name: no epoch records a kind as enabled" \
        "$(grep '^epoch\.[0-9]*=' "$WORK/$name.d" | grep -v '=kinds:none ' || true)" ""
    if grep -q '^step\..*rc:[^0]' "$WORK/$name.d"; then
        fail "$name: a stop step failed: $(grep '^step\.' "$WORK/$name.d" | tr '\n' ' ')"
    else
        pass "$name: no stop step failed"
    fi
    "$CUPTOP" check --store "$st" "$id" >"$WORK/$name.check" 2>&1
    check "$name: cuptop check exit 1 (INCOMPLETE)" "$?" 1
    first=$(sed -n 2p "$WORK/$name.check")
    case $first in
    "  - CUPTI could not start: "*"$err"*"; nothing was traced") pass "$name: check says first that CUPTI could not start" ;;
    *) fail "$name: check's first reason: '$first'" ;;
    esac
    if grep -q "what to do: .*$advice" "$WORK/$name.check"; then
        pass "$name: check says what to do ($advice)"
    else
        fail "$name: no advice with '$advice': $(cat "$WORK/$name.check")"
    fi
    if grep -qi "disable failed\|stop protocol" "$WORK/$name.check"; then
        fail "$name: check blames the stop protocol: $(cat "$WORK/$name.check")"
    else
        pass "$name: check does not blame the stop protocol"
    fi
    "$CUPTOP" report --store "$st" "$id" >"$WORK/$name.report" 2>&1
    if grep -q "^    - CUPTI could not start: " "$WORK/$name.report" &&
        grep -q "^  1\. CUPTI could not start, so nothing was traced\. What to do: .*$advice" \
            "$WORK/$name.report"; then
        pass "$name: report says it, with the advice first"
    else
        fail "$name: report: $(sed -n '/^Advice/,$p' "$WORK/$name.report")"
    fi
    "$CUPTOP" sessions --store "$st" --json >"$WORK/$name.json" 2>&1
    check "$name: sessions --json: kinds none, first reason cupti_start" "$(python3 - "$WORK/$name.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))[0]
print(s["kinds_enabled"], s["reasons"][0]["class"])
PY
)" "none cupti_start"
}

for code in 999 35 39; do
    case $code in
    999) err="cuptiActivityEnable(kernel): CUPTI_ERROR_UNKNOWN (999): An unknown internal error has occurred"
         advice="no other profiler" ;;
    35) err="CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (35): The user does not have sufficient privileges"
        advice="NVreg_RestrictProfilingToAdminUsers=0" ;;
    39) err="CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (39)"
        advice="another profiler holds CUPTI" ;;
    esac
    sim_run "fail$code" -- --seconds 0.5 --faults "enable_fail=$code"
    check "enable_fail=$code: the application exits 0" "$SIM_RC" 0
    [ -s "$SIM_DIR/out" ] && fail "enable_fail=$code: the application's stdout got output"
    judge "enable_fail=$code" "$SIM_DIR/store" "$err" "$advice"
done

# No CUPTI library at all (the agent's CUPTOP_CUPTI_LIBRARY; simdrive loads
# the simulator itself)
d=$WORK/nolib
mkdir -p "$d"
CUPTOP_STORE=$d/store SIMDRIVE_AGENT_CUPTI=$d/no-such-libcupti.so \
    "$B/simdrive" "$SIMLIB" "$AGENT" "$d/truth" emit:10 return >"$d/out" 2>"$d/err"
check "no CUPTI library: the application exits 0" "$?" 0
judge "no CUPTI library" "$d/store" "no-such-libcupti.so" "could not be loaded"
finish
