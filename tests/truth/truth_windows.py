"""truth_windows.py - the truth matrix's periodic-window dimension
(start=capture_every, --capture-range every:PERIOD/WINDOW): the schedule a
case runs under, the application steps that straddle windows, and the
oracle's window checks.  Kept apart from truth.py (its own dimension, its
own expectations); truth.py calls these three functions."""

# Short cases: a 500 ms period and 200 ms windows; the work comes in
# bursts 250 ms apart, so some land inside a window and some outside it
# (outside, the simulator produces nothing: its truth is the windows' work).
PERIOD_MS, WINDOW_MS = 500, 200
SPEC = f"every:{PERIOD_MS}ms/{WINDOW_MS}ms"
BURSTS = 4
# how late a window's open or close may come on a loaded 2-core machine
# running two cases at once (the simulator measures ~1 ms when idle)
LATE_BOUND_NS = 250_000_000


def seq_steps(work):
    """The application's steps: bursts of the case's work 250 ms apart."""
    steps = []
    for i in range(BURSTS):
        steps += ([f"sleep:{PERIOD_MS // 2}"] if i else []) + [work]
    return steps


def _num(d, k):
    try:
        return int(d.get(k, "0").split()[0])
    except ValueError:
        return 0


def check(cs, dump, crashed_end):
    """Each window epoch is due at a multiple of the period and opened
    within the bound; no stored API record starts outside a window (their
    start is the CPU call's, so this is exact), and no GPU record either -
    except a launch's made inside a window whose GPU work started after
    its close: epochs are cut at CPU times (known defect 29.2)."""
    period_ns, window_ns = PERIOD_MS * 1_000_000, WINDOW_MS * 1_000_000
    nep = _num(dump, "epochs")
    outside = _num(dump, "records_no_epoch")
    api_outside = _num(dump, "records_no_epoch.api")
    windows = 0
    for i in range(1, nep + 1):
        scope = dump.get(f"epoch.{i}.scope", "")
        w = dump.get(f"epoch.{i}.window", "")
        if "out_of_scope" in scope:
            outside += _num(dump, f"records_epoch.{i}")
            api_outside += _num(dump, f"records_epoch.{i}.api")
            continue
        cs.check(f"windows:epoch-is-a-window:{i}", bool(w), f"epoch {i}: {scope}")
        if not w:
            continue
        f = dict(x.split(":", 1) for x in w.split())
        sched, start = int(f["sched_ns"]), _num(dump, f"epoch.{i}.start_ns")
        cs.eq(f"windows:schedule:{i}", (int(f["period_ms"]), int(f["window_ms"])),
              (PERIOD_MS, WINDOW_MS))
        if not sched:
            continue
        windows += 1
        cs.eq(f"windows:due-at-a-multiple-of-the-period:{i}", sched % period_ns, 0)
        cs.check(f"windows:opened-in-time:{i}", sched <= start <= sched + LATE_BOUND_NS,
                 f"opened {(start - sched) / 1e6:.1f} ms after its boundary")
        nxt = dump.get(f"epoch.{i + 1}.window", "")
        if nxt:
            nsched = int(dict(x.split(":", 1) for x in nxt.split())["sched_ns"])
            nstart = _num(dump, f"epoch.{i + 1}.start_ns")
            cs.eq(f"windows:closes-after-the-window:{i}", nsched - sched, window_ns)
            cs.check(f"windows:closed-in-time:{i}", nsched <= nstart <= nsched + LATE_BOUND_NS,
                     f"closed {(nstart - nsched) / 1e6:.1f} ms after its boundary")
    if not crashed_end:
        cs.eq("windows:api-records-outside-windows", api_outside, 0)
        cs.eq("windows:gpu-records-outside-windows", outside - api_outside, 0)
    return windows
