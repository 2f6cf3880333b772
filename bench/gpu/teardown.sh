#!/bin/bash
# bench/gpu/teardown.sh BUILD_DIR - the speed of a program after cuptop
# detaches, with CUPTI torn down (cuptiFinalize, the default) and kept
# (--on-detach keep), and a second attach after the teardown; on real
# CUPTI, in one run, side by side.
#
# Each case runs bench/gpu/attach_loop.py (100 x.add_(1) per iteration,
# eager launches or one CUDA graph replay) with no agent, then:
#   phase 1  no agent (its speed)
#   attach   pause, `cuptop attach PID --kinds kernel [--on-detach MODE]`, go
#   phase 2  attached
#   detach   pause, `cuptop control SESSION --detach --wait`, go
#   phase 3  detached (the speed this script is about)
#   attach   pause, `cuptop attach PID` again (the agent is there: a control
#            request; after a teardown CUPTI starts afresh), go
#   phase 4  attached again
#   detach   pause, detach again, go
#   phase 5  detached
# Stored kernel records must equal the loop's own count of kernels launched
# while attached, after each detach and after the exit.  Speeds are
# medians of the loop's 1 s rates per phase; "after/before" is phase 3 over
# phase 1.  Table in $OUT/teardown.md (default OUT=./gpu-out).  About 100 s.
set -u
B=$(cd "${1:?usage: teardown.sh BUILD_DIR}" && pwd)
OUT=${OUT:-$PWD/gpu-out}
SECS=${SECS:-4}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
CTL=$B/agentctl CUPTOP=$B/cuptop MD=$OUT/teardown.md
for f in "$B/libcuptop-agent.so" "$CTL" "$CUPTOP"; do
    [ -e "$f" ] || { echo "missing $f"; exit 2; }
done
python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null ||
    { echo "no PyTorch with CUDA: skipped"; exit 77; }
unset CUDA_INJECTION64_PATH NVTX_INJECTION64_PATH
rows=() fails=0

stored() { # STORE SID: kernel records stored
    "$CTL" dump "$1" "$2" | awk -F= '$1 ~ /^records\.kernel\.[0-9]+$/ { n += $2 } END { print n + 0 }'
}

one() { # NAME MODE(eager|graph) ON_DETACH(finalize|keep)
    local name=$1 mode=$2 od=$3 W=$OUT/teardown-$1 S=$OUT/teardown-$1/store
    rm -rf "$W"; mkdir -p "$W"
    python3 "$here/attach_loop.py" "$W" $((5 * SECS + 6)) "$mode" >"$W/loop.log" 2>"$W/loop.err" &
    local pid=$! ok=1 n=0 k=() s1 s2 s3 sid="" sessions
    wait_line() { # PATTERN
        for _ in $(seq 900); do grep -q "$1" "$W/loop.log" && return 0; sleep 0.1; done
        echo "$name: the loop never printed '$1'"; cat "$W/loop.err"; kill "$pid"; return 1
    }
    pause() { # N: the loop is paused, its kernel count in k[N]
        touch "$W/pause-$1"; wait_line "^paused $1 " || return 1
        k[$1]=$(sed -n "s/^paused $1 kernels=//p" "$W/loop.log")
    }
    wait_line "^ready" || return 1
    sleep "$SECS"
    pause 1 || return 1
    "$CUPTOP" attach --store "$S" --kinds kernel --on-detach "$od" "$pid" >"$W/attach1.log" 2>&1 || ok=0
    sid=$("$CTL" sessions "$S" | head -1)
    touch "$W/go-1"; sleep "$SECS"
    pause 2 || return 1
    "$CUPTOP" control --store "$S" "$sid" --detach --wait 30 >"$W/detach1.log" 2>&1 || ok=0
    s1=$(stored "$S" "$sid")
    touch "$W/go-2"; sleep "$SECS"
    pause 3 || return 1
    "$CUPTOP" attach --store "$S" --kinds kernel "$pid" >"$W/attach2.log" 2>&1 || ok=0
    touch "$W/go-3"; sleep "$SECS"
    pause 4 || return 1
    "$CUPTOP" control --store "$S" "$sid" --detach --wait 30 >"$W/detach2.log" 2>&1 || ok=0
    s2=$(stored "$S" "$sid")
    touch "$W/go-4"
    wait "$pid" || ok=0
    s3=$(stored "$S" "$sid")
    sessions=$("$CTL" sessions "$S" | wc -l)
    "$CUPTOP" check --store "$S" "$sid" >"$W/check.log" 2>&1 || ok=0
    "$CTL" dump "$S" "$sid" >"$W/dump"
    local torn
    torn=$(grep -c "CUPTI torn down (cuptiFinalize)" "$W/dump")
    local w1=$((k[2] - k[1])) w2=$((k[2] - k[1] + k[4] - k[3]))
    [ "$s1" = "$w1" ] && [ "$s2" = "$w2" ] && [ "$s3" = "$w2" ] && [ "$sessions" = 1 ] || ok=0
    if [ "$od" = finalize ]; then [ "$torn" = 2 ] || ok=0; else [ "$torn" = 0 ] || ok=0; fi
    local l=() r=()
    for i in 1 2 3 4; do l[$i]=$(grep -n "^paused $i " "$W/loop.log" | cut -d: -f1); done
    l[0]=1 l[5]='$'
    for i in 0 1 2 3 4; do
        r[$i]=$(sed -n "${l[$i]},${l[$((i + 1))]}p" "$W/loop.log" | sed -n 's/^rate .*its_per_s=//p' |
            sort -g | awk '{ a[NR] = $1 } END { print (NR ? a[int((NR + 1) / 2)] : 0) }')
    done
    local ratio
    ratio=$(awk -v a="${r[2]}" -v b="${r[0]}" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')
    local verdict=FAIL
    [ $ok = 1 ] && verdict=PASS
    [ $ok = 1 ] || fails=$((fails + 1))
    rows+=("| $name | $mode | $od | ${r[0]} | ${r[1]} | ${r[2]} | ${r[3]} | ${r[4]} | $ratio | $s1/$w1, $s2/$w2, $s3 | $torn | $(head -1 "$W/check.log" | sed 's/.*: //') | $verdict |")
}

one eager-finalize eager finalize
one eager-keep eager keep
one graph-finalize graph finalize
one graph-keep graph keep
{
    echo "## Speed after a detach: CUPTI torn down vs kept ($(nvidia-smi -L 2>/dev/null | head -1))"
    echo
    echo "it/s: medians of the loop's 1 s rates per phase (${SECS} s each); after/before = phase 3 / phase 1."
    echo "Records: stored/launched after the first detach, after the second, after the exit."
    echo
    echo "| case | loop | --on-detach | no agent | attached | detached | attached again | detached again | after/before | kernel records | teardowns noted | check | result |"
    echo "|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---|---|"
    printf '%s\n' "${rows[@]}"
    echo
    [ $fails = 0 ] && echo "ALL PASS" || echo "$fails case(s) FAILED"
} >"$MD"
cat "$MD"
[ $fails = 0 ]
