# tools/apt_wait.sh - sourced by tools/build.sh: apt_lock_wait LIMIT [SUDO]
# waits until no process holds dpkg's and apt's locks (another apt-get,
# dpkg or unattended-upgrades), at most LIMIT seconds, saying once on
# stderr what it waits for.  Returns 0 when they are free, 1 (with a
# message) when one is still held at the limit.  SUDO ("sudo" or "")
# runs fuser, so that a root-owned apt-get is seen.  CUPTOP_APT_LOCKS
# replaces the list of lock files (tests/tools/apt_wait.sh).
apt_lock_wait() {
    limit=$1 asroot=${2:-} waited=0 said=0
    locks=${CUPTOP_APT_LOCKS:-"/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock
        /var/lib/apt/lists/lock /var/cache/apt/archives/lock"}
    command -v fuser >/dev/null 2>&1 || return 0   # cannot tell: apt-get says
    while :; do
        held=""
        for l in $locks; do
            [ -e "$l" ] && $asroot fuser "$l" >/dev/null 2>&1 && { held=$l; break; }
        done
        [ -z "$held" ] && return 0
        if [ "$waited" -ge "$limit" ]; then
            echo "build.sh: $held is still held after $limit s (another apt-get or dpkg):" \
                 "let it finish, or raise CUPTOP_APT_WAIT, and run again" >&2
            return 1
        fi
        if [ "$said" = 0 ]; then
            echo "build.sh: another apt-get or dpkg holds $held: waiting for it" \
                 "(at most $limit s, CUPTOP_APT_WAIT)" >&2
            said=1
        fi
        sleep 1
        waited=$((waited + 1))
    done
}
