#!/bin/bash
# bench/gpu/provoke.sh BUILD_DIR - provoked loss on the GPU, then a runtime
# control request that narrows the kinds, in several pool shapes, to show
# which losses narrowing clears and which it cannot (per-thread buffers).
#
#   VARIANTS="threads pool buffer_bytes narrow_to|..."
#   narrow_to "pool=N": instead of narrowing, raise the buffer-pool limit to
#   N at runtime (cuptop control --pool N), the fix for pool starvation.
#   SLOW_US=N: every data.mdb write delayed N us (faultio.so from the build
#   dir): a consumer that falls behind, the loss that narrowing can clear.
# Prints, per variant, the per-second rows (drops per device) and the epoch
# table.  Results to $OUT/provoke.md.
set -u
B=$(cd "${1:?usage: provoke.sh BUILD_DIR}" && pwd)
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
CTL=$B/agentctl
STORM=$OUT/launch_storm
[ -x "$STORM" ] || nvcc -O2 -std=c++17 -o "$STORM" "$here/launch_storm.cu" || exit 2
R=$OUT/provoke.md
: >"$R"
variants=${VARIANTS:-"1 2 65536 runtime|1 2 65536 kernel|1 3 262144 runtime|4 2 4194304 kernel"}
IFS='|'
for v in $variants; do
    IFS=' ' read -r t pool buf narrow <<<"$v"
    st=$OUT/provoke-$t-$pool-$buf-$narrow
    rm -rf "$st"
    pre=()
    [ -n "${SLOW_US:-}" ] && pre=(LD_PRELOAD="$B/faultio.so" FAULTIO_DELAY_US="$SLOW_US")
    env "${pre[@]}" CUDA_INJECTION64_PATH="$B/libcuptop-agent.so" CUPTOP_STORE="$st" CUPTOP_KINDS=kernel,runtime,driver \
        CUPTOP_POOL=$pool CUPTOP_BUFFER_SIZE=$buf \
        "$STORM" -n $((1500000 * t)) -s 4 -t "$t" >"$st.storm" 2>&1 &
    pid=$!
    id=$("$CTL" wait-session "$st" 1 30)
    sleep 3
    case $narrow in
    pool=*)
        "$B/cuptop" control --store "$st" "$id" --pool "${narrow#pool=}" --wait 20 \
            >"$st.control" 2>&1
        gen=$(sed -n 's/.*generation \([0-9]*\) requested.*/\1/p' "$st.control")
        ack=$(sed -n 's/.*applied after \([0-9]*\) ms.*/\1/p' "$st.control")
        ack=${ack:-none} ;;
    *)
        gen=$("$CTL" control "$st" "$id" "$narrow")
        ack=$("$CTL" wait-ack "$st" "$id" "$gen" 20 || echo "none") ;;
    esac
    wait $pid
    {
        echo
        echo "### threads=$t pool=$pool buffer=$buf${SLOW_US:+ store writes delayed ${SLOW_US} us}: kernel,runtime,driver, then control -> $narrow (generation $gen, acknowledged in $ack ms)"
        echo
        echo "storm: $(cat "$st.storm")"
        echo
        echo '```'
        "$CTL" seconds "$st" "$id" | sed 's/ req_p99_us.*queue_hw/ queue_hw/'
        "$CTL" dump "$st" "$id" | grep -E '^(loss\.cupti_dropped\.all|epoch\.|final\.protocol|records\.total)'
        echo '```'
    } >>"$R"
    IFS='|'
done
cat "$R"
