#!/bin/sh
# starve_tmux.sh - pool starvation, short (2 lossy seconds of 10) and
# sustained (all 10), on sessions written by starve_store: 2 threads, a
# pool of 2 at its limit, the queue empty, every buffer consumed.  Both
# `cuptop report` and the monitor's suggestion line must say to raise the
# pool (to 36: 32 + 2 per thread), never to narrow (issue 12).  The
# monitor runs at 80x24; the test polls the screen, never sleeps.
set -u
. "${top_srcdir:-.}/tests/tui/tui_lib.sh"

b=$top_builddir
store="$TUI_TMP/store"
"$b/tests/model/starve_store" "$store" >"$TUI_TMP/ids" || fail "starve_store"
for which in short sustained; do
    id=$(sed -n "s/^$which //p" "$TUI_TMP/ids")
    [ -n "$id" ] || fail "no $which session"
    "$b/cuptop" report --store "$store" "$id" >"$TUI_TMP/$which.report" 2>&1
    [ $? = 1 ] || fail "report $which: exit status not 1 (INCOMPLETE)"
    grep -A1 '^Advice$' "$TUI_TMP/$which.report" | grep -q '^  1\. Raise the pool from 2 to 36 buffers' ||
        { cat "$TUI_TMP/$which.report"; fail "report $which: the pool is not raised first"; }
    grep -q '^     rerun: CUPTOP_POOL=36 ' "$TUI_TMP/$which.report" ||
        fail "report $which: no rerun setting"
    grep -q 'Narrow the kinds' "$TUI_TMP/$which.report" && fail "report $which: advises narrowing"

    # a fresh tmux server for each session: wait until the last one is gone
    rm -f "$TUI_TMP/exit"
    tmux -L "$TUI_SOCK" kill-server >/dev/null 2>&1 || true
    end=$(( $(date +%s) + TUI_DEADLINE ))
    while tmux -L "$TUI_SOCK" has-session -t tui >/dev/null 2>&1; do
        [ "$(date +%s)" -lt "$end" ] || fail "the previous tmux server does not end"
        sleep 0.2
    done
    tui_start "$b/cuptop" --store "$store" --session "$id"
    until tmux -L "$TUI_SOCK" has-session -t tui >/dev/null 2>&1; do
        [ "$(date +%s)" -lt "$end" ] || fail "tmux did not start for the $which session"
        tui_start "$b/cuptop" --store "$store" --session "$id"
        sleep 0.2
    done
    tmux -L "$TUI_SOCK" resize-window -t tui -x 80 -y 24 2>/dev/null ||
        tmux -L "$TUI_SOCK" resize-pane -t tui -x 80 -y 24
    tui_wait "callback latency" "the dashboard of the $which session"
    tui_keys k
    tui_wait "Suggestion: Raise the pool 2 -> 36 buffers" "the $which session's suggestion"
    tui_screen | grep -q "Narrow" && fail "monitor: $which starvation suggests narrowing"
    tui_keys q
    st=$(tui_wait_exit)
    [ "$st" = 0 ] || fail "q should exit 0, got $st"
    echo "ok   $which starvation: raise the pool, in report and in the monitor"
done
echo PASS
