#!/bin/bash
# bench/gpu/ledger_agent.sh BUILD_DIR [REPS] - the launch ledger on real
# CUPTI (issue 31): its cost in the agent and its exactness.
#
# Cost: a launch storm (300k empty kernels over 4 streams) and PyTorch eager
# (50k x.add_) and CUDA-graph (500 replays of 100 ops) loops, each run with
# no agent, the agent's defaults, and the defaults plus --ledger
# (CUPTOP_LEDGER=1), interleaved REPS times (default 5). Table: median
# seconds and the ratios ledger / agent (the ledger's own cost) and
# agent / none.
#
# Exactness: bench/gpu/ledger_streams.cu counts what it launches per stream
# (kernels, async copies, async sets, a synchronous copy now and then); run
# with an ample pool (nothing may be missing, COMPLETE, expected == launched)
# and with a starved one (CUPTOP_POOL=2, 64K buffers: CUPTI drops; per
# stream and kind, the ledger's missing == launched - stored, and
# unrecorded == 0 since CUPTI reported every drop).  Streams are mapped
# from the program's ids (cudaStreamGetId) to CUPTI's by rank; the
# synchronous copies are checked on the default stream; no orphans, no
# overrun of the ledger's window.  PyTorch with CUDA graphs (torch_bench.py
# graph GRAPH_N, default 5000 replays): a clean run (ample pool) gives each
# kind's record count; a starved run of the same workload (CUPTOP_POOL=2,
# 64K buffers) must expect the same per kind, and its missing must equal
# the clean count - its stored, exactly, with unrecorded 0.  The cost's
# graph loop runs GRAPH_N replays too (500 in session 12: 49 ms, too short
# to tell a cost from a first-launch effect).  Exit 1 if any check
# fails.  Writes ledger_agent.md in $OUT.
set -u
B=$(cd "${1:?usage: ledger_agent.sh BUILD_DIR [REPS]}" && pwd)
REPS=${2:-5}
GRAPH_N=${GRAPH_N:-5000}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
STORM=$OUT/launch_storm LS=$OUT/ledger_streams
nvcc -O2 -std=c++17 -o "$STORM" "$here/launch_storm.cu" || exit 2
nvcc -O2 -std=c++17 -o "$LS" "$here/ledger_streams.cu" || exit 2
md=$OUT/ledger_agent.md
raw=$OUT/ledger_cost.raw
: >"$raw"
fails=0

secs() {   # WORKLOAD: the loop's seconds from the workload's output line
    case $1 in
    storm) sed -n 's/.* seconds=\([0-9.]*\).*/\1/p' ;;
    *) sed -n 's/.*loop_s=\([0-9.]*\).*/\1/p' ;;
    esac
}
one() {    # MODE WORKLOAD: run once, print its seconds
    local mode=$1 w=$2 st=$OUT/st-$1-$2 env=()
    rm -rf "$st"
    case $mode in
    agent) env=(CUDA_INJECTION64_PATH=$B/libcuptop-agent.so CUPTOP_STORE=$st) ;;
    ledger) env=(CUDA_INJECTION64_PATH=$B/libcuptop-agent.so CUPTOP_STORE=$st CUPTOP_LEDGER=1) ;;
    esac
    case $w in
    storm) env "${env[@]}" "$STORM" -n 300000 -s 4 ;;
    eager) env "${env[@]}" python3 "$here/torch_bench.py" cuptop ops 50000 ;;
    graph) env "${env[@]}" python3 "$here/torch_bench.py" cuptop graph "$GRAPH_N" ;;
    esac 2>>"$OUT/cost.err" | secs "$w"
    if [ "$mode" = ledger ]; then   # the ledger must have missed nothing
        id=$("$B/cuptop" sessions --store "$st" 2>/dev/null | awk 'NR == 2 { print $1 }')
        "$B/agentctl" dump "$st" "$id" 2>/dev/null | sed -n 's/^meta\.ledger=//p' |
            tr ' ' '\n' | grep '\.missing=' | grep -v '=0$' | sed "s/^/$w rep missing: /" >>"$OUT/cost.bad"
        # a CUDA-graph loop under the default kinds (graph off): each launch
        # expects its nodes' records, counted at the instantiate
        [ "$w" = graph ] && "$B/agentctl" dump "$st" "$id" 2>/dev/null |
            sed -n 's/^meta\.ledger=//p' | tr ' ' '\n' |
            grep -E '^(graphs|graphs_unknowable|unknowable|graph_launches_unknown|overrun|(kernel|memcpy|memset)\.(expected|matched|missing|orphan|extra))=' |
            tr '\n' ' ' | sed 's/^/graph ledger: /; s/$/\n/' >>"$OUT/graph_ledger.txt"
    fi
    rm -rf "$st"
}
for rep in $(seq 1 "$REPS"); do
    for w in storm eager graph; do
        for mode in none agent ledger; do
            echo "$w $mode $(one $mode $w)" >>"$raw"
        done
    done
