#!/bin/sh
# sim_api.sh - the API record policy (--api all|gpu|none, --api-include,
# --api-exclude) over the simulated CUPTI with a framework's API mix
# (CUPTOPSIM_API_MIX=5: device queries, capture checks, attribute and error
# reads before every launch).  Per call name, the records stored must be
# exactly what the policy asks, against the simulator's count of the calls
# the application made (truth api_calls):
#  all      every call stored
#  gpu      (the default) launches, copies, memsets, syncs stored, the rest
#           muted; every GPU record keeps its launching call: the chrome
#           export has one launch flow per kernel, copy and memset
#  none     no API record at all, and a note per API kind on saying so
#  globs    gpu + include cudaGetDevice,cu*Attribute, exclude cudaMemset*
#  control  all, then `cuptop control --api gpu`: a new epoch, and only
#           the calls before it have their noise stored
#  old      a CUPTI without the per-call functions (no_api_filter, API
#           version 19): every call stored, said once in the notes
#  misuse   bad --api values and glob lists: exit 2, one line
# Exits 77 without the simulator or python3.
SIM_LIB_NAME=api
. "${top_srcdir:?}/tests/agent/sim_lib.sh"
export CUPTOPSIM_API_MIX=5
NOISE="cudaGetDevice cudaStreamIsCapturing cuCtxGetCurrent cuDeviceGetAttribute cudaGetLastError \
cudaDeviceGetAttribute cuStreamIsCapturing cudaPeekAtLastError"
GPU="cudaLaunchKernel cuLaunchKernel cudaMemcpyAsync cuMemcpyHtoDAsync_v2 cudaMemsetAsync \
cuMemsetD8Async cudaStreamSynchronize cuStreamSynchronize cudaEventRecord cuEventRecord"

# run NAME [VAR=VALUE...]: the agent over simdrive (emit:N of every kind),
# then per call name "stored calls" lines in NAME/names
run() {
    d=$tmp/$1; shift
    mkdir -p "$d"
    env CUPTOP_STORE="$d/store" CUPTOPSIM_TRUTH="$d/sim.truth" "$@" \
        "$drive" "$sim" "$agent" "$d/truth" emit:${EMIT:-200} return >"$d/out" 2>"$d/err" ||
        { echo "FAIL $d: the application failed"; fail=1; }
    names "$d"
}
names() { # DIR: export, then "NAME STORED CALLS" per call the app made
    id=$("$ctl" sessions "$1/store" | head -1)
    "$b/cuptop" export --store "$1/store" "$id" --from start --to end --format jsonl \
        -o "$1/t.jsonl" || { echo "FAIL $1: export"; fail=1; }
    python3 - "$1/t.jsonl" "$1/sim.truth" >"$1/names" <<'PY'
import collections, json, re, sys
stored = collections.Counter()
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("kind") in ("runtime", "driver"):
        stored[r["name"]] += 1
calls = collections.Counter()
for line in open(sys.argv[2]):
    f = line.split()
    if f and f[0] == "api_calls":
        calls[re.sub(r"_v\d{4,5}$", "", f[2])] += int(f[3])
for n in sorted(set(stored) | set(calls)):
    print(n, stored[n], calls[n])
PY
}
stored() { awk -v n="$2" '$1 == n { print $2 }' "$1/names"; }
calls() { awk -v n="$2" '$1 == n { print $3 }' "$1/names"; }
expect() { # DIR LABEL "recorded names" (every other name: 0 stored)
    for n in $(awk '{print $1}' "$1/names"); do
        want=0
        case " $3 " in *" $n "*) want=$(calls "$1" "$n") ;; esac
        check "$2: $n stored" "$(stored "$1" "$n")" "$want"
    done
    [ "$(calls "$1" cudaGetDevice)" -gt 0 ] ||
        { echo "FAIL $2: the application made no noise calls"; fail=1; }
}
report() { # DIR
    id=$("$ctl" sessions "$1/store" | head -1)
    "$b/cuptop" report --store "$1/store" "$id" >"$1/report" 2>&1
}

run all CUPTOP_API=all
expect "$tmp/all" all "$NOISE $GPU"
report "$tmp/all"
grep -q "epoch 1: API records all: every call recorded" "$tmp/all/report" ||
    { echo "FAIL all: the report does not show the policy"; fail=1; }

