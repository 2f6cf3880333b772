#!/bin/sh
# sim_nvtx.sh - NVTX ranges end to end over the simulated CUPTI: simdrive
# makes real NVTX calls through the toolkit's nvtx3 loader, which loads the
# agent from NVTX_INJECTION64_PATH (InitializeInjectionNvtx2); the agent
# hands the table to the simulator's cuptiNvtxInitialize2 at the attach;
# the simulator's handlers make MARKER records and an NVTX truth file.
# Checked: the stored ranges equal the truth exactly (names, domains,
# counts, threads, start/end, durations, nesting depth), ranges left open
# at the exit and at kill -9, unbalanced pops (counted, and in a note),
# `cuptop ranges --json` percentiles against a reference computed here,
# hostile names safe in the text and JSON outputs, the best-effort
# NVTX_INJECTION64_PATH of an agent loaded by hand, and the "marker on but
# nothing routed" note, the ranges pushed while another thread hands the
# NVTX table to CUPTI.  Exits 77 without the simulator.
SIM_LIB_NAME=nvtx
. "${top_srcdir:?}/tests/agent/sim_lib.sh"
export CUPTOP_KINDS=kernel,runtime,marker
# hostile names: a quote and backslash, a newline, an escape sequence, invalid UTF-8
HOSTILE=7122275c0a6e6c1b5b326a78ff
SEQ=ctx,push:outer,push:inner,pop,pop,cpush:coloured:ff00ff00:42,pop,dpush:io:load,dpop:io,pop,nvtx:3:5,rstart:async,rend,nmark:here,xpush:$HOSTILE,pop,push:leftopen

run() { # NAME EXIT ROUTE SEQ
    d=$tmp/$1
    mkdir -p "$d"
    env CUPTOP_STORE="$d/store" CUPTOPSIM_NVTX_TRUTH="$d/nvtx" ${3:+NVTX_INJECTION64_PATH=$agent} \
        timeout 120 "$drive" "$sim" "$agent" "$d/truth" "seq:$4" "$2" >"$d/out" 2>"$d/err"
    id=$("$ctl" sessions "$d/store" | head -1)
    "$b/cuptop" ranges --store "$d/store" --json --slowest 1000 "$id" >"$d/ranges.json" 2>"$d/ranges.err" ||
        { echo "FAIL $1: cuptop ranges failed"; cat "$d/ranges.err"; fail=1; }
    "$b/cuptop" ranges --store "$d/store" "$id" >"$d/ranges.txt" 2>&1
    "$b/cuptop" sessions --store "$d/store" --json >"$d/sessions.json"
}

