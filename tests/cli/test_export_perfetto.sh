#!/bin/sh
# test_export_perfetto.sh - export --format perfetto (issue 33): the file
# decodes with protoc against Perfetto's own schema (tests/perfetto/, a
# trimmed wire-compatible subset: a field it does not know shows as a
# number and fails the test), and a round trip through tests/perfetto/
# pftrace.py (sequences, incremental clocks, interning, BEGIN/END nesting
# as trace processor reads them) gives back every record of the store
# (name, category, start, duration, track), the launch -> GPU flows, the
# health counters, the loss windows, NVTX ranges, the metadata.
. "${top_srcdir:?}/tests/cli/cli_lib.sh"

command -v protoc >/dev/null || { echo "no protoc (Debian: protobuf-compiler): skipped"; exit 77; }
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
PROTO_DIR=$top_srcdir/tests/perfetto
PFTRACE=$PROTO_DIR/pftrace.py
S=$WORK/store
O=$WORK/out
mkdir -p "$O"
"$FILL" "$S" || { echo "fill_store failed" >&2; exit 1; }
CLEAN=20250101T120000-1001

# protoc FILE OUT: decode with Perfetto's schema; no unknown (numbered) field
protoc_check() {
    if ! protoc --decode=perfetto.protos.Trace -I "$PROTO_DIR" "$PROTO_DIR/perfetto_trace.proto" \
        <"$1" >"$2" 2>"$2.protoc.err"; then
        fail "protoc cannot decode $1: $(head -3 "$2.protoc.err")"
        return
    fi
    grep -qE '^ *[0-9]+: ' "$2" && fail "$1: fields unknown to Perfetto's schema: $(grep -E '^ *[0-9]+: ' "$2" | head -3)"
}

# decode FILE: the file as written (deflated chunks: compressed_packets) and
# the packets inside them (FILE.inflated, FILE.txt) both decode with protoc;
# pftrace.py reads it as trace processor does (FILE.json)
decode() {
    checks=$((checks + 1))
    protoc_check "$1" "$1.outer.txt"
    python3 "$PFTRACE" --inflate "$1" >"$1.inflated" || fail "$1: pftrace.py cannot inflate it"
    protoc_check "$1.inflated" "$1.txt"
    python3 "$PFTRACE" "$1" >"$1.json" || fail "$1: pftrace.py cannot read it"
}

# ---- the whole clean session, against its records (jsonl) and chrome ------
run 0 pf_all "$CUPTOP" export --store "$S" "$CLEAN" --from start --to end --format perfetto \
    -o "$O/all.pftrace"
run 0 jsonl_all "$CUPTOP" export --store "$S" "$CLEAN" --from start --to end --format jsonl \
    -o "$O/all.jsonl"
run 0 chrome_all "$CUPTOP" export --store "$S" "$CLEAN" --from start --to end --format chrome \
    -o "$O/all.json"
decode "$O/all.pftrace"
grep -q 'primary_trace_clock: BUILTIN_CLOCK_REALTIME' "$O/all.pftrace.txt" ||
    fail "the trace clock is not CLOCK_REALTIME"
python3 - "$O/all.pftrace.json" "$O/all.jsonl" "$O/all.json" "$top_srcdir/tests/cli" \
    <<'PY' || fail "perfetto round trip (whole session)"
import collections, json, sys
t = json.load(open(sys.argv[1]))
recs = [json.loads(l) for l in open(sys.argv[2])][1:]
chrome = json.load(open(sys.argv[3]))
sl = t["slices"]
sys.path.insert(0, sys.argv[4])
from check_trace import KINETO_CAT, kineto_name
def cat(r):
    return KINETO_CAT.get(r["kind"], r["kind"])
def name(r):  # Kineto's names for copies and sets, as the chrome export's
    return r["name"] or (kineto_name(r) if r["kind"] in ("memcpy", "memset") else r["kind"])
# every record with a time of its own is one slice: name, Kineto's category,
# start, duration
want = collections.Counter((cat(r), name(r), r["start_ns"],
                            max(r["end_ns"] - r["start_ns"], 0))
                           for r in recs if r["start_ns"] and not r["zero_ts"])
