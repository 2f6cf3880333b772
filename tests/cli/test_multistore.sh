#!/bin/sh
# test_multistore.sh - a job over several stores (issue 32 item 3) on the
# simulated CUPTI: a job of two ranks written into one store, its two
# sessions then moved to two stores (gathered/hostA, gathered/hostB, as
# rsync from two hosts leaves them).  check --job over the two stores (two
# --store, or the directory of stores) gives the single-store verdict;
# export --job one trace with the single-store event counts per rank, in a
# group per rank and host; sessions lists both with their store; compare
# reads A and B from different stores.  Bad input: a --store that is not a
# store, stores with no common job, a damaged store among several (named,
# the others served, exit 2); misuse is one line and exit 2.
set -u
b=${top_builddir:?}
for f in cuptop libcuptop-agent.so libcuptop-simcupti.so cuptop-simapp; do
    [ -e "$b/$f" ] || { echo "missing $f: skipped"; exit 77; }
done
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-multistore-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: got '$2' want '$3'"; fail=1; fi; }
has() { if grep -q -- "$2" "$3"; then echo "ok   $1"; else echo "FAIL $1: no '$2' in $(head -c 400 "$3")"; fail=1; fi; }
export CUPTOP_CUPTI_LIBRARY=$b/libcuptop-simcupti.so CUPTOPSIM_SEED=11
unset CUPTOP_STORE CUPTOP_JOB RANK LOCAL_RANK OMPI_COMM_WORLD_RANK SLURM_PROCID WORLD_SIZE
app=$b/cuptop-simapp
cu=$b/cuptop

# ---- a job of two ranks in one store, then moved to two ---------------------
"$cu" run --store "$tmp/one" --kinds kernel,memcpy,runtime -- sh -c "
    RANK=0 WORLD_SIZE=2 '$app' --seconds 1 & RANK=1 WORLD_SIZE=2 '$app' --seconds 1; wait"
check "the job ran" "$?" 0
"$cu" sessions --store "$tmp/one" --json >"$tmp/one.json"
set -- $(python3 - "$tmp/one.json" <<'EOF'
import json, sys
s = sorted(json.load(open(sys.argv[1])), key=lambda x: x["rank"])
assert len(s) == 2 and s[0]["job"] == s[1]["job"], s
print(s[0]["job"], s[0]["id"], s[1]["id"])
EOF
)
job=$1 s0=$2 s1=$3
check "one job, two ranks" "$#" 3
g=$tmp/gathered
mkdir -m 700 "$g" "$g/hostA" "$g/hostB"
cp -a "$tmp/one/$s0" "$g/hostA/" && cp -a "$tmp/one/$s1" "$g/hostB/"
check "the sessions moved to two stores" "$?" 0

# ---- check --job: the single-store verdict ------------------------------------
"$cu" check --store "$tmp/one" --job "$job" >"$tmp/c1.txt"
check "check --job, one store: COMPLETE" "$?" 0
"$cu" check --store "$g/hostA" --store "$g/hostB" --job "$job" >"$tmp/c2.txt"
check "check --job, two --store: COMPLETE" "$?" 0
"$cu" check --store "$g" --job "$job" >"$tmp/c3.txt"
check "check --job, a directory of stores: COMPLETE" "$?" 0
check "the job's verdict line is the single-store one" "$(tail -n 1 "$tmp/c2.txt")" \
    "$(tail -n 1 "$tmp/c1.txt")"
check "the same over the directory of stores" "$(tail -n 1 "$tmp/c3.txt")" "$(tail -n 1 "$tmp/c1.txt")"
has "each rank says its host and store" "^rank 1 (pid [0-9]* on .*) $s1 in $g/hostB: COMPLETE$" "$tmp/c3.txt"
"$cu" check --store "$tmp/one" --job "$job" --json >"$tmp/c1.json"
"$cu" check --store "$g" --job "$job" --json >"$tmp/c3.json"
python3 - "$tmp/c1.json" "$tmp/c3.json" "$g" <<'EOF'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
for k in ("verdict", "complete", "processes", "world_size", "missing_ranks", "loss",
          "loss_total", "records"):
    assert a[k] == b[k], (k, a[k], b[k])
assert a["stores"] == 1 and b["stores"] == 2, (a["stores"], b["stores"])
assert [s["store"] for s in b["sessions"]] == [sys.argv[3] + "/hostA", sys.argv[3] + "/hostB"]
assert all("store" not in s for s in a["sessions"])
EOF
check "check --job --json: the same verdict, records and losses; each session's store" "$?" 0

# ---- sessions: both, with their store ---------------------------------------
"$cu" sessions --store "$g" >"$tmp/s.txt"
check "sessions over a directory of stores" "$?" 0
check "a header and two lines, STORE first" \
    "$(awk '{print $1}' "$tmp/s.txt" | tr '\n' ' ')" "STORE $g/hostA $g/hostB "
"$cu" sessions --store "$g/hostA" --store "$g/hostB" --store "$g/hostA" --job "$job" --json \
    >"$tmp/s.json"
