#!/bin/sh
# check_layers.sh - make check's boundary check (doc/design.md, "Layers"):
# wrong-way includes in the sources, undefined symbols of a higher layer in
# a lower library (nm on the .a files), the agent free of the model, export,
# monitor and CLI; and a self-test that plants one of each and expects them
# reported.  The logic is in check_layers.py.
set -u
: "${top_builddir:?run through make check}" "${top_srcdir:?run through make check}"
if ! command -v python3 >/dev/null 2>&1; then
    echo "check_layers: python3 is not installed; skipped"
    exit 77
fi
if ! command -v nm >/dev/null 2>&1; then
    echo "check_layers: nm (binutils) is not installed; skipped"
    exit 77
fi
exec python3 "$top_srcdir/tests/layers/check_layers.py" --src "$top_srcdir" \
    --build "$top_builddir" --self-test