got = collections.Counter((s["cat"], s["name"], s["ts"], s["dur"]) for s in sl)
assert got == want, (sum(got.values()), sum(want.values()), list((got - want).items())[:3],
                     list((want - got).items())[:3])
assert len(sl) == 605, len(sl)
# tracks: GPU records on "GPU d: NAME" / "stream S", API calls on their thread
by_key = {(cat(r), r["start_ns"], name(r)): r for r in recs}
for s in sl:
    r = by_key[(s["cat"], s["ts"], s["name"])]
    if r["kind"] in ("kernel", "memcpy", "memset"):
        assert s["path"][0].startswith("GPU %d" % r["device"]), (s["path"], r)
        assert s["path"][-1].split(" (overlap")[0] == "stream %d" % r["stream"], (s["path"], r)
    elif r["kind"] in ("runtime", "driver"):
        assert (s["pid"], s["tid"]) == (r["pid"], r["tid"]), (s, r)
    if r["kind"] in ("memcpy", "memset"):
        assert s["args"]["bytes"] == r["bytes"], (s, r)
# the names as shown: demangled, hostile bytes made valid UTF-8
names = {s["name"] for s in sl}
assert any(n.startswith("evil\n\x1b[2J") and "\ufffd" in n for n in names), names
assert "\u00fcn\u00efc\u00f6d\u00e9_kernel \u2028 sep" in names
# nesting: on each track a slice lies inside the one it is nested in
stacks = collections.defaultdict(list)
for s in sorted(sl, key=lambda s: (s["ts"], -s["dur"])):
    st = stacks[s["track"]]
    while st and st[-1]["ts"] + st[-1]["dur"] <= s["ts"] and st[-1] is not s:
        st.pop()
    assert len(st) == s["depth"], ("depth", s, st[-1:] if st else None)
    if st:
        assert s["ts"] + s["dur"] <= st[-1]["ts"] + st[-1]["dur"], ("not nested", s, st[-1])
    st.append(s)
assert max(s["depth"] for s in sl) >= 1     # driver calls inside runtime calls
assert any("(overlap 1)" in s["path"][-1] for s in sl)  # stream 99's overlapping kernels
# launch -> GPU flows: as many as chrome draws, API call -> later GPU record
nflows = sum(1 for e in chrome["traceEvents"] if e.get("ph") == "s")
assert len(t["flows"]) == nflows and nflows > 0, (len(t["flows"]), nflows)
for a, b in t["flows"]:
    a, b = sl[a], sl[b]
    assert a["cat"] in ("cuda_runtime", "cuda_driver") and \
        b["cat"] in ("kernel", "gpu_memcpy", "gpu_memset"), (a, b)
    assert a["ts"] <= b["ts"]
    # the ids are small and handed out again: the pair must still be one
    # launch and its own GPU record
    ra, rb = by_key[(a["cat"], a["ts"], a["name"])], by_key[(b["cat"], b["ts"], b["name"])]
    assert ra["correlation"] == rb["correlation"], (ra, rb)
# health counters: records/s by kind as in chrome's counter events
base = chrome["otherData"]["base_ns"]
cev = {int(round(float(e["ts"]) * 1000)) + base: e["args"] for e in chrome["traceEvents"]
       if e.get("ph") == "C" and e["name"] == "records/s"}
for kind in ("kernel", "runtime"):
    series = dict(t["counters"]["cuptop health/records/s " + kind])
    assert series and {ts: v for ts, v in series.items()} == {ts: a[kind] for ts, a in cev.items()}, kind
assert "cuptop health/queue depth" in t["counters"] and "cuptop health/buffers in use (pool)" in t["counters"]
# metadata: the verdict, versions and devices (the chrome export's otherData)
m = t["metadata"]
assert m["tool"] == "cuptop" and m["verdict"] == "COMPLETE" and m["session"] == "20250101T120000-1001", m
od = m["otherData"]["otherData"]
assert od["versions"]["driver"] == "580.159.04" and od["deviceProperties"][0]["name"] == "NVIDIA H200", od
PY

# the size: a small fraction of the chrome JSON of the same window
pf=$(wc -c <"$O/all.pftrace") js=$(wc -c <"$O/all.json")
checks=$((checks + 1))
[ $((pf * 5)) -lt "$js" ] || fail "perfetto $pf bytes is not 5x smaller than chrome's $js"

