#!/bin/sh
# discard_shared.sh - issue 13 item 3: the shared last-resort discard buffer
# (CUPTI API < 27, every pooled discard buffer out) is written by CUPTI from
# several threads while it completes; its bytes are never parsed as records.
# Scenario slow-consumer, as `cuptop demo --scenario slow-consumer` runs it
# (pool 4, queue 1, 64 KiB buffers, API 26), 5 s.  Before the fix, records
# half-written in it showed up as a phantom device (5, 4) and as GPU records
# without a device (ffff), counted as exact.
# Checked: no loss row names a device the simulator does not have;
# GPU kinds are never counted without their device, runtime and driver
# records never on one; exact counts never exceed the truth (stored + declined <=
# delivered, per kind); the shared buffer's records appear once, as an estimate
# (loss row estimate, kind all, device none), near what is unaccounted for
# by the exact counts; `cuptop check` and `cuptop report` say "estimated".
. "${top_srcdir:?}/tests/faults/lib.sh"
need_sim
need_tools python3

sim_run shared CUPTOP_POOL=4 CUPTOP_QUEUE=1 CUPTOP_BUFFER_SIZE=64K CUPTOP_STOP_TIMEOUT_MS=3000 -- \
    --scenario slow-consumer --seconds 5 --api-version 26
check "slow-consumer: the application exits 0" "$SIM_RC" 0
st=$SIM_DIR/store
id=$(sessions "$st" | head -1)
[ -n "$id" ] || { fail "no session"; finish; }
"$CTL" dump "$st" "$id" >"$WORK/d"
truth_kv "$SIM_DIR/truth" >"$WORK/t"

# loss rows: loss.CLASS.KIND.DEV=N (exact), estimate.CLASS.KIND.DEV=N
bad=$(grep -E '^loss\.[a-z_]+\.[a-z]+\.' "$WORK/d" | grep -vE '\.(0|none)=' || true)
check "no loss row on a device the simulator does not have" "$bad" ""
bad=$(grep -E '^loss\.[a-z_]+\.(kernel|memcpy|memset)\.none=' "$WORK/d" || true)
check "GPU records (kernel, memcpy, memset) are never counted without their device" "$bad" ""
bad=$(grep -E '^loss\.[a-z_]+\.(runtime|driver)\.[0-9]+=' "$WORK/d" || true)
check "API records (runtime, driver) are never counted on a device" "$bad" ""
bad=$(grep -E '^loss\.[a-z_]+\.all\.' "$WORK/d" | grep -v '^loss\.cupti_dropped\.' || true)
check "no exact declined count without a kind" "$bad" ""

est=$(val "$WORK/d" estimate.declined.all.none)
check_ge "the shared buffer's records are counted as an estimate (estimate.declined.all.none)" \
    "${est:-0}" 1
python3 - "$WORK/d" "$WORK/t" "${est:-0}" >"$WORK/acct" <<'PY'
import sys
def load(p):
    d = {}
    for line in open(p, errors="replace"):
        if "=" in line:
            k, v = line.rstrip("\n").split("=", 1)
            d.setdefault(k, v)
    return d
dump, truth, est = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
def n(d, k):
    try:
        return int(d.get(k, "0"))
    except ValueError:
        return 0
kinds = ["kernel", "memcpy", "memset", "runtime", "driver", "sync", "overhead", "marker"]
over = []
unaccounted = 0
for k in kinds:   # one simulated device: its truth is all of the kind
    exact = sum(n(dump, f"records.{k}.{dv}") + n(dump, f"loss.declined.{k}.{dv}")
                for dv in ("0", "none"))
    deliv = n(truth, f"delivered.{k}.0")
    if exact > deliv:
        over.append(f"{k}: {exact} > {deliv}")
    unaccounted += deliv - exact
print("over=" + ";".join(over))
print(f"unaccounted={unaccounted}")
print(f"ratio={est / unaccounted if unaccounted else 0:.3f}")
PY
check "exact counts never exceed what the simulator delivered" "$(val "$WORK/acct" over)" ""
r=$(val "$WORK/acct" ratio)
if python3 -c "import sys; sys.exit(0 if 0.75 <= float('$r') <= 1.25 else 1)"; then
    pass "the estimate is near what the exact counts leave unaccounted (ratio $r, $(val "$WORK/acct" unaccounted) records)"
else
    fail "estimate $est vs unaccounted $(val "$WORK/acct" unaccounted): ratio $r"
fi

"$CUPTOP" check --store "$st" "$id" >"$WORK/check" 2>&1
if grep -q "declined: .* more (estimated" "$WORK/check"; then
    pass "cuptop check shows the estimate as one"
else
    fail "cuptop check does not show the estimate: $(cat "$WORK/check")"
fi
"$CUPTOP" report --store "$st" "$id" >"$WORK/report" 2>&1
if grep -q "~  more, estimated" "$WORK/report"; then
    pass "cuptop report shows the estimate as one"
else
    fail "cuptop report does not show the estimate"
fi
devs=$(sed -n '/^Per device/,/^$/p' "$WORK/report" | awk 'NR > 2 && NF { print $1 }' | tr '\n' ' ')
check "cuptop report lists only device 0" "$devs" "0 "
finish
