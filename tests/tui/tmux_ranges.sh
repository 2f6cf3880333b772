#!/bin/sh
# tmux_ranges.sh - NVTX ranges on the dashboard, end to end: a store filled
# by tui-fill-store --ranges (its "range ..." lines are the truth), r picks
# the name (hostile names shown sanitised), s jumps to the slowest, n / N
# step in time, each checked against the truth's start times; w makes a
# mark of the slowest whose stored window (cuptop export --mark) is that
# range's exactly, e exports it; the help names the keys; a live session's
# new ranges appear; a session without ranges (and one of schema 1, without
# the table) says so and nothing breaks.
set -u
. "${top_srcdir:-.}/tests/tui/tui_lib.sh"

cuptop="$top_builddir/cuptop"
fill="$top_builddir/tui-fill-store"
store="$TUI_TMP/store"

"$fill" --store "$store" --seconds 600 --sessions 2 --ranges > "$TUI_TMP/ids" ||
    fail "tui-fill-store failed"
with=$(awk '$1 == "complete" {print $2}' "$TUI_TMP/ids")
without=$(awk '$1 == "running" {print $2}' "$TUI_TMP/ids")
[ -n "$with" ] && [ -n "$without" ] || fail "no sessions: $(cat "$TUI_TMP/ids")"

# The truth: the "step" instances in time order (number, start, end).
awk '$1 == "range" && $3 == "step" {print $4, $5}' "$TUI_TMP/ids" | sort -n |
    awk '{print NR, $1, $2}' > "$TUI_TMP/steps"
nsteps=$(wc -l < "$TUI_TMP/steps")
nclosed=$(awk '$3 != 0' "$TUI_TMP/steps" | wc -l)
[ "$nsteps" -gt 3 ] || fail "too few steps in the truth"
# the slowest closed one, and what the monitor should say of instance N
slow=$(awk '$3 != 0 {d = $3 - $2; if (d > best) {best = d; n = $1}} END {print n}' "$TUI_TMP/steps")
start_of() { awk -v n="$1" '$1 == n {print $2}' "$TUI_TMP/steps"; }
end_of() { awk -v n="$1" '$1 == n {print $3}' "$TUI_TMP/steps"; }
# hh:mm:ss.mmm in UTC (the monitor runs with TZ=UTC)
clock_of() {
    ns=$(start_of "$1")
    printf '%s.%03d' "$(date -u -d "@$((ns / 1000000000))" +%H:%M:%S)" $(( (ns / 1000000) % 1000 ))
}

cd "$TUI_TMP" || exit 1
tui_start env TZ=UTC "$cuptop" --store "$store" --session "$with"
tui_wait "drops" "dashboard of the session with ranges"

# r: the chooser lists the names; the hostile one is sanitised.
tui_keys r
tui_wait "NVTX ranges (3)" "the range chooser"
tui_screen | grep -q "phase" || fail "chooser: no 'phase'"
tui_screen | grep -q "step " || fail "chooser: no 'step'"
# step's count is its closed ranges, as cuptop ranges' COUNT; the open one apart
tui_screen | grep -Eq "step +$nclosed x [^|]* \+1 open" ||
    fail "chooser: step is not '$nclosed x ... +1 open': $(tui_screen | grep 'step ')"
tui_screen | grep -qF "?[31mevil?" || fail "chooser: the hostile name is not shown sanitised"
tui_screen | grep -q $'\033' && fail "an escape sequence reached the screen"
# sorted by total time: phase (180 s) first, then step
first=$(tui_screen | grep -oE ' (phase|step) ' | head -1)
[ "$first" = " phase " ] || fail "chooser: phase (the largest total) is not first"
tui_keys Down Enter
tui_wait "nvtx step: $nclosed ranges +1 open" "the lane's line for step"
tui_check_layout "with the lane"
# 80x24 keeps all six panels with the lane
tui_resize 80 24
tui_wait "store commit" "six panels and the lane at 80x24"
tui_wait "nvtx step:"
tui_check_layout "80x24 with the lane"
tui_resize 100 30
tui_wait "nvtx step:"

# s: the slowest, with its number and start time (cursor moved there).
tui_keys s
tui_wait "'step' #$slow of $nsteps at $(clock_of "$slow"), 2.4s (slowest #1 of $nclosed)" \
    "the slowest step"
tui_wait "| #$slow $(clock_of "$slow") 2.4s" "the lane shows the selection"
tui_screen | grep -q "━" || fail "the lane draws no range"
# n and N: the neighbours in time, then back
next=$((slow + 1))
tui_keys n
tui_wait "'step' #$next of $nsteps at $(clock_of "$next")" "n: the next step"
tui_keys N N
prev=$((slow - 1))
tui_wait "'step' #$prev of $nsteps at $(clock_of "$prev")" "N N: the step before the slowest"
# the first one, and nothing before it
tui_keys Home n
tui_wait "'step' #1 of $nsteps at $(clock_of 1)" "n from the oldest second: the first step"
tui_keys N
tui_wait "'step': no earlier instance" "N before the first"
# s twice: the second slowest
tui_keys s s
tui_wait "(slowest #2 of $nclosed)" "s again: the next slowest"

