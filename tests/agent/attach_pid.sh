#!/bin/sh
# attach_pid.sh - cuptop attach PID over the simulated CUPTI: the
# application (simdrive) starts with no agent at all and cuptop's own
# ptrace injector brings it in later.
#  basic    attached after 1 s: a session appears, the records made after
#           the acknowledged attach equal the simulator's truth exactly, the
#           runtime API records included (the API record policy applied)
#           (check_truth.py; those made before it are never delivered),
#           nothing printed by the agent, and a SIGTERM sent later runs
#           the application's own handler (chained) with its exit status
#  read     attached while the thread is blocked in read(2) on a FIFO, with
#           4 more threads running: the read returns the byte written
#           after the attach (the system call restarted, not EINTR)
#  detach   cuptop control --detach: the library stays loaded, dormant,
#           and says so
#  twice    a second attach to the same process loads nothing: it turns
#           more kinds on through a control request
#  signal   a SIGUSR1 sent to the thread while the injector holds it: the
#           program's handler runs once, after; its read(2) restarts
#  exit thread  a thread other than main calls exit(): the stop protocol
#           runs (atexit, on that thread), records against the truth
#  late cuda  attached before the program loads CUDA (simapp --cuda-after):
#           the agent waits, then starts; records against the truth
#  not cuda  a process that never loads CUDA: cuptop attach says the agent
#           waits (and how long: CUPTOP_ATTACH_CUDA_WAIT), cuptop sessions
#           lists the wait, a second attach says so, and the agent gives up
#           after the bound (its thread ends), which sessions shows
#  exit     the target ends while cuptop attach waits: it says so at once,
#           exit 1, the target's own status kept
#  concurrent  two cuptop attach at the same time: both exit 0, one session,
#           no misleading "foreign or damaged" or "ptrace refused"
#  refuse   not a number, no such process, a zombie, cuptop itself, no
#           right to ptrace (as another uid, when run as root): exit 2
#  survive  the injector killed (SIGKILL) at the stopped, saved and written
#           steps, and a library that does not load: the target runs on,
#           its blocked read still returns what it is sent
# The targets allow any tracer (simdrive: prctl PR_SET_PTRACER), so Yama
# ptrace_scope 1 is fine; exits 77 at scope 2/3 when not root, or without
# the simulator.
SIM_LIB_NAME=attachpid
. "${top_srcdir:?}/tests/agent/sim_lib.sh"
case $(uname -m) in x86_64) ;; *) echo "cuptop attach is x86-64 only: skipped"; exit 77 ;; esac
scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
# simdrive with no agent allows any tracer (PR_SET_PTRACER), so scope 1
# works; the simapp case and scope 2/3 need root
if [ "$scope" -ge 2 ] && [ "$(id -u)" != 0 ]; then
    echo "Yama ptrace_scope is $scope and this is not root: cuptop attach cannot trace"
    echo "here (sysctl kernel.yama.ptrace_scope=0 or 1): skipped"
    exit 77
fi
cuptop=$b/cuptop
wait_file() { # PATH (60 s at most)
    i=0
    while [ ! -e "$1" ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i + 1)); done
    [ -e "$1" ] || { echo "FAIL: $1 never appeared"; fail=1; }
}
start() { # DIR SEQ EXIT: the application, no agent
    d=$1
    mkdir -p "$d"
    # no timeout(1) around it: $! must be the application itself (its
    # steps wait 60 s at most)
    "$drive" "$sim" none "$d/truth" "seq:$2" "$3" >"$d/out" 2>"$d/err" &
    pid=$!
}
sessions() { ls "$1/store" 2>/dev/null | grep -c -- "-$2" ; }
reap() { # NAME WANT: wait for the application, check its exit status
    wait "$pid"
    check "$1" "$?" "$2"
    pid=
}
accounted() { # NAME OK-TEXT CHECK_TRUTH-ARGS...: $d's session ($id) dumped to
    # $d/dump and checked against $d/truth
    id=$("$ctl" sessions "$d/store" | head -1)
    "$ctl" dump "$d/store" "$id" >"$d/dump"
    n=$1 t=$2
    shift 2
    if python3 "$s/tests/agent/check_truth.py" "$d/dump" "$d/truth" "$@" >"$d/check"
    then echo "ok   $n: $t"
    else echo "FAIL $n accounting:"; grep FAIL "$d/check"; fail=1; fi
}

