#!/bin/sh
# test_guest_signals.sh - fault row 17: stop signals the application
# survives, and signals sent to `cuptop run` and the application both.
#
# A. The application's handler of SIGTERM, SIGINT or SIGHUP returns and the
#    process carries on (simdrive EXIT count: the handler counts and
#    returns; raise:SIG, then more work and 1.2 s).  The agent stops at the
#    signal (doc/agent.md, "Stop protocol"): the session ends there, COMPLETE
#    for what it covers, and says that what followed is out of scope:
#    `cuptop check` prints the scope line, `sessions --json` carries
#    continued_after_signal with the signal and the process's exit time,
#    and a note.  Before: "ended COMPLETE" with exit path signal and
#    nothing saying the rest of the run was not traced.
# B. `setsid cuptop run -- app`, then the signal sent to the process group
#    (kill -- -PGID: systemd, Slurm), to both pids (kill RUNPID APPPID), or
#    to cuptop run alone: the application's handler runs exactly once.
#    Before: cuptop run passed on every signal a process sent it, so the
#    application's handler ran twice for the first two.
. "${top_srcdir:?}/tests/faults/lib.sh"
need_sim
need_tools python3 setsid
DRIVE=$B/simdrive
[ -e "$DRIVE" ] || skip "$DRIVE not built"
export CUPTOPSIM_SEED=7 CUPTOPSIM_SCENARIO=clean CUPTOP_STOP_TIMEOUT_MS=20000

# ---- A: the application carries on after a handled stop signal ----------
for s in TERM INT HUP; do
    case $s in TERM) n=15 ;; INT) n=2 ;; HUP) n=1 ;; esac
    d=$WORK/cont-$s
    mkdir -p "$d"
    CUPTOP_STORE=$d/store "$DRIVE" "$SIMLIB" "$AGENT" "$d/truth" \
        "seq:ctx,emit:1000,raise:$s,emit:1000,sleep:1200" count >"$d/out" 2>"$d/err"
    check "SIG$s handled, the program carries on: exit status" "$?" 0
    check "SIG$s: the application's handler ran once" "$(val "$d/truth" host_handler_runs)" 1
    id=$(sessions "$d/store" | head -1)
    dump "$d/store" "$id" >"$d/dump" 2>&1
    check "SIG$s: the session ended at the signal" \
        "$(val "$d/dump" final.exit_path) $(val "$d/dump" final.exit_detail)" "signal $n"
    check "SIG$s: a note says the rest is not traced" \
        "$(grep -c "^note\..*handler of signal $n returned and the process carried on" "$d/dump")" 1
    "$CUPTOP" check --store "$d/store" "$id" >"$d/check" 2>&1
    check "SIG$s: cuptop check (COMPLETE for what it covers)" "$?" 0
    check "SIG$s: cuptop check says what followed is out of scope" \
        "$(grep -c "^  scope: the application handled signal $n at .* and carried on for [0-9.]* s more: .*not traced (out of scope, not lost)" "$d/check")" 1
    "$CUPTOP" sessions --store "$d/store" --json >"$d/sessions.json"
    python3 - "$d/sessions.json" "$n" >"$d/json.check" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))[0]
c = s.get("continued_after_signal")
ok = (c is not None and c["signal"] == int(sys.argv[2]) and c["process_exit_ns"] is not None
      and c["process_exit_ns"] - c["at_ns"] >= 1.0e9 and "out of scope" in c["text"])
print("ok" if ok else "bad: %r" % (c,))
PY
    check "SIG$s: sessions --json continued_after_signal (signal, >= 1.2 s untraced)" \
        "$(cat "$d/json.check")" ok
done

# ---- B: one signal, two recipients: delivered once ------------------------
# pending PID SIG: 1 while SIG is pending for PID (shared or main thread)
pending() {
    awk -v b="$2" '/^(ShdPnd|SigPnd):/ { v = v " " $2 } END { print v }' "/proc/$1/status" \
        2>/dev/null | while read -r p q; do
        echo $(((0x$p >> ($2 - 1) & 1) | (0x$q >> ($2 - 1) & 1)))
    done
}
for mode in group both run-only; do
    d=$WORK/fwd-$mode
    mkdir -p "$d"
    setsid "$CUPTOP" run --store "$d/store" -- "$DRIVE" "$SIMLIB" "$AGENT" "$d/truth" \
        seq:ctx,emit:1000,mark:ready,wait:go,emit:100 count >"$d/out" 2>"$d/err" &
    rpid=$!
    track $rpid
    if ! wait_until 60 test -e "$d/ready"; then
        fail "$mode: the application did not start"
        continue
    fi
    apid=$(ps -o pid= --ppid "$rpid" | tr -d ' ' | head -1)
    pgid=$(ps -o pgid= -p "$rpid" | tr -d ' ')
    case $mode in
    group) kill -TERM "-$pgid" ;;
    both) kill -TERM "$rpid" "$apid" ;;
    run-only) kill -TERM "$rpid" ;;
    esac
    # both have taken their copy (cuptop run's handler passes it on at
    # once); the first copy's protocol ended and the program carried on
    wait_until 60 sh -c "[ \"\$(pending $rpid 15)\" != 1 ]" 2>/dev/null
    wait_until 60 sh -c "'$CTL' dump '$d/store' \"\$('$CTL' sessions '$d/store' | head -1)\" | grep -q '^meta.continued_after_signal='"
    sleep 0.3   # room for a duplicate to arrive (it must not count)
    touch "$d/go"
    wait_pid "$rpid" 120
    check "$mode: cuptop run's exit status" "$WAIT_RC" 0
    check "$mode: the application's handler ran once" "$(val "$d/truth" host_handler_runs)" 1
done
finish
