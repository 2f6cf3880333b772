#!/bin/bash
# bench/gpu/lost_trace.sh BUILD_DIR - where the exports draw the records the
# launch ledger found missing, on real CUPTI (issue 31 item 3):
# bench/gpu/ledger_streams.cu (kernels, copies and sets over 4 streams)
# with a starved pool (CUPTOP_POOL=2, 64K buffers: CUPTI drops) and
# --ledger; the chrome and Perfetto exports of the session.  Checks: one
# stream-side and one thread-side "lost" event per `lost` row; each kernel
# row named by its kernel (not "lost: kernel"); every stream-side slice over
# no record of its stream; on a stream that ran in launch order, each slice
# after the record launched before it and before the one launched after it.
# Writes lost_trace.md in $OUT; exit 1 when a check fails, 77 without a GPU.
set -u
B=$(cd "${1:?usage: lost_trace.sh BUILD_DIR}" && pwd)
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
nvidia-smi -L >/dev/null 2>&1 || { echo "lost_trace: no GPU"; exit 77; }
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
LS=$OUT/ledger_streams
nvcc -O2 -std=c++17 -o "$LS" "$here/ledger_streams.cu" || exit 2
st=$OUT/lt-store
rm -rf "$st"
CUDA_INJECTION64_PATH=$B/libcuptop-agent.so CUPTOP_STORE=$st CUPTOP_LEDGER=1 CUPTOP_POOL=2 \
    CUPTOP_BUFFER_SIZE=64K "$LS" -n 50000 -s 4 -c 10 -m 25 -y 1000 >"$OUT/lt.prog" 2>"$OUT/lt.err"
id=$("$B/cuptop" sessions --store "$st" | awk 'NR == 2 { print $1 }')
"$B/agentctl" dump "$st" "$id" >"$OUT/lt.dump"
t0=$(date +%s.%N)
"$B/cuptop" export --store "$st" "$id" --from start --to end --format chrome -o "$OUT/lt.json" \
    >"$OUT/lt.export" 2>&1
t1=$(date +%s.%N)
"$B/cuptop" export --store "$st" "$id" --from start --to end --format perfetto -o "$OUT/lt.pftrace" \
    >>"$OUT/lt.export" 2>&1
t2=$(date +%s.%N)
python3 - "$OUT/lt.json" "$OUT/lt.dump" "$t0" "$t1" "$t2" "$OUT/lt.pftrace" <<'PY' | tee "$OUT/lost_trace.md"
import json, os, sys
path, dump, t0, t1, t2, pf = sys.argv[1:]
d = dict(l.rstrip("\n").split("=", 1) for l in open(dump) if "=" in l)
led = dict(w.split("=", 1) for w in d["meta.ledger"].split())
rows = int(led.get("lost_rows", 0))
ev = json.load(open(path))["traceEvents"]
recs, lost = {}, []
for e in ev:
    if e.get("cat") == "lost":
        lost.append(e)
    elif e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
        a = e["args"]
        recs.setdefault((e["pid"], a["stream"]), []).append((a["correlation"], e["ts"], e["ts"] + e["dur"]))
thread = [e for e in lost if e["name"].endswith("(launched here)")]
stream = [e for e in lost if not e["name"].endswith("(launched here)")]
kern = [e for e in stream if "kernel records missing" in e["args"]]
named = [e for e in kern if e["name"] != "lost: kernel"]
over = between = raced = after_last = 0
for e in stream:
    a, b = e["args"], e["ts"]
    end = b + e.get("dur", 0)
    on = recs.get((e["pid"], a["stream"]), [])
    over += any(s < end - 0.001 and x > b + 0.001 for _, s, x in on)
    before = [r for r in on if r[0] < a["correlation"]]
    after = [r for r in on if r[0] > a["correlation"]]
    if not after:
        after_last += 1
        continue
    nxt, prev = min(after), max(before) if before else None
    if prev and prev[2] > nxt[1]:
        raced += 1
    elif (not prev or prev[2] <= b + 0.001) and end <= nxt[1] + 0.001:
        between += 1
print("## Lost records in the trace on real CUPTI (ledger_streams, starved pool, --ledger)")
print()
print(f"ledger: kernel missing {led.get('kernel.missing')}, memcpy {led.get('memcpy.missing')}, "
      f"memset {led.get('memset.missing')}; lost rows {rows} (unkept {led.get('lost_unkept')})")
print()
print("| check | value |")
print("|---|---|")
print(f"| stream-side lost events / rows | {len(stream)} / {rows} |")
print(f"| thread-side lost events / rows | {len(thread)} / {rows} |")
print(f"| kernel rows named by their kernel | {len(named)} of {len(kern)} |")
print(f"| stream-side over a record of their stream | {over} |")
print(f"| between their neighbours (launched before / after) | {between} |")
print(f"| stream ran a later launch first (no place between both) | {raced} |")
print(f"| after the stream's last record | {after_last} |")
print(f"| chrome export s / perfetto export s | {float(t1) - float(t0):.2f} / {float(t2) - float(t1):.2f} |")
print(f"| chrome bytes / perfetto bytes | {os.path.getsize(path)} / {os.path.getsize(pf)} |")
if kern:
    print()
    print(f"e.g. `{named[0]['name'][:120] if named else kern[0]['name']}`")
bad = []
if len(stream) != rows or len(thread) != rows:
    bad.append("counts")
if len(named) != len(kern):
    bad.append("names")
if over:
    bad.append("overlap")
if rows and between + raced + after_last != rows:
    bad.append("placement")
if not rows:
    bad.append("no lost rows: the pool was not starved")
print()
print("lost_trace: " + ("PASS" if not bad else "FAIL: " + ", ".join(bad)))
sys.exit(1 if bad else 0)
PY