# deflated by default (compressed_packets); --uncompressed writes the very
# packets the chunks hold, as they are
grep -q '^ *compressed_packets: ' "$O/all.pftrace.outer.txt" ||
    fail "the trace is not deflated into compressed_packets"
grep -q '^ *track_event ' "$O/all.pftrace.outer.txt" &&
    fail "track events outside compressed_packets"
run 0 pf_plain "$CUPTOP" export --store "$S" "$CLEAN" --from start --to end --format perfetto \
    --uncompressed -o "$O/plain.pftrace"
checks=$((checks + 1))
cmp -s "$O/plain.pftrace" "$O/all.pftrace.inflated" ||
    fail "--uncompressed differs from the packets inside compressed_packets"
decode "$O/plain.pftrace"
cmp -s "$O/plain.pftrace.json" "$O/all.pftrace.json" || {
    python3 - "$O/plain.pftrace.json" "$O/all.pftrace.json" <<'PY' || fail "--uncompressed reads back differently"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for k in ("bytes", "inflated_bytes", "compressed_packets"):
    a.pop(k), b.pop(k)
assert a == b
PY
}

# standard output: the same bytes
run 0 pf_stdout "$CUPTOP" export --store "$S" "$CLEAN" --from start --to end --format perfetto -o -
cmp -s "$WORK/pf_stdout.out" "$O/all.pftrace" || fail "-o - differs from the file"

# ---- a busy session (fill_store --bench: 10,000 launches on 2 threads and 6
# streams): every record back with its exact time on the incremental clocks,
# every launch's arrow to its own GPU record although flow ids are reused,
# and the size per record -----------------------------------------------------
B=$WORK/bench
"$FILL" --bench "$B" 30000 || fail "fill_store --bench"
BS=20250101T120000-4242
run 0 pf_bench "$CUPTOP" export --store "$B" "$BS" --from start --to end --format perfetto \
    -o "$O/bench.pftrace"
run 0 jsonl_bench "$CUPTOP" export --store "$B" "$BS" --from start --to end --format jsonl \
    -o "$O/bench.jsonl"
decode "$O/bench.pftrace"
python3 - "$O/bench.pftrace.json" "$O/bench.jsonl" "$O/bench.pftrace.txt" \
    <<'PY' || fail "perfetto round trip (bench session)"
import collections, json, re, sys
t = json.load(open(sys.argv[1]))
recs = [json.loads(l) for l in open(sys.argv[2])][1:]
sl = t["slices"]
assert len(recs) == 30000 and len(sl) == 30000, (len(recs), len(sl))
# the size goal of issue 33: at most 20 bytes a record, exact times
assert t["compressed_packets"] >= 1 and t["bytes"] <= 20 * 30000, (t["bytes"], t["compressed_packets"])
want = collections.Counter((r["start_ns"], r["end_ns"] - r["start_ns"]) for r in recs)
got = collections.Counter((s["ts"], s["dur"]) for s in sl)
assert got == want, (list((got - want).items())[:3], list((want - got).items())[:3])
by_ts = collections.defaultdict(list)
for r in recs:
    by_ts[r["start_ns"]].append(r)
def corr(s):
    c = {r["correlation"] for r in by_ts[s["ts"]] if r["end_ns"] - r["start_ns"] == s["dur"]}
    assert len(c) == 1, (s, c)
    return c.pop()
# every launch draws its arrow, to the GPU record of its own correlation
assert len(t["flows"]) == 10000, len(t["flows"])
for a, b in t["flows"]:
    assert corr(sl[a]) == corr(sl[b]), (sl[a], sl[b])
# ids handed out again: a few dozen ids for 10,000 arrows
ids = [int(x) for x in re.findall(r"flow_ids_old: (\d+)", open(sys.argv[3]).read())]
assert len(ids) == 20000 and max(ids) < 128, (len(ids), max(ids))
PY

# ---- an INCOMPLETE window: the losses on the "loss" track, the verdict -------
run 0 pf_drop "$CUPTOP" export --store "$S" 20250101T120100 --from +2 --to +5 --format perfetto \
    -o "$O/drop.pftrace"