done

{
echo "## The launch ledger's cost (median of $REPS interleaved repetitions)"
echo
python3 - "$raw" <<'PY'
import sys, statistics
by = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 3:
        by.setdefault((f[0], f[1]), []).append(float(f[2]))
print("| workload | none s | agent s | agent + ledger s | ledger / agent | agent / none | all ledger / agent |")
print("|---|---|---|---|---|---|---|")
for w in ("storm", "eager", "graph"):
    m = {k: statistics.median(by.get((w, k), [float("nan")])) for k in ("none", "agent", "ledger")}
    pairs = [round(l / a, 3) for l, a in zip(by.get((w, "ledger"), []), by.get((w, "agent"), []))]
    print(f"| {w} | {m['none']:.3f} | {m['agent']:.3f} | {m['ledger']:.3f} | "
          f"{m['ledger'] / m['agent']:.3f} | {m['agent'] / m['none']:.3f} | {pairs} |")
PY
echo
if [ -s "$OUT/graph_ledger.txt" ]; then
    echo "The CUDA-graph loop's ledger (default kinds, graph off: node records expected):"
    sed 's/^/    /' "$OUT/graph_ledger.txt"
    if grep -Eq '(kernel|memcpy|memset)\.(orphan|extra)=[1-9]' "$OUT/graph_ledger.txt"; then
        echo "FAIL: graph node records the ledger did not expect"; fails=1
    fi
fi
if [ -s "$OUT/cost.bad" ]; then
    echo "FAIL: ledger runs with missing records:"; sed 's/^/    /' "$OUT/cost.bad"; fails=1
else
    echo "every ledger run: 0 missing"
fi
echo
echo "## Exactness: per stream and kind, launched by the program vs the ledger"
for case in ample starved; do
    st=$OUT/ex-$case
    rm -rf "$st"
    env=(CUDA_INJECTION64_PATH=$B/libcuptop-agent.so CUPTOP_STORE=$st CUPTOP_LEDGER=1)
    [ $case = starved ] && env+=(CUPTOP_POOL=2 CUPTOP_BUFFER_SIZE=64K)
    env "${env[@]}" "$LS" -n 50000 -s 4 -c 10 -m 25 -y 1000 >"$OUT/ex-$case.prog" 2>"$OUT/ex-$case.err"
    id=$("$B/cuptop" sessions --store "$st" | awk 'NR == 2 { print $1 }')
    "$B/agentctl" dump "$st" "$id" >"$OUT/ex-$case.dump"
    "$B/cuptop" export --store "$st" --format jsonl --from start --to end "$id" -o "$OUT/ex-$case.jsonl"
    "$B/cuptop" check --store "$st" "$id" >"$OUT/ex-$case.check" 2>&1
    echo
    echo "### $case pool ($(sed -n 's/^meta\.config=.*pool=\([^;]*\);.*/pool=\1/p' "$OUT/ex-$case.dump"))"
    echo
    python3 - "$case" "$OUT/ex-$case.prog" "$OUT/ex-$case.dump" "$OUT/ex-$case.jsonl" "$OUT/ex-$case.check" <<'PY' || fails=1
import json, sys
case, prog, dump, jsonl, check = sys.argv[1:]
launched, sync = {}, 0
for line in open(prog):
    f = dict(w.split("=") for w in line.split())
    if "stream" in f:
        for k in ("kernel", "memcpy", "memset"):
            launched[(int(f["stream"]), k)] = int(f[k])
    else:
        sync = int(f["sync_memcpy"])
d = dict(l.rstrip("\n").split("=", 1) for l in open(dump) if "=" in l)
ledger = dict(w.split("=", 1) for w in d["meta.ledger"].split())
missing = {}
for k, v in d.items():
    if k.startswith("meta.ledger.stream."):
        f = dict(w.split("=", 1) for w in v.split())
        for kind in ("kernel", "memcpy", "memset"):
            missing[(int(f["stream"]), kind)] = int(f.get(kind, 0))
stored = {}
for line in open(jsonl):
    r = json.loads(line)
    if r["kind"] in ("kernel", "memcpy", "memset"):
        key = (r["stream"], r["kind"])
        stored[key] = stored.get(key, 0) + 1
bad = 0
# The program names its streams by cudaStreamGetId, CUPTI by its own ids
# (14-17 against 13-16 on the H100 in session 12): map them by rank, the
# program's streams in id order against the CUPTI streams that carry kernel
# records (stored, or missing in the ledger), also in id order.  What is
# left over is the default stream of the synchronous copies.
prog_ids = sorted({s for s, _ in launched})
cupti_kernel = sorted({s for (s, k), v in list(stored.items()) + list(missing.items())
                       if k == "kernel" and v})
if len(cupti_kernel) != len(prog_ids):
    bad += 1
    print(f"MISMATCH: the program used {len(prog_ids)} streams {prog_ids}, CUPTI's kernel "
          f"records are on {len(cupti_kernel)} {cupti_kernel}")
cupti_of = dict(zip(prog_ids, cupti_kernel))
print(f"stream map (program id -> CUPTI id, by rank): {cupti_of}")
print()
print("| stream (program / CUPTI) | kind | launched | stored | launched - stored | ledger missing |")
print("|---|---|---|---|---|---|")
for (s, k), n in sorted(launched.items()):
    c = cupti_of.get(s, -1)
    got, miss = stored.get((c, k), 0), missing.get((c, k), 0)
    ok = n - got == miss
    bad += not ok
    print(f"| {s} / {c} | {k} | {n} | {got} | {n - got} | {miss}{'' if ok else ' MISMATCH'} |")
mapped = set(cupti_of.values())
other_st = {k: v for k, v in stored.items() if k[0] not in mapped and v}
other_miss = {k: v for k, v in missing.items() if k[0] not in mapped and v}
got = sum(v for (s, k), v in other_st.items() if k == "memcpy")
miss = sum(v for (s, k), v in other_miss.items() if k == "memcpy")
ok = sync - got == miss and not any(k != "memcpy" for (s, k) in list(other_st) + list(other_miss))
bad += not ok
print(f"| default ({sorted({s for s, _ in list(other_st) + list(other_miss)})}) | memcpy (synchronous) "
      f"| {sync} | {got} | {sync - got} | {miss}{'' if ok else ' MISMATCH'} |")
print()
for kind in ("kernel", "memcpy", "memset"):
    want = sum(v for (s, k), v in launched.items() if k == kind) + (sync if kind == "memcpy" else 0)
    exp = int(ledger[f"{kind}.expected"])
    print(f"- {kind}: launched {want}, ledger expected {exp}, missing {ledger[f'{kind}.missing']}, "
          f"unrecorded {ledger[f'{kind}.unrecorded']}, orphans {ledger[f'{kind}.orphan']}")
    if exp != want:
        bad += 1; print(f"  MISMATCH: expected {exp} != launched {want}")
    if int(ledger[f"{kind}.orphan"]) != 0:
        bad += 1; print("  MISMATCH: orphans (records of launches the ledger did not register)")
    if int(ledger[f"{kind}.unrecorded"]) != 0:
        bad += 1; print("  MISMATCH: unrecorded on a CUPTI that reports its drops")
print(f"- evicted (launches pushed out of the window, made holes then): {ledger.get('evicted', 0)}, "
      f"late (their records came after): "
      f"{sum(int(ledger.get(f'{k}.late', 0)) for k in ('kernel', 'memcpy', 'memset'))}")
for f in ("overrun", "busy"):
    print(f"- {f}: {ledger.get(f, 0)}")
    if int(ledger.get(f, 0)):
        bad += 1; print(f"  MISMATCH: the ledger's window was not enough ({f})")
verdict = open(check).read().splitlines()[0] if open(check).read() else ""
print(f"- check: {verdict}")
if case == "ample" and (sum(missing.values()) or "COMPLETE" not in verdict or "INCOMPLETE" in verdict):
    bad += 1; print("  MISMATCH: the ample run must be COMPLETE with nothing missing")
if case == "starved" and not sum(missing.values()):
    print("  note: the starved pool lost nothing this time")
print(f"- {case}: {'PASS' if not bad else 'FAIL'}")
sys.exit(1 if bad else 0)
PY
done
echo
echo "## PyTorch CUDA graphs ($GRAPH_N replays of 100 ops): per-kind losses of a starved pool against a clean run"
echo
for case in clean starved; do
    st=$OUT/tg-$case
    rm -rf "$st"
    env=(CUDA_INJECTION64_PATH=$B/libcuptop-agent.so CUPTOP_STORE=$st CUPTOP_LEDGER=1)
    [ $case = starved ] && env+=(CUPTOP_POOL=2 CUPTOP_BUFFER_SIZE=64K)
    env "${env[@]}" python3 "$here/torch_bench.py" cuptop graph "$GRAPH_N" >"$OUT/tg-$case.out" 2>"$OUT/tg-$case.err"
    id=$("$B/cuptop" sessions --store "$st" | awk 'NR == 2 { print $1 }')
    "$B/agentctl" dump "$st" "$id" >"$OUT/tg-$case.dump"
    "$B/cuptop" sessions --store "$st" --json >"$OUT/tg-$case.json"
    "$B/cuptop" check --store "$st" "$id" >"$OUT/tg-$case.check" 2>&1
done
python3 - "$OUT" <<'PY' || fails=1
import json, sys
out = sys.argv[1]
r = {}
for case in ("clean", "starved"):
    d = dict(l.rstrip("\n").split("=", 1) for l in open(f"{out}/tg-{case}.dump") if "=" in l)
    led = dict(w.split("=", 1) for w in d.get("meta.ledger", "").split())
    s = json.load(open(f"{out}/tg-{case}.json"))[0]
    r[case] = (led, s, open(f"{out}/tg-{case}.check").read().split("\n")[0])
bad = 0
print("| kind | clean stored | clean expected | starved expected | starved stored | starved missing | clean - stored | unrecorded |")
print("|---|---|---|---|---|---|---|---|")
for kind in ("kernel", "memcpy", "memset"):
    (cl, cs, _), (sl, ss, _) = r["clean"], r["starved"]
    c_st, s_st = cs["records_by_kind"][kind], ss["records_by_kind"][kind]
    c_exp, s_exp = int(cl.get(f"{kind}.expected", -1)), int(sl.get(f"{kind}.expected", -1))
    miss, unrec = int(sl.get(f"{kind}.missing", -1)), int(sl.get(f"{kind}.unrecorded", -1))
    ok = c_exp == c_st and s_exp == c_exp and miss == c_st - s_st and unrec == 0 \
        and int(cl.get(f"{kind}.missing", -1)) == 0
    bad += not ok
    print(f"| {kind} | {c_st} | {c_exp} | {s_exp} | {s_st} | {miss} | {c_st - s_st} | {unrec}{'' if ok else ' MISMATCH'} |")
for case in ("clean", "starved"):
    led, s, verdict = r[case]
    print(f"- {case}: {verdict}; loss {s['loss']}; graphs {led.get('graphs')}, unknowable "
          f"{led.get('graphs_unknowable', 0)}, overrun {led.get('overrun', 0)}, exact {led.get('exact')}")
    if int(led.get("overrun", 0)):
        bad += 1; print("  MISMATCH: the ledger's window overran")
if "INCOMPLETE" in r["clean"][2] or "COMPLETE" not in r["clean"][2]:
    bad += 1; print("  MISMATCH: the clean run must be COMPLETE")
if "INCOMPLETE" not in r["starved"][2] and int(r["starved"][0].get("kernel.missing", 0)):
    bad += 1; print("  MISMATCH: records missing but the starved run is not INCOMPLETE")
print(f"- torch graphs: {'PASS' if not bad else 'FAIL'}")
sys.exit(1 if bad else 0)
PY
[ $fails = 0 ] && echo && echo "ledger_agent: PASS" || { echo; echo "ledger_agent: FAIL"; }
} | tee "$md"
grep -q '^ledger_agent: PASS' "$md"
