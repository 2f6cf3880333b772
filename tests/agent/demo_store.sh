#!/bin/sh
# demo_store.sh - issue 13 items 7 and 8: where `cuptop demo` writes, and
# the values it accepts.
# 7: without --store the live demo uses a temporary store (never the
#    default one), says where it is and that it is removed, and removes it
#    at exit; with --store it says the store is kept, and keeps it.  Without
#    a terminal it refuses before it starts anything (no session anywhere).
# 8: --devices, --seconds and --rate have one range, the simulator's,
#    checked by the same parser: cuptop refuses what the simulator would,
#    one line, exit 2; the simulator refuses it with the same words.
set -u
. "${top_srcdir:-.}/tests/tui/tui_lib.sh"
b=$top_builddir
for f in cuptop libcuptop-agent.so libcuptop-simcupti.so cuptop-simapp agentctl; do
    [ -e "$b/$f" ] || { echo "SKIP: $f not built"; exit 77; }
done
TUI_DEADLINE=${TUI_DEADLINE:-90}
ok() { echo "ok   $*"; }
home=$TUI_TMP/home
tmp=$TUI_TMP/t
mkdir -p "$home" "$tmp"
# the user's default store would be $home/.local/state/cuptop
denv="HOME=$home XDG_STATE_HOME= CUPTOP_STORE= TMPDIR=$tmp"

# ---- item 8: one range, refused by cuptop (exit 2, one line) -------------
for bad in "--devices 9" "--devices 0" "--seconds 3601" "--seconds -1" "--rate 1e308" \
           "--rate -5" "--rate nan"; do
    # shellcheck disable=SC2086
    env $denv "$b/cuptop" demo --headless --store "$tmp/s8" $bad >"$TUI_TMP/o" 2>"$TUI_TMP/e"
    rc=$?
    [ "$rc" = 2 ] || fail "demo $bad: exit $rc, want 2 ($(cat "$TUI_TMP/e"))"
    [ "$(wc -l <"$TUI_TMP/e" | tr -d ' ')" = 1 ] || fail "demo $bad: not one line: $(cat "$TUI_TMP/e")"
    [ -s "$TUI_TMP/o" ] && fail "demo $bad: wrote to stdout"
    [ -e "$tmp/s8" ] && fail "demo $bad: the simulated application ran"
    ok "demo --headless $bad: exit 2, '$(cat "$TUI_TMP/e")'"
done
# shellcheck disable=SC2086
env $denv "$b/cuptop" demo --headless --devices 9 2>"$TUI_TMP/e"
grep -q 'is not a device count from 1 to 8' "$TUI_TMP/e" ||
    fail "demo --devices 9: the range is not named: $(cat "$TUI_TMP/e")"
# the simulator refuses the same value with the same words
CUPTOPSIM_DEVICES=9 "$b/cuptop-simapp" --seconds 0 >/dev/null 2>"$TUI_TMP/se"
grep -q 'not a device count from 1 to 8' "$TUI_TMP/se" ||
    fail "the simulator's words for 9 devices differ: $(cat "$TUI_TMP/se")"
"$b/cuptop-simapp" --seconds 3601 >/dev/null 2>"$TUI_TMP/se"
grep -q 'not a number of seconds from 0 to 3600' "$TUI_TMP/se" ||
    fail "the simulator's words for 3601 s differ: $(cat "$TUI_TMP/se")"
ok "the simulator refuses the same values with the same words"
# the top of each range is accepted by both
env $denv "$b/cuptop" demo --headless --store "$tmp/s8" --devices 8 --seconds 0.5 --rate 1000 \
    >"$TUI_TMP/o" 2>"$TUI_TMP/e"
rc=$?
[ "$rc" = 0 ] || fail "demo --devices 8 --rate 1000: exit $rc: $(cat "$TUI_TMP/o" "$TUI_TMP/e")"
id=$("$b/agentctl" sessions "$tmp/s8" | head -1)
"$b/agentctl" dump "$tmp/s8" "$id" >"$TUI_TMP/d8"
grep -q '^records\.kernel\.7=[1-9]' "$TUI_TMP/d8" || fail "demo --devices 8: no kernel records on device 7"
ok "demo --devices 8: eight simulated devices, COMPLETE"
rm -rf "$tmp/s8"

