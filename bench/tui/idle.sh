#!/bin/sh
# idle.sh - idle CPU of the live monitor at 1 Hz: cuptop in a tmux window on
# a store of 8 sessions (one of them live, written every second), first on
# the sessions screen, then on the live session's dashboard.  CPU from
# /proc/PID/stat (utime + stime).  Target: <= 1 %.
#
#   bench/tui/idle.sh BUILDDIR [SECONDS-PER-SCREEN]
set -eu
b=${1:?usage: idle.sh BUILDDIR [SECONDS]}
secs=${2:-30}
tmp=$(mktemp -d)
sock="cuptop-idle-$$"
"$b/tui-fill-store" --store "$tmp/store" --sessions 8 --live 0 > "$tmp/ids" &
fill=$!
trap 'tmux -L "$sock" kill-server 2>/dev/null || true; kill $fill 2>/dev/null || true; rm -rf "$tmp"' EXIT
while [ "$(wc -l < "$tmp/ids")" -lt 8 ]; do sleep 0.2; done
tmux -L "$sock" -f /dev/null new-session -d -x 120 -y 40 \
    "exec env LANG=C.UTF-8 TERM=screen-256color $b/cuptop --store $tmp/store"
sleep 2
pid=$(tmux -L "$sock" list-panes -F '#{pane_pid}')
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
measure() {
    t0=$(ticks); s0=$(date +%s.%N)
    sleep "$secs"
    t1=$(ticks); s1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" -v s0="$s0" -v s1="$s1" -v hz="$hz" -v name="$1" \
        'BEGIN { cpu = (b - a) / hz; wall = s1 - s0;
                 printf "| %-34s | %5.1f | %6.2f | %5.2f %% | %s |\n", name, wall, cpu, 100 * cpu / wall,
                        (100 * cpu / wall <= 1.0) ? "yes" : "NO" }'
}
echo "| screen (120x40, 8 sessions, 1 live) | wall s | CPU s | CPU | <= 1 % |"
echo "|------------------------------------|--------|-------|-----|--------|"
measure "sessions screen"
tmux -L "$sock" send-keys Home Enter
sleep 1
measure "dashboard of the live session"
