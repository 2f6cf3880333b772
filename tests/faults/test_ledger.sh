#!/bin/sh
# test_ledger.sh - fault row 21: the launch ledger (--ledger, issue 31).
# Every kernel, copy and set the simulated application launches is
# expected until its record arrives; checked against the simulator's truth
# (tests/agent/check_truth.py's ledger checks: expected == produced per
# kind, per stream missing == produced - stored, unrecorded == silent).
#  - clean: 0 missing, COMPLETE;
#  - a CUPTI that loses records silently (fault silent=N): without the
#    ledger no class can see it (the reason the ledger exists); with it the
#    loss is `unrecorded`, exact per kind and device, on the right streams,
#    INCOMPLETE, named by check and report;
#  - silent loss under CUPTI drops and a starved pool: the other classes
#    explain what they counted, unrecorded is a lower bound that holds;
#  - kinds switched off and on while launches run (control requests): a
#    launch the switch overlaps is taken back (ambiguous), never missing;
#  - `cuptop run --ledger` is what sets CUPTOP_LEDGER.
. "${top_srcdir:?}/tests/faults/lib.sh"
need_sim
need_tools python3

ledger_field() {   # DUMP FIELD: a field of meta.ledger
    sed -n 's/^meta\.ledger=//p' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# ---- clean ----------------------------------------------------------------
sim_run clean CUPTOP_LEDGER=1 -- --seconds 1 --streams 4 --exit return
check "clean: the application's exit status" "$SIM_RC" 0
st=$SIM_DIR/store
id=$(sessions "$st" | head -1)
"$CTL" dump "$st" "$id" >"$WORK/clean.d"
check_ge "clean: kernels expected" "$(ledger_field "$WORK/clean.d" kernel.expected)" 1000
check "clean: nothing missing" "$(ledger_field "$WORK/clean.d" kernel.missing)" 0
check "clean: verdict" "$(verdict "$st" "$id")" "0 ended COMPLETE"
truth_check clean "$st" "$id" "$SIM_DIR/truth" --exit ctx_destroy

# ---- silent loss: invisible without the ledger, exact with it --------------
sim_run silent-off -- --seconds 1 --streams 4 --exit return --faults silent=97
st=$SIM_DIR/store
id=$(sessions "$st" | head -1)
check "silent, no ledger: no class can see the loss (verdict)" "$(verdict "$st" "$id")" \
    "0 ended COMPLETE"

sim_run silent CUPTOP_LEDGER=1 -- --seconds 1 --streams 4 --exit return --faults silent=97
st=$SIM_DIR/store
id=$(sessions "$st" | head -1)
"$CTL" dump "$st" "$id" >"$WORK/silent.d"
silent=$(awk '$1 == "silent" && ($3 == "kernel" || $3 == "memcpy" || $3 == "memset") { s += $4 }
              END { print s + 0 }' "$SIM_DIR/truth")
check_ge "silent: the simulator lost GPU records silently" "$silent" 1
check "silent: unrecorded == the records lost silently" "$(val "$WORK/silent.d" loss.unrecorded)" "$silent"
check "silent: verdict" "$(verdict "$st" "$id")" "1 ended INCOMPLETE"
grep -q 'unrecorded' "$WORK/verdict.out" ||
    fail "silent: check does not name unrecorded: $(cat "$WORK/verdict.out")"
check "silent: check names the 4 streams with holes" \
    "$(grep -c '^  missing: stream [0-9]* on device 0: [0-9]* kernel' "$WORK/verdict.out")" 4
truth_check silent "$st" "$id" "$SIM_DIR/truth" --exit ctx_destroy --expect unrecorded
"$CUPTOP" report --store "$st" "$id" >"$WORK/silent.report" 2>&1
persec=$(awk '/^  launched in [0-9TZ:-]*: / { for (i = 4; i <= NF; i++) if ($(i + 1) ~ /^(kernel|memcpy|memset),?$/) s += $i }
              END { print s + 0 }' "$WORK/silent.report")
check "silent: report's missing records per launch second add up to the missing" "$persec" "$silent"
if grep -q '^  stream [0-9]* on device 0: [0-9,]* kernel' "$WORK/silent.report"; then
    pass "silent: report names the streams with missing records"
else
    fail "silent: report has no per-stream holes: $(grep -A8 -i ledger "$WORK/silent.report")"
fi

# the chrome trace marks every hole: a "lost: KIND" instant on the stream's
# track at its launch, and one on the launching thread, per stream equal to
# the ledger's holes
"$CUPTOP" export --store "$st" --format chrome --from start --to end "$id" \
    -o "$WORK/silent.json" >"$WORK/export.out" 2>&1 || fail "silent: export: $(cat "$WORK/export.out")"
python3 - "$WORK/silent.json" "$WORK/silent.d" >"$WORK/lost.out" 2>&1 <<'PY' && pass "silent: the chrome trace marks every missing record on its stream and thread" || fail "silent: chrome lost markers: $(cat "$WORK/lost.out")"
import json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
dump = dict(l.rstrip("\n").split("=", 1) for l in open(sys.argv[2]) if "=" in l)
want = {}
for key, v in dump.items():
    if key.startswith("meta.ledger.stream."):
        f = dict(w.split("=", 1) for w in v.split())
        for k in ("kernel", "memcpy", "memset"):
            if int(f[k]):
                want[(int(f["stream"]), k)] = int(f[k])
got, thread = {}, 0
for e in ev:
    if e.get("cat") != "lost":
        continue
    k = e["name"].split()[1]
    if e["name"].endswith("(launched here)"):
        thread += 1
        assert e["tid"] == e["args"]["launching thread"], e
    else:
        assert e["pid"] == 1000000000 and e["tid"] == e["args"]["stream"], e
        got[(e["tid"], k)] = got.get((e["tid"], k), 0) + e["args"]["records missing"]
assert got == want, (got, want)
assert thread == sum(1 for e in ev if e.get("cat") == "lost") // 2, thread
print("ok", sum(want.values()))
PY

# the Perfetto trace: one "lost: ..." instant per launch with records
# missing, on the loss group's track of its stream (tests/perfetto/pftrace.py
# reads it as trace processor does)
"$CUPTOP" export --store "$st" --format perfetto --from start --to end "$id" \
    -o "$WORK/silent.pftrace" >"$WORK/export.out" 2>&1 || fail "silent: perfetto export: $(cat "$WORK/export.out")"
python3 "$top_srcdir/tests/perfetto/pftrace.py" "$WORK/silent.pftrace" >"$WORK/silent.pf.json" 2>&1 ||
    fail "silent: pftrace.py: $(tail -3 "$WORK/silent.pf.json")"
python3 - "$WORK/silent.pf.json" "$WORK/silent.d" >"$WORK/pflost.out" 2>&1 <<'PY' && pass "silent: the Perfetto trace marks every launch with records missing on its stream's loss track" || fail "silent: perfetto lost markers: $(cat "$WORK/pflost.out")"
import json, sys
d = json.load(open(sys.argv[1]))
dump = dict(l.rstrip("\n").split("=", 1) for l in open(sys.argv[2]) if "=" in l)
want = {}
for key, v in dump.items():
    if key.startswith("meta.ledger.stream."):
        f = dict(w.split("=", 1) for w in v.split())
        want[f"lost on stream {f['stream']} (GPU {f['device']})"] = int(f["launches"])
tracks = {int(k): v for k, v in d["tracks"].items()}
got = {}
for s in d["slices"]:
    if s["name"].startswith("lost: "):
        name = tracks[s["track"]]["name"]
        got[name] = got.get(name, 0) + 1
        assert s["dur"] == 0 and s["args"]["correlation"] > 0, s
assert got == want, (got, want)
print("ok", sum(got.values()))
PY

# compare: the ledger's missing records among the launches of each side
"$CUPTOP" compare --store "$st" --json "$id" "$id" >"$WORK/compare.json" 2>"$WORK/compare.err"
got=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["sides"][0]["ledger_missing"]["kernel"])' \
    "$WORK/compare.json" 2>&1)
check "silent: compare --json gives the ledger's missing kernels" "$got" \
    "$(ledger_field "$WORK/silent.d" kernel.missing)"

# the exporter: the ledger's families, equal to the session's ledger
"$CUPTOP" exporter --textfile "$WORK/silent.prom" --once --store "$st" >"$WORK/exp.out" 2>&1 ||
    fail "silent: exporter --once: $(cat "$WORK/exp.out")"
for k in kernel memcpy memset; do
    got=$(awk -v k="kind=\"$k\"" '/^cuptop_records_missing_total\{/ && index($0, k) { s += $NF }
                                    END { print s + 0 }' "$WORK/silent.prom")
    check "silent: exporter cuptop_records_missing_total{kind=$k} == the ledger's missing" \
        "$got" "$(ledger_field "$WORK/silent.d" "$k.missing")"
done
if command -v promtool >/dev/null 2>&1; then
    promtool check metrics <"$WORK/silent.prom" >"$WORK/promtool.out" 2>&1 &&
        pass "silent: promtool accepts the exposition" ||
        fail "silent: promtool: $(head -5 "$WORK/promtool.out")"
else
    skip_part "promtool (Debian prometheus) not installed: the exposition not checked by it"
fi

# ---- silent loss under drops and a starved pool: a bound ------------------
sim_run drops CUPTOP_LEDGER=1 CUPTOP_POOL=2 CUPTOP_BUFFER_SIZE=64K -- --seconds 1 --streams 4 \
    --exit return --scenario drops --faults silent=53
st=$SIM_DIR/store
id=$(sessions "$st" | head -1)
truth_check drops "$st" "$id" "$SIM_DIR/truth" --exit ctx_destroy \
    --allow cupti_dropped,declined,queue_overflow,zero_ts,tail,unrecorded

# ---- kinds switched while launches run -------------------------------------
sim_start switch CUPTOP_LEDGER=1 -- --seconds 3 --streams 4 --exit return
st=$SIM_DIR/store
"$CTL" wait-session "$st" 1 60 >/dev/null 2>&1 || fail "switch: no session within 60 s"
id=$(sessions "$st" | head -1)
sleep 0.5
for k in kernel,memcpy memset,kernel kernel,memcpy,memset,runtime,driver,overhead; do
    "$CUPTOP" control --store "$st" "$id" --kinds "$k" --wait 10 >>"$WORK/switch.ctl" 2>&1 ||
        fail "switch: control --kinds $k: $(tail -2 "$WORK/switch.ctl")"
    sleep 0.3
done
wait_pid "$SIM_PID" 300
check "switch: the application's exit status" "$WAIT_RC" 0
"$CTL" dump "$st" "$id" >"$WORK/switch.d"
check "switch: nothing called unrecorded" "$(val "$WORK/switch.d" loss.unrecorded)" 0
check "switch: verdict" "$(verdict "$st" "$id")" "0 ended COMPLETE"
truth_check switch "$st" "$id" "$SIM_DIR/truth" --exit ctx_destroy

# ---- cuptop run --ledger ---------------------------------------------------
mkdir -p "$WORK/run"
CUPTOP_CUPTI_LIBRARY="$SIMLIB" "$CUPTOP" run --store "$WORK/run/store" --ledger -- \
    "$SIMAPP" --seconds 0.3 --faults silent=31 >"$WORK/run/out" 2>&1
check "run --ledger: exit status" "$?" 0
id=$(sessions "$WORK/run/store" | head -1)
"$CTL" dump "$WORK/run/store" "$id" >"$WORK/run.d"
grep -q '^meta.config=.*;ledger=1;' "$WORK/run.d" && pass "run --ledger: the session's configuration says ledger=1" ||
    fail "run --ledger: config: $(grep '^meta.config=' "$WORK/run.d")"
check_ge "run --ledger: unrecorded counted" "$(val "$WORK/run.d" loss.unrecorded)" 1

# count-only keeps the ledger: completeness watched without storing records
CUPTOP_CUPTI_LIBRARY="$SIMLIB" "$CUPTOP" run --store "$WORK/run/count" --ledger --count-only -- \
    "$SIMAPP" --seconds 0.3 --faults silent=31 --truth "$WORK/run/count.truth" >"$WORK/run/count.out" 2>&1
check "run --ledger --count-only: exit status" "$?" 0
id=$(sessions "$WORK/run/count" | head -1)
"$CTL" dump "$WORK/run/count" "$id" >"$WORK/count.d"
check "run --ledger --count-only: nothing stored" "$(val "$WORK/count.d" records.total)" 0
silent=$(awk '$1 == "silent" && ($3 == "kernel" || $3 == "memcpy" || $3 == "memset") { s += $4 }
              END { print s + 0 }' "$WORK/run/count.truth")
check "run --ledger --count-only: unrecorded == the GPU records lost silently" \
    "$(val "$WORK/count.d" loss.unrecorded)" "$silent"

finish
