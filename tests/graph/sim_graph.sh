#!/bin/bash
# tests/graph/sim_graph.sh - the graph kind on the simulator (issue 32
# item 1): the graph workload traced with --kinds graph stores one graph
# record per launch (== the truth's graph launches) and is COMPLETE; with
# --kinds kernel the nodes' records are stored instead (nodes x launches);
# with kernel,graph the graph records and the plain launches' kernel
# records; a CUPTI that refuses the pair (graph_strict=1) makes the agent
# say to choose one.
set -u
b=${top_builddir:?}
for f in "$b/cuptop" "$b/cuptop-simapp" "$b/libcuptop-simcupti.so" "$b/libcuptop-agent.so"; do
    [ -e "$f" ] || { echo "missing $f: skipped"; exit 77; }
done
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-graph.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { # NAME GOT WANT
    if [ "$2" = "$3" ]; then echo "ok   $1: $2"; else echo "FAIL $1: $2 (want $3)"; fail=1; fi
}
export CUPTOPSIM_SCENARIO=graph CUPTOPSIM_OPS=400 CUPTOPSIM_GRAPH_NODES=6 CUPTOPSIM_SEED=3
stored() { # STORE KIND: records of KIND in the store's one session
    "$b/cuptop" sessions --store "$1" --json |
        python3 -c "import json,sys; print(json.load(sys.stdin)[0]['records_by_kind']['$2'])"
}
truth() { sed -n "s/^$2 $3//p" "$1" | head -1 | tr -d ' '; }

CUPTOPSIM_TRUTH=$tmp/t1 "$b/cuptop" run --kinds graph --store "$tmp/s1" -- \
    "$b/cuptop-simapp" --seconds 10 2>"$tmp/e1"
check "graph: run exit" $? 0
check "graph: truth launches" "$(truth "$tmp/t1" ops "0 graph")" 400
check "graph: stored graph records = launches" "$(stored "$tmp/s1" graph)" \
    "$(truth "$tmp/t1" ops "0 graph")"
check "graph: no kernel records" "$(stored "$tmp/s1" kernel)" 0
sid=$("$b/cuptop" sessions --store "$tmp/s1" --json |
    python3 -c "import json,sys; print(json.load(sys.stdin)[0]['id'])")
"$b/cuptop" export --store "$tmp/s1" "$sid" --from 2000-01-01T00:00:00Z \
    --to 2100-01-01T00:00:00Z --format chrome -o "$tmp/t1.json" 2>/dev/null
check "graph: chrome slices named graph <id>" \
    "$(grep -o '"name":"graph [0-9]*"' "$tmp/t1.json" | wc -l | tr -d ' ')" 400
v=$("$b/cuptop" check --store "$tmp/s1" --all | head -1)
check "graph: verdict" "${v##*: }" COMPLETE

CUPTOPSIM_TRUTH=$tmp/t2 "$b/cuptop" run --kinds kernel --store "$tmp/s2" -- \
    "$b/cuptop-simapp" --seconds 10 2>"$tmp/e2"
check "kernel: run exit" $? 0
nodes=$(truth "$tmp/t2" graph_node_records 0)
check "kernel: node records = nodes x launches" "$nodes" $((6 * 400))
check "kernel: stored kernel records = nodes + plain launches" "$(stored "$tmp/s2" kernel)" \
    $((nodes + $(truth "$tmp/t2" ops "0 kernel")))
check "kernel: no graph records" "$(stored "$tmp/s2" graph)" 0

# kernel,graph: CUPTI 13 allows GRAPH_TRACE beside CONCURRENT_KERNEL (the
# agent's kernel kind): graph launches make their graph record only, plain
# launches their kernel record
CUPTOPSIM_TRUTH=$tmp/t3 "$b/cuptop" run --kinds kernel,graph --store "$tmp/s3" -- \
    "$b/cuptop-simapp" --seconds 10 2>"$tmp/e3"
check "kernel,graph: run exit" $? 0
check "kernel,graph: graph records = launches" "$(stored "$tmp/s3" graph)" \
    "$(truth "$tmp/t3" ops "0 graph")"
check "kernel,graph: kernel records = plain launches" "$(stored "$tmp/s3" kernel)" \
    "$(truth "$tmp/t3" ops "0 kernel")"
