#!/bin/sh
# test_compare.sh - cuptop compare and cuptop baseline end to end: on the
# simulator (clean runs, a slowed kernel, other kinds, a lossy side, the
# baseline's control runs) and on fill_store's stores (epochs and marks as
# operands, an INCOMPLETE side), and every misuse (exit 2).
. "${top_srcdir:?}/tests/cli/cli_lib.sh"
b=$top_builddir
for f in "$b/libcuptop-agent.so" "$b/libcuptop-simcupti.so" "$b/cuptop-simapp" "$b/simdrive"; do
    [ -e "$f" ] || { echo "missing $f: skipped"; exit 77; }
done
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
for v in $(env | sed -n 's/^\(CUPTOP_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
S=$WORK/store
sim() { # LABEL [cuptop run options] -- [simapp options]
    label=$1
    shift
    "$CUPTOP" run --store "$S" --label "$label" "$@" >/dev/null 2>"$WORK/sim.err" ||
        fail "simapp run failed: $* $(cat "$WORK/sim.err")"
    ls "$S" | tail -n 1
}
# one thread at its maximal rate with a quota: the same kernel sequence every run
APP="$b/cuptop-simapp --scenario clean --threads 1 --max-rate --ops 20000 --seconds 20"
a=$(sim w -- $APP)
a2=$(sim w -- $APP)
slow=$(sim w -- $APP --faults slow_kernel=1,slow_kernel_x=4)
kern=$(sim w --kinds kernel -- $APP)
lossy=$(sim w --pool 2 -- "$b/cuptop-simapp" --scenario drops --seconds 1)

json_check() { # NAME FILE PYTHON-EXPR...: each expression true of d (the JSON)
    name=$1 file=$2
    shift 2
    checks=$((checks + 1))
    python3 - "$file" "$@" <<'PY' 2>"$WORK/py.err" || fail "$name: $(tail -n 1 "$WORK/py.err")"
import json, sys
d = json.load(open(sys.argv[1]))
for e in sys.argv[2:]:
    if not eval(e):
        print("false: " + e, file=sys.stderr)
        sys.exit(1)
PY
}

# two clean runs: comparable, ratios 1, the same order on every stream
run 0 clean "$CUPTOP" compare --store "$S" "$a" "$a2"
grep -q '^verdict: comparable$' "$WORK/clean.out" || fail "clean: not comparable"
run 0 clean_json "$CUPTOP" compare --store "$S" --json --top 0 "$a" "$a2"
strict_json "$WORK/clean_json.out"
json_check clean_json "$WORK/clean_json.out" 'd["comparable"]' \
    'len(d["durations"]) >= 14' \
    'all(0.99 <= x["total_ratio"] <= 1.01 and 0.99 <= x["p50_ratio"] <= 1.01 for x in d["durations"])' \
    'all(x["a"]["count"] == x["b"]["count"] for x in d["durations"])' \
    'len(d["order"]) == 4 and all(s["agreement"] == 1 and not s["diverged"] for s in d["order"])' \
    'sum(s["kernels"][0] for s in d["order"]) == 20000' \
    'all(x["to_ns"] > 0 and not x["open"] for x in d["sides"])'

# one kernel four times slower: first, with the ratio 4
run 0 slowed "$CUPTOP" compare --store "$S" --json "$a" "$slow"
json_check slowed "$WORK/slowed.out" 'd["comparable"]' \
    'd["durations"][0]["name"] == "ampere_sgemm_128x64_nn"' \
    '3.95 <= d["durations"][0]["total_ratio"] <= 4.05' \
    '3.9 <= d["durations"][0]["p50_ratio"] <= 4.1' \
    'all(0.99 <= x["total_ratio"] <= 1.01 for x in d["durations"][1:])' \
    'any(x["what"] == "command" and not x["fatal"] for x in d["differences"])'
run 0 slowed_text "$CUPTOP" compare --store "$S" --top 1 "$a" "$slow"
grep -q 'ampere_sgemm_128x64_nn$' "$WORK/slowed_text.out" || fail "slowed: kernel not shown first"

# other kinds: not comparable, and said why
run 1 kinds "$CUPTOP" compare --store "$S" "$a" "$kern"
grep -q '^verdict: not comparable: kinds.*absolute times are not comparable; only order and relative durations are' \
    "$WORK/kinds.out" || fail "kinds: verdict: $(grep verdict "$WORK/kinds.out")"

# a lossy side: exit 1, named unusable
run 1 lossy "$CUPTOP" compare --store "$S" "$a" "$lossy"
grep -q '^  B: .*INCOMPLETE: unusable for timing attribution' "$WORK/lossy.out" ||
    fail "lossy: INCOMPLETE side not named"
no_raw_escapes "$WORK/lossy.out"

# epochs and marks as operands (fill_store's rich session: epochs 1 and 2, mark "hot")
F=$WORK/fill
"$FILL" "$F" || fail "fill_store failed"
R=20250101T120000-1001
run 1 epochs "$CUPTOP" compare --store "$F" --json "$R@1" "$R@2"
json_check epochs "$WORK/epochs.out" 'd["sides"][0]["what"].startswith("epoch 1 of")' \
    'd["sides"][1]["what"].startswith("epoch 2 of")' \
    'd["sides"][0]["to_ns"] == d["sides"][1]["from_ns"]' \
    'not d["comparable"] and any(x["what"] == "kinds" for x in d["differences"])'
run 0 mark "$CUPTOP" compare --store "$F" --json "$R:hot" "$R:hot"
json_check mark "$WORK/mark.out" 'd["comparable"]' \
    'd["sides"][0]["what"].startswith("mark \"hot\"")' \
    'd["sides"][0]["records"] > 0' \
    'd["sides"][0]["to_ns"] - d["sides"][0]["from_ns"] == 2 * 10**9 - 1'
run 1 fill_lossy "$CUPTOP" compare --store "$F" 20250101T120200-3000 20250101T120100-2000
grep -q '^  B: .*cupti_dropped.*INCOMPLETE' "$WORK/fill_lossy.out" || fail "fill_lossy: not said"

# NVTX range instances as operands (simdrive: three "step" ranges of 50, 100
# and 30 operations, one range left open at the exit): each side's records
# are the records `cuptop export --range NAME --nth N` writes
N=$WORK/nvtx
mkdir -p "$N"
env CUPTOP_KINDS=kernel,runtime,marker CUPTOP_STORE="$N/store" NVTX_INJECTION64_PATH="$b/libcuptop-agent.so" \
    timeout 120 "$b/simdrive" "$b/libcuptop-simcupti.so" "$b/libcuptop-agent.so" "$N/truth" \
    "seq:ctx,push:step,emit:50,pop,push:step,emit:100,pop,emit:20,push:step,emit:30,pop,push:leftopen,emit:10" \
    return >"$N/out" 2>"$N/err" || fail "simdrive failed: $(cat "$N/err")"
nv=$(ls "$N/store" | head -n 1)
exported() { # NAME NTH: records in that instance's window (export's lines but the session line)
    "$CUPTOP" export --store "$N/store" "$nv" --range "$1" --nth "$2" --format jsonl -o - |
        grep -vc '^{"kind":"session"'
}
e1=$(exported step 1) e2=$(exported step 2) e3=$(exported step 3) eo=$(exported leftopen 1)
[ "$e1" -gt 0 ] && [ "$e2" -gt "$e1" ] || fail "range export: $e1 $e2 records"
run 0 range12 "$CUPTOP" compare --store "$N/store" --json "$nv/range:step#1" "$nv/range:step#2"
json_check range12 "$WORK/range12.out" 'd["comparable"]' \
    "d['sides'][0]['records'] == $e1 and d['sides'][1]['records'] == $e2" \
    'd["sides"][0]["what"] == "range \"step\" #1 of %s" % d["sides"][0]["id"]' \
    'd["sides"][1]["what"].startswith("range \"step\" #2 of")' \
    'd["sides"][0]["to_ns"] <= d["sides"][1]["from_ns"]'
python3 - "$N/store" "$nv" "$WORK/range12.out" "$CUPTOP" <<'PY' || fail "range12: window is not the range's"
import json, subprocess, sys
st, sid, out, cuptop = sys.argv[1:]
r = json.loads(subprocess.check_output([cuptop, "ranges", "--store", st, "--json", "--slowest", "10", sid]))
step = [n for n in r["names"] if n["name"] == "step"][0]
inst = sorted(step["slowest"], key=lambda i: i["start_ns"])
d = json.load(open(out))
for k in (0, 1):
    w = d["sides"][k]
    assert (w["from_ns"], w["to_ns"]) == (inst[k]["start_ns"], inst[k]["end_ns"]), (w, inst[k])
PY
# #slowest is the instance `cuptop ranges` lists first; an open range runs to the end
run 0 range_slow "$CUPTOP" compare --store "$N/store" --json "$nv/range:step#slowest" "$nv/range:leftopen"
"$CUPTOP" ranges --store "$N/store" --json --slowest 10 "$nv" >"$WORK/rj.json"
slow_nth=$(python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); n=[x for x in d["names"] if x["name"]=="step"][0]
s=sorted(n["slowest"], key=lambda i: i["start_ns"]); print(1 + s.index(n["slowest"][0]))' "$WORK/rj.json")
eval "es=\$e$slow_nth"
json_check range_slow "$WORK/range_slow.out" \
    "d['sides'][0]['what'].startswith('range \"step\" #$slow_nth (slowest) of')" \
    "d['sides'][0]['records'] == $es and d['sides'][1]['records'] == $eo" \
    'd["sides"][1]["what"].endswith("(open: to the session\x27s last time)")'
# the open range's side: marked open, its to_ns the session's last time
# (sessions --json end_ns), not 0; the closed side is not marked
"$CUPTOP" sessions --store "$N/store" --json >"$WORK/nv_sessions.json"
nv_end=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["end_ns"])' "$WORK/nv_sessions.json")
json_check range_open "$WORK/range_slow.out" \
    'd["sides"][1]["open"] is True and d["sides"][0]["open"] is False' \
    "d['sides'][1]['to_ns'] == $nv_end and d['sides'][1]['to_ns'] > d['sides'][1]['from_ns'] > 0" \
    'd["sides"][0]["to_ns"] < d["sides"][1]["from_ns"]'
