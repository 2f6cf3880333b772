#!/bin/sh
# test_security.sh - the store directory and who may talk to the agent.
#  - default location: ${XDG_STATE_HOME}/cuptop when XDG_STATE_HOME is an
#    absolute path, else $HOME/.local/state/cuptop; created 0700 (missing
#    parents too), session directories 0700, data.mdb and lock.mdb 0600;
#    nothing written to the working directory;
#  - an existing store directory that is group/world writable, or (root
#    only) owned by another user: the agent steps aside, writes nothing
#    there, the application is unharmed;
#  - control requests only from the store's owner: another uid (nobody,
#    through setpriv, root only) cannot write a control request nor read
#    the store, and the agent never applies one.
. "${top_srcdir:?}/tests/faults/lib.sh"
need_sim
mode_of() { stat -c %a "$1"; }

# run_app NAME [ENV...]: simapp with the agent, CUPTOP_STORE unset, in an
# empty working directory; APP_RC
run_app() {
    d=$WORK/$1
    shift
    mkdir -p "$d/cwd"
    (cd "$d/cwd" && env -u CUPTOP_STORE -u XDG_STATE_HOME $SIM_DFL CUDA_INJECTION64_PATH="$AGENT" \
        CUPTOP_CUPTI_LIBRARY="$SIMLIB" "$@" "$SIMAPP" --seconds 0.3 >"$d/out" 2>"$d/err")
    APP_RC=$?
    check "$(basename "$d"): the application is unharmed" "$APP_RC" 0
    check "$(basename "$d"): nothing in the working directory" "$(ls -A "$d/cwd" | wc -l | tr -d ' ')" 0
    [ -s "$d/out" ] && fail "$(basename "$d"): output on the application's stdout"
}

# default under $HOME
mkdir -m 755 "$WORK/home"
run_app home HOME="$WORK/home"
s=$WORK/home/.local/state/cuptop
check "HOME: store created at ~/.local/state/cuptop" "$(sessions "$s" | wc -l | tr -d ' ')" 1
check "HOME: store mode" "$(mode_of "$s")" 700
check "HOME: ~/.local mode (created)" "$(mode_of "$WORK/home/.local")" 700
check "HOME: ~/.local/state mode (created)" "$(mode_of "$WORK/home/.local/state")" 700
id=$(sessions "$s" | head -1)
check "session directory mode" "$(mode_of "$s/$id")" 700
check "data.mdb mode" "$(mode_of "$s/$id/data.mdb")" 600
check "lock.mdb mode" "$(mode_of "$s/$id/lock.mdb")" 600

# XDG_STATE_HOME (absolute) wins; a relative one is ignored
mkdir -m 755 "$WORK/home2"
run_app xdg HOME="$WORK/home2" XDG_STATE_HOME="$WORK/xdg"
check "XDG: store at \$XDG_STATE_HOME/cuptop" "$(sessions "$WORK/xdg/cuptop" | wc -l | tr -d ' ')" 1
check "XDG: store mode" "$(mode_of "$WORK/xdg/cuptop")" 700
check "XDG: nothing under HOME" "$(ls -A "$WORK/home2" | wc -l | tr -d ' ')" 0
mkdir -m 755 "$WORK/home3"
run_app xdgrel HOME="$WORK/home3" XDG_STATE_HOME=relative/state
check "relative XDG_STATE_HOME ignored: store under HOME" \
    "$(sessions "$WORK/home3/.local/state/cuptop" | wc -l | tr -d ' ')" 1

# an existing store that others may write: the agent steps aside
mkdir -m 777 "$WORK/open.store"
chmod 777 "$WORK/open.store"
run_app open CUPTOP_STORE="$WORK/open.store"
check "store mode 0777: nothing written" "$(ls -A "$WORK/open.store" | wc -l | tr -d ' ')" 0
check "store mode 0777: left as it was" "$(mode_of "$WORK/open.store")" 777

if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1; then
    # owned by another user: the agent steps aside
    mkdir -m 700 "$WORK/theirs.store"
    chown nobody "$WORK/theirs.store"
    run_app theirs CUPTOP_STORE="$WORK/theirs.store"
    check "store owned by nobody: nothing written" "$(ls -A "$WORK/theirs.store" | wc -l | tr -d ' ')" 0

    # another uid against our live session: no control request, no read
    chmod 711 "$WORK"
    sim_start ctl -- --seconds 3 --exit return --ready-file "$WORK/ctl.ready"
    st=$SIM_DIR/store
    wait_until 60 sh -c "[ -n \"\$('$CTL' sessions '$st')\" ]"
    id=$(sessions "$st" | head -1)
    as_nobody() { setpriv --reuid=nobody --regid=65534 --clear-groups "$@"; }
    as_nobody "$CTL" control "$st" "$id" kernel >"$WORK/ctl.out" 2>&1
    check "nobody: agentctl control refused (exit)" "$?" 2
    as_nobody "$CTL" dump "$st" "$id" >/dev/null 2>&1
    check "nobody: agentctl dump refused (exit)" "$?" 2
    as_nobody "$CUPTOP" check --store "$st" "$id" >/dev/null 2>&1
    check "nobody: cuptop check refused (exit)" "$?" 2
    wait_pid "$SIM_PID" 120
    check "ctl: the application's exit status" "$WAIT_RC" 0
    "$CTL" dump "$st" "$id" >"$WORK/ctl.d"
    check "ctl: no control request applied (epochs)" "$(val "$WORK/ctl.d" epochs)" 1
    check "ctl: no control generation acknowledged" "$(val "$WORK/ctl.d" health.ctl_gen_applied)" 0
    chmod 700 "$WORK"
else
    skip_part "another user's store and another uid's control request: not root, or no nobody/setpriv"
fi
finish
