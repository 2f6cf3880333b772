#!/bin/sh
# tmux_attach.sh - the sessions screen's A key (cuptop attach from the
# monitor): an application on the simulated CUPTI started with no agent is
# listed among the CUDA processes without a session, with its command line;
# choosing it attaches (the status line says so), its session appears as
# running, and the records made after the attach are stored (200 kernels per
# device, the simulator's own count).  Skips (77) without the simulator or
# when ptrace is not allowed here (Yama ptrace_scope >= 2, not root).
set -u
. "${top_srcdir:-.}/tests/tui/tui_lib.sh"

b=$(cd "$top_builddir" && pwd)
for f in libcuptop-agent.so libcuptop-simcupti.so simdrive agentctl; do
    [ -e "$b/$f" ] || { echo "SKIP: $f not built"; exit 77; }
done
case $(uname -m) in x86_64) ;; *) echo "SKIP: cuptop attach is x86-64 only"; exit 77 ;; esac
scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
if [ "$scope" -ge 2 ] && [ "$(id -u)" != 0 ]; then   # (simdrive allows any tracer)
    echo "SKIP: Yama ptrace_scope $scope (not root): the monitor cannot ptrace the application"
    exit 77
fi
store="$TUI_TMP/store"
mkdir -m 700 -p "$store"   # (the monitor wants an existing store)
d=$TUI_TMP/app
mkdir -p "$d"
"$b/simdrive" "$b/libcuptop-simcupti.so" none "$d/truth" seq:ctx,mark:ready,wait:go,emit:200,mark:done \
    return >"$d/out" 2>"$d/err" &
app=$!
TUI_PIDS="$TUI_PIDS $app"
tui_wait_until test -e "$d/ready"
cd "$TUI_TMP" || exit 1
tui_start_size 120 30 "$b/cuptop" top --store "$store"
tui_wait "Attach" "the footer names the A key"
tui_keys A
tui_wait "Attach cuptop to" "the attach chooser"
# other tests' applications may be listed too: move to ours
row=$(tui_screen | grep -E "^ *│? *[0-9]+  " | grep -n " $app  " | cut -d: -f1)
[ -n "$row" ] || fail "process $app is not in the chooser"
tui_screen | grep -q " $app  .*simdrive" || fail "the chooser lacks the command line"
i=1
while [ "$i" -lt "$row" ]; do tui_keys Down; i=$((i + 1)); done
tui_keys Enter
tui_wait "attach $app: session" "the status line saying the attach worked"
tui_wait_re "running.* $app " "the new session, running"
touch "$d/go"
tui_wait_until test -e "$d/done"
wait "$app" || fail "the application exited with $?"
id=$("$b/agentctl" sessions "$store" | head -1)
n=$("$b/agentctl" dump "$store" "$id" | sed -n 's/^records\.kernel\.0=//p')
[ "$n" = 200 ] || fail "kernel records on device 0: '$n' (want 200)"
tui_keys q
echo "ok: attached from the monitor; 200 kernel records after the attach"
