# bench/bench_lib.sh - sourced by the store-filling benchmarks
# (bench/compare/bench_compare.sh, bench/export/bench_export.sh).
#
#   bench_fill_setup NAME BUILD_DIR
#
# Makes BUILD_DIR absolute (relative to the source tree) in $build, checks
# that it holds cuptop and tests/cli/fill_store (else one line for NAME on
# stderr, exit 2), and makes a temporary directory $work, removed on exit.
bench_fill_setup() {
    _here=$(cd "$(dirname "$0")/../.." && pwd)
    build=$2
    case $build in /*) ;; *) build=$_here/$build ;; esac
    [ -x "$build/cuptop" ] && [ -x "$build/tests/cli/fill_store" ] || {
        echo "$1: build first (make -C $build cuptop tests/cli/fill_store)" >&2
        exit 2
    }
    work=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-$(echo "$1" | tr _ -).XXXXXX")
    trap 'rm -rf "$work"' EXIT INT TERM
}