# w on the slowest (n breaks the chain of s): a mark whose window is the
# range's, ready for e.
tui_keys n s
tui_wait "(slowest #1 of $nclosed)"
tui_keys w
tui_wait "Mark name:" "the mark prompt"
tui_wait "step-$slow" "the default mark name"
tui_keys Enter
tui_wait "mark 'step-$slow' stored" "the range mark stored"
"$cuptop" export --store "$store" "$with" --mark "step-$slow" --format jsonl \
    -o "$TUI_TMP/mark.jsonl" > "$TUI_TMP/export.out" 2>&1 ||
    fail "export --mark step-$slow: $(cat "$TUI_TMP/export.out")"
want="\"window\":{\"from_ns\":$(start_of "$slow"),\"to_ns\":$(end_of "$slow")}"
head -1 "$TUI_TMP/mark.jsonl" | grep -qF "$want" ||
    fail "the mark's window is not the range's ($want): $(head -c 400 "$TUI_TMP/mark.jsonl")"
# e exports it from the monitor
tui_keys e
tui_wait "Export 'step-$slow' as" "e offers the range mark"
tui_keys Down Enter
tui_wait "Export to:"
tui_keys C-u "$TUI_TMP/e.jsonl" Enter
tui_wait "exported 'step-$slow'" "the range mark exported"
tui_wait_file "$TUI_TMP/e.jsonl"
head -1 "$TUI_TMP/e.jsonl" | grep -qF "$want" || fail "e exported another window"

# The help names the keys.
tui_keys F1
tui_wait "choose an NVTX range name" "help: r"
# (polled: a capture may catch the box half drawn on a loaded machine)
tui_wait "n N       next / previous range" "help: n N"
tui_wait "slowest range" "help: s"
tui_wait "w         mark the range" "help: w"
tui_keys Escape
tui_wait_gone "choose an NVTX range name"

# r again: hide the ranges; the lane goes.
tui_keys r
tui_wait "(hide the ranges)"
tui_keys End Enter
tui_wait "NVTX ranges hidden"
tui_wait_gone "nvtx step:"

tui_keys q
st=$(tui_wait_exit)
[ "$st" = 0 ] || fail "q should exit 0, got $st"

# A session without ranges: every range key says so, nothing breaks.
tui_start env TZ=UTC "$cuptop" --store "$store" --session "$without"
tui_wait "drops" "dashboard of the session without ranges"
for k in r n N s w; do
    tui_keys +   # another status line in between: the message comes anew
    tui_wait "zoom:"
    tui_keys "$k"
    tui_wait "no NVTX ranges in this session" "key $k without ranges"
done
tui_screen | grep -q "nvtx" && fail "a lane without ranges"
tui_wait "drops"
tui_keys q
st=$(tui_wait_exit)
[ "$st" = 0 ] || fail "q should exit 0, got $st"

# A live session: its ranges are read again as they arrive (one a second
# from the writer), not only once.
"$fill" --store "$TUI_TMP/live" --seconds 60 --sessions 1 --live 0 --ranges \
    > "$TUI_TMP/live.ids" &
TUI_PIDS="$TUI_PIDS $!"
tui_wait_until grep -q running "$TUI_TMP/live.ids"
live=$(awk '$1 == "running" {print $2}' "$TUI_TMP/live.ids")
tui_start env TZ=UTC "$cuptop" --store "$TUI_TMP/live" --session "$live"
tui_wait "drops" "dashboard of the live session"
sleep 2
tui_keys r
tui_wait "NVTX ranges (1)" "the live session's range chooser"
tui_keys Enter
tui_wait_re "nvtx step: [0-9]+ range" "the live lane"
count() { tui_screen | sed -n 's/.*nvtx step: \([0-9]*\) range.*/\1/p' | head -1; }
n0=$(count)
more() { [ "$(count)" -ge $((n0 + 2)) ]; }
tui_wait_until more
tui_keys q
st=$(tui_wait_exit)
[ "$st" = 0 ] || fail "q should exit 0, got $st"

# A session of an older schema has no range table at all: the same.
if command -v mdb_load >/dev/null 2>&1; then
    old="$TUI_TMP/old"
    mkdir -m 700 -p "$old/20250101T120000-1001"
    mdb_load -f "$top_srcdir/tests/cli/fixtures/schema1-fill.dump" "$old/20250101T120000-1001" ||
        fail "mdb_load of the schema 1 fixture"
    tui_start env TZ=UTC "$cuptop" --store "$old" --session 20250101T120000-1001
    tui_wait "drops" "dashboard of a schema 1 session"
    tui_keys r
    tui_wait "no NVTX ranges in this session" "r on a session without a range table"
    tui_keys q
    st=$(tui_wait_exit)
    [ "$st" = 0 ] || fail "q should exit 0, got $st"
else
    skip_part "the schema 1 session: no mdb_load (lmdb-utils)"
fi
parts_summary
echo "PASS"
