#!/bin/sh
# test_signal_pairs.sh - fault row 4b: two or more different stop signals
# (SIGINT, SIGTERM, SIGHUP, SIGQUIT) sent close together (0 and 1 ms apart)
# or while the stop protocol runs (50 ms apart, with a completion thread
# slow enough that the forced flush takes much longer than that), with and
# without the application's own handlers.  Issue 13 item 2: before the fix
# the second signal killed the application in the middle of the protocol
# (session "crashed", no final status).
# Checked, as for one signal (test_signals.sh): the process dies of one of
# the signals it was sent (128+N); the final status is written (exit path
# signal, a signal that was sent), the protocol complete, all five steps
# rc 0 in time; the session ended; the application's handler ran for the
# signal the process died of (its marker file).
. "${top_srcdir:?}/tests/faults/lib.sh"
need_sim
need_tools python3
[ -n "$SIM_DFL" ] || skip "env --default-signal (coreutils >= 8.31) is needed to un-ignore SIGINT in a background job"
ulimit -c 0 2>/dev/null   # SIGQUIT's default action dumps core

signum() {
    case $1 in INT) echo 2 ;; TERM) echo 15 ;; HUP) echo 1 ;; QUIT) echo 3 ;; esac
}
steps_ok() { grep -c '^step\..*rc:0 timed_out:0' "$1"; }
# sum of the steps' durations (us)
steps_us() { sed -n 's/^step\..* us:\([0-9]*\)$/\1/p' "$1" | awk '{ s += $1 } END { print s + 0 }'; }

# NAME GAP_S HANDLER(none|own) SIG...: the first signal, then GAP, then the
# others back to back
pair() {
    name=$1 gap=$2 h=$3
    shift 3
    hargs=""
    [ "$h" = own ] && hargs="--handler --handler-file $WORK/$name.marker"
    # slow=150: the completion thread takes 150 ms per buffer, so the forced
    # flush of the buffers the producer threads hold lasts several hundred ms
    # shellcheck disable=SC2086
    sim_start "$name" -- --seconds 60 --exit return --faults slow=150 $hargs \
        --ready-file "$WORK/$name.ready"
    if ! wait_until 60 test -s "$WORK/$name.ready" ||
        ! wait_until 60 sh -c "[ -n \"\$('$CTL' sessions '$SIM_DIR/store')\" ]"; then
        fail "$name: the application did not start"
        return
    fi
    sleep 0.3   # let it produce a little
    sent=""
    first=1
    for s in "$@"; do
        kill -s "$s" "$SIM_PID" 2>/dev/null
        sent="$sent $(signum "$s")"
        if [ "$first" = 1 ] && [ "$gap" != 0 ]; then
            sleep "$gap"
        fi
        first=0
    done
    wait_pid "$SIM_PID" 120
    rc=$WAIT_RC
    died=none
    for n in $sent; do
        [ "$rc" = $((128 + n)) ] && died=$n
    done
    if [ "$died" != none ]; then
        pass "$name: dies of a signal it was sent ($rc)"
    else
        fail "$name: exit status $rc, want 128 + one of$sent"
    fi
    st=$SIM_DIR/store
    id=$(sessions "$st" | head -1)
    [ -n "$id" ] || { fail "$name: no session"; return; }
    "$CTL" dump "$st" "$id" >"$WORK/$name.d"
    check "$name: final status written (exit path)" "$(final_field "$WORK/$name.d" exit_path)" signal
    detail=$(final_field "$WORK/$name.d" exit_detail)
    case " $sent " in
    *" $detail "*) pass "$name: final signal number is one that was sent ($detail)" ;;
    *) fail "$name: final signal number '$detail', want one of$sent" ;;
    esac
    check "$name: stop protocol complete" "$(final_field "$WORK/$name.d" protocol_complete)" 1
    check "$name: all five steps rc 0 in time" "$(steps_ok "$WORK/$name.d")" 5
    if [ "$gap" = 0.05 ]; then
        # the second signal came during the protocol, not after it
        check_ge "$name: the protocol lasted longer than the gap (us)" \
            "$(steps_us "$WORK/$name.d")" 100000
    fi
    v=$(verdict "$st" "$id")
    case $v in
    *" ended "*) pass "$name: session ended ($v)" ;;
    *) fail "$name: session state: $v" ;;
    esac
    if [ "$h" = own ] && [ "$died" != none ]; then
        check "$name: the application's handler ran for the signal it died of" \
            "$(head -1 "$WORK/$name.marker" 2>/dev/null)" "signal $died"
    fi
    [ -s "$SIM_DIR/out" ] && fail "$name: the application's stdout got output"
}

pair int-term-0 0 none INT TERM
pair int-term-1ms 0.001 own INT TERM
pair int-term-50ms 0.05 none INT TERM
pair term-int-0 0 own TERM INT
pair term-int-50ms 0.05 none TERM INT
pair int-hup-0 0 none INT HUP
pair int-hup-50ms 0.05 own INT HUP
pair hup-quit-50ms 0.05 none HUP QUIT
pair quit-term-0 0 own QUIT TERM
pair term-quit-50ms 0.05 own TERM QUIT
pair all-four-0 0 none INT TERM HUP QUIT
pair all-four-50ms 0.05 own HUP INT TERM QUIT
finish
