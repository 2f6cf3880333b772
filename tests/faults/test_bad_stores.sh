#!/bin/sh
# test_bad_stores.sh - fault row 8: corrupt, truncated, zero-length, foreign
# (a non-cuptop LMDB) and newer-version sessions, and store directories with
# wrong permissions or another owner.  Every subcommand (sessions, check,
# report, export, top) must print one clear line and exit 2; none may
# crash.  Damage inside data pages is test_deep_corrupt.sh (check-faults).
. "${top_srcdir:?}/tests/faults/lib.sh"
need_tools python3 mdb_dump mdb_load
FILL=$B/tests/cli/fill_store
[ -x "$FILL" ] || skip "$FILL not built"

S=$WORK/src
"$FILL" "$S" >/dev/null || { echo "fill_store failed"; exit 1; }
GOOD=20250101T120000-1001
ID=20250101T000000-1      # the id every bad session gets in its own store

# mkbad NAME: a store holding one session directory $ID; prints its data.mdb
mkbad() {
    mkdir -m 700 "$WORK/$1" "$WORK/$1/$ID"
    echo "$WORK/$1/$ID/data.mdb"
}

# --- the damaged sessions -------------------------------------------------
head -c 65536 /dev/urandom >"$(mkbad random)"
: >"$(mkbad zero)"
mkbad nofile >/dev/null
f=$(mkbad truncated)
head -c 40000 "$S/$GOOD/data.mdb" >"$f"
f=$(mkbad metaonly)
head -c 8192 "$S/$GOOD/data.mdb" >"$f"
# a valid LMDB that is not a cuptop session
mkdir -m 700 "$WORK/foreign0" "$WORK/foreignmeta0"
printf 'VERSION=3\nformat=print\ntype=btree\nHEADER=END\n key\n value\nDATA=END\n' |
    mdb_load -f /dev/stdin "$WORK/foreign0" ||
    { echo "mdb_load failed"; exit 1; }
mkdir -m 700 "$WORK/foreign"
mv "$WORK/foreign0" "$WORK/foreign/$ID"
# a foreign LMDB with a "meta" database and another magic
printf 'VERSION=3\nformat=print\ndatabase=meta\ntype=btree\nHEADER=END\n magic\n other-tool\n schema\n 1\nDATA=END\n' |
    mdb_load -f /dev/stdin "$WORK/foreignmeta0" ||
    { echo "mdb_load failed"; exit 1; }
mkdir -m 700 "$WORK/foreignmeta"
mv "$WORK/foreignmeta0" "$WORK/foreignmeta/$ID"
# a cuptop session from a newer schema, and one with no schema
# (hex dumps: lmdb-utils' print mode does not escape backslashes)
mdb_dump -a "$S/$GOOD" >"$WORK/good.dump"
# with_schema NAME HEXVALUE: a copy of the good session, meta "schema" replaced
with_schema() {
    awk -v v=" $2" 'prev == " 736368656d61" { print v; prev = ""; next } { print; prev = $0 }' \
        "$WORK/good.dump" >"$WORK/$1.dump"
    grep -q "^ $2\$" "$WORK/$1.dump" || { echo "no schema key in the dump"; exit 1; }
    mkdir -m 700 "$WORK/$1" "$WORK/$1/$ID"
    mdb_load -f "$WORK/$1.dump" "$WORK/$1/$ID" 2>"$WORK/$1.load" ||
        { echo "mdb_load failed"; cat "$WORK/$1.load"; exit 1; }
}
with_schema newer 3939      # "99"
with_schema badschema 7831  # "x1"
# an LMDB file of a newer LMDB data version (both meta pages)
f=$(mkbad newerlmdb)
cp "$S/$GOOD/data.mdb" "$f"
python3 - "$f" <<'PY'
import struct, sys
p = sys.argv[1]
d = bytearray(open(p, "rb").read())
for off in (0, 4096):
    struct.pack_into("<I", d, off + 20, 2)
open(p, "wb").write(d)
PY
# a lock file full of garbage beside a good data file
mkdir -m 700 "$WORK/badlock"
cp -R "$S/$GOOD" "$WORK/badlock/$ID"
head -c 8192 /dev/urandom >"$WORK/badlock/$ID/lock.mdb"

# run_cmd NAME CMD...: run with a deadline; RC, $WORK/NAME.{out,err}
run_cmd() {
    rn=$1
    shift
    TERM=dumb timeout 120 "$@" </dev/null >"$WORK/$rn.out" 2>"$WORK/$rn.err"
    RC=$?
}

# crashed NAME: the tool died of a signal, hit its deadline or a sanitizer
crashed() {
    is_crash_rc "$RC" || [ "$RC" = 124 ] ||
        grep -q 'AddressSanitizer\|runtime error:\|LeakSanitizer' "$WORK/$1.err"
}

