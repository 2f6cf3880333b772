#!/bin/bash
# bench/gpu/export_graph.sh BUILD_DIR [REPLAYS] - issue 33's figures on a
# real session: the H200's CUDA-graph workload (torch_bench.py graph: 100
# small kernels per replay, REPLAYS replays, default 100000 = 10M kernel
# records) under cuptop run, then the whole session exported as chrome JSON
# and as perfetto, one child each: bytes per record, user+system CPU,
# records per CPU second, wall time and peak RSS (wait4's rusage).
# Results: $OUT/export_graph.md.
set -u
B=$(cd "${1:?usage: export_graph.sh BUILD_DIR [REPLAYS]}" && pwd)
N=${2:-100000}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
work=$(mktemp -d /tmp/export-graph.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$B/cuptop" run --store "$work/store" -- python3 "$here/torch_bench.py" cuptop graph "$N" \
    >"$work/run.out" 2>"$work/run.err" || { cat "$work/run.err"; exit 1; }
python3 - "$B" "$work" "$OUT/export_graph.md" <<'PY'
import json, os, resource, subprocess, sys, time
b, work, md = sys.argv[1:4]
cuptop = os.path.join(b, "cuptop")
store = os.path.join(work, "store")
s = json.loads(subprocess.run([cuptop, "sessions", "--store", store, "--json"],
                              capture_output=True, check=True).stdout)[-1]
n = s["records"]
rows = []
for fmt, ext in (("chrome", "json"), ("perfetto", "pftrace")):
    out = os.path.join(work, "x." + ext)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    subprocess.run([cuptop, "export", "--store", store, s["id"], "--from", "start", "--to", "end",
                    "--format", fmt, "-o", out],
                   check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    size = os.path.getsize(out)
    rows.append((fmt, size, size / n, cpu, n / cpu / 1e6, wall, after.ru_maxrss / 1024))
    os.unlink(out)
with open(md, "w") as f:
    f.write("session %s: %d records (%s), verdict %s\n\n" %
            (s["id"], n, ", ".join("%s %d" % kv for kv in s["records_by_kind"].items() if kv[1]),
             s["verdict"]))
    f.write("| format | bytes | bytes/record | CPU s | M records/CPU s | wall s | peak MiB |\n")
    f.write("|---|---:|---:|---:|---:|---:|---:|\n")
    for r in rows:
        f.write("| %s | %d | %.1f | %.2f | %.2f | %.2f | %.1f |\n" % r)
print(open(md).read())
PY
