#!/usr/bin/env python3
"""truth.py - the truth matrix (issue 29): random cases drawn from the cross
product of cuptop's feature dimensions, run on the simulated CUPTI, and an
oracle that checks every output against the simulator's truth and against
each other.  Python 3 standard library only.

  truth.py [--build DIR] [--src DIR] one SEED [--spec K=V,...] [--keep DIR]
      run one case (drawn from SEED; --spec sets dimensions, the rest stay
      as drawn) and print every check
  truth.py [...] matrix --cases N --seed S [--jobs J] [--save-regress] [--spec K=V;...]
      N cases, case i drawn from seed S*1000003+i; a failing case is shrunk
      (one dimension at a time back to its default while it still fails)
      and, with --save-regress, saved as tests/truth/regress/SEED.case
  truth.py [...] regress FILE...
      rerun saved cases (each holds a seed and a full spec)

Every case prints its seed, its dimensions and one command that reruns it.
A failed check that tests/truth/known.txt attributes to an open defect
(issue 27/28 item) is reported as XFAIL with the item; anything else is a
FAIL and the exit status is 1.  doc/truth.md says how to add a dimension.
"""
import array
import errno
import fnmatch
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import truth_windows  # noqa: E402  (the periodic-window dimension)

KINDS = ["kernel", "memcpy", "memset", "runtime", "driver", "sync", "overhead", "marker", "graph"]
DEVICE_KINDS = ["kernel", "memcpy", "memset", "sync", "overhead", "marker", "graph"]
LEDGER_KINDS = ["kernel", "memcpy", "memset", "graph"]   # GPU records a launch expects
CLASSES = ["cupti_dropped", "declined", "queue_overflow", "parse_error", "store_refused",
           "zero_ts", "tail", "conflict", "unrecorded"]
DEFAULT_KINDS = "kernel,memcpy,memset,runtime,driver,overhead"
KIND_RE = re.compile(r'"kind":"([a-z_]+)"')
START_RE = re.compile(r'"start_ns":(\d+)')
NAME_RE = re.compile(r'"name":"((?:[^"\\]|\\.)*)"')

# The dimensions, each with its default (the first value: the cleanest and
# cheapest) and the other values a case may draw.  Adding a dimension: a
# row here, its effect in build_case(), its expectations in the oracle
# (doc/truth.md).
DIMS = [
    ("driver", ["simdrive", "run"]),           # simdrive (seq steps) or cuptop run -- cuptop-simapp
    ("start", ["eager", "dormant", "capture", "capture_nvtx", "attach", "attach2",
               "attach2race", "capture_every"]),  # attach2: a second cuptop attach after the
                                             # first, attach2race: two at once, capture_every:
                                             # periodic windows (truth_windows.py)
    ("kinds", ["default", "all", "kernel", "kernel,runtime", "kernel,memcpy,memset,marker",
               "kernel,graph"]),       # kernel,graph: GRAPH_TRACE beside CONCURRENT_KERNEL
    ("api", ["gpu", "all", "none", "gpu+include", "all-exclude"]),
    ("sizes", ["ample", "small", "starved", "queue1"]),
    ("workload", ["emit", "clean", "drops", "slow-consumer", "zero-ts", "conflict", "pytorch",
                  "invalid", "steal", "silent", "graph"]),   # graph: CUDA graph launches too
    ("devices", ["1", "2", "3"]),
    ("threads", ["2", "1", "4"]),
    ("scope", ["all", "0"]),
    ("end", ["return", "exit", "term", "int", "hup", "abort", "kill", "_exit", "kill9",
             "twosig"]),                 # twosig: SIGINT to cuptop run's group, SIGTERM to both
    ("store", ["plain", "slow", "slowstop", "full", "readonly"]),
    ("reader", ["none", "sessions", "exporter", "hold"]),   # hold: a read txn held throughout
    ("nvtx", ["none", "nested", "unbalanced", "threads", "early"]),
    ("control", ["none", "kinds", "burst", "detach", "pool", "ledger"]),   # ledger: --ledger on|off mid-run
    ("job", ["none", "two", "only-if"]),       # cuptop run --job: two ranks (--only-if RANK=0)
    ("fork", ["none", "fork", "exec"]),        # cuptop-simapp --fork [--exec]: a CUDA child
    ("range_end", ["closed", "open"]),         # open: the app ends inside its capture range
    ("ledger", ["off", "on"]),                 # --ledger: the launch ledger (CUPTOP_LEDGER=1)
    ("windows", ["short", "rest"]),            # start=capture_every: 500 ms periods, or 2.5 s
                                               # ones (CUPTI torn down between windows)
    ("stdio", ["open", "closed0", "closed1", "closed2"]),   # simdrive started with fd 0, 1 or 2
                                               # closed: the agent's descriptors stay >= 3
]
ATTACH = ("attach", "attach2", "attach2race")
CAPTURE = ("capture", "capture_nvtx")
CRASH_ENDS = ("abort", "kill", "kill9")
DIM_NAMES = [d for d, _ in DIMS]
DEFAULTS = {d: v[0] for d, v in DIMS}

# how often each value is drawn: the default more often, so that each case
# changes a few dimensions and a failure points at them
DEFAULT_WEIGHT = 0.45


def draw(seed):
    rnd = random.Random(seed)
    case = {}
    for name, values in DIMS[:-2]:
        if rnd.random() < DEFAULT_WEIGHT:
            case[name] = values[0]
        else:
            case[name] = rnd.choice(values[1:])
    # a capture range left open needs a capture start, and is drawn most
    # often with a crash inside it (what the dimension is for); drawn
    # after the others, so they stay as they were
    if case["range_end"] == "open":
        if case["start"] not in CAPTURE:
            case["start"] = rnd.choice(CAPTURE)
        if rnd.random() < 0.7:
            case["end"] = rnd.choice(CRASH_ENDS)
    # drawn last, so every other dimension of a seed stays as it was
    case["windows"] = "rest" if rnd.random() < 0.5 else "short"
    vals = dict(DIMS)["stdio"]
    case["stdio"] = vals[0] if rnd.random() < 0.7 else rnd.choice(vals[1:])
    return normalize(case)


def normalize(case):
    """Make a drawn case one that can run: drop combinations that mean
    nothing (each rule says why), never ones that are merely unusual."""
    c = dict(case)
    if c["end"] == "twosig" and c["job"] == "none":
        # two signals from outside to cuptop run and the application: the
        # simapp's truth is rewritten by the agent's forced flush (simdrive
        # writes none when the default action kills it)
        c["driver"] = "run"
    if c["driver"] == "run":
        # cuptop-simapp has no seq steps: no dormant/attach/capture/NVTX/
        # control handshake (those run on simdrive)
        c["start"] = "eager"
        c["nvtx"] = "none"
        c["control"] = "none"
    if c["job"] != "none":
        # the ranks run under one sh -c: cuptop run's driver, and ends the
        # shell passes on (a signal or kill -9 would reach the shell)
        c["driver"] = "run"
        if c["end"] not in ("return", "exit", "_exit", "abort", "kill"):
            c["end"] = "return"
    if c["driver"] == "run":
        # cuptop-simapp has no seq steps (see above)
        c["start"] = "eager"
        c["nvtx"] = "none"
        c["control"] = "none"
    if c["start"] in CAPTURE + ("capture_every",):
        c["control"] = "none"       # a capture range owns the kinds
    if c["control"] == "ledger" and c["workload"] == "conflict":
        # the ledger needs the subscriber slot the other client holds: a
        # `ledger on` is refused (acknowledged with an error) by design
        c["control"] = "none"
    if c["start"] not in CAPTURE:
        c["range_end"] = "closed"   # no capture range to leave open
    if c["start"] == "capture_nvtx" and c["nvtx"] == "early":
        c["nvtx"] = "nested"
    if c["end"] == "kill9" and c["workload"] == "emit":
        c["workload"] = "clean"     # a random moment inside a timed run
    if c["end"] == "kill9":
        c["control"] = "none"
    if c["store"] == "full":
        # a full map refuses the health rows a control request waits for,
        # and the session an attach must find
        c["control"] = "none"
        if c["start"] in ATTACH + ("dormant",):
            c["store"] = "plain"
    if c["store"] == "readonly":
        # nothing can be stored: no session for an attach, a control
        # request or a held reader to find, nor for kill -9 to wait for
        if c["start"] in ATTACH + ("dormant",):
            c["store"] = "plain"
        else:
            c["control"] = "none"
            if c["reader"] == "hold":
                c["reader"] = "none"
            if c["end"] == "kill9":
                c["end"] = "return"
    if c["fork"] != "none":
        # cuptop-simapp --fork (simdrive's fork is an exit path of its
        # own); not in a job (one truth per rank), nor with an end that
        # reaches the child too (a group's signals) or kills the parent
        # before the child's truth is written (kill -9 from outside)
        if c["driver"] != "run" or c["job"] != "none" or c["end"] in ("kill9", "twosig"):
            c["fork"] = "none"
        elif c["fork"] == "fork" and os.environ.get("CUPTOP_TEST_SANITIZER", "no") not in ("", "no"):
            c["fork"] = "exec"   # libasan deadlocks in a threaded fork (doc/reliability.md row 3)
    if c["driver"] != "simdrive":
        # cuptop run would inherit the closed descriptor and open its own
        # files there: the dimension is the agent's, in simdrive
        c["stdio"] = "open"
    return c


def parse_spec_kv(text, base=None):
    """SPEC with kinds values that contain commas: K=V pairs separated by
    ';' (what the printed rerun command uses)."""
    case = dict(base or DEFAULTS)
    for part in filter(None, text.split(";")):
        k, _, v = part.partition("=")
        if k not in DEFAULTS:
            raise SystemExit(f"truth.py: unknown dimension {k!r}")
        if v not in dict(DIMS)[k]:
            raise SystemExit(f"truth.py: {k}={v!r} is not one of {dict(DIMS)[k]}")
        case[k] = v
    return case


def windows_run(case):
    """Periodic windows run in this case (the windows dimension applies)."""
    return case["start"] == "capture_every" and case["driver"] == "simdrive"


def spec_kv(case, only_changed=False):
    # windows=rest means nothing without windows: not shown as a change
    # there (kept in the case, so a spec that forces capture_every later
    # finds the seed's own draw)
    return ";".join(f"{k}={case[k]}" for k in DIM_NAMES
                    if not only_changed or (case[k] != DEFAULTS[k] and
                                            (k != "windows" or windows_run(case))))


# ---------------------------------------------------------------- known list
class Known:
    """tests/truth/known.txt: ITEM CHECK-GLOB [DIM=VALUE|DIM!=VALUE ...]
    A failed check matching a line is an expected failure of that open
    defect (XFAIL, the item printed); the list empties as fixes land."""

    def __init__(self, path):
        self.rows = []
        if not os.path.exists(path):
            return
        for line in open(path):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            conds = []
            for p in parts[2:]:
                if "!=" in p:
                    k, v = p.split("!=", 1)
                    conds.append((k, False, v.split("|")))
                else:
                    k, v = p.split("=", 1)
                    conds.append((k, True, v.split("|")))
            self.rows.append((parts[0], parts[1], conds))

    def item(self, check, case):
        # a forked child's checks ("child:NAME") are known as NAME's
        bare = check[len("child:"):] if check.startswith("child:") else check
        for item, glob, conds in self.rows:
            if not fnmatch.fnmatchcase(check, glob) and not fnmatch.fnmatchcase(bare, glob):
                continue
            ok = True
            for k, eq, vals in conds:
                if (case.get(k) in vals) != eq:
                    ok = False
                    break
            if ok:
                return item
        return None


# ---------------------------------------------------------------- helpers
def load_kv(path):
    d = {}
    try:
        for line in open(path, errors="replace"):
            line = line.rstrip("\n")
            if "=" in line:
                k, v = line.split("=", 1)
                d.setdefault(k, v)
    except OSError:
        pass
    return d


