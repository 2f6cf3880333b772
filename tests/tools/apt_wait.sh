#!/bin/sh
# apt_wait.sh - tools/build.sh waits for another apt-get (issue 27): with a
# lock file held by another process, apt_lock_wait says once what it waits
# for and returns 0 once the holder lets go; with a limit shorter than the
# holder, it returns 1 and says the lock is still held.  Lock files are
# stand-ins (CUPTOP_APT_LOCKS), held open by a background process as dpkg
# holds its own.  Exits 77 without fuser (then build.sh cannot tell).
set -u
command -v fuser >/dev/null || { echo "no fuser: skipped"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-aptwait.XXXXXX")
holder=
trap '[ -n "$holder" ] && kill "$holder" 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
check() { if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: got '$2' want '$3'"; fail=1; fi; }
. "${top_srcdir:?}/tools/apt_wait.sh"
export CUPTOP_APT_LOCKS="$tmp/lock-frontend $tmp/lock"
: >"$tmp/lock-frontend"
: >"$tmp/lock"

apt_lock_wait 5 "" 2>"$tmp/free.err"
check "no holder: free at once" "$?/$(wc -c <"$tmp/free.err" | tr -d ' ')" "0/0"

# a holder that lets go when told (a fifo: no timing in the assertion)
mkfifo "$tmp/go"
sh -c 'exec 3<"$1"; read x <"$2"' sh "$tmp/lock" "$tmp/go" &
holder=$!
i=0
while ! fuser "$tmp/lock" >/dev/null 2>&1 && [ $i -lt 500 ]; do sleep 0.01; i=$((i + 1)); done
apt_lock_wait 1 "" 2>"$tmp/limit.err"
check "held past the limit: 1" "$?" 1
grep -q "build.sh: $tmp/lock is still held after 1 s (another apt-get or dpkg)" "$tmp/limit.err"
check "held past the limit: says which lock and what to do" "$?" 0
apt_lock_wait 600 "" 2>"$tmp/wait.err" &
waiter=$!
i=0
while ! grep -q "waiting for it" "$tmp/wait.err" && [ $i -lt 500 ]; do sleep 0.01; i=$((i + 1)); done
echo go >"$tmp/go"
wait "$holder"
holder=
wait "$waiter"
check "waits, then goes on once the holder lets go" "$?" 0
check "says once that it waits" "$(grep -c "another apt-get or dpkg holds $tmp/lock: waiting for it" "$tmp/wait.err")" 1
exit $fail
