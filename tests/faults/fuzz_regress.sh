#!/bin/sh
# fuzz_regress.sh - fault row 8: replay the inputs the bounded libFuzzer
# run (fuzz_bounded.sh) once crashed on, through tests/fuzz/fuzz_chunk (in
# the ASan+UBSan build this catches the undefined behaviour itself).
#   chunk-corr-overflow: a correlation delta near INT64_MAX overflowed a
#   signed add in the chunk decoder (store/cupstore_chunk.c).
. "${top_srcdir:?}/tests/faults/lib.sh"
F=$B/tests/fuzz/fuzz_chunk
[ -x "$F" ] || skip "$F not built"
for f in "$top_srcdir"/tests/faults/fuzz-regress/*; do
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 "$F" "$f" >"$WORK/r.log" 2>&1
    rc=$?
    if [ "$rc" = 0 ] && ! grep -q 'runtime error\|AddressSanitizer' "$WORK/r.log"; then
        pass "replay $(basename "$f")"
    else
        fail "replay $(basename "$f"): exit $rc: $(grep -m1 'runtime error\|ERROR' "$WORK/r.log")"
    fi
done
finish