run 0 range_text "$CUPTOP" compare --store "$N/store" "$nv/range:step#3" "$nv/range:step#3"
grep -q "^A: range \"step\" #3 of $nv (COMPLETE)$" "$WORK/range_text.out" || fail "range_text: label"
usage_error r_noname "$CUPTOP" compare --store "$N/store" "$nv/range:nosuch" "$nv"
grep -q 'no NVTX range named "nosuch"' "$WORK/r_noname.err" || fail "r_noname: $(cat "$WORK/r_noname.err")"
usage_error r_nth "$CUPTOP" compare --store "$N/store" "$nv/range:step#4" "$nv"
grep -q 'has 3 instance(s), not 4' "$WORK/r_nth.err" || fail "r_nth: $(cat "$WORK/r_nth.err")"
usage_error r_bad "$CUPTOP" compare --store "$N/store" "$nv/range:step#fast" "$nv"

# misuse: one line, exit 2
usage_error u_one "$CUPTOP" compare --store "$S" "$a"
usage_error u_three "$CUPTOP" compare --store "$S" "$a" "$a" "$a"
usage_error u_epoch0 "$CUPTOP" compare --store "$S" "$a@0" "$a"
usage_error u_range "$CUPTOP" compare --store "$S" "$a/range:step#1" "$a"
usage_error u_top "$CUPTOP" compare --store "$S" --top -1 "$a" "$a"
usage_error u_opt "$CUPTOP" compare --store "$S" --bogus "$a" "$a"
usage_error u_nosess "$CUPTOP" compare --store "$S" nosuch "$a"
usage_error u_noepoch "$CUPTOP" compare --store "$S" "$a@99" "$a"
usage_error u_nomark "$CUPTOP" compare --store "$S" "$a:nomark" "$a"
usage_error b_nocmd "$CUPTOP" baseline --store "$S"
usage_error b_runs "$CUPTOP" baseline --store "$S" --runs 0 -- true
usage_error b_narrow "$CUPTOP" baseline --store "$S" --narrow bogus -- true