run gpu
expect "$tmp/gpu" gpu "$GPU"
d=$tmp/gpu
"$ctl" dump "$d/store" >"$d/dump"
check "gpu: config.api" "$(val "$d/dump" meta.config.api)" gpu
report "$d"
grep -q "epoch 1: API records gpu: [1-9][0-9]* runtime and [1-9][0-9]* driver call ids muted (not recorded, not loss)" "$d/report" ||
    { echo "FAIL gpu: the report does not show the policy"; fail=1; }
"$b/cuptop" check --store "$d/store" "$("$ctl" sessions "$d/store" | head -1)" >/dev/null
check "gpu: muted calls are no loss (cuptop check)" "$?" 0
id=$("$ctl" sessions "$d/store" | head -1)
"$b/cuptop" export --store "$d/store" "$id" --from start --to end --format chrome -o "$d/t.json"
python3 - "$d/t.jsonl" "$d/t.json" >"$d/flows" <<'PY'
import json, sys
gpu, api = set(), set()
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("kind") in ("kernel", "memcpy", "memset"):
        gpu.add(r["correlation"])
    elif r.get("kind") in ("runtime", "driver"):
        api.add(r["correlation"])
ev = json.load(open(sys.argv[2]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
fin = {e["id"] for e in ev if e.get("ph") == "f" and e.get("cat") == "launch"}
print(len(gpu), len(gpu - api), len(fin))
PY
set -- $(cat "$d/flows")
check "gpu: GPU records (kernel+memcpy+memset of 200 ops)" "$1" 600
check "gpu: GPU records without their launching call" "$2" 0
check "gpu: chrome launch->kernel flows = GPU records" "$3" "$1"
grep -q '^meta.api_muted.1=runtime [0-9].* driver [0-9]' "$d/dump" ||
    { echo "FAIL gpu: no meta api_muted.1 with the muted call ids"; fail=1; }

run none CUPTOP_API=none
expect "$tmp/none" none ""
# runtime and driver on, every call id muted: said in a note, never silent
"$ctl" dump "$tmp/none/store" "$("$ctl" sessions "$tmp/none/store" | head -1)" >"$tmp/none/dump"
for dom in runtime driver; do
    check "none: a note says every $dom call id is muted" \
        "$(grep -c "^note\.[0-9]*=1 $dom records are on but the API record policy none mutes every $dom call id" "$tmp/none/dump")" 1
done

run globs CUPTOP_API_INCLUDE='cudaGetDevice,cu*Attribute' CUPTOP_API_EXCLUDE='cudaMemset*'
expect "$tmp/globs" globs "$(echo "$GPU cudaGetDevice cuDeviceGetAttribute cudaDeviceGetAttribute" |
    sed 's/cudaMemsetAsync//')"

# ---- runtime change: all, then gpu by control (a new epoch) -------------
d=$tmp/control
mkdir -p "$d"
CUPTOP_STORE=$d/store CUPTOPSIM_TRUTH=$d/sim.truth CUPTOP_API=all \
    timeout 300 "$drive" "$sim" "$agent" "$d/truth" seq:ctx,emit:200,mark:p1,wait:go,emit:300 return \
    >"$d/out" 2>"$d/err" &
pid=$!
id=$("$ctl" wait-session "$d/store" 1 30)
i=0; while [ ! -e "$d/p1" ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i + 1)); done
i=0   # the agent reports its first health row within a second
until "$b/cuptop" control --store "$d/store" "$id" --api gpu --wait 60 >"$d/ctl" 2>&1; do
    grep -q "no health row yet" "$d/ctl" && [ $i -lt 100 ] ||
        { echo "FAIL control: cuptop control --api gpu: $(cat "$d/ctl")"; fail=1; break; }
    sleep 0.1; i=$((i + 1))
done
grep -q "API records gpu" "$d/ctl" || { echo "FAIL control: the request is not echoed"; fail=1; }
touch "$d/go"
wait "$pid"; pid=
names "$d"
# 200 ops of each of 4 GPU kinds before the change, 5 noise calls each,
# round robin over 8 names: 500 of each noise name stored, none after
for n in cudaGetDevice cudaStreamIsCapturing cuDeviceGetAttribute cuCtxGetCurrent; do
    check "control: $n stored before the change only" "$(stored "$d" "$n")" 500
done
# the standalone runtime and driver operations record events: kept by gpu
check "control: cudaEventRecord stored in both epochs" "$(stored "$d" cudaEventRecord)" 500
check "control: cudaLaunchKernel stored in both epochs" "$(stored "$d" cudaLaunchKernel)" 500
report "$d"
grep -q "epoch 1: API records all: every call recorded" "$d/report" &&
grep -q "epoch 2: API records gpu: [1-9]" "$d/report" ||
    { echo "FAIL control: the report does not show both epochs' policies"; fail=1; }

