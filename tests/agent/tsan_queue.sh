#!/bin/sh
# Build the queue test alone (agent_queue.c + the test) with
# ThreadSanitizer and run it.  Exits 77 when the compiler cannot build a
# TSan binary here (e.g. inside an ASan build's environment).
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
out=${TMPDIR:-/tmp}/cuptop-tsan-queue.$$
cc=${CC:-cc}
flags=$(pkg-config --cflags --libs cmocka 2>/dev/null) || { echo "no cmocka"; exit 77; }
trap 'rm -f "$out"' EXIT
if ! $cc -std=gnu11 -O1 -g -fsanitize=thread -pthread -I"$src/src/agent" \
        "$src/tests/agent/test_agent_queue.c" "$src/src/agent/agent_queue.c" \
        $flags -o "$out" 2>"$out.log"; then
    cat "$out.log"; rm -f "$out.log"
    echo "tsan_queue: cannot build with -fsanitize=thread here; skipped"
    exit 77
fi
rm -f "$out.log"
# TSan needs a non-randomised layout on some kernels: retry via setarch.
TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}" "$out" && exit 0
rc=$?
if command -v setarch >/dev/null 2>&1; then
    TSAN_OPTIONS="halt_on_error=1" setarch "$(uname -m)" -R "$out"
    exit $?
fi
exit $rc