# ---- basic ---------------------------------------------------------------
d=$tmp/basic
start "$d" ctx,emit:300,mark:ready,wait:go,emit:1000,mark:done,sleep:60000 term
wait_file "$d/ready"
sleep 1
"$cuptop" attach --store "$d/store" --kinds kernel,memcpy,runtime "$pid" >"$d/attach" 2>&1
check "basic: cuptop attach exit status" "$?" 0
grep -q "attached; collecting from now on" "$d/attach" || { echo "FAIL basic: no ack"; cat "$d/attach"; fail=1; }
check "basic: one session" "$(sessions "$d" "$pid")" 1
id=$("$ctl" sessions "$d/store" | head -1)
touch "$d/go"
wait_file "$d/done"
"$cuptop" control --store "$d/store" "$id" --detach >"$d/detach" 2>&1
check "detach: exit status" "$?" 0
grep -q "the agent stays loaded in the process, dormant" "$d/detach" ||
    { echo "FAIL detach: does not say the library stays loaded: $(cat "$d/detach")"; fail=1; }
check "detach: the library is still mapped" \
    "$(grep -c libcuptop-agent.so /proc/"$pid"/maps | sed 's/^[1-9][0-9]*$/yes/')" yes
kill -TERM "$pid"
reap "basic: the application's own SIGTERM handler's exit status" 143
check "basic: stdout of the application" "$(cat "$d/out")" ""
check "basic: stderr of the application" "$(cat "$d/err")" ""
accounted basic "every record accounted for against the truth" --exit signal --host-handler 15
for k in kernel memcpy; do
    check "basic: $k records (made after the ack)" "$(val "$d/dump" records.$k.0)" 1000
done
m=$(val "$d/dump" records.memset.0); check "basic: memset (not asked for)" "${m:-0}" 0
# the API record policy at the attach (issue 27): the runtime kind asked for
# is recorded, never left muted; CUPTI started after CUDA here, when call
# ids enabled one by one yield nothing on the H200 (doc/benchmarks.md), so
# the kind is enabled whole, and a note says so
check "basic: the runtime kind enabled whole (truth)" \
    "$(grep -c '^call.cuptiActivityEnableRuntimeApi=' "$d/truth")" 0
grep -q "CUPTI started after CUDA in this process" "$d/dump" ||
    { echo "FAIL basic: no note that the policy records whole API kinds after the attach"; fail=1; }
# (API records have no device: device none; check_truth.py compares the
# count with the truth's, summed over the simulated devices)
rt=$(val "$d/dump" records.runtime.none)
check "basic: runtime records stored (made after the ack)" "$([ "${rt:-0}" -gt 0 ] && echo yes)" yes
check "basic: attached_uid" "$(val "$d/dump" meta.attached_uid)" "$(id -u)"
"$cuptop" check --store "$d/store" "$id" >"$d/cuptop-check" 2>&1
grep -q "attached to the running process" "$d/cuptop-check" ||
    { echo "FAIL basic: cuptop check does not say the session was attached"; cat "$d/cuptop-check"; fail=1; }

# ---- read + threads + twice -------------------------------------------------
d=$tmp/read
mkdir -p "$d"
mkfifo "$d/fifo"
exec 3<>"$d/fifo"
start "$d" ctx,threads:4,mark:ready,read:fifo,emit:500,mark:p1,wait:go,emit:400,mark:done return
wait_file "$d/ready"
sleep 0.5
check "read: blocked in read before the attach" "$(ls "$d/fifo.got" 2>/dev/null)" ""
check "read: threads" "$(ls /proc/"$pid"/task | wc -l)" 5
"$cuptop" attach --store "$d/store" --kinds kernel "$pid" >"$d/attach" 2>&1
check "read: cuptop attach exit status" "$?" 0
check "read: still blocked after the attach" "$(ls "$d/fifo.got" 2>/dev/null)" ""
printf x >&3
wait_file "$d/fifo.got"
check "read: read(2) returned the byte sent after the attach (n byte errno)" \
    "$(cat "$d/fifo.got")" 1120000
wait_file "$d/p1"
"$cuptop" attach --store "$d/store" --kinds kernel,memcpy "$pid" >"$d/attach2" 2>&1
check "twice: second attach exit status" "$?" 0
grep -q "has the agent already" "$d/attach2" || { echo "FAIL twice: loaded again?"; cat "$d/attach2"; fail=1; }
grep -q "applied" "$d/attach2" || { echo "FAIL twice: the request was not applied"; fail=1; }
check "twice: one session" "$(sessions "$d" "$pid")" 1
check "twice: the agent mapped from one file" \
    "$(grep libcuptop-agent.so /proc/"$pid"/maps | awk '{print $5}' | sort -u | wc -l)" 1