compare() { # NAME WANT_OPEN WANT_UNBALANCED
    if python3 - "$tmp/$1/nvtx" "$tmp/$1/ranges.json" "$2" "$3" >"$tmp/$1/cmp" 2>&1 <<'PY'
import json, sys, math
truth, got = sys.argv[1], json.load(open(sys.argv[2]))
want_open, want_unbal = int(sys.argv[3]), int(sys.argv[4])
starts, ends, marks, order, datas = {}, {}, {}, [], {}
for line in open(truth):
    if line.startswith(("apush ", "apop ")):   # the application's side
        continue
    if line.startswith("data "):
        _, i, color, payload, cat, _ = line.split()
        datas[int(i)] = (int(color), int(payload))
        continue
    what, i, tid, ts, dom, name = line.split()
    i, tid, ts = int(i), int(tid), int(ts)
    dom = "" if dom == "-" else dom
    name = b"" if name == "-" else bytes.fromhex(name)
    if what == "start": starts[i] = (tid, ts, dom, name); order.append(i)
    elif what == "mark": marks[i] = (tid, ts, dom, name)
    else: ends[i] = ts
# nesting depth: open ranges on the thread (every domain) at the start
depth, stack = {}, {}
events = sorted([(starts[i][1], 0, i) for i in starts] + [(ends[i], 1, i) for i in ends if i in starts])
for ts, kind, i in events:
    tid = starts[i][0]
    st = stack.setdefault(tid, [])
    if kind == 0: depth[i] = len(st); st.append(i)
    elif i in st: st.remove(i)
unbal = sum(1 for i in ends if i not in starts)
# the JSON writer shows an invalid byte as U+FFFD, as "replace" decodes it
def key(n, d): return (n.decode("utf-8", "replace"), d)
exp = {}
for i, (tid, ts, dom, name) in starts.items():
    e = exp.setdefault(key(name, dom), {"closed": {}, "open": 0, "points": 0})
    if i in ends: e["closed"][i] = (tid, ts, ends[i], ends[i] - ts, depth[i])
    else: e["open"] += 1
for i, (tid, ts, dom, name) in marks.items():
    exp.setdefault(key(name, dom), {"closed": {}, "open": 0, "points": 0})["points"] += 1
bad = 0
def fail(msg):
    global bad; bad = 1; print("FAIL", msg)
def nearest(v, q):
    return v[max(0, math.ceil(q * len(v)) - 1)] if v else 0
names = {(n["name"], n["domain"]): n for n in got["names"]}
for k, e in exp.items():
    g = names.get(k)
    if g is None: fail("range %r@%r not stored" % k); continue
    closed = e["closed"]
    if g["count"] != len(closed): fail("%r: count %d, want %d" % (k, g["count"], len(closed)))
    if g["open"] != e["open"]: fail("%r: open %d, want %d" % (k, g["open"], e["open"]))
    if g["points"] != e["points"]: fail("%r: points %d, want %d" % (k, g["points"], e["points"]))
    durs = sorted(v[3] for v in closed.values())
    for q, f in ((0.5, "p50_ns"), (0.9, "p90_ns"), (0.99, "p99_ns"), (1.0, "max_ns")):
        if g[f] != nearest(durs, q): fail("%r: %s %d, want %d" % (k, f, g[f], nearest(durs, q)))
    if g["total_ns"] != sum(durs): fail("%r: total %d, want %d" % (k, g["total_ns"], sum(durs)))
    if len(g["slowest"]) != len(closed): fail("%r: %d instances listed" % (k, len(g["slowest"])))
    prev = None
    for s in g["slowest"]:
        w = closed.get(s["id"])
        if w is None: fail("%r: instance %d not in the truth" % (k, s["id"])); continue
        got_i = (s["tid"], s["start_ns"], s["end_ns"], s["duration_ns"], s["depth"])
        if got_i != w: fail("%r id %d: %r, want %r" % (k, s["id"], got_i, w))
        wd = datas.get(s["id"])
        gd = (s["color"], s["payload"]) if "color" in s else None
        if wd != gd: fail("%r id %d: colour/payload %r, want %r" % (k, s["id"], gd, wd))
        if prev is not None and s["duration_ns"] > prev: fail("%r: slowest not sorted" % (k,))
        prev = s["duration_ns"]
if len(names) != len(exp): fail("%d names stored, want %d" % (len(names), len(exp)))
if got["open"] != want_open or sum(e["open"] for e in exp.values()) != want_open:
    fail("open %d (truth %d), want %d" % (got["open"], sum(e["open"] for e in exp.values()), want_open))
if got["unbalanced"] != unbal or unbal != want_unbal:
    fail("unbalanced %d (truth %d), want %d" % (got["unbalanced"], unbal, want_unbal))
print("ranges %d names, %d closed, %d with colour/payload" % (len(exp), sum(len(e["closed"]) for e in exp.values()), len(datas)))
sys.exit(bad)
PY
    then echo "ok   $1: stored ranges equal the NVTX truth ($(tail -1 "$tmp/$1/cmp"))"
    else echo "FAIL $1:"; cat "$tmp/$1/cmp"; fail=1; fi
}

# 1. routed by NVTX_INJECTION64_PATH, exit by return: one range left open
#    (leftopen), one unbalanced pop (the pop after "inner"/"outer" pairs)
run return return 1 "$SEQ"
compare return 1 1
check "return: step count" "$(python3 -c 'import json,sys; print([n["count"] for n in json.load(open(sys.argv[1]))["names"] if n["name"]=="step"][0])' "$tmp/return/ranges.json")" 15
grep -q 'NVTX range end(s) (pop or end) matched no open range' "$tmp/return/sessions.json" &&
    echo "ok   return: the unbalanced pop is in a note" ||
    { echo "FAIL return: no note about the unbalanced pop"; fail=1; }
# hostile names: no raw escape, no raw control byte in the text output
if LC_ALL=C grep -q "$(printf '\033')" "$tmp/return/ranges.txt" ||
    [ "$(grep -c 'leftopen' "$tmp/return/ranges.txt")" != 1 ]; then
    echo "FAIL return: a hostile name reached the text output raw"; fail=1