# every subcommand on store $1, session $ID: exit 2, one line
all_subcommands() {
    st=$WORK/$1
    run_cmd "$1-sessions" "$CUPTOP" sessions --store "$st"
    # sessions lists what it can and names each unreadable session: here
    # that is one line, and no session row on stdout
    # (a directory without data.mdb is not a session at all: the store
    # renames a session into place only once it has one, so sessions
    # rightly lists nothing and exits 0 there)
    if [ "$1" = nofile ] && [ "$RC" = 0 ] && ! grep -q "^$ID" "$WORK/$1-sessions.out"; then
        pass "$1: sessions: not listed, exit 0"
    elif [ "$RC" = 2 ] && [ "$(wc -l <"$WORK/$1-sessions.err")" = 1 ] &&
        ! grep -q "^$ID" "$WORK/$1-sessions.out"; then
        pass "$1: sessions: exit 2, '$(cat "$WORK/$1-sessions.err")'"
    else
        fail "$1: sessions: exit $RC: $(head -c 300 "$WORK/$1-sessions.err")"
    fi
    run_cmd "$1-check" "$CUPTOP" check --store "$st" "$ID"
    one_line_error "$1: check" "$RC" "$WORK/$1-check.err" "$WORK/$1-check.out"
    run_cmd "$1-checkall" "$CUPTOP" check --store "$st" --all
    if [ "$RC" = 2 ] && [ "$(wc -l <"$WORK/$1-checkall.err")" = 1 ]; then
        pass "$1: check --all: exit 2"
    else
        fail "$1: check --all: exit $RC: $(head -c 300 "$WORK/$1-checkall.err")"
    fi
    run_cmd "$1-report" "$CUPTOP" report --store "$st" "$ID"
    one_line_error "$1: report" "$RC" "$WORK/$1-report.err" "$WORK/$1-report.out"
    for fmt in jsonl chrome csv store; do
        run_cmd "$1-export-$fmt" "$CUPTOP" export --store "$st" "$ID" --from start --to end \
            --format "$fmt" -o "$WORK/$1.$fmt"
        one_line_error "$1: export $fmt" "$RC" "$WORK/$1-export-$fmt.err" "$WORK/$1-export-$fmt.out"
        [ -e "$WORK/$1.$fmt" ] && fail "$1: export $fmt left an output behind"
    done
    run_cmd "$1-top" "$CUPTOP" top --store "$st" --session "$ID"
    one_line_error "$1: top" "$RC" "$WORK/$1-top.err" "$WORK/$1-top.out"
}

for bad in random zero nofile truncated metaonly foreign foreignmeta newer badschema newerlmdb; do
    all_subcommands "$bad"
done
grep -q 'newer' "$WORK/newer-check.err" || fail "newer schema: the message does not say newer"
grep -q 'newer LMDB format' "$WORK/newerlmdb-check.err" ||
    fail "newer LMDB: the message does not say LMDB: $(cat "$WORK/newerlmdb-check.err")"
grep -q 'schema version too new' "$WORK/newerlmdb-check.err" &&
    fail "newer LMDB reported as a newer cuptop schema"
grep -q 'schema version too new' "$WORK/newer-check.err" || fail "newer schema: not said so"

# a garbage lock file: LMDB re-initialises or refuses it; either way no crash
for c in "check --store $WORK/badlock $ID" "report --store $WORK/badlock $ID"; do
    # shellcheck disable=SC2086
    run_cmd badlock "$CUPTOP" $c
    if crashed badlock; then fail "garbage lock.mdb: cuptop $c crashed (rc $RC)"; else
        pass "garbage lock.mdb: cuptop $c exit $RC, no crash"; fi
done

# --- the store directory itself ---------------------------------------------
# wrong permissions: group/other-writable store, a session dir in it
mkdir -m 700 "$WORK/open"
cp -R "$S/$GOOD" "$WORK/open/"
chmod 777 "$WORK/open"
for c in sessions "check --all" "report $GOOD"; do
    # shellcheck disable=SC2086
    run_cmd open "$CUPTOP" $c --store "$WORK/open"
    one_line_error "store mode 0777: $c" "$RC" "$WORK/open.err" "$WORK/open.out"
done
run_cmd open "$CUPTOP" export --store "$WORK/open" "$GOOD" --from start --to end \
    --format jsonl -o "$WORK/open.jsonl"
one_line_error "store mode 0777: export" "$RC" "$WORK/open.err" "$WORK/open.out"
run_cmd open "$CUPTOP" top --store "$WORK/open"
one_line_error "store mode 0777: top" "$RC" "$WORK/open.err" "$WORK/open.out"

if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    # owned by another user: refused (even though root could read it)
    mkdir -m 700 "$WORK/other"
    cp -R "$S/$GOOD" "$WORK/other/"
    chown -R nobody "$WORK/other"
    for c in sessions "check --all" "report $GOOD" top; do
        # shellcheck disable=SC2086
        run_cmd other "$CUPTOP" $c --store "$WORK/other"
        one_line_error "store owned by nobody: $c" "$RC" "$WORK/other.err" "$WORK/other.out"
    done
    # another user (nobody) on our store: permission denied, one line
    if command -v setpriv >/dev/null 2>&1; then
        chmod 711 "$WORK"
        mkdir -m 700 "$WORK/mine"
        cp -R "$S/$GOOD" "$WORK/mine/"
        for c in sessions "check --all" "report $GOOD" top; do
            # shellcheck disable=SC2086
            run_cmd asnobody setpriv --reuid=nobody --regid=65534 --clear-groups \
                "$CUPTOP" $c --store "$WORK/mine"
            one_line_error "our store read by nobody: $c" "$RC" "$WORK/asnobody.err" \
                "$WORK/asnobody.out"
        done
        chmod 700 "$WORK"
    else
        skip_part "another uid reading the store: setpriv missing"
    fi
else
    skip_part "a store owned by another user: not root (needs chown)"
fi

finish
