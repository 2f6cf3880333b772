#!/bin/sh
# fuzz_chunk_self.sh - a short deterministic run of the decoder fuzz target
# (mutated chunks and health rows; garbage data files), so the target keeps
# building and the decoders stay fault-free in make check.  Long fuzzing is
# manual: see tests/fuzz/fuzz_chunk.c.
set -eu
: "${top_builddir:=.}"
exec "$top_builddir/tests/fuzz/fuzz_chunk" --self 30000