else
    echo "ok   return: hostile names escaped in the text output"
fi
# the name as the text output shows it: each byte escaped, reversibly
printf '%s\n' 'q"'"'"'\\\nnl\x1b[2jx\xff' >"$tmp/hostile.want"
grep -qF -f "$tmp/hostile.want" "$tmp/return/ranges.txt" &&
    echo "ok   return: the hostile name is shown escaped, reversibly" ||
    { echo "FAIL return: the hostile name is not shown as expected"; grep '^q' "$tmp/return/ranges.txt"; fail=1; }

# export --range step --slowest: exactly that instance's window, the range
# in the metadata, the NVTX ranges drawn as nested slices (category nvtx)
d=$tmp/return
"$b/cuptop" export --store "$d/store" "$id" --range step --slowest --format chrome -o "$d/slow.json" \
    2>"$d/export.err" || { echo "FAIL export --range step --slowest"; cat "$d/export.err"; fail=1; }
if python3 - "$d/ranges.json" "$d/slow.json" >"$d/slow.check" 2>&1 <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); t = json.load(open(sys.argv[2]))
step = [n for n in r["names"] if n["name"] == "step"][0]["slowest"][0]
od = t["otherData"]
assert od["window"] == {"from_ns": step["start_ns"], "to_ns": step["end_ns"]}, (od["window"], step)
assert od["range"]["name"] == "step" and od["range"]["id"] == step["id"], od["range"]
nv = [e for e in t["traceEvents"] if e.get("cat") == "nvtx"]
# the slowest step whole; steps of other threads overlapping it, clipped to it
steps = [e for e in nv if e["name"] == "step" and e["args"]["id"] == step["id"]]
assert len(steps) == 1, steps
s0 = steps[0]
assert abs(s0["dur"] - step["duration_ns"] / 1000) < 0.002, (s0, step)
for e in nv:
    assert e["ts"] >= s0["ts"] - 0.002 and e["ts"] + e.get("dur", 0) <= s0["ts"] + s0["dur"] + 0.002, e
inner = [e for e in nv if e["tid"] == s0["tid"] and e["name"] in ("forward", "backward")]
assert len(inner) == 2, inner
for e in inner:   # nested: inside the step, one level deeper
    assert e["ts"] >= s0["ts"] and e["ts"] + e["dur"] <= s0["ts"] + s0["dur"] + 0.002, (e, s0)
    assert e["args"]["depth"] == s0["args"]["depth"] + 1
# each range once: its MARKER records are not drawn again as zero-length
# "marker" slices (issue 27), they are counted as drawn as ranges
mk = [e for e in t["traceEvents"] if e.get("cat") == "marker"]
assert not mk, mk[:3]
ex = [e for e in t["traceEvents"] if e.get("cat") == "export"][0]["args"]
assert ex.get("nvtx_markers_as_ranges", 0) >= 2, ex
print("window", od["window"], "nvtx slices", len(nv))
PY
then echo "ok   export --range step --slowest: exactly its window, ranges nested ($(cat "$d/slow.check"))"
else echo "FAIL export --range step --slowest:"; cat "$d/slow.check"; fail=1; fi
"$b/cuptop" export --store "$d/store" "$id" --range step --all --format jsonl -o "$d/steps/" 2>"$d/all.err"
check "export --range step --all: one file per instance" "$(ls "$d/steps" | grep -c '^step-[0-9]*\.jsonl$')" 15
check "export --range step --nth 3: the third in time" \
    "$(head -1 "$d/steps/step-3.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["range"]["nth"])')" 3
hostile=$(printf '\161\042\047\134\012nl\033[2jx\377')
"$b/cuptop" export --store "$d/store" "$id" --range "$hostile" --all --format chrome -o "$d/hostile/" 2>"$d/h.err"
check "export of a hostile range name: a safe file name, chrome as .json" "$(ls "$d/hostile")" "q____nl__2jx_-1.json"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$d/hostile/q____nl__2jx_-1.json" &&
    echo "ok   export of a hostile range name: valid JSON" || { echo "FAIL hostile export JSON"; fail=1; }
