#!/bin/sh
# ab_export.sh - two cuptop builds side by side on one store: chrome and
# jsonl export throughput, interleaved runs, medians and the ratio.
#
#   bench/export/ab_export.sh BUILD_DIR BASELINE_CUPTOP [RECORDS] [REPS]
#       (defaults: 10000000 records, 3 interleaved pairs per format)
#
# BUILD_DIR holds the build under test (its cuptop and tests/cli/fill_store
# write the store); BASELINE_CUPTOP is another cuptop binary, e.g. one built
# from an earlier commit.  Both export the same window of the same store to
# a file in $TMPDIR (fsync and rename included, as users run it); runs
# alternate baseline / candidate so that drift on a shared machine hits both.
# Prints one table row per format: median wall seconds, records/s, user and
# system CPU seconds, and candidate/baseline throughput.
set -eu
build=${1:?usage: ab_export.sh BUILD_DIR BASELINE_CUPTOP [RECORDS] [REPS]}
base=${2:?usage: ab_export.sh BUILD_DIR BASELINE_CUPTOP [RECORDS] [REPS]}
n=${3:-10000000}
reps=${4:-3}
[ -x "$build/cuptop" ] && [ -x "$build/tests/cli/fill_store" ] && [ -x "$base" ] || {
    echo "ab_export: need $build/cuptop, $build/tests/cli/fill_store and $base" >&2
    exit 2
}
work=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-ab-export.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

python3 - "$build" "$base" "$work" "$n" "$reps" <<'PY'
import os, resource, statistics, subprocess, sys, time
build, base, work, n, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
store = os.path.join(work, "store")
subprocess.run([os.path.join(build, "tests/cli/fill_store"), "--bench", store, str(n)], check=True)
sid = os.listdir(store)[0]
bins = {"baseline": base, "candidate": os.path.join(build, "cuptop")}

def once(binary, fmt):
    out = os.path.join(work, "out")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    subprocess.run([binary, "export", "--store", store, sid, "--from", "start", "--to", "end",
                    "--format", fmt, "-o", out], check=True)
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    size = os.path.getsize(out)
    os.unlink(out)
    return wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime, size

print("%d records, %d interleaved pairs per format, output in %s" % (n, reps, work))
print()
print("| format | build | median wall s | records/s | user s | sys s | MiB | candidate/baseline |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for fmt in ("chrome", "jsonl"):
    res = {k: [] for k in bins}
    for _ in range(reps):
        for k, b in bins.items():
            res[k].append(once(b, fmt))
    med = {k: [statistics.median(x[i] for x in v) for i in range(4)] for k, v in res.items()}
    ratio = med["baseline"][0] / med["candidate"][0]
    for k in bins:
        w, u, s, size = med[k]
        print("| %s | %s | %.2f | %.2f M | %.2f | %.2f | %.0f | %s |" %
              (fmt, k, w, n / w / 1e6, u, s, size / 2**20,
               "%.2fx" % ratio if k == "candidate" else ""))
PY
