#!/bin/sh
# tmux_lost.sh - the monitor ends when its terminal goes away, from any
# screen or dialog (the mark-name prompt, the export chooser, the filter
# prompt), within LOST_DEADLINE seconds and with exit status 0, while
# SIGCONT keeps arriving at the terminal's process group (what the kernel
# sends it when the pane's session leader exits; here at every moment
# instead of one): under LeakSanitizer a late SIGCONT cancelled the stop of
# the exit-time leak check's ptrace attach and the monitor spun in
# sched_yield forever (doc/tui.md, "Terminal").  SIGTERM with a dialog open
# ends it promptly with the terminal restored.  The same for `cuptop demo`
# (which also stops its simulated application).
set -u
. "${top_srcdir:-.}/tests/tui/tui_lib.sh"

cuptop="$top_builddir/cuptop"
fill="$top_builddir/tui-fill-store"
store="$TUI_TMP/store"
"$fill" --store "$store" --seconds 60 --sessions 2 > "$TUI_TMP/ids" ||
    fail "tui-fill-store failed"
complete=$(awk '$1 == "complete" {print $2}' "$TUI_TMP/ids")
cd "$TUI_TMP" || exit 1

# gone PID: the process has ended (a zombie counts as ended).
gone() {
    pst=$(ps -o stat= -p "$1" 2>/dev/null) || return 0
    case "$pst" in Z*) return 0 ;; esac
    return 1
}

LOST_DEADLINE=${LOST_DEADLINE:-10}

# The monitor runs under a shell that outlives the hangup and keeps its
# exit status (the pane's own shell dies of the SIGHUP).
printf '%s\n' "trap '' HUP" '"$@"' "echo \$? > '$TUI_TMP/status'" > "$TUI_TMP/keep.sh"

# child_of PID: sets pid to PID's child, if it has one yet.
child_of() {
    pid=$(ps -o pid= --ppid "$1" | tr -d ' ' | head -1)
    [ -n "$pid" ]
}

# start CMD...: run CMD in the pane under keep.sh; pid is CMD's, pgrp its
# process group (the terminal's foreground group).
start() {
    rm -f "$TUI_TMP/status"
    tui_start_size 120 40 sh "$TUI_TMP/keep.sh" "$@"
    tui_wait_file "$TUI_TMP/pid"
    keep=$(cat "$TUI_TMP/pid")
    TUI_PIDS="$TUI_PIDS $keep"
    tui_wait_until child_of "$keep"
    TUI_PIDS="$TUI_PIDS $pid"
    pgrp=$(ps -o pgid= -p "$pid" | tr -d ' ')
}

# lost ARGS...: open the monitor with ARGS.
lost() {
    start "$cuptop" --store "$store" "$@"
    tui_wait "F10" "the monitor"
}

# backtraces PID: where PID is (when gdb is there), and where its tracer
# is when it has one (gdb cannot attach to a process that is traced).
backtraces() {
    command -v gdb >/dev/null 2>&1 || return 0
    tracer=$(awk '$1 == "TracerPid:" {print $2}' "/proc/$1/status" 2>/dev/null)
    for p in "$1" ${tracer#0}; do
        echo "-- backtrace of $p"
        timeout 30 gdb -p "$p" -batch -ex 'thread apply all bt' 2>/dev/null |
            grep '^#' | head -20
    done
}

# lost_kill WHAT: once the dialog WHAT is open, take the terminal away
# (tmux kill-server) while SIGCONT keeps arriving at the terminal's process
# group (until the group is empty): the monitor must end within
# LOST_DEADLINE s, with exit status 0.
lost_kill() {
    what=$1
    tui_wait "$what" "the dialog '$what'"
    conts=""
    for _ in 1 2 3; do   # several senders: a short window is hit more often
        (while kill -s CONT -- "-$pgrp" 2>/dev/null; do :; done) &
        conts="$conts $!"
    done
    TUI_PIDS="$TUI_PIDS $conts"
    tmux -L "$TUI_SOCK" kill-server >/dev/null 2>&1
    end=$(( $(date +%s) + LOST_DEADLINE ))
    until gone "$pid"; do
        if [ "$(date +%s)" -ge "$end" ]; then
            kill $conts
            ps -o pid,stat,pcpu,cmd -p "$pid" 2>/dev/null
            backtraces "$pid"
            kill -9 "$pid" 2>/dev/null   # its tracer has PDEATHSIG
            fail "the monitor still ran ${LOST_DEADLINE} s after its terminal went away ($what open)"
        fi
        sleep 0.2
    done
    tui_wait_file "$TUI_TMP/status"
    st=$(cat "$TUI_TMP/status")
    [ "$st" = 0 ] ||
        fail "the monitor ended with status $st after its terminal went away ($what open)"
    echo "terminal lost with '$what' open: exit 0"
}

# The mark-name prompt on a dashboard.
lost --session "$complete"
tui_keys M
lost_kill "Mark name:"
# The export chooser (after storing a mark through the prompt).
lost --session "$complete"
tui_keys M
tui_wait "Mark name:"
tui_keys Enter
tui_wait "stored"
tui_keys e
lost_kill "jsonl"
# The filter prompt on the sessions screen.
lost
tui_keys /
lost_kill "Filter:"

# SIGTERM with the prompt open: ends promptly, terminal restored (the
# alternate screen is left, so the prompt is no longer on the pane).
tui_start_size 120 40 "$cuptop" --store "$store"
tui_wait_file "$TUI_TMP/pid"
pid=$(cat "$TUI_TMP/pid")
TUI_PIDS="$TUI_PIDS $pid"
tui_wait "F10"
tui_keys /
tui_wait "Filter:"
kill -TERM "$pid"
st=$(tui_wait_exit)
tui_wait_gone "Filter:"
gone "$pid" || fail "SIGTERM did not end the monitor"
[ "$st" = 0 ] || fail "SIGTERM with a prompt open: exit status $st, not 0"
echo "SIGTERM with a prompt open: exit $st"
tmux -L "$TUI_SOCK" kill-server >/dev/null 2>&1

# cuptop demo: the same, and its simulated application goes too.
b=$top_builddir
if [ -e "$b/libcuptop-agent.so" ] && [ -e "$b/libcuptop-simcupti.so" ] &&
   [ -e "$b/cuptop-simapp" ]; then
    start "$cuptop" demo --store "$TUI_TMP/demo"
    tui_wait "callback" "the demo's dashboard"
    app=$(ls "$TUI_TMP/demo" | sed -n 's/.*-\([0-9][0-9]*\)$/\1/p' | head -1)
    [ -n "$app" ] && TUI_PIDS="$TUI_PIDS $app"
    tui_keys M
    lost_kill "Mark name:"
    if [ -n "$app" ]; then
        end=$(( $(date +%s) + 20 ))
        until gone "$app"; do
            [ "$(date +%s)" -lt "$end" ] || fail "the demo's application kept running"
            sleep 0.2
        done
    fi
else
    skip_part "the demo: agent/simulator not built"
fi
parts_summary
echo "PASS"
