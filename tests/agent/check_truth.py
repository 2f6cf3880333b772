#!/usr/bin/env python3
"""check_truth.py DUMP TRUTH [options] - compare what the agent stored
(agentctl dump) with the simulator's ground truth (simdrive's truth file).

Every record the simulator delivered to the agent must be accounted for
exactly once, per kind (and per device for records that carry one):

  stored + store_refused + queue_overflow + tail + declined
      == delivered - invalid                       (per kind, per device)
  parse_error == invalid                           (total)
  conflict   >= foreign records                    (by kind)
  cupti_dropped (exact rows, per device) == what CUPTI reported per context,
      and device none == what it reported for ctx NULL
  zero_ts (per kind, device) == zero-timestamp records delivered
  stolen (buffers another client took, never returned): the final status
      counts the buffers and bounds their records as conflict,
      0 < conflict_bound <= stolen records (invariant 12); none stolen:
      no buffer out and no bound
  the launch ledger (--ledger, meta.ledger in the dump): per GPU kind,
      expected == produced (in the truth's per-stream table); with no
      other loss: missing == unrecorded == silent (per kind and device),
      and per stream the missing records == produced - stored; with
      other losses: unrecorded <= silent <= missing, and per stream
      missing == produced - stored still where the ledger is whole (no
      overrun, busy, orphan, extra, ambiguous, partial, store_refused)
  a final flush that gave up (flush_ok 0): CUPTI may complete buffers
      after the final status, so per kind stored + losses <= delivered -
      invalid, and in all stored + losses + tail_bound <= delivered -
      invalid + held (the bound holds)

Options: --exit PATH (expected final exit path, or "none"), --expect
CLASS[,CLASS] (loss classes that must be non-zero; every other must be 0
unless named in --allow CLASS[,CLASS]), --host-handler SIG, --protocol 0|1
(expected protocol_complete, default 1).
"""
import sys

KINDS = ["kernel", "memcpy", "memset", "runtime", "driver", "sync", "overhead", "marker"]
# kinds whose records carry a device (API records do not: device "none")
DEVICE_KINDS = {"kernel", "memcpy", "memset"}
CLASSES = ["cupti_dropped", "declined", "queue_overflow", "parse_error", "store_refused",
           "zero_ts", "tail", "conflict", "unrecorded"]
LEDGER_KINDS = ["kernel", "memcpy", "memset"]


def load(path):
    d = {}
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if "=" in line:
            k, v = line.split("=", 1)
            d.setdefault(k, v)
    return d


def num(d, k):
    try:
        return int(d.get(k, "0"))
    except ValueError:
        return 0


def ledger_fields(text):
    return {k: int(v) if v.isdigit() else v for k, v in
            (w.split("=", 1) for w in text.split() if "=" in w)}


