#!/bin/bash
# bench/gpu/guest.sh BUILD_DIR - issue 28 items 1 and 4 on the GPU: the real
# libcupti and libcuda open their own descriptors inside the agent's hold.
# launch_storm (1M launches, kernel records) under cuptop run with stdin,
# stdout and stderr closed in turn: exit 0, its line on stdout when stdout
# is open, the session COMPLETE with 1000001 kernel records (warm-up +
# launches), and, read from /proc/PID/fd and fdinfo of the running storm
# at 2 s, no store descriptor below 3 and none without close-on-exec.
# Then data.mdb is truncated under a running storm: it must still exit 0
# (the agent says the store faulted).  Results: $OUT/guest.md.
set -u
B=$(cd "${1:?usage: guest.sh BUILD_DIR}" && pwd)
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
CTL=$B/agentctl CUPTOP=$B/cuptop
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$NVCC" -O2 -std=c++17 -o "$OUT/launch_storm" "$here/launch_storm.cu" >"$OUT/nvcc.log" 2>&1 ||
    { cat "$OUT/nvcc.log"; exit 2; }
STORM=$OUT/launch_storm
MD=$OUT/guest.md
kernels() {
    "$CTL" dump "$1" "$2" | awk -F= '$1 ~ /^records\.kernel\.[0-9]+$/ { n += $2 } END { print n + 0 }'
}
{
echo "## Guest rules on the GPU ($(nvidia-smi -L 2>&1 | head -1))"
echo
echo "| closed | exit | storm's stdout | verdict | kernels | store fds < 3 | store fds without cloexec |"
echo "|---|---|---|---|---|---|---|"
} >"$MD"
for c in 0 1 2 none; do
    st=$OUT/guest-$c
    rm -rf "$st"
    mkdir -p "$st"
    case $c in
    0) "$CUPTOP" run --store "$st/store" --kinds kernel -- "$STORM" -n 1000000 -s 4 <&- >"$st/out" 2>"$st/err" & ;;
    1) "$CUPTOP" run --store "$st/store" --kinds kernel -- "$STORM" -n 1000000 -s 4 >&- 2>"$st/err" & ;;
    2) "$CUPTOP" run --store "$st/store" --kinds kernel -- "$STORM" -n 1000000 -s 4 >"$st/out" 2>&- & ;;
    none) "$CUPTOP" run --store "$st/store" --kinds kernel -- "$STORM" -n 1000000 -s 4 >"$st/out" 2>"$st/err" & ;;
    esac
    rp=$!
    sleep 2
    ap=$(pgrep -P "$rp" | head -1)
    low=0 noexec=0
    for f in /proc/"$ap"/fd/*; do
        t=$(readlink "$f") || continue
        case $t in "$st"/store/*) ;; *) continue ;; esac
        n=${f##*/}
        [ "$n" -lt 3 ] && low=$((low + 1))
        fl=$(sed -n 's/^flags:[[:space:]]*//p' "/proc/$ap/fdinfo/$n")   # octal
        [ -n "$fl" ] && [ $((0$fl & 02000000)) = 0 ] && noexec=$((noexec + 1))
    done
    wait "$rp"
    rc=$?
    id=$("$CTL" sessions "$st/store" | head -1)
    v=$("$CUPTOP" check --store "$st/store" "$id" 2>&1 | head -1)
    echo "| $c | $rc | $(head -c 60 "$st/out" 2>/dev/null | tr '\n|' ' /') | $v | $(kernels "$st/store" "$id") | $low | $noexec |" >>"$MD"
done
# data.mdb truncated under a running storm
st=$OUT/guest-trunc
rm -rf "$st"
mkdir -p "$st"
CUPTOP_LOG=1 "$CUPTOP" run --store "$st/store" --kinds kernel -- "$STORM" -n 3000000 -s 4 \
    >"$st/out" 2>"$st/err" &
rp=$!
sleep 3
id=$("$CTL" sessions "$st/store" | head -1)
truncate -s 0 "$st/store/$id/data.mdb"
wait "$rp"
rc=$?
{
echo
echo "data.mdb truncated at 3 s: exit $rc (want 0); agent: $(grep -m1 'mapping faulted' "$st/err")"
} >>"$MD"
cat "$MD"
