#!/bin/bash
# bench/gpu/job.sh BUILD_DIR - issue 17 item 3 on the GPU: two CUDA
# processes of one job, exported into one trace.
#
# BUILD_DIR: a build tree with the CUPTI headers (tools/build.sh, then
# bench/gpu/prepare_carry.sh BUILD_DIR), carried to the GPU machine.
# Results in $OUT (default ./gpu-out): job.md (PASS/FAIL lines), job.log.
#
# Two launch_storm processes (bench/gpu/launch_storm.cu, 20000 launches on
# 4 streams, a memcpy every 100) start under ONE `cuptop run -- sh -c`,
# with RANK=0 and RANK=1 and WORLD_SIZE=2; then `cuptop check --job` and
# `cuptop export --job` into one chrome trace.  Checked (PASS or FAIL):
#   - two sessions, one job id from cuptop run, ranks 0 and 1 from RANK;
#   - check --job: exit 0, both ranks COMPLETE;
#   - the trace has exactly two process groups, "rank N (pid P)", P each
#     session's pid;
#   - per group, the X events equal that session's records (sessions --json);
#   - one clock: both groups' first kernels within 5 s of each other, and
#     each group's kernels inside its session's start..end.
#   - the two sessions copied into two stores (hostA/, hostB/, as gathered
#     from two hosts): check --job over both equals the single store's
#     (verdict, processes, loss, records), export --job the same trace.
# Runs in well under a minute (nvcc included).
set -u
B=$(cd "${1:?usage: job.sh BUILD_DIR}" && pwd)
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
CUPTOP=$B/cuptop
LOG=$OUT/job.log
: >"$LOG"
log() { echo "== $*" | tee -a "$LOG"; }
command -v nvidia-smi >/dev/null || { echo "no nvidia-smi: not a GPU machine"; exit 77; }
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
work=$(mktemp -d /tmp/cuptop-job.XXXXXX)
trap 'rm -rf "$work"' EXIT
if ! "$NVCC" -O2 -std=c++17 -o "$work/launch_storm" "$here/launch_storm.cu" >>"$LOG" 2>&1; then
    echo "nvcc failed (see $LOG)"; exit 1
fi
st=$work/store
unset CUPTOP_JOB RANK LOCAL_RANK WORLD_SIZE
log "cuptop run -- sh -c 'RANK=0 launch_storm & RANK=1 launch_storm; wait'"
storm="'$work/launch_storm' -n 20000 -s 4 -m 100"
"$CUPTOP" run --store "$st" --kinds kernel,memcpy,runtime -- sh -c \
    "WORLD_SIZE=2 RANK=0 $storm & WORLD_SIZE=2 RANK=1 $storm; wait" >>"$LOG" 2>&1
log "run rc=$?"
"$CUPTOP" sessions --store "$st" --json >"$work/sessions.json" 2>>"$LOG"
"$CUPTOP" sessions --store "$st" >>"$LOG" 2>&1
job=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["job"])' "$work/sessions.json")
"$CUPTOP" check --store "$st" --job "$job" >"$OUT/job-check.txt" 2>&1
crc=$?
cat "$OUT/job-check.txt" >>"$LOG"
"$CUPTOP" export --store "$st" --job "$job" --format chrome -o "$work/trace.json" >>"$LOG" 2>&1
erc=$?
log "check rc=$crc export rc=$erc"
# issue 32 item 3: the two sessions moved to two stores (as gathered from two
# hosts): check --job and export --job over both equal the single store's
g=$work/gathered
mkdir -m 700 "$g" "$g/hostA" "$g/hostB"
ids=$(python3 -c 'import json,sys; print(" ".join(s["id"] for s in sorted(json.load(open(sys.argv[1])), key=lambda s: s["rank"])))' "$work/sessions.json")
set -- $ids
cp -a "$st/$1" "$g/hostA/" && cp -a "$st/$2" "$g/hostB/"
"$CUPTOP" check --store "$st" --job "$job" --json >"$work/c1.json" 2>>"$LOG"
"$CUPTOP" check --store "$g/hostA" --store "$g/hostB" --job "$job" --json >"$work/c2.json" 2>>"$LOG"
mrc=$?
"$CUPTOP" check --store "$g/hostA" --store "$g/hostB" --job "$job" >>"$LOG" 2>&1
"$CUPTOP" export --store "$g" --job "$job" --format chrome -o "$work/trace2.json" >>"$LOG" 2>&1
merc=$?
log "two stores: check rc=$mrc export rc=$merc"
python3 - "$work/sessions.json" "$work/trace.json" "$crc" "$erc" "$work/c1.json" "$work/c2.json" \
    "$mrc" "$work/trace2.json" "$merc" >"$OUT/job.md" 2>>"$LOG" <<'PY'
