#!/bin/sh
# tmux_lost.sh - the monitor ends when its terminal goes away, from any
# screen or dialog (the mark-name prompt, the export chooser, the filter
# prompt), instead of spinning at 100% CPU; SIGTERM with a dialog open
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
    st=$(ps -o stat= -p "$1" 2>/dev/null) || return 0
    case "$st" in Z*) return 0 ;; esac
    return 1
}

# lost ARGS...: open the monitor with ARGS and note its pid.
lost() {
    tui_start_size 120 40 "$cuptop" --store "$store" "$@"
    tui_wait_file "$TUI_TMP/pid"
    pid=$(cat "$TUI_TMP/pid")
    TUI_PIDS="$TUI_PIDS $pid"
    tui_wait "F10" "the monitor"
}

# lost_kill WHAT: once the dialog WHAT is open, take the terminal away
# (tmux kill-server): the monitor must end.
lost_kill() {
    what=$1
    tui_wait "$what" "the dialog '$what'"
    tmux -L "$TUI_SOCK" kill-server >/dev/null 2>&1
    end=$(( $(date +%s) + 20 ))
    until gone "$pid"; do
        if [ "$(date +%s)" -ge "$end" ]; then
            ps -o pid,stat,pcpu,cmd -p "$pid" 2>/dev/null
            # where it is (when gdb is there): for the report
            command -v gdb >/dev/null 2>&1 &&
                timeout 30 gdb -p "$pid" -batch -ex bt 2>/dev/null | grep '^#' | head -20
            kill -9 "$pid" 2>/dev/null
            fail "the monitor kept running after its terminal went away ($what open)"
        fi
        sleep 0.2
    done
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
echo "SIGTERM with a prompt open: exit $st"
tmux -L "$TUI_SOCK" kill-server >/dev/null 2>&1

# cuptop demo: the same, and its simulated application goes too.
b=$top_builddir
if [ -e "$b/libcuptop-agent.so" ] && [ -e "$b/libcuptop-simcupti.so" ] &&
   [ -e "$b/cuptop-simapp" ]; then
    tui_start_size 120 40 "$cuptop" demo --store "$TUI_TMP/demo"
    tui_wait_file "$TUI_TMP/pid"
    pid=$(cat "$TUI_TMP/pid")
    TUI_PIDS="$TUI_PIDS $pid"
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
    echo "note: agent/simulator not built: the demo part was not run"
fi
echo "PASS"