def ledger_check(dump, truth, dev_names, check):
    """The launch ledger against the truth (a dump without meta.ledger: none)."""
    if "meta.ledger" not in dump:
        return
    led = ledger_fields(dump["meta.ledger"])
    produced = {}   # (kind, dev, stream) -> n
    for key, v in truth.items():
        if key.startswith("produced_stream."):
            _, k, dv, s = key.split(".")
            produced[(k, dv, int(s))] = int(v)
    holes = {}      # (kind, dev, stream) -> missing
    for i in list(range(64)) + ["other"]:
        h = dump.get(f"meta.ledger.stream.{i}")
        if h:
            f = ledger_fields(h)
            for k in LEDGER_KINDS:
                holes[(k, str(f["device"]), f["stream"])] = f[k]
    others = sum(num(dump, f"loss.{c}") for c in CLASSES if c not in ("unrecorded", "store_refused"))
    for k in LEDGER_KINDS:
        prod = sum(n for (kk, _, _), n in produced.items() if kk == k)
        silent = sum(num(truth, f"silent.{k}.{dv}") for dv in dev_names)
        unrec = sum(num(dump, f"loss.unrecorded.{k}.{dv}") for dv in dev_names + ["none"])
        # a launch made while kinds were being switched is not expected
        # (registered, then taken back, or skipped): its record, if CUPTI
        # made one, arrives as an orphan or an extra
        # made while kinds were being switched, or a graph launch whose
        # nodes could not be counted (unknowable: matched, never missing)
        unsure = (led.get(f"{k}.orphan", 0) + led.get(f"{k}.extra", 0) + led.get("ambiguous", 0)
                  + led.get("unknowable", 0))
        if unsure:
            check(f"ledger {k}: expected {led.get(f'{k}.expected')} <= produced {prod}",
                  led.get(f"{k}.expected", 0) <= prod, True)
        else:
            check(f"ledger {k}: expected == produced", led.get(f"{k}.expected"), prod)
        check(f"ledger {k}: extra records only of calls a kind switch overlapped",
              led.get(f"{k}.extra", 0) <= led.get("ambiguous", 0), True)
        check(f"ledger {k}: unrecorded loss rows == the ledger's", unrec, led.get(f"{k}.unrecorded"))
        if not led.get("unjudged"):
            # late records taken back from their stream's hole and from the
            # total alike
            check(f"ledger {k}: the streams' holes add up to the missing",
                  sum(n for (kk, _, _), n in holes.items() if kk == k), led.get(f"{k}.missing"))
        if others == 0 and led.get("ambiguous") == 0 and not unsure:
            check(f"ledger {k}: missing == silent", led.get(f"{k}.missing"), silent)
            for dv in dev_names:
                check(f"ledger {k} device {dv}: unrecorded == silent",
                      num(dump, f"loss.unrecorded.{k}.{dv}"), num(truth, f"silent.{k}.{dv}"))
            for (kk, dv, s), n in sorted(produced.items()):
                if kk != k:
                    continue
                stored = num(dump, f"records_stream.{k}.{dv}.{s}")
                check(f"ledger {k} device {dv} stream {s}: missing == produced - stored",
                      holes.get((k, dv, s), 0), n - stored)
        else:
            check(f"ledger {k}: unrecorded {unrec} <= silent {silent} <= missing "
                  f"{led.get(f'{k}.missing')} (other losses {others})",
                  unrec <= silent <= led.get(f"{k}.missing", 0) + led.get("ambiguous", 0), True)
            # a whole ledger (nothing overwritten unseen, no launch it did
            # not keep or judge, every record that arrived stored) stays
            # exact per stream under every other loss: launches pushed out
            # of its window by a starved pool are holes on their streams
            whole = (not unsure and not led.get("overrun") and not led.get("busy")
                     and not led.get("partial") and not led.get("unjudged")
                     and not num(dump, "loss.store_refused"))
            if whole:
                for (kk, dv, s), n in sorted(produced.items()):
                    if kk != k:
                        continue
                    stored = num(dump, f"records_stream.{k}.{dv}.{s}")
                    check(f"ledger {k} device {dv} stream {s}: missing == produced - stored "
                          f"(other losses {others})", holes.get((k, dv, s), 0), n - stored)