python3 - "$tmp/s.json" "$g" "$s0" "$s1" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
g = sys.argv[2]
assert [(x["store"], x["id"]) for x in s] == [(g + "/hostA", sys.argv[3]),
                                              (g + "/hostB", sys.argv[4])], s
EOF
check "sessions --json: each with its store, a store named twice read once" "$?" 0
"$cu" --store "$g/hostA" sessions --store "$g/hostB" >"$tmp/s2.txt"
check "a --store after the subcommand wins over the global one" \
    "$(awk 'NR > 1 {print $1}' "$tmp/s2.txt")" "$s1"

# ---- export --job: one trace, the single-store counts per rank --------------
"$cu" export --store "$tmp/one" --job "$job" --format chrome -o "$tmp/one.trace.json"
check "export --job, one store" "$?" 0
"$cu" export --store "$g" --job "$job" --format chrome -o "$tmp/g.trace.json"
check "export --job, a directory of stores" "$?" 0
python3 - "$tmp/one.trace.json" "$tmp/g.trace.json" <<'EOF'
import collections, json, re, sys
def counts(path):
    ev = json.load(open(path))["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in ev
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    c = collections.Counter()
    for e in ev:
        if e.get("ph") in ("X", "i", "C", "b", "e", "s", "f"):
            rank = re.match(r"rank (\d+)", names.get(e["pid"], "")).group(1)
            c[(rank, e.get("cat"), e["ph"])] += 1
    return names, c
n1, c1 = counts(sys.argv[1])
n2, c2 = counts(sys.argv[2])
assert c1 == c2 and sum(c1.values()) > 1000, (c1, c2)
assert sorted(n1.values()) == sorted(re.sub(r" on [^ ]+ \(", " (", v) for v in n2.values())
assert all(re.match(r"rank [01] on .+ \(pid \d+\)$", v) for v in n2.values()), n2
od1, od2 = (json.load(open(f))["otherData"] for f in sys.argv[1:3])
assert od2["verdict"] == od1["verdict"] and od2["stores"] == 2 and "stores" not in od1
assert [r["store"].rsplit("/", 1)[1] for r in od2["ranks"]] == ["hostA", "hostB"], od2["ranks"]
EOF
check "export --job: the same events per rank, a group per rank and host" "$?" 0
"$cu" export --store "$tmp/one" --job "$job" --format perfetto -o "$tmp/one.pftrace"
"$cu" export --store "$g" --job "$job" --format perfetto -o "$tmp/g.pftrace"
check "export --job --format perfetto over the stores" "$?" 0
pf=${top_srcdir:-.}/tests/perfetto/pftrace.py
if python3 "$pf" "$tmp/one.pftrace" >"$tmp/one.pf.json" &&
    python3 "$pf" "$tmp/g.pftrace" >"$tmp/g.pf.json"; then
    python3 - "$tmp/one.pf.json" "$tmp/g.pf.json" <<'EOF'
import collections, json, re, sys
def counts(path):
    d = json.load(open(path))
    tr = {int(k): t for k, t in d["tracks"].items()}
    procs = {t["pid"]: t for t in tr.values() if t["type"] == "process"}
    def rank(uuid):   # the process group above the slice's track (a thread: by pid)
        while tr[uuid]["type"] != "process" and tr[uuid]["parent"] is not None:
            uuid = tr[uuid]["parent"]
        t = tr[uuid] if tr[uuid]["type"] == "process" else procs[tr[uuid]["pid"]]
        return re.match(r"rank (\d+)", t["name"]).group(1)
    return collections.Counter((rank(x["track"]), x["cat"]) for x in d["slices"])
a, b = counts(sys.argv[1]), counts(sys.argv[2])
assert a == b and sum(a.values()) > 1000, (a, b)
EOF
    check "export --job --format perfetto: the same slices per rank as one store" "$?" 0
else
    check "pftrace.py reads both perfetto traces" 1 0
fi

# ---- compare across stores ----------------------------------------------------
"$cu" compare --store "$g" "$s0" "$s1" >"$tmp/cmp.txt"
check "compare: A and B from two stores" "$?" 0
has "compare: A's store" "^A: session $s0 (COMPLETE) in $g/hostA$" "$tmp/cmp.txt"
"$cu" compare --store "$tmp/one" --store "$g/hostB" "$s1" "$s1" --json >"$tmp/cmp.json"
python3 - "$tmp/cmp.json" "$tmp/one" "$g/hostB" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
assert [s["store"] for s in c["sides"]] == sys.argv[2:4], c["sides"]
EOF
check "compare: a session in both of two stores, A from the first, B from the second" "$?" 0
"$cu" compare --store "$tmp/one" --store "$g" "$s1" "$s0" 2>"$tmp/cmp.err"
check "compare: a session in two of three stores: exit 2" "$?" 2
has "compare: says where it is" "session $s1 is in 2 of the stores" "$tmp/cmp.err"

# ---- bad input ----------------------------------------------------------------
: >"$tmp/file"
mkdir -m 700 "$tmp/empty"
"$cu" sessions --store "$g" --store "$tmp/file" --store "$tmp/nosuch" --store "$tmp/empty" \
    >"$tmp/b.txt" 2>"$tmp/b.err"
check "sessions with stores that are not stores: exit 2" "$?" 2
check "the others listed" "$(awk 'NR > 1 {print $2}' "$tmp/b.txt" | tr '\n' ' ')" "$s0 $s1 "
has "a file named" "cannot read the store $tmp/file: Not a directory (left out)" "$tmp/b.err"
has "a missing one named" "cannot read the store $tmp/nosuch: no such directory" "$tmp/b.err"
has "an empty directory named" "$tmp/empty is not a cuptop store" "$tmp/b.err"
"$cu" check --store "$tmp/file" --store "$tmp/nosuch" --job "$job" 2>"$tmp/b2.err"
check "check: none of the stores readable: exit 2" "$?" 2
has "check: said" "none of the stores named can be read" "$tmp/b2.err"
"$cu" check --store "$g" --store "$tmp/nosuch" --job "$job" >"$tmp/b3.txt" 2>"$tmp/b3.err"
check "check --job with a store left out: the verdict, exit 2" "$?" 2
check "check --job: the job's verdict still" "$(grep "^job $job: COMPLETE" "$tmp/b3.txt" | wc -l | tr -d ' ')" 1
has "check --job: the note" "1 store or session could not be read" "$tmp/b3.txt"
"$cu" export --store "$g" --store "$tmp/nosuch" --job "$job" --format chrome -o "$tmp/no.json" \
    2>"$tmp/b4.err"
check "export --job with a store left out: no trace, exit 2" "$?:$(test -e "$tmp/no.json"; echo $?)" 2:1
has "export --job: why" "could not be read and may hold processes of the job" "$tmp/b4.err"

# two stores with no common job: another job of one rank in a third store
"$cu" run --store "$tmp/other" --kinds kernel -- sh -c "RANK=0 '$app' --seconds 1"
"$cu" check --store "$g/hostA" --store "$tmp/other" --job "$job" >"$tmp/n.txt"
check "a job with rank 1 in no store given: INCOMPLETE, exit 1" "$?" 1
has "the missing rank" "1 of 2 ranks have no session (the first: rank 1)" "$tmp/n.txt"
has "the store without the job" "note: the store $tmp/other holds no session of the job" "$tmp/n.txt"
"$cu" check --store "$g" --store "$tmp/other" --job job-nosuch-1 2>"$tmp/n.err"
check "a job in none of the stores: exit 2" "$?" 2
has "said" "no session of job job-nosuch-1 in any of the 3 stores" "$tmp/n.err"

# a damaged store among several: its session's data.mdb overwritten
mkdir -m 700 "$g/hostC"
cp -a "$tmp/other/"* "$g/hostC/"
bad=$(ls "$g/hostC")
dd if=/dev/urandom of="$g/hostC/$bad/data.mdb" bs=4096 count=4 conv=notrunc 2>/dev/null
"$cu" sessions --store "$g" >"$tmp/d.txt" 2>"$tmp/d.err"
check "sessions with a damaged store: exit 2" "$?" 2
check "the others listed" "$(awk 'NR > 1 {print $2}' "$tmp/d.txt" | tr '\n' ' ')" "$s0 $s1 "
has "the damaged session named with its store" "session $bad in $g/hostC" "$tmp/d.err"
"$cu" check --store "$g" --job "$job" >"$tmp/d2.txt" 2>"$tmp/d2.err"
check "check --job with a damaged store: the verdict, exit 2" "$?" 2
has "check --job: the job's verdict" "^job $job: COMPLETE (2 processes" "$tmp/d2.txt"
has "check --job: the damaged session named" "session $bad in $g/hostC" "$tmp/d2.err"
"$cu" check --store "$g" --all >"$tmp/d3.txt" 2>"$tmp/d3.err"
check "check --all with a damaged store: exit 2" "$?" 2
check "check --all: the others judged" "$(grep -c ": COMPLETE$" "$tmp/d3.txt")" 2
rm -rf "$g/hostC"

# ---- misuse ---------------------------------------------------------------------
"$cu" sessions --store 2>"$tmp/m.err"
check "--store without a directory: exit 2" "$?" 2
"$cu" check --store "$g" "$s0" --job "$job" 2>"$tmp/m.err"
check "check: sessions and --job: exit 2" "$?" 2
check "one line" "$(wc -l <"$tmp/m.err" | tr -d ' ')" 1
"$cu" check --store "$g" --store "$tmp/one" "$s0" 2>"$tmp/m2.err"
check "check SESSION in two of the stores: exit 2" "$?" 2
has "check: says to name one store" "is in 2 of the stores: name one store with --store" "$tmp/m2.err"
"$cu" export --store "$g" nosuch --from start --to end --format chrome -o - 2>"$tmp/m3.err" >/dev/null
check "export SESSION in none of the stores: exit 2" "$?" 2
has "export: said" "session nosuch: in none of the 2 stores" "$tmp/m3.err"

exit $fail
