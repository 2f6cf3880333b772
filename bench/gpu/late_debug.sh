#!/bin/bash
# bench/gpu/late_debug.sh BUILD_DIR - one late attach (dormant.sh step 2)
# with a backtrace on a fatal signal (BUILD_DIR/segv_bt.so, from
# bench/gpu/segv_bt.c), the agent's log on stderr, and the session's report.
set -u
B=$(cd "${1:?usage: late_debug.sh BUILD_DIR}" && pwd)
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
AGENT=$B/libcuptop-agent.so CTL=$B/agentctl CUPTOP=$B/cuptop
w=$(mktemp -d /tmp/late.XXXXXX)
nvcc -O2 -std=c++17 -o "$w/scope_app" "$here/scope_app.cu" || exit 2
for variant in "late 100000 200000" ; do
    dir=$w/run st=$w/st; mkdir -p "$dir"
    LD_PRELOAD=$B/segv_bt.so CUDA_INJECTION64_PATH=$AGENT CUPTOP_STORE=$st CUPTOP_DORMANT=1 \
        CUPTOP_KINDS=kernel CUPTOP_LOG=1 "$w/scope_app" $variant "$dir" >"$dir/app.out" 2>"$dir/app.err" &
    pid=$!
    id=$("$CTL" wait-session "$st" 1 60)
    for i in $(seq 1 6000); do [ -e "$dir/ready" ] && break; sleep 0.02; done
    "$CUPTOP" control --store "$st" "$id" --attach --wait 60 >"$dir/ctl.out" 2>&1
    echo "control: $(cat "$dir/ctl.out")"
    touch "$dir/go"
    wait $pid; echo "app exit: $?"
    echo "--- app.out"; cat "$dir/app.out"
    echo "--- app.err (tail)"; tail -60 "$dir/app.err"
    echo "--- backtrace resolved"
    grep -o 'libcuptop-agent.so(+0x[0-9a-f]*)' "$dir/app.err" | sed 's/.*(+\(0x[0-9a-f]*\))/\1/' |
        while read -r off; do addr2line -f -C -e "$AGENT" "$off" | paste - -; done
    echo "--- report"; "$CUPTOP" report --store "$st" "$id" 2>&1 | head -80
done
