#!/bin/sh
# tmux_screens.sh - every screen of the monitor at 80x24 and 120x40 (and the
# sessions screen and the dashboard header at 40 columns): nothing that
# tells the user what to do is cut, no scale label covers a legend, no
# marker covers a clock label, no legend loses a kind, the help box keeps
# both borders.  On a store from tui-fill-store (a live running session,
# ended ones, one whose CUPTI failed to start, one unreadable).
set -u
. "${top_srcdir:-.}/tests/tui/tui_lib.sh"

cuptop="$top_builddir/cuptop"
fill="$top_builddir/tui-fill-store"
store="$TUI_TMP/store"

: > "$TUI_TMP/ids"   # before the loop reads it: the background job opens it later
"$fill" --store "$store" --seconds 40 --sessions 4 --live 0 --no-cupti > "$TUI_TMP/ids" &
TUI_PIDS="$TUI_PIDS $!"
end=$(( $(date +%s) + 60 ))
while [ "$(wc -l < "$TUI_TMP/ids")" -lt 5 ]; do
    [ "$(date +%s)" -lt "$end" ] || fail "tui-fill-store did not finish"
    sleep 0.2
done
complete=$(awk '$1 == "complete" {print $2}' "$TUI_TMP/ids")
running=$(awk '$1 == "running" {print $2}' "$TUI_TMP/ids")
nocupti=$(awk '$1 == "no_cupti" {print $2}' "$TUI_TMP/ids")
mkdir -m 700 -p "$store/20250101T000000-1"
head -c 65536 /dev/urandom > "$store/20250101T000000-1/data.mdb"
cd "$TUI_TMP" || exit 1

# help_borders WHERE: every row of the help box has both borders, in the
# columns of its corners (counted in characters, not bytes).
help_borders() {
    bad=$(tui_screen | python3 -c '
import sys
rows = sys.stdin.read().split("\n")
top = [i for i, r in enumerate(rows) if "\u250c" in r]
bot = [i for i, r in enumerate(rows) if "\u2514" in r]
if not top or not bot:
    print("no box"); sys.exit()
t, b = top[0], bot[0]
left, right = rows[t].index("\u250c"), rows[t].index("\u2510")
if b - t < 20:
    print("only %d rows" % (b - t - 1))
for r in rows[t + 1:b]:
    r = r.ljust(right + 1)
    if r[left] != "\u2502" or r[right] != "\u2502":
        print(r.strip()); break
')
    [ -z "$bad" ] || fail "$1: the help box lost a border: '$bad'"
}

# legend_kinds WHERE: the records/s legend names every kind the complete
# session collects (in full or short), none left out ("+N").
legend_kinds() {
    s=$(tui_screen)
    for k in "kernel|kern" "memcpy|cpy" "memset|set" "runtime|rt" "driver|drv" "overhead|ovh"; do
        echo "$s" | grep -Eq "(^| )($k) [0-9]" || fail "$1: kind '$k' missing from the records/s legend"
    done
    echo "$s" | grep -E '^(records/s|rec/s) ' | grep -Eq ' \+[0-9]' &&
        fail "$1: the records/s legend left kinds out"
    return 0
}

for size in 80x24 120x40; do
    w=${size%x*} h=${size#*x}
    tui_start_size "$w" "$h" "$cuptop" --store "$store"
    tui_wait "6 sessions" "sessions screen at $size"
    # Sessions: the COMMAND column has room; an unreadable session says why.
    tui_wait "COMMAND"
    cmdw=$(tui_screen | grep -F "$complete" | sed 's/.*COMPLETE *//' | wc -c)
    [ "$cmdw" -gt 15 ] || fail "$size: the COMMAND column is $cmdw characters wide"
    tui_screen | grep -q "UNREADABLE" || fail "$size: the unreadable session's verdict"
    tui_screen | grep -q "store dama" && fail "$size: a cut error as verdict"
    tui_check_layout "sessions $size"
    tui_keys F1
    tui_wait "States: running" "help at $size"
    help_borders "help $size"
    tui_keys Escape
    tui_wait_gone "States: running"

    # The complete session fits on screen: its dashboard, cursor at Home
    # (on the epoch mark, beside the first clock label).
    tui_keys '/' c o m p l e t e Enter
    tui_wait "filter: complete"
    tui_keys Enter
    tui_wait_re "^(records/s|rec/s) " "dashboard at $size"
    tui_wait_re "(kernel|kern) [0-9]" "records legend at $size"
    legend_kinds "dashboard $size"
    tui_check_layout "dashboard $size"
    # Home: the cursor goes to the oldest second, left of both clock
    # labels of the first column of panels (it stayed on the newest).
    tui_keys Home
    home_ok() {
        axis=$(tui_screen | grep -E '[0-9]{2}:[0-9]{2}:[0-9]{2}' | grep -E '(─|-){3}' | head -1)
        before=${axis%%^*}
        [ "$before" != "$axis" ] &&
            [ "$(echo "$before" | grep -oE '[0-9]{2}:[0-9]{2}:[0-9]{2}' | wc -l)" -lt 2 ]
    }
    tui_wait_until home_ok
    tui_check_layout "dashboard after Home $size"
    # Kind panel: the epoch table shows the pool; the suggestion is whole.
    tui_keys k
    tui_wait "POOL" "epoch table at $size"
    tui_screen | grep -Eq ' 1 +[A-Z.]{9} +[0-9hms]+ .* 8( |\*|$)' ||
        fail "$size: the epoch row does not show the pool of 8"
    tui_wait "Suggestion:"
    last=$(tui_screen | sed -n '/^Suggestion:/,/^F1/p' | grep -v '^F1' | sed 's/[[:space:]]*$//' |
           grep . | tail -1)
    case "$last" in
    *.) ;;
    *) fail "$size: the suggestion is cut: '$last'" ;;
    esac
    tui_check_layout "kinds $size"
    tui_keys Escape
    tui_wait_re "^(records/s|rec/s) "
    tui_keys Escape
    tui_wait "COMMAND"
    # Devices: from the sessions screen, back to it.
    tui_keys Escape a
    tui_wait "Devices:" "devices at $size"
    tui_screen | grep -q "1 live session " || fail "$size: '1 live session' (singular)"
    tui_keys Escape
    tui_wait "COMMAND" "Esc from devices back to the sessions screen"
    # The session whose CUPTI did not start shows no kind as on.
    tui_keys '/' "$nocupti" Enter
    tui_wait "filter: $nocupti"
    tui_keys Enter
    tui_wait "kinds none" "no kinds for the session whose CUPTI failed ($size)"
    tui_screen | grep -q "kinds kernel" && fail "$size: kinds shown on for a session without CUPTI"
    tui_keys k
    tui_wait "KIND" "kind panel of the session without CUPTI"
    tui_screen | grep -q '\[x\]' && fail "$size: a kind marked on for a session without CUPTI"
    tui_keys q
    st=$(tui_wait_exit)
    [ "$st" = 0 ] || fail "q should exit 0, got $st"
    tmux -L "$TUI_SOCK" kill-server >/dev/null 2>&1
