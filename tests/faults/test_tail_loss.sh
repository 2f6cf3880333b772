#!/bin/sh
# test_tail_loss.sh - fault row 5, second half: a stop that cannot drain
# in time (a slow disk under the store, a short stop watchdog) must report
# what it could not store as tail loss - exactly (every record the
# simulator delivered is stored or counted once) - and the verdict must be
# INCOMPLETE naming it.  Once failed (bug A, doc/reliability.md): the
# agent counted the abandoned consumer's batch as tail although it was
# committed later, and did not count the buffers left in its queue.
. "${top_srcdir:?}/tests/faults/lib.sh"
need_sim
need_tools python3

# tail loss: a slow disk and a short stop watchdog - the consumer cannot
# store the last batches in time; what it could not store is tail loss,
# counted exactly, and the verdict names it
fenv=$(faultio_env)
name=tail
# shellcheck disable=SC2086
sim_run "$name" $fenv FAULTIO_DELAY_US=300000 CUPTOP_STOP_TIMEOUT_MS=200 -- \
    --seconds 1 --exit return --destroy never
check "$name: the application's exit status" "$SIM_RC" 0
st=$SIM_DIR/store
id=$(sessions "$st" | head -1)
"$CTL" dump "$st" "$id" >"$WORK/$name.d"
tail=$(val "$WORK/$name.d" loss.tail)
check_ge "$name: tail loss counted" "$tail" 1
# the final status says what the loss rows say, and nothing stayed queued
check "$name: final tail_lost == tail loss rows" "$(final_field "$WORK/$name.d" tail_lost)" "$tail"
check "$name: buffers consumed (or counted) == completed" \
    "$(final_field "$WORK/$name.d" buffers_consumed)" "$(final_field "$WORK/$name.d" buffers_completed)"
check "$name: queue empty at close" \
    "$(sed -n 's/^step\.close=.*queue:\([0-9]*\).*/\1/p' "$WORK/$name.d")" 0
check "$name: verdict" "$(verdict "$st" "$id")" "1 ended INCOMPLETE"
grep -q 'tail' "$WORK/verdict.out" || fail "$name: the verdict does not name tail loss: $(cat "$WORK/verdict.out")"
truth_check "$name" "$st" "$id" "$SIM_DIR/truth" --expect tail --allow cupti_dropped,queue_overflow,store_refused
finish
