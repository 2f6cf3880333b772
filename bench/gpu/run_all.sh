#!/bin/bash
# bench/gpu/run_all.sh - the whole GPU verification of the agent in one go.
#
#   bench/gpu/run_all.sh BUILD_DIR [REPS]
#
# BUILD_DIR: a build tree made on the dev machine (it has the CUPTI headers)
# holding cuptop, libcuptop-agent.so and agentctl.  The GPU machine has no
# LMDB: put liblmdb.so.0 (and liblz4.so.1 if missing there) in
# BUILD_DIR/carry/ (bench/gpu/prepare_carry.sh BUILD_DIR does it) and carry
# the build dir with the run.  Results go to $OUT (default ./gpu-out):
# results.md (the tables for doc/benchmarks.md) and every raw log.
#
# Steps: build launch_storm with nvcc; then, interleaved, REPS (default 3)
# repetitions of {no agent, count-only (CUPTOP_SINK=null), full agent} at
# 300k launches / 4 streams and 1M launches / 8 streams with kernel,
# runtime and driver records; the per-device kernel records are compared
# with the launches; then drops are provoked (a pool of 2 buffers, 4
# launching threads) and cleared by a runtime control request that narrows
# the kinds to kernel records, with the per-second rows around the change.
set -u
B=${1:?usage: run_all.sh BUILD_DIR [REPS]}
REPS=${2:-3}
B=$(cd "$B" && pwd)
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
log() { echo "== $*" | tee -a "$OUT/run.log"; }

[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
AGENT=$B/libcuptop-agent.so
CTL=$B/agentctl
CUPTOP=$B/cuptop
for f in "$AGENT" "$CTL" "$CUPTOP"; do
    [ -e "$f" ] || { log "missing $f (build with CUPTI headers first)"; exit 2; }
done
if ldd "$AGENT" "$CTL" | grep -q "not found"; then
    ldd "$AGENT" "$CTL" | tee -a "$OUT/run.log"
    log "shared libraries missing: run bench/gpu/prepare_carry.sh $B on the dev machine"
    exit 2
fi
nvidia-smi -L >"$OUT/gpu.txt" 2>&1
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
log "nvcc: $NVCC"
if ! "$NVCC" -O2 -std=c++17 -o "$OUT/launch_storm" "$here/launch_storm.cu" >"$OUT/nvcc.log" 2>&1; then
    cat "$OUT/nvcc.log"; log "nvcc failed"; exit 2
fi
STORM=$OUT/launch_storm
KINDS=kernel,runtime,driver

# one MODE CFG REP: run launch_storm once; append a row to rows.tsv
one() {
    mode=$1 n=$2 s=$3 rep=$4
    store=$OUT/store-$mode-$n-$rep
    rm -rf "$store"
    envs=()
    case $mode in
    none) ;;
    count) envs=(CUDA_INJECTION64_PATH="$AGENT" CUPTOP_STORE="$store" CUPTOP_KINDS=$KINDS CUPTOP_SINK=null) ;;
    full) envs=(CUDA_INJECTION64_PATH="$AGENT" CUPTOP_STORE="$store" CUPTOP_KINDS=$KINDS) ;;
    esac
    t0=$(date +%s.%N)
    line=$(env ${envs[@]+"${envs[@]}"} "$STORM" -n "$n" -s "$s" 2>"$OUT/err-$mode-$n-$rep.log")
    rc=$?
    t1=$(date +%s.%N)
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    lps=$(echo "$line" | sed -n 's/.*launches_per_s=\([0-9]*\).*/\1/p')
    ksec=$(echo "$line" | sed -n 's/.* seconds=\([0-9.]*\).*/\1/p')
    kern=- drop=- verdict=- ktotal=$(echo "$line" | sed -n 's/.*kernels_total=\([0-9]*\).*/\1/p')
    if [ "$mode" != none ]; then
        "$CTL" dump "$store" >"$OUT/dump-$mode-$n-$rep.txt" 2>&1
        if [ "$mode" = full ]; then
            kern=$(sed -n 's/^records.kernel.0=//p' "$OUT/dump-$mode-$n-$rep.txt")
        else
            kern=$(sed -n 's/^health.records.kernel=//p' "$OUT/dump-$mode-$n-$rep.txt")
        fi
        drop=$(sed -n 's/^loss.cupti_dropped=//p' "$OUT/dump-$mode-$n-$rep.txt")
        "$CUPTOP" check --store "$store" --all >"$OUT/check-$mode-$n-$rep.txt" 2>&1
        verdict=$([ $? = 0 ] && echo COMPLETE || echo INCOMPLETE)
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$mode" "$n" "$s" "$rep" "$rc" \
        "$ksec" "$wall" "$lps" "${kern:-?}/$ktotal" "${drop:-?}" "$verdict" >>"$OUT/rows.tsv"
    log "$mode n=$n s=$s rep=$rep rc=$rc storm=${ksec}s wall=${wall}s kernels=${kern:-?}/$ktotal dropped=${drop:-?} $verdict"
}

