# cli_lib.sh - shared helpers for the CLI integration tests (sourced).
# Needs $top_builddir and $top_srcdir (set by make check).
set -u
: "${top_builddir:?run through make check}" "${top_srcdir:?run through make check}"
CUPTOP=$top_builddir/cuptop
FILL=$top_builddir/tests/cli/fill_store
GOLDEN=$top_srcdir/tests/cli/golden
CHECK_TRACE=$top_srcdir/tests/cli/check_trace.py
. "$top_srcdir/tests/skip_part.sh"   # skip_part, parts_summary
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-cli.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM
unset CUPTOP_STORE
failures=0
# assertions made (run, golden, no_raw_escapes, strict_json): finish() fails
# when none ran, as tests/faults/lib.sh does
checks=0

fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# run EXPECTED_RC NAME CMD...: stdout to $WORK/NAME.out, stderr to .err
run() {
    want=$1 name=$2
    shift 2
    "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
    got=$?
    checks=$((checks + 1))
    if [ "$got" != "$want" ]; then
        fail "$name: exit $got, expected $want: $*"
        sed 's/^/    stderr: /' "$WORK/$name.err" | head -5 >&2
    fi
}

# usage_error NAME CMD...: exit 2 and exactly one line on stderr, nothing on stdout
usage_error() {
    name=$1
    shift
    run 2 "$name" "$@"
    lines=$(wc -l <"$WORK/$name.err")
    [ "$lines" = 1 ] || fail "$name: $lines lines on stderr, expected one: $(cat "$WORK/$name.err")"
    [ -s "$WORK/$name.out" ] && fail "$name: wrote to stdout"
    grep -q '^cuptop[ :]' "$WORK/$name.err" || fail "$name: message does not start with 'cuptop'"
}

# golden NAME FILE: compare with tests/cli/golden/NAME (CUPTOP_UPDATE_GOLDEN=1 rewrites)
golden() {
    checks=$((checks + 1))
    if [ "${CUPTOP_UPDATE_GOLDEN:-0}" = 1 ]; then
        cp "$2" "$GOLDEN/$1"
        return
    fi
    if ! cmp -s "$GOLDEN/$1" "$2"; then
        fail "golden $1 differs:"
        diff -u "$GOLDEN/$1" "$2" | head -30 >&2
    fi
}

# no raw control characters (ESC, other C0 but tab/newline) in a human output
no_raw_escapes() {
    checks=$((checks + 1))
    if LC_ALL=C grep -q "$(printf '[\001-\010\013-\037\177]')" "$1"; then
        fail "$1 holds raw control characters"
    fi
}

strict_json() {
    checks=$((checks + 1))
    python3 - "$1" <<'PY' || fail "$1 is not strict JSON"
import json, sys
def nodup(p):
    d = {}
    for k, v in p:
        if k in d: raise ValueError("duplicate key " + k)
        d[k] = v
    return d
def const(n): raise ValueError(n)
json.loads(open(sys.argv[1], "rb").read().decode("utf-8"), object_pairs_hook=nodup,
           parse_constant=const)
PY
}

finish() {
    parts_summary
    if [ "$checks" = 0 ]; then
        echo "FAIL: no check ran" >&2
        exit 1
    fi
    if [ "$failures" != 0 ]; then
        echo "$failures failure(s) in $checks checks" >&2
        exit 1
    fi
    echo "all $checks checks passed"
    exit 0
}
