#!/bin/sh
# bench_compare.sh - cuptop compare throughput and peak memory.
#
#   bench/compare/bench_compare.sh [BUILD_DIR] [RECORDS]   (default: build, 10000000)
#
# Writes two sessions of RECORDS records each (tests/cli/fill_store --bench:
# kernels, memcpys, memsets, runtime and driver calls, 1M records per second
# of trace time): A with seed 0, B a copy of A (identical: the order
# agreement is the O(n) case) and C with seed 1 (other names and durations:
# the order search runs into its edit cap).  Then times `cuptop compare A B`
# and `cuptop compare A C` (text and --json) and prints wall time, records/s
# over both sides and peak RSS.  Target (issue 17): two sessions of 10M
# records in under 10 s on the dev VM.
set -eu
n=${2:-10000000}
. "$(dirname "$0")/../bench_lib.sh"
bench_fill_setup bench_compare "${1:-build}"
store=$work/store
"$build/tests/cli/fill_store" --bench "$store" "$n" 0
"$build/tests/cli/fill_store" --bench "$store" "$n" 1
cp -a "$store/20250101T120000-4242" "$store/20250101T120000-5242"

python3 - "$build/cuptop" "$store" "$n" <<'PY'
import resource, subprocess, sys, time
cuptop, store, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
A, B, C = "20250101T120000-4242", "20250101T120000-5242", "20250101T120000-4243"
print("| pair | output | records (both sides) | wall s | records/s | peak RSS MiB | exit |")
print("|---|---|---:|---:|---:|---:|---:|")
code = ("import resource,subprocess,sys;"
        "r=subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL);"
        "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
for pair, a, b in (("identical", A, B), ("other seed", A, C)):
    for out in ("text", "json"):
        argv = [cuptop, "compare", "--store", store, a, b] + (["--json"] if out == "json" else [])
        t = time.monotonic()
        r = subprocess.run([sys.executable, "-c", code] + argv, check=True,
                           capture_output=True, text=True)
        wall = time.monotonic() - t
        rc, rss = r.stdout.split()
        print("| %s | %s | %d | %.2f | %.2fM | %.1f | %s |" %
              (pair, out, 2 * n, wall, 2 * n / wall / 1e6, int(rss) / 1024, rc))
PY
