# lib.sh - shared helpers for the fault-matrix scripts (sourced).
# Needs $top_builddir and $top_srcdir (make check sets them).
#
# Every check prints "ok   NAME" or "FAIL NAME: why"; finish() exits 1 on
# any failure, 0 otherwise.  skip() exits 77 and is only used when a
# prerequisite is truly missing (no agent/simulator built, no tmux, ...).
set -u
: "${top_builddir:?run through make check}" "${top_srcdir:?run through make check}"
B=$top_builddir
CUPTOP=$B/cuptop
AGENT=$B/libcuptop-agent.so
SIMLIB=$B/libcuptop-simcupti.so
SIMAPP=$B/cuptop-simapp
CTL=$B/agentctl
FAULTIO=$B/faultio.so
FAULTS_DIR=$top_srcdir/tests/faults
. "$top_srcdir/tests/skip_part.sh"   # skip_part, parts_summary
# Long rows (more kill points, longer runs) only under make check-faults.
LONG=${CUPTOP_LONG_FAULTS:-0}
SANITIZED=${CUPTOP_TEST_SANITIZER:-}
[ "$SANITIZED" = no ] && SANITIZED=

WORK=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-faults.XXXXXX")
chmod 700 "$WORK"
unset CUPTOP_STORE CUPTOP_CONFIG CUPTOP_LOG CUPTOP_MAP_MAX CUPTOP_POOL CUPTOP_QUEUE
unset CUPTOPSIM_SCENARIO CUPTOPSIM_FAULTS CUPTOPSIM_TRUTH
failures=0
checks=0
# pids this script started and must not leave behind (killed by id only)
FAULT_PIDS=
faults_cleanup() {
    for p in $FAULT_PIDS; do
        kill -9 "$p" 2>/dev/null
    done
    [ -n "${FAULT_CLEANUP_HOOK:-}" ] && eval "$FAULT_CLEANUP_HOOK"
    if [ "${CUPTOP_KEEP_WORK:-0}" = 1 ]; then
        echo "work kept in $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap faults_cleanup EXIT
trap 'exit 1' INT TERM HUP

track() { FAULT_PIDS="$FAULT_PIDS $1"; }

skip() {
    echo "SKIP: $*"
    exit 77
}

fail() {
    echo "FAIL $*"
    failures=$((failures + 1))
    checks=$((checks + 1))
}

pass() {
    echo "ok   $*"
    checks=$((checks + 1))
}

# check NAME GOT WANT
check() {
    if [ "$2" = "$3" ]; then pass "$1 ($2)"; else fail "$1: got '$2', want '$3'"; fi
}

# check_ge NAME GOT MIN
check_ge() {
    if [ -n "$2" ] && [ "$2" -ge "$3" ] 2>/dev/null; then
        pass "$1 ($2 >= $3)"
    else
        fail "$1: got '$2', want >= $3"
    fi
}

# check_le NAME GOT MAX
check_le() {
    if [ -n "$2" ] && [ "$2" -le "$3" ] 2>/dev/null; then
        pass "$1 ($2 <= $3)"
    else
        fail "$1: got '$2', want <= $3"
    fi
}

finish() {
    parts_summary
    if [ "$checks" = 0 ]; then
        echo "FAIL no check ran"
        exit 1
    fi
    if [ "$failures" != 0 ]; then
        echo "$failures of $checks check(s) failed"
        exit 1
    fi
    echo "all $checks checks passed"
    exit 0
}

need_tools() {
    for t in "$@"; do
        command -v "$t" >/dev/null 2>&1 || skip "$t is not installed"
    done
}

# The agent and the simulator are built only with the CUPTI headers.
need_sim() {
    for f in "$AGENT" "$SIMLIB" "$SIMAPP" "$CTL" "$CUPTOP"; do
        [ -e "$f" ] || skip "$f not built (no CUPTI headers, or the simulator is missing)"
    done
}

# faultio.so is not sanitized; an ASan program refuses a preload ahead of
# its runtime unless told otherwise.
faultio_env() {
    [ -e "$FAULTIO" ] || skip "$FAULTIO not built"
    if [ -n "$SANITIZED" ]; then
        echo "LD_PRELOAD=$FAULTIO ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
    else
        echo "LD_PRELOAD=$FAULTIO"
    fi
}

# now_ms: a monotonic-enough clock for deadlines
now_ms() { date +%s%3N; }

# wait_until TIMEOUT_S CMD...: poll CMD every 50 ms until it succeeds
wait_until() {
    _uend=$(($(now_ms) + $1 * 1000))
    shift
    while ! "$@" >/dev/null 2>&1; do
        [ "$(now_ms)" -ge "$_uend" ] && return 1
        sleep 0.05
    done
    return 0
}

# wait_pid PID TIMEOUT_S: wait for a child of this shell to exit and set
# WAIT_RC to its status; on timeout kill -9 it, WAIT_RC=timeout, return 1.
# (Call it directly, not in $(...): a subshell cannot wait for our child.)
wait_pid() {
    _wend=$(($(now_ms) + $2 * 1000))
    while kill -0 "$1" 2>/dev/null; do
        _wst=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)
        [ "$_wst" = Z ] && break
        if [ "$(now_ms)" -ge "$_wend" ]; then
            kill -9 "$1" 2>/dev/null
            wait "$1" 2>/dev/null
            WAIT_RC=timeout
            return 1
        fi
        sleep 0.05
    done
    wait "$1"
    WAIT_RC=$?
    return 0
}

