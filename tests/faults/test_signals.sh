#!/bin/sh
# test_signals.sh - fault row 4: SIGINT, SIGTERM and SIGHUP, with and
# without the application's own handler, raised by the application itself
# (at the end of its work) and sent from outside in the middle of its run.
# Checked: the process still dies of the signal (128+N); the stop protocol
# ran (final status "signal N", every step rc 0 in time); the application's
# handler ran (its marker file); the verdict (COMPLETE for a clean run);
# for the raised signal, every delivered record accounted for against the
# simulator's truth.  And an ignored SIGINT is left alone.
. "${top_srcdir:?}/tests/faults/lib.sh"
need_sim
need_tools python3
[ -n "$SIM_DFL" ] || skip "env --default-signal (coreutils >= 8.31) is needed to un-ignore SIGINT in a background job"

steps_ok() { grep -c '^step\..*rc:0 timed_out:0' "$1"; }

for sig in sigterm sigint sighup; do
    case $sig in sigterm) n=15 ;; sigint) n=2 ;; sighup) n=1 ;; esac
    for h in none own; do
        for how in raised sent; do
            name=$sig-$h-$how
            hargs=""
            [ "$h" = own ] && hargs="--handler --handler-file $WORK/$name.marker"
            if [ "$how" = raised ]; then
                # shellcheck disable=SC2086
                sim_run "$name" -- --seconds 0.5 --exit "$sig" $hargs
            else
                # shellcheck disable=SC2086
                sim_start "$name" -- --seconds 60 --exit return $hargs \
                    --ready-file "$WORK/$name.ready"
                if ! wait_until 60 test -s "$WORK/$name.ready" ||
                    ! wait_until 60 sh -c "[ -n \"\$('$CTL' sessions '$SIM_DIR/store')\" ]"; then
                    fail "$name: the application did not start"
                    continue
                fi
                sleep 0.3   # let it produce a little
                kill -s "$(echo "$sig" | tr a-z A-Z | sed 's/^SIG//')" "$SIM_PID"
                wait_pid "$SIM_PID" 120
                SIM_RC=$WAIT_RC
            fi
            check "$name: dies of the signal" "$SIM_RC" $((128 + n))
            st=$SIM_DIR/store
            id=$(sessions "$st" | head -1)
            [ -n "$id" ] || { fail "$name: no session"; continue; }
            "$CTL" dump "$st" "$id" >"$WORK/$name.d"
            check "$name: final exit path" "$(final_field "$WORK/$name.d" exit_path)" signal
            check "$name: final signal number" "$(final_field "$WORK/$name.d" exit_detail)" "$n"
            check "$name: stop protocol complete" "$(final_field "$WORK/$name.d" protocol_complete)" 1
            check "$name: all five steps rc 0 in time" "$(steps_ok "$WORK/$name.d")" 5
            if [ "$h" = own ]; then
                check "$name: the application's handler ran" \
                    "$(cat "$WORK/$name.marker" 2>/dev/null)" "signal $n"
            fi
            check "$name: verdict" "$(verdict "$st" "$id")" "0 ended COMPLETE"
            [ -s "$SIM_DIR/out" ] && fail "$name: the application's stdout got output"
            if [ "$how" = raised ]; then
                truth_check "$name" "$st" "$id" "$SIM_DIR/truth" --exit signal
            fi
        done
    done
done

# A signal the application ignores (nohup, a background job) is left alone:
# the application is not killed and ends normally, COMPLETE.
SIM_DFL=--ignore-signal=INT
sim_start ignored -- --seconds 2 --exit return --ready-file "$WORK/ign.ready"
SIM_DFL=--default-signal=INT,QUIT
if wait_until 60 test -s "$WORK/ign.ready"; then
    sleep 0.3
    kill -s INT "$SIM_PID"
fi
wait_pid "$SIM_PID" 120
check "ignored SIGINT: the application is not killed" "$WAIT_RC" 0
id=$(sessions "$SIM_DIR/store" | head -1)
check "ignored SIGINT: verdict" "$(verdict "$SIM_DIR/store" "$id")" "0 ended COMPLETE"
truth_check ignored "$SIM_DIR/store" "$id" "$SIM_DIR/truth" --exit ctx_destroy
finish
