#!/bin/bash
# bench/gpu/api_policy.sh BUILD_DIR - issue 19's GPU measurement: how many
# API records the default policy keeps, what it costs, what it saves.
#
# BUILD_DIR: a build tree with the CUPTI headers (tools/build.sh, then
# bench/gpu/prepare_carry.sh BUILD_DIR), carried to the GPU machine.
# Results in $OUT (default ./gpu-out): api_policy.md (the tables) and
# api_policy.log.  About 5-6 minutes on the H200 (REPS=5).
#
# Workloads (bench/gpu/torch_bench.py): ops (50k x.add_), train (300 MLP
# steps), graph (500 replays of a CUDA graph of 100 ops).  Configurations:
#   none   no tracing
#   all    cuptop run --api all        (every runtime and driver call)
#   gpu    cuptop run                  (the default: --api gpu)
#   kc     cuptop run --kinds kernel,memcpy   (no API record at all)
# Tables:
#   1. records per call name under --api all, top 20, per workload
#   2. per workload and configuration: GPU records, API records, API
#      records per GPU record, GPU records without their launching call
#      (gpu and all: must be 0, the flows stay complete), loop time median
#      of REPS interleaved runs and its ratio to no tracing
#   3. drops with a deliberately small pool (POOL buffers of BUF bytes):
#      lost records per configuration, and the record ratio all/gpu
# Environment: REPS (5), POOL (3), BUF (256K), PROFILER=1 adds
# torch.profiler to table 2 (its loop time, for the ratio); WORKLOADS
# (ops train graph) and CONFIGS (none all gpu kc) narrow a run, e.g.
# PROFILER=1 WORKLOADS=ops CONFIGS="none all gpu" SMALL=0 for the loop
# times alone (SMALL=0 skips table 3).
set -u
B=$(cd "${1:?usage: api_policy.sh BUILD_DIR}" && pwd)
OUT=${OUT:-$PWD/gpu-out}
REPS=${REPS:-5} POOL=${POOL:-3} BUF=${BUF:-256K}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
CUPTOP=$B/cuptop
LOG=$OUT/api_policy.log
: >"$LOG"
command -v nvidia-smi >/dev/null || { echo "no nvidia-smi: not a GPU machine"; exit 77; }
python3 -c 'import torch; assert torch.cuda.is_available()' 2>>"$LOG" ||
    { echo "no PyTorch with CUDA"; exit 77; }
work=$(mktemp -d /tmp/cuptop-api.XXXXXX)
trap 'rm -rf "$work"' EXIT
WORKLOADS=${WORKLOADS:-ops train graph}
CONFIGS=${CONFIGS:-none all gpu kc}
[ "${PROFILER:-0}" = 1 ] && CONFIGS="$CONFIGS profiler"

# one run: workload config rep [extra cuptop run options...]; appends
# "workload config rep loop_s store" to $work/runs
one() {
    local w=$1 c=$2 r=$3; shift 3
    local st=$work/st-$w-$c-$r out
    case $c in
    none) out=$(python3 "$here/torch_bench.py" none "$w" 2>>"$LOG") ;;
    profiler) out=$(TORCH_TRACE=$work/torch.json python3 "$here/torch_bench.py" profiler "$w" 2>>"$LOG") ;;
    all) out=$("$CUPTOP" run --store "$st" --api all "$@" -- python3 "$here/torch_bench.py" cuptop "$w" 2>>"$LOG") ;;
    gpu) out=$("$CUPTOP" run --store "$st" "$@" -- python3 "$here/torch_bench.py" cuptop "$w" 2>>"$LOG") ;;
    kc) out=$("$CUPTOP" run --store "$st" --kinds kernel,memcpy "$@" -- python3 "$here/torch_bench.py" cuptop "$w" 2>>"$LOG") ;;
    esac
    local loop=$(printf '%s\n' "$out" | sed -n 's/.*loop_s=\([0-9.]*\).*/\1/p')
    echo "$w $c $r ${loop:-nan} $st" >>"$work/runs"
}

echo "== timing: $REPS interleaved repetitions" | tee -a "$LOG"
: >"$work/runs"
for r in $(seq 1 "$REPS"); do
    for w in $WORKLOADS; do
        for c in $CONFIGS; do one "$w" "$c" "$r"; done
    done
