#!/bin/sh
# tmux_job.sh - the sessions screen groups a job's processes: a job of three
# simulated ranks started under one `cuptop run` (rank 1 killed with -9)
# and a session of its own; the job's row carries the model's verdict over
# its processes (INCOMPLETE, 1 crashed) and its sessions follow it by rank,
# its launcher (a process with no rank and no CUDA work) marked, last;
# Enter on the job row opens its first process.  A cuptop run of one
# process (a job of its own id) is its session's row alone, no job row;
# the filter (/) matches its --label.  Skips (77) without the agent, the
# simulated CUPTI and simapp.
set -u
. "${top_srcdir:-.}/tests/tui/tui_lib.sh"

b=$top_builddir
for f in libcuptop-agent.so libcuptop-simcupti.so cuptop-simapp; do
    [ -e "$b/$f" ] || { echo "SKIP: $f not built"; exit 77; }
done
store=$TUI_TMP/store
export CUPTOP_CUPTI_LIBRARY=$b/libcuptop-simcupti.so CUPTOPSIM_SEED=7
unset CUPTOP_JOB RANK LOCAL_RANK OMPI_COMM_WORLD_RANK SLURM_PROCID WORLD_SIZE
app=$b/cuptop-simapp
# a session of its own first, so that it sorts among the job's
CUDA_INJECTION64_PATH=$b/libcuptop-agent.so CUPTOP_STORE=$store CUPTOP_KINDS=kernel \
    "$app" --seconds 0.3
"$b/cuptop" run --store "$store" --job tuijob --kinds kernel -- sh -c "
    '$app' --seconds 0.3 --scale 0 &
    RANK=2 '$app' --seconds 0.5 & RANK=1 '$app' --seconds 0.5 --exit kill & RANK=0 '$app' --seconds 0.5; wait" \
    2>/dev/null
CUDA_INJECTION64_PATH=$b/libcuptop-agent.so CUPTOP_STORE=$store CUPTOP_KINDS=kernel \
    "$app" --seconds 0.3
"$b/cuptop" run --store "$store" --kinds kernel --label zebra-net -- "$app" --seconds 0.3 2>/dev/null
[ "$(ls "$store" | wc -l)" -eq 7 ] || fail "expected 7 sessions in the store"
solo=$("$b/cuptop" sessions --store "$store" --json |
    python3 -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin) if s["label"] == "zebra-net"][0])')

tui_start_size 120 30 "$b/cuptop" --store "$store"
tui_wait "job tuijob" "the job's row"
s=$(tui_screen)
echo "$s" | grep -Eq '^crashed +job tuijob +INCOMPLETE +4 processes, 1 launcher, 1 crashed' ||
    fail "the job row: state crashed, verdict INCOMPLETE, 4 processes, 1 launcher, 1 crashed"
# the launcher (no rank, no CUDA work) follows the ranks, marked
echo "$s" | sed -n '/job tuijob/,$p' | sed -n 5p | grep -q 'COMPLETE *launcher cuptop-simapp' ||
    fail "the launcher's row: $(echo "$s" | sed -n '/job tuijob/,$p' | sed -n 5p)"
# the three ranks follow the job row, in rank order
after=$(echo "$s" | sed -n '/job tuijob/,$p' | sed -n '2,4p')
[ "$(echo "$after" | sed -n 's/.*rank \([0-9]\).*/\1/p' | tr -d '\n')" = 012 ] ||
    fail "the job's sessions do not follow its row by rank: $after"
echo "$after" | sed -n 2p | grep -q '^crashed ' || fail "rank 1 is not shown crashed"
echo "$after" | grep -q 'INCOMPLETE' || fail "no INCOMPLETE process under the job"
[ "$(echo "$s" | grep -c 'COMPLETE *cuptop-simapp')" -eq 3 ] ||
    fail "the three sessions of their own are not listed apart"
echo "$s" | grep -q 'job job-' && fail "a cuptop run of one process has a job row: $(echo "$s" | grep 'job job-')"
echo "$s" | grep -F "$solo" | grep -q 'COMPLETE *cuptop-simapp' || fail "the one-process run's session row"
echo "ok   the job's row and its ranks; a one-process run is its session's row"
# / matches the label: the labelled session alone is left
tui_keys '/'
tui_wait "Filter:"
tui_keys z e b r a Enter
tui_wait "filter: zebra"
s=$(tui_screen)
echo "$s" | grep -qF "$solo" || fail "the filter on the label lost its session"
[ "$(echo "$s" | grep -c 'cuptop-simapp')" -eq 1 ] || fail "the filter on the label kept other sessions"
echo "ok   / matches the label"
tui_keys Escape
tui_wait "job tuijob" "the filter cleared"
# Enter on the job row: its first process (rank 0) opens
rank0=$("$b/cuptop" sessions --store "$store" --job tuijob --json |
    python3 -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin) if s["rank"] == 0][0])')
tui_keys Home
i=0
while ! tui_screen | grep -E '^crashed +job tuijob' | grep -q .; do
    i=$((i + 1)); [ $i -lt 50 ] || fail "job row not found"; tui_keys Down; sleep 0.1
done
# move the selection onto the job row
n=$(tui_screen | grep -n 'job tuijob' | cut -d: -f1)
top=$(tui_screen | grep -n '^STATE' | cut -d: -f1)
tui_keys Home
k=$((n - top - 1))
while [ $k -gt 0 ]; do tui_keys Down; k=$((k - 1)); done
tui_keys Enter
tui_wait "callback latency" "the dashboard"
tui_screen | grep -q "$rank0" || fail "Enter on the job row did not open rank 0 ($rank0)"
echo "ok   Enter on the job row opens rank 0"
tui_keys q
sleep 0.3
tui_keys q
exit 0
