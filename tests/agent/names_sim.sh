#!/bin/sh
# names_sim.sh - names and provenance end to end on the simulated CUPTI:
# a run of cuptop-simapp (2 devices, every kind) under cuptop run --label;
# then every runtime and driver record in the jsonl export carries the
# name cuptiGetCallbackName gives for its cbid (checked against the table
# generated from the toolkit's cupti_*_cbid.h, with "_vNNNN" stripped),
# no exported event, jsonl record or report line names a cbid as "cbid N",
# and sessions --json, the report header and the chrome otherData carry the
# versions, the devices and the label, marked simulated.  The API calls of
# one thread (3 mix calls per launch, --api all) are sequential or nested:
# the chrome export has no overlap lane on a thread's track.
set -u
b=${top_builddir:?}
for f in cuptop libcuptop-agent.so libcuptop-simcupti.so cuptop-simapp src/sim/sim_cbid_names.c; do
    [ -e "$b/$f" ] || { echo "missing $b/$f: skipped"; exit 77; }
done
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-names.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: got '$2' want '$3'"; fail=1; fi; }

CUPTOP_CUPTI_LIBRARY=$b/libcuptop-simcupti.so CUPTOPSIM_DEVICES=2 CUPTOPSIM_SEED=3 \
    CUPTOPSIM_API_MIX=3 "$b/cuptop" run --store "$tmp/store" --kinds all --api all --label 'resnet "A"' -- \
    "$b/cuptop-simapp" --seconds 1 --scenario clean >"$tmp/app.out" 2>&1
check "simapp under cuptop run --label" "$?" 0
sid=$(ls "$tmp/store")
"$b/cuptop" export --store "$tmp/store" "$sid" --from start --to end --format jsonl -o "$tmp/t.jsonl"
check "jsonl export" "$?" 0
"$b/cuptop" export --store "$tmp/store" "$sid" --from start --to end --format chrome -o "$tmp/t.json"
check "chrome export" "$?" 0
"$b/cuptop" export --store "$tmp/store" "$sid" --from start --to end --format chrome --mangled \
    -o "$tmp/raw.json"
check "chrome export --mangled" "$?" 0
"$b/cuptop" report --store "$tmp/store" "$sid" >"$tmp/report" 2>&1
"$b/cuptop" sessions --store "$tmp/store" --json >"$tmp/sessions.json"
check "sessions --json" "$?" 0

check "no report line says cbid" "$(grep -c 'cbid' "$tmp/report")" 0
# Kineto's categories, names and args of every record, against the store
python3 "${top_srcdir:?}/tests/cli/check_trace.py" "$tmp/t.json" --store-jsonl "$tmp/t.jsonl"
check "chrome: Kineto's conventions against the store" "$?" 0

python3 - "$b/src/sim/sim_cbid_names.c" "$tmp/t.jsonl" "$tmp/t.json" "$tmp/sessions.json" \
    "$tmp/raw.json" "$tmp/report" <<'PY'