# baseline: clean is a usable baseline; drops (a pool of 4 small buffers)
# lose at full collection only: record pressure
B1=$WORK/bl1
run 0 bl_clean "$CUPTOP" baseline --store "$B1" --runs 1 -- "$b/cuptop-simapp" --scenario clean --seconds 1
grep -q '^conclusion (usable_baseline): no loss anywhere' "$WORK/bl_clean.out" ||
    fail "bl_clean: $(cat "$WORK/bl_clean.out")"
[ "$(ls "$B1" | wc -l)" = 3 ] || fail "bl_clean: $(ls "$B1" | wc -l) sessions, want 3"
"$CUPTOP" sessions --store "$B1" --json >"$WORK/bl_sessions.json"
json_check bl_label "$WORK/bl_sessions.json" \
    'len(set(s["label"] for s in d)) == 1 and d[0]["label"].startswith("baseline-cuptop-simapp-")'
# --json: the same table and conclusion, one JSON object
B3=$WORK/bl3
run 0 bl_json "$CUPTOP" baseline --store "$B3" --json --runs 1 -- "$b/cuptop-simapp" --scenario clean --seconds 1
python3 -c 'import json,sys; json.load(sys.stdin)' <"$WORK/bl_json.out" || fail "bl_json: not JSON"
ls "$B3" >"$WORK/bl3.ls"
json_check bl_json "$WORK/bl_json.out" 'd["conclusion"]["id"] == "usable_baseline"' \
    'd["conclusion"]["text"].startswith("no loss anywhere")' \
    '[c["config"] for c in d["configs"]] == ["off", "narrowed", "full"]' \
    'all(c["runs"] == 1 and c["sessions"] == 1 and c["lossy"] == 0 and c["lost_records"] == 0 for c in d["configs"])' \
    'd["configs"][0]["ratio_to_off"] == 1' \
    "sorted(c['session_ids'][0] for c in d['configs']) == open('$WORK/bl3.ls').read().split()"
