#!/bin/sh
# test_job.sh - jobs of many processes (issue 17 item 3) on the simulated
# CUPTI: three simulated processes started under one `cuptop run -- sh -c`
# share one job id and carry their ranks (RANK); sessions --job filters;
# check --job is COMPLETE only when every process is (one killed with -9
# makes it INCOMPLETE; a rank below WORLD_SIZE without a session too);
# export --job writes one chrome trace with one process group per rank,
# each holding exactly its session's records; a launcher's session (no
# rank, no CUDA work) is marked the launcher; an agent loaded by hand is a
# job of its own; misuse is one line and exit 2.
set -u
b=${top_builddir:?}
for f in cuptop libcuptop-agent.so libcuptop-simcupti.so cuptop-simapp; do
    [ -e "$b/$f" ] || { echo "missing $f: skipped"; exit 77; }
done
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-job-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
. "${top_srcdir:-.}/tests/skip_part.sh"
check() { if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: got '$2' want '$3'"; fail=1; fi; }
export CUPTOP_CUPTI_LIBRARY=$b/libcuptop-simcupti.so CUPTOPSIM_SEED=7
unset CUPTOP_JOB RANK LOCAL_RANK OMPI_COMM_WORLD_RANK SLURM_PROCID WORLD_SIZE
app=$b/cuptop-simapp

# ---- a clean job of three ranks ---------------------------------------------
"$b/cuptop" run --store "$tmp/a" --kinds kernel,memcpy,runtime -- sh -c "
    RANK=0 '$app' --seconds 1 & RANK=1 '$app' --seconds 1 & RANK=2 '$app' --seconds 1; wait"
check "the job ran" "$?" 0
"$b/cuptop" sessions --store "$tmp/a" --json >"$tmp/a.json"
job=$(python3 - "$tmp/a.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
jobs = set(x["job"] for x in s)
assert len(s) == 3 and len(jobs) == 1, (len(s), jobs)
assert sorted(x["rank"] for x in s) == [0, 1, 2], [x["rank"] for x in s]
assert all(x["rank_source"] == "RANK" and not x["job_own"] for x in s)
j = jobs.pop()
assert j.startswith("job-"), j
print(j)
EOF
)
check "three sessions, one job id from cuptop run, ranks 0-2 from RANK" "$?" 0
"$b/cuptop" sessions --store "$tmp/a" --job "$job" >"$tmp/a.txt"
check "sessions --job: header and three lines" "$(wc -l <"$tmp/a.txt" | tr -d ' ')" 4
check "sessions --job: JOB and RANK columns" \
    "$(awk 'NR > 1 {print $9 ":" $10}' "$tmp/a.txt" | sort | tr '\n' ' ')" \
    "$job:0 $job:1 $job:2 "
"$b/cuptop" check --store "$tmp/a" --job "$job" >"$tmp/a.check"
check "check --job: COMPLETE, exit 0" "$?" 0
check "check --job: one verdict per rank" "$(grep -c '^rank [0-2] (pid [0-9]*) .*: COMPLETE$' "$tmp/a.check")" 3
grep -q "^job $job: COMPLETE (3 processes, 0 records lost)$" "$tmp/a.check"
check "check --job: the job's verdict" "$?" 0

"$b/cuptop" export --store "$tmp/a" --job "$job" --format chrome -o "$tmp/a.trace.json"
check "export --job" "$?" 0
# each session opened once (issue 30 item 3): its lock.mdb (one open per
# LMDB environment) once, for the whole job as for a --from/--to window
# (the job's bounds read first)
if command -v strace >/dev/null 2>&1 && strace -f -o /dev/null true 2>/dev/null; then
    for how in "" "--from +0 --to end"; do
        # LeakSanitizer cannot run under ptrace (it exits 1 there): off for
        # this run in a sanitizer build; the leak checks run everywhere else
        # shellcheck disable=SC2086
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -f -e trace=openat,open -o "$tmp/opens.trace" "$b/cuptop" export --store "$tmp/a" \
            --job "$job" $how --format chrome -o "$tmp/once.json" --force >/dev/null 2>&1
        check "export --job $how under strace" "$?" 0
        check "export --job $how: every session opened once" \
            "$(grep -o "$tmp/a/[^/\"]*/lock.mdb\"" "$tmp/opens.trace" | sort | uniq -c |
               awk '$1 != 1' | wc -l | tr -d ' '):$(grep -c "/lock.mdb\"" "$tmp/opens.trace")" "0:3"
    done
else
    skip_part "the opened-once check of export --job: strace not usable here"
fi
python3 - "$tmp/a.trace.json" "$tmp/a.json" <<'EOF'
import collections, json, sys
t = json.load(open(sys.argv[1]))
sess = {x["pid"]: x for x in json.load(open(sys.argv[2]))}
ev = t["traceEvents"]
groups = {e["pid"]: e["args"]["name"] for e in ev
          if e.get("ph") == "M" and e["name"] == "process_name"}
assert len(groups) == 3, groups
for pid, name in groups.items():
    assert pid in sess, (pid, list(sess))
    assert name == "rank %d (pid %d)" % (sess[pid]["rank"], pid), name
x = collections.Counter(e["pid"] for e in ev if e.get("ph") == "X")
for pid, s in sess.items():
    assert x[pid] == s["records"], (pid, x[pid], s["records"])
# one clock: the three processes ran at the same time
first = {}
for e in ev:
    if e.get("ph") == "X":
        first[e["pid"]] = min(first.get(e["pid"], 1e18), e["ts"])
assert max(first.values()) - min(first.values()) < 3e6, first
# the trace's clock starts with the job, not a minute before it (issue 27)
assert min(first.values()) < 2e6, min(first.values())
od = t["otherData"]
assert od["verdict"] == "COMPLETE" and od["processes"] == 3, od
assert [r["rank"] for r in od["ranks"]] == [0, 1, 2]
assert od["loss_total"] == sum(s["loss_total"] for s in sess.values())
# Kineto's top-level deviceProperties: the first rank's devices
r0 = sess[od["ranks"][0]["pid"]]
assert t["deviceProperties"], "no devices"
assert [(d["id"], d["name"]) for d in t["deviceProperties"]] == \
    [(d["index"], d["name"]) for d in r0["devices"]], (t["deviceProperties"], r0["devices"])
print("3 groups, %s records" % sum(x.values()))
EOF
check "one trace, a group per rank named 'rank N (pid P)', each session's records" "$?" 0

# ---- a job with a process killed with -9 ------------------------------------
"$b/cuptop" run --store "$tmp/b" --job crashjob --kinds kernel,runtime -- sh -c "
    RANK=0 '$app' --seconds 1 & RANK=1 '$app' --seconds 1 --exit kill & RANK=2 '$app' --seconds 1; wait" \
    2>/dev/null
"$b/cuptop" check --store "$tmp/b" --job crashjob >"$tmp/b.check"
check "check --job with a crashed process: exit 1" "$?" 1
grep -q '^rank 1 (pid [0-9]*) .*: INCOMPLETE (crashed)$' "$tmp/b.check"
check "the crashed rank is named" "$?" 0
check "the other ranks are COMPLETE" "$(grep -c '^rank [02] (pid [0-9]*) .*: COMPLETE$' "$tmp/b.check")" 2
grep -q '^job crashjob: INCOMPLETE (3 processes, 1 INCOMPLETE, 1 crashed' "$tmp/b.check"
check "the job is INCOMPLETE" "$?" 0
"$b/cuptop" check --store "$tmp/b" --job crashjob --json >"$tmp/b.cjson"
check "check --job --json: exit 1" "$?" 1
python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["job"] == "crashjob" and j["verdict"] == "INCOMPLETE" and j["crashed"] == 1, j
assert [s["rank"] for s in j["sessions"]] == [0, 1, 2]
assert [s["state"] for s in j["sessions"]] == ["ended", "crashed", "ended"]
' "$tmp/b.cjson"
check "check --job --json: the job and its processes" "$?" 0
"$b/cuptop" export --store "$tmp/b" --job crashjob --format chrome -o "$tmp/b.trace.json"
python3 -c '
import json, sys
od = json.load(open(sys.argv[1]))["otherData"]
assert od["verdict"] == "INCOMPLETE" and od["crashed"] == 1, od
assert [r["state"] for r in od["ranks"]] == ["ended", "crashed", "ended"], od["ranks"]
' "$tmp/b.trace.json"
check "export --job of the crashed job says INCOMPLETE" "$?" 0

# ---- a rank missing below WORLD_SIZE ------------------------------------------
"$b/cuptop" run --store "$tmp/c" --job gap --kinds kernel -- sh -c "
    WORLD_SIZE=3 RANK=0 '$app' --seconds 0.5 & WORLD_SIZE=3 RANK=2 '$app' --seconds 0.5; wait"
"$b/cuptop" check --store "$tmp/c" --job gap >"$tmp/c.check"
check "a missing rank: exit 1" "$?" 1
grep -q '1 of 3 ranks have no session (the first: rank 1)' "$tmp/c.check"
check "the missing rank is named" "$?" 0

# ---- --only-if: the skipped rank belongs to its job (issue 27 item 6) ----------
"$b/cuptop" run --store "$tmp/o" --job onlyif --only-if LOCAL_RANK=0 --kinds kernel -- sh -c "
    RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 '$app' --seconds 0.5 &
    RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 '$app' --seconds 0.5 & wait"
"$b/cuptop" check --store "$tmp/o" --job onlyif >"$tmp/o.check"
check "--only-if: check --job exit 0 (COMPLETE, one rank skipped)" "$?" 0
grep -q '^rank 1 (pid [0-9]*) .*: SKIPPED' "$tmp/o.check"
check "--only-if: the skipped process is rank 1 of the job" "$?" 0
grep -q 'have no session' "$tmp/o.check"
check "--only-if: no rank is missing" "$?" 1
"$b/cuptop" sessions --store "$tmp/o" --json >"$tmp/o.json"
python3 -c '
import json, sys
s = sorted(json.load(open(sys.argv[1])), key=lambda x: x["rank"])
assert [(x["job"], x["rank"], x["rank_source"]) for x in s] == \
    [("onlyif", 0, "RANK"), ("onlyif", 1, "RANK")], s
assert [x["verdict"] for x in s] == ["COMPLETE", "SKIPPED"], s
' "$tmp/o.json"
check "--only-if: both sessions carry the job and their rank" "$?" 0

# ---- the launcher's own session (torchrun starting CUDA for a device count):
# no rank, no CUDA work (here: nothing made at all); marked the launcher ----
"$b/cuptop" run --store "$tmp/l" --job launch --kinds kernel,overhead -- sh -c "
    '$app' --seconds 0.6 --scale 0 &
    RANK=0 WORLD_SIZE=2 '$app' --seconds 0.5 & RANK=1 WORLD_SIZE=2 '$app' --seconds 0.5; wait"
"$b/cuptop" check --store "$tmp/l" --job launch >"$tmp/l.check"
check "launcher: check --job exit 0" "$?" 0
grep -q '^launcher (pid [0-9]*) .*: COMPLETE' "$tmp/l.check"
check "launcher: listed as the launcher, not as 'no rank'" "$?" 0
grep -q '(3 processes, 1 launcher, 0 records lost)' "$tmp/l.check"
check "launcher: the job's line counts it" "$?" 0
"$b/cuptop" check --store "$tmp/l" --job launch --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["launchers"] == 1 and j["processes"] == 3 and j["complete"], j
'
check "launcher: check --job --json launchers 1" "$?" 0
"$b/cuptop" export --store "$tmp/l" --job launch --format chrome -o "$tmp/l.json" 2>/dev/null
grep -q '"launcher (pid [0-9]*)"' "$tmp/l.json"
check "launcher: export --job names its group the launcher" "$?" 0

# ---- loaded by hand: a job of its own ----------------------------------------
CUDA_INJECTION64_PATH=$b/libcuptop-agent.so CUPTOP_STORE=$tmp/d CUPTOP_KINDS=kernel \
    "$app" --seconds 0.5
"$b/cuptop" sessions --store "$tmp/d" --json >"$tmp/d.json"
own=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))[0]
assert s["job_own"] and s["job"] == s["id"] and s["rank"] is None, s
print(s["id"])' "$tmp/d.json")
check "an agent loaded without cuptop run: its session id is its job" "$?" 0
"$b/cuptop" check --store "$tmp/d" --job "$own" >/dev/null
check "check --job of a job of its own" "$?" 0
check "its JOB column is -" "$("$b/cuptop" sessions --store "$tmp/d" | awk 'NR == 2 {print $9}')" "-"
# CUPTOP_JOB set by a launcher is kept by cuptop run
CUPTOP_JOB=slurm-42 "$b/cuptop" run --store "$tmp/e" --kinds kernel -- "$app" --seconds 0.3
check "CUPTOP_JOB from the environment is the job" \
    "$("$b/cuptop" sessions --store "$tmp/e" --job slurm-42 | awk 'NR == 2 {print $9}')" slurm-42

