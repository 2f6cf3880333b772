#!/bin/sh
# test_slow_disk.sh - fault row 7: a slow disk under the store (faultio.so
# delays every data.mdb write and sync by 100 ms) while the application
# produces at the simulator's maximum rate.  The consumer falls behind, so
# records are lost upstream: with the default queue as buffer requests the
# agent declines (pool exhausted -> CUPTI drops, cupti_dropped), with a
# small queue as queue_overflow.  Checked: the loss shows up in the
# per-second health rows, the verdict is INCOMPLETE and names the class,
# the application is unharmed (exit 0), and every delivered record is
# stored or counted (simulator truth).
. "${top_srcdir:?}/tests/faults/lib.sh"
need_sim
need_tools python3
fenv=$(faultio_env)

# slow_case NAME CLASS SECONDS-COLUMN [ENV...]
slow_case() {
    name=$1 class=$2 col=$3
    shift 3
    # shellcheck disable=SC2086
    sim_run "$name" $fenv FAULTIO_DELAY_US=100000 CUPTOP_BUFFER_SIZE=256K "$@" -- \
        --seconds 2 --max-rate --exit return
    check "$name: the application is unharmed" "$SIM_RC" 0
    st=$SIM_DIR/store
    id=$(sessions "$st" | head -1)
    [ -n "$id" ] || { fail "$name: no session"; return; }
    "$CTL" seconds "$st" "$id" >"$WORK/$name.sec"
    lossy=$(grep -c " $col=[1-9]" "$WORK/$name.sec")
    check_ge "$name: seconds with $col loss in the health rows" "$lossy" 1
    check "$name: verdict" "$(verdict "$st" "$id")" "1 ended INCOMPLETE"
    if grep -q "$class: [0-9]* records lost in [0-9]* s" "$WORK/verdict.out"; then
        pass "$name: the verdict names $class with its window"
    else
        fail "$name: the verdict does not name $class: $(cat "$WORK/verdict.out")"
    fi
    truth_check "$name" "$st" "$id" "$SIM_DIR/truth" --expect "$class" \
        --allow cupti_dropped,queue_overflow,declined
}

slow_case slow-declined cupti_dropped dropped
slow_case slow-overflow queue_overflow overflow CUPTOP_QUEUE=4
finish
