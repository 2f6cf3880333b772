#!/bin/bash
# bench/gpu/names.sh BUILD_DIR - issue 14's GPU check: names and provenance
# of a real trace against torch.profiler and nvidia-smi.
#
# BUILD_DIR: a build tree with the CUPTI headers (tools/build.sh, then
# bench/gpu/prepare_carry.sh BUILD_DIR), carried to the GPU machine.
# Results in $OUT (default ./gpu-out): names.md (the tables), names.log.
#
# The same PyTorch workload (bench/gpu/names_workload.py) runs twice, in
# separate processes: under `cuptop run --label` and inside torch.profiler.
# Checked (each line of names.md says PASS or FAIL):
#   - per-kernel-name counts of the two chrome traces are identical, by the
#     demangled name (cuptop's export vs Kineto's own);
#   - no slice of cuptop's trace is named "cbid N";
#   - cuptop's device name and UUID are nvidia-smi's, its driver version is
#     nvidia-smi's driver_version, its CUDA driver API version nvidia-smi's
#     "CUDA Version", its CUDA runtime version torch.version.cuda;
#   - the GPU track is named "GPU 0: <nvidia-smi name>".
set -u
B=$(cd "${1:?usage: names.sh BUILD_DIR}" && pwd)
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
CUPTOP=$B/cuptop
LOG=$OUT/names.log
: >"$LOG"
log() { echo "== $*" | tee -a "$LOG"; }
command -v nvidia-smi >/dev/null || { echo "no nvidia-smi: not a GPU machine"; exit 77; }
python3 -c 'import torch; assert torch.cuda.is_available()' 2>>"$LOG" ||
    { echo "no PyTorch with CUDA"; exit 77; }

work=$(mktemp -d /tmp/cuptop-names.XXXXXX)
trap 'rm -rf "$work"' EXIT
st=$work/store

log "cuptop run"
"$CUPTOP" run --store "$st" --label names-gpu --kinds kernel,memcpy,memset,runtime,driver -- \
    python3 "$here/names_workload.py" cuptop - >"$OUT/names-cuptop.out" 2>>"$LOG"
log "rc=$?"
sid=$(ls "$st" | head -1)
"$CUPTOP" check --store "$st" --all >"$OUT/names-check.txt" 2>&1
"$CUPTOP" sessions --store "$st" --json >"$OUT/names-sessions.json" 2>>"$LOG"
"$CUPTOP" report --store "$st" "$sid" >"$OUT/names-report.txt" 2>&1
"$CUPTOP" export --store "$st" "$sid" --from start --to end --format chrome -o "$work/cuptop.json" 2>>"$LOG"
log "export rc=$?"

log "torch.profiler"
python3 "$here/names_workload.py" profiler "$work/torch.json" >"$OUT/names-torch.out" 2>>"$LOG"
log "rc=$?"

nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv,noheader >"$OUT/names-smi.csv" 2>>"$LOG"
nvidia-smi >"$OUT/names-smi.txt" 2>&1

python3 - "$work/cuptop.json" "$work/torch.json" "$OUT/names-sessions.json" "$OUT/names-smi.csv" \
    "$OUT/names-smi.txt" "$OUT/names-cuptop.out" >"$OUT/names.md" 2>>"$LOG" <<'PY'
import collections, json, re, sys
cup_path, torch_path, sess_path, smi_csv, smi_txt, cup_out = sys.argv[1:7]
ok_all = True
def row(ok, what, detail=""):
    global ok_all
    ok_all &= bool(ok)
    print("| %s | %s | %s |" % ("PASS" if ok else "FAIL", what, str(detail).replace("|", "/")))

cup = json.load(open(cup_path))
tor = json.load(open(torch_path))
cev = cup["traceEvents"]
tev = tor["traceEvents"] if isinstance(tor, dict) else tor
ck = collections.Counter(e["name"] for e in cev if e.get("cat") == "kernel" and e.get("ph") == "X")
tk = collections.Counter(e["name"] for e in tev if e.get("cat") == "kernel" and e.get("ph") == "X")
smi = [l.split(", ") for l in open(smi_csv).read().strip().splitlines()]
s = json.load(open(sess_path))[0]
v = s["versions"]
tinfo = dict(l.strip().split("=", 1) for l in open(cup_out) if "=" in l)
m = re.search(r"CUDA Version:\s*([0-9.]+)", open(smi_txt).read())
smi_cuda = m.group(1) if m else None

