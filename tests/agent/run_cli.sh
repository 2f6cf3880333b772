#!/bin/sh
# run_cli.sh - cuptop run: the environment it sets, the exit status it
# passes through, misuse (one line, exit 2), and a whole run of
# cuptop-simapp under it.
set -u
b=${top_builddir:?}
[ -e "$b/cuptop" ] && [ -e "$b/libcuptop-agent.so" ] || { echo "not built: skipped"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-run-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: got '$2' want '$3'"; fail=1; fi; }

"$b/cuptop" run -- sh -c 'exit 7'
check "exit status passed through" "$?" 7
out=$(cd "$tmp" && "$b/cuptop" run --store rel --kinds kernel,runtime --pool 8 --queue 16 \
    --buffer-size 1M --dormant --count-only --log -- \
    sh -c 'echo "$CUPTOP_STORE|$CUPTOP_KINDS|$CUPTOP_POOL|$CUPTOP_QUEUE|$CUPTOP_BUFFER_SIZE|$CUPTOP_DORMANT|$CUPTOP_SINK|$CUPTOP_LOG|${CUDA_INJECTION64_PATH##*/}"')
check "environment" "$out" "$tmp/rel|kernel,runtime|8|16|1M|1|null|1|libcuptop-agent.so"
# NVTX routed to the agent (issue 15); a value set for another tool is kept, and said
out=$(env -u NVTX_INJECTION64_PATH "$b/cuptop" run -- sh -c 'echo "$NVTX_INJECTION64_PATH|$CUDA_INJECTION64_PATH"')
check "NVTX_INJECTION64_PATH set to the agent" "$(echo "$out" | awk -F'|' '{ print ($1 == $2 && $1 ~ /libcuptop-agent.so$/) }')" 1
out=$(NVTX_INJECTION64_PATH=/opt/other/libtool.so "$b/cuptop" run -- sh -c 'echo "$NVTX_INJECTION64_PATH"' 2>"$tmp/nverr")
check "NVTX_INJECTION64_PATH of another tool kept" "$out" /opt/other/libtool.so
check "... and said in one line" "$(grep -c 'NVTX_INJECTION64_PATH is set to /opt/other/libtool.so' "$tmp/nverr")" 1
out=$("$b/cuptop" run --capture-range nvtx:train.step -- sh -c 'echo "$CUPTOP_CAPTURE_RANGE"')
check "--capture-range nvtx:NAME" "$out" nvtx:train.step
out=$("$b/cuptop" run --devices 0,2-3 --only-if LOCAL_RANK=0 --capture-range cudaProfilerApi \
    --capture-range-end repeat:3 -- \
    sh -c 'echo "$CUPTOP_DEVICES|$CUPTOP_ONLY_IF|$CUPTOP_CAPTURE_RANGE|$CUPTOP_CAPTURE_RANGE_END"')
check "scope options" "$out" "0,2-3|LOCAL_RANK=0|cudaProfilerApi|repeat:3"
out=$("$b/cuptop" run --capture-range every:60s/5s -- sh -c 'echo "$CUPTOP_CAPTURE_RANGE"')
check "--capture-range every:PERIOD/WINDOW" "$out" every:60s/5s
out=$("$b/cuptop" run --capture-range every:24h/100ms -- sh -c 'echo "$CUPTOP_CAPTURE_RANGE"')
check "--capture-range every: at its bounds (24h, 100ms)" "$out" every:24h/100ms
out=$("$b/cuptop" run --on-detach keep -- sh -c 'echo "$CUPTOP_ON_DETACH"')
check "--on-detach keep" "$out" keep
for o in --dormant --devices --only-if --capture-range --capture-range-end --api --api-include \
         --api-exclude --on-detach; do
    "$b/cuptop" run --help | grep -q -- "^  $o "
    check "--help documents $o" "$?" 0
    grep -F -- "$(printf '%s' "$o" | sed 's/-/\\-/g')" "${top_srcdir:?}/doc/cuptop.1" | grep -q '^\.B[IR]* '
    check "the man page documents $o" "$?" 0
done
# an option wins over its CUPTOP_* variable in the environment, and says so
# when the two differ (issue 27: the "rerun:" line is set there)
out=$(CUPTOP_BUFFER_SIZE=4M "$b/cuptop" run --buffer-size 64K -- sh -c 'echo "$CUPTOP_BUFFER_SIZE"' 2>"$tmp/win.err")
check "--buffer-size wins over CUPTOP_BUFFER_SIZE" "$out" 64K
check "... and says so, once" "$(grep -c '^cuptop run: --buffer-size 64K wins over CUPTOP_BUFFER_SIZE=4M from the environment$' "$tmp/win.err")" 1
CUPTOP_BUFFER_SIZE=4M "$b/cuptop" run --buffer-size 4M -- true 2>"$tmp/same.err"
check "the same value: nothing said" "$(grep -c 'wins over' "$tmp/same.err")" 0

# the docs say what the code does (issue 27, docs): run --help names every
# kind (other too); the man page's attach section names every option
# attach --help lists; no font macro runs prose together
"$b/cuptop" run --help | grep -q 'overhead,marker,other'
check "run --help names the kind other" "$?" 0
sed -n '/^\.SS "cuptop attach"/,/^\.SS /p' "${top_srcdir:?}/doc/cuptop.1" >"$tmp/attach.1"
for o in $("$b/cuptop" attach --help | sed -n '/^  --store/,/as for cuptop run/p' |
           grep -o -- '--[a-z-]*' | grep -v '^--help$' | sort -u); do
    grep -qF -- "$(printf '%s' "$o" | sed 's/-/\\-/g')" "$tmp/attach.1"
    check "the man page's attach section names $o" "$?" 0
done
python3 "${top_srcdir:?}/tests/cli/man_macros.py" "${top_srcdir:?}/doc/cuptop.1"
check "no man page macro runs words together" "$?" 0
for bad in "--kinds nope -- true" "--pool 0 -- true" "--buffer-size 1X -- true" "--frobnicate -- true" \
           "--devices 16 -- true" "--devices 0,x -- true" "--only-if LOCAL_RANK -- true" \
           "--only-if =0 -- true" "--capture-range nvtx:@io -- true" "--capture-range nvtx: -- true" \
           "--capture-range profiler -- true" "--capture-range-end repeat:0 -- true" \
           "--capture-range-end again -- true" "--on-detach unload -- true" \
           "--capture-range every:1s/2s -- true" "--capture-range every:1s/1s -- true" \
           "--capture-range every:1s/50ms -- true" "--capture-range every:25h/1s -- true" \
           "--capture-range every:10/1s -- true" "--capture-range every:1s -- true" \
           "--capture-range every:1x/1s -- true" "--capture-range every:0s/0s -- true" \
           "--pool" ""; do
    "$b/cuptop" run $bad >/dev/null 2>"$tmp/err"
    rc=$?
    check "misuse '$bad': exit 2, one line" "$rc/$(wc -l <"$tmp/err" | tr -d ' ')" "2/1"
done
"$b/cuptop" run --help | grep -q "usage: cuptop run"
check "--help" "$?" 0
"$b/cuptop" run -- /nonexistent/program 2>/dev/null
check "missing program" "$?" 127

# nothing traced (issue 13 item 13): one line on stderr at exit, saying why
mkdir -p "$tmp/t"
TMPDIR=$tmp/t "$b/cuptop" run --store "$tmp/s0" -- true >"$tmp/nt.out" 2>"$tmp/nt.err"
check "not a CUDA program: exit status kept" "$?" 0
check "not a CUDA program: one line on stderr" "$(wc -l <"$tmp/nt.err" | tr -d ' ')" 1
grep -q "^cuptop run: nothing was traced: no session was created for true (the agent was never loaded: " \
    "$tmp/nt.err"
check "not a CUDA program: says nothing was traced and why" "$?" 0
check "the report file is removed" "$(ls "$tmp/t")" ""
TMPDIR=$tmp/t "$b/cuptop" run -- sh -c 'kill -TERM $$' 2>"$tmp/sig.err"
check "death by signal passed on (143)" "$?" 143
grep -q "nothing was traced" "$tmp/sig.err"
check "death by signal: says nothing was traced" "$?" 0
"$b/cuptop" run -- sleep 30 2>/dev/null &
rpid=$!
sleep 0.3
kill -TERM "$rpid"
wait "$rpid"
check "a SIGTERM sent to cuptop run reaches the command (143)" "$?" 143

# a whole run: the simulated application under cuptop run
if [ -e "$b/cuptop-simapp" ] && [ -e "$b/libcuptop-simcupti.so" ]; then
    CUPTOP_CUPTI_LIBRARY=$b/libcuptop-simcupti.so "$b/cuptop" run --store "$tmp/store" \
        --kinds kernel,memcpy -- "$b/cuptop-simapp" --seconds 1 --scenario clean >"$tmp/app.out" 2>&1
    check "simapp under cuptop run" "$?" 0
    "$b/cuptop" check --store "$tmp/store" --all >"$tmp/check" 2>&1
    check "its session is COMPLETE" "$?" 0
    "$b/agentctl" dump "$tmp/store" >"$tmp/dump"
    check "kinds from --kinds" "$(sed -n 's/^epoch.1=//p' "$tmp/dump")" "kinds:kernel,memcpy ctl_gen:0 open:0"
    grep -q "nothing was traced" "$tmp/app.out"
    check "a traced run does not say nothing was traced" "$?" 1
    # a --store that is a file: the agent cannot open it and says why
    : >"$tmp/afile"
    CUPTOP_CUPTI_LIBRARY=$b/libcuptop-simcupti.so "$b/cuptop" run --store "$tmp/afile" \
        -- "$b/cuptop-simapp" --seconds 0.2 >"$tmp/f.out" 2>"$tmp/f.err"
    check "store is a file: the application's exit status" "$?" 0
    check "store is a file: one line on stderr" "$(wc -l <"$tmp/f.err" | tr -d ' ')" 1
    grep -q "^cuptop run: nothing was traced: no session was created for .*cuptop-simapp (cannot open the store $tmp/afile: " \
        "$tmp/f.err"
    check "store is a file: says why" "$?" 0
fi
exit $fail
