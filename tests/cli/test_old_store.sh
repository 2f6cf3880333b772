#!/bin/sh
# test_old_store.sh - sessions written by schema 1 (before checksummed
# chunks, API names and provenance) still open, check and export.  The
# fixtures are mdb_dump texts of sessions written by the tree at 5eb4d0d:
# schema1-agent.dump by its agent on the simulated CUPTI (API records
# without names), schema1-fill.dump by its tests/cli/fill_store (hostile
# names, two devices named in the old "devices" key).  Skips (77) without
# lmdb-utils (mdb_load) or python3.
set -u
b=${top_builddir:?}
s=${top_srcdir:?}
command -v mdb_load >/dev/null 2>&1 || { echo "no mdb_load (lmdb-utils): skipped"; exit 77; }
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-oldstore.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: got '$2' want '$3'"; fail=1; fi; }

mkdir -m 700 "$tmp/store"
load() {   # fixture session-id
    mkdir -m 700 "$tmp/store/$2"
    mdb_load -f "$s/tests/cli/fixtures/$1" "$tmp/store/$2" || { echo "FAIL mdb_load $1"; fail=1; }
}
load schema1-agent.dump 20261202T184636-16689
load schema1-fill.dump 20250101T120000-1001

"$b/cuptop" check --store "$tmp/store" --all >"$tmp/check" 2>&1
check "check: both sessions COMPLETE" "$?/$(grep -c ': COMPLETE' "$tmp/check")" "0/2"
"$b/cuptop" sessions --store "$tmp/store" --json >"$tmp/sessions.json"
check "sessions --json" "$?" 0
for id in 20261202T184636-16689 20250101T120000-1001; do
    for f in chrome jsonl csv; do
        "$b/cuptop" export --store "$tmp/store" "$id" --from start --to end --format $f \
            -o "$tmp/$id.$f" 2>"$tmp/err"
        check "$id: export --format $f" "$?" 0
    done
    "$b/cuptop" report --store "$tmp/store" "$id" >"$tmp/$id.report" 2>&1
    check "$id: report" "$?" 0
done

python3 - "$tmp" <<'PY'
import json, re, sys
tmp = sys.argv[1]
fails = []
def expect(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        fails.append(what)
ss = {s["id"]: s for s in json.load(open(tmp + "/sessions.json"))}
a, f = ss["20261202T184636-16689"], ss["20250101T120000-1001"]
for s in (a, f):
    expect(s["label"] is None and s["simulated"] is False, s["id"] + ": no label, not marked simulated")
    expect(s["versions"]["unknown"].get("cuda_runtime") == "not recorded by this agent version",
           s["id"] + ": runtime version unknown, with why")
expect(a["versions"]["cupti_api"] is not None, "agent session: CUPTI API version kept")
expect(f["versions"]["driver"] == "580.65" and f["versions"]["cuda_driver"] == "13.0",
       "fill session: the old driver and cuda keys read")
expect([(d["index"], d["name"]) for d in f["devices"]] == [(0, 'Test GPU "A"'), (1, "Test GPU B")],
       "fill session: device names from the old devices key")
# API records of the old agent have no names: they stay "cbid N"
api = [json.loads(l) for l in open(tmp + "/20261202T184636-16689.jsonl")]
api = [r for r in api if r.get("kind") in ("runtime", "driver")]
expect(api and all(r["name"] is None for r in api), "old agent: API records unnamed in jsonl (%d)" % len(api))
t = json.load(open(tmp + "/20261202T184636-16689.chrome"))
names = {e.get("name") for e in t["traceEvents"] if e.get("cat") in ("cuda_runtime", "cuda_driver")}
expect(names and all(re.match(r"cbid \d+$", n) for n in names), "old agent: chrome API slices named cbid N: %s" % sorted(names))
sys.exit(1 if fails else 0)
PY
[ $? = 0 ] || fail=1
exit $fail
