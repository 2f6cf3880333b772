#!/bin/sh
# test_cli_opts.sh - each command's options are declared once, in its table
# (src/cli_opts/cli_opts.h): every option of every table is in the command's
# --help and in its section of the man page (tests/cli/cli_opts_check.py).
set -u
: "${top_builddir:?run through make check}" "${top_srcdir:?run through make check}"
if ! command -v python3 >/dev/null 2>&1; then
    echo "test_cli_opts: python3 is not installed; skipped"
    exit 77
fi
exec python3 "$top_srcdir/tests/cli/cli_opts_check.py" "$top_srcdir" "$top_builddir/cuptop"
