#!/usr/bin/env python3
"""check_trace.py - strict checks of a Chrome Trace Event JSON file written by
`cuptop export --format chrome`.

  check_trace.py FILE [--expect-overlap] [--expect-flows] [--min-events N]
                 [--store-jsonl JSONL]

JSON: parsed strictly (duplicate keys, NaN/Infinity rejected; the file must
be valid UTF-8).  Trace-event rules: every X event has ts and dur (>= 0);
every ts >= 0; flows pair up ("s" then "f" with the same id, s.ts <= f.ts,
bp "e" on f); slices on one (pid, tid) nest; every pid used has a
process_name and every (pid, tid) with slices a thread_name; the metadata
block (otherData) names the verdict, loss counts, base_ns, epochs, versions.
Times are compared in integer nanoseconds (ts/dur parsed as decimals).
With --store-jsonl (`cuptop export --format jsonl` of the same window: the
store's records), Kineto's conventions are checked against the store: every
record drawn once, with Kineto's category (kernel, gpu_memcpy, gpu_memset,
cuda_runtime, cuda_driver), args correlation, device, stream, grid, block,
"registers per thread", "shared memory", bytes, "memory bandwidth (GB/s)",
cbid; copies and sets named as Kineto names them; no "External id"; the
devices in a top-level deviceProperties.
Exit 0 when all rules hold, 1 with one line per violation otherwise.
"""
import collections
import decimal
import json
import sys