print("# issue 14: names and provenance on the GPU\n")
print("| check | what | detail |\n|---|---|---|")
row(ck == tk, "per-kernel-name counts identical (demangled), cuptop vs torch.profiler",
    "%d names, %d kernels (cuptop) / %d names, %d kernels (torch)" % (len(ck), sum(ck.values()), len(tk), sum(tk.values())))
cb = [e["name"] for e in cev if re.match(r"cbid \d+$", str(e.get("name", "")))]
row(not cb, "no slice named 'cbid N'", "%d such slices %s" % (len(cb), sorted(set(cb))[:5]))
api = collections.Counter(e["name"] for e in cev if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X")
row(any(n.startswith("cuda") for n in api) and any(n.startswith("cu") and not n.startswith("cuda") for n in api),
    "runtime and driver API slices named", ", ".join("%s x%d" % kv for kv in api.most_common(6)))
d0 = s["devices"][0] if s["devices"] else {}
row(d0.get("name") == smi[0][1], "device name as nvidia-smi", "%s / %s" % (d0.get("name"), smi[0][1]))
row(d0.get("uuid") == smi[0][2], "device UUID as nvidia-smi", "%s / %s" % (d0.get("uuid"), smi[0][2]))
row(v["driver"] == smi[0][3], "driver version as nvidia-smi", "%s / %s" % (v["driver"], smi[0][3]))
row(v["cuda_driver"] == smi_cuda, "CUDA driver API version as nvidia-smi's CUDA Version", "%s / %s" % (v["cuda_driver"], smi_cuda))
row(v["cuda_runtime"] == tinfo.get("torch_cuda"), "CUDA runtime version as torch.version.cuda",
    "%s / %s" % (v["cuda_runtime"], tinfo.get("torch_cuda")))
tracks = {e["args"]["name"] for e in cev if e.get("ph") == "M" and e.get("name") == "process_name"}
row("GPU 0: " + smi[0][1] in tracks, "GPU track named 'GPU 0: <nvidia-smi name>'", sorted(t for t in tracks if t.startswith("GPU")))
od = cup["otherData"]
row(od.get("deviceProperties") and od["deviceProperties"][0]["name"] == smi[0][1] and od.get("cupti_version"),
    "chrome otherData: deviceProperties, cupti_version",
    "cupti %s, cc %s.%s, %s SMs" % (od.get("cupti_version"), od["deviceProperties"][0].get("computeMajor") if od.get("deviceProperties") else "?",
                                  od["deviceProperties"][0].get("computeMinor") if od.get("deviceProperties") else "?",
                                  od["deviceProperties"][0].get("numSms") if od.get("deviceProperties") else "?"))
row(s["label"] == "names-gpu" and not s["simulated"], "label kept, not simulated", "%s, %s" % (s["label"], s["simulated"]))
print("\nversions: %s\n" % json.dumps(v))
print("| kernel (demangled, first 100 chars) | cuptop | torch.profiler |\n|---|---:|---:|")
for n in sorted(set(ck) | set(tk), key=lambda n: -(ck[n] + tk[n])):
    print("| `%s` | %d | %d |" % (n[:100].replace("|", "/"), ck[n], tk[n]))
diff = sorted(n for n in set(ck) | set(tk) if ck[n] != tk[n])
if diff:
    print("\nnames counted differently (length; the whole name, mangled where cuptop has it):\n")
    mangled = {e["name"]: e.get("args", {}).get("mangled") for e in cev if e.get("cat") == "kernel"}
    for n in diff:
        print("- cuptop %d, torch %d, %d chars: `%s`" % (ck[n], tk[n], len(n), n.replace("|", "/")))
        if mangled.get(n):
            print("  mangled: `%s`" % mangled[n])
print("\nALL: %s" % ("PASS" if ok_all else "FAIL"))
sys.exit(0 if ok_all else 1)
PY
rc=$?
cat "$OUT/names.md"
log "names.md: rc=$rc"
exit $rc