done

# 40 columns: sessions and the dashboard header keep state and verdict.
tui_start_size 40 20 "$cuptop" --store "$store" --session "$running"
tui_wait_re "running +(INCOMPLETE|ok so far)" "the header's state and verdict at 40 columns"
tui_check_layout "dashboard 40"
tui_keys Escape
tui_wait "STATE"
tui_screen | grep -q "UNREADABLE" || fail "40 columns: the unreadable session's verdict is cut"
tui_screen | grep -Eq "^running +[0-9T-]+ +(INCOMPLETE|ok so far)" ||
    fail "40 columns: a session row lost its verdict"
tui_keys q
tui_wait_exit >/dev/null
tmux -L "$TUI_SOCK" kill-server >/dev/null 2>&1

# The demo (simulator): the banner and the suggestion are whole at 80x24.
b=$top_builddir
if [ -e "$b/libcuptop-agent.so" ] && [ -e "$b/libcuptop-simcupti.so" ] &&
   [ -e "$b/cuptop-simapp" ]; then
    for size in 80x24 120x40; do
        w=${size%x*} h=${size#*x}
        tui_start_size "$w" "$h" "$cuptop" demo --store "$TUI_TMP/demo-$size"
        tui_wait "callback" "demo dashboard at $size"
        # the banner: the rows between the header and "loss:", ending a sentence
        last=$(tui_screen | sed -n '2,/^loss:/p' | grep -v '^loss:' | sed 's/[[:space:]]*$//' |
               tail -1)
        case "$last" in
        *.) ;;
        *) fail "demo $size: the banner is cut: '$last'" ;;
        esac
        tui_joined | grep -q "Press k" || fail "demo $size: the banner's instruction is missing"
        tui_keys k
        tui_wait "Suggestion:" "demo kind panel at $size"
        tui_wait_re "^Suggestion: [A-Z]" "a suggestion"
        last=$(tui_screen | sed -n '/^Suggestion:/,/^F1/p' | grep -v '^F1' | sed 's/[[:space:]]*$//' |
               grep . | grep -v "^control request" | tail -1)
        case "$last" in
        *.) ;;
        *) fail "demo $size: the suggestion is cut: '$last'" ;;
        esac
        tui_check_layout "demo kinds $size"
        # the API record policy whole, or its name alone where a short
        # panel has no line for it (it was cut after the scope at 80x24)
        tui_screen | grep -Eq "API [a-z]+(, [0-9]+ call ids muted|: every call \(CUPTI cannot mute\)| {2}|\$)" ||
            fail "demo $size: the kind panel's API policy is cut: '$(tui_screen | grep 'API')'"
        [ "$size" = 80x24 ] || tui_screen | grep -Eq "API [a-z]+, [0-9]+ call ids muted" ||
            fail "demo $size: the kind panel's API policy is not whole: '$(tui_screen | grep 'API')'"
        tui_keys q
        tui_wait_exit >/dev/null
        tmux -L "$TUI_SOCK" kill-server >/dev/null 2>&1
    done
else
    skip_part "the demo: agent/simulator not built"
fi
parts_summary
echo "PASS"