touch "$d/go"
reap "read: exit status" 0
exec 3>&-
accounted read "every record accounted for against the truth" --exit return
check "read+twice: kernel records (500 + 400)" "$(val "$d/dump" records.kernel.0)" 900
check "twice: memcpy records (400, after the second attach)" "$(val "$d/dump" records.memcpy.0)" 400

# ---- exit from another thread: the stop protocol still runs (atexit) ---------
d=$tmp/exitthread
start "$d" ctx,threads:2,mark:ready,wait:go,emit:250,exitthread,wait:never return
wait_file "$d/ready"
"$cuptop" attach --store "$d/store" --kinds kernel,memcpy "$pid" >"$d/attach" 2>&1
check "exit thread: cuptop attach exit status" "$?" 0
touch "$d/go"
reap "exit thread: exit status" 0
accounted "exit thread" "every record accounted for, the stop protocol complete" --exit return
check "exit thread: kernel records" "$(val "$d/dump" records.kernel.0)" 250

# ---- late cuda: attached before the program loads CUDA -----------------------
# (cuptop-simapp does not call PR_SET_PTRACER: under Yama scope 1 only root)
if [ "$scope" -ge 1 ] && [ "$(id -u)" != 0 ]; then
    skip_part "late cuda: Yama ptrace_scope $scope, not root"
else
d=$tmp/latecuda
mkdir -p "$d"
CUPTOPSIM_TRUTH=$d/truth "$b/cuptop-simapp" --cuda-after 1.5 --seconds 1.5 --ready-file "$d/ready" \
    >"$d/out" 2>"$d/err" &
pid=$!
sleep 0.5
check "late cuda: no CUDA yet" "$(grep -c simcupti /proc/"$pid"/maps)" 0
"$cuptop" attach --store "$d/store" --kinds kernel "$pid" >"$d/attach" 2>&1
check "late cuda: attach exit status" "$?" 0
grep -q "has not loaded CUDA yet (is it a CUDA program?): the agent is loaded and waits" "$d/attach" ||
    { echo "FAIL late cuda: did not say it waits: $(cat "$d/attach")"; fail=1; }
grep -q "attached; collecting" "$d/attach" || { echo "FAIL late cuda: no ack"; fail=1; }
reap "late cuda: exit status" 0
accounted "late cuda" "every record accounted for against the truth" --exit ctx_destroy
check "late cuda: kernel records stored" "$([ "$(val "$d/dump" records.kernel.0)" -gt 0 ] && echo yes)" yes
fi

# ---- signal: one arrives while the injector holds the thread (CUPTOP_INJECT_PAUSE_AT) ----
d=$tmp/signal
mkdir -p "$d"
mkfifo "$d/fifo"
exec 4<>"$d/fifo"
start "$d" ctx,usr1,mark:ready,read:fifo,usr1count,emit:100,mark:done return
wait_file "$d/ready"
sleep 0.3
CUPTOP_INJECT_PAUSE_AT=saved "$cuptop" attach --store "$d/store" --kinds kernel "$pid" \
    >"$d/attach" 2>&1 &
inj=$!
sleep 0.5
# to the stopped thread itself (tgkill), so it is the injector's to keep
python3 -c 'import ctypes, sys; p = int(sys.argv[1])
sys.exit(ctypes.CDLL(None, use_errno=True).syscall(234, p, p, 10) != 0)' "$pid" ||
    { echo "FAIL signal: tgkill"; fail=1; }
wait "$inj"
check "signal: cuptop attach exit status" "$?" 0
printf y >&4
wait_file "$d/done"
reap "signal: exit status" 0
exec 4>&-
check "signal: the program's SIGUSR1 handler ran once" "$(cat "$d/usr1")" 1
check "signal: its read(2) restarted and got the byte (n byte errno)" "$(cat "$d/fifo.got")" 1121000
id=$("$ctl" sessions "$d/store" | head -1)
check "signal: kernel records after the attach" "$("$ctl" dump "$d/store" "$id" | sed -n 's/^records\.kernel\.0=//p')" 100

# ---- not cuda: a process that does not load CUDA (issue 27) ------------------------
# cuptop-simapp --cuda-after 30 (the same build as the agent, so an ASan
# agent loads too; under Yama scope 1 only root, as for late cuda): the
# agent says it waits, for how long (CUPTOP_ATTACH_CUDA_WAIT), sessions
# lists the wait, and it gives up: its thread ends (it polled forever before)
if [ "$scope" -ge 1 ] && [ "$(id -u)" != 0 ]; then
    skip_part "not cuda, exit: Yama ptrace_scope $scope, not root"