check "kernel,graph: no node records" "$(truth "$tmp/t3" graph_node_records 0)" 0
v=$("$b/cuptop" check --store "$tmp/s3" --all | head -1)
check "kernel,graph: verdict" "${v##*: }" COMPLETE

# per graph id: report --json (count, p50/p90/p99) against the jsonl
# export's records (nearest rank, within 1/128), the text report, and the
# perfetto export (one slice "graph <id>" per launch); compare's graph
# groups carry the same counts
sid3=$("$b/cuptop" sessions --store "$tmp/s3" --json |
    python3 -c "import json,sys; print(json.load(sys.stdin)[0]['id'])")
win="--from 2000-01-01T00:00:00Z --to 2100-01-01T00:00:00Z"
"$b/cuptop" report --json --store "$tmp/s3" "$sid3" >"$tmp/r3.json"
check "report --json: exit" $? 0
"$b/cuptop" report --store "$tmp/s3" "$sid3" >"$tmp/r3.txt"
# shellcheck disable=SC2086
"$b/cuptop" export --store "$tmp/s3" "$sid3" $win --format jsonl -o "$tmp/x3.jsonl" 2>/dev/null
# shellcheck disable=SC2086
"$b/cuptop" export --store "$tmp/s3" "$sid3" $win --format perfetto -o "$tmp/x3.pftrace" 2>/dev/null
"$b/cuptop" compare --json --store "$tmp/s1" --store "$tmp/s3" "$sid" "$sid3" >"$tmp/c13.json"
check "compare --json: exit (comparable, kinds differ)" $? 1
pf=${top_srcdir:?}/tests/perfetto/pftrace.py
python3 "$pf" "$tmp/x3.pftrace" >"$tmp/x3.pf.json" 2>"$tmp/pf.err" || echo "(pftrace.py: $(head -1 "$tmp/pf.err"))"
check "per graph id: report, jsonl, perfetto, compare agree" "$(python3 - "$tmp" "$(truth "$tmp/t3" ops "0 graph")" <<'PY'
import json, math, re, sys
tmp, launches = sys.argv[1], int(sys.argv[2])
rep = json.load(open(tmp + "/r3.json"))["graphs"]
durs = {}
for line in open(tmp + "/x3.jsonl"):
    r = json.loads(line)
    if r["kind"] == "graph":
        assert r["name"] == "graph %d" % r["graph_id"], r["name"]
        durs.setdefault(r["graph_id"], []).append(r["end_ns"] - r["start_ns"])
errs = []
if rep["launches"] != launches:
    errs.append("report launches %d, truth %d" % (rep["launches"], launches))
if sum(len(v) for v in durs.values()) != launches:
    errs.append("jsonl graph records %d" % sum(len(v) for v in durs.values()))
ids = sorted(durs)
if [g["graph_id"] for g in rep["by_id"]] != ids:
    errs.append("graph ids %s vs %s" % ([g["graph_id"] for g in rep["by_id"]], ids))
text = open(tmp + "/r3.txt").read()
for g in rep["by_id"]:
    d = sorted(durs.get(g["graph_id"], []))
    if g["count"] != len(d):
        errs.append("graph %d: count %d, jsonl %d" % (g["graph_id"], g["count"], len(d)))
        continue
    for p in (50, 90, 99):
        want = d[max(1, math.ceil(p / 100 * len(d))) - 1]
        got = g["p%d_ns" % p]
        if abs(got - want) > want / 128 + 1:
            errs.append("graph %d p%d %d vs %d" % (g["graph_id"], p, got, want))
    if not re.search(r"^\s+%d\s+%d\s" % (g["graph_id"], g["count"]), text, re.M):
        errs.append("graph %d: not in the text report" % g["graph_id"])
pf = json.load(open(tmp + "/x3.pf.json"))
names = [s["name"] for s in pf["slices"] if s["name"].startswith("graph ")]
for g in rep["by_id"]:
    if names.count("graph %d" % g["graph_id"]) != g["count"]:
        errs.append("perfetto graph %d: %d slices" % (g["graph_id"], names.count("graph %d" % g["graph_id"])))
