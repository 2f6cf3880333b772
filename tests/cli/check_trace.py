#!/usr/bin/env python3
"""check_trace.py - strict checks of a Chrome Trace Event JSON file written by
`cuptop export --format chrome`.

  check_trace.py FILE [--expect-overlap] [--expect-flows] [--min-events N]

JSON: parsed strictly (duplicate keys, NaN/Infinity rejected; the file must
be valid UTF-8).  Trace-event rules: every X event has ts and dur (>= 0);
every ts >= 0; flows pair up ("s" then "f" with the same id, s.ts <= f.ts,
bp "e" on f); slices on one (pid, tid) nest; every pid used has a
process_name and every (pid, tid) with slices a thread_name; the metadata
block (otherData) names the verdict, loss counts, base_ns, epochs, versions.
Times are compared in integer nanoseconds (ts/dur parsed as decimals).
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
