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
formats = os.environ.get("FORMATS", "chrome perfetto jsonl csv store").split()
print()
print("| format | records | output bytes | bytes/record | wall s | user CPU s | sys CPU s | "
      "records/s (user CPU) | records/s (wall) | peak RSS MiB |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for fmt in formats:
    out = os.path.join(work, "out." + fmt)
    # each export is a child of its own: wait4 gives its user CPU time and
    # its peak RSS alone (user CPU: the VM is shared, wall time is noisy)
    t = time.monotonic()
    p = subprocess.Popen([cuptop, "export", "--store", store, sid, "--from", "start",
                          "--to", "end", "--format", fmt, "-o", out],
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
        print("| csv | (health rows) | %d | - | %.2f | %.2f | %.2f | - | - | %.1f |" % (
            osize, wall, ru.ru_utime, ru.ru_stime, ru.ru_maxrss / 1024))
    else:
        print("| %s | %d | %d | %.1f | %.2f | %.2f | %.2f | %.2f M | %.2f M | %.1f |" % (
            fmt, n, osize, osize / n, wall, ru.ru_utime, ru.ru_stime, n / ru.ru_utime / 1e6,
            n / wall / 1e6, ru.ru_maxrss / 1024))
    sys.stdout.flush()
    if os.path.isdir(out):
        subprocess.run(["rm", "-rf", out], check=True)
    else:
        os.unlink(out)
PY
