# tests/agent/sim_lib.sh - the common start of the scripts that drive the
# agent against the simulator through simdrive (sim_attach.sh,
# sim_capture.sh, sim_scope.sh).  Set SIM_LIB_NAME, then source it:
#   SIM_LIB_NAME=attach; . "${top_srcdir:?}/tests/agent/sim_lib.sh"
# It sets b, s, sim, agent, drive, ctl; exits 77 without the simulator or
# python3; makes $tmp (removed at exit, with a background app in $pid
# killed); seeds the clean scenario; defines val FILE KEY and
# check NAME GOT WANT (which sets fail=1 on a mismatch); skip_part and
# parts_summary from tests/skip_part.sh.
set -u
b=${top_builddir:?}
s=${top_srcdir:?}
. "$s/tests/skip_part.sh"   # skip_part, parts_summary
sim=$b/libcuptop-simcupti.so
agent=$b/libcuptop-agent.so
drive=$b/simdrive
ctl=$b/agentctl
for f in "$sim" "$agent" "$drive" "$ctl" "$b/cuptop"; do
    [ -e "$f" ] || { echo "missing $f: skipped"; exit 77; }
done
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-${SIM_LIB_NAME:-sim}.XXXXXX")
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
export CUPTOP_STOP_TIMEOUT_MS=${CUPTOP_STOP_TIMEOUT_MS:-20000}
export CUPTOPSIM_SEED=7 CUPTOPSIM_SCENARIO=clean
val() { sed -n "s/^$2=//p" "$1" | head -1; }
check() { # NAME GOT WANT
    if [ "$2" = "$3" ]; then echo "ok   $1: $2"; else echo "FAIL $1: $2 (want $3)"; fail=1; fi
}
