#!/bin/sh
# test_dead_reader.sh - fault row 2: readers killed with kill -9 while the
# traced application writes: the live monitor (cuptop top in tmux, on the
# session's dashboard), an export half-way, and a reader killed inside a
# read transaction (tests/faults/hold_reader).  Checked: the agent is
# unaffected (its session is COMPLETE, every delivered record stored -
# simulator truth); the dead reader's slot is cleared by the writer while
# the application still runs (mdb_stat -r, which does not clear slots
# itself, stops listing the dead pid); the data file stays bounded:
# at most 1.25 x a run without dead readers + 1 MiB.  A killed export
# leaves no partial output behind.
. "${top_srcdir:?}/tests/faults/lib.sh"
need_sim
need_tools python3 mdb_stat
HOLD=$B/tests/faults/hold_reader
[ -x "$HOLD" ] || skip "$HOLD not built"
secs=4
[ "$LONG" = 1 ] && secs=10

size_of() { stat -c %s "$1/$(sessions "$1" | head -1)/data.mdb"; }
has_session() { [ -n "$(sessions "$1")" ]; }

# baseline: no reader at all
sim_run base -- --seconds "$secs" --exit return
check "baseline: exit status" "$SIM_RC" 0
base=$(size_of "$SIM_DIR/store")

# the faults
sim_start faults -- --seconds "$secs" --exit return
app=$SIM_PID
st=$SIM_DIR/store
wait_until 60 has_session "$st" || { fail "no session"; finish; }
id=$(sessions "$st" | head -1)
sleep 0.5

# 1. the monitor, killed with -9 while it draws the dashboard
if command -v tmux >/dev/null 2>&1; then
    sock="cuptop-faults-$$"
    FAULT_CLEANUP_HOOK="tmux -L $sock kill-server 2>/dev/null"
    tmux -L "$sock" -f /dev/null new-session -d -s f -x 120 -y 40 \
        "exec env LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=screen $CUPTOP top --store $st --session $id"
    tmux -L "$sock" set-option -t f -g remain-on-exit on >/dev/null 2>&1
    tpid=$(tmux -L "$sock" display-message -p -t f '#{pane_pid}')
    if wait_until 30 sh -c "tmux -L $sock capture-pane -p -t f | grep -q '$id'"; then
        kill -9 "$tpid"
        pass "top: killed with -9 while showing the live session"
    else
        fail "top: the dashboard never showed the session"
    fi
    tmux -L "$sock" kill-server 2>/dev/null
    FAULT_CLEANUP_HOOK=
else
    skip_part "the monitor killed with -9: tmux not installed"
fi

# 2. an export, killed half-way: as soon as its temporary file appears
#    (or finished before the kill: said so)
sleep 1
mkdir -p "$WORK/exp"
"$CUPTOP" export --store "$st" "$id" --from start --to end --format chrome \
    -o "$WORK/exp/half.json" >/dev/null 2>"$WORK/half.err" &
ep=$!
track $ep
started() { [ -n "$(ls -A "$WORK/exp")" ]; }
wait_until 30 started
kill -9 $ep 2>/dev/null
wait_pid $ep 60
if [ "$WAIT_RC" = 137 ]; then
    pass "export: killed with -9 half-way ($(ls -A "$WORK/exp" | head -1): $(cat "$WORK"/exp/.??* 2>/dev/null | wc -c) bytes written)"
    [ -e "$WORK/exp/half.json" ] && fail "export: a killed export left a partial half.json behind"
else
    echo "note: the export finished (exit $WAIT_RC) before the kill"
    check "export: exit status" "$WAIT_RC" 0
fi

# 3. a reader killed inside a read transaction
"$HOLD" "$st" "$id" >"$WORK/hold.out" 2>&1 &
hp=$!
track $hp
if wait_until 30 grep -q ready "$WORK/hold.out"; then
    mdb_stat -r "$st/$id" >"$WORK/readers0" 2>&1
    if grep -q "^ *$hp " "$WORK/readers0"; then pass "dead reader: listed while alive (pid $hp)"; else
        fail "dead reader: not in the reader table: $(cat "$WORK/readers0")"; fi
    kill -9 $hp
    wait_pid $hp 30
    gone() { mdb_stat -r "$st/$id" 2>/dev/null | grep -q "^ *$hp " && return 1; return 0; }
    if wait_until 30 gone; then
        if kill -0 "$app" 2>/dev/null; then
            pass "dead reader: slot cleared by the writer while the application runs"
        else
            echo "note: the slot was cleared, but the application had already ended"
        fi
    else
        fail "dead reader: slot of pid $hp never cleared"
    fi
else
    fail "hold_reader did not start: $(cat "$WORK/hold.out")"
fi

wait_pid "$app" 300
check "faults: the application's exit status" "$WAIT_RC" 0
check "faults: verdict" "$(verdict "$st" "$id")" "0 ended COMPLETE"
truth_check faults "$st" "$id" "$SIM_DIR/truth" --exit ctx_destroy
size=$(size_of "$st")
limit=$((base * 5 / 4 + 1048576))
check_le "faults: data.mdb bytes (no dead readers: $base)" "$size" "$limit"

if [ "$LONG" = 1 ]; then
    # for the record: a reader that stays alive pins pages (not asserted)
    sim_start live -- --seconds "$secs" --exit return
    wait_until 60 has_session "$SIM_DIR/store"
    "$HOLD" "$SIM_DIR/store" "$(sessions "$SIM_DIR/store" | head -1)" >/dev/null 2>&1 &
    lp=$!
    track $lp
    wait_pid "$SIM_PID" 300
    kill $lp
    echo "note: data.mdb with a live pinned reader: $(size_of "$SIM_DIR/store") bytes (none: $base, dead: $size)"
fi
finish
