#!/bin/bash
# bench/gpu/small_buffers.sh BUILD_DIR - is the store or CUPTI the limit
# with small buffers?  One launching thread, pool 64 from the start, kinds
# kernel,runtime,driver: 64 KiB buffers stored, 64 KiB buffers counted only
# (CUPTOP_SINK=null: nothing stored), 1 MiB buffers stored.  Prints the
# per-second rows of each session (doc/benchmarks.md, "64 KiB buffers").
set -u
B=$(cd "${1:?usage: small_buffers.sh BUILD_DIR}" && pwd)
W=${OUT:-$PWD/gpu-out}/small-buffers
mkdir -p "$W"
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -x "$W/storm" ] || nvcc -O2 -std=c++17 -o "$W/storm" "$here/launch_storm.cu" || exit 2
for v in "store 65536" "null 65536" "store 1048576"; do
    set -- $v
    st=$W/s-$1-$2
    rm -rf "$st"
    env CUPTOP_SINK=$1 CUDA_INJECTION64_PATH="$B/libcuptop-agent.so" CUPTOP_STORE="$st" \
        CUPTOP_KINDS=kernel,runtime,driver CUPTOP_POOL=64 CUPTOP_BUFFER_SIZE=$2 \
        timeout 60 "$W/storm" -n 1500000 -s 4 -t 1 >"$st.storm" 2>&1
    id=$("$B/agentctl" sessions "$st" | head -1)
    echo "== sink=$1 buffer=$2: $(cat "$st.storm")"
    "$B/agentctl" seconds "$st" "$id" | sed 's/ req_p99_us=[^ ]*//; s/kinds=[^ ]* //'
    "$B/agentctl" dump "$st" "$id" | grep -E '^(records.total|loss.cupti_dropped.all.0)'
done
