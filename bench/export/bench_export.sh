#!/bin/sh
# bench_export.sh - export throughput and peak memory.
#
#   bench/export/bench_export.sh [BUILD_DIR] [RECORDS]   (default: build, 10000000)
#
# Writes one session of RECORDS records (kernels, memcpys, memsets, runtime
# and driver calls; 1M records per second of trace time) with the store API
# (tests/cli/fill_store --bench), then exports the same (whole) window in each
# format (FORMATS, default "chrome perfetto jsonl csv store"), one child each,
# and prints bytes per record, user CPU time and records/s per CPU second
# (the VM is shared: wall time is noisy), wall time and peak RSS (wait4's
# rusage of that child).  The store and the outputs live in a temporary
# directory removed at the end.
#
# BASELINE=/path/to/cuptop (another build, e.g. of an earlier commit) adds a
# row per format exported by that binary from the same store, just before
# the build's own: before and after side by side in one run.  PF_BYTES=1
# adds, for perfetto, bench/export/pf_bytes.py's table: the bytes per record
# of every field (of each binary).  PF_UNCOMPRESSED=1 adds a perfetto row of
# the build's binary with --uncompressed (the packets as they are, no deflate).
set -eu
n=${2:-10000000}
. "$(dirname "$0")/../bench_lib.sh"
bench_fill_setup bench_export "${1:-build}"

python3 - "$build" "$work" "$n" "$(cd "$(dirname "$0")" && pwd)" <<'PY'
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
formats = os.environ.get("FORMATS", "chrome perfetto jsonl csv store").split()
print()
print("| format | records | output bytes | bytes/record | wall s | user CPU s | sys CPU s | "
      "records/s (user CPU) | records/s (wall) | peak RSS MiB |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
baseline = os.environ.get("BASELINE")
runs = [(fmt, b, []) for fmt in formats for b in ([baseline] if baseline else []) + [cuptop]]
if "perfetto" in formats and os.environ.get("PF_UNCOMPRESSED"):
    runs.insert(runs.index(("perfetto", cuptop, [])) + 1, ("perfetto", cuptop, ["--uncompressed"]))
breakdowns = []
for fmt, binary, extra in runs:
    out = os.path.join(work, "out." + fmt)
    label = fmt + (" (baseline)" if binary == baseline else "") + "".join(" " + e for e in extra)
    # each export is a child of its own: wait4 gives its user CPU time and
    # its peak RSS alone (user CPU: the VM is shared, wall time is noisy)
    t = time.monotonic()
    p = subprocess.Popen([binary, "export", "--store", store, sid, "--from", "start",
                          "--to", "end", "--format", fmt, "-o", out] + extra,
                         stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        sys.exit("export --format %s failed: %d" % (fmt, p.returncode))
    if os.path.isdir(out):
        osize = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(out) for f in fs)
    else:
        osize = os.path.getsize(out)
    if fmt == "csv":   # health rows, not records
        print("| %s | (health rows) | %d | - | %.2f | %.2f | %.2f | - | - | %.1f |" % (
            label, osize, wall, ru.ru_utime, ru.ru_stime, ru.ru_maxrss / 1024))
    else:
        print("| %s | %d | %d | %.1f | %.2f | %.2f | %.2f | %.2f M | %.2f M | %.1f |" % (
            label, n, osize, osize / n, wall, ru.ru_utime, ru.ru_stime, n / ru.ru_utime / 1e6,
            n / wall / 1e6, ru.ru_maxrss / 1024))
    sys.stdout.flush()
    if fmt == "perfetto" and os.environ.get("PF_BYTES"):
        tool = os.path.join(sys.argv[4], "pf_bytes.py")
        breakdowns.append((label, subprocess.run([sys.executable, tool, out, str(n)],
                                                 check=True, capture_output=True,
                                                 text=True).stdout))
    if os.path.isdir(out):
        subprocess.run(["rm", "-rf", out], check=True)
    else:
        os.unlink(out)
for label, table in breakdowns:
    print()
    print("%s, bytes per field:" % label)
    print()
    print(table, end="")
PY
