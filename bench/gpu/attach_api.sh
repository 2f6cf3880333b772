#!/bin/bash
# bench/gpu/attach_api.sh BUILD_DIR - which API records a PyTorch loop yields
# (issue 27 item 1 on the H200): under cuptop run, and after cuptop attach
# with the gpu policy and with --api all.  Prints each session's API and
# kernel record counts, its kinds and notes.  Results: $OUT/attach_api.md.
set -u
B=$(cd "${1:?usage: attach_api.sh BUILD_DIR}" && pwd)
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
CTL=$B/agentctl CUPTOP=$B/cuptop
W=$(mktemp -d /tmp/attach-api.XXXXXX)
cat >"$W/loop.py" <<'PY'
import sys, time, torch
x = torch.zeros(1, device="cuda")
torch.cuda.synchronize()
print("ready", flush=True)
t = time.time()
while time.time() - t < float(sys.argv[1]):
    for _ in range(100):
        x.add_(1)
    torch.cuda.synchronize()
print("done", flush=True)
PY
counts() { # STORE: kernel runtime driver of its first session, kinds, notes
    local sid; sid=$("$CTL" sessions "$1" | head -1)
    "$CTL" dump "$1" "$sid" | awk -F= '
        $1 ~ /^records\.kernel\./ { k += $2 } $1 == "records.runtime.none" { r = $2 }
        $1 == "records.driver.none" { d = $2 }
        END { printf "kernel %d runtime %d driver %d\n", k, r, d }'
    "$CUPTOP" sessions --store "$1" --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    print("kinds_enabled", s.get("kinds_enabled"), "verdict", s.get("verdict"), "api", s.get("api_policy"))'
    "$CUPTOP" report --store "$1" "$sid" 2>&1 | grep -iE "note|api|runtime|driver|mute" | head -20
}
{
echo "== run --kinds kernel,runtime,driver"
"$CUPTOP" run --store "$W/run" --kinds kernel,runtime,driver -- python3 "$W/loop.py" 4 >/dev/null 2>"$W/run.err"
counts "$W/run"
echo "== run --dormant, then control --attach (gpu policy)"
"$CUPTOP" run --dormant --store "$W/dor" --kinds kernel,runtime,driver -- python3 "$W/loop.py" 8 >"$W/loop-dor.log" 2>&1 &
for _ in $(seq 300); do grep -q ready "$W/loop-dor.log" && break; sleep 0.1; done
"$CUPTOP" control --store "$W/dor" "$("$CTL" sessions "$W/dor" | head -1)" --attach --wait 30 2>&1 | tail -2
wait
counts "$W/dor"
for api in gpu all; do
    echo "== attach --kinds kernel,runtime,driver --api $api"
    python3 "$W/loop.py" 8 >"$W/loop-$api.log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do grep -q ready "$W/loop-$api.log" && break; sleep 0.1; done
    "$CUPTOP" attach --store "$W/att-$api" --kinds kernel,runtime,driver --api "$api" "$pid" 2>&1 | tail -3
    wait $pid
    counts "$W/att-$api"
done
} 2>&1 | tee "$OUT/attach_api.md"
