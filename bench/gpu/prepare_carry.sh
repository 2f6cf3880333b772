#!/bin/sh
# bench/gpu/prepare_carry.sh BUILD_DIR - copy the shared libraries the GPU
# machine may lack (LMDB; LZ4 and ncurses too, to be safe) into BUILD_DIR/carry, which
# bench/gpu/run_all.sh puts on LD_LIBRARY_PATH.
set -eu
B=${1:?usage: prepare_carry.sh BUILD_DIR}
mkdir -p "$B/carry"
# (and ncurses for the cuptop program, e.g. `cuptop control` in provoke.sh)
# (and libmicrohttpd for the exporter linked into cuptop; its gnutls chain is
# left to the machine, which has it: carrying Debian's libffi would break python)
for lib in liblmdb.so.0 liblz4.so.1 libdeflate.so.0 libncursesw.so.6 libtinfo.so.6 libmicrohttpd.so.12; do
    p=$(ldd "$B/libcuptop-agent.so" "$B/cuptop" | awk -v l="$lib" '$1 == l { print $3; exit }')
    [ -n "$p" ] && cp -L "$p" "$B/carry/$lib" && echo "carry: $lib <- $p"
done
