#!/bin/sh
# test_write_errors.sh - fault row 19 (issue 28 item 7): a store that fails
# with an error other than ENOSPC, or has no room at all for its final
# status.  Every refused write is counted, whatever the errno; a clean exit
# is never judged a crash.
#  - EPERM (what `chattr +i data.mdb` gives a live session) and EIO from a
#    moment on (faultio.so's fail file): the rows, the steps and the final
#    status are refused from then on.  Before the fix: store_refused 0,
#    "crashed", the refused records in no count.  Now the final status is
#    in the session's final.aside: `ended` INCOMPLETE naming store_refused
#    and the refused final status, the agent's totals == the truth.
#  - a tmpfs of 64 KiB (root only): the same, with ENOSPC.
. "${top_srcdir:?}/tests/faults/lib.sh"
need_sim
need_tools python3

# the session has written rows: its store worked before it failed
rows_written() { [ "$("$CTL" dump "$1" "$2" 2>/dev/null | sed -n "s/^health.rows=//p")" -ge 1 ] 2>/dev/null; }

fail_case() {
    name=$1 errno=$2
    fenv=$(faultio_env)
    # shellcheck disable=SC2086
    sim_start "$name" $fenv FAULTIO_FAIL_FILE="$WORK/$name.fail" FAULTIO_FAIL_ERRNO="$errno" -- \
        --seconds 4 --exit return --destroy never
    st=$SIM_DIR/store
    wait_until 60 sh -c "[ -n \"\$('$CTL' sessions '$st' 2>/dev/null)\" ]" ||
        fail "$name: no session appeared"
    id=$(sessions "$st" | head -1)
    wait_until 60 rows_written "$st" "$id" || fail "$name: no health row before the failure"
    : >"$WORK/$name.fail"   # from now on every write to data.mdb fails
    wait_pid "$SIM_PID" 300
    check "$name: the application's exit status" "$WAIT_RC" 0
    check "$name: verdict (ended, not crashed)" "$(verdict "$st" "$id")" "1 ended INCOMPLETE"
    grep -q 'store_refused: [0-9]* records lost' "$WORK/verdict.out" ||
        fail "$name: no store_refused reason: $(cat "$WORK/verdict.out")"
    grep -q 'store refused the final status' "$WORK/verdict.out" ||
        fail "$name: the refused final status is not named: $(cat "$WORK/verdict.out")"
    "$CUPTOP" report --store "$st" "$id" >"$WORK/$name.report" 2>&1
    if grep -q 'process died' "$WORK/$name.report"; then
        fail "$name: the report says the process died"
    else
        pass "$name: the report does not say the process died"
    fi
    # the losses beyond the rows are credited to their kinds and devices
    # (the final status carries them; 29.12): devices and kinds add up
    sums=$(python3 - "$WORK/verdict.json" "$id" "$WORK/$name.report" <<'PY'
import json, re, sys
s = [x for x in json.load(open(sys.argv[1])) if x["id"] == sys.argv[2]][0]
bad = [cl for cl, n in s["loss"].items()
       if sum(v.get(cl, 0) for v in s.get("loss_by_device", {}).values()) != n]
rep = open(sys.argv[3]).read()
m = re.search(r"^  all\s+\d+\s+\S+\s+\S+\s+(\d+)", rep, re.M)
kinds = sum(int(k.group(1)) for k in re.finditer(
    r"^  (?!all\b)[a-z]+\s+\d+\s+\S+\s+\S+\s+(\d+)~?", rep, re.M))
print("devices:" + (",".join(bad) or "ok"),
      "kinds:" + ("ok" if m and int(m.group(1)) == kinds else "%s of %s" % (kinds, m and m.group(1))))
PY
)
    check "$name: losses by device and kind add up" "$sums" "devices:ok kinds:ok"
    check "$name: exit path in the aside" "$(final_field "$("$CTL" dump "$st" "$id" >"$WORK/$name.d"; echo "$WORK/$name.d")" exit_path)" return
    check "$name: read aside" "$(final_field "$WORK/$name.d" aside)" 1
    truth_check "$name" "$st" "$id" "$SIM_DIR/truth"
}
fail_case eperm 1
fail_case eio 5

mnt=$WORK/tmpfs
mkdir -p "$mnt"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=64k,mode=0700 cuptop-faults "$mnt" 2>/dev/null; then
    FAULT_CLEANUP_HOOK="umount '$mnt' 2>/dev/null"
    name=tmpfs64k
    SIM_DIR=$WORK/$name
    mkdir -p "$SIM_DIR"
    env CUPTOP_STORE="$mnt/store" CUDA_INJECTION64_PATH="$AGENT" CUPTOP_CUPTI_LIBRARY="$SIMLIB" \
        "$SIMAPP" --truth "$SIM_DIR/truth" --seconds 2 >"$SIM_DIR/out" 2>"$SIM_DIR/err"
    check "$name: the application's exit status" "$?" 0
    id=$(sessions "$mnt/store" | head -1)
    check "$name: verdict (ended, not crashed)" "$(verdict "$mnt/store" "$id")" "1 ended INCOMPLETE"
    "$CUPTOP" report --store "$mnt/store" "$id" >"$WORK/$name.report" 2>&1
    if grep -q 'process died' "$WORK/$name.report"; then
        fail "$name: the report says the process died"
    else
        pass "$name: the report does not say the process died"
    fi
    truth_check "$name" "$mnt/store" "$id" "$SIM_DIR/truth"
    umount "$mnt" && FAULT_CLEANUP_HOOK=
else
    skip_part "the 64 KiB tmpfs case: not root, or the mount was refused"
fi
finish