def simapp_truth_kv(path):
    """cuptop-simapp's truth ("delivered D KIND N") as simdrive's keys."""
    d = {}
    try:
        lines = open(path).read().split("\n")
    except OSError:
        return d
    for line in lines:
        f = line.split()
        if len(f) == 4 and f[0] not in ("api_calls", "api_produced", "call"):
            d[f"{f[0]}.{f[2]}.{f[1]}"] = f[3]
        elif len(f) == 3 and ("dropped" in f[0] or "via_null" in f[0] or
                              f[0] == "graph_node_records"):
            d[f"{f[0]}.{f[1]}"] = f[2]
        elif len(f) == 2:
            d[f[0]] = f[1]
    return d


def num(d, k):
    try:
        return int(d.get(k, "0"))
    except ValueError:
        return 0


class Case:
    def __init__(self, env, case, seed, work):
        self.env, self.case, self.seed, self.work = env, case, seed, work
        self.rnd = random.Random(seed * 7919 + 17)
        self.results = []          # (name, ok, detail)
        self.store = os.path.join(work, "store")
        self.truth_path = os.path.join(work, "truth")
        self.nvtx_path = os.path.join(work, "nvtx")
        self.log = []
        self.groups = []           # process groups of the case (spawn)
        self.prefix = ""           # of check names: "child:" for a forked child

    # one check: every check has a stable name (what known.txt matches)
    def check(self, name, ok, detail=""):
        self.results.append((self.prefix + name, bool(ok), detail))

    def eq(self, name, got, want):
        self.check(name, got == want, f"{got!r}" + ("" if got == want else f" (want {want!r})"))

    def spawn(self, argv, **kw):
        """A process in a group of its own, killed whole at the end of the
        case (kill_groups) or when truth.py itself is stopped."""
        p = subprocess.Popen(argv, start_new_session=True, **kw)
        self.groups.append(p)
        with LIVE_LOCK:
            LIVE_GROUPS.add(p.pid)
        return p

    def kill_group(self, p):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        with LIVE_LOCK:
            LIVE_GROUPS.discard(p.pid)

    def kill_groups(self):
        for p in self.groups:
            self.kill_group(p)

    def cuptop_many(self, args, n, timeout=120):
        """n copies of one cuptop command at once: [(rc, stdout, stderr)]."""
        ps = [subprocess.Popen([self.env.cuptop, *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE) for _ in range(n)]
        res = []
        for p in ps:
            try:
                o, er = p.communicate(timeout=timeout)
                res.append((p.returncode, o.decode("utf-8", "replace"),
                            er.decode("utf-8", "replace")))
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                res.append(("timeout", "", ""))
        return res

    def cuptop(self, *args, timeout=120):
        try:
            p = subprocess.run([self.env.cuptop, *args], capture_output=True, timeout=timeout)
            return p.returncode, p.stdout.decode("utf-8", "replace"), \
                p.stderr.decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            return "timeout", "", ""

    def wait_file(self, name, proc, limit=120):
        path = os.path.join(self.work, name)
        end = time.time() + limit
        while not os.path.exists(path):
            if proc.poll() is not None or time.time() > end:
                return False
            time.sleep(0.02)
        return True

    def session_id(self):
        p = subprocess.run([self.env.ctl, "sessions", self.store], capture_output=True)
        ids = p.stdout.decode().split()
        return ids[0] if ids else None

    def wait_session(self, limit=60):
        p = subprocess.run([self.env.ctl, "wait-session", self.store, "1", str(limit)],
                           capture_output=True)
        s = p.stdout.decode().strip()
        return s or None


# ---------------------------------------------------------------- the run
# process groups alive now (readers, applications), killed when truth.py is
# stopped: a reader loop must not outlive a killed matrix
LIVE_GROUPS = set()
LIVE_LOCK = threading.Lock()


def kill_live_groups(*_):
    with LIVE_LOCK:
        pids = list(LIVE_GROUPS)
    for pid in pids:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass


def on_stop_signal(sig, _frame):
    kill_live_groups()
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)

WORK_EMIT = 300
WORK_GRAPH = 100      # graph launches per device (simdrive's graph:N)
GRAPH_NODES = 4       # kernel nodes per graph launch (workload=graph)
SECONDS = {"clean": 0.3, "drops": 0.3, "slow-consumer": 0.4, "pytorch": 0.3, "graph": 0.3}


def build_env(c, cs):
    """Environment variables of the application for case c."""
    e = {"CUPTOP_STORE": cs.store, "CUPTOPSIM_SEED": str(cs.seed % 100000 + 1),
         "CUPTOPSIM_DEVICES": c["devices"], "CUPTOPSIM_THREADS": c["threads"],
         "CUPTOP_STOP_TIMEOUT_MS": "20000"}
    scen = {"emit": "clean", "clean": "clean", "drops": "drops", "slow-consumer": "slow-consumer",
            "zero-ts": "zero-ts", "conflict": "conflict", "pytorch": "pytorch",
            "invalid": "invalid", "steal": "clean", "silent": "clean",
            "graph": "graph"}[c["workload"]]
    e["CUPTOPSIM_SCENARIO"] = scen
    if c["workload"] == "steal":
        e["CUPTOPSIM_FAULTS"] = "steal=3"
    if c["workload"] == "silent":
        e["CUPTOPSIM_FAULTS"] = "silent=97"   # a CUPTI that loses records silently
    if c.get("ledger") == "on":
        e["CUPTOP_LEDGER"] = "1"
    if c["workload"] in ("clean", "pytorch", "graph"):
        e["CUPTOPSIM_SCALE"] = "0.3"
    if c["workload"] == "graph":
        e["CUPTOPSIM_GRAPH_NODES"] = str(GRAPH_NODES)
    if c["kinds"] != "default":
        e["CUPTOP_KINDS"] = c["kinds"]
    api = c["api"]
    if api == "gpu+include":
        e["CUPTOP_API"] = "gpu"
        e["CUPTOP_API_INCLUDE"] = "cudaGetDevice,cuCtxGetCurrent"
    elif api == "all-exclude":
        e["CUPTOP_API"] = "all"
        e["CUPTOP_API_EXCLUDE"] = "cudaGetLastError,cuDeviceGetAttribute"
    else:
        e["CUPTOP_API"] = api
    sizes = {"ample": {}, "small": {"CUPTOP_POOL": "4", "CUPTOP_BUFFER_SIZE": "64K"},
             "starved": {"CUPTOP_POOL": "1", "CUPTOP_BUFFER_SIZE": "64K"},
             "queue1": {"CUPTOP_QUEUE": "1", "CUPTOP_BUFFER_SIZE": "64K"}}[c["sizes"]]
    e.update(sizes)
    if c["scope"] != "all":
        e["CUPTOP_DEVICES"] = c["scope"]
    if c["store"] in ("slow", "slowstop"):
        e["LD_PRELOAD"] = cs.env.faultio
        e["FAULTIO_DELAY_US"] = "300" if c["store"] == "slow" else "2000"
        if os.environ.get("CUPTOP_TEST_SANITIZER", "no") not in ("", "no"):
            # faultio.so is not sanitized: let it load ahead of the runtime
            e["ASAN_OPTIONS"] = (os.environ.get("ASAN_OPTIONS", "") +
                                 ":verify_asan_link_order=0").lstrip(":")
        if c["store"] == "slowstop":
            e["CUPTOP_STOP_TIMEOUT_MS"] = "50"
    elif c["store"] == "full":
        e["CUPTOP_MAP_MAX"] = "1M"
    if c["start"] == "dormant":
        e["CUPTOP_DORMANT"] = "1"
    if c["start"] == "capture":
        e["CUPTOP_CAPTURE_RANGE"] = "cudaProfilerApi"
    if c["start"] == "capture_nvtx":
        e["CUPTOP_CAPTURE_RANGE"] = "nvtx:step"
    if c["start"] == "capture_every":
        e["CUPTOP_CAPTURE_RANGE"] = truth_windows.spec(c)
    if c["nvtx"] != "none" or c["start"] == "capture_nvtx":
        e["NVTX_INJECTION64_PATH"] = cs.env.agent
        e["CUPTOPSIM_NVTX_TRUTH"] = cs.nvtx_path
    if c["nvtx"] == "threads":
        # the first thread's first NVTX call hands the table to CUPTI
        # slowly: the second thread (10 ms later) pushes meanwhile, through
        # the agent's wrapper alone (29.11: the agent makes that range)
        e["CUPTOPSIM_FAULTS"] = ",".join(x for x in (e.get("CUPTOPSIM_FAULTS"),
                                                     "nvtx_init_slow=50") if x)
    return e


NVTX_STEPS = {"none": [], "nested": ["push:outer", "push:inner", "pop", "pop"],
              "unbalanced": ["pop", "push:open"], "threads": ["nvtx:2:2"],
              "early": []}


def simdrive_seq(c):
    """simdrive steps and the handshakes the harness makes: a list of
    (what, name) the harness acts on when DIR/name appears."""
    w = f"emit:{WORK_EMIT}" if c["workload"] in ("emit", "zero-ts", "conflict", "invalid", "steal", "silent") \
        else f"run:{SECONDS.get(c['workload'], 0.3)}"
    if c["workload"] == "graph":
        # exact counts: plain work of every kind, then graph launches
        w = f"emit:{WORK_EMIT},graph:{WORK_GRAPH}"
    nv = NVTX_STEPS[c["nvtx"]]
    steps, hs = [], []
    if c["nvtx"] == "early":
        steps += ["push:early"]          # before CUDA (and CUPTI) is initialised
    steps += ["ctx"]
    if c["start"] in ("dormant",) + ATTACH:
        steps += ["emit:50", "mark:ready", "wait:go"]
        hs.append((c["start"] if c["start"] in ATTACH else "control-attach", "ready", "go"))
    # range_end=open: the application ends (or crashes) inside the range
    if c["start"] == "capture":
        steps += ["emit:50", "pstart", w] + (["pstop", "emit:50"] if c["range_end"] == "closed" else [])
    elif c["start"] == "capture_nvtx":
        steps += ["emit:50", "push:step", w] + (["pop", "emit:50"] if c["range_end"] == "closed" else [])
    elif c["start"] == "capture_every":
        steps += truth_windows.seq_steps(w, c)
    else:
        steps += [w]
    if c["reader"] == "hold":
        # the held read transaction is open before the work (after the
        # session exists: an attach's or a dormant one's at its handshake)
        i = steps.index(w)
        steps[i:i] = ["mark:hold", "wait:held"]
        hs.append(("hold", "hold", "held"))
    steps += nv
    if c["nvtx"] == "early":
        steps += ["pop"]
    ctl = c["control"]
    if ctl != "none":
        steps += ["mark:c1", "wait:g1", w]
        hs.append((ctl, "c1", "g1"))
        if ctl == "detach":
            steps += ["mark:c2", "wait:g2", w]
            hs.append(("reattach", "c2", "g2"))
    if c["stdio"] != "open":
        # the application's own I/O on 0-2 and its descriptors, the agent
        # (and its store) live by now
        steps += ["stdio:io", "fds:fds"]
    return "seq:" + ",".join(steps), hs


def simdrive_exit(end):
    return {"return": "return", "exit": "exit", "term": "term", "int": "int", "hup": "hup",
            "abort": "abort", "kill": "kill", "_exit": "_exit", "kill9": "return"}[end]


def expected_rc(c):
    if c["job"] != "none":
        return 0    # sh -c '... & ... & wait': wait with no operand is 0
    return {"return": 0, "exit": 0, "_exit": 0, "term": 143, "int": 130, "hup": 129,
            "abort": 134, "kill": 137, "kill9": 137, "twosig": 130}[c["end"]]


