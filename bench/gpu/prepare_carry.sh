#!/bin/sh
# bench/gpu/prepare_carry.sh BUILD_DIR - copy the shared libraries the GPU
# machine lacks (LMDB; LZ4 too, to be safe) into BUILD_DIR/carry, which
# bench/gpu/run_all.sh puts on LD_LIBRARY_PATH.
set -eu
B=${1:?usage: prepare_carry.sh BUILD_DIR}
mkdir -p "$B/carry"
for lib in liblmdb.so.0 liblz4.so.1; do
    p=$(ldd "$B/libcuptop-agent.so" | awk -v l="$lib" '$1 == l { print $3 }')
    [ -n "$p" ] && cp -L "$p" "$B/carry/$lib" && echo "carry: $lib <- $p"
done
