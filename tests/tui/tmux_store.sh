#!/bin/sh
# tmux_store.sh - the live monitor end to end, on a store filled by
# tui-fill-store (running with a live writer, complete, incomplete,
# crashed): states, dashboard drops, help, kind toggle acknowledged,
# resize, a mark made and exported, q quits with 0; bad stores exit 2.
set -u
. "${top_srcdir:-.}/tests/tui/tui_lib.sh"

cuptop="$top_builddir/cuptop"
fill="$top_builddir/tui-fill-store"
store="$TUI_TMP/store"

# ---- Unreadable stores: a clear message and exit 2, no terminal needed.
"$cuptop" top --store "$TUI_TMP/nope" >"$TUI_TMP/out" 2>&1
[ $? -eq 2 ] || fail "missing --store dir should exit 2"
grep -q "no store" "$TUI_TMP/out" || fail "no message for a missing store: $(cat "$TUI_TMP/out")"
"$cuptop" top --bogus >"$TUI_TMP/out" 2>&1
[ $? -eq 2 ] || fail "unknown option should exit 2"
mkdir -m 700 -p "$TUI_TMP/bad/20250101T000000-1"
head -c 65536 /dev/urandom > "$TUI_TMP/bad/20250101T000000-1/data.mdb"
"$cuptop" top --store "$TUI_TMP/bad" --session 20250101T000000-1 >"$TUI_TMP/out" 2>&1
[ $? -eq 2 ] || fail "a corrupt session should exit 2: $(cat "$TUI_TMP/out")"
[ -s "$TUI_TMP/out" ] || fail "no message for a corrupt session"

# ---- A store with one session of each state; the running one stays live.
: > "$TUI_TMP/ids"   # before the loop reads it: the background job opens it later
"$fill" --store "$store" --seconds 3600 --sessions 4 --live 0 > "$TUI_TMP/ids" &
TUI_PIDS="$TUI_PIDS $!"
end=$(( $(date +%s) + 60 ))
while [ "$(wc -l < "$TUI_TMP/ids")" -lt 4 ]; do
    [ "$(date +%s)" -lt "$end" ] || fail "tui-fill-store did not finish"
    sleep 0.2
done
running=$(awk '$1 == "running" {print $2}' "$TUI_TMP/ids")
crashed=$(awk '$1 == "crashed" {print $2}' "$TUI_TMP/ids")

cd "$TUI_TMP" || exit 1
tui_start "$cuptop" --store "$store"
tui_wait "4 sessions" "sessions screen"
tui_screen | grep -F "$crashed" | grep -q "crashed" || fail "crashed session not shown as crashed"
tui_screen | grep -F "$running" | grep -q "running" || fail "running session not shown as running"
tui_screen | grep -q "^complete .*COMPLETE" || fail "complete session"
tui_screen | grep -q "^incomplete .*INCOMPLETE" || fail "incomplete session"
tui_screen | grep -q $'\033' && fail "an escape sequence reached the screen"

# Help opens with F1 and ?, closes with Esc; it names every key (I too).
tui_keys F1
tui_wait "Kind panel" "help (F1)"
tui_screen | grep -q "I invert" || fail "the help does not name I (invert the sort)"
tui_keys Escape
tui_wait_gone "Kind panel"
tui_keys '?'
tui_wait "Kind panel" "help (?)"
tui_keys Escape
tui_wait_gone "Kind panel"

# Sort and filter.
tui_keys '/'
tui_wait "Filter:"
tui_keys c r a s h Enter
tui_wait "filter: crash"
tui_screen | grep -qF "$running" && fail "filter kept a non-matching session"
# '/' again starts a new filter (it used to append to the old one)
tui_keys '/'
tui_wait "Filter:"
tui_keys r u n Enter
tui_wait "filter: run" "a new filter"
tui_screen | grep -q "filter: crashrun" && fail "'/' appended to the old filter"
tui_wait "$running"
tui_keys Escape
tui_wait "$running"

# Open the running session: the dashboard shows drops (live: kernel on).
tui_keys Home Enter
tui_wait "drops" "dashboard"
tui_wait "dev0" "drops by device"
tui_wait "est. by kind: kernel" "per-kind estimates"
tui_screen | grep -q "cupti_dropped" || fail "loss-class counters missing"