else
d=$tmp/notcuda
mkdir -p "$d"
CUPTOPSIM_TRUTH=$d/truth "$b/cuptop-simapp" --cuda-after 30 --seconds 0.5 \
    --ready-file "$d/ready" >"$d/out" 2>"$d/err" &
pid=$!
i=0   # the program itself runs (its ready file comes only after CUDA)
while [ "$(readlink "/proc/$pid/exe" | sed 's,.*/,,')" != cuptop-simapp ] && [ $i -lt 500 ]; do
    sleep 0.02; i=$((i + 1)); done
threads0=$(ls /proc/"$pid"/task | wc -l)
CUPTOP_ATTACH_CUDA_WAIT=3 "$cuptop" attach --store "$d/store" --wait 0.5 "$pid" >"$d/attach" 2>&1
check "not cuda: attach exit status (the agent loaded, waiting)" "$?" 0
grep -q "has not loaded CUDA yet (is it a CUDA program?): the agent is loaded and waits up to 3 s" "$d/attach" ||
    { echo "FAIL not cuda: does not say what the agent does: $(cat "$d/attach")"; fail=1; }
"$cuptop" sessions --store "$d/store" >"$d/sessions" 2>&1
grep -q "process $pid: attached at .*, no session yet: it has not loaded CUDA; the agent waits for it until" "$d/sessions" ||
    { echo "FAIL not cuda: sessions does not list the wait: $(cat "$d/sessions")"; fail=1; }
"$cuptop" attach --store "$d/store" --kinds kernel "$pid" >"$d/again" 2>&1
check "not cuda: a second attach while it waits: exit status" "$?" 0
grep -q "no session yet: it has not loaded CUDA" "$d/again" ||
    { echo "FAIL not cuda: the second attach does not say it waits: $(cat "$d/again")"; fail=1; }
i=0
while ! grep -q '^state=gave_up' "$d/store/.attach-$pid" 2>/dev/null && [ $i -lt 3000 ]; do
    sleep 0.02; i=$((i + 1)); done