def run_app(cs):
    c, env = cs.case, cs.env
    os.makedirs(cs.work, exist_ok=True)
    e = dict(os.environ)
    for k in list(e):
        if k.startswith(("CUPTOP_", "CUPTOPSIM_")) or k in ("LD_PRELOAD", "NVTX_INJECTION64_PATH"):
            del e[k]
    e.update(build_env(c, cs))
    out = open(os.path.join(cs.work, "out"), "wb")
    err = open(os.path.join(cs.work, "err"), "wb")
    hs = []
    if c["driver"] == "simdrive":
        seq, hs = simdrive_seq(c)
        agent = "none" if c["start"] in ATTACH else env.agent
        argv = [env.simdrive, env.sim, agent, cs.truth_path, seq, simdrive_exit(c["end"])]
        cs.truth_kind = "simdrive"
    else:
        # cuptop run -- cuptop-simapp: the options cuptop run has, as options
        opts = []
        for var, opt in (("CUPTOP_KINDS", "--kinds"), ("CUPTOP_API", "--api"),
                         ("CUPTOP_API_INCLUDE", "--api-include"),
                         ("CUPTOP_API_EXCLUDE", "--api-exclude"), ("CUPTOP_POOL", "--pool"),
                         ("CUPTOP_BUFFER_SIZE", "--buffer-size"), ("CUPTOP_QUEUE", "--queue"),
                         ("CUPTOP_DEVICES", "--devices"), ("CUPTOP_STOP_TIMEOUT_MS", "--stop-timeout"),
                         ("CUPTOP_STORE", "--store")):
            if var in e:
                opts += [opt, e.pop(var)]
        simargs = ["--truth", cs.truth_path, "--scenario", e.pop("CUPTOPSIM_SCENARIO"),
                   "--devices", c["devices"], "--threads", c["threads"]]
        if c["workload"] in ("emit", "zero-ts", "conflict", "invalid", "steal", "silent"):
            # every kind's quota at once (the scenario's rates would take
            # 30 s for the 10/s kinds)
            simargs += ["--ops", str(WORK_EMIT), "--max-rate", "--seconds", "30"]
        elif c["end"] == "twosig":
            simargs += ["--seconds", "30"]   # until the signals end it
        else:
            simargs += ["--seconds", str(SECONDS.get(c["workload"], 0.3))]
        ex = {"term": "sigterm", "int": "sigint", "hup": "sighup", "kill9": "return",
              "twosig": "return"}.get(c["end"], c["end"])
        simargs += ["--exit", ex]
        if c["fork"] != "none":
            # a child that is a CUDA user of its own (its truth: TRUTH.child)
            simargs += ["--fork"] + (["--exec"] if c["fork"] == "exec" else [])
        if c["end"] == "twosig":
            simargs += ["--ready-file", os.path.join(cs.work, "ready")]
        argv = [env.cuptop, "run", *opts, "--", env.simapp, *simargs]
        cs.truth_kind = "simapp"
        if c["job"] != "none":
            # two ranks of one job, each with its own truth (TRUTH.RANK)
            cs.job = f"truth-{cs.seed}"
            jopts = ["--job", cs.job] + (["--only-if", "RANK=0"] if c["job"] == "only-if" else [])
            rank_cmd = " ".join(shlex.quote(x) for x in [env.simapp, *simargs[2:]])
            sh = " ".join(f"RANK={r} WORLD_SIZE=2 {rank_cmd} --truth "
                          f"{shlex.quote(cs.truth_path + '.' + str(r))} &" for r in (0, 1))
            argv = [env.cuptop, "run", *jopts, *opts, "--", "sh", "-c", sh + " wait"]
    if c["store"] == "readonly":
        # the store directory exists and cannot be written; root writes
        # anywhere, so as root the application runs without the capability
        os.makedirs(cs.store, mode=0o700)
        os.chmod(cs.store, 0o500)
        if os.geteuid() == 0:
            if not shutil.which("setpriv"):
                cs.check("readonly:setpriv", False, "root and no setpriv: cannot drop "
                         "CAP_DAC_OVERRIDE")
                return False
            argv = ["setpriv", "--bounding-set=-dac_override,-dac_read_search",
                    "--inh-caps=-all", "--", *argv]
    cs.argv = argv
    # a reader running throughout, in a process group of its own (killed
    # whole at the end of the case, whatever happens to the case)
    reader = None
    if c["reader"] == "hold":
        # a read transaction held on the session for the whole run: the
        # writer cannot reuse the pages it pins
        hcmd = (f"while :; do s=$('{env.ctl}' sessions '{cs.store}' 2>/dev/null | head -n 1); "
                f"[ -n \"$s\" ] && exec '{env.hold_reader}' '{cs.store}' \"$s\"; sleep 0.02; done")
        reader = cs.spawn(["sh", "-c", hcmd], stdout=open(os.path.join(cs.work, "hold.out"), "wb"),
                          stderr=subprocess.STDOUT)
    elif c["reader"] != "none":
        rcmd = {"sessions": f"while :; do '{env.cuptop}' sessions --store '{cs.store}' --json "
                            f">/dev/null 2>&1; rc=$?; [ $rc -gt 128 ] && echo $rc >> '{cs.work}/reader.crash'; "
                            f"sleep 0.05; done",
                "exporter": f"while :; do '{env.cuptop}' exporter --store '{cs.store}' --textfile "
                            f"'{cs.work}/reader.prom' --once >/dev/null 2>&1; rc=$?; "
                            f"[ $rc -gt 128 ] && echo $rc >> '{cs.work}/reader.crash'; "
                            f"sleep 0.05; done"}[c["reader"]]
        reader = cs.spawn(["sh", "-c", rcmd], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    # the application in a group of its own too (a forked child, the ranks
    # of a job: nothing of a case outlives it); SIGINT back to its default
    # (a background job inherits it ignored)
    closed = int(c["stdio"][-1]) if c["stdio"] != "open" else None

    def child_setup():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if closed is not None:
            os.close(closed)   # after Popen's dup2s: the application starts without it
    p = cs.spawn(argv, env=e, stdout=out, stderr=err,
                 stdin=subprocess.DEVNULL if closed is not None else None, preexec_fn=child_setup)
    hand_ok = True
    for what, mark, go in hs:
        if not cs.wait_file(mark, p):
            cs.check(f"handshake:{what}", False, f"{mark} never appeared")
            hand_ok = False
            break
        sid = cs.session_id() if what not in ATTACH else None
        if what not in ATTACH and sid is None:
            cs.check(f"handshake:{what}:session", False, "no session in the store")
            hand_ok = False
            break
        if what in ATTACH:
            aargs = ["attach", "--store", cs.store, "--wait", "30",
                     *(["--kinds", e["CUPTOP_KINDS"]] if "CUPTOP_KINDS" in e else []),
                     *attach_api_opts(e), str(p.pid)]
            # attach2race: two at once; attach2: a second after the first
            res = cs.cuptop_many(aargs, 2 if what == "attach2race" else 1)
            if what == "attach2":
                res += cs.cuptop_many(aargs, 1)
            # the one that loaded the agent, and the others
            loaders = [r for r in res if r[0] == 0 and "already" not in r[1] + r[2]]
            ok = loaders or [r for r in res if r[0] == 0]
            rc, o, er = ok[0] if ok else res[0]
            cs.eq("attach:exit", rc, 0)
            if len(res) > 1:
                cs.eq("attach:one-loader", len(loaders), 1)
            others = list(res)
            if ok:
                others.remove(ok[0])
            for i, (rc2, o2, er2) in enumerate(others):
                # the other one: a no-op that says so, or refused clearly
                # (a message, a documented status) -- never a crash
                cs.check("attach:second-clear",
                         (rc2 == 0 and "already" in o2 + er2) or
                         (rc2 in (1, 2) and er2.strip().startswith("cuptop attach:")),
                         f"rc {rc2}: {o2.strip()[:160]} {er2.strip()[:160]}")
                cs.log.append(f"attach #{i + 2}: rc {rc2}: {o2.strip()[:160]} {er2.strip()[:160]}")
            if rc != 0:
                hand_ok = False
                cs.log.append(f"attach: rc {rc}: {o.strip()} {er.strip()}")
                break
        elif what == "hold":
            # the reader holds its transaction before the work starts
            end = time.time() + 60
            hout = os.path.join(cs.work, "hold.out")
            while "ready" not in open(hout, errors="replace").read() and time.time() < end \
                    and reader.poll() is None:
                time.sleep(0.02)
            rc = 0
        elif what == "control-attach":
            rc, o, er = cs.cuptop("control", "--store", cs.store, sid, "--attach", "--wait", "60")
            cs.eq("control:attach", rc, 0)
        elif what == "kinds":
            rc, o, er = cs.cuptop("control", "--store", cs.store, sid, "--kinds", "kernel,memcpy",
                                  "--wait", "60")
            cs.eq("control:kinds", rc, 0)
        elif what == "pool":
            rc, o, er = cs.cuptop("control", "--store", cs.store, sid, "--pool", "2", "--api", "all",
                                  "--wait", "60")
            cs.eq("control:pool", rc, 0)
        elif what == "burst":
            # several requests in one second; only the last must be applied
            for k in ("kernel", "kernel,runtime", "kernel,memcpy,memset"):
                cs.cuptop("control", "--store", cs.store, sid, "--kinds", k, "--wait", "0")
            rc, o, er = cs.cuptop("control", "--store", cs.store, sid, "--kinds", "all",
                                  "--wait", "60")
            cs.eq("control:burst", rc, 0)
        elif what == "ledger":
            # the ledger switched the other way mid-run: partial from here
            onoff = "off" if c.get("ledger") == "on" else "on"
            rc, o, er = cs.cuptop("control", "--store", cs.store, sid, "--ledger", onoff,
                                  "--wait", "60")
            cs.eq("control:ledger", rc, 0)
        elif what == "detach":
            rc, o, er = cs.cuptop("control", "--store", cs.store, sid, "--detach", "--wait", "60")
            cs.eq("control:detach", rc, 0)
        elif what == "reattach":
            rc, o, er = cs.cuptop("control", "--store", cs.store, sid, "--attach", "--wait", "60")
            cs.eq("control:reattach", rc, 0)
        if rc != 0:
            cs.log.append(f"{what}: rc {rc}: {o.strip()} {er.strip()}")
            if "no health row yet" in er:
                # a request in the session's first second is refused
                # (known.txt 29.6): named apart from other control failures
                cs.results[-1] = (cs.results[-1][0] + ":no-health-row-yet",) + cs.results[-1][1:]
        open(os.path.join(cs.work, go), "w").close()
    if not hand_ok:
        # the case cannot go on (its failure is recorded): end the app now
        # rather than let it wait for a handshake that will not come
        p.kill()
    if c["end"] == "twosig" and hand_ok:
        # Ctrl-C to cuptop run's group, then a supervisor's SIGTERM to
        # cuptop run and the application, back to back, at a random moment
        # of the run
        if cs.wait_file("ready", p, 60) and cs.wait_session(60):
            time.sleep(cs.rnd.uniform(0.0, 0.3))
            try:
                app = int(open(os.path.join(cs.work, "ready")).read().split()[0])
                os.killpg(p.pid, signal.SIGINT)
                os.kill(p.pid, signal.SIGTERM)
                os.kill(app, signal.SIGTERM)
            except (OSError, ValueError, IndexError):
                pass   # it ended first: judged as a return
    if c["end"] == "kill9" and hand_ok:
        # kill -9 at a random moment of the run (after the session exists)
        cs.wait_session(60)
        time.sleep(cs.rnd.uniform(0.0, 0.3))
        target = p.pid
        if c["driver"] == "run":
            # the application, not cuptop run (which would leave it running),
            # and only the application: once it has ended, cuptop run's
            # only child may be LeakSanitizer's tracer at its exit (an ASan
            # build), and killing that hangs cuptop run in StopTheWorld
            target = None
            try:
                for kid in open(f"/proc/{p.pid}/task/{p.pid}/children").read().split():
                    if os.path.basename(os.readlink(f"/proc/{kid}/exe")).startswith("cuptop-simapp"):
                        target = int(kid)
                        break
            except (OSError, ValueError):
                target = None
        try:
            if target:
                os.kill(target, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        rc = p.wait(timeout=300)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
        cs.check("app:finished", False, "still running after 300 s")
    rc = rc if rc >= 0 else 128 - rc
    cs.app_rc = rc
    if reader:
        if c["reader"] == "hold":
            # it held its transaction to the end (a store error ends it)
            held = open(os.path.join(cs.work, "hold.out"), errors="replace").read()
            cs.check("reader:hold-alive", reader.poll() is None, held.strip()[:200])
            cs.log.append("hold_reader: " + (held.strip().replace("\n", " ")[:100] or "no session"))
        cs.kill_group(reader)
    out.close()
    err.close()
    return hand_ok


def attach_api_opts(e):
    o = []
    if "CUPTOP_API" in e:
        o += ["--api", e["CUPTOP_API"]]
    if "CUPTOP_API_INCLUDE" in e:
        o += ["--api-include", e["CUPTOP_API_INCLUDE"]]
    if "CUPTOP_API_EXCLUDE" in e:
        o += ["--api-exclude", e["CUPTOP_API_EXCLUDE"]]
    for var, opt in (("CUPTOP_POOL", "--pool"), ("CUPTOP_BUFFER_SIZE", "--buffer-size"),
                     ("CUPTOP_QUEUE", "--queue"), ("CUPTOP_DEVICES", "--devices"),
                     ("CUPTOP_STOP_TIMEOUT_MS", "--stop-timeout")):
        if var in e:
            o += [opt, e[var]]
    return o


# ---------------------------------------------------------------- the oracle
def oracle(cs):
    c = cs.case
    # cuptop-simapp's _exit destroys the contexts first (the agent's stop
    # runs at the last context's destruction): not a crash there
    crashed_end = c["end"] in ("kill", "kill9") or (c["end"] == "_exit" and c["driver"] == "simdrive")
    # the application
    if c["end"] in ("kill9", "twosig") and cs.app_rc == 0:
        pass   # it finished before the kill or the signals: judged as a return
    elif c["end"] == "twosig":
        # it dies of one of the two signals it was sent, once
        cs.check("app:exit-status", cs.app_rc in (130, 143), f"{cs.app_rc} (want 130 or 143)")
    else:
        cs.eq("app:exit-status", cs.app_rc, expected_rc(c))
    if c["end"] == "kill9" and cs.app_rc == 0:
        crashed_end = False
    oracle_stdio(cs)
    if os.path.exists(os.path.join(cs.work, "reader.crash")):
        cs.check("reader:no-crash", False, open(os.path.join(cs.work, "reader.crash")).read())
    else:
        cs.check("reader:no-crash", True)

    if c["store"] == "readonly":
        oracle_readonly(cs)
        return
    if c["job"] == "none":
        sid = cs.session_id()
        if sid is None:
            cs.check("store:session", False, "no session in the store")
            return
        if c["fork"] != "none":
            oracle_fork(cs, crashed_end)
            return
        if c["start"] in ATTACH:
            # one session, however many times cuptop attach ran
            ids = subprocess.run([cs.env.ctl, "sessions", cs.store],
                                 capture_output=True).stdout.decode().split()
            cs.eq("attach:one-session", len(ids), 1)
        oracle_session(cs, sid, cs.truth_path, crashed_end)
        return
    oracle_job(cs, crashed_end)


APP_LINE = "simdrive: the application's own line\n"


def oracle_stdio(cs):
    """The agent never writes to the application's stdout, and leaves its
    descriptors 0-2 to it: with one of them closed (stdio=closedN), the
    application's own I/O there fails with EBADF as without an agent, the
    others work, and none of the agent's files (the store's) sits below 3
    or lacks close-on-exec."""
    c = cs.case
    out = open(os.path.join(cs.work, "out"), "rb").read().decode(errors="replace")
    if c["stdio"] == "open":
        cs.eq("app:stdout-empty", len(out), 0)
        return
    closed = int(c["stdio"][-1])
    io_path = os.path.join(cs.work, "io")
    if not os.path.exists(io_path):
        # killed (kill -9 at a random moment, a crash) before its I/O step
        cs.check("stdio:io-written", c["end"] in ("kill9",) + CRASH_ENDS or cs.app_rc != expected_rc(c),
                 "the application ended normally without its I/O step")
        cs.eq("app:stdout-empty", len(out), 0)
        return
    io = dict(w.split("=", 1) for w in open(io_path).read().split() if "=" in w)
    fds = {}
    fds_path = os.path.join(cs.work, "fds")
    if os.path.exists(fds_path):
        for line in open(fds_path):
            f = line.rstrip("\n").split(" ", 2)
            if len(f) == 3 and f[0].isdigit():
                fds[int(f[0])] = (f[1], f[2])
    if c["end"] != "kill9":   # not killed between its two steps
        cs.check("stdio:fds-written", bool(fds), "the application's descriptor list is missing")
    # the closed one: EBADF, unless the application itself opened a file of
    # its own there meanwhile (simdrive's NVTX truth, opened after its start
    # takes the lowest number): never one of the agent's
    held = fds.get(closed)
    app_own = held is not None and held[1].startswith(cs.work + "/") and \
        not held[1].startswith(cs.store + "/")
    cs.check(f"stdio:fd{closed}-not-the-agents", held is None or app_own,
             f"fd {closed}, closed at the start, holds {held}")
    want = {0: ("r0", "e0"), 1: ("w1", "e1"), 2: ("w2", "e2")}
    for fd, (v, e) in want.items():
        got = (int(io.get(v, "-2")), int(io.get(e, "-2")))
        if fd == closed:
            if not app_own:
                cs.eq(f"stdio:fd{fd}-closed-EBADF", got, (-1, errno.EBADF))
        elif fd == 0:
            cs.eq("stdio:fd0-reads-its-input", got, (0, 0))   # /dev/null: EOF
        else:
            cs.eq(f"stdio:fd{fd}-writes", got, (len(APP_LINE), 0))
    # its stdout: the application's own line only (the agent prints nothing)
    cs.eq("app:stdout-is-the-apps", out, "" if closed == 1 else APP_LINE)
    if fds and c["store"] != "readonly":
        low = [f"{fd} {t}" for fd, (_, t) in fds.items() if fd < 3 and t.startswith(cs.store + "/")]
        inh = [f"{fd} {t}" for fd, (x, t) in fds.items() if x != "1" and t.startswith(cs.store + "/")]
        cs.eq("stdio:store-fds-above-2", low, [])
        cs.eq("stdio:store-fds-cloexec", inh, [])


def truth_of(cs, path):
    return load_kv(path) if cs.truth_kind == "simdrive" else simapp_truth_kv(path)


def oracle_readonly(cs):
    """A store directory that cannot be written: the application unharmed
    (checked above), nothing stored and nothing claimed, the agent out of
    CUPTI's way, and cuptop run saying that nothing was traced."""
    c = cs.case
    rc, sj, er = cs.cuptop("sessions", "--store", cs.store, "--json")
    try:
        cs.eq("readonly:no-session", (rc, json.loads(sj)), (0, []))
    except ValueError:
        cs.check("readonly:sessions-json", False, f"rc {rc}: {sj[:200]} {er[:200]}")
    rc, out, er = cs.cuptop("check", "--store", cs.store, "--all")
    cs.check("readonly:check-not-complete", rc not in (0, "timeout") and "COMPLETE" not in out,
             f"rc {rc}: {out.strip()[:160]} {er.strip()[:160]}")
    prom = os.path.join(cs.work, "metrics.prom")
    rc, _, er = cs.cuptop("exporter", "--store", cs.store, "--textfile", prom, "--once")
    cs.eq("readonly:exporter-exit", rc, 0)
    try:
        complete = [ln for ln in open(prom) if ln.startswith("cuptop_session_complete{")]
    except OSError:
        complete = []
    cs.eq("readonly:exporter-no-session", complete, [])
    if c["driver"] == "run":
        err = open(os.path.join(cs.work, "err"), errors="replace").read()
        cs.check("readonly:run-says-untraced", "nothing was traced" in err, err.strip()[:300])
    # the agent that cannot store takes nothing: no record produced into
    # its buffers (invariant 8)
    paths = [cs.truth_path]
    if c["job"] != "none":
        paths = [f"{cs.truth_path}.{r}" for r in (0, 1)]
    if c["fork"] != "none":
        paths.append(cs.truth_path + ".child")
    for path in paths:
        if c["end"] in ("kill", "abort") and not os.path.exists(path):
            continue
        truth = truth_of(cs, path)
        produced = sum(int(v) for k, v in truth.items()
                       if k.startswith("produced.") and v.isdigit())
        cs.eq("readonly:nothing-produced", produced, 0)


def oracle_fork(cs, crashed_end):
    """cuptop-simapp --fork [--exec]: the parent's session and the child's,
    each against its own truth (a record of one in the other breaks the
    equalities); the child ends on its own (contexts destroyed, exit 0)."""
    c = cs.case
    rc, sj, _ = cs.cuptop("sessions", "--store", cs.store, "--json")
    try:
        by_pid = {str(x["pid"]): x["id"] for x in json.loads(sj)}
    except (ValueError, KeyError, TypeError):
        cs.check("fork:sessions-json", False, sj[:200])
        return
    # a fork (no exec) while another client holds the subscription: the
    # agent sees no context of the child; it says so in the parent's
    # session.  The child gets a session only from its CUPTI's first buffer
    # request: a child whose CUPTI produced nothing has none; one whose
    # CUPTI produced records has one and is judged as any child (a child
    # that produced without a session is a silent loss: fork:child-session)
    unseen_child = False
    if c["fork"] == "fork" and c["workload"] == "conflict":
        tc = truth_of(cs, cs.truth_path + ".child")
        pid = truth_of(cs, cs.truth_path).get("pid")
        unseen_child = sum(num(tc, x) for x in tc if x.startswith("produced.")) == 0
        if unseen_child:
            cs.check("fork:unseen-child-no-session", tc.get("pid") not in by_pid,
                     f"child pid {tc.get('pid')}, sessions {sorted(by_pid)}")
        if by_pid.get(pid):
            _, rep, _ = cs.cuptop("report", "--store", cs.store, by_pid[pid])
            cs.check("fork:unseen-child-noted",
                     "forked while the agent has no CUPTI callbacks" in rep, rep[-300:])
    for who, path in (("parent", cs.truth_path), ("child", cs.truth_path + ".child")):
        pid = truth_of(cs, path).get("pid")
        if who == "child" and unseen_child:
            continue
        sid = by_pid.get(pid)
        cs.check(f"fork:{who}-session", sid is not None, f"pid {pid}, sessions {sorted(by_pid)}")
        if sid is None:
            continue
        if who == "child":
            cs.prefix = "child:"
            try:
                oracle_session(cs, sid, path, False, end="return")
            finally:
                cs.prefix = ""
        else:
            oracle_session(cs, sid, path, crashed_end)
    cs.eq("fork:two-sessions", len(by_pid), 1 if unseen_child else 2)


def oracle_job(cs, crashed_end):
    """Two ranks of one job: each rank's session against its own truth
    (a skipped one against what skipping means), then the job's verdict."""
    c = cs.case
    rc, sj, _ = cs.cuptop("sessions", "--store", cs.store, "--json")
    try:
        ss = [x for x in json.loads(sj) if x.get("job") == cs.job]
    except ValueError:
        cs.check("job:sessions-json", False, sj[:200])
        return
    ranks = sorted(x.get("rank") if x.get("rank") is not None else -1 for x in ss)
    cs.eq("job:ranks", ranks, [0, 1])
    all_ok = True
    for x in ss:
        r = x.get("rank")
        if c["job"] == "only-if" and r == 1:
            cs.eq("job:skipped-verdict", x["verdict"], "SKIPPED")
            cs.eq("job:skipped-records", x["records"], 0)
            calls = [ln for ln in open(f"{cs.truth_path}.1", errors="replace")
                     if ln.startswith("call ")] if os.path.exists(f"{cs.truth_path}.1") else []
            cs.eq("job:skipped-no-cupti-call", len(calls), 0)
            rc1, _, _ = cs.cuptop("check", "--store", cs.store, x["id"])
            cs.eq("job:skipped-check-exit", rc1, 0)
            continue
        all_ok &= x["verdict"] == "COMPLETE"
        oracle_session(cs, x["id"], f"{cs.truth_path}.{r}", crashed_end)
    rc, out, _ = cs.cuptop("check", "--store", cs.store, "--job", cs.job)
    cs.eq("job:check-exit", rc, 0 if all_ok else 1)
    rc, out, _ = cs.cuptop("check", "--store", cs.store, "--job", cs.job, "--json")
    try:
        j = json.loads(out)
        cs.eq("job:json-verdict", j["verdict"].split(" ")[0], "COMPLETE" if all_ok else "INCOMPLETE")
        cs.eq("job:json-skipped", j.get("skipped"), 1 if c["job"] == "only-if" else 0)
        missing = j.get("missing", j.get("missing_ranks"))
        cs.check("job:json-no-missing-rank", missing in (0, [], None), f"missing {missing!r}")
        # the job's losses are its processes' losses
        for cl in CLASSES:
            cs.eq(f"job:loss:{cl}", (j.get("loss") or {}).get(cl, 0),
                  sum(x["loss"].get(cl, 0) for x in ss))
    except (ValueError, KeyError, TypeError):
        cs.check("job:check-json", False, out[:200])
        return
    oracle_job_split(cs, ss, j)


def oracle_job_split(cs, ss, j):
    """The job's sessions moved to one store per rank, as gathered from two
    hosts (issue 32): check --job over the directory of stores gives the
    single-store verdict, losses and records."""
    split = cs.store + ".split"
    for x in ss:
        host = os.path.join(split, "rank%s" % x.get("rank"))
        os.makedirs(host, mode=0o700, exist_ok=True)
        shutil.copytree(os.path.join(cs.store, x["id"]), os.path.join(host, x["id"]),
                        symlinks=True)
    os.chmod(split, 0o700)
    rc, out, _ = cs.cuptop("check", "--store", split, "--job", cs.job, "--json")
    try:
        m = json.loads(out)
        for k in ("verdict", "processes", "skipped", "missing_ranks", "loss", "loss_total",
                  "records"):
            cs.eq(f"job:split:{k}", m.get(k), j.get(k))
        cs.eq("job:split:stores", m.get("stores"), len(ss))
    except ValueError:
        cs.check("job:split:check-json", False, out[:200])
    shutil.rmtree(split, ignore_errors=True)


def kinds_steady(c):
    """The kinds were the case's from the first operation to the last on
    every device: no dormant, attach or capture start, no kind switch or
    detach, no device scope (its other devices trace nothing), no stop
    while the work still runs (twosig: signals at a random moment, the
    agent's stop turns the kinds off while the producers go on)."""
    return (c["start"] == "eager" and c["control"] in ("none", "pool", "ledger")
            and c["scope"] == "all" and c["end"] not in ("twosig", "kill9"))


def oracle_graph(cs, sess, truth, t, agent, stale):
    """CUDA graph launches (workload=graph) against the truth, as CUPTI 13
    traces them: with the graph kind on, one graph record per launch
    (graph records stored + lost == the launches) and no per-node kernel
    records, even beside kernel; with it off, nodes x launches kernel
    records where kernel is on."""
    c = cs.case
    launches = t("ops", "graph")
    if c["workload"] != "graph" or not launches or stale or not kinds_steady(c):
        return
    kinds = (c["kinds"] if c["kinds"] != "default" else DEFAULT_KINDS).split(",")
    if c["kinds"] == "all":
        kinds = KINDS[:-1]   # every kind but graph
    graph_on, kernel_on = "graph" in kinds, "kernel" in kinds
    nodes = num(truth, "graph_nodes") or GRAPH_NODES
    node_recs = sum(num(truth, f"graph_node_records.{d}") for d in range(int(c["devices"])))
    cs.eq("graph:produced==launches" if graph_on else "graph:none-produced-when-off",
          t("produced", "graph"), launches if graph_on else 0)
    cs.eq("graph:node-records", node_recs, nodes * launches if kernel_on and not graph_on else 0)
    if graph_on and not sum((sess.get("loss_at_most") or {}).values()):
        # stored + what the agent counted lost after delivery + what never
        # reached it (the truth's: dropped, held, stolen, silent; invalid)
        kept = ["records", "loss.store_refused", "loss.queue_overflow", "loss.tail",
                "loss.declined"]
        got = (sum(agent("graph", None, a) for a in kept) + t("invalid", "graph") +
               t("produced", "graph") - t("delivered", "graph"))
        cs.eq("graph:stored+lost==launches", got, launches)
    cs.eq("graph:sessions-records", sess["records_by_kind"].get("graph", 0),
          agent("graph", None, "records"))


def oracle_ledger(cs, dump, t, stale, verdict, sid):
    """The launch ledger (--ledger) against the truth: never more
    `unrecorded` than the GPU records the simulator lost silently; exactly
    those when nothing else was lost and no kind switch overlapped a call.
    Switched at runtime (control=ledger) it covers part of the session:
    partial, never exact, its figures only a bound.  Clean (nothing lost
    at all): nothing unrecorded, nothing pending in the last health row."""
    c = cs.case
    switched = c["control"] == "ledger"
    if "meta.ledger" not in dump:
        # off only where the agent has no subscription (another client), or
        # where a full map refused its result: then the refusal is counted
        # (the final status's store_refused) and the session INCOMPLETE
        refused = num(dump, "final.store_refused") > 0
        cs.check("ledger:present", c["workload"] == "conflict" or refused,
                 f"no ledger result (notes: {[v for k, v in dump.items() if k.startswith('note.')][:3]})")
        if refused:
            cs.check("ledger:refused-not-complete", verdict != "COMPLETE", verdict)
        return
    led = {k: v for k, v in (w.split("=", 1) for w in dump["meta.ledger"].split() if "=" in w)}
    if led.get("unjudged") == "1":
        # the consumer was orphaned in a store commit at the stop (its side
        # of the ledger still in use): no final sweep. Honest only as a
        # partial result that says so, calls nothing unrecorded, and a
        # session that is not COMPLETE (the commit step failed)
        notes = [v for k, v in dump.items() if k.startswith("note.")]
        cs.check("ledger:unjudged-noted", any("launch ledger not judged" in v for v in notes),
                 f"notes: {notes[:3]}")
        cs.eq("ledger:unjudged-is-partial", led.get("partial"), "1")
        cs.eq("ledger:unjudged-never-exact", led.get("exact"), "0")
        cs.eq("ledger:unjudged-unrecorded==0", num(dump, "loss.unrecorded"), 0)
        cs.check("ledger:unjudged-not-complete", verdict != "COMPLETE", verdict)
        return
    gpu_silent = sum(t("silent", k) for k in LEDGER_KINDS)
    unrec = num(dump, "loss.unrecorded")
    cs.check("ledger:unrecorded<=silent", unrec <= gpu_silent,
             f"unrecorded {unrec}, the simulator lost {gpu_silent} GPU records silently")
    others = sum(num(dump, f"loss.{x}") for x in CLASSES if x not in ("unrecorded", "store_refused"))
    # launches made while kinds were switched are not judged (taken back:
    # ambiguous; or skipped: their records orphans)
    # ... and a graph launch whose nodes it could not count (a graph
    # instantiated before the attach): matched, never called missing
    unsure = int(led.get("ambiguous", 0)) + int(led.get("unknowable", 0)) + \
        sum(int(led.get(f"{k}.orphan", 0)) for k in LEDGER_KINDS)
    if switched:
        cs.eq("ledger:switched-is-partial", led.get("partial"), "1")
        cs.eq("ledger:partial-never-exact", led.get("exact"), "0")
    else:
        cs.eq("ledger:whole-not-partial", led.get("partial", "0"), "0")
    if not others and not unsure and not stale and not switched:
        cs.eq("ledger:unrecorded==silent", unrec, gpu_silent)
    if not others and not gpu_silent and not stale:
        cs.eq("ledger:clean-unrecorded==0", unrec, 0)
        cs.eq("ledger:clean-pending==0", num(dump, "health.ledger_pending_last"), 0)
    holes = [dict(w.split("=", 1) for w in v.split() if "=" in w)
             for key, v in dump.items() if key.startswith("meta.ledger.stream.")]
    for k in LEDGER_KINDS:
        # launches pushed out of the window are holes at once, and their
        # late records come off their stream's hole and the total alike
        cs.eq(f"ledger:holes-add-up:{k}", sum(int(h.get(k, 0)) for h in holes),
              int(led.get(f"{k}.missing", 0)))
    rows = int(led.get("lost_rows", 0))
    if rows and num(dump, "records.total") <= 200000:
        oracle_lost_trace(cs, sid, rows)
    for k in LEDGER_KINDS:
        cs.check(f"ledger:extra-only-of-ambiguous:{k}",
                 int(led.get(f"{k}.extra", 0)) <= int(led.get("ambiguous", 0)),
                 f"extra {led.get(f'{k}.extra')}, ambiguous {led.get('ambiguous')}")


def oracle_lost_trace(cs, sid, rows):
    """The chrome trace draws each `lost` row twice: on its stream (a slice
    over no record of that stream, or a point after them) and on its
    launching thread."""
    out = os.path.join(cs.work, f"lost-{sid}.json")
    rc, _, er = cs.cuptop("export", "--store", cs.store, sid, "--from", "start", "--to", "end",
                          "--format", "chrome", "-o", out)
    try:
        with open(out, encoding="utf-8", errors="replace") as f:
            ev = json.load(f)["traceEvents"]
        os.unlink(out)
    except (OSError, ValueError, KeyError):
        cs.check("ledger:trace", False, f"rc {rc} {er[:200]}")
        return
    recs, lost = {}, []
    for e in ev:
        if e.get("cat") == "lost":
            lost.append(e)
        elif e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            a = e.get("args", {})
            recs.setdefault((e["pid"], a.get("stream")), []).append((e["ts"], e["ts"] + e["dur"]))
    thread = [e for e in lost if e["name"].endswith("(launched here)")]
    stream = [e for e in lost if not e["name"].endswith("(launched here)")]
    cs.eq("ledger:trace-lost-on-threads==rows", len(thread), rows)
    cs.eq("ledger:trace-lost-on-streams==rows", len(stream), rows)
    over = 0
    for e in stream:
        b, end = e["ts"], e["ts"] + e.get("dur", 0)
        on = recs.get((e["pid"], e["args"]["stream"]), [])
        over += any(s < end - 0.001 and x > b + 0.001 for s, x in on)
    cs.eq("ledger:trace-lost-over-no-record", over, 0)


def oracle_session(cs, sid, truth_path, crashed_end, end=None):
    """Every output about one session against its truth and each other
    (end: how this process ended, when not the case's)."""
    c = cs.case
    end = end or c["end"]
    dump_p = subprocess.run([cs.env.ctl, "dump", cs.store, sid], capture_output=True)
    dump = {}
    for line in dump_p.stdout.decode("utf-8", "replace").split("\n"):
        if "=" in line:
            k, v = line.split("=", 1)
            dump.setdefault(k, v)
    def dl(x):
        # a session's loss of class x: its loss rows, or, where a full map
        # refused the final status (it went aside) and with it the last
        # health row, the final status's total
        if num(dump, "final.aside") == 1:
            return max(num(dump, f"loss.{x}"), num(dump, f"final.loss.{x}"))
        return num(dump, f"loss.{x}")
    if cs.truth_kind == "simdrive":
        truth = load_kv(truth_path)
    else:
        truth = simapp_truth_kv(truth_path)
    have_truth = bool(truth) and end != "kill9"
    final = dump.get("final.exit_path") not in (None, "none") and "final.exit_path" in dump
    if end in ("kill", "kill9") and final:
        # the kill landed after the stop protocol had written the final
        # status (the process was exiting: an ASan build's exit is slow):
        # the session ended as a return did, and is judged as one
        crashed_end = False
    if end == "_exit" and not final:
        # cuptop-simapp's _exit is a clean end only where the contexts'
        # destruction reached the agent (not with another subscriber)
        crashed_end = True
    if c["start"] == "capture_every" and c["driver"] == "simdrive":
        truth_windows.check(cs, dump, crashed_end, truth)
    # the descriptor hold's lock order (agent_fd.h): never broken, in any case
    order = [v for k, v in dump.items() if k.startswith("note.") and "descriptor holds taken inside" in v]
    cs.eq("agent:fd-lock-order", order, [])

    rc, sj, _ = cs.cuptop("sessions", "--store", cs.store, "--json")
    try:
        sess = [s for s in json.loads(sj) if s["id"] == sid][0]
    except (ValueError, IndexError, KeyError):
        cs.check("sessions:json", False, f"rc {rc}: {sj[:200]}")
        return
    verdict = sess["verdict"]
    loss = sess["loss"]

    # ---- the store against the simulator's truth (exact where it knows)
    devs = [str(i) for i in range(int(c["devices"]))]

    def agent(kind, dev, key):
        if dev is None:
            return sum(num(dump, f"{key}.{kind}.{x}") for x in devs + ["none"])
        return num(dump, f"{key}.{kind}.{dev}")

    def t(key, kind, dev=None):
        if dev is None:
            return sum(num(truth, f"{key}.{kind}.{x}") for x in devs)
        return num(truth, f"{key}.{kind}.{dev}")

    truth_lost = 0
    # an invalid record inside a buffer lost as a whole (overflow, tail,
    # declined, conflict): checks named apart (known.txt 29.7)
    walked = ""
    # records CUPTI lost without a count: only a launch ledger sees them
    silent = ":silent" if have_truth and sum(t("silent", k) for k in KINDS) else ""
    if have_truth and sum(t("invalid", k) for k in KINDS) and sum(
            num(dump, f"loss.{x}") for x in ("queue_overflow", "tail", "declined", "conflict")):
        walked = ":invalid-in-lost-buffer"
    # a final flush that gave up with buffers still held: their records
    # are lost, how many is known only up to the buffers' capacity (27.2)
    at_most = sum((sess.get("loss_at_most") or {}).values())

    def eq_or_within(name, got, want):
        if at_most:
            cs.check(name, got <= want <= got + at_most,
                     f"{got} <= {want} <= {got} + at most {at_most}")
        else:
            cs.eq(name, got, want)

    # The truth file is rewritten at the end of each forced flush.  A
    # process that dies right after its stop (abort, a signal, _exit) while
    # the final flush is still delivering (the agent gave up waiting:
    # flush_ok 0) keeps the truth of before that flush, or of after it:
    # what the agent got from the flush may be in no truth (the agent then
    # accounts for more than the truth delivered), and what the flush
    # delivered after the agent stopped waiting is in the truth but only in
    # the agent's bound (at most).  So there: truth delivered <= accounted
    # + at most, and accounted <= produced (the producers had stopped).
    # Seen on 16 loaded cores with a slow store (9101030362).
    stale = (final and dump.get("final.flush_ok") == "0" and end not in ("return", "exit")
             and truth.get("final") != "1")

    def accounted(name, got, want, produced):
        if stale:
            cs.check(name + ":flush-gave-up", want <= got + at_most and got <= produced,
                     f"delivered {want} <= accounted {got} + at most {at_most}; "
                     f"accounted <= produced {produced}")
        else:
            eq_or_within(name, got, want)

    if have_truth:
        after = ["records", "loss.store_refused", "loss.queue_overflow", "loss.tail",
                 "loss.declined"]
        for k in KINDS:
            want = t("delivered", k) - t("invalid", k)
            got = sum(agent(k, None, a) for a in after)
            if final and not crashed_end:
                accounted(f"truth:accounted:{k}{walked}", got, want, t("produced", k))
            else:
                cs.check(f"truth:accounted-bound:{k}", got <= want, f"{got} <= {want}")
            if k in ("kernel", "memcpy", "memset"):
                for dv in devs:
                    w = t("delivered", k, dv) - t("invalid", k, dv)
                    g = sum(agent(k, dv, a) for a in after)
                    if final and not crashed_end:
                        accounted(f"truth:accounted:{k}:dev{walked}", g, w, t("produced", k, dv))
            if t("foreign", k) and final and not crashed_end:
                # without a final status the counts are the last health
                # row's: a foreign buffer completed after it (or counted by
                # the simulator and not yet handed over when the process
                # died) is in no row; the crashed session is INCOMPLETE
                cs.check(f"truth:conflict-covers-foreign:{k}",
                         agent(k, None, "loss.conflict") >= t("foreign", k) or
                         num(dump, "loss.conflict") >= t("foreign", k),
                         f"conflict {num(dump, 'loss.conflict')} foreign {t('foreign', k)}")
            truth_lost += (t("dropped", k) + t("held", k) + t("stolen", k) + t("invalid", k)
                           + t("zero_ts", k) + t("foreign", k) + t("silent", k))
        if final and not crashed_end:
            cs.eq("truth:parse_error==invalid" + walked, dl("parse_error"),
                  sum(t("invalid", k) for k in KINDS))
            cs.eq("truth:cupti_dropped==dropped", dl("cupti_dropped"),
                  sum(t("dropped", k) for k in KINDS))
            zt = sum(t("zero_ts", k) for k in KINDS)
            if sum(dl(x) for x in ("queue_overflow", "tail", "store_refused", "declined")) or \
                    num(dump, "final.store_refused"):
                # records lost before they were parsed are not seen as zero-ts
                cs.check("truth:zero_ts-bound", dl("zero_ts") <= zt, f"{dl('zero_ts')} <= {zt}")
            else:
                cs.eq("truth:zero_ts", dl("zero_ts"), zt)
            held = sum(t("held", k) for k in KINDS)
            stolen_all = sum(t("stolen", k) for k in KINDS)
            if held:
                tail = dl("tail")
                cs.check("truth:held-is-tail", tail >= held or tail + at_most >= held,
                         f"tail {tail} (+ at most {at_most}) held {held}")
            if dump.get("final.flush_ok") == "0" and num(dump, "final.buffers_outstanding"):
                # a flush that gave up with buffers out: a loss, never 0
                cs.check("truth:held-buffers-bounded",
                         num(dump, "final.tail_bound") > 0 or
                         (sess.get("loss_at_most") or {}).get("tail", 0) > 0,
                         f"bound {num(dump, 'final.tail_bound')} at_most {at_most}")
                cs.check("truth:held-buffers-incomplete", verdict != "COMPLETE", verdict)
            if at_most and not stale:
                # the bounds hold: what is said lost at least was lost (not
                # where the flush gave up and the process died: the truth
                # may be from after that flush, which delivered what the
                # agent had already called lost -- 29000284, abort +
                # slowstop; the accounted checks bound that case)
                lb = (sess.get("loss_bound") or {}).get("tail", 0)
                cs.check("truth:tail-bound-holds", lb <= held + stolen_all,
                         f"bound {lb} held {held}")
            stolen = sum(t("stolen", k) for k in KINDS)
            if stolen:
                # buffers another client took never come back: the agent
                # cannot know their records exactly, only that they are
                # out (invariant 12): a loss counted, or a lower bound
                # that holds, never silence
                lost = num(dump, "loss.conflict") + num(dump, "loss.tail")
                bound = sum((sess.get("loss_bound") or {}).values())
                cs.check("truth:stolen-counted", lost + bound > 0,
                         f"conflict+tail {lost} bound {bound} stolen {stolen}")
                cs.check("truth:stolen-bound-holds", bound <= stolen + held,
                         f"bound {bound} stolen {stolen} held {held}")
        # a kind that is on yields records: an API kind enabled under a
        # policy that records the launches must produce some (the agent's
        # own muting is never silent)
        if final and not crashed_end and c["api"] != "none" and \
                c["start"] not in ("capture_nvtx", "capture_every"):   # work may miss the windows
            on = (sess.get("kinds_enabled") or "").split(",")
            ops = sum(num(truth, f"ops.kernel.{x}") for x in devs) or WORK_EMIT
            for k in ("runtime", "driver"):
                if k in on and ops:
                    cs.check(f"kinds:api-recorded:{k}", t("produced", k) > 0,
                             f"{k} on ({sess.get('kinds_enabled')}), 0 produced")
        # the invariant on produced: stored + every loss class == produced
        if final and not crashed_end:
            prod = sum(t("produced", k) for k in KINDS)
            got = (num(dump, "records.total") + sum(dl(x) for x in CLASSES
                                                    if x not in ("zero_ts", "conflict")))
            exact = (sum(t("stolen", k) + t("held", k) + t("silent", k) for k in KINDS) == 0
                     and sum(t("foreign", k) for k in KINDS) == 0)
            if exact:
                eq_or_within("truth:stored+lost==produced" + walked, got, prod)
            else:
                cs.check("truth:stored+lost<=produced", got <= prod + num(dump, "loss.tail"),
                         f"{got} vs produced {prod}")
            if silent:
                cs.eq("truth:stored+lost==produced" + silent, got, prod)
        if final and not crashed_end and (c.get("ledger") == "on" or c["control"] == "ledger"):
            oracle_ledger(cs, dump, t, stale, verdict, sid)
        if final and not crashed_end:
            oracle_graph(cs, sess, truth, t, agent, stale)
    else:
        cs.check("truth:none", True, "no truth (killed from outside)")

    # ---- the verdict: COMPLETE iff nothing lost in scope
    agent_lost = sum(loss.values())
    complete = verdict == "COMPLETE"
    if complete:
        cs.eq("verdict:complete-means-no-loss", agent_lost, 0)
        cs.check("verdict:complete-means-truth-lossless" + silent, not have_truth or truth_lost == 0,
                 f"truth says {truth_lost} lost or flawed")
        cs.check("verdict:complete-not-crashed", not crashed_end,
                 f"end {end}, state {sess.get('state')}, final "
                 f"{dump.get('final.exit_path', dump.get('final'))}, dump rc "
                 f"{dump_p.returncode}, app rc {cs.app_rc}")
    else:
        should_complete = (have_truth and truth_lost == 0 and agent_lost == 0 and not crashed_end
                           and c["store"] != "slowstop" and final)
        cs.check("verdict:lossless-is-complete", not should_complete,
                 f"{verdict} reasons {sess.get('reasons')}")
    if crashed_end:
        cs.check("verdict:crash-is-incomplete", not complete,
                 f"{verdict} (state {sess.get('state')}, reasons {sess.get('reasons')})")

    # ---- sessions --json against the dump
    for k in KINDS:
        cs.eq(f"sessions:records:{k}", sess["records_by_kind"].get(k, 0),
              sum(num(dump, f"records.{k}.{x}") for x in devs + ["none"]))
    cs.eq("sessions:records", sess["records"], num(dump, "records.total"))
    for cl in CLASSES:
        cs.eq(f"sessions:loss:{cl}", loss.get(cl), dl(cl))
    cs.eq("sessions:loss_total", sess["loss_total"], agent_lost)
    lbd = sess.get("loss_by_device", {})
    for cl in CLASSES:
        s = sum(v.get(cl, 0) for v in lbd.values())
        cs.eq(f"sessions:loss_by_device-sums:{cl}", s, loss.get(cl))
    for dv in devs:
        want = sum(num(dump, f"records.{k}.{dv}") for k in DEVICE_KINDS)
        cs.eq("sessions:records_by_device", sess["records_by_device"].get(dv, 0), want)

    # ---- check: verdict, exit status, --json
    rc, out, _ = cs.cuptop("check", "--store", cs.store, sid)
    cs.eq("check:exit", rc, 0 if complete else 1)
    first = out.split("\n", 1)[0]
    cs.check("check:verdict-text", first.startswith(f"{sid}: {verdict}"), first[:160])
    rc, out, _ = cs.cuptop("check", "--store", cs.store, "--json", sid)
    try:
        cj = json.loads(out)[0]
        cs.eq("check:json-verdict", cj["verdict"], verdict)
        cs.eq("check:json-loss", cj["loss"], loss)
        if not complete:
            cs.check("check:json-advice", cj.get("advice") is not None, "advice null")
    except (ValueError, IndexError, KeyError):
        cs.check("check:json", False, out[:200])
    if sess["state"] == "ended":
        rc, out, _ = cs.cuptop("check", "--store", cs.store, "--verify", sid)
        cs.eq("check:verify-exit", rc, 0 if complete else 1)

    # ---- report's figures
    rc, rep, _ = cs.cuptop("report", "--store", cs.store, sid)
    cs.eq("report:exit", rc, 0 if complete else 1)
    m = re.search(r"^  state\s+\S+, (\S+)", rep, re.M)
    cs.eq("report:verdict", m.group(1) if m else None, verdict.split(" ")[0])
    m = re.search(r"^  all\s+(\d+)\s+\S+\s+\S+\s+(\d+)", rep, re.M)
    if m:
        cs.eq("report:all-records", int(m.group(1)), sess["records"])
        cs.eq("report:all-lost", int(m.group(2)), agent_lost)
        kind_lost, exact_rows = 0, 0
        for k in KINDS + ["other"]:   # the report lists every stored kind
            mk = re.search(rf"^  {k}\s+(\d+)\s+\S+\s+\S+\s+(\d+)(~?)", rep, re.M)
            if mk:
                kind_lost += int(mk.group(2))
                exact_rows += int(mk.group(2)) > 0 and not mk.group(3)
                cs.eq(f"report:records:{k}", int(mk.group(1)), sess["records_by_kind"].get(k, 0))
        # parse errors belong to no kind (CUPTI could not say which), nor
        # does a conflict the agent counts as one record of no kind (a
        # foreign buffer with no record it could read, a buffer completed
        # twice): the kind rows plus them make "all" (the class table
        # says what they are)
        kindless = sum(int(v) for k, v in dump.items()
                       if k.startswith("loss.conflict.all.") and v.isdigit())
        want = int(m.group(2)) - loss.get("parse_error", 0) - kindless
        name = "report:kind-lost-sum==all"
        if loss.get("cupti_dropped") and exact_rows:
            name += ":estimate-with-exact"    # a kind with an exact loss and drops
        elif loss.get("queue_overflow") and 0 < want - kind_lost <= 2 * int(c["devices"]):
            name += ":metadata-records"       # see known.txt 29.4
        if sess["records"]:   # with no record there is no mix to attribute drops by
            cs.eq(name, kind_lost, want)
    else:
        cs.check("report:all-row", False, "no 'all' row")
    for cl in CLASSES:
        mc = re.search(rf"^  {cl}\s+(\d+)\s", rep, re.M)
        cs.eq(f"report:loss:{cl}", int(mc.group(1)) if mc else None, loss.get(cl))
    for dv in devs:
        md = re.search(rf"^  {dv}\s+(\d+)\s+(\d+)$", rep, re.M)
        if md:
            cs.eq("report:device-records", int(md.group(1)), sess["records_by_device"].get(dv, 0))
    ms = re.search(r"tail lost (\d+)", rep)
    if ms and not crashed_end:
        cs.eq("report:tail-lost", int(ms.group(1)), loss.get("tail"))
    held_at_end = sum(t("held", k) for k in KINDS) if have_truth else None
    if c["store"] == "slowstop" and "flush timed out" in rep and held_at_end != 0:
        # "0 records lost at stop", not "136560 records lost at stop"; a
        # flush that returned late with nothing held (the drain took every
        # buffer: the agent's note says CUPTI held none) lost 0, exactly
        cs.check("report:flush-timeout-not-zero",
                 not re.search(r"(^|[^0-9])0 records lost at stop", rep),
                 f"held {held_at_end}")

    # ---- compare: the session with itself; the epochs
    rc, out, _ = cs.cuptop("compare", "--store", cs.store, "--json", sid, sid)
    try:
        cj = json.loads(out)
        a, b = cj["sides"]
        cs.eq("compare:self-records", (a["records"], b["records"]),
              (sess["records"], sess["records"]))
        cs.eq("compare:self-loss", a["loss_total"], agent_lost)
        cs.eq("compare:self-verdict", a["verdict"], verdict)
        # a session of several epochs of different kinds is, by design, not
        # comparable as a whole ("kinds within A"): no other difference
        diffs = [d["what"] for d in cj.get("differences", [])
                 if not (d["what"].startswith("kinds within") and nep_kinds(dump) > 1)]
        cs.eq("compare:self-differences", diffs, [])
    except (ValueError, KeyError, TypeError):
        cs.check("compare:self-json", False, f"rc {rc}: {out[:200]}")
    nep = num(dump, "epochs")
    if nep > 1:
        recs, lost = 0, 0
        for i in range(1, nep + 1):
            rc, out, _ = cs.cuptop("compare", "--store", cs.store, "--json", f"{sid}@{i}",
                                   f"{sid}@{i}")
            try:
                side = json.loads(out)["sides"][0]
            except (ValueError, KeyError, IndexError):
                cs.check("compare:epoch-json", False, f"epoch {i} rc {rc}: {out[:200]}")
                break
            recs += side["records"]
            lost += side["loss_total"]
            scope = dump.get(f"epoch.{i}.scope", "")
            if "out_of_scope" in scope or "dormant" in scope:
                cs.eq("compare:out-of-scope-epoch-lossless", side["loss_total"], 0)
        else:
            cs.eq("compare:epochs-sum-records", recs, sess["records"])
            cs.eq("compare:epochs-sum-loss", lost, agent_lost)

    # ---- export jsonl: the whole session, and a random window.  Read as a
    # stream, keeping per record only its kind, start and API name (a
    # session of the drops workload holds hundreds of thousands)
    full = os.path.join(cs.work, "all.jsonl")
    rc, out, er = cs.cuptop("export", "--store", cs.store, sid, "--from", "start", "--to", "end",
                            "--format", "jsonl", "-o", full)
    nrec, byk, api, starts, head = 0, {}, {}, array.array("q"), None
    if rc == 2 and "holds no data" in er and sess["records"] == 0 and crashed_end:
        # a session killed before its first health row has no time span
        # to export; it must then hold no record either
        cs.eq("export:empty-session-has-no-records", num(dump, "records.total"), 0)
    else:
        try:
            with open(full, encoding="utf-8", errors="replace") as f:
                head = json.loads(f.readline())
                for line in f:
                    m = KIND_RE.search(line)
                    k = m.group(1) if m else None
                    nrec += 1
                    byk[k] = byk.get(k, 0) + 1
                    m = START_RE.search(line)
                    starts.append(int(m.group(1)) if m else 0)
                    if k in ("runtime", "driver"):
                        m = NAME_RE.search(line)
                        key = (k, m.group(1) if m else None)
                        api[key] = api.get(key, 0) + 1
            cs.eq("export:verdict", head["verdict"].split(" ")[0], verdict.split(" ")[0])
        except (OSError, ValueError, KeyError, TypeError):
            cs.check("export:jsonl", False, f"rc {rc} {er[:200]}")
        try:
            os.unlink(full)
        except OSError:
            pass
    cs.eq("export:records", nrec, sess["records"])
    for k in KINDS:
        cs.eq(f"export:records:{k}", byk.get(k, 0), sess["records_by_kind"].get(k, 0))
    # per call id: the API records stored == those CUPTI produced, by name
    # (cuptop-simapp's truth has them; exact when nothing was lost)
    if (cs.truth_kind == "simapp" and have_truth and final and not crashed_end
            and agent_lost == 0 and truth_lost == 0 and not at_most and nrec):
        want = {}
        for line in open(truth_path):
            f = line.split()
            if len(f) == 4 and f[0] == "api_produced" and int(f[3]):
                key = (f[1], re.sub(r"_v\d{4,}$", "", f[2]))
                want[key] = want.get(key, 0) + int(f[3])
        cs.eq("export:api-records-per-call-id", api, want)
    nz = [x for x in starts if x]
    if nz:
        sec0, sec1 = min(nz) // 10**9, max(nz) // 10**9
        a = cs.rnd.randint(sec0, sec1)
        win = os.path.join(cs.work, "win.jsonl")
        rc, out, er = cs.cuptop("export", "--store", cs.store, sid, "--from", str(a), "--to",
                                str(a), "--format", "jsonl", "-o", win)
        try:
            with open(win, encoding="utf-8", errors="replace") as f:
                wh = json.loads(f.readline())
                wn = sum(1 for _ in f)
            os.unlink(win)
            f0, f1 = wh["window"]["from_ns"], wh["window"]["to_ns"]
            inside = sum(1 for x in nz if f0 <= x <= f1)
            zts = len(starts) - len(nz)
            if zts:   # zero-timestamp records: placed by something else
                cs.check("export:window-records-bound", inside <= wn <= inside + zts,
                         f"{wn} in [{inside}, {inside + zts}]")
            else:
                cs.eq("export:window-records", wn, inside)
            # the window judged as a window: a lossless session's window too
            d = os.path.join(cs.work, f"win-{sid}")   # one per session (a fork has two)
            rc2, _, er2 = cs.cuptop("export", "--store", cs.store, sid, "--from", str(a), "--to",
                                    str(a), "--format", "store", "-o", d)
            cs.eq("export:window-store-exit", rc2, 0)
            rc3, out3, _ = cs.cuptop("check", "--store", d, "--all")
            if complete:
                cs.eq("export:window-store-check", rc3, 0)
            cs.check("export:window-store-not-crashed", "crashed" not in out3 or crashed_end,
                     out3.strip()[:200])
        except (OSError, ValueError, IndexError, KeyError):
            cs.check("export:window-jsonl", False, f"rc {rc} {er[:200]}")
    del starts, nz

    # ---- ranges against the NVTX ranges pushed
    if os.path.exists(cs.nvtx_path):
        starts, unseen, pushed = nvtx_truth(cs.nvtx_path)
        if pushed is not None:
            # every START CUPTI recorded is a range the application pushed
            # (the capture range's own push turns the markers on)
            for nm, cnt in starts.items():
                if c["start"] == "capture_nvtx" and nm == "step":
                    continue
                cs.check(f"truth:nvtx-cupti-within-app:{nm}", cnt <= pushed.get(nm, 0),
                         f"CUPTI started {cnt}, the application's ranges {pushed.get(nm, 0)}")
        rc, out, _ = cs.cuptop("ranges", "--store", cs.store, "--json", sid)
        try:
            rj = json.loads(out)
            got = {}
            for n in rj["names"]:
                got[n["name"]] = got.get(n["name"], 0) + n["count"] + n.get("open", 0)
            kinds = c["kinds"] if c["kinds"] != "default" else DEFAULT_KINDS
            if "marker" in kinds.split(",") or c["kinds"] == "all":
                # exact when no marker record was lost (truth and agent);
                # else a bound
                mlost = (sum(t(x, "marker") for x in ("dropped", "held", "stolen", "invalid"))
                         if have_truth else 1) + agent_lost
                # a control request that turns markers off mid-run: the
                # ranges after it are not collected, by request (a bound)
                mlost += c["control"] in ("kinds", "burst")
                if not mlost and c["start"] in ("eager",):
                    cs.check("ranges:unseen-start-is-unbalanced",
                             rj.get("unbalanced", 0) >= unseen,
                             f"unbalanced {rj.get('unbalanced')}, ends without a start {unseen}")
                for nm, cnt in (pushed if pushed is not None else starts).items():
                    if c["start"] == "capture_nvtx" and nm == "step":
                        continue
                    if mlost:
                        cs.check(f"ranges:count-bound:{nm}", got.get(nm, 0) <= cnt,
                                 f"{got.get(nm, 0)} <= {cnt}")
                    else:
                        cs.eq(f"ranges:count:{nm}", got.get(nm, 0), cnt)
        except (ValueError, KeyError):
            cs.check("ranges:json", False, f"rc {rc}: {out[:200]}")

    # ---- the exporter's metrics
    prom = os.path.join(cs.work, "metrics.prom")
    rc, _, er = cs.cuptop("exporter", "--store", cs.store, "--textfile", prom, "--once")
    cs.eq("exporter:exit", rc, 0)
    metrics = {}
    try:
        for line in open(prom):
            if line.startswith("#") or not line.strip():
                continue
            name, _, val = line.rpartition(" ")
            metrics[name] = float(val)
    except OSError:
        pass

    def metric(name, **labels):
        for k, v in metrics.items():
            if not k.startswith(name + "{") or f'session="{sid}"' not in k:
                continue
            if all(f'{lk}="{lv}"' in k for lk, lv in labels.items()):
                return v
        return None

    for k in KINDS:
        cs.eq(f"exporter:records:{k}", metric("cuptop_records_total", kind=k),
              float(sess["records_by_kind"].get(k, 0)))
    for cl in CLASSES:
        cs.eq(f"exporter:lost:{cl}", metric("cuptop_records_lost_total", **{"class": cl}),
              float(loss.get(cl, 0)))
    for dv, classes in lbd.items():
        for cl, v in classes.items():
            cs.eq(f"exporter:device-lost:{cl}",
                  metric("cuptop_device_records_lost_total", device=dv, **{"class": cl}),
                  float(v))
    cs.eq("exporter:complete", metric("cuptop_session_complete"), 1.0 if complete else 0.0)


def nvtx_truth(path):
    """The simulator's NVTX truth file (doc/sim.md): (CUPTI's START records
    per name, CUPTI's ENDs of a range it never saw start, and the ranges
    per name the session should hold from the application's own pushes and
    pops - None when the application told none).

    A push CUPTI's handlers saw (IN) while a marker record is made (ON) is
    CUPTI's range, closed or left open; a push they never saw (made before
    they were in: before CUDA, while dormant, or while another thread's
    first NVTX call still hands the table over) is the agent's range when
    it is popped while a marker record would be made; a push CUPTI saw
    while it made no record (ON 0) is no range: its pop is an END of an id
    never started, counted as unbalanced (issue 27 item 3)."""
    starts, start_ids, end_ids, pushed, told = {}, set(), [], {}, False
    stacks = {}
    for line in open(path, errors="replace"):
        f = line.split()
        if len(f) == 6 and f[0] in ("start", "end"):
            if f[0] == "start":
                nm = bytes.fromhex(f[5]).decode("utf-8", "replace") if f[5] != "-" else ""
                starts[nm] = starts.get(nm, 0) + 1
                start_ids.add(f[1])
            else:
                end_ids.append(f[1])
        elif len(f) == 7 and f[0] in ("apush", "apop"):
            told = True
            seen, on, st = f[3] == "1", f[4] == "1", stacks.setdefault((f[1], f[5]), [])
            if f[0] == "apush":
                nm = bytes.fromhex(f[6]).decode("utf-8", "replace") if f[6] != "-" else ""
                pushed.setdefault(nm, 0)
                st.append((nm, seen, on))
            elif st:
                nm, pseen, pon = st.pop()
                pushed[nm] += (pseen and pon) or (not pseen and on)
    for st in stacks.values():
        for nm, pseen, pon in st:   # left open: CUPTI's, if it started it
            pushed[nm] += pseen and pon
    # ends whose start CUPTI never saw (pushed before it could, or while it
    # made no record): each an unbalanced end, counted (issue 27 item 3)
    unseen = sum(1 for i in end_ids if i not in start_ids)
    return starts, unseen, pushed if told else None


def nep_kinds(dump):
    """How many different kind sets the session's epochs collected."""
    kinds = set()
    for i in range(1, num(dump, "epochs") + 1):
        kinds.add(dump.get(f"epoch.{i}", "").split(" ")[0])
    return len(kinds)


# ---------------------------------------------------------------- driving
class EnvPaths:
    def __init__(self, build, src):
        self.build, self.src = build, src
        self.cuptop = os.path.join(build, "cuptop")
        self.ctl = os.path.join(build, "agentctl")
        self.simdrive = os.path.join(build, "simdrive")
        self.simapp = os.path.join(build, "cuptop-simapp")
        self.sim = os.path.join(build, "libcuptop-simcupti.so")
        self.agent = os.path.join(build, "libcuptop-agent.so")
        self.faultio = os.path.join(build, "faultio.so")
        self.hold_reader = os.path.join(build, "tests", "faults", "hold_reader")
        self.missing = [p for p in (self.cuptop, self.ctl, self.simdrive, self.simapp, self.sim,
                                    self.agent, self.faultio, self.hold_reader)
                        if not os.path.exists(p)]
        self.known = Known(os.path.join(src, "tests", "truth", "known.txt"))


def rerun_cmd(env, seed, case):
    return (f"top_builddir={env.build} top_srcdir={env.src} "
            f"python3 {env.src}/tests/truth/truth.py one {seed} --spec '{spec_kv(case)}'")


def run_one(env, seed, case, keep=None, quiet=False):
    """Run one case; returns (fails, xfails, checks, lines)."""
    work = keep or tempfile.mkdtemp(prefix="cuptop-truth.")
    if keep:
        shutil.rmtree(keep, ignore_errors=True)
        os.makedirs(keep)
    cs = Case(env, case, seed, work)
    t0 = time.time()
    try:
        if run_app(cs):
            oracle(cs)
    except Exception as ex:  # a harness bug is a failure, named
        cs.check("harness:exception", False, f"{type(ex).__name__}: {ex}")
    finally:
        cs.kill_groups()
    dt = time.time() - t0
    fails, xfails, lines = [], [], []
    for name, ok, detail in cs.results:
        if ok:
            continue
        item = env.known.item(name, case)
        if item:
            xfails.append((name, item))
            lines.append(f"  XFAIL {name} [known defect {item}]: {detail}")
        else:
            fails.append(name)
            lines.append(f"  FAIL  {name}: {detail}")
    if os.environ.get("TRUTH_VERBOSE"):
        lines += [f"  ok    {n}: {d}" for n, ok, d in cs.results if ok]
    for ln in cs.log:
        lines.append(f"  note  {ln}")
    status = "FAIL" if fails else ("XFAIL" if xfails else "ok")
    head = (f"{status:5} seed {seed} ({len(cs.results)} checks, {dt:.1f} s) "
            f"{spec_kv(case, only_changed=True) or 'defaults'}")
    if fails or not quiet:
        lines = [head, f"  rerun: {rerun_cmd(env, seed, case)}"] + lines
    else:
        lines = [head] + lines
    if fails and not keep:
        lines.append(f"  work kept in {work}")
    elif not keep:
        shutil.rmtree(work, ignore_errors=True)
    return fails, xfails, len(cs.results), lines


def shrink(env, seed, case, fails, known_too=False):
    """Drop one dimension at a time to its default while a failure that is
    not known (known_too: any failure) stays; returns the smallest case
    found and its failures."""
    cur, cur_fails = dict(case), fails
    changed = True
    while changed:
        changed = False
        for d in DIM_NAMES:
            if cur[d] == DEFAULTS[d]:
                continue
            trial = normalize(dict(cur, **{d: DEFAULTS[d]}))
            if trial == cur:
                continue
            f, xf, _, _ = run_one(env, seed, trial, quiet=True)
            if known_too:
                f = f + [n for n, _ in xf]
            if set(f) & set(cur_fails):
                cur, cur_fails = trial, f
                changed = True
    return cur, cur_fails


def save_regress(env, seed, case, fails):
    d = os.path.join(env.src, "tests", "truth", "regress")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"{seed}.case")
    with open(path, "w") as f:
        f.write(f"# found by the truth matrix; failed: {' '.join(sorted(set(fails)))}\n")
        f.write(f"seed {seed}\nspec {spec_kv(case)}\n")
    return path


def main(argv):
    build = os.environ.get("top_builddir", "build")
    src = os.environ.get("top_srcdir", os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))
    while argv and argv[0].startswith("--"):
        if argv[0] == "--build":
            build = argv[1]
        elif argv[0] == "--src":
            src = argv[1]
        else:
            break
        argv = argv[2:]
    env = EnvPaths(os.path.abspath(build), os.path.abspath(src))
    import atexit
    atexit.register(kill_live_groups)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_stop_signal)
    if env.missing:
        print("truth.py: not built: " + " ".join(env.missing) + ": skipped")
        return 77
    if not argv:
        print(__doc__)
        return 2
    cmd, args = argv[0], argv[1:]
    if cmd == "one":
        seed = int(args[0])
        case = draw(seed)
        keep = None
        i = 1
        while i < len(args):
            if args[i] == "--spec":
                case = normalize(parse_spec_kv(args[i + 1], case))
            elif args[i] == "--keep":
                keep = os.path.abspath(args[i + 1])
            i += 2
        fails, xf, n, lines = run_one(env, seed, case, keep=keep)
        print("\n".join(lines))
        return 1 if fails else 0
    if cmd == "shrink":
        # shrink one case on any of its failures, known ones included, and
        # save it as a regression case (a known defect's case then guards
        # its fix)
        seed = int(args[0])
        case = draw(seed)
        if len(args) > 2 and args[1] == "--spec":
            case = normalize(parse_spec_kv(args[2], case))
        fails, xf, n, lines = run_one(env, seed, case, quiet=True)
        allf = fails + [n for n, _ in xf]
        if not allf:
            print(f"seed {seed}: no failure to shrink")
            return 0
        small, sf = shrink(env, seed, case, allf, known_too=True)
        print(f"shrunk seed {seed}: {spec_kv(small, only_changed=True) or 'defaults'} "
              f"still fails {' '.join(sorted(set(sf)))}")
        print(f"  saved {save_regress(env, seed, small, sf)}")
        return 0
    if cmd == "regress":
        bad = 0
        for path in args:
            seed, spec = None, None
            for line in open(path):
                if line.startswith("seed "):
                    seed = int(line.split()[1])
                elif line.startswith("spec "):
                    spec = line.split(None, 1)[1].strip()
            case = normalize(parse_spec_kv(spec))
            fails, xf, n, lines = run_one(env, seed, case)
            print(f"{os.path.basename(path)}: " + "\n".join(lines))
            bad += bool(fails)
        return 1 if bad else 0
    if cmd == "matrix":
        cases, seed0, jobs, save = 200, 1, 2, False
        i = 0
        while i < len(args):
            if args[i] == "--cases":
                cases = int(args[i + 1])
            elif args[i] == "--seed":
                seed0 = int(args[i + 1])
            elif args[i] == "--jobs":
                jobs = int(args[i + 1])
            elif args[i] == "--save-regress":
                save = True
                i -= 1
            elif args[i] == "--no-shrink":
                shrink_ok[0] = False
                i -= 1
            elif args[i] == "--spec":
                force_spec[0] = args[i + 1]
            i += 2
        return matrix(env, cases, seed0, jobs, save)
    print(__doc__)
    return 2