import collections, json, re, sys
sess_path, trace_path, crc, erc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
c1_path, c2_path, mrc, trace2_path, merc = sys.argv[5], sys.argv[6], int(sys.argv[7]), sys.argv[8], int(sys.argv[9])
ok_all = True
def row(ok, what, detail=""):
    global ok_all
    ok_all &= bool(ok)
    print("| %s | %s | %s |" % ("PASS" if ok else "FAIL", what, detail))
print("| result | check | detail |\n|---|---|---|")
sess = json.load(open(sess_path))
row(len(sess) == 2 and len(set(s["job"] for s in sess)) == 1 and not sess[0]["job_own"],
    "two sessions, one job id from cuptop run", ", ".join("%s job %s" % (s["id"], s["job"]) for s in sess))
row(sorted(s["rank"] for s in sess) == [0, 1] and all(s["rank_source"] == "RANK" for s in sess),
    "ranks 0 and 1 from RANK", str([(s["rank"], s["rank_source"], s["world_size"]) for s in sess]))
row(crc == 0 and all(s["verdict"] == "COMPLETE" for s in sess), "check --job: exit 0, both COMPLETE",
    "exit %d; %s" % (crc, [s["verdict"] for s in sess]))
row(erc == 0, "export --job: exit 0", "exit %d" % erc)
t = json.load(open(trace_path)) if erc == 0 else {"traceEvents": [], "otherData": {}}
ev = t["traceEvents"]
groups = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "process_name"}
bypid = {s["pid"]: s for s in sess}
row(len(groups) == 2 and all(p in bypid and n == "rank %d (pid %d)" % (bypid[p]["rank"], p)
                             for p, n in groups.items()),
    "two process groups 'rank N (pid P)'", str(groups))
x = collections.Counter(e["pid"] for e in ev if e.get("ph") == "X")
for p, s in sorted(bypid.items(), key=lambda kv: kv[1]["rank"]):
    row(x[p] == s["records"], "rank %d: events equal the session's records" % s["rank"],
        "%d events, %d records" % (x[p], s["records"]))
base = t.get("otherData", {}).get("base_ns", 0)
first, inside = {}, {}
for e in ev:
    if e.get("ph") == "X" and e.get("cat") == "kernel":
        ns = base + e["ts"] * 1000
        first[e["pid"]] = min(first.get(e["pid"], 1e30), ns)
        s = bypid.get(e["pid"])
        if s:
            inside.setdefault(e["pid"], True)
            if not (s["start_ns"] - 1e9 <= ns <= s["end_ns"] + 1e9):
                inside[e["pid"]] = False
row(len(first) == 2 and max(first.values()) - min(first.values()) < 5e9,
    "one clock: both ranks' first kernels within 5 s",
    "%.3f s apart" % ((max(first.values()) - min(first.values())) / 1e9 if len(first) == 2 else -1))
row(len(inside) == 2 and all(inside.values()), "each rank's kernels inside its session's span", str(inside))
od = t.get("otherData", {})
row(od.get("verdict") == "COMPLETE" and od.get("processes") == 2 and od.get("loss_total") == 0,
    "otherData: the job COMPLETE, 2 processes, no loss",
    "%s, %s processes, loss %s" % (od.get("verdict"), od.get("processes"), od.get("loss_total")))
# two stores: one verdict and one trace, equal to the single store's
def load(p):
    try:
        return json.load(open(p))
    except (OSError, ValueError):
        return {}
c1, c2 = load(c1_path), load(c2_path)
keys = ("verdict", "processes", "loss_total", "records")
row(mrc == 0 and c2.get("stores") == 2 and all(c1.get(k) == c2.get(k) for k in keys),
    "two stores (sessions moved to hostA/, hostB/): check --job equals the single store's",
    "exit %d, stores %s; %s vs %s" % (mrc, c2.get("stores"), [c1.get(k) for k in keys],
                                      [c2.get(k) for k in keys]))
t2 = load(trace2_path) if merc == 0 else {}
def shape(tr):
    evs = tr.get("traceEvents", [])
    # several stores name the host in each group ("rank 0 on HOST (pid P)")
    names = sorted(re.sub(r" on [^ ]+ \(", " (", e["args"]["name"]) for e in evs
                   if e.get("ph") == "M" and e["name"] == "process_name")
    return names, collections.Counter(e.get("cat") for e in evs if e.get("ph") == "X")
row(merc == 0 and shape(t2) == shape(t), "two stores: export --job gives the same trace (groups, events by category)",
    "exit %d; %s" % (merc, shape(t2)[0]))
print("\n%s" % ("ALL PASS" if ok_all else "SOME FAILED"))
sys.exit(0 if ok_all else 1)
PY
rc=$?
cat "$OUT/job.md"
exit $rc
