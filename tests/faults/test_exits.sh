#!/bin/sh
# test_exits.sh - fault row 5: return from main, exit(), abort() and
# _exit(), with CUDA torn down before the agent's atexit (the usual case:
# stop at the last context's destruction), after it, or never.  Checked:
# the application's exit status is its own; the final status names the
# right path with a complete stop protocol and every delivered record
# accounted for (simulator truth); _exit leaves no final status and the
# session is crashed/INCOMPLETE, never COMPLETE.  Tail loss at stop:
# test_tail_loss.sh.
. "${top_srcdir:?}/tests/faults/lib.sh"
need_sim
need_tools python3

# exit_case NAME WANT_RC WANT_PATH SIMAPP-ARGS...
exit_case() {
    name=$1 want_rc=$2 want_path=$3
    shift 3
    sim_run "$name" -- --seconds 0.5 "$@"
    check "$name: exit status" "$SIM_RC" "$want_rc"
    st=$SIM_DIR/store
    id=$(sessions "$st" | head -1)
    [ -n "$id" ] || { fail "$name: no session"; return; }
    "$CTL" dump "$st" "$id" >"$WORK/$name.d"
    check "$name: final exit path" "$(final_field "$WORK/$name.d" exit_path)" "$want_path"
    check "$name: stop protocol complete" "$(final_field "$WORK/$name.d" protocol_complete)" 1
    check "$name: tail loss" "$(final_field "$WORK/$name.d" tail_lost)" 0
    check "$name: verdict" "$(verdict "$st" "$id")" "0 ended COMPLETE"
    truth_check "$name" "$st" "$id" "$SIM_DIR/truth" --exit "$want_path"
}

exit_case return 0 ctx_destroy --exit return
exit_case return-nodestroy 0 return --exit return --destroy never
# CUDA torn down in an atexit handler that runs before the agent's: the
# stop protocol runs at the last context's destruction
exit_case return-destroy-atexit 0 ctx_destroy --exit return --destroy atexit
exit_case exit 0 ctx_destroy --exit exit
exit_case exit-nodestroy 0 return --exit exit --destroy never
exit_case abort 134 abort --exit abort

# _exit: nothing can run, no final status: crashed (dead pid), INCOMPLETE
for d in before never; do
    name=_exit-$d
    sim_run "$name" -- --seconds 0.5 --exit _exit --destroy "$d"
    check "$name: exit status" "$SIM_RC" 0
    st=$SIM_DIR/store
    id=$(sessions "$st" | head -1)
    "$CTL" dump "$st" "$id" >"$WORK/$name.d"
    if [ "$d" = before ]; then
        # the last context was destroyed before _exit: the stop protocol
        # ran there, so this one has a final status and is complete
        check "$name: final exit path" "$(final_field "$WORK/$name.d" exit_path)" ctx_destroy
        check "$name: verdict" "$(verdict "$st" "$id")" "0 ended COMPLETE"
    else
        check "$name: no final status" "$(val "$WORK/$name.d" final)" none
        check "$name: verdict" "$(verdict "$st" "$id")" "1 crashed INCOMPLETE"
        grep -q 'crashed' "$WORK/verdict.out" ||
            fail "$name: cuptop check does not say crashed: $(cat "$WORK/verdict.out")"
    fi
done

finish
