#!/bin/bash
# bench/gpu/evidence.sh BUILD_DIR - issue 7's GPU evidence table in one go.
#
# BUILD_DIR is a build tree made on a machine with the CUPTI headers
# (tools/build.sh, then `make -C BUILD_DIR faultio.so agentctl` and
# bench/gpu/prepare_carry.sh BUILD_DIR), carried to the GPU machine.
# Results go to $OUT (default ./gpu-out): evidence.md plus raw logs.
# SKIP_STORM=1, SKIP_FS=1, SKIP_TORCH=1 leave a part out (to split the work
# over calls that must each end within a time limit).
#
#   1. launch storm, no tracing / count-only / full agent, and drops
#      provoked then cleared by a control request (bench/gpu/run_all.sh);
#   2. the full agent with the store on a slow filesystem (faultio.so delays
#      every write to data.mdb) and on a nearly full one (an 8 MiB tmpfs with
#      6 MiB taken), beside count-only in the same loop;
#   3. PyTorch: 50k small ops and 300 training steps, with no tracing,
#      torch.profiler and the cuptop agent, run separately (two CUPTI clients
#      in one process conflict), interleaved, REPS times.
set -u
B=$(cd "${1:?usage: evidence.sh BUILD_DIR}" && pwd)
REPS=${REPS:-3}
OUT=${OUT:-$PWD/gpu-out}
export OUT
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$B/carry" ] && export LD_LIBRARY_PATH="$B/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
AGENT=$B/libcuptop-agent.so
CUPTOP=$B/cuptop
EV=$OUT/evidence.md
: >"$EV"
log() { echo "== $*" | tee -a "$OUT/evidence.log"; }
med() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "-" }'; }
jget() { python3 "$here/sessinfo.py" "$@"; }

if [ "${SKIP_STORM:-0}" != 1 ]; then
    log "1. launch storm (run_all.sh, REPS=$REPS)"
    bash "$here/run_all.sh" "$B" "$REPS" >"$OUT/run_all.out" 2>&1
    cat "$OUT/results.md" >>"$EV"
fi
STORM=$OUT/launch_storm
[ -x "$STORM" ] || nvcc -O2 -std=c++17 -o "$STORM" "$here/launch_storm.cu"

# ---- 2. slow and nearly full store filesystems ---------------------------
if [ "${SKIP_FS:-0}" != 1 ]; then
log "2. slow / nearly full store filesystem"
near=/tmp/cuptop-nearfull
mkdir -p "$near"
fsnote="tmpfs 8 MiB with 6 MiB taken"
if mount -t tmpfs -o size=8m tmpfs "$near" 2>/dev/null; then
    dd if=/dev/zero of="$near/fill" bs=1M count=6 status=none
else
    fsnote="no tmpfs (mount refused): CUPTOP_MAP_MAX=4 MiB instead"
fi
fsrow() { # MODE N S REP
    mode=$1 n=$2 s=$3 rep=$4
    st=$OUT/fs-$mode-$n-$rep
    envs=(CUDA_INJECTION64_PATH="$AGENT" CUPTOP_KINDS=kernel,runtime,driver)
    case $mode in
    count) envs+=(CUPTOP_SINK=null CUPTOP_STORE="$st") ;;
    full) envs+=(CUPTOP_STORE="$st") ;;
    slow) envs+=(CUPTOP_STORE="$st" LD_PRELOAD="$B/faultio.so" FAULTIO_DELAY_US=${SLOW_US:-5000}) ;;
    nearfull)
        st=$near/store-$n-$rep
        envs+=(CUPTOP_STORE="$st")
        mountpoint -q "$near" || envs+=(CUPTOP_MAP_MAX=4194304) ;;
    esac
    line=$(env "${envs[@]}" "$STORM" -n "$n" -s "$s" 2>>"$OUT/fs-err.log")
    sec=$(echo "$line" | sed -n 's/.* seconds=\([0-9.]*\).*/\1/p')
    "$CUPTOP" sessions --store "$st" --json >"$OUT/fs-$mode-$n-$rep.json" 2>>"$OUT/fs-err.log"
    "$CUPTOP" check --store "$st" --all >"$OUT/fs-check-$mode-$n-$rep.txt" 2>&1
    v=$([ $? = 0 ] && echo COMPLETE || echo INCOMPLETE)
    loss=$(jget "$OUT/fs-$mode-$n-$rep.json" losses 2>/dev/null || echo "?")
    kern=$(jget "$OUT/fs-$mode-$n-$rep.json" kernels 2>/dev/null || echo "?")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$mode" "$n" "$s" "$sec" "$v" "$loss" "$kern" >>"$OUT/fs.tsv"
    log "fs $mode n=$n rep=$rep storm=${sec}s $v kernels=$kern losses: $loss"
    [ "$mode" = nearfull ] && rm -rf "$st"
}
: >"$OUT/fs.tsv"
for rep in $(seq 1 "$REPS"); do
    for cfg in "300000 4" "1000000 8"; do
        for mode in count full slow nearfull; do fsrow $mode $cfg "$rep"; done
    done
done
python3 - "$OUT/fs.tsv" "$fsnote" "${SLOW_US:-5000}" >>"$EV" <<'PY'
import sys, statistics as st
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
by = {}
for m, n, s, sec, v, loss, kern in rows:
    by.setdefault((int(n), int(s)), {}).setdefault(m, []).append((float(sec or "nan"), v, loss, kern))