"$b/cuptop" export --store "$d/store" "$id" --range nosuch --slowest --format chrome -o "$d/x.json" 2>"$d/e3"
check "export --range of an unknown name exits" "$?" 2
"$b/cuptop" export --store "$d/store" "$id" --range step --format chrome -o "$d/x.json" 2>"$d/e4"
check "export --range without an instance choice exits" "$?" 2

# 2. kill -9 with two ranges open: stored as open, the store consistent
run kill kill 1 "ctx,push:outer,push:inner,pop,nvtx:2:3,push:open1,push:open2,sleep:1500"
compare kill 3 0

# 3. the agent loaded by hand (CUDA_INJECTION64_PATH only): it sets
#    NVTX_INJECTION64_PATH when it loads, so NVTX calls made later are routed
run byhand return "" "ctx,push:late,pop,nvtx:1:2"
compare byhand 0 0

# the README's simdrive example (NVTX without a GPU) runs as printed and
# gives the ranges it says
cmd=$(sed -n '/^CUPTOP_STORE=\/tmp\/nvtx-store/,/ return$/p' "$s/README.md" |
      sed -e 's|\\$||' -e "s|/tmp/nvtx-|$tmp/readme-|g" -e "s|\$PWD/build|$b|g" -e "s| build/| $b/|g" |
      tr '\n' ' ')
if [ -n "$cmd" ] && sh -c "$cmd" >"$tmp/readme.out" 2>&1; then
    "$b/cuptop" ranges --store "$tmp/readme-store" "$(ls "$tmp/readme-store")" >"$tmp/readme.ranges" 2>&1
    check "README's simdrive example: step x2, forward and backward" \
        "$(awk '$1 == "step" || $1 == "forward" || $1 == "backward" {print $1 "=" $3}' "$tmp/readme.ranges" | sort | tr '\n' ' ')" \
        "backward=1 forward=1 step=2 "
else
    echo "FAIL README's simdrive example did not run: $cmd"; cat "$tmp/readme.out"; fail=1
fi

# cuptop demo --scenario nvtx: the simulated application's own NVTX loop
# (cuptop-simapp --nvtx 100): steps holding forward and backward, all closed
"$b/cuptop" demo --headless --seconds 1 --scenario nvtx --store "$tmp/demo-nvtx" >"$tmp/demo-nvtx.out" 2>&1
check "demo --scenario nvtx: COMPLETE" "$?" 0
"$b/cuptop" ranges --store "$tmp/demo-nvtx" "$(ls "$tmp/demo-nvtx")" >"$tmp/demo-nvtx.ranges" 2>&1
set -- $(awk '$1 == "step" || $1 == "forward" || $1 == "backward" {print $1 "=" $3 "/" $4}' \
         "$tmp/demo-nvtx.ranges" | sort)