# Resize while live: no crash, still drawing.
tmux -L "$TUI_SOCK" resize-window -t tui -x 80 -y 24 2>/dev/null ||
    tmux -L "$TUI_SOCK" resize-pane -t tui -x 80 -y 24
tui_wait "drops"
# the whole help fits 80x24 (first and last lines shown)
tui_keys F1
tui_wait "States: running" "the help's last line at 80x24"
tui_screen | grep -q "cuptop - CUPTI activity trace loss monitor" || fail "help title cut at 80x24"
tui_keys Escape
tui_wait_gone "States: running"
tmux -L "$TUI_SOCK" resize-window -t tui -x 160 -y 50 2>/dev/null ||
    tmux -L "$TUI_SOCK" resize-pane -t tui -x 160 -y 50
tui_wait "store commit" "all panels at 160x50"
tmux -L "$TUI_SOCK" resize-window -t tui -x 30 -y 8 2>/dev/null || true
tui_wait "too small"
tmux -L "$TUI_SOCK" resize-window -t tui -x 100 -y 30 2>/dev/null ||
    tmux -L "$TUI_SOCK" resize-pane -t tui -x 100 -y 30
tui_wait "drops"

# Kind panel: turn kernel off; pending, then applied by the live writer,
# and the drops stop (the counter line says so through the suggestion).
tui_keys k
tui_wait "KIND" "kind panel"
tui_keys Home ' '
tui_wait "pending" "control request pending"
tui_wait "applied" "control request applied"
# the status line follows: no stale "(pending)" once the agent applied it
tui_wait "applied: kernel off" "the status line says the request was applied"
tui_wait_gone "(pending)"
tui_wait "No losses now" "drops stopped after narrowing"
tui_wait "baseline" "the new zero-drop epoch marked as baseline"
# at 100 columns the epochs' kind lists do not fit in full: letters, never
# a list cut in the middle (issue 27, monitor text)
tui_wait "KCSRD.O.." "the epochs' kinds as letters"
tui_screen | grep -Eq '[a-z]+,[a-z]+,[a-z]+,[a-z]+,[a-z]* ' &&
    fail "an epoch's kind list is cut: $(tui_screen | grep -E '[a-z]+,[a-z]+,[a-z]+,')"
tui_keys Escape
tui_wait "callback latency"

# A mark: start, move, end, name it; then export it.
tui_keys Left Left m Left Left Left M
tui_wait "Mark name:"
# typing replaces the prefilled default (it used to append: mark-1window1)
tui_keys w i n d o w 1 Enter
tui_wait "mark 'window1' stored"
tui_keys e
tui_wait "jsonl" "format chooser"
tui_keys Down Enter
tui_wait "Export to:"
tui_keys C-u "$TUI_TMP/out.jsonl" Enter
if "$cuptop" export --help 2>&1 | grep -q "not built yet"; then
    # export_run is the export issue's; until it lands only the dialog runs.
    tui_wait "export failed" "export result"
    skip_part "the exported file: export_run not built yet"
else
    tui_wait "exported 'window1'"
    tui_wait_file "$TUI_TMP/out.jsonl"
    grep -q . "$TUI_TMP/out.jsonl" || fail "empty export"
    # Again onto the same file: the monitor asks (it has no --force).
    : > "$TUI_TMP/out.jsonl"
    for answer in n y; do
        tui_keys e
        tui_wait "jsonl" "format chooser"
        tui_keys Down Enter
        tui_wait "Export to:"
        tui_keys C-u "$TUI_TMP/out.jsonl" Enter
        tui_wait "exists: overwrite it?" "the overwrite question"
        tui_keys "$answer"
        if [ "$answer" = n ]; then
            tui_wait "export cancelled" "no overwrite on n"
            [ -s "$TUI_TMP/out.jsonl" ] && fail "n overwrote the file"
        else
            tui_wait "exported 'window1'" "overwritten on y"
            tui_wait_file "$TUI_TMP/out.jsonl"
        fi
        tui_screen | grep -q -- "--force" && fail "the monitor told the user to use --force"
    done
fi

tui_keys q
st=$(tui_wait_exit)
[ "$st" = 0 ] || fail "q should exit 0, got $st"
parts_summary
echo "PASS"