print(f"\nStore on a slow filesystem (every data.mdb write delayed {sys.argv[3]} us) and on a nearly full one ({sys.argv[2]}):\n")
print("| launches / streams | mode | storm s (median) | / count-only | verdicts | kernel records | losses (last run) |")
print("|---|---|---|---|---|---|---|")
for (n, s), modes in sorted(by.items()):
    c = st.median(x[0] for x in modes.get("count", [(float("nan"),)]))
    for m in ("count", "full", "slow", "nearfull"):
        if m not in modes: continue
        v = modes[m]; t = st.median(x[0] for x in v)
        print(f"| {n} / {s} | {m} | {t:.3f} | {t / c:.3f} | {', '.join(x[1] for x in v)} | {', '.join(x[3] for x in v)} | {v[-1][2]} |")
PY
mountpoint -q "$near" && umount "$near"
fi

# ---- 3. PyTorch ------------------------------------------------------------
if [ "${SKIP_TORCH:-0}" != 1 ]; then
log "3. PyTorch"
: >"$OUT/torch.tsv"
for rep in $(seq 1 "$REPS"); do
    for work in ops train; do
        for mode in ${TORCH_MODES:-none profiler cuptop}; do
            st=$OUT/torch-$work-$rep
            envs=()
            [ "$mode" = cuptop ] && envs=(CUDA_INJECTION64_PATH="$AGENT" CUPTOP_STORE="$st")
            t0=$(date +%s%N)
            line=$(env "${envs[@]}" TORCH_TRACE="$OUT/torch_trace.json" python3 "$here/torch_bench.py" "$mode" "$work" 2>>"$OUT/torch-err.log")
            t1=$(date +%s%N)
            loop=$(echo "$line" | sed -n 's/.*loop_s=\([0-9.]*\).*/\1/p')
            total=$(echo "$line" | sed -n 's/.*total_s=\([0-9.]*\).*/\1/p')
            ev=$(echo "$line" | sed -n 's/.*gpu_events=\([-0-9]*\).*/\1/p')
            exitns=$(echo "$line" | sed -n 's/.*exit_wall_ns=\([0-9]*\).*/\1/p')
            tail_ms=- recs=- verdict=- stop_ms=-
            if [ "$mode" = cuptop ]; then
                "$CUPTOP" sessions --store "$st" --json >"$OUT/torch-$work-$rep.json" 2>>"$OUT/torch-err.log"
                tail_ms=$(jget "$OUT/torch-$work-$rep.json" tail_ms "$exitns" 2>/dev/null || echo "?")
                recs=$(jget "$OUT/torch-$work-$rep.json" records 2>/dev/null || echo "?")
                "$CUPTOP" report --store "$st" "$(jget "$OUT/torch-$work-$rep.json" id)" >"$OUT/torch-report-$work-$rep.txt" 2>&1
                # the stop protocol's own duration: the sum of its steps
                stop_ms=$(awk '/^Stop protocol/ { on = 1; next } /^$/ { on = 0 }
                    on && $2 ~ /^[0-9.]+$/ && $3 == "ms" { s += $2 } END { printf "%.1f", s }' \
                    "$OUT/torch-report-$work-$rep.txt")
                "$CUPTOP" check --store "$st" --all >"$OUT/torch-check-$work-$rep.txt" 2>&1
                verdict=$([ $? = 0 ] && echo COMPLETE || echo INCOMPLETE)
            elif [ "$mode" = profiler ]; then
                recs="$ev gpu"
            fi
            proc=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$work" "$mode" "$loop" "$total" "$proc" "$tail_ms" "$recs" "$verdict" "$stop_ms" >>"$OUT/torch.tsv"
            log "torch $work $mode rep=$rep loop=${loop}s total=${total}s process=${proc}s exit->final=${tail_ms}ms stop=${stop_ms}ms records=$recs $verdict"
        done
    done
done
python3 - "$OUT/torch.tsv" >>"$EV" <<'PY'
import sys, statistics as st
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
by = {}
for w, m, loop, total, proc, tail, recs, v, stop in rows:
    by.setdefault(w, {}).setdefault(m, []).append((float(loop or "nan"), float(total or "nan"), float(proc or "nan"), tail, recs, v, stop))
print("\nPyTorch (50,000 x.add_(1); 300 training steps of a 3-layer MLP), medians:\n")
print("| workload | mode | loop s | / none | loop + post-processing s | process wall s | script exit -> final status ms | stop protocol ms | records captured | verdict |")
print("|---|---|---|---|---|---|---|---|---|---|")
for w, modes in by.items():
    base = st.median(x[0] for x in modes["none"]) if "none" in modes else float("nan")
    for m in ("none", "profiler", "cuptop"):
        v = modes.get(m)
        if not v: continue
        l = st.median(x[0] for x in v); t = st.median(x[1] for x in v); p = st.median(x[2] for x in v)
        print(f"| {w} | {m} | {l:.3f} | {l / base:.2f} | {t:.3f} | {p:.2f} | {', '.join(x[3] for x in v)} | {', '.join(x[6] for x in v)} | {v[-1][4]} | {', '.join(x[5] for x in v)} |")
PY
fi
log "done: $EV"
cat "$EV"