steps=${3#step=}
check "demo --scenario nvtx: forward and backward in every step, none open" \
    "$1 $2" "backward=$steps forward=$steps"
[ "${steps%/*}" -ge 3 ] 2>/dev/null && [ "${steps#*/}" = 0 ] ||
    { echo "FAIL demo --scenario nvtx: steps $steps (want 3 or more, none open)"; cat "$tmp/demo-nvtx.ranges"; fail=1; }

# 4. marker on, NVTX never called: the note says what to set
run silent return "" "ctx,sleep:100"
grep -q 'marker kind on, but no NVTX call reached CUPTI: set NVTX_INJECTION64_PATH' "$tmp/silent/sessions.json" &&
    echo "ok   silent: the 'nothing routed' note is in the session" ||
    { echo "FAIL silent: no note about NVTX routing"; fail=1; }

# 5. capture range nvtx:step (CUPTOP_CAPTURE_RANGE): dormant (no CUPTI
#    call) until the first "step" is pushed, then exactly the work inside
#    it is stored; the range itself and the ranges nested in it are stored,
#    "other" (outside) is not.  End modes stop and repeat.
CAP=ctx,emit:500,push:other,pop,mark:before,push:step,emit:1000,push:inner,pop,pop,sleep:700,emit:300,push:step,emit:200,pop,emit:100
capture() { # NAME END WANT_KERNELS WANT_STEPS
    CUPTOP_CAPTURE_RANGE=nvtx:step CUPTOP_CAPTURE_RANGE_END=$2 CUPTOP_KINDS=kernel,memcpy,marker \
        run "$1" return 1 "$CAP"
    d=$tmp/$1
    "$ctl" dump "$d/store" >"$d/dump"
    if python3 "$s/tests/agent/check_truth.py" "$d/dump" "$d/truth" --exit return >"$d/check"
    then echo "ok   $1: every record accounted for against the truth"
    else echo "FAIL $1 accounting:"; grep FAIL "$d/check"; fail=1; fi
    check "$1: kernel records on device 0" "$(val "$d/dump" records.kernel.0)" "$3"
    counts=$(python3 -c 'import json,sys; n={x["name"]:x["count"] for x in json.load(open(sys.argv[1]))["names"]}; print(n.get("step",0), n.get("inner",0), n.get("other",0))' "$d/ranges.json")
    check "$1: ranges step, inner, other stored" "$counts" "$4 1 0"
    first=$(val "$d/truth" call.cuptiActivityRegisterCallbacks | cut -d' ' -f2)
    check "$1: no CUPTI activity call before the range" \
        "$([ "${first:-0}" -gt "$(cat "$d/before")" ] && echo yes)" yes
    check "$1: libcupti not loaded before it (no cuptiGetVersion before)" \
        "$(f=$(val "$d/truth" call.cuptiGetVersion | cut -d' ' -f2); [ "${f:-0}" -gt "$(cat "$d/before")" ] && echo yes)" yes
}
capture cap_stop stop 1000 1
capture cap_repeat repeat 1200 2
# the report names the range, and the capture epoch (shorter than a
# second) keeps its own time, rate and pool (issue 27 item 11)
d=$tmp/cap_stop
"$b/cuptop" report --store "$d/store" "$("$ctl" sessions "$d/store" | head -1)" >"$d/report" 2>&1
check "cap_stop: the report names the NVTX capture range" \
    "$(grep -c 'in scope: a capture range (nvtx:step)' "$d/report")" 1
sed -n '/^Epochs/,/^$/p' "$d/report"
check "cap_stop: the capture epoch has its time, rate and pool" \
    "$(awk '/^Epochs/ {e = 1} e && $1 ~ /^[0-9]+$/ && $0 !~ /none/ && $3 > 0 && $4 > 0 && $6 > 0 {n++} END {print n + 0}' "$d/report")" 1

# the stored ranges as sorted (name, domain, count), those named $2 only when given
range_set() { # RANGES_JSON [NAME]
    python3 -c 'import json,sys; print(sorted((n["name"],n["domain"],n["count"]) for n in json.load(open(sys.argv[1]))["names"] if len(sys.argv) < 3 or n["name"]==sys.argv[2]))' "$@"
}

# 6. capture nvtx:step@io: only a "step" pushed in domain io opens the range
#    (not one in the default domain, not one in domain other); nvtx:step@
#    means the default domain only.  The domains are created while dormant.
DCAP=ctx,emit:300,push:step,emit:100,pop,dpush:other:step,emit:200,dpop:other,mark:before,dpush:io:step,emit:1000,dpop:io,emit:50
dcapture() { # NAME SPEC SEQ WANT_KERNELS
    CUPTOP_CAPTURE_RANGE=nvtx:$2 CUPTOP_KINDS=kernel,marker run "$1" return 1 "$3"
    d=$tmp/$1
    "$ctl" dump "$d/store" >"$d/dump"
    python3 "$s/tests/agent/check_truth.py" "$d/dump" "$d/truth" --exit return >"$d/check" ||
        { echo "FAIL $1 accounting:"; grep FAIL "$d/check"; fail=1; }
    check "$1: kernel records (only inside the range)" "$(val "$d/dump" records.kernel.0)" "$4"
}
dcapture cap_domain step@io "$DCAP" 1000
check "cap_domain: the stored step is the one in domain io" \
    "$(range_set "$tmp/cap_domain/ranges.json" step)" "[('step', 'io', 1)]"
dcapture cap_default step@ ctx,emit:300,dpush:io:step,emit:200,dpop:io,mark:before,push:step,emit:700,pop,emit:50 700
for bad in "nvtx:@io" "nvtx:"; do
    "$b/cuptop" run --store "$tmp/bad" --capture-range "$bad" -- true >/dev/null 2>"$tmp/bad.err"
    check "run --capture-range $bad exits" "$?" 2
done

# a dormant start: SEQ runs to its mark "ready", a request turns kernel,
# runtime and marker on, then the rest; the ranges in $tmp/NAME/ranges.json
dormant() { # NAME SEQ [ENV...]
    d=$tmp/$1 seq=$2
    shift 2
    mkdir -p "$d"
    env CUPTOP_STORE="$d/store" CUPTOPSIM_NVTX_TRUTH="$d/nvtx" NVTX_INJECTION64_PATH="$agent" \
        CUPTOP_DORMANT=1 "$@" timeout 120 "$drive" "$sim" "$agent" "$d/truth" "seq:$seq" \
        return >"$d/out" 2>"$d/err" &
    pid=$!
    id=$("$ctl" wait-session "$d/store" 1 30)
    i=0; while [ ! -e "$d/ready" ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i + 1)); done
    g=$("$ctl" control "$d/store" "$id" kernel,runtime,marker)
    "$ctl" wait-ack "$d/store" "$id" "$g" 60 >/dev/null || { echo "FAIL $1: not acknowledged"; fail=1; }
    touch "$d/go"
    wait "$pid" || { echo "FAIL $1: the application exited with $?"; cat "$d/err"; fail=1; }
    pid=
    "$b/cuptop" ranges --store "$d/store" --json "$id" >"$d/ranges.json" 2>"$d/ranges.err"
}

