#!/bin/sh
# test_exporter_job.sh - a job's verdict in Prometheus (issue 32 item 3):
# two jobs of two ranks each on the simulated CUPTI, one clean and one
# lossy, their sessions moved to two stores (rank 0 of both to hostA, rank
# 1 to hostB, as if each host had written its own); one `cuptop exporter`
# over each store, both scraped by the real Prometheus on loopback, which
# evaluates doc/prometheus/cuptop-job-rules.yml: the job-wide verdict
# (cuptop_job:complete) equals `cuptop check --job` over the two stores,
# both ranks are counted, CuptopJobRankLostRecords fires for each rank of
# the lossy job and never for the clean one; a live lossy job whose ranks
# write into the two stores as it runs (each host its own) shows its
# losses per rank as an increase (cuptop_job_rank:records_lost:increase5m).
# Exits 77 when prometheus or the simulator is not there.
set -u
b=${top_builddir:?}
s=${top_srcdir:?}
prom=$(command -v prometheus || echo /usr/bin/prometheus)
promtool=$(command -v promtool || echo /usr/bin/promtool)
if [ ! -x "$prom" ] || [ ! -x "$promtool" ]; then
    echo "prometheus/promtool not installed (apt-get install prometheus): skipped"
    exit 77
fi
for f in cuptop libcuptop-agent.so libcuptop-simcupti.so cuptop-simapp; do
    [ -e "$b/$f" ] || { echo "missing $f: skipped"; exit 77; }
done
py="python3 $s/tests/exporter/prom_lib.py"
rules=$s/doc/prometheus/cuptop-job-rules.yml
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-promjob-test.XXXXXX")
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    for p in $pids; do wait "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }
. "$s/tests/exporter/prom_lib.sh"
unset CUPTOP_STORE CUPTOP_JOB RANK LOCAL_RANK OMPI_COMM_WORLD_RANK SLURM_PROCID WORLD_SIZE
export CUPTOP_CUPTI_LIBRARY=$b/libcuptop-simcupti.so CUPTOPSIM_SEED=5
app=$b/cuptop-simapp

if "$promtool" check rules "$rules" >"$tmp/rules.out" 2>&1; then
    ok "promtool check rules doc/prometheus/cuptop-job-rules.yml"
else
    bad "promtool check rules"; cat "$tmp/rules.out"
fi

# ---- two jobs of two ranks, then one store per host ----------------------------
"$b/cuptop" run --store "$tmp/one" --job jobok --kinds kernel -- sh -c "
    RANK=0 WORLD_SIZE=2 '$app' --seconds 1 & RANK=1 WORLD_SIZE=2 '$app' --seconds 1; wait" \
    >"$tmp/ok.out" 2>&1 || bad "the clean job failed"
"$b/cuptop" run --store "$tmp/one" --job jobloss --pool 4 --buffer-size 64K -- sh -c "
    RANK=0 WORLD_SIZE=2 '$app' --seconds 2 --scenario drops &
    RANK=1 WORLD_SIZE=2 '$app' --seconds 2 --scenario drops; wait" \
    >"$tmp/loss.out" 2>&1 || bad "the lossy job failed"
mkdir -m 700 "$tmp/g" "$tmp/g/hostA" "$tmp/g/hostB"
"$b/cuptop" sessions --store "$tmp/one" --json >"$tmp/one.json"
python3 - "$tmp/one.json" "$tmp/one" "$tmp/g" <<'PY' || bad "the sessions could not be moved"
import json, os, shutil, sys
s = json.load(open(sys.argv[1]))
assert sorted((x["job"], x["rank"]) for x in s) == \
    [("jobloss", 0), ("jobloss", 1), ("jobok", 0), ("jobok", 1)], s
for x in s:
    shutil.copytree(os.path.join(sys.argv[2], x["id"]),
                    os.path.join(sys.argv[3], "host" + "AB"[x["rank"]], x["id"]), symlinks=True)
PY
for j in jobok jobloss; do
    "$b/cuptop" check --store "$tmp/g" --job $j >"$tmp/check-$j.txt"
    eval "rc_$j=\$?"
done
[ "$rc_jobok:$rc_jobloss" = "0:1" ] && ok "check --job over the two stores: jobok COMPLETE, jobloss INCOMPLETE" ||
    bad "check --job over the two stores: exit $rc_jobok and $rc_jobloss, want 0 and 1"

# ---- an exporter per store, one Prometheus -----------------------------------
start_exporter hostA --store "$tmp/g/hostA" --retention 3600
porta=$eport
start_exporter hostB --store "$tmp/g/hostB" --retention 3600
portb=$eport
start_prometheus "$rules" "127.0.0.1:$porta 127.0.0.1:$portb"
ok "prometheus on 127.0.0.1:$pport scrapes the exporters on ports $porta and $portb"

if $py wait-query "$purl" 60 'cuptop_job:ranks{cuptop_job="jobloss"} == 2 and on() cuptop_job:ranks{cuptop_job="jobok"} == 2' >/dev/null; then
    ok "cuptop_job:ranks: both ranks of each job, from two instances"
else
    bad "cuptop_job:ranks never counted two ranks per job"
fi
if $py wait-query "$purl" 30 'cuptop_job:complete{cuptop_job="jobok"} == 1' >/dev/null &&
    $py wait-query "$purl" 30 'cuptop_job:complete{cuptop_job="jobloss"} == 0' >/dev/null; then
    ok "cuptop_job:complete equals check --job: jobok 1, jobloss 0"
else
    bad "cuptop_job:complete differs from check --job"
fi
for r in 0 1; do
    if out=$($py wait-alert-labels "$purl" 60 CuptopJobRankLostRecords cuptop_job=jobloss rank=$r); then
        ok "doc/prometheus/cuptop-job-rules.yml: $out"
    else
        bad "$out"
    fi
done
# ---- a live job, each rank writing into its host's store ------------------------
"$b/cuptop" run --store "$tmp/g/hostA" --job joblive --pool 4 --buffer-size 64K -- sh -c "
    RANK=0 WORLD_SIZE=2 '$app' --seconds 20 --scenario drops &
    CUPTOP_STORE='$tmp/g/hostB' RANK=1 WORLD_SIZE=2 '$app' --seconds 20 --scenario drops; wait" \
    >"$tmp/live.out" 2>&1 &
livepid=$!
for r in 0 1; do
    if $py wait-query "$purl" 60 "cuptop_job_rank:records_lost:increase5m{cuptop_job=\"joblive\",rank=\"$r\"} > 0" >/dev/null; then
        ok "the live job's rank $r: its losses as an increase, from its own host's exporter"
    else
        bad "the live job's rank $r: no increase recorded"
    fi
done
if out=$($py none "$purl" 'ALERTS{alertname="CuptopJobRankLostRecords",cuptop_job="jobok"}'); then
    ok "no CuptopJobRankLostRecords for the clean job"
else
    bad "CuptopJobRankLostRecords for the clean job: $out"
fi
# the live job's processes end on their own (killing cuptop run would leave
# them writing into a store being removed)
wait "$livepid" || bad "the live job failed: $(tail -n 3 "$tmp/live.out")"
exit $fail
