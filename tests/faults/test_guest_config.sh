#!/bin/sh
# test_guest_config.sh - fault row 14: a CUPTOP_CONFIG that is not a
# regular file, or is too large.  The agent reads it in the application's
# process at CUDA's start: /dev/zero used to spin there at 100% CPU for
# ever, a FIFO without a writer blocked the application in open(), and
# /dev/stdin consumed the application's own input.  Now only a regular file
# of at most 64 KiB is read; anything else is refused with a note in the
# session, and the application runs as without it (exit 0, its whole input
# read by itself, COMPLETE).  `cuptop run --config` refuses the same files,
# one line, exit 2.
. "${top_srcdir:?}/tests/faults/lib.sh"
need_sim
need_tools python3 timeout
DRIVE=$B/simdrive
[ -e "$DRIVE" ] || skip "$DRIVE not built"
export CUPTOPSIM_SEED=7 CUPTOPSIM_SCENARIO=clean CUPTOP_STOP_TIMEOUT_MS=20000
mkfifo "$WORK/cfg-fifo" || skip "cannot make a FIFO"
head -c 70000 /dev/zero | tr '\0' '#' >"$WORK/cfg-big"
printf 'line %d of the input of the application\n' 1 2 3 4 5 6 7 8 9 >"$WORK/input"
insize=$(wc -c <"$WORK/input")

# case NAME FILE WHY: the application with CUPTOP_CONFIG=FILE, its input a
# pipe; WHY: what the session's note must say
case_() {
    d=$WORK/$1
    mkdir -p "$d"
    cat "$WORK/input" | CUPTOP_CONFIG=$2 CUPTOP_STORE=$d/store timeout 60 "$DRIVE" "$SIMLIB" \
        "$AGENT" "$d/truth" seq:ctx,emit:500,stdio:io return >"$d/out" 2>"$d/err"
    check "$1: exit status (124: hung)" "$?" 0
    check "$1: the application read its whole input" \
        "$(sed -n 's/.* r0=\([0-9-]*\) .*/\1/p' "$d/io" 2>/dev/null)" "$insize"
    id=$(sessions "$d/store" | head -1)
    dump "$d/store" "$id" >"$d/dump" 2>&1
    check "$1: the session's note says why the file was ignored" \
        "$(grep -c "^note\..*CUPTOP_CONFIG=$2: $3; ignored" "$d/dump")" 1
    "$CUPTOP" check --store "$d/store" "$id" >"$d/verdict" 2>&1
    check "$1: cuptop check" "$?" 0
}
case_ dev-zero /dev/zero "not a regular file"
case_ fifo "$WORK/cfg-fifo" "not a regular file"
case_ dev-stdin /dev/stdin "not a regular file"
case_ big "$WORK/cfg-big" "larger than 65536 bytes"

# cuptop run --config: refused before the command runs
for f in /dev/zero "$WORK/cfg-fifo" /dev/stdin "$WORK/cfg-big"; do
    timeout 60 "$CUPTOP" run --store "$WORK/run-store" --config "$f" -- true \
        </dev/null >"$WORK/run.out" 2>"$WORK/run.err"
    one_line_error "cuptop run --config $f" "$?" "$WORK/run.err" "$WORK/run.out"
done
# and a good file still works
printf 'kinds=kernel\n# a comment\n\nqueue=64\n' >"$WORK/good"
timeout 60 "$CUPTOP" run --store "$WORK/run-store" --config "$WORK/good" -- true \
    </dev/null >"$WORK/run.out" 2>"$WORK/run.err"
check "cuptop run --config GOOD -- true: exit status" "$?" 0
finish
