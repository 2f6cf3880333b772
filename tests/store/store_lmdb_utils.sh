#!/bin/sh
# store_lmdb_utils.sh - a session directory is a plain LMDB environment:
# mdb_stat -a and mdb_dump -a work on it, and a dump loaded with mdb_load
# into a fresh directory opens as the same session.  Skips (77) without
# lmdb-utils.
set -eu
: "${top_builddir:=.}"
fill="$top_builddir/tests/store/store_fill"
for t in mdb_stat mdb_dump mdb_load; do
    command -v "$t" >/dev/null 2>&1 || { echo "SKIP: $t not installed (lmdb-utils)"; exit 77; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/store-utils-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

id=$("$fill" fill "$tmp/store")
s="$tmp/store/$id"
[ -f "$s/data.mdb" ] || { echo "FAIL: no data.mdb in $s"; exit 1; }
[ "$(stat -c %a "$tmp/store")" = 700 ] || { echo "FAIL: store dir not 0700"; exit 1; }

mdb_stat -a "$s" > "$tmp/stat.txt"
for db in meta health loss chunks names epochs control marks notes steps final; do
    grep -q "^Status of $db\$" "$tmp/stat.txt" || { echo "FAIL: mdb_stat lacks $db"; cat "$tmp/stat.txt"; exit 1; }
done

mdb_dump -p -s meta "$s" > "$tmp/meta.txt"
grep -q '^ cuptop-store$' "$tmp/meta.txt" || { echo "FAIL: magic not in mdb_dump"; exit 1; }
grep -q '^ fill-host$' "$tmp/meta.txt" || { echo "FAIL: host not in mdb_dump"; exit 1; }

mdb_dump -a "$s" > "$tmp/all.dump"
mkdir -m 700 "$tmp/copy"
mdb_load -f "$tmp/all.dump" "$tmp/copy" 2>"$tmp/load.err" || { echo "FAIL: mdb_load"; cat "$tmp/load.err"; exit 1; }
want=$("$fill" check "$s")
got=$("$fill" check "$tmp/copy")
[ "$want" = "records=5000 host=fill-host chunks=5" ] || { echo "FAIL: original: $want"; exit 1; }
[ "$got" = "$want" ] || { echo "FAIL: reloaded copy: $got, want $want"; exit 1; }
echo "PASS: mdb_stat, mdb_dump and mdb_load work on a session ($want)"