def main():
    dump, truth = load(sys.argv[1]), load(sys.argv[2])
    args = sys.argv[3:]
    opts = {}
    while args:
        opts[args[0].lstrip("-")] = args[1]
        args = args[2:]
    fails = []

    def check(name, got, want):
        ok = got == want
        print(("ok   " if ok else "FAIL ") + f"{name}: {got}" + ("" if ok else f" (want {want})"))
        if not ok:
            fails.append(name)

    devs = num(truth, "devices")
    dev_names = [str(i) for i in range(devs)]

    def agent(kind, dev, key):   # dev: "0".."15" or "none" or None (all)
        if dev is None:
            return sum(agent(kind, x, key) for x in dev_names + ["none"])
        return num(dump, f"{key}.{kind}.{dev}")

    def t(key, kind, dev=None):
        if dev is None:
            return sum(num(truth, f"{key}.{kind}.{x}") for x in dev_names)
        return num(truth, f"{key}.{kind}.{dev}")

    accounted = ["records"] + [f"loss.{c}" for c in
                               ("store_refused", "queue_overflow", "tail", "declined")]
    # a flush that gave up: what CUPTI completed after the final status is
    # in the truth's delivered but in no count: the identity is a bound
    gave_up = dump.get("final.flush_ok") == "0"
    rel = (lambda g, w: g <= w) if gave_up else (lambda g, w: g == w)
    op = "<=" if gave_up else "=="
    all_got = all_want = 0
    # the store refused the final status (and the rows with it): the
    # agent's own totals, written aside, account for the session as a whole
    if dump.get("final.aside") == "1":
        got = num(dump, "records.total") + sum(
            num(dump, f"final.loss.{c}") for c in
            ("store_refused", "queue_overflow", "tail", "declined"))
        want = sum(t("delivered", k) - t("invalid", k) for k in KINDS)
        check("final status aside: stored + the agent's loss totals == delivered - invalid",
              got, want)
        check("final status aside: the refusals are counted",
              num(dump, "final.store_refused") > 0 and num(dump, "final.loss.store_refused") > 0,
              True)
        sys.exit(1 if fails else 0)
    for k in KINDS:
        want = t("delivered", k) - t("invalid", k)
        got = sum(agent(k, None, a) for a in accounted)
        all_got += got
        all_want += want + t("held", k)
        check(f"{k}: stored + losses after delivery {op} delivered - invalid ({got}, {want})",
              rel(got, want), True)
        if k in DEVICE_KINDS:
            for dv in dev_names:
                want = t("delivered", k, dv) - t("invalid", k, dv)
                got = sum(agent(k, dv, a) for a in accounted)
                check(f"{k} device {dv}: stored + losses {op} delivered - invalid ({got}, {want})",
                      rel(got, want), True)
                check(f"{k} device {dv}: zero_ts", agent(k, dv, "loss.zero_ts"), t("zero_ts", k, dv))
        else:
            check(f"{k}: zero_ts", agent(k, None, "loss.zero_ts"), t("zero_ts", k))
        if t("foreign", k):
            got = agent(k, None, "loss.conflict")
            check(f"{k}: conflict counts the foreign records", got >= t("foreign", k), True)
    check("parse_error == invalid records", num(dump, "loss.parse_error"),
          sum(t("invalid", k) for k in KINDS))
    # CUPTI attributes drops to a context when asked per context; what it
    # returns for ctx == NULL has no device (the agent stores device none)
    for dv in dev_names:
        got = num(dump, f"loss.cupti_dropped.all.{dv}")
        check(f"device {dv}: cupti_dropped == reported by CUPTI for its context", got,
              num(truth, f"reported_dropped.{dv}") - num(truth, f"reported_via_null.{dv}"))
    check("device none: cupti_dropped == reported by CUPTI for ctx NULL",
          num(dump, "loss.cupti_dropped.all.none"),
          sum(num(truth, f"reported_via_null.{dv}") for dv in dev_names))
    check("cupti_dropped total == dropped by the simulator",
          num(dump, "loss.cupti_dropped"),
          sum(t("dropped", k) for k in KINDS))
    if num(dump, "loss.cupti_dropped"):
        est = sum(num(dump, key_) for key_ in
                  [f"estimate.cupti_dropped.{k}.{dv}" for k in KINDS for dv in dev_names + ["none"]])
        check("per-kind drop estimates sum to the exact count", est, num(dump, "loss.cupti_dropped"))
    for c in CLASSES:
        check(f"health rows == loss rows: {c}", num(dump, f"health.loss.{c}"), num(dump, f"loss.{c}"))
    # buffers that never came back (invariant 12): another client's theft
    # is a counted conflict with a bound that holds; none, no bound
    if dump.get("final", "") != "none" and "final.exit_path" in dump:
        stolen = sum(t("stolen", k) for k in KINDS)
        held = sum(t("held", k) for k in KINDS)
        bound = num(dump, "final.conflict_bound")
        if stolen:
            check("stolen: buffers that never came back are counted",
                  num(dump, "final.buffers_outstanding") >= num(truth, "buffers_stolen"), True)
            check(f"stolen: 0 < conflict bound {bound} <= stolen records {stolen}",
                  0 < bound <= stolen, True)
        elif dump.get("final.flush_ok") == "1":
            check("nothing stolen: no buffer left out", num(dump, "final.buffers_outstanding"), 0)
            check("nothing stolen: no conflict bound", bound, 0)
        tb = num(dump, "final.tail_bound")
        if gave_up:
            check(f"the flush gave up: stored + losses + tail bound {all_got} + {tb} <= "
                  f"delivered - invalid + held {all_want}", all_got + tb <= all_want, True)
        else:
            check("the flush returned: no tail bound", tb, 0)
    ledger_check(dump, truth, dev_names, check)
    expect = set(filter(None, opts.get("expect", "").split(",")))
    allow = set(filter(None, opts.get("allow", "").split(",")))
    for c in CLASSES:
        nz = num(dump, f"loss.{c}") > 0
        if c in allow:
            print(f"ok   loss {c} allowed: {num(dump, f'loss.{c}')}")
            continue
        check(f"loss {c} {'present' if c in expect else 'absent'}", nz, c in expect)
    if "exit" in opts:
        if opts["exit"] == "none":
            check("no final status", dump.get("final"), "none")
        else:
            check("final exit path", dump.get("final.exit_path"), opts["exit"])
            check("stop protocol complete", dump.get("final.protocol_complete"),
                  opts.get("protocol", "1"))
            check("final flush ok", dump.get("final.flush_ok"), "1")
            check("buffers consumed == completed", dump.get("final.buffers_consumed"),
                  dump.get("final.buffers_completed"))
    if "host-handler" in opts:
        check("host handler called", truth.get("host_handler"), opts["host-handler"])
    sys.exit(1 if fails else 0)


main()
