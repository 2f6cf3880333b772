#!/bin/sh
# bench/gpu/matrix.sh BUILD_DIR CASES SEED [JOBS] - the truth matrix (issue
# 29, doc/truth.md) on the GPU machine's CPU cores: many more cases per
# minute than the 2-core dev VM.  The simulator needs no GPU; the machine
# lacks LMDB, so BUILD_DIR/carry (bench/gpu/prepare_carry.sh) goes on
# LD_LIBRARY_PATH.  Failures are shrunk and saved under tests/truth/regress
# as `make check-matrix` does; copy them back with the device tool's $OUT.
set -eu
B=$(cd "${1:?usage: matrix.sh BUILD_DIR CASES SEED [JOBS]}" && pwd)
cases=${2:?cases}
seed=${3:?seed}
jobs=${4:-$(($(nproc) - 2))}
src=$(cd "$(dirname "$0")/../.." && pwd)
export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "matrix: $cases cases from seed $seed, $jobs jobs, $(nproc) cores, $(uname -n)"
start=$(date +%s)
rc=0
top_builddir="$B" top_srcdir="$src" python3 "$src/tests/truth/truth.py" matrix \
    --cases "$cases" --seed "$seed" --jobs "$jobs" --save-regress || rc=$?
echo "matrix: exit $rc after $(( $(date +%s) - start )) s"
if [ -n "${OUT:-}" ] && [ -d "$src/tests/truth/regress" ]; then
    mkdir -p "$OUT/regress"
    find "$src/tests/truth/regress" -newer "$src/tests/truth/truth.py" -type f \
        -exec cp {} "$OUT/regress/" \; 2>/dev/null || true
fi
exit $rc