# val FILE KEY: value of KEY=... in an agentctl dump (empty when absent)
val() { sed -n "s/^$2=//p" "$1" | head -1; }

# dump STORE [SESSION] > file
dump() { "$CTL" dump "$@"; }

# Strict JSON (no duplicate keys, no NaN) - one document, or one per line
# with "jsonl".  Returns non-zero with the reason on stderr.
strict_json() {
    python3 - "$1" "${2:-json}" <<'PY'
import json, sys
def nodup(p):
    d = {}
    for k, v in p:
        if k in d: raise ValueError("duplicate key " + k)
        d[k] = v
    return d
def const(n): raise ValueError(n)
raw = open(sys.argv[1], "rb").read().decode("utf-8")
if sys.argv[2] == "jsonl":
    for i, line in enumerate(raw.split("\n")):
        if line:
            json.loads(line, object_pairs_hook=nodup, parse_constant=const)
else:
    json.loads(raw, object_pairs_hook=nodup, parse_constant=const)
PY
}

# no raw control bytes (ESC and other C0 but tab/newline, DEL, C1 as UTF-8)
has_raw_controls() {
    LC_ALL=C grep -q "$(printf '[\001-\010\013-\037\177]')" "$1" && return 0
    LC_ALL=C grep -q "$(printf '\302[\200-\237]')" "$1"
}

# one_line_error NAME RC_FILE ERR_FILE OUT_FILE: exit 2, one stderr line
# starting with "cuptop", nothing on stdout
one_line_error() {
    _lines=$(wc -l <"$3" | tr -d ' ')
    if [ "$2" != 2 ]; then
        fail "$1: exit $2, want 2 ($(head -c 200 "$3"))"
    elif [ "$_lines" != 1 ]; then
        fail "$1: $_lines lines on stderr, want one: $(head -c 300 "$3")"
    elif ! grep -q '^cuptop' "$3"; then
        fail "$1: message does not start with 'cuptop': $(cat "$3")"
    elif [ -s "$4" ]; then
        fail "$1: wrote to stdout: $(head -c 200 "$4")"
    elif has_raw_controls "$3"; then
        fail "$1: raw control bytes in the message"
    else
        pass "$1: exit 2, '$(cat "$3")'"
    fi
}

# crash_status RC: a signal death of the tool itself (128+N, N = SEGV, BUS,
# ABRT, FPE, ILL) or a sanitizer report
is_crash_rc() {
    case $1 in 132 | 134 | 135 | 136 | 139) return 0 ;; esac
    return 1
}

# ---- the simulated application with the agent ---------------------------
CHECK_TRUTH=$top_srcdir/tests/agent/check_truth.py
# Generous stop watchdog: a loaded 2-core machine must not turn into tail loss.
export CUPTOP_STOP_TIMEOUT_MS=${CUPTOP_STOP_TIMEOUT_MS:-20000}
export CUPTOPSIM_SEED=${CUPTOPSIM_SEED:-7}

