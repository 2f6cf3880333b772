"""truth_windows.py - the truth matrix's periodic-window dimension
(start=capture_every, --capture-range every:PERIOD/WINDOW): the schedule a
case runs under, the application steps that straddle windows, and the
oracle's window checks.  Kept apart from truth.py (its own dimension, its
own expectations); truth.py calls these three functions."""

# windows=short: a 500 ms period and 200 ms windows (too close together
# for a teardown: CUPTI stays attached, every kind off, between them);
# windows=rest: a 2.5 s period, so the agent tears CUPTI down after each
# window and attaches again at the next.  The work comes in bursts half a
# period apart, so some land inside a window and some outside it (outside,
# the simulator produces nothing: its truth is the windows' work).
SCHEDULES = {"short": (500, 200), "rest": (2500, 200)}
BURSTS = 4
# how late a window's open or close may come on a loaded 2-core machine
# running two cases at once (the simulator measures ~1 ms when idle)
LATE_BOUND_NS = 250_000_000


def schedule(c):
    """(period ms, window ms) of a case."""
    return SCHEDULES[c.get("windows", "short")]


def spec(c):
    """The case's --capture-range."""
    period, window = schedule(c)
    return f"every:{period}ms/{window}ms"


def seq_steps(work, c):
    """The application's steps: bursts of the case's work half a period apart."""
    period, _ = schedule(c)
    steps = []
    for i in range(BURSTS):
        steps += ([f"sleep:{period // 2}"] if i else []) + [work]
    return steps


def _num(d, k):
    try:
        return int(d.get(k, "0").split()[0])
    except ValueError:
        return 0


def check(cs, dump, crashed_end, truth):
    """Each window epoch is due at a multiple of the period and opened
    within the bound; no stored API record starts outside a window (their
    start is the CPU call's, so this is exact), and no GPU record either
    (agentctl places each by its launch's API record, else by its start:
    a launch made inside a window whose GPU work started after its close
    is the window's; 29.2, fixed in session 17).  Between
    windows of the rest schedule CUPTI is torn down (the agent says so
    once), each teardown at the exit of a CUDA call; never between short
    ones."""
    c = cs.case
    PERIOD_MS, WINDOW_MS = schedule(c)
    period_ns, window_ns = PERIOD_MS * 1_000_000, WINDOW_MS * 1_000_000
    said = any("after each window CUPTI is detached and torn down" in v
               for k, v in dump.items() if k.startswith("note."))
    fin = _num(truth, "finalize_in_api_exit")
    if c.get("windows", "short") == "short":
        cs.check("windows:no-teardown-between-short-windows", not said, "the agent tore down")
    elif said and truth:
        cs.check("windows:torn-down-at-an-api-exit", fin >= 1, f"finalize_in_api_exit {fin}")
    if truth:
        cs.eq("windows:no-teardown-outside-an-api-exit", _num(truth, "finalize_outside"), 0)
    nep = _num(dump, "epochs")
    outside = _num(dump, "records_no_epoch")
    api_outside = _num(dump, "records_no_epoch.api")
    windows = closed = 0
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
            closed += 1
            cs.eq(f"windows:closes-after-the-window:{i}", nsched - sched, window_ns)
            cs.check(f"windows:closed-in-time:{i}", nsched <= nstart <= nsched + LATE_BOUND_NS,
                     f"closed {(nstart - nsched) / 1e6:.1f} ms after its boundary")
    # a window closed with a later one due: torn down, where nothing forbids
    # it (--devices, NVTX handed to CUPTI, another client's subscriber, the
    # launch ledger: it matches records by call id, which CUPTI starts
    # afresh after a teardown, as the simulator does)
    ledger = c.get("ledger") == "on" or c.get("control") == "ledger"
    if (c.get("windows") == "rest" and closed and c["scope"] == "all" and c["nvtx"] == "none"
            and c["workload"] != "conflict" and not ledger):
        cs.check("windows:rest-torn-down", said, f"{closed} window(s) closed, no teardown said")
    if c.get("windows") == "rest" and closed and c.get("ledger") == "on" and truth:
        cs.eq("windows:rest-kept-with-the-ledger", fin, 0)
    if not crashed_end:
        cs.eq("windows:api-records-outside-windows", api_outside, 0)
        cs.eq("windows:gpu-records-outside-windows", outside - api_outside, 0)
    return windows
