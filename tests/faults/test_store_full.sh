#!/bin/sh
# test_store_full.sh - fault row 6: the store's map full (a tiny
# CUPTOP_MAP_MAX) and the disk full (a 2 MiB tmpfs when root may mount
# one, else faultio.so failing data.mdb writes with ENOSPC - the output
# says which ran).  Checked: refused writes are counted (store_refused,
# exactly: every delivered record stored or counted, simulator truth); the
# application runs to its normal end (exit 0, final truth); the verdict is
# INCOMPLETE and names store_refused with its time window; the final
# status and the stop protocol's steps are written even on the full disk.
. "${top_srcdir:?}/tests/faults/lib.sh"
need_sim
need_tools python3

# full_case NAME STORE-DIR [ENV...]
full_case() {
    name=$1 st=$2
    shift 2
    sim_run "$name" CUPTOP_STORE="$st" "$@" -- --seconds 1.5 --exit return --max-rate
    check "$name: the application ends normally" "$SIM_RC" 0
    check "$name: the application finished its work" "$(sed -n 's/^final //p' "$SIM_DIR/truth")" 1
    id=$(sessions "$st" | head -1)
    [ -n "$id" ] || { fail "$name: no session"; return; }
    "$CTL" dump "$st" "$id" >"$WORK/$name.d"
    check_ge "$name: refused records counted" "$(val "$WORK/$name.d" loss.store_refused)" 1
    v=$(verdict "$st" "$id")
    # the final accounting survives a full disk too: the agent allocates
    # its reserve on the disk ahead of data.mdb (doc/agent.md, finding C)
    # (the simulator tears CUDA down before main returns: ctx_destroy)
    check "$name: final exit path" "$(final_field "$WORK/$name.d" exit_path)" ctx_destroy
    for step in disable flush drain commit close; do
        grep -q "^step\.$step=" "$WORK/$name.d" || fail "$name: stop step $step not recorded"
    done
    check "$name: verdict" "$v" "1 ended INCOMPLETE"
    if grep -q 'store_refused: [0-9]* records lost in [0-9]* s \(between\|at\)' "$WORK/verdict.out"; then
        pass "$name: the verdict names store_refused with its window"
    else
        fail "$name: the verdict does not name store_refused with a window: $(cat "$WORK/verdict.out")"
    fi
    truth_check "$name" "$st" "$id" "$SIM_DIR/truth" --expect store_refused \
        --allow cupti_dropped,queue_overflow,declined,tail
    # what sessions says was stored is what the store holds, kind by kind:
    # a refused record is store_refused only (known.txt 29.5: the health
    # rows' kinds counted the refused records as records as well)
    "$CUPTOP" sessions --store "$st" --json >"$WORK/$name.json"
    got=$(python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))[0]
print(s["records"], " ".join(f"{k}={v}" for k, v in sorted(s["records_by_kind"].items()) if v))' \
        "$WORK/$name.json")
    want=$(python3 -c 'import sys, collections
c = collections.Counter()
for line in open(sys.argv[1]):
    k, _, v = line.strip().partition("=")
    f = k.split(".")
    if len(f) == 3 and f[0] == "records" and f[1] not in ("total", "named"):
        c[f[1]] += int(v)
print(sum(c.values()), " ".join(f"{k}={v}" for k, v in sorted(c.items()) if v))' "$WORK/$name.d")
    check "$name: sessions --json records by kind == the store's" "$got" "$want"
}

# map full: the map may not grow past 1 MiB
full_case mapfull "$WORK/mapfull.store" CUPTOP_MAP_MAX=1M

# disk full
mnt=$WORK/tmpfs
mkdir -p "$mnt"
if [ "${CUPTOP_FAULTS_NO_TMPFS:-0}" != 1 ] && [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=2m,mode=0700 cuptop-faults "$mnt" 2>/dev/null; then
    FAULT_CLEANUP_HOOK="umount '$mnt' 2>/dev/null"
    echo "disk full: a 2 MiB tmpfs"
    full_case diskfull "$mnt/store"
    umount "$mnt" && FAULT_CLEANUP_HOOK=
else
    echo "disk full: no tmpfs (not root or mount refused): faultio.so, data.mdb capped at 2 MiB"
    fenv=$(faultio_env)
    # shellcheck disable=SC2086
    full_case diskfull "$WORK/diskfull.store" $fenv FAULTIO_ENOSPC_AFTER=2097152
fi
finish
