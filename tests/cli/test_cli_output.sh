#!/bin/sh
# test_cli_output.sh - what reaches standard output: the global --store
# before any subcommand, write errors on stdout (one line, exit 2, never a
# silent 0), and text from the trace with bidi overrides and other
# invisible characters escaped in every text output.
. "${top_srcdir:?}/tests/cli/cli_lib.sh"

S=$WORK/store
"$FILL" "$S" || { echo "fill_store failed" >&2; exit 1; }
C=20250101T120000-1001
L=20250101T120107-2007

# ---- cuptop --store DIR SUBCOMMAND: the same as SUBCOMMAND --store DIR -------
same() { # NAME RC ARGS...: global --store and the subcommand's own agree
    # (run sets $name: keep ours apart)
    s_name=$1 s_rc=$2 s_sub=$3
    shift 3
    run "$s_rc" "g_$s_name" "$CUPTOP" --store "$S" "$s_sub" "$@"
    run "$s_rc" "l_$s_name" "$CUPTOP" "$s_sub" --store "$S" "$@"
    cmp -s "$WORK/g_$s_name.out" "$WORK/l_$s_name.out" ||
        fail "--store before '$s_sub' differs from after it"
    grep -q 'unexpected argument' "$WORK/g_$s_name.err" &&
        fail "$s_name: $(cat "$WORK/g_$s_name.err")"
}
same sessions 0 sessions
same sessions_json 0 sessions --json
same check 1 check --all
same report 1 report "$L"
same export 0 export "$C" --from +1 --to +2 --format csv -o -
[ -s "$WORK/g_export.out" ] || fail "export through the global --store wrote nothing"
# control parses its store too: the session is ended, nothing to apply
usage_error g_control "$CUPTOP" --store "$S" control "$C" --kinds kernel
grep -q 'ended' "$WORK/g_control.err" || fail "control: $(cat "$WORK/g_control.err")"
# --store=DIR, and a --store after the subcommand wins
run 0 g_eq "$CUPTOP" --store="$S" sessions
cmp -s "$WORK/g_eq.out" "$WORK/l_sessions.out" || fail "--store=DIR before the subcommand"
run 0 g_override "$CUPTOP" --store "$WORK/nowhere" sessions --store "$S"
cmp -s "$WORK/g_override.out" "$WORK/l_sessions.out" || fail "the subcommand's --store does not win"
usage_error g_nowhere "$CUPTOP" --store "$WORK/nowhere" sessions
# every subcommand takes it (--help proves the arguments reached it)
for sub in top demo run sessions check report export control; do
    run 0 "g_help_$sub" "$CUPTOP" --store "$S" "$sub" --help
    grep -q "^usage: cuptop" "$WORK/g_help_$sub.out" || fail "--store DIR $sub --help"
done
# the monitor keeps its own options after a global --store
usage_error g_top_bad "$CUPTOP" --store "$S" --no-such-option

# ---- write errors on standard output -------------------------------------------
full_fails() { # NAME ARGS...: exit 2, one line on stderr naming the failure
    f_name=$1
    shift
    "$@" >/dev/full 2>"$WORK/$f_name.err"
    got=$?
    [ "$got" = 2 ] || fail "$f_name: exit $got with stdout on /dev/full, expected 2: $*"
    [ "$(wc -l <"$WORK/$f_name.err")" = 1 ] ||
        fail "$f_name: expected one line on stderr: $(cat "$WORK/$f_name.err")"
    grep -q '^cuptop.*cannot write the output' "$WORK/$f_name.err" ||
        fail "$f_name: stderr does not say the output failed: $(cat "$WORK/$f_name.err")"
}
if [ -w /dev/full ]; then
    full_fails full_sessions "$CUPTOP" sessions --store "$S"
    full_fails full_sessions_json "$CUPTOP" sessions --store "$S" --json
    full_fails full_report "$CUPTOP" report --store "$S" "$L"
    full_fails full_report_clean "$CUPTOP" report --store "$S" "$C"
    full_fails full_check "$CUPTOP" check --store "$S" --all
    full_fails full_check_json "$CUPTOP" check --store "$S" --all --json
    full_fails full_help "$CUPTOP" --help
    full_fails full_sub_help "$CUPTOP" sessions --help
    full_fails full_version "$CUPTOP" --version
    grep -q 'No space left' "$WORK/full_sessions.err" || fail "the cause is not named"
    # export -o - says so itself, with its own status for a failed write (1)
    "$CUPTOP" export --store "$S" "$C" --from start --to end --format jsonl -o - \
        >/dev/full 2>"$WORK/full_export.err"
    [ $? = 1 ] && [ "$(wc -l <"$WORK/full_export.err")" = 1 ] &&
        grep -q 'writing standard output failed: No space left' "$WORK/full_export.err" ||
        fail "export -o - to /dev/full: $(cat "$WORK/full_export.err")"