# ---- item 7: no terminal -------------------------------------------------
env $denv "$b/cuptop" demo </dev/null >"$TUI_TMP/o" 2>"$TUI_TMP/e"
rc=$?
[ "$rc" = 2 ] || fail "demo without a terminal: exit $rc, want 2"
grep -q "needs a terminal" "$TUI_TMP/e" || fail "demo without a terminal: $(cat "$TUI_TMP/e")"
[ "$(wc -l <"$TUI_TMP/e" | tr -d ' ')" = 1 ] || fail "demo without a terminal: not one line"
[ -e "$home/.local/state/cuptop" ] && fail "demo without a terminal wrote into the default store"
[ -n "$(ls "$tmp")" ] && fail "demo without a terminal made a store: $(ls "$tmp")"
ok "demo without a terminal: exit 2, nothing started, no store"

# ---- item 7: the live demo on a temporary store --------------------------
# dash: wait for the dashboard (or open it from the sessions screen)
dash() {
    end=$(( $(date +%s) + TUI_DEADLINE ))
    while :; do
        s=$(tui_screen)
        echo "$s" | grep -q "callback latency" && break
        if echo "$s" | grep -q "^STATE .*VERDICT"; then
            echo "$s" | grep -q "^running" && tui_keys Enter
        fi
        [ "$(date +%s)" -lt "$end" ] || fail "no dashboard from cuptop demo"
        sleep 0.3
    done
}
tui_start env $denv "$b/cuptop" demo "2>$TUI_TMP/live.err"
dash
t=$(ls -d "$tmp"/cuptop-demo.* 2>/dev/null | head -1)
[ -n "$t" ] || fail "the live demo made no temporary store in \$TMPDIR"
[ -n "$("$b/agentctl" sessions "$t" 2>/dev/null)" ] || fail "no session in the temporary store $t"
[ -e "$home/.local/state/cuptop" ] && fail "the live demo wrote into the default store"
ok "live demo: its session is in a temporary store ($t), not the default store"
tui_keys q
[ "$(tui_wait_exit)" = 0 ] || fail "the live demo did not exit 0"
grep -qF "store $t (temporary: removed at exit)" "$TUI_TMP/live.err" ||
    fail "the live demo did not say where its store is: $(cat "$TUI_TMP/live.err")"
grep -qF "temporary store $t removed" "$TUI_TMP/live.err" ||
    fail "the live demo did not say it removed its store: $(cat "$TUI_TMP/live.err")"
[ -e "$t" ] && fail "the temporary store $t is still there"
ok "live demo: said where its store is, removed it at exit"

# ---- item 7: --store: kept -----------------------------------------------
# a tmux server of its own (a new one on the old socket can race with the
# old one's exit: "server exited unexpectedly"); the cleanup kills this one
tmux -L "$TUI_SOCK" kill-server >/dev/null 2>&1
TUI_SOCK="$TUI_SOCK-2"
rm -f "$TUI_TMP/exit"
tui_start env $denv "$b/cuptop" demo --store "$TUI_TMP/mine" "2>$TUI_TMP/mine.err"
dash
tui_keys q
[ "$(tui_wait_exit)" = 0 ] || fail "the live demo --store did not exit 0"
grep -qF "store $TUI_TMP/mine (yours: kept)" "$TUI_TMP/mine.err" &&
    grep -qF "store $TUI_TMP/mine kept" "$TUI_TMP/mine.err" ||
    fail "the live demo --store did not say the store is kept: $(cat "$TUI_TMP/mine.err")"
[ -n "$("$b/agentctl" sessions "$TUI_TMP/mine" 2>/dev/null)" ] || fail "--store: the session is not kept"
ok "live demo --store: said the store is kept, kept it"
echo "PASS"
