#!/bin/sh
# tests/graph/nvtx_graph.sh - graph slices named by the NVTX range around
# their launch (issue 32 item 1): simdrive launches graphs on one thread
# inside NVTX ranges (nested push/pop, a start/end range, a name with a
# quote and a backslash) and outside any; the chrome, jsonl and perfetto
# exports name each graph launch "graph <id> (NVTX: <innermost range>)"
# with args.nvtx_range, and "graph <id>" with no nvtx_range when its launch
# was in no range.  Without API records (no runtime or driver kind) or
# without ranges (marker off) every name stays "graph <id>".  And a store
# written by hand (fill_store --graph-nvtx): ranges that do not nest, a
# launch on another thread, graph records read before their launches.  Exits 77
# without the simulator.
SIM_LIB_NAME=nvtxgraph
. "${top_srcdir:?}/tests/agent/sim_lib.sh"
pf=$s/tests/perfetto/pftrace.py
win="--from 2000-01-01T00:00:00Z --to 2100-01-01T00:00:00Z"
# a"\ : a quote and a backslash in a range name
SEQ=ctx,push:step,push:forward,graph:3,pop,graph:2,pop,graph:4,rstart:async,graph:1,rend,xpush:61225c,graph:1,pop,graph:1
# the range each launch (in launch order) was made in
WANT='forward forward forward step step - - - - async a"\ -'

run() { # NAME KINDS: trace SEQ, export chrome, jsonl and perfetto
    d=$tmp/$1
    mkdir -p "$d"
    env CUPTOP_KINDS="$2" CUPTOP_STORE="$d/store" NVTX_INJECTION64_PATH="$agent" \
        timeout 120 "$drive" "$sim" "$agent" "$d/truth" "seq:$SEQ" return >"$d/out" 2>"$d/err"
    check "$1: simdrive exit" $? 0
    id=$("$ctl" sessions "$d/store" | head -1)
    for f in chrome jsonl perfetto; do
        # shellcheck disable=SC2086
        "$b/cuptop" export --store "$d/store" "$id" $win --format "$f" -o "$d/x.$f" 2>"$d/export.err" ||
            { echo "FAIL $1: export $f"; cat "$d/export.err"; fail=1; }
    done
    python3 "$pf" "$d/x.perfetto" >"$d/pf.json" 2>"$d/pf.err" ||
        { echo "FAIL $1: pftrace.py"; head -3 "$d/pf.err"; fail=1; }
}

names() { # NAME WANT: the graph names of every export, per launch, against WANT
    python3 - "$tmp/$1" "$2" <<'PY'
import json, sys
d, want = sys.argv[1], sys.argv[2].split(" ")
errs = []
# jsonl: the launches in correlation (launch) order
recs = sorted((json.loads(l) for l in open(d + "/x.jsonl")), key=lambda r: r.get("correlation", 0))
recs = [r for r in recs if r["kind"] == "graph"]
if len(recs) != len(want):
    print("jsonl: %d graph records, want %d" % (len(recs), len(want)))
    sys.exit(0)
def expect(gid, rng):
    return "graph %d" % gid if rng == "-" else "graph %d (NVTX: %s)" % (gid, rng)
by_corr, by_time = {}, {}
for r, rng in zip(recs, want):
    name = expect(r["graph_id"], rng)
    by_corr[r["correlation"]] = (name, rng)
    by_time[(r["start_ns"], r["end_ns"] - r["start_ns"])] = (name, rng)
    if r["name"] != name or r.get("nvtx_range", "-") != rng:
        errs.append("jsonl corr %d: %r %r, want %r" % (r["correlation"], r["name"], r.get("nvtx_range"), name))
# chrome: args.correlation
ev = [e for e in json.load(open(d + "/x.chrome"))["traceEvents"] if e.get("cat") == "graph"]
if len(ev) != len(want):
    errs.append("chrome: %d graph slices" % len(ev))
for e in ev:
    name, rng = by_corr.get(e["args"]["correlation"], ("?", "?"))
    if e["name"] != name or e["args"].get("nvtx_range", "-") != rng:
        errs.append("chrome corr %d: %r %r, want %r" % (e["args"]["correlation"], e["name"], e["args"].get("nvtx_range"), name))
# perfetto: the slice of the record that starts and lasts as long
sl = [s for s in json.load(open(d + "/pf.json"))["slices"] if s.get("cat") == "graph"]
if len(sl) != len(want):
    errs.append("perfetto: %d graph slices" % len(sl))
for s in sl:
    name, rng = by_time.get((s["ts"], s["dur"]), ("?", "?"))
    if s["name"] != name or s["args"].get("nvtx_range", "-") != rng:
        errs.append("perfetto %d: %r %r, want %r" % (s["ts"], s["name"], s["args"].get("nvtx_range"), name))
print("; ".join(errs) if errs else "ok")
PY
}

# runtime API records (the launch's thread) and ranges: named
run named graph,runtime,marker
check "named: chrome, jsonl, perfetto name graphs by their range" "$(names named "$WANT")" ok
if grep -q '"graphs_named_by_nvtx":7' "$tmp/named/x.chrome"; then
    echo "ok   named: chrome's export instant counts 7 named graphs"
else
    echo "FAIL named: graphs_named_by_nvtx"; fail=1
fi

# the driver's cuGraphLaunch alone gives the thread as well
run driver graph,driver,marker
check "driver: named by the range" "$(names driver "$WANT")" ok

# no API record (neither runtime nor driver kind): names unchanged
run noapi graph,marker
check "no API record: names unchanged" "$(names noapi '- - - - - - - - - - - -')" ok

# no ranges (marker off): names unchanged
run noranges graph,runtime
check "no ranges: names unchanged" "$(names noranges '- - - - - - - - - - - -')" ok

# a store written by hand (fill_store --graph-nvtx): ranges that nest and a
# start/end range that does not, launches on two threads, one graph record
# without its launch record, and the graph records' chunk read before the
# launches' (the jsonl writer holds them until their launch is read)
fs=$tmp/fill
mkdir -p "$fs"
"$b/tests/cli/fill_store" --graph-nvtx "$fs/store" || { echo "FAIL fill_store --graph-nvtx"; exit 1; }
for f in chrome jsonl perfetto; do
    # shellcheck disable=SC2086
    "$b/cuptop" export --store "$fs/store" 20250101T120000-1001 $win --format "$f" -o "$fs/x.$f" \
        2>"$fs/export.err" || { echo "FAIL fill: export $f"; cat "$fs/export.err"; fail=1; }
done
python3 "$pf" "$fs/x.perfetto" >"$fs/pf.json" 2>"$fs/pf.err" ||
    { echo "FAIL fill: pftrace.py"; head -3 "$fs/pf.err"; fail=1; }
check "fill: innermost range (nested, not nesting, other thread, no launch)" \
    "$(names fill 'inner async async outer - - -')" ok
check "fill: jsonl writes a graph record after its launch's record" "$(python3 - "$fs/x.jsonl" <<'PY'
import json, sys
seen, bad = set(), 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["kind"] == "runtime":
        seen.add(r["correlation"])
    elif r["kind"] == "graph" and r["correlation"] != 9007 and r["correlation"] not in seen:
        bad += 1
print(bad)
PY
)" 0
exit $fail
