#!/bin/sh
# test_causes.sh - every cause reaches the person (issue 30, commit
# aec934f): a session whose rows cannot be decoded is named, with what
# failed, by each front end that reads it.
#   - an epoch row with a key of 3 bytes (the session's summary reads no
#     epoch, the facts do): report exits 2 with the facts' cause ("ID:
#     store damaged or value undecodable", not the code's words alone);
#     check keeps its verdict (INCOMPLETE, exit 1) and says on stderr why
#     it has no advice; the monitor's dashboard and kind panel say on the
#     status line why the session cannot be read.
#   - a step row the same (the summary reads the steps): the exporter names
#     the session on stderr (the cause, "session ID: ..."), once.
# The sessions are starve_store's (tests/model); the rows are damaged
# through mdb_dump/mdb_load (lmdb-utils).
. "${top_srcdir:?}/tests/faults/lib.sh"
need_tools mdb_dump mdb_load
STARVE=$B/tests/model/starve_store
[ -x "$STARVE" ] || skip "$STARVE not built"
"$STARVE" "$WORK/src" >"$WORK/ids" || { echo "starve_store failed"; exit 1; }
ID=$(sed -n 's/^short //p' "$WORK/ids")
[ -n "$ID" ] || { echo "starve_store wrote no short session"; exit 1; }

run_cmd() { # NAME CMD...: $WORK/NAME.out/.err, RC (a hang is killed: 124)
    rn=$1
    shift
    TERM=dumb timeout 60 "$@" </dev/null >"$WORK/$rn.out" 2>"$WORK/$rn.err"
    RC=$?
}

# damaged DB STORE: a store holding the session with the first key of its
# database DB cut to 3 bytes (every row of DB has a 4-byte key)
damaged() {
    mkdir -m 700 "$WORK/$2" "$WORK/$2/$ID"
    mdb_dump -a "$WORK/src/$ID" | awk -v db="database=$1" '
        $0 == db { in_db = 1 }
        in_db && $0 == "HEADER=END" { print; key = 1; next }
        key { print " 000001"; key = 0; in_db = 0; cut = 1; next }
        { print }
        END { exit !cut }' >"$WORK/$2.dump" ||
        { echo "no $1 row in the session"; exit 1; }
    mdb_load -f "$WORK/$2.dump" "$WORK/$2/$ID" 2>"$WORK/$2.load" ||
        { echo "mdb_load failed"; cat "$WORK/$2.load"; exit 1; }
}
damaged epochs ep
damaged steps st
WHY="store damaged or value undecodable"   # cupstore_strerror(CUPSTORE_ECORRUPT)

# ---- report: the facts' cause, one line, exit 2 ----------------------------
run_cmd report "$CUPTOP" report --store "$WORK/ep" "$ID"
one_line_error "report, an epoch row damaged" "$RC" "$WORK/report.err" "$WORK/report.out"
grep -qx "cuptop report: $ID: $WHY" "$WORK/report.err" &&
    pass "report: the cause names the session and what failed" ||
    fail "report: not the facts' cause: $(cat "$WORK/report.err")"

# ---- check: the verdict stands, stderr says why there is no advice ----------
run_cmd check "$CUPTOP" check --store "$WORK/ep" "$ID"
check "check, an epoch row damaged: exit status (INCOMPLETE)" "$RC" 1
grep -q "^$ID: INCOMPLETE" "$WORK/check.out" && pass "check: the verdict stands" ||
    fail "check: no verdict: $(head -c 300 "$WORK/check.out")"
grep -qx "cuptop check: no advice: $ID: $WHY" "$WORK/check.err" &&
    pass "check: why there is no advice" ||
    fail "check: stderr does not say why: $(cat "$WORK/check.err")"
run_cmd checkj "$CUPTOP" check --json --store "$WORK/ep" "$ID"
grep -qx "cuptop check: no advice: $ID: $WHY" "$WORK/checkj.err" &&
    pass "check --json: why there is no advice, on stderr" ||
    fail "check --json: stderr does not say why: $(cat "$WORK/checkj.err")"

# ---- the exporter: the session named with the cause, once -------------------
run_cmd exp "$CUPTOP" exporter --store "$WORK/st" --textfile "$WORK/x.prom" --once
check "exporter --once, a step row damaged: exit status" "$RC" 0
grep -q '^cuptop_exporter_sessions_unreadable 1$' "$WORK/x.prom" &&
    pass "exporter: the session counted unreadable" ||
    fail "exporter: unreadable not 1: $(grep unreadable "$WORK/x.prom" | tail -1)"
if [ "$(grep -c . "$WORK/exp.err")" = 1 ] &&
    grep -q "^cuptop exporter: in $WORK/st: session $ID: .*damaged" "$WORK/exp.err"; then
    pass "exporter: the cause on stderr, once ($(cat "$WORK/exp.err"))"
else
    fail "exporter: stderr is not one line naming $ID: $(head -c 400 "$WORK/exp.err")"
fi
# every second: said once, not once a write (three writes, each a new file)
"$CUPTOP" exporter --store "$WORK/st" --textfile "$WORK/y.prom" --interval 1 \
    2>"$WORK/expi.err" &
EXP=$!
track "$EXP"
inodes() { # the textfile's inodes seen so far, one a line, in $WORK/inodes
    stat -c %i "$WORK/y.prom" >>"$WORK/inodes" 2>/dev/null
    [ "$(sort -u "$WORK/inodes" | wc -l)" -ge 3 ]
}
: >"$WORK/inodes"
if wait_until 30 inodes; then
    check "exporter --interval 1: the session named once in three writes" \
        "$(grep -c "session $ID: " "$WORK/expi.err")" 1
else
    fail "exporter --interval 1: the textfile was not written three times"
fi
kill "$EXP"
wait "$EXP" 2>/dev/null

# ---- the monitor: the status line says why, on the dashboard and the kind
# panel --------------------------------------------------------------------
if command -v tmux >/dev/null 2>&1; then
    sock=cuptop-causes-$$
    FAULT_CLEANUP_HOOK="tmux -L $sock kill-server 2>/dev/null"
    tmux -L "$sock" -f /dev/null new-session -d -x 100 -y 30 -s t \
        "env LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=screen $CUPTOP --store $WORK/ep --session $ID; echo EXIT \$?; sleep 60"
    screen() { tmux -L "$sock" capture-pane -p -t t; }
    said() { screen | grep -q "^cannot read the session: .*damaged"; }
    if wait_until 30 said && screen | grep -q 'kKinds'; then
        pass "monitor (dashboard): $(screen | grep '^cannot read the session')"
    else
        fail "monitor (dashboard): no status line why: $(screen | grep -v '^ *$' | tail -3)"
    fi
    tmux -L "$sock" send-keys -t t k
    if wait_until 30 sh -c "tmux -L $sock capture-pane -p -t t | grep -q 'Kinds and epochs'" &&
        wait_until 30 said; then
        pass "monitor (kind panel): the status line says why"
    else
        fail "monitor (kind panel): no status line why: $(screen | grep -v '^ *$' | tail -3)"
    fi
    tmux -L "$sock" send-keys -t t q
    wait_until 30 sh -c "tmux -L $sock capture-pane -p -t t | grep -q '^EXIT'"
    check "monitor: q exits 0" "$(screen | sed -n 's/^EXIT //p' | head -1)" 0
    tmux -L "$sock" kill-server 2>/dev/null
else
    skip_part "the monitor: tmux not installed"
fi
finish