# A background job of a non-interactive shell starts with SIGINT ignored
# (and the agent rightly leaves an ignored signal alone): give the
# application the default disposition, as a program started from a
# terminal has.
SIM_DFL=
env --default-signal=INT true 2>/dev/null && SIM_DFL=--default-signal=INT,QUIT

# sim_start NAME [ENV=VAL...] -- [SIMAPP ARGS...]: start cuptop-simapp with
# the agent in the background, store $WORK/NAME/store, truth
# $WORK/NAME/truth; sets SIM_PID, SIM_DIR.
sim_start() {
    SIM_DIR=$WORK/$1
    shift
    mkdir -p "$SIM_DIR"
    sim_env=""
    while [ $# -gt 0 ] && [ "$1" != -- ]; do sim_env="$sim_env $1"; shift; done
    [ $# -gt 0 ] && shift
    # shellcheck disable=SC2086
    env $SIM_DFL CUPTOP_STORE="$SIM_DIR/store" CUDA_INJECTION64_PATH="$AGENT" \
        CUPTOP_CUPTI_LIBRARY="$SIMLIB" $sim_env \
        "$SIMAPP" --truth "$SIM_DIR/truth" "$@" >"$SIM_DIR/out" 2>"$SIM_DIR/err" &
    SIM_PID=$!
    track "$SIM_PID"
}

# sim_run NAME [ENV...] -- [ARGS...]: sim_start, then wait (deadline 300 s);
# SIM_RC = exit status.
sim_run() {
    sim_start "$@"
    wait_pid "$SIM_PID" 300
    SIM_RC=$WAIT_RC
}

# sessions STORE: session ids, oldest first
sessions() { "$CTL" sessions "$1" 2>/dev/null; }

# truth_kv TRUTH > KV: the simapp truth file ("delivered D KIND N") in the
# key=value form tests/agent/check_truth.py reads ("delivered.KIND.D=N")
truth_kv() {
    awk 'NF == 4 { print $1 "." $3 "." $2 "=" $4; next }
         $1 == "produced_stream" && NF == 5 { print $1 "." $3 "." $2 "." $4 "=" $5; next }
         NF == 3 && $1 ~ /dropped|via_null/ { print $1 "." $2 "=" $3; next }
         NF == 2 { print $1 "=" $2 }' "$1"
}

# truth_check NAME STORE SESSION TRUTH [check_truth.py options]: every
# record the simulator delivered is accounted for exactly once
truth_check() {
    _tn=$1
    "$CTL" dump "$2" "$3" >"$WORK/$_tn.dump" 2>&1
    truth_kv "$4" >"$WORK/$_tn.truth"
    shift 4
    if python3 "$CHECK_TRUTH" "$WORK/$_tn.dump" "$WORK/$_tn.truth" "$@" >"$WORK/$_tn.check" 2>&1; then
        pass "$_tn: stored + counted losses == simulator truth ($(grep -c '^ok' "$WORK/$_tn.check") checks)"
    else
        fail "$_tn: accounting against the truth:"
        grep -v '^ok' "$WORK/$_tn.check" | head -20 | sed 's/^/    /'
    fi
}

# verdict STORE SESSION: prints "RC STATE VERDICT" from cuptop check and
# cuptop sessions --json
verdict() {
    "$CUPTOP" check --store "$1" "$2" >"$WORK/verdict.out" 2>"$WORK/verdict.err"
    _vrc=$?
    "$CUPTOP" sessions --store "$1" --json >"$WORK/verdict.json" 2>/dev/null
    python3 - "$WORK/verdict.json" "$2" "$_vrc" <<'PY'
import json, sys
for s in json.load(open(sys.argv[1])):
    if s["id"] == sys.argv[2]:
        print(sys.argv[3], s["state"], s["verdict"])
        break
else:
    print(sys.argv[3], "missing", "missing")
PY
}

# final_field DUMP KEY
final_field() { val "$1" "final.$2"; }
