#!/bin/sh
# fuzz_bounded.sh - fault row 8: a bounded libFuzzer run over the store's
# decoders (record chunks, health rows, data-file check) for
# CUPTOP_FUZZ_SECONDS (default 60) when clang has -fsanitize=fuzzer;
# otherwise the deterministic self-test of tests/fuzz/fuzz_chunk.c, and it
# says so.  Run by make check-faults.
. "${top_srcdir:?}/tests/faults/lib.sh"
secs=${CUPTOP_FUZZ_SECONDS:-60}
cc=${CUPTOP_FUZZ_CC:-clang}
src=$top_srcdir
bin=$WORK/fuzz_decoders
flags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -DCUPTOP_LIBFUZZER"
libs="$(pkg-config --libs lmdb liblz4 2>/dev/null || echo -llmdb -llz4)"
if command -v "$cc" >/dev/null 2>&1 &&
    $cc $flags -std=gnu11 -I"$B" -I"$src/store" -o "$bin" \
        "$src/tests/faults/fuzz_decoders.c" "$src"/store/cupstore_*.c $libs \
        >"$WORK/cc.log" 2>&1; then
    echo "libFuzzer: $($cc --version | head -1), $secs s over targets 0-2"
    mkdir -p "$WORK/corpus"
    (cd "$WORK" && "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 "$WORK/corpus" >"$WORK/fuzz.log" 2>&1)
    rc=$?
    tail -15 "$WORK/fuzz.log"
    grep -q 'Done [0-9]* runs' "$WORK/fuzz.log" && runs=yes || runs=no
    check "libFuzzer exit status" "$rc" 0
    check "libFuzzer finished its time budget" "$runs" yes
    if [ "$rc" != 0 ]; then
        # keep the reproducers beside the build (CI artifacts); add them to
        # tests/faults/fuzz-regress/ once fixed
        mkdir -p "$B/fuzz-artifacts"
        ls "$WORK"/crash-* "$WORK"/timeout-* "$WORK"/oom-* 2>/dev/null | while read -r f; do
            cp "$f" "$B/fuzz-artifacts/"
            echo "reproducer: $B/fuzz-artifacts/$(basename "$f") ($(wc -c <"$f") bytes), hex:"
            od -An -tx1 "$f" | head -8
        done
    fi
else
    echo "libFuzzer not available ($cc -fsanitize=fuzzer failed): replaying the deterministic self-test"
    [ -s "$WORK/cc.log" ] && head -5 "$WORK/cc.log"
    [ -x "$B/tests/fuzz/fuzz_chunk" ] || skip "tests/fuzz/fuzz_chunk not built"
    "$B/tests/fuzz/fuzz_chunk" --self 200000 >"$WORK/self.log" 2>&1
    check "fuzz_chunk --self 200000" "$?" 0
fi
finish