# ---- misuse: one line, exit 2 ---------------------------------------------------
for bad in "sessions --store $tmp/a --job nosuchjob" \
           "sessions --store $tmp/a --job bad/id" \
           "check --store $tmp/a --job nosuchjob" \
           "check --store $tmp/a --job $job --all" \
           "check --store $tmp/a --job $job $own" \
           "check --store $tmp/a --job $job --from 0 --to 1" \
           "check --store $tmp/a --job $job --verify" \
           "export --store $tmp/a --job $job --format jsonl -o $tmp/x" \
           "export --store $tmp/a --job $job --format chrome --mark m -o $tmp/x" \
           "export --store $tmp/a --job $job $own --format chrome -o $tmp/x" \
           "export --store $tmp/a --job $job --format chrome --from 0 -o $tmp/x" \
           "export --store $tmp/a --job nosuchjob --format chrome -o $tmp/x" \
           "run --job a/b -- true"; do
    "$b/cuptop" $bad >/dev/null 2>"$tmp/err"
    rc=$?
    check "misuse '$bad': exit 2, one line" "$rc/$(wc -l <"$tmp/err" | tr -d ' ')" "2/1"
done
CUPTOP_JOB='no spaces' "$b/cuptop" run -- true 2>"$tmp/err"
check "a CUPTOP_JOB that is no job id: exit 2, one line" "$?/$(wc -l <"$tmp/err" | tr -d ' ')" "2/1"
for c in sessions check export run; do
    "$b/cuptop" $c --help | grep -q -- "--job"
    check "cuptop $c --help documents --job" "$?" 0
done
parts_summary
exit $fail
