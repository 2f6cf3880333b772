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
    t=$1
    shift
    end=$(($(now_ms) + t * 1000))
    while ! "$@" >/dev/null 2>&1; do
        [ "$(now_ms)" -ge "$end" ] && return 1
        sleep 0.05
    done
    return 0
}

# wait_pid PID TIMEOUT_S: wait for a child of this shell to exit and set
# WAIT_RC to its status; on timeout kill -9 it, WAIT_RC=timeout, return 1.
# (Call it directly, not in $(...): a subshell cannot wait for our child.)
wait_pid() {
    end=$(($(now_ms) + $2 * 1000))
    while kill -0 "$1" 2>/dev/null; do
        st=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)
        [ "$st" = Z ] && break
        if [ "$(now_ms)" -ge "$end" ]; then
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
    name=$1 rc=$2 err=$3 out=$4
    lines=$(wc -l <"$err" | tr -d ' ')
    if [ "$rc" != 2 ]; then
        fail "$name: exit $rc, want 2 ($(head -c 200 "$err"))"
    elif [ "$lines" != 1 ]; then
        fail "$name: $lines lines on stderr, want one: $(head -c 300 "$err")"
    elif ! grep -q '^cuptop' "$err"; then
        fail "$name: message does not start with 'cuptop': $(cat "$err")"
    elif [ -s "$out" ]; then
        fail "$name: wrote to stdout: $(head -c 200 "$out")"
    elif has_raw_controls "$err"; then
        fail "$name: raw control bytes in the message"
    else
        pass "$name: exit 2, '$(cat "$err")'"
    fi
}

# crash_status RC: a signal death of the tool itself (128+N, N = SEGV, BUS,
# ABRT, FPE, ILL) or a sanitizer report
is_crash_rc() {
    case $1 in 132 | 134 | 135 | 136 | 139) return 0 ;; esac
    return 1
}
