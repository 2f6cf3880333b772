#!/bin/sh
# Build the lock-free parts alone with ThreadSanitizer and run their tests:
# the queue (agent_queue.c) and the launch ledger (agent_ledger.c), each
# with its cmocka test.  Exits 77 when the compiler cannot build a TSan
# binary here (e.g. inside an ASan build's environment).
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
out=${TMPDIR:-/tmp}/cuptop-tsan.$$
cc=${CC:-cc}
flags=$(pkg-config --cflags --libs cmocka 2>/dev/null) || { echo "no cmocka"; exit 77; }
trap 'rm -f "$out".*' EXIT

# run BIN: TSan needs a non-randomised layout on some kernels: retry via setarch.
run() {
    TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}" "$1" && return 0
    rc=$?
    if command -v setarch >/dev/null 2>&1; then
        TSAN_OPTIONS="halt_on_error=1" setarch "$(uname -m)" -R "$1"
        return $?
    fi
    return $rc
}

for part in queue ledger; do
    if ! $cc -std=gnu11 -O1 -g -fsanitize=thread -pthread -I"$src/src/agent" \
            "$src/tests/agent/test_agent_$part.c" "$src/src/agent/agent_$part.c" \
            $flags -o "$out.$part" 2>"$out.log"; then
        cat "$out.log"
        echo "tsan_queue: cannot build with -fsanitize=thread here; skipped"
        exit 77
    fi
    run "$out.$part" || { echo "FAIL: $part under ThreadSanitizer"; exit 1; }
done
echo "PASS: queue and ledger under ThreadSanitizer"
