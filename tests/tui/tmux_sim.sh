#!/bin/sh
# tmux_sim.sh - the monitor on the simulator + agent (`cuptop demo`): the
# dashboard shows drops; turning kinds off in the kind panel (following the
# suggestion line) is acknowledged by the agent and the drops stop; q quits.
# Skips (77) until the agent, the simulated CUPTI and simapp are built.
set -u
. "${top_srcdir:-.}/tests/tui/tui_lib.sh"

cuptop="$top_builddir/cuptop"
for f in libcuptop-agent.so libcuptop-simcupti.so cuptop-simapp; do
    [ -e "$top_builddir/$f" ] || { echo "SKIP: $f not built"; exit 77; }
done
if "$cuptop" demo --help 2>&1 | grep -q "not built yet"; then
    echo "SKIP: cuptop demo not built yet"
    exit 77
fi
TUI_DEADLINE=${TUI_DEADLINE:-90}
store="$TUI_TMP/store"
cd "$TUI_TMP" || exit 1
tui_start "$cuptop" demo --store "$store"

# The demo opens the dashboard (or the sessions screen: then open it).
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

# Drops show up: some loss counter becomes non-zero.
end=$(( $(date +%s) + TUI_DEADLINE ))
until tui_screen | grep -Eq "(cupti_dropped|declined|queue_overflow|zero_ts) [1-9]"; do
    [ "$(date +%s)" -lt "$end" ] || fail "the dashboard shows no drops"
    sleep 0.3
done

# The demo's buffers are small (64K): the model's first recommendation is a
# bigger buffer in a rerun, and what can be done now is narrowing the kinds
# to the set it names.  Turn off every kind outside that set, as it says,
# and the losses stop.
kinds="kernel memcpy memset runtime driver sync overhead marker other"
tui_keys k
tui_wait "Suggestion: Raise the buffer size to 4M (rerun: CUPTOP_BUFFER_SIZE=4M)" "the first recommendation"
end=$(( $(date +%s) + TUI_DEADLINE ))
keep=""
while [ -z "$keep" ]; do
    keep=$(tui_screen | sed -n 's/.*Now: Narrow the kinds to \([a-z_,]*\)\..*/\1/p' | head -1)
    [ "$(date +%s)" -lt "$end" ] || fail "no narrowing to do now in the suggestion"
    [ -n "$keep" ] || sleep 0.5
done
idx=0
for k in $kinds; do
    case ",$keep," in
    *",$k,"*) ;;
    *)
        if tui_screen | grep -Eq "^ \[x\] $k "; then
            tui_keys Home
            i=0
            while [ $i -lt $idx ]; do tui_keys Down; i=$((i + 1)); done
            tui_keys ' '
            tui_wait "pending" "request for $k pending"
            tui_wait "applied" "request for $k acknowledged by the agent"
        fi ;;
    esac
    idx=$((idx + 1))
done
tui_wait "No losses now" "drops stopped after narrowing"
# the demo's banner follows: it no longer says records are being dropped
tui_wait "demo: no records lost in the last 5 s" "the banner after the drops stopped"
tui_screen | grep -q "CUPTI is dropping records" && fail "the banner still says records are dropped"
tui_keys q
st=$(tui_wait_exit)
[ "$st" = 0 ] || fail "q should exit 0, got $st"
echo "PASS"