: >"$OUT/rows.tsv"
for rep in $(seq 1 "$REPS"); do
    for cfg in "300000 4" "1000000 8"; do
        set -- $cfg
        for mode in none count full; do
            one $mode "$1" "$2" "$rep"
        done
    done
done

# Tables: medians per (config, mode), ratio full/count-only on the storm time.
python3 - "$OUT/rows.tsv" >"$OUT/results.md" <<'PY'
import sys, statistics as st
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
by = {}
for m, n, s, rep, rc, ksec, wall, lps, kern, drop, verdict in rows:
    by.setdefault((int(n), int(s)), {}).setdefault(m, []).append((float(ksec or 0), float(wall or 0), kern, drop, verdict, rc))
print("| launches / streams | mode | storm s (median) | launches/s | process wall s | kernel records / launches | CUPTI drops | verdict |")
print("|---|---|---|---|---|---|---|---|")
for (n, s), modes in sorted(by.items()):
    for m in ("none", "count", "full"):
        if m not in modes: continue
        v = modes[m]
        ks = st.median(x[0] for x in v); wl = st.median(x[1] for x in v)
        print(f"| {n} / {s} | {m} | {ks:.3f} | {n/ks:,.0f} | {wl:.2f} | {', '.join(x[2] for x in v)} | {', '.join(x[3] for x in v)} | {', '.join(x[4] for x in v)} |")
print()
print("| launches / streams | full / count-only (storm time, per repetition) | median |")
print("|---|---|---|")
for (n, s), modes in sorted(by.items()):
    if "full" in modes and "count" in modes:
        r = [f[0] / c[0] for f, c in zip(modes["full"], modes["count"]) if c[0] > 0]
        print(f"| {n} / {s} | {', '.join(f'{x:.3f}' for x in r)} | {st.median(r):.3f} |")
PY

# Drops provoked, then cleared by a control request.
log "drops: pool of 2 buffers, 4 threads, kinds $KINDS; then control -> kernel"
store=$OUT/store-drops
rm -rf "$store"
CUDA_INJECTION64_PATH="$AGENT" CUPTOP_STORE="$store" CUPTOP_KINDS=$KINDS CUPTOP_POOL=2 \
    "$STORM" -n 4000000 -s 8 -t 4 >"$OUT/drops-storm.txt" 2>&1 &
pid=$!
id=$("$CTL" wait-session "$store" 1 30)
sleep 3
gen=$("$CTL" control "$store" "$id" kernel)
if ack=$("$CTL" wait-ack "$store" "$id" "$gen" 20); then
    log "control generation $gen applied, acknowledged in $ack ms (request -> apply)"
else
    log "control generation $gen NOT acknowledged within 20 s"
fi
wait $pid
log "storm: $(cat "$OUT/drops-storm.txt")"
"$CTL" seconds "$store" "$id" >"$OUT/drops-seconds.txt"
"$CTL" dump "$store" "$id" >"$OUT/drops-dump.txt"
"$CUPTOP" check --store "$store" --all >"$OUT/drops-check.txt" 2>&1
{
    echo
    echo "Drops provoked (CUPTOP_POOL=2, 4 threads, $KINDS), then a control request to 'kernel' (generation $gen, acknowledged in ${ack:-?} ms):"
    echo
    echo '```'
    cat "$OUT/drops-seconds.txt"
    echo '```'
    grep -E '^(loss\.cupti_dropped|estimate\.|epoch\.|final\.)' "$OUT/drops-dump.txt" | sed 's/^/    /'
} >>"$OUT/results.md"
log "done: $OUT/results.md"
cat "$OUT/results.md"
