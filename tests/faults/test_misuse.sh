#!/bin/sh
# test_misuse.sh - fault row 11: misuse of every subcommand: exit 2, one
# clear line on stderr starting with "cuptop", nothing on stdout, never a
# crash.  Complements tests/cli/test_cli_errors.sh (which covers unknown
# options, bad windows, formats, marks, ambiguous/unknown sessions and
# corrupt stores for sessions/check/report/export): here every option of
# every subcommand without its value, bad values, stray arguments, and the
# subcommands that test does not cover (top, demo, run).  Misuse that is
# not refused today: test_misuse_bugs.sh (XFAIL).
. "${top_srcdir:?}/tests/faults/lib.sh"
FILL=$B/tests/cli/fill_store
[ -x "$FILL" ] || skip "$FILL not built"
S=$WORK/store
"$FILL" "$S" >/dev/null || { echo "fill_store failed"; exit 1; }
C=20250101T120000-1001
n=0
# misuse CMD...: one line, exit 2
misuse() {
    n=$((n + 1))
    TERM=dumb timeout 60 "$CUPTOP" "$@" </dev/null >"$WORK/m$n.out" 2>"$WORK/m$n.err"
    one_line_error "cuptop $*" "$?" "$WORK/m$n.err" "$WORK/m$n.out"
}

# options without their value (the last argument)
misuse sessions --store
misuse check --store
misuse check --store "$S" "$C" --from
misuse check --store "$S" "$C" --to
misuse report --store
misuse export --store
for o in --from --to --mark --format --output -o; do
    misuse export --store "$S" "$C" "$o"
done
misuse top --store
misuse top --session
misuse demo --store
misuse demo --seconds
misuse demo --headless --seconds 1 --scenario
misuse demo --headless --seconds 1 --rate
misuse demo --headless --seconds 1 --devices
for o in --store --kinds --pool --buffer-size --queue --config; do
    misuse run "$o"
done
# unknown options and stray arguments
misuse sessions --store "$S" --json extra
misuse check --store "$S" --all --json extra
misuse report --store "$S" "$C" --bogus
misuse top --store "$S" --bogus
misuse top --store "$S" stray
misuse top --store "$S" --session 19990101
misuse demo --bogus
misuse demo --headless --seconds -1
misuse demo --headless --seconds lots
misuse demo --headless --seconds 1 --scenario no-such-scenario
misuse demo --headless --seconds 1 --rate -5
misuse demo --headless --seconds 1 --devices 0
misuse run --bogus -- true
misuse run
misuse run --
misuse run --kinds no-such-kind -- true
misuse run --pool -3 -- true
misuse run --pool lots -- true
misuse run --buffer-size 1T -- true
misuse run --queue x -- true
misuse run --config "$WORK/no-such-file" -- true
# bad values for the read-only subcommands
misuse check --store "$S" "$C" --from 25:61 --to end
misuse export --store "$S" "$C" --from start --to end --format chrome -o "$WORK"
misuse export --store "$S" "$C" --from start --to end --format chrome -o "$WORK/no/such/dir/x"
misuse check --store "$S" ""
misuse report --store "$S" ../..
misuse report --store "$S" /etc

# an unknown subcommand: exit 2 and a first line that says so (it prints
# the list of subcommands after it, which is accepted here)
"$CUPTOP" no-such-subcommand >"$WORK/u.out" 2>"$WORK/u.err" </dev/null
check "unknown subcommand: exit" "$?" 2
head -1 "$WORK/u.err" | grep -q "^cuptop: unknown subcommand 'no-such-subcommand'" &&
    pass "unknown subcommand: first line names it" ||
    fail "unknown subcommand: $(head -1 "$WORK/u.err")"
[ "$(wc -l <"$WORK/u.err")" = 1 ] ||
    echo "note: an unknown subcommand prints $(wc -l <"$WORK/u.err" | tr -d ' ') lines (its message, then the subcommand list)"
finish