done
echo "== small pool: --pool $POOL --buffer-size $BUF" | tee -a "$LOG"
: >"$work/small"
[ "${SMALL:-1}" = 1 ] || WORKLOADS_SMALL=""
for w in ${WORKLOADS_SMALL-$WORKLOADS}; do
    for c in all gpu kc; do
        st=$work/small-$w-$c
        case $c in
        all) a="--api all" ;; gpu) a="" ;; kc) a="--kinds kernel,memcpy" ;;
        esac
        "$CUPTOP" run --store "$st" $a --pool "$POOL" --buffer-size "$BUF" -- \
            python3 "$here/torch_bench.py" cuptop "$w" >/dev/null 2>>"$LOG"
        echo "$w $c $st" >>"$work/small"
    done
done
echo "== exports" | tee -a "$LOG"
for w in $WORKLOADS; do
    for c in all gpu; do
        st=$work/st-$w-$c-1
        sid=$(ls "$st" 2>/dev/null | head -1)
        "$CUPTOP" export --store "$st" "$sid" --from start --to end --format jsonl \
            -o "$work/$w-$c.jsonl" 2>>"$LOG"
    done
done
for f in "$work"/st-*/ "$work"/small-*/; do
    [ -d "$f" ] && "$CUPTOP" sessions --store "$f" --json >"${f%/}.json" 2>>"$LOG"
done

python3 - "$work" "$REPS" "$POOL" "$BUF" "$WORKLOADS" "$CONFIGS" >"$OUT/api_policy.md" 2>>"$LOG" <<'PY'
import collections, json, os, statistics, sys
work, reps, pool, buf, workloads, configs = sys.argv[1:7]
workloads, configs = workloads.split(), configs.split()
API = ("runtime", "driver")
GPU = ("kernel", "memcpy", "memset")
def sess(path):
    try:
        s = json.load(open(path))
        return s[0] if s else None
    except Exception:
        return None
print("# API record policy on the GPU (issue 19)\n")
print("## 1. Records per call name under --api all (top 20)\n")
flows = {}
for w in workloads:
    for c in ("all", "gpu"):
        names, gpu, api = collections.Counter(), set(), set()
        try:
            for line in open(os.path.join(work, "%s-%s.jsonl" % (w, c))):
                r = json.loads(line)
                k = r.get("kind")
                if k in API:
                    names[r["name"]] += 1
                    api.add(r["correlation"])
                elif k in GPU:
                    gpu.add(r["correlation"])
        except OSError:
            pass
        flows[(w, c)] = len(gpu - api)
        if c == "all":
            print("%s: %d API records, %d distinct calls\n" % (w, sum(names.values()), len(names)))
            print("| call | records |\n|---|---:|")
            for n, k in names.most_common(20):
                print("| %s | %d |" % (n, k))
            print()
runs = collections.defaultdict(list)
stores = collections.defaultdict(list)
for line in open(os.path.join(work, "runs")):
    w, c, r, loop, st = line.split()
    runs[(w, c)].append(float(loop))
    stores[(w, c)].append(st)
print("## 2. Records, loop time (median of %s interleaved runs)\n" % reps)
print("| workload | config | GPU records | API records | API/GPU | GPU records without launch call | loop s | x no tracing | verdict |")
print("|---|---|---:|---:|---:|---:|---:|---:|---|")
for w in workloads:
    base = statistics.median(runs[(w, "none")]) if runs[(w, "none")] else float("nan")
    for c in configs:
        t = runs[(w, c)]
        med = statistics.median(t) if t else float("nan")
        g = a = "-"
        ratio = "-"
        verdict = "-"
        if c not in ("none", "profiler"):
            s = sess(stores[(w, c)][0].rstrip("/") + ".json")
            if s:
                rk = s["records_by_kind"]
                g = sum(rk.get(k, 0) for k in GPU)
                a = sum(rk.get(k, 0) for k in API)
                ratio = "%.2f" % (a / g) if g else "-"
                verdict = s["verdict"]
        fl = flows.get((w, c), "-") if c in ("all", "gpu") else "-"
        print("| %s | %s | %s | %s | %s | %s | %.3f | %.2f | %s |" %
              (w, c, g, a, ratio, fl, med, med / base if base else float("nan"), verdict))
print("\n## 3. Drops with a small pool (--pool %s --buffer-size %s)\n" % (pool, buf))
print("| workload | config | records stored | lost | verdict |\n|---|---|---:|---:|---|")
for line in open(os.path.join(work, "small")):
    w, c, st = line.split()
    s = sess(st.rstrip("/") + ".json")
    if s:
        print("| %s | %s | %d | %d | %s |" % (w, c, s["records"], s["loss_total"], s["verdict"]))
    else:
        print("| %s | %s | - | - | no session |" % (w, c))
PY
echo "== done: $OUT/api_policy.md" | tee -a "$LOG"
cat "$OUT/api_policy.md"