# 7. domains and registered strings made while the agent is dormant (no
#    CUPTI yet) keep their names: the agent hands out its own handles and
#    gives CUPTI the ones CUPTI makes for those names at the attach (the
#    NVTX no-op would have made them NULL: the default domain, no name)
dormant late ctx,dcreate:io,reg:io:load,reg:-:tick,wreg:wio:wload,push:dormant,pop,mark:ready,wait:go,dpush:io:step,dpop:io,rpush:io:load,dpop:io,rpush:-:tick,pop,wrpush:wio:wload,wdpop:wio,push:after,pop
check "late: ranges made after a dormant start keep their domain and registered name" \
    "$(range_set "$tmp/late/ranges.json")" \
    "[('after', '', 1), ('load', 'io', 1), ('step', 'io', 1), ('tick', '', 1), ('wload', 'wio', 1)]"

# 8. handles cross libraries: a second NVTX instance (nvtx_other.so, its
#    own NVTX state) made its first call and a domain while dormant;
#    simdrive's own first NVTX call comes after the attach.  Each pushes in
#    a domain the other made: the ranges carry the right domain, and CUPTI
#    (the simulator logs "badhandle" for a handle it never made) is never
#    given one of the agent's handles
dormant cross ctx,oinit,ocreate:bdom,mark:ready,wait:go,dcreate:adom,odpush:adom:cross1,odpop:adom,xodpush:bdom:cross2,xodpop:bdom \
    CUPTOPSIM_NVTX_OTHER="$b/nvtx_other.so"
check "cross: ranges pushed in a domain another library made" \
    "$(range_set "$tmp/cross/ranges.json")" "[('cross1', 'adom', 1), ('cross2', 'bdom', 1)]"
check "cross: CUPTI never given a handle it did not make" "$(grep -c '^badhandle' "$tmp/cross/nvtx")" 0

# 9. ranges CUPTI never saw open (issue 27 item 3): pushed before CUDA is
#    initialised (SIMDRIVE_LATE_INIT: the agent's InitializeInjection only
#    at the step "init"; the NVTX loader loads the agent at the first push,
#    before it), or while dormant, and popped once CUPTI is attached.  The
#    agent saw the push: it makes the range (flag "agent"), CUPTI gets
#    neither the push nor the pop (no unbalanced END); one still open at
#    the end is counted and named in a note.  Before: "pre_init" vanished.
d=$tmp/preinit
mkdir -p "$d"
env CUPTOP_STORE="$d/store" CUPTOPSIM_NVTX_TRUTH="$d/nvtx" NVTX_INJECTION64_PATH="$agent" \
    SIMDRIVE_LATE_INIT=1 timeout 120 "$drive" "$sim" "$agent" "$d/truth" \
    "seq:push:pre_open,push:pre_init,push:pre_inner,init,ctx,emit:100,pop,pop,push:post,pop,push:post,pop,push:post,pop" \
    return >"$d/out" 2>"$d/err"
