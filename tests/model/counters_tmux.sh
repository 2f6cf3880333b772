#!/bin/sh
# counters_tmux.sh - the monitor's loss counters are the verdict's: on a
# session whose losses the health rows do not hold (exact loss rows beyond
# a row's counter, a second with loss rows only, a tail the final status
# knows of beyond its rows; starve_store's "merged"), every class on the
# dashboard's "loss:" line says what `cuptop report` says (issue 27 item 12,
# issue 30 item 2).  The test polls the screen, never sleeps for a result.
set -u
. "${top_srcdir:-.}/tests/tui/tui_lib.sh"

b=$top_builddir
store="$TUI_TMP/store"
"$b/tests/model/starve_store" "$store" >"$TUI_TMP/ids" || fail "starve_store"
id=$(sed -n 's/^merged //p' "$TUI_TMP/ids")
[ -n "$id" ] || fail "no merged session"
"$b/cuptop" report --store "$store" "$id" >"$TUI_TMP/report" 2>&1
[ $? = 1 ] || fail "report: exit status not 1 (INCOMPLETE)"
# "Losses by class": NAME COUNT, one a line, up to the next blank line
sed -n '/^Losses by class$/,/^$/p' "$TUI_TMP/report" |
    awk 'NF >= 2 && $2 ~ /^[0-9]+$/ { print $1, $2 }' >"$TUI_TMP/classes"
[ "$(wc -l <"$TUI_TMP/classes")" -ge 8 ] || { cat "$TUI_TMP/report"; fail "report: no loss classes"; }
for want in "cupti_dropped 45" "declined 20" "tail 19"; do
    grep -qx "$want" "$TUI_TMP/classes" || fail "report: '$want' not in $(tr '\n' ';' <"$TUI_TMP/classes")"
done

tui_start_size 160 40 "$b/cuptop" --store "$store" --session "$id"
tui_wait "callback latency" "the dashboard"
tui_wait "loss:" "the loss line"
# the buffers panel counts buffer requests: named apart from the loss
# line's "declined", which counts records (issue 27, monitor text)
tui_wait "requests declined" "the buffers panel's declined requests, named apart"
# the dashboard must show every class with the report's count
while read -r name count; do
    tui_wait_until sh -c "tmux -L '$TUI_SOCK' capture-pane -p -t tui | grep -q -- ' $name $count\\( \\|\$\\)'"
    echo "ok   $name $count on the dashboard, as in the report"
done <"$TUI_TMP/classes"
# small terminals: a class that finds no room is counted (+N), never cut
# ("con" for conflict at 60x15)
for size in "60 15" "80 24" "40 10"; do
    tui_resize $size
    tui_wait_re "^loss: cupti_dropped" "the loss line at $size"
    # the classes with a loss come first: tail 19 is shown even at 40x10
    tui_wait "tail 19" "the tail at $size"
    tui_screen | grep -A2 '^loss:' | grep -Eq '(^| )(c|co|con|conf|confl|confli|conflic|ta|tai|ze|zer|zero|zero_|zero_t|st|sto|stor|store|store_|pa|par|pars|parse|parse_|qu|que|queu|queue|queue_)$' &&
        fail "a loss class is cut at $size: $(tui_screen | grep -A2 '^loss:')"
    tui_screen | grep -A2 '^loss:' | grep -q '+[0-9]' ||
        [ "$size" = "80 24" ] || fail "the classes without room are not counted at $size"
    echo "ok   loss line at $size: $(tui_screen | grep -A2 '^loss:' | tr -s ' ' | tr '\n' '|')"
done
tui_keys q
st=$(tui_wait_exit)
[ "$st" = 0 ] || fail "q should exit 0, got $st"
echo PASS