# ---- runtime change from one filter to another: gpu, then gpu plus an
# include by control.  Disabling the kind whole overrides every call id set
# before (cupti_activity.h): the call ids gpu records must be set again, not
# only the one the include adds (they were lost, truth matrix: a forked
# child's runtime and driver kinds on and no API record)
d=$tmp/control2
mkdir -p "$d"
CUPTOP_STORE=$d/store CUPTOPSIM_TRUTH=$d/sim.truth \
    timeout 300 "$drive" "$sim" "$agent" "$d/truth" seq:ctx,emit:200,mark:p1,wait:go,emit:300 return \
    >"$d/out" 2>"$d/err" &
pid=$!
id=$("$ctl" wait-session "$d/store" 1 30)
i=0; while [ ! -e "$d/p1" ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i + 1)); done
i=0
until "$b/cuptop" control --store "$d/store" "$id" --api gpu --api-include cudaGetDevice \
    --wait 60 >"$d/ctl" 2>&1; do
    grep -q "no health row yet" "$d/ctl" && [ $i -lt 100 ] ||
        { echo "FAIL control2: cuptop control --api-include: $(cat "$d/ctl")"; fail=1; break; }
    sleep 0.1; i=$((i + 1))
done
touch "$d/go"
wait "$pid"; pid=
names "$d"
# 300 ops of each of 4 GPU kinds after the change, 5 noise calls each,
# round robin over 8 names: 750 cudaGetDevice, all after
check "control2: cudaGetDevice stored after the change only" "$(stored "$d" cudaGetDevice)" 750
check "control2: cudaLaunchKernel stored in both epochs" "$(stored "$d" cudaLaunchKernel)" 500
check "control2: cuLaunchKernel stored in both epochs" "$(stored "$d" cuLaunchKernel)" 500
check "control2: cudaEventRecord stored in both epochs" "$(stored "$d" cudaEventRecord)" 500

# ---- a CUPTI without the per-call functions ------------------------------
for how in "CUPTOPSIM_FAULTS=no_api_filter=1" "CUPTOPSIM_API_VERSION=19"; do
    o=old-${how%%=*}
    run "$o" "$how"
    expect "$tmp/$o" "old ($how)" "$NOISE $GPU"
    "$ctl" dump "$tmp/$o/store" >"$tmp/$o/dump"
    check "old ($how): one note says every call is recorded" \
        "$(grep -c "so every .*API call is recorded (as with --api all)" "$tmp/$o/dump")" 1
    report "$tmp/$o"
    grep -q "epoch 1: API records gpu asked, but this CUPTI cannot mute" "$tmp/$o/report" ||
        { echo "FAIL old ($how): the report does not say the policy could not apply"; fail=1; }
done

# ---- cuptop run --api none, end to end -----------------------------------
d=$tmp/run
mkdir -p "$d"
CUPTOPSIM_TRUTH=$d/sim.truth "$b/cuptop" run --store "$d/store" --api none --api-include 'cuLaunch*' \
    -- "$b/cuptop-simapp" --ops 100 --seconds 20 >"$d/out" 2>&1 ||
    { echo "FAIL run: cuptop run: $(cat "$d/out")"; fail=1; }
names "$d"
check "run --api none --api-include cuLaunch*: cuLaunchKernel stored" \
    "$(stored "$d" cuLaunchKernel)" "$(calls "$d" cuLaunchKernel)"
check "run --api none --api-include cuLaunch*: API records stored" \
    "$(awk '{ s += $2 } END { print s }' "$d/names")" "$(calls "$d" cuLaunchKernel)"

# ---- misuse -------------------------------------------------------------
for bad in "--api some -- true" "--api -- true" "--api-include a,,b -- true" \
           "--api-include cuda(x) -- true" "--api-exclude [cu -- true" \
           "--api-include $(printf 'x%.0s' $(seq 100)) -- true"; do
    "$b/cuptop" run $bad >/dev/null 2>"$tmp/err"
    check "misuse run '$bad': exit 2, one line" "$?/$(wc -l <"$tmp/err" | tr -d ' ')" "2/1"
done
for bad in "--api maybe" "--api-include a;b" "--api-exclude ,"; do
    "$b/cuptop" control --store "$tmp/gpu/store" "$id" $bad >/dev/null 2>"$tmp/err"
    check "misuse control '$bad': exit 2, one line" "$?/$(wc -l <"$tmp/err" | tr -d ' ')" "2/1"
done
exit $fail