id=$("$ctl" sessions "$d/store" | head -1)
"$b/cuptop" ranges --store "$d/store" --json --slowest 10 "$id" >"$d/ranges.json" 2>"$d/ranges.err"
closed_set() { # RANGES_JSON: the names of closed ranges
    python3 -c 'import json,sys; print(sorted((n["name"],n["domain"],n["count"]) for n in json.load(open(sys.argv[1]))["names"] if n["count"]))' "$1"
}
check "preinit: ranges pushed before CUDA are listed with those after" \
    "$(closed_set "$d/ranges.json")" "[('post', '', 3), ('pre_init', '', 1), ('pre_inner', '', 1)]"
check "preinit: no unbalanced end (CUPTI got neither the push nor the pop)" \
    "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["unbalanced"])' "$d/ranges.json")" 0
python3 - "$d/ranges.json" >"$d/cmp" 2>&1 <<'PY' && echo "ok   preinit: pre_init encloses pre_inner, under the open pre_open" || { echo "FAIL preinit: $(cat "$d/cmp")"; fail=1; }
import json, sys
r = json.load(open(sys.argv[1]))
by = {n["name"]: n["slowest"][0] for n in r["names"] if n["count"]}
o, i = by["pre_init"], by["pre_inner"]
assert o["start_ns"] <= i["start_ns"] <= i["end_ns"] <= o["end_ns"], (o, i)
assert o["depth"] == 1 and i["depth"] == 2, (o, i)
PY
"$ctl" dump "$d/store" "$id" >"$d/dump"
grep -q '^note.*1 NVTX range(s) pushed before CUPTI was attached .* still open at the end.*"pre_open"' "$d/dump" &&
    echo "ok   preinit: the range still open at the end is counted and named" ||
    { echo "FAIL preinit: no note names the open range: $(grep '^note' "$d/dump")"; fail=1; }

# the same while dormant: pushed before the attach, popped after it
dormant dormant_open ctx,push:before_attach,mark:ready,wait:go,emit:10,pop,push:after,pop
check "dormant_open: a range open across the attach is listed" \
    "$(closed_set "$tmp/dormant_open/ranges.json")" "[('after', '', 1), ('before_attach', '', 1)]"

# 10. the hand-over window (truth matrix 29.11): the first thread's first
#    NVTX call hands the table to CUPTI, slowly (nvtx_init_slow=60); the
#    second thread (10 ms later, simdrive nvtx:2:1) pushes and pops
#    forward, load and backward inside that window and pops its step 100
#    ms later: CUPTI sees none of its pushes, the agent makes all four
#    ranges (before: the three closed inside the window were lost, and the
#    simulator's truth, which listed only what CUPTI saw, agreed).  The
#    application's own truth lines (apush/apop) give the counts.
d=$tmp/handover
mkdir -p "$d"
env CUPTOP_STORE="$d/store" CUPTOPSIM_NVTX_TRUTH="$d/nvtx" NVTX_INJECTION64_PATH="$agent" \
    CUPTOPSIM_FAULTS=nvtx_init_slow=60 timeout 120 "$drive" "$sim" "$agent" "$d/truth" \
    "seq:ctx,nvtx:2:1" return >"$d/out" 2>"$d/err"
id=$("$ctl" sessions "$d/store" | head -1)
"$b/cuptop" ranges --store "$d/store" --json "$id" >"$d/ranges.json" 2>"$d/ranges.err"
check "handover: every range the application pushed is stored" \
    "$(closed_set "$d/ranges.json")" "[('backward', '', 2), ('forward', '', 2), ('load', 'io', 2), ('step', '', 2)]"
check "handover: the application's truth pushed 8 ranges, all while markers were on" \
    "$(awk '$1 == "apush" && $5 == 1 {n++} END {print n + 0}' "$d/nvtx")" 8
check "handover: CUPTI saw the first thread's 4 pushes only (the window was hit)" \
    "$(grep -c '^start ' "$d/nvtx")" 4
check "handover: no unbalanced end" \
    "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["unbalanced"])' "$d/ranges.json")" 0

# usage errors: exit 2, one line
"$b/cuptop" ranges --store "$tmp/return/store" >/dev/null 2>"$tmp/e1"; rc=$?
check "ranges without a session exits" "$rc" 2
"$b/cuptop" ranges --store "$tmp/return/store" --slowest x "$id" >/dev/null 2>"$tmp/e2"; rc=$?
check "ranges --slowest x exits" "$rc" 2
check "ranges --slowest x says it in one line" "$(wc -l <"$tmp/e2" | tr -d ' ')" 1
exit $fail