decode "$O/drop.pftrace"
python3 - "$O/drop.pftrace.json" <<'PY' || fail "perfetto loss track"
import json, sys
t = json.load(open(sys.argv[1]))
assert t["metadata"]["verdict"] == "INCOMPLETE", t["metadata"]["verdict"]
loss = [s for s in t["slices"] if s["path"][-2:] == ["loss", "loss: cupti_dropped"]]
assert loss and sum(s["args"]["count"] for s in loss) == 150, loss
assert all(s["path"][0] == "cuptop health" and s["dur"] % 10**9 == 0 for s in loss), loss
assert [(s["name"], s["args"]["seconds"]) for s in loss] == [("cupti_dropped: 150", 2)], loss
assert t["metadata"]["otherData"]["otherData"]["loss"]["cupti_dropped"] == 150
assert any(k.endswith("lost/s cupti_dropped") for k in t["counters"]), list(t["counters"])
PY

# ---- the marked window and a zero-timestamp session ----------------------------
run 0 pf_hot "$CUPTOP" export --store "$S" "$CLEAN" --mark hot --format perfetto -o "$O/hot.pftrace"
run 0 jsonl_hot "$CUPTOP" export --store "$S" "$CLEAN" --mark hot --format jsonl -o "$O/hot.jsonl"
decode "$O/hot.pftrace"
python3 - "$O/hot.pftrace.json" "$O/hot.jsonl" <<'PY' || fail "perfetto --mark"
import json, sys
t = json.load(open(sys.argv[1]))
n = sum(1 for l in open(sys.argv[2])) - 1
assert len(t["slices"]) == n == 120, (len(t["slices"]), n)
PY
run 0 pf_zero "$CUPTOP" export --store "$S" 20250101T120105 --from start --to end \
    --format perfetto -o "$O/zero.pftrace"
decode "$O/zero.pftrace"

# ---- NVTX ranges and export --range ------------------------------------------------
R=$WORK/ranges
"$FILL" --ranges "$R" 5 || fail "fill_store --ranges"
run 0 pf_ranges "$CUPTOP" export --store "$R" "$CLEAN" --from start --to end --format perfetto \
    -o "$O/ranges.pftrace"
decode "$O/ranges.pftrace"
run 0 pf_range_nth "$CUPTOP" export --store "$R" "$CLEAN" --range step --nth 2 --format perfetto \
    -o "$O/step2.pftrace"
decode "$O/step2.pftrace"
run 0 pf_range_all "$CUPTOP" export --store "$R" "$CLEAN" --range step --all --format perfetto \
    -o "$O/steps"
[ -f "$O/steps/step-5.pftrace" ] || fail "--range --all: no steps/step-5.pftrace ($(ls "$O/steps"))"
python3 - "$O/ranges.pftrace.json" "$O/step2.pftrace.json" <<'PY' || fail "perfetto NVTX ranges"
import json, sys
t = json.load(open(sys.argv[1]))
steps = [s for s in t["slices"] if s["cat"] == "nvtx"]
assert [s["name"] for s in steps] == ["step"] * 5, steps
assert all(s["path"] == ["host process 1001", "thread 1 NVTX"] and s["dur"] == 500000 for s in steps), steps
assert [s["ts"] - steps[0]["ts"] for s in steps] == [i * 1000000 for i in range(5)]
r = json.load(open(sys.argv[2]))["metadata"]["otherData"]["otherData"]["range"]
assert r["name"] == "step" and r["nth"] == 2 and r["id"] == 2, r
PY

# ---- misuse ---------------------------------------------------------------------
usage_error pf_bad_format "$CUPTOP" export --store "$S" "$CLEAN" --from start --to end \
    --format protobuf -o "$O/x"
grep -q "perfetto" "$WORK/pf_bad_format.err" || fail "the format list does not name perfetto"
usage_error pf_plain_chrome "$CUPTOP" export --store "$S" "$CLEAN" --from start --to end \
    --format chrome --uncompressed -o "$O/x"
grep -q "uncompressed" "$WORK/pf_plain_chrome.err" || fail "--uncompressed with chrome: no word why"

finish