def no_dupes(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError("duplicate key %r" % k)
        d[k] = v
    return d


def bad_constant(name):
    raise ValueError("non-standard JSON constant %s" % name)


def ns(v):
    return int((decimal.Decimal(v) * 1000).to_integral_value())


KINETO_CAT = {"kernel": "kernel", "memcpy": "gpu_memcpy", "memset": "gpu_memset",
              "runtime": "cuda_runtime", "driver": "cuda_driver", "sync": "cuda_sync"}
COPY_KINDS = ["<unknown>", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD",
              "HtoH", "PtoP"]
MEMORY_KINDS = ["Unknown", "Pageable", "Pinned", "Device", "Array", "Managed", "Device Static",
                "Managed Static"]


def kineto_name(r):
    """Kineto's name of a stored copy or set (libkineto memcpyName, memset name)."""
    def mem(k):
        return MEMORY_KINDS[k] if k < len(MEMORY_KINDS) else "Unrecognized"
    if r["kind"] == "memcpy":
        a = r["aux"]
        ck = a & 0xff
        return "Memcpy %s (%s -> %s)" % (COPY_KINDS[ck] if ck < len(COPY_KINDS) else "<unknown>",
                                         mem((a >> 8) & 0xff), mem((a >> 16) & 0xff))
    return "Memset (%s)" % mem(r["memory_kind"])


def check_kineto(doc, jsonl, errors):
    """Kineto's categories, names and args of each drawn record, against the store."""
    recs = [json.loads(line) for line in open(jsonl, encoding="utf-8")]
    sess, recs = recs[0], recs[1:]
    base = doc["otherData"]["base_ns"]
    want = collections.Counter()
    by_key = collections.defaultdict(list)
    for r in recs:
        if r["kind"] not in KINETO_CAT or r["zero_ts"] or not r["start_ns"]:
            continue
        want[KINETO_CAT[r["kind"]]] += 1
        by_key[(KINETO_CAT[r["kind"]], r["start_ns"], r["correlation"])].append(r)
    got = collections.Counter()
    checked = 0
    for e in doc["traceEvents"]:
        cat = e.get("cat")
        if e.get("ph") != "X" or cat not in KINETO_CAT.values():
            continue
        got[cat] += 1
        a = e["args"]
        if "External id" in a:
            errors.append("event %r has an External id (cuptop has no CPU ops to link)" % e["name"])
        cand = by_key.get((cat, base + ns(e["ts"]), a.get("correlation")))
        if not cand:
            errors.append("%s event %r at ts %s: no such record in the store" % (cat, e["name"], e["ts"]))
            continue
        r = cand.pop(0)
        dur = max(r["end_ns"] - r["start_ns"], 0)
        exp = {"correlation": r["correlation"]}
        if cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            exp.update(device=r["device"], stream=r["stream"], context=r["context"])
        if cat == "kernel":
            exp.update({"grid": r["grid"], "block": r["block"], "registers per thread": r["aux"],
                        "shared memory": r["bytes"]})
        elif cat in ("gpu_memcpy", "gpu_memset"):
            exp["bytes"] = r["bytes"]
            if e["name"] != kineto_name(r):
                errors.append("%s named %r, Kineto's name is %r" % (cat, e["name"], kineto_name(r)))
            bw = a.get("memory bandwidth (GB/s)")
            # three decimals, cut: bytes * 1000 // dur thousandths
            if dur and (bw is None or ns(bw) != r["bytes"] * 1000 // dur):
                errors.append("%s bandwidth %r, want %r" % (cat, bw, r["bytes"] / dur))
        elif cat in ("cuda_runtime", "cuda_driver"):
            exp["cbid"] = r["cbid"]
        for k, v in exp.items():
            if a.get(k) != v:
                errors.append("%s %r: args[%r] = %r, the store says %r" % (cat, e["name"], k,
                                                                         a.get(k), v))
        checked += 1
        if len(errors) > 50:
            return
    if got != want:
        errors.append("records by Kineto category %r, the store has %r" % (dict(got), dict(want)))
    props = doc.get("deviceProperties")
    if not isinstance(props, list):
        errors.append("no top-level deviceProperties")
    else:
        if props != doc["otherData"].get("deviceProperties"):
            errors.append("top-level deviceProperties differ from otherData's")
        names = {d["index"]: d["name"] for d in sess.get("devices", [])}
        if {d["id"]: d["name"] for d in props} != names:
            errors.append("deviceProperties %r, the store's devices %r" % (props, names))
    if not checked:
        errors.append("no Kineto event checked")


def main(argv):
    path = argv[1]
    expect_overlap = "--expect-overlap" in argv
    expect_flows = "--expect-flows" in argv
    min_events = 0
    if "--min-events" in argv:
        min_events = int(argv[argv.index("--min-events") + 1])
    errors = []

    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError as e:
        print("%s: not valid UTF-8: %s" % (path, e))
        return 1
    try:
        doc = json.loads(text, object_pairs_hook=no_dupes, parse_float=decimal.Decimal,
                         parse_constant=bad_constant)
    except ValueError as e:
        print("%s: invalid JSON: %s" % (path, e))
        return 1

    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        print("%s: no traceEvents array" % path)
        return 1
    meta = doc.get("otherData")
    if not isinstance(meta, dict):
        errors.append("no otherData metadata block")
    else:
        for key in ("verdict", "loss", "base_ns", "epochs", "versions", "session", "window"):
            if key not in meta:
                errors.append("otherData lacks %r" % key)
        if meta.get("verdict") not in ("COMPLETE", "INCOMPLETE"):
            errors.append("otherData.verdict is %r" % meta.get("verdict"))

    events = doc["traceEvents"]
    if len(events) < min_events:
        errors.append("only %d events (expected >= %d)" % (len(events), min_events))
    procs, threads = set(), set()
    slices = collections.defaultdict(list)
    used_pids = set()
    flows = collections.defaultdict(list)
    overlap_lanes = 0
    for i, e in enumerate(events):
        ph = e.get("ph")
        if ph is None:
            errors.append("event %d has no ph" % i)
            continue
        if ph == "M":
            if e.get("name") == "process_name":
                procs.add(e["pid"])
            elif e.get("name") == "thread_name":
                threads.add((e["pid"], e["tid"]))
                if "(overlap" in e["args"]["name"]:
                    overlap_lanes += 1
            continue
        if "ts" not in e:
            errors.append("event %d (%s) has no ts" % (i, ph))
            continue
        ts = ns(e["ts"])
        if ts < 0:
            errors.append("event %d has negative ts" % i)
        used_pids.add(e.get("pid"))
        if ph == "X":
            if "dur" not in e:
                errors.append("X event %d has no dur" % i)
                continue
            dur = ns(e["dur"])
            if dur < 0:
                errors.append("X event %d has negative dur" % i)
            if "tid" not in e or "pid" not in e or "name" not in e:
                errors.append("X event %d lacks pid/tid/name" % i)
                continue
            slices[(e["pid"], e["tid"])].append((ts, ts + dur, i))
        elif ph in ("s", "f"):
            if "id" not in e:
                errors.append("flow event %d has no id" % i)
                continue
            if ph == "f" and e.get("bp") != "e":
                errors.append("flow end %d lacks bp e" % i)
            flows[e["id"]].append((ph, ts, i))
        elif ph in ("C", "i", "I"):
            pass
        else:
            errors.append("event %d has unexpected ph %r" % (i, ph))

    if "--store-jsonl" in argv:
        check_kineto(doc, argv[argv.index("--store-jsonl") + 1], errors)
    for pid in used_pids:
        if pid not in procs:
            errors.append("pid %r has no process_name" % pid)
    for key, lst in slices.items():
        if key not in threads:
            errors.append("track %r has no thread_name" % (key,))
        lst.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for start, end, i in lst:
            while stack and stack[-1] <= start:
                stack.pop()
            if stack and end > stack[-1]:
                errors.append("slice %d on %r [%d, %d] overlaps its parent (ends %d) without "
                              "nesting" % (i, key, start, end, stack[-1]))
                if len(errors) > 50:
                    break
            stack.append(end)
    nflows = 0
    for fid, lst in flows.items():
        kinds = [p for p, _, _ in lst]
        if sorted(kinds) != ["f", "s"]:
            errors.append("flow id %r has events %r (want one s and one f)" % (fid, kinds))
            continue
        s = [x for x in lst if x[0] == "s"][0]
        f = [x for x in lst if x[0] == "f"][0]
        if s[2] > f[2] or s[1] > f[1]:
            errors.append("flow id %r: s does not come before f" % fid)
        nflows += 1
    if expect_flows and not nflows:
        errors.append("no flow pairs, but flows were expected")
    if expect_overlap and not overlap_lanes:
        errors.append("no overlap lane, but overlapping slices were expected")
    for e in errors[:50]:
        print("%s: %s" % (path, e))
    if not errors:
        print("%s: ok: %d events, %d slices on %d tracks, %d flows, %d overlap lanes" % (
            path, len(events), sum(len(v) for v in slices.values()), len(slices), nflows,
            overlap_lanes))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
