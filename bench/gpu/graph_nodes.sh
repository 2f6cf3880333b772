#!/bin/bash
# bench/gpu/graph_nodes.sh BUILD_DIR [N] [K] - the launch ledger over the
# nodes of a CUDA graph on real CUPTI (issue 31): does each kernel, memcpy
# and memset node of a graph launch make exactly one record of its kind,
# as the ledger expects when it counts a graph's nodes at instantiation?
# bench/gpu/graph_nodes.cu launches a graph of K kernels, a device-to-device
# copy and a set N times (default 2000, K 3) beside the same work launched
# eagerly, under the agent with --ledger and the default kinds.  Checks,
# from the session's ledger metadata and the jsonl export: expected ==
# matched == the program's own counts per kind, nothing missing, orphaned
# or extra, the graph counted (graphs=1, none unknowable), the records
# stored per kind equal to the counts, and the verdict COMPLETE.  Writes
# graph_nodes.md in $OUT; exit 1 when a check fails, 77 without a GPU.
set -u
B=$(cd "${1:?usage: graph_nodes.sh BUILD_DIR [N] [K]}" && pwd)
N=${2:-2000} K=${3:-3}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
nvidia-smi -L >/dev/null 2>&1 || { echo "graph_nodes: no GPU"; exit 77; }
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
prog=$OUT/graph_nodes
nvcc -O2 -std=c++17 -o "$prog" "$here/graph_nodes.cu" || exit 2
st=$OUT/gn-store
rm -rf "$st"
CUDA_INJECTION64_PATH=$B/libcuptop-agent.so CUPTOP_STORE=$st CUPTOP_LEDGER=1 \
    "$prog" "$N" "$K" >"$OUT/gn.prog" 2>"$OUT/gn.err" || { cat "$OUT/gn.err"; exit 1; }
id=$("$B/cuptop" sessions --store "$st" | awk 'NR == 2 { print $1 }')
"$B/agentctl" dump "$st" "$id" >"$OUT/gn.dump"
"$B/cuptop" check --store "$st" "$id" >"$OUT/gn.check" 2>&1
"$B/cuptop" export --store "$st" "$id" --from start --to end --format jsonl -o "$OUT/gn.jsonl" \
    >/dev/null 2>&1
python3 - "$OUT/gn.prog" "$OUT/gn.dump" "$OUT/gn.jsonl" "$OUT/gn.check" <<'PY' | tee "$OUT/graph_nodes.md"
import json, re, sys
prog, dump, jsonl, check = sys.argv[1:]
p = {}
for l in open(prog):
    p.update(dict(w.split("=", 1) for w in l.split()))
n, k = int(p["graph_launches"]), int(p["kernel_nodes"])
want = {"kernel": 2 * n * k, "memcpy": 2 * n, "memset": 2 * n}
d = dict(l.rstrip("\n").split("=", 1) for l in open(dump) if "=" in l)
led = dict(w.split("=", 1) for w in d["meta.ledger"].split())
stored = {}
with open(jsonl) as f:
    next(f)
    for line in f:
        m = re.search(r'"kind":"([a-z_]+)"', line)
        if m:
            stored[m.group(1)] = stored.get(m.group(1), 0) + 1
verdict = open(check).readline().strip()
print(f"## Graph nodes under the launch ledger ({n} launches of a graph of {p['graph_nodes']} nodes: "
      f"{k} kernels, 1 memcpy, 1 memset; the same work eagerly beside it)")
print()
print("| kind | program | expected | matched | missing | orphan | extra | stored |")
print("|---|---|---|---|---|---|---|---|")
bad = []
for kind, w in want.items():
    row = [int(led.get(f"{kind}.{x}", -1)) for x in ("expected", "matched", "missing", "orphan", "extra")]
    print(f"| {kind} | {w} | " + " | ".join(map(str, row)) + f" | {stored.get(kind, 0)} |")
    if row != [w, w, 0, 0, 0] or stored.get(kind, 0) != w:
        bad.append(kind)
print()
print(f"graphs counted: {led.get('graphs')}, unknowable: {led.get('graphs_unknowable')}, "
      f"launches not judged: {led.get('graph_launches_unknown')}, exact: {led.get('exact')}")
print(f"verdict: {verdict}")
if led.get("graphs") != "1" or led.get("graph_launches_unknown") != "0":
    bad.append("graph not counted")
if "INCOMPLETE" in verdict or "COMPLETE" not in verdict:
    bad.append("verdict")
print()
print("graph_nodes: " + ("PASS" if not bad else "FAIL: " + ", ".join(bad)))
sys.exit(1 if bad else 0)
PY