shrink_ok = [True]
force_spec = [None]   # matrix --spec K=V;...: those dimensions on every case


def draw_forced(seed):
    case = draw(seed)
    return normalize(parse_spec_kv(force_spec[0], case)) if force_spec[0] else case


def matrix(env, cases, seed0, jobs, save):
    """Cases in `jobs` worker processes (each case is self-contained: its
    own store, truth and work directory, so parallel cases cannot change one
    another's outcome; none has a timed assertion)."""
    import concurrent.futures as cf
    t0 = time.time()
    seeds = [seed0 * 1000003 + i for i in range(cases)]
    total = {"ok": 0, "XFAIL": 0, "FAIL": 0}
    by_dim, by_item, failed = {}, {}, []
    nchecks = 0
    print(f"truth matrix: {cases} cases from seed {seed0}, {jobs} at a time")
    with cf.ThreadPoolExecutor(max_workers=jobs) as ex:
        futs = {ex.submit(run_one, env, s, draw_forced(s), None, True): s for s in seeds}
        for fut in cf.as_completed(futs):
            s = futs[fut]
            fails, xf, n, lines = fut.result()
            nchecks += n
            print("\n".join(lines), flush=True)
            for _, item in xf:
                by_item[item] = by_item.get(item, 0) + 1
            if fails:
                total["FAIL"] += 1
                failed.append((s, fails))
            elif xf:
                total["XFAIL"] += 1
            else:
                total["ok"] += 1
    for s, fails in sorted(failed):
        if not shrink_ok[0]:
            print(f"failed seed {s}: {' '.join(sorted(set(fails)))}")
            continue
        case = draw_forced(s)
        small, sf = shrink(env, s, case, fails)
        dims = [d for d in DIM_NAMES if small[d] != DEFAULTS[d]] or ["(defaults)"]
        for d in dims:
            by_dim[d] = by_dim.get(d, 0) + 1
        print(f"shrunk seed {s}: {spec_kv(small, only_changed=True) or 'defaults'} "
              f"still fails {' '.join(sorted(set(sf)))}")
        print(f"  rerun: {rerun_cmd(env, s, small)}")
        if save:
            print(f"  saved {save_regress(env, s, small, sf)}")
    dt = time.time() - t0
    print(f"truth matrix: {cases} cases, {nchecks} checks in {dt:.0f} s: {total['ok']} ok, "
          f"{total['XFAIL']} with known defects only, {total['FAIL']} failed")
    if by_item:
        print("known defects seen (XFAIL): " +
              ", ".join(f"{k} x{v}" for k, v in sorted(by_item.items())))
    if by_dim:
        print("failures by dimension (after shrinking): " +
              ", ".join(f"{k} x{v}" for k, v in sorted(by_dim.items())))
    return 1 if total["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
