#!/bin/sh
# attach_kill.sh - issue 28: `cuptop attach` killed (SIGKILL) at any point
# of the injection never harms the target.  The target (a Python program
# blocked in read(2) on a FIFO, exit status 7 of its own) must survive
# every kill, be detached at once (TracerPid 0), return from its read with
# the byte sent afterwards, finish its work and exit with its own status.
#  steps   the injector kills itself at each named step
#          (CUPTOP_INJECT_DIE_AT): stopped, saved, written, started (the
#          target runs the load), waiting (the load done, the target waits
#          to be taken back), restore, taken, restored, called
#  slow    CUPTOP_AGENT=attach_slowlib.so, whose constructor takes 300 ms:
#          killed at random delays over the first 250 ms, nearly all of
#          them while the target's thread is inside dlopen (before the fix
#          its call returned to address 0: SIGSEGV)
#  agent   the real agent, killed at random delays over the first 250 ms
# ATTACH_KILL_SEED=N repeats a run's delays (the seed is printed); the
# assertion does not depend on where a kill lands.
# Exits 77 off x86-64, without the simulator or python3, or where this user
# may not ptrace (Yama ptrace_scope 2/3 and not root).
SIM_LIB_NAME=attachkill
. "${top_srcdir:?}/tests/agent/sim_lib.sh"
case $(uname -m) in x86_64) ;; *) echo "cuptop attach is x86-64 only: skipped"; exit 77 ;; esac
scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
if [ "$scope" -ge 2 ] && [ "$(id -u)" != 0 ]; then
    echo "Yama ptrace_scope is $scope and this is not root: skipped"
    exit 77
fi
slow=$b/attach_slowlib.so
[ -e "$slow" ] || { echo "missing $slow: skipped"; exit 77; }
cuptop=$b/cuptop
seed=${ATTACH_KILL_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
echo "seed $seed (ATTACH_KILL_SEED=$seed repeats these delays)"
runs=${ATTACH_KILL_RUNS:-12}
delays=$(python3 -c 'import random, sys
r = random.Random(int(sys.argv[1]))
print(" ".join(str(r.randrange(250)) for _ in range(2 * int(sys.argv[2]))))' "$seed" "$runs")

# An ASan build's agent loads only into a process whose ASan runtime came
# first: the python target then starts with that runtime preloaded.
asan_rt=$(ldd "$agent" 2>/dev/null | awk '/libasan/ { print $3 }')
target_env=
[ -n "$asan_rt" ] && target_env="LD_PRELOAD=$asan_rt ASAN_OPTIONS=detect_leaks=0"

wait_file() { # PATH (60 s at most)
    i=0
    while [ ! -e "$1" ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i + 1)); done
    [ -e "$1" ]
}
n=0 killed=0
# one NAME DELAY_MS LIB [VAR=VALUE...]: a fresh target, cuptop attach
# killed after DELAY_MS (or by itself at a step), then the target's checks
one() {
    name=$1 ms=$2 lib=$3
    shift 3
    n=$((n + 1))
    d=$tmp/$n
    mkdir -p "$d"
    mkfifo "$d/fifo"
    exec 3<>"$d/fifo"
    env $target_env python3 -c 'import ctypes, os, sys
# any tracer may attach (Yama ptrace_scope 1), as simdrive allows
ctypes.CDLL(None).prctl(0x59616d61, ctypes.c_ulong(2**64 - 1), 0, 0, 0)
d = sys.argv[1]
fd = os.open(d + "/fifo", os.O_RDONLY)
open(d + "/ready", "w").close()
b = os.read(fd, 1)
s = sum(i * i for i in range(200000))
open(d + "/done", "w").write("%s %d" % (b.decode(), s))
sys.exit(7)' "$d" >"$d/out" 2>"$d/err" &
    pid=$!
    wait_file "$d/ready" || { echo "FAIL $name: the target never started"; fail=1; }
    sleep 0.05   # into its read(2)
    env CUPTOP_AGENT="$lib" "$@" "$cuptop" attach --store "$d/store" --wait 10 "$pid" \
        >"$d/attach" 2>&1 &
    inj=$!
    t0=$(date +%s.%N)
    if [ "$ms" -ge 0 ]; then
        sleep "$(awk -v m="$ms" 'BEGIN { printf "%.3f", m / 1000 }')"
        kill -KILL "$inj" 2>/dev/null
    fi
    wait "$inj" 2>/dev/null
    irc=$?
    [ "$irc" = 137 ] && killed=$((killed + 1))
    alive=$(kill -0 "$pid" 2>/dev/null && echo yes)
    tracer=$(sed -n 's/^TracerPid:[[:space:]]*//p' /proc/"$pid"/status 2>/dev/null)
    printf x >&3
    wait "$pid"
    rc=$?
    pid=
    exec 3>&-
    got=$(cat "$d/done" 2>/dev/null)
    [ -n "${ATTACH_KILL_TIME:-}" ] && echo "time $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')"
    if [ "$alive" = yes ] && [ "$tracer" = 0 ] && [ "$rc" = 7 ] &&
        [ "$got" = "x 2666646666700000" ] && [ ! -s "$d/err" ] && [ ! -s "$d/out" ]; then
        echo "ok   $name (injector exit $irc): the target survived, read its byte, exit 7"
    else
        echo "FAIL $name (injector exit $irc): alive after the kill '$alive', TracerPid '$tracer'," \
            "exit $rc (want 7), done '$got'"
        sed 's/^/    attach: /' "$d/attach"
        sed 's/^/    target: /' "$d/err"
        fail=1
    fi
}

for step in stopped saved written started waiting restore taken restored called; do
    one "steps: killed at $step" -1 "$slow" CUPTOP_INJECT_DIE_AT=$step
done
k=0
for ms in $delays; do
    k=$((k + 1))
    if [ $k -le "$runs" ]; then one "slow: killed after $ms ms" "$ms" "$slow"
    else one "agent: killed after $ms ms" "$ms" "$agent"; fi
done
check "injectors that were killed before they finished (of $n)" \
    "$([ "$killed" -ge "$runs" ] && echo "at least $runs")" "at least $runs"
exit $fail
