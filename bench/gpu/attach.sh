#!/bin/bash
# bench/gpu/attach.sh BUILD_DIR - issue 20 on the GPU: cuptop attach PID to
# a PyTorch loop started with no agent (bench/gpu/attach_loop.py).
#  1. the loop runs 5 s with no agent (its speed)
#  2. pause 1 (device synchronised, kernel count K1), `cuptop attach PID
#     --kinds kernel,runtime,driver` (acknowledged), go; 5 s attached (speed)
#  3. pause 2 (K2), `cuptop control SESSION --detach` (flushes; the library
#     stays loaded, dormant), go; 5 s detached (speed); end
#  stored kernel records must equal K2 - K1 exactly, the loop's own count,
#  and the API records must be there (issue 27: an attach applies the API
#  record policy, gpu by default): every launch keeps its launching call,
#  so runtime + driver records >= K2 - K1, runtime records > 0.
# Table in $OUT/attach.md (default OUT=./gpu-out), raw logs beside it.
# Runs in about 40 s.
set -u
B=$(cd "${1:?usage: attach.sh BUILD_DIR}" && pwd)
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
CTL=$B/agentctl CUPTOP=$B/cuptop MD=$OUT/attach.md
for f in "$B/libcuptop-agent.so" "$CTL" "$CUPTOP"; do
    [ -e "$f" ] || { echo "missing $f"; exit 2; }
done
python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null ||
    { echo "no PyTorch with CUDA: skipped"; exit 77; }
W=$OUT/attach-work
rm -rf "$W" "$OUT/attach-store"; mkdir -p "$W"
unset CUDA_INJECTION64_PATH
python3 "$here/attach_loop.py" "$W" 15 >"$W/loop.log" 2>"$W/loop.err" &
PID=$!
wait_line() { # PATTERN: the loop printed it (60 s at most)
    for _ in $(seq 600); do grep -q "$1" "$W/loop.log" && return 0; sleep 0.1; done
    echo "the loop never printed '$1'"; cat "$W/loop.err"; kill $PID; exit 1
}
wait_line "^ready"
sleep 5
touch "$W/pause-1"; wait_line "^paused 1 "
K1=$(sed -n 's/^paused 1 kernels=//p' "$W/loop.log")
t0=$(date +%s.%N)
"$CUPTOP" attach --store "$OUT/attach-store" --kinds kernel,runtime,driver "$PID" >"$W/attach.log" 2>&1
arc=$?
t1=$(date +%s.%N)
cat "$W/attach.log"
SID=$("$CTL" sessions "$OUT/attach-store" | head -1)
touch "$W/go-1"
sleep 5
touch "$W/pause-2"; wait_line "^paused 2 "
K2=$(sed -n 's/^paused 2 kernels=//p' "$W/loop.log")
"$CUPTOP" control --store "$OUT/attach-store" "$SID" --detach --wait 30 >"$W/detach.log" 2>&1
drc=$?
cat "$W/detach.log"
stored=$("$CTL" dump "$OUT/attach-store" "$SID" |
    awk -F= '$1 ~ /^records\.kernel\.[0-9]+$/ { n += $2 } END { print n + 0 }')
api_count() { # KIND: records of an API kind (device none)
    "$CTL" dump "$OUT/attach-store" "$SID" | sed -n "s/^records\.$1\.none=//p" | head -1
}
rt=$(api_count runtime) dr=$(api_count driver)
rt=${rt:-0} dr=${dr:-0}
touch "$W/go-2"
wait $PID
lrc=$?
# and once more after the program's exit (its stop protocol ran): the same
# number, since nothing was on after the detach
stored_exit=$("$CTL" dump "$OUT/attach-store" "$SID" |
    awk -F= '$1 ~ /^records\.kernel\.[0-9]+$/ { n += $2 } END { print n + 0 }')
"$CUPTOP" check --store "$OUT/attach-store" "$SID" >"$W/check.log" 2>&1
rates() { # FROM TO: median its/s of the rate lines between two markers (line numbers)
    sed -n "$1,$2p" "$W/loop.log" | sed -n 's/^rate .*its_per_s=//p' | sort -g |
        awk '{ a[NR] = $1 } END { print (NR ? a[int((NR + 1) / 2)] : "n/a") }'
}
l1=$(grep -n "^paused 1 " "$W/loop.log" | cut -d: -f1)
l2=$(grep -n "^paused 2 " "$W/loop.log" | cut -d: -f1)
before=$(rates 1 "$l1") during=$(rates "$l1" "$l2") after=$(rates "$l2" '$')
want=$((K2 - K1))
verdict=FAIL
[ "$stored" = "$want" ] && [ "$stored_exit" = "$want" ] && [ "$rt" -gt 0 ] &&
    [ $((rt + dr)) -ge "$want" ] && [ "$arc" = 0 ] && [ "$drc" = 0 ] && [ "$lrc" = 0 ] && verdict=PASS
{
echo "## cuptop attach PID on the GPU ($(nvidia-smi -L 2>/dev/null | head -1))"
echo
echo "PyTorch loop (100 x.add_(1) per iteration) started with no agent; attached while"
echo "paused at kernel $K1, detached while paused at kernel $K2."
echo
echo "| what | value |"
echo "|---|---|"
echo "| cuptop attach exit status / wall s | $arc / $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') |"
echo "| kernels launched while attached (the loop's count) | $want |"
echo "| kernel records stored (read at the detach acknowledgement) | $stored |"
echo "| kernel records stored (read after the program exited) | $stored_exit |"
echo "| runtime / driver API records stored (gpu policy; >= launches) | $rt / $dr |"
echo "| loop it/s before attach (median) | $before |"
echo "| loop it/s attached (median) | $during |"
echo "| loop it/s after detach (median) | $after |"
echo "| detach exit status | $drc |"
echo "| loop exit status | $lrc |"
echo "| cuptop check | $(head -1 "$W/check.log") |"
echo
echo "**$verdict**: stored kernel records $( [ "$stored" = "$want" ] && echo equal || echo differ from ) the launches after the acknowledged attach; API records $( [ "$rt" -gt 0 ] && [ $((rt + dr)) -ge "$want" ] && echo "cover every launch" || echo "MISSING (the attach did not apply the API policy)")."
} >"$MD"
cat "$MD"
[ $verdict = PASS ]
