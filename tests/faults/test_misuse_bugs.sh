#!/bin/sh
# test_misuse_bugs.sh - fault row 11, misuse cuptop once did not refuse
# (doc/reliability.md, CLI bug D, fixed): out-of-range agent settings given
# to cuptop run (the help says 64K..256M) ran, and the agent silently fell
# back to its default.  cuptop run now checks every value with the agent's
# own parser.  Every option's bounds: tests/cli/test_cli_errors.sh.
. "${top_srcdir:?}/tests/faults/lib.sh"
n=0
misuse() {
    n=$((n + 1))
    TERM=dumb timeout 60 "$CUPTOP" "$@" </dev/null >"$WORK/m$n.out" 2>"$WORK/m$n.err"
    one_line_error "cuptop $*" "$?" "$WORK/m$n.err" "$WORK/m$n.out"
}
misuse run --buffer-size 1 -- true
misuse run --buffer-size 512M -- true
misuse run --pool 4097 -- true
misuse run --queue 0 -- true
misuse run --flush-period 60001 -- true
misuse run --device-buffer-size 5G -- true
finish