import collections, json, re, sys
gen, jsonl, chrome, sessions, rawchrome, report = sys.argv[1:7]
fails = []
def expect(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        fails.append(what)

# the simulator's names, as generated from the toolkit headers
tables, cur = {}, None
for line in open(gen):
    m = re.match(r'const char \*const sim_(runtime|driver)_cbid_names', line)
    if m:
        cur = tables.setdefault(m.group(1), {})
    m = re.match(r'\s+\[(\d+)\] = "([^"]+)"', line)
    if m and cur is not None:
        cur[int(m.group(1))] = re.sub(r'_v\d{4,5}$', '', m.group(2))
expect(tables.get("runtime", {}).get(211) == "cudaLaunchKernel", "generated table: runtime 211 is cudaLaunchKernel")
expect(tables.get("driver", {}).get(307) == "cuLaunchKernel", "generated table: driver 307 is cuLaunchKernel")

api = bad = 0
names = set()
for line in open(jsonl):
    r = json.loads(line)
    if r.get("kind") not in ("runtime", "driver"):
        continue
    api += 1
    want = tables[r["kind"]].get(r["cbid"])
    if r["name"] != want:
        bad += 1
        if bad < 5:
            print("  record", r["kind"], r["cbid"], "named", r["name"], "want", want)
    names.add(r["name"])
expect(api > 1000, "jsonl has API records (%d)" % api)
expect(bad == 0, "every API record has its CUPTI name (%d wrong)" % bad)
expect({"cudaLaunchKernel", "cuLaunchKernel", "cudaMemcpyAsync", "cuMemcpyHtoDAsync_v2"} <= names,
       "names seen: " + ",".join(sorted(names)))
cb = [l for l in open(jsonl) if re.search(r'"cbid \d+"', l)]
expect(not cb, "no jsonl record named 'cbid N'")

t = json.load(open(chrome))
evs = t["traceEvents"]
cbid_ev = [e for e in evs if re.match(r'cbid \d+', str(e.get("name", "")))]
expect(not cbid_ev, "no chrome event named 'cbid N' (%d)" % len(cbid_ev))
expect(any(e.get("name") == "cudaLaunchKernel" for e in evs), "chrome has cudaLaunchKernel slices")
lanes = [e["args"]["name"] for e in evs if e.get("ph") == "M" and e.get("name") == "thread_name"]
thr = [n for n in lanes if n.startswith("thread ")]
expect(thr and not [n for n in thr if "(overlap" in n],
       "API calls of a thread nest: no thread overlap lane (%s)" % [n for n in thr if "(overlap" in n][:4])
expect(any(e.get("name") == "cudaGetDevice" for e in evs), "the API mix's calls are there")

# copies and sets named as Kineto names them, from the simulator's CUPTI
# records (copy kind, source and destination memory kinds)
cp = collections.Counter(e["name"] for e in evs if e.get("cat") == "gpu_memcpy")
ms = collections.Counter(e["name"] for e in evs if e.get("cat") == "gpu_memset")
expect(set(cp) == {"Memcpy HtoD (Pinned -> Device)", "Memcpy DtoH (Device -> Pageable)",
                   "Memcpy DtoD (Device -> Device)", "Memcpy HtoH (Pageable -> Pinned)"},
       "chrome: memcpy names as Kineto's: %s" % dict(cp))
expect(set(ms) == {"Memset (Device)"}, "chrome: memset names as Kineto's: %s" % dict(ms))

# kernels: demangled for people, the raw name in args; --mangled keeps it
VEC, VECD = "_Z6vecAddPKfS0_Pfi", "vecAdd(float const*, float const*, float*, int)"
k = [e for e in evs if e.get("cat") == "kernel"]
vec = [e for e in k if e.get("name") == VECD]
expect(vec and all(e["args"].get("mangled") == VEC for e in vec), "chrome: vecAdd demangled, args.mangled raw")
expect(not any(e.get("name") == VEC for e in k), "chrome: no raw vecAdd name")
expect(all("mangled" not in e["args"] for e in k if e.get("name") == "ampere_sgemm_128x64_nn"),
       "chrome: a C name carries no mangled arg")
raw = json.load(open(rawchrome))["traceEvents"]
expect(sum(1 for e in raw if e.get("name") == VEC) == len(vec) and not any(e.get("name") == VECD for e in raw),
       "--mangled: the same kernels under their raw name")
jl = [json.loads(l) for l in open(jsonl)]
expect(jl[0]["kind"] == "session" and jl[0]["label"] == 'resnet "A"' and len(jl[0]["devices"]) == 2,
       "jsonl: first line is the session, with label and devices")
jv = [r for r in jl if r.get("mangled") == VEC]
expect(jv and all(r["name"] == VECD for r in jv), "jsonl: name demangled, mangled raw")
other = t["otherData"]
expect(other["simulated"] is True and other["label"] == 'resnet "A"', "chrome otherData: label, simulated")
expect(other["cuda_driver_version"] == "13.0 (simulated)" and other["cupti_version"].startswith("13.")
       and other["cuda_runtime_version"] == "13.0 (simulated)", "chrome otherData: versions")
dp = other["deviceProperties"]
expect([d["id"] for d in dp] == [0, 1] and all(d["name"] == "NVIDIA H200 (simulated)" and d["computeMajor"] == 9
       and d["numSms"] == 132 and d["totalGlobalMem"] > 0 for d in dp), "chrome otherData: deviceProperties")
tracks = {e["args"]["name"] for e in evs if e.get("ph") == "M" and e.get("name") == "process_name"}
expect({"GPU 0: NVIDIA H200 (simulated)", "GPU 1: NVIDIA H200 (simulated)"} <= tracks,
       "device tracks named: %s" % sorted(tracks))
rep = open(report).read()
expect("NVIDIA H200 (simulated)" in rep and 'resnet "A"' in rep and "13.0 (simulated)" in rep,
       "report header: devices, label, versions")

s = json.load(open(sessions))[0]
expect(s["label"] == 'resnet "A"', "sessions --json label")
expect(s["simulated"] is True, "sessions --json: simulated")
v = s["versions"]
for k in ("driver", "cuda_driver", "cuda_runtime", "cupti"):
    expect(v[k] is not None and v[k].endswith("(simulated)"), "version %s marked simulated: %s" % (k, v[k]))
expect(v["cupti_api"] is not None and v["cupti_api"].isdigit(), "cupti_api version")
expect(v["cuptop"] is not None, "cuptop version")
devs = s["devices"]
expect([d["index"] for d in devs] == [0, 1], "two devices")
for d in devs:
    expect(d["name"] == "NVIDIA H200 (simulated)" and d["simulated"] is True and d["source"] == "cupti",
           "device %d named, simulated, from CUPTI" % d["index"])
    expect(d["compute_capability"] == "9.0" and d["sm_count"] == 132 and d["memory_bytes"] > 0
           and d["mig"] is False and re.match(r'GPU-[0-9a-f]{8}-', d["uuid"] or ""),
           "device %d properties" % d["index"])
expect(devs[0]["uuid"] != devs[1]["uuid"], "distinct UUIDs")
sys.exit(1 if fails else 0)
PY
[ $? = 0 ] || fail=1
exit $fail