cmp = json.load(open(tmp + "/c13.json"))
cg = {d["name"]: d for d in cmp["durations"] if d["kind"] == "graph"}
for g in rep["by_id"]:
    c = cg.get("graph %d" % g["graph_id"])
    if not c or c["b"]["count"] != g["count"] or c["b"]["p90_ns"] != g["p90_ns"]:
        errs.append("compare graph %d: %s" % (g["graph_id"], c and c["b"]))
if cmp["sides"][1]["graphs"] != launches:
    errs.append("compare side B graphs %d" % cmp["sides"][1]["graphs"])
print("; ".join(errs) if errs else "%d ids, %d launches" % (len(ids), launches))
PY
)" "3 ids, $(truth "$tmp/t3" ops "0 graph") launches"

# the launch ledger: one graph record expected per cuGraphLaunch (driver
# callback), matched by correlation id; records CUPTI loses silently
# (silent=N) are `unrecorded`, per kind, exactly the simulator's count
CUPTOPSIM_FAULTS=silent=37 CUPTOPSIM_TRUTH=$tmp/t5 "$b/cuptop" run --ledger --kinds kernel,graph \
    --store "$tmp/s5" -- "$b/cuptop-simapp" --seconds 10 2>"$tmp/e5"
check "ledger: run exit" $? 0
sid5=$("$b/cuptop" sessions --store "$tmp/s5" --json |
    python3 -c "import json,sys; print(json.load(sys.stdin)[0]['id'])")
"$b/cuptop" report --store "$tmp/s5" "$sid5" >"$tmp/r5.txt"
led() { # KIND: "launched arrived missing unrecorded" from the report
    sed -n "s/^  $1: \([0-9]*\) launched, \([0-9]*\) arrived, \([0-9]*\) missing (\([0-9]*\) unrecorded).*/\1 \2 \3 \4/p" "$tmp/r5.txt"
}
g_sil=$(truth "$tmp/t5" silent "0 graph")
k_sil=$(truth "$tmp/t5" silent "0 kernel")
check "ledger: some graph records lost silently" "$([ "${g_sil:-0}" -gt 0 ] && echo yes)" yes
check "ledger graph: launched arrived missing unrecorded" "$(led graph)" \
    "$(truth "$tmp/t5" ops "0 graph") $(truth "$tmp/t5" delivered "0 graph") $g_sil $g_sil"
check "ledger kernel: launched arrived missing unrecorded" "$(led kernel)" \
    "$(truth "$tmp/t5" ops "0 kernel") $(truth "$tmp/t5" delivered "0 kernel") $k_sil $k_sil"
check "ledger: session unrecorded" "$("$b/cuptop" sessions --store "$tmp/s5" --json |
    python3 -c "import json,sys; print(json.load(sys.stdin)[0]['loss']['unrecorded'])")" \
    $((g_sil + k_sil))
# shellcheck disable=SC2086
"$b/cuptop" export --store "$tmp/s5" "$sid5" $win --format chrome -o "$tmp/x5.json" 2>/dev/null
check "ledger: chrome marks each lost graph launch" \
    "$(grep -o '"name":"lost: graph"' "$tmp/x5.json" | wc -l | tr -d ' ')" "$g_sil"

# a CUPTI that refuses the pair (graph_strict=1): the agent keeps kernel
# and its note says to choose one
CUPTOPSIM_FAULTS=graph_strict=1 CUPTOPSIM_TRUTH=$tmp/t4 "$b/cuptop" run --kinds kernel,graph \
    --store "$tmp/s4" -- "$b/cuptop-simapp" --seconds 10 2>"$tmp/e4"
check "strict: run exit" $? 0
if "$b/cuptop" sessions --store "$tmp/s4" --json | grep -q "choose one).*NOT_COMPATIBLE"; then
    echo "ok   strict: the agent's note names the error and says to choose one"
else
    echo "FAIL strict: no word on the graph/kernel limit"
    "$b/cuptop" sessions --store "$tmp/s4" --json | head -c 2000; fail=1
fi
check "strict: graph records (refused)" "$(stored "$tmp/s4" graph)" 0
check "strict: kernel records kept" "$(stored "$tmp/s4" kernel)" \
    $(($(truth "$tmp/t4" graph_node_records 0) + $(truth "$tmp/t4" ops "0 kernel")))
exit $fail