i=0
while [ "$(ls /proc/"$pid"/task | wc -l)" != "$threads0" ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done
check "not cuda: the agent's thread ended after the bound (threads as before)" \
    "$(ls /proc/"$pid"/task | wc -l)" "$threads0"
"$cuptop" sessions --store "$d/store" >"$d/sessions2" 2>&1
grep -q "process $pid: .*did not load CUDA by .*; the agent gave up and stays loaded, idle" "$d/sessions2" ||
    { echo "FAIL not cuda: sessions does not say it gave up: $(cat "$d/sessions2")"; fail=1; }
kill "$pid"; wait "$pid" 2>/dev/null; pid=
"$cuptop" sessions --store "$d/store" >"$d/sessions3" 2>&1
check "not cuda: sessions forgets it once the process ended" "$(grep -c "process [0-9]*:" "$d/sessions3")" 0

# ---- exit: the target ends while cuptop attach waits (issue 28) --------------------
d=$tmp/exitwait
mkdir -p "$d"
"$b/cuptop-simapp" --cuda-after 60 --seconds 0.5 >"$d/out" 2>"$d/err" &
pid=$!
i=0
while [ "$(readlink "/proc/$pid/exe" | sed 's,.*/,,')" != cuptop-simapp ] && [ $i -lt 500 ]; do
    sleep 0.02; i=$((i + 1)); done
# the target is killed once cuptop attach says it waits for CUDA
( i=0; while ! grep -q "has not loaded CUDA" "$d/attach" 2>/dev/null && [ $i -lt 3000 ]; do
      sleep 0.02; i=$((i + 1)); done; kill -TERM "$pid" ) &
killer=$!
"$cuptop" attach --store "$d/store" --wait 120 "$pid" >"$d/attach" 2>&1
check "exit: cuptop attach exit status when the target ends first" "$?" 1
grep -q "process $pid ended before the agent started its session" "$d/attach" ||
    { echo "FAIL exit: $(cat "$d/attach")"; fail=1; }
wait "$killer"
wait "$pid"
check "exit: the target's own exit status (SIGTERM)" "$?" 143
pid=
fi

# ---- concurrent: two cuptop attach at once (issue 28) -------------------------------
for n in 1 2 3; do
    d=$tmp/conc$n
    start "$d" ctx,mark:ready,wait:go,emit:100,mark:done return
    wait_file "$d/ready"
    "$cuptop" attach --store "$d/store" --kinds kernel "$pid" >"$d/a1" 2>&1 &
    a1=$!
    "$cuptop" attach --store "$d/store" --kinds kernel,memcpy "$pid" >"$d/a2" 2>&1
    r2=$?
    wait "$a1"
    r1=$?
    if [ "$r1:$r2" = 0:0 ] && ! grep -q "foreign or damaged\|refused\|started the agent already" "$d/a1" "$d/a2"
    then echo "ok   concurrent $n: both attaches exit 0"
    else echo "FAIL concurrent $n: exit $r1 and $r2:"; cat "$d/a1" "$d/a2"; fail=1; fi
    check "concurrent $n: one session" "$(sessions "$d" "$pid")" 1
    touch "$d/go"
    reap "concurrent $n: exit status" 0
done

# ---- refuse -------------------------------------------------------------------
refuse() { # NAME WANT-TEXT CMD...
    name=$1 want=$2
    shift 2
    "$@" >"$tmp/refuse.out" 2>"$tmp/refuse.err"
    rc=$?
    if [ $rc = 2 ] && [ "$(wc -l <"$tmp/refuse.err")" = 1 ] && grep -q "$want" "$tmp/refuse.err"
    then echo "ok   refuse $name: $(cat "$tmp/refuse.err")"
    else echo "FAIL refuse $name: exit $rc: $(cat "$tmp/refuse.err")"; fail=1; fi
}
refuse "not a number" "not a process id" "$cuptop" attach --store "$tmp/r" 12x
refuse "no PID" "no PID given" "$cuptop" attach --store "$tmp/r"
sh -c 'exit 0' & gone=$!; wait $gone
refuse "no such process" "no process $gone" "$cuptop" attach --store "$tmp/r" "$gone"
python3 -c 'import os, sys, time
p = os.fork()
if p == 0: os._exit(0)
print(p, flush=True); time.sleep(30)' >"$tmp/zombie" &
zpid=$!
# (the file exists before python prints into it: wait for the pid itself)
i=0; while [ ! -s "$tmp/zombie" ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i + 1)); done
sleep 0.3
refuse "zombie" "is a zombie" "$cuptop" attach --store "$tmp/r" "$(cat "$tmp/zombie")"
kill "$zpid"; wait "$zpid" 2>/dev/null
refuse "cuptop itself" "cuptop itself" sh -c 'exec "$1" attach --store "$2" $$' sh "$cuptop" "$tmp/r"
refuse "bad option" "unknown option" "$cuptop" attach --frobnicate 1
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    sleep 30 & victim=$!
    chmod 755 "$tmp"
    mkdir -p "$tmp/nobody" && chown 65534 "$tmp/nobody"
    refuse "another uid" "ptrace of $victim refused" \
        setpriv --reuid=65534 --regid=65534 --clear-groups "$cuptop" attach \
        --store "$tmp/nobody/store" "$victim"
    kill "$victim"; wait "$victim" 2>/dev/null
else
    skip_part "refuse another uid: needs root and setpriv"
fi

# ---- survive --------------------------------------------------------------------
d=$tmp/survive
mkdir -p "$d"
mkfifo "$d/fifo"
exec 3<>"$d/fifo"
start "$d" ctx,mark:ready,read:fifo,read:fifo,read:fifo,read:fifo,emit:10,mark:done return
wait_file "$d/ready"
sleep 0.3
for step in stopped saved written; do
    CUPTOP_INJECT_DIE_AT=$step "$cuptop" attach --store "$d/store" "$pid" >/dev/null 2>&1
    check "survive: the injector killed at $step" "$?" 137
    check "survive: $step: the target is alive" "$(kill -0 "$pid" 2>/dev/null && echo yes)" yes
    check "survive: $step: no agent loaded" "$(grep -c libcuptop-agent /proc/"$pid"/maps)" 0
    check "survive: $step: not traced any more" \
        "$(sed -n 's/^TracerPid:[[:space:]]*//p' /proc/"$pid"/status)" 0
done
printf 'not an ELF file\n' >"$d/bad.so"
CUPTOP_AGENT=$d/bad.so "$cuptop" attach --store "$d/store" "$pid" >"$d/bad.out" 2>"$d/bad.err"
check "survive: a library that does not load: exit status" "$?" 1
grep -q "step dlopen: .*bad.so did not load.*restored" "$d/bad.err" ||
    { echo "FAIL survive: no dlopen failure line: $(cat "$d/bad.err")"; fail=1; }
printf abcd >&3
reap "survive: the target's exit status" 0
exec 3>&-
check "survive: its reads returned what was sent" "$(cat "$d/fifo.got")" 1100000
check "survive: it ran to the end" "$([ -e "$d/done" ] && echo yes)" yes
check "survive: stderr of the target" "$(cat "$d/err")" ""
parts_summary
exit $fail
