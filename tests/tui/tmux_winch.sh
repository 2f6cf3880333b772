#!/bin/sh
# tmux_winch.sh - a resize while the monitor starts is not lost (issue 30).
# ncurses' newterm reads the terminal's size, then installs its SIGWINCH
# handler; a resize between the two reaches a process that still ignores
# SIGWINCH.  winch_late.so (preloaded) resizes the pane from 100x30 to
# 80x24 right then.  The monitor must draw at 80x24: the kind panel's
# suggestion (5 rows from the bottom) shown, its footer on the pane's last
# row.  Before, it drew at 100x30 until the next resize, its lowest rows
# lost below the pane and the suggestion with them (starve_tmux.sh failed
# so in CI: its resize races the monitor's start).
set -u
. "${top_srcdir:-.}/tests/tui/tui_lib.sh"

b=$(cd "$top_builddir" && pwd)
[ -e "$b/winch_late.so" ] || { echo "SKIP: $b/winch_late.so not built"; exit 77; }
"$b/tests/model/starve_store" "$TUI_TMP/store" >"$TUI_TMP/ids" || fail "starve_store"
id=$(sed -n 's/^short //p' "$TUI_TMP/ids")
[ -n "$id" ] || fail "no short session"
printf '%s\n' "#!/bin/sh" "tmux -L '$TUI_SOCK' resize-window -t tui -x 80 -y 24 &&" \
    "    : >'$TUI_TMP/resized'" >"$TUI_TMP/resize.sh"
chmod +x "$TUI_TMP/resize.sh"
# the preload is not sanitized: an ASan monitor is told to accept it
tui_start env LD_PRELOAD="$b/winch_late.so" CUPTOP_TEST_WINCH_CMD="$TUI_TMP/resize.sh" \
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
    "$b/cuptop" --store "$TUI_TMP/store" --session "$id"
tui_wait "callback latency" "the dashboard"
[ -e "$TUI_TMP/resized" ] || fail "winch_late.so did not resize at the handler's install"
size=$(tmux -L "$TUI_SOCK" display -p -t tui '#{pane_width}x#{pane_height}')
[ "$size" = 80x24 ] || fail "the pane is $size, not 80x24"
echo "ok   resized to 80x24 between newterm's size and its SIGWINCH handler"
tui_keys k
tui_wait "Suggestion: Raise the pool 2 -> 36 buffers" "the suggestion at 80x24"
tui_screen | sed -n 24p | grep -q 'F10Quit' ||
    fail "the kind panel's footer is not on the last row of 24"
echo "ok   the kind panel drawn at 80x24: the suggestion and the footer shown"
tui_keys q
st=$(tui_wait_exit)
[ "$st" = 0 ] || fail "q should exit 0, got $st"
echo PASS
