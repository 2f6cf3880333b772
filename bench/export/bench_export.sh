#!/bin/sh
# bench_export.sh - export throughput and peak memory.
#
#   bench/export/bench_export.sh [BUILD_DIR] [RECORDS]   (default: build, 10000000)
#
# Writes one session of RECORDS records (kernels, memcpys, memsets, runtime
# and driver calls; 1M records per second of trace time) with the store API
# (tests/cli/fill_store --bench), then exports the whole window in each
# format and prints records/s and peak RSS (ru_maxrss of the child).  The
# store and the outputs live in a temporary directory removed at the end.
set -eu
n=${2:-10000000}
. "$(dirname "$0")/../bench_lib.sh"
bench_fill_setup bench_export "${1:-build}"

python3 - "$build" "$work" "$n" <<'PY'
import os, resource, subprocess, sys, time
build, work, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
cuptop = os.path.join(build, "cuptop")
store = os.path.join(work, "store")

def run(argv):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss  # maxrss: the largest child so far (KiB)

wall, cpu, _ = run([os.path.join(build, "tests/cli/fill_store"), "--bench", store, str(n)])
size = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(store) for f in fs)
print("store: %d records written in %.1f s (%.2f M records/s), %.1f MiB on disk" %
      (n, wall, n / wall / 1e6, size / 2**20))
sid = os.listdir(store)[0]
print()
print("| format | records | wall s | records/s (wall) | output MiB | peak RSS MiB |")
print("|---|---:|---:|---:|---:|---:|")
for fmt in ("chrome", "jsonl", "csv", "store"):
    out = os.path.join(work, "out." + fmt)
    # peak RSS per format: measure each export in a fresh child of its own
    code = ("import resource,subprocess,sys;"
            "subprocess.run(sys.argv[1:],check=True);"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    t = time.monotonic()
    r = subprocess.run([sys.executable, "-c", code, cuptop, "export", "--store", store, sid,
                        "--from", "start", "--to", "end", "--format", fmt, "-o", out],
                       check=True, capture_output=True, text=True)
    wall = time.monotonic() - t
    rss = int(r.stdout.strip().splitlines()[-1])
    if os.path.isdir(out):
        osize = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(out) for f in fs)
    else:
        osize = os.path.getsize(out)
    recs = n if fmt != "csv" else 0
    rate = "%.2f M" % (n / wall / 1e6) if fmt != "csv" else "(health rows)"
    print("| %s | %d | %.2f | %s | %.0f | %.1f |" % (fmt, recs, wall, rate, osize / 2**20,
                                                      rss / 1024))
    if os.path.isdir(out):
        subprocess.run(["rm", "-rf", out], check=True)
    else:
        os.unlink(out)
PY
