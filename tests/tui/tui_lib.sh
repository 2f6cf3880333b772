# tui_lib.sh - helpers for the TUI's tmux tests (sourced).
#
# Each test runs its own tmux server on a private socket (-L), at a fixed
# size, polls capture-pane for expected text with a generous deadline, and
# always kills the server and its helpers on exit.

: "${top_builddir:=.}"
: "${top_srcdir:=.}"
command -v tmux >/dev/null 2>&1 || { echo "SKIP: tmux not installed"; exit 77; }
. "$top_srcdir/tests/skip_part.sh"   # skip_part, parts_summary

TUI_SOCK="cuptop-tui-$$-$(date +%s%N)"
TUI_TMP=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-tui.XXXXXX")
TUI_PIDS=""
TUI_DEADLINE=${TUI_DEADLINE:-60}
# Inside tmux the keys tmux sends match screen's terminfo, not xterm's.
TUI_TERM=screen-256color
infocmp "$TUI_TERM" >/dev/null 2>&1 || TUI_TERM=screen

tui_cleanup() {
    tmux -L "$TUI_SOCK" kill-server >/dev/null 2>&1 || true
    for p in $TUI_PIDS; do
        kill "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$TUI_TMP"
}
trap tui_cleanup EXIT
trap 'exit 1' INT TERM HUP

fail() {
    echo "FAIL: $*"
    echo "---- screen ----"
    tmux -L "$TUI_SOCK" capture-pane -p -t tui 2>/dev/null || true
    echo "----------------"
    exit 1
}

# tui_start CMD...: run CMD in a 100x30 window; its exit status goes to
# $TUI_TMP/exit when it ends.
tui_start() {
    tui_start_size 100 30 "$@"
}

# tui_start_size W H CMD...: the same at W x H.  The program's pid goes to
# $TUI_TMP/pid (the shell execs nothing: it runs CMD as its child).
tui_start_size() {
    w=$1 h=$2
    shift 2
    rm -f "$TUI_TMP/exit" "$TUI_TMP/pid"
    # A server killed just before may still be going away: try again.
    end=$(( $(date +%s) + TUI_DEADLINE ))
    until tmux -L "$TUI_SOCK" -f /dev/null new-session -d -s tui -x "$w" -y "$h" \
        "env LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=$TUI_TERM sh -c 'echo \$\$ > $TUI_TMP/pid; exec \"\$@\"' sh $*; echo \$? > $TUI_TMP/exit; sleep 600" \
        2>/dev/null && tmux -L "$TUI_SOCK" has-session -t tui 2>/dev/null; do
        [ "$(date +%s)" -lt "$end" ] || fail "tmux did not start a session"
        tmux -L "$TUI_SOCK" kill-server >/dev/null 2>&1
        sleep 0.2
    done
    tmux -L "$TUI_SOCK" set-option -t tui -g remain-on-exit on >/dev/null 2>&1 || true
}

# tui_resize W H: resize the window (older tmux: the pane).
tui_resize() {
    tmux -L "$TUI_SOCK" resize-window -t tui -x "$1" -y "$2" 2>/dev/null ||
        tmux -L "$TUI_SOCK" resize-pane -t tui -x "$1" -y "$2"
}

# tui_wait_re REGEX [WHAT]: poll until an extended regex matches a line.
tui_wait_re() {
    end=$(( $(date +%s) + TUI_DEADLINE ))
    while [ "$(date +%s)" -lt "$end" ]; do
        tui_screen | grep -Eq -- "$1" && return 0
        sleep 0.2
    done
    fail "timed out waiting for '${2:-$1}'"
}

# tui_wait_until CMD... : poll until CMD succeeds (for a state that is not
# one string on the screen, such as a figure that must change).
tui_wait_until() {
    end=$(( $(date +%s) + TUI_DEADLINE ))
    while [ "$(date +%s)" -lt "$end" ]; do
        "$@" && return 0
        sleep 0.2
    done
    fail "timed out waiting until: $*"
}

# tui_joined: the screen as one line (rows joined by a space, runs of
# spaces squeezed), for text that may wrap over rows.
tui_joined() { tui_screen | sed 's/[[:space:]]*$//' | tr '\n' ' ' | tr -s ' '; }

# tui_check_layout WHERE: what every screen must hold at any size -- no
# scale label over a legend (a '^' glued to text or right after a legend
# name) and no clock label on the time axis cut by a marker.
tui_check_layout() {
    s=$(tui_screen)
    bad=$(echo "$s" | grep -E '[^ ]\^[0-9]|(declined|outstanding|overhead|depth|high-water|capacity|p50|p99|max|kernel|memcpy|runtime|driver|dev[0-9]+|host|exact) \^' | head -1)
    [ -z "$bad" ] || fail "$1: a scale label overwrites a legend: '$bad'"
    # axis rows: every ':' belongs to a whole hh:mm:ss
    bad=$(echo "$s" | grep -E '(─|-){3}' | sed -E 's/[0-9]{2}:[0-9]{2}:[0-9]{2}//g' | grep ':' | head -1)
    [ -z "$bad" ] || fail "$1: a clock label on the time axis is cut: '$bad'"
    bad=$(echo "$s" | grep -E '(─|-){3}' | grep -E '[0-9]{2}:[0-9]{2}:[0-9]{2}[^ ─-]' | head -1)
    [ -z "$bad" ] || fail "$1: a marker is glued to a clock label: '$bad'"
}

tui_screen() { tmux -L "$TUI_SOCK" capture-pane -p -t tui; }
tui_keys() { tmux -L "$TUI_SOCK" send-keys -t tui "$@"; }

# tui_wait TEXT [WHAT]: poll until TEXT (a fixed string) is on the screen.
tui_wait() {
    end=$(( $(date +%s) + TUI_DEADLINE ))
    while [ "$(date +%s)" -lt "$end" ]; do
        tui_screen | grep -qF -- "$1" && return 0
        sleep 0.2
    done
    fail "timed out waiting for '${2:-$1}'"
}

# tui_wait_gone TEXT: poll until TEXT is no longer on the screen.
tui_wait_gone() {
    end=$(( $(date +%s) + TUI_DEADLINE ))
    while [ "$(date +%s)" -lt "$end" ]; do
        tui_screen | grep -qF -- "$1" || return 0
        sleep 0.2
    done
    fail "timed out waiting for '$1' to go away"
}

# tui_wait_exit: poll until the program ended; prints its exit status.
tui_wait_exit() {
    end=$(( $(date +%s) + TUI_DEADLINE ))
    while [ "$(date +%s)" -lt "$end" ]; do
        [ -s "$TUI_TMP/exit" ] && { cat "$TUI_TMP/exit"; return 0; }
        sleep 0.2
    done
    fail "the program did not exit"
}

# tui_wait_file PATH: poll until PATH exists and is not empty.
tui_wait_file() {
    end=$(( $(date +%s) + TUI_DEADLINE ))
    while [ "$(date +%s)" -lt "$end" ]; do
        [ -s "$1" ] && return 0
        sleep 0.2
    done
    fail "timed out waiting for file $1"
}