# issue 27 item 10: a workload that prints to stdout leaves --json
# parseable (its output goes to stderr); one warm-up run without the agent,
# not counted (no session); the order rotates so that no configuration
# always runs first; each configuration says whether its effect is within
# the spread, and a note says so
B4=$WORK/bl4
run 0 bl_rot "$CUPTOP" baseline --store "$B4" --json --runs 3 -- sh -c \
    "echo workload-stdout; exec '$b/cuptop-simapp' --scenario clean --seconds 0.2"
python3 -c 'import json,sys; json.load(sys.stdin)' <"$WORK/bl_rot.out" || fail "bl_rot: not JSON: $(head -c 300 "$WORK/bl_rot.out")"
[ "$(grep -c workload-stdout "$WORK/bl_rot.err")" = 10 ] ||
    fail "bl_rot: the workload's 10 lines (warm-up + 9 runs) are not on stderr"
[ "$(ls "$B4" | wc -l)" = 9 ] || fail "bl_rot: $(ls "$B4" | wc -l) sessions, want 9 (the warm-up stores none)"
json_check bl_rot "$WORK/bl_rot.out" 'd["warmup"]["counted"] is False and d["warmup"]["status"] == 0' \
    'd["order"] == [["off", "narrowed", "full"], ["narrowed", "full", "off"], ["full", "off", "narrowed"]]' \
    'all(c["within_spread"] == (c["config"] != "off" and abs(c["ratio_to_off"] - 1) < max(c["spread"], d["configs"][0]["spread"])) for c in d["configs"])' \
    'len(d["notes"]) == sum(c["within_spread"] for c in d["configs"])' \
    'all("within the noise" in n for n in d["notes"])'
run 0 bl_one "$CUPTOP" baseline --store "$WORK/bl5" --runs 1 -- "$b/cuptop-simapp" --scenario clean --seconds 0.2
grep -q '^warm-up: 1 run without the agent, .*not counted$' "$WORK/bl_one.out" || fail "bl_one: no warm-up line"
grep -q '^note: one run of each configuration: the spread.* is unknown' "$WORK/bl_one.out" ||
    fail "bl_one: one run does not say the spread is unknown"
B2=$WORK/bl2
run 1 bl_drops env CUPTOP_POOL=4 CUPTOP_BUFFER_SIZE=256K "$CUPTOP" baseline --store "$B2" --runs 1 \
    --narrow memcpy,memset,sync -- "$b/cuptop-simapp" --scenario drops --seconds 2
grep -q '^conclusion (record_pressure): loss only at full collection and none narrowed: the loss is caused by record pressure' \
    "$WORK/bl_drops.out" || fail "bl_drops: $(cat "$WORK/bl_drops.out")"
grep -q '^off .* 0/1 ' "$WORK/bl_drops.out" || fail "bl_drops: off row"
finish