else
    skip_part "the write-error checks: no writable /dev/full"
fi
# a closed standard output loses what was printed: a failure too
"$CUPTOP" sessions --store "$S" >&- 2>"$WORK/closed.err"
[ $? = 2 ] || fail "sessions with stdout closed did not fail"
grep -q 'cannot write the output' "$WORK/closed.err" || fail "closed stdout: $(cat "$WORK/closed.err")"
# nothing written to a closed stdout is no failure (usage error stays the one line)
"$CUPTOP" sessions --store "$WORK/nowhere" >&- 2>"$WORK/closed2.err"
[ $? = 2 ] && [ "$(wc -l <"$WORK/closed2.err")" = 1 ] || fail "closed stdout, nothing written: $(cat "$WORK/closed2.err")"

# ---- invisible characters from the trace ----------------------------------------
I=$WORK/invisible
"$FILL" --invisible "$I" || fail "fill_store --invisible"
V=20250101T140000-7
run 0 inv_sessions "$CUPTOP" sessions --store "$I"
run 1 inv_check "$CUPTOP" check --store "$I" --all
run 1 inv_report "$CUPTOP" report --store "$I" "$V"
for f in inv_sessions inv_check inv_report; do
    no_raw_escapes "$WORK/$f.out"
    # U+202E RLO, U+2066 LRI, U+200B ZWSP, U+FEFF BOM: never as they are
    for cp in '\342\200\256' '\342\201\246' '\342\200\213' '\357\273\277'; do
        if LC_ALL=C grep -q "$(printf "$cp")" "$WORK/$f.out"; then
            fail "$f passes $cp through: $(LC_ALL=C grep "$(printf "$cp")" "$WORK/$f.out" | head -1)"
        fi
    done
done
grep -q 'x\\xe2\\x80\\xaeexe.gpj\\xe2\\x81\\xa6 z\\xe2\\x80\\x8bw\\xef\\xbb\\xbf' "$WORK/inv_sessions.out" ||
    fail "sessions: the command line is not shown escaped: $(cat "$WORK/inv_sessions.out")"
[ "$(grep -c 'x\\xe2\\x80\\xae' "$WORK/inv_report.out")" -ge 3 ] ||
    fail "report: command, host and note not all escaped: $(head -3 "$WORK/inv_report.out")"
grep -q 'note: error .*subscriber conflict: x\\xe2\\x80\\xae' "$WORK/inv_check.out" ||
    fail "check: the note is not shown escaped: $(cat "$WORK/inv_check.out")"
# JSON keeps the text exactly (escaping is for terminals)
run 0 inv_json "$CUPTOP" sessions --store "$I" --json
strict_json "$WORK/inv_json.out"
python3 - "$WORK/inv_json.out" <<'PY' || fail "sessions --json changed the command line"
import json, sys
s = json.load(open(sys.argv[1]))[0]
assert s["command"] == "./app x\u202eexe.gpj\u2066 z\u200bw\ufeff", ascii(s["command"])
PY

finish
