#!/bin/sh
# test_exporter_cli.sh - cuptop exporter's command line: misuse is one line
# and exit 2, the textfile mode writes a valid exposition atomically (and
# again every --interval), a busy port is refused, SIGTERM ends it with 0.
set -u
b=${top_builddir:?}
s=${top_srcdir:?}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-exporter-cli.XXXXXX")
epid=""
trap '[ -n "$epid" ] && kill $epid 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }

# misuse: exit 2 and one line on stderr
for args in "--bogus" "--listen" "--listen 127.0.0.1" "--listen nohost:80" \
            "--listen 127.0.0.1:70000" "--listen [::1]9966" "--max-sessions 0" \
            "--retention -1" "--timeout 0" "--interval 5" "--once" \
            "--textfile $tmp/x.prom --listen 127.0.0.1:1" "extra"; do
    # shellcheck disable=SC2086
    "$b/cuptop" exporter $args >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && [ ! -s "$tmp/out" ]; then
        ok "exporter $args: exit 2, $(cat "$tmp/err")"
    else
        bad "exporter $args: exit $rc"; cat "$tmp/err"
    fi
done
"$b/cuptop" exporter --help | grep -q 'cuptop exporter \[--listen ADDR:PORT\]' || bad "--help"
"$b/cuptop" --help | grep -q '^  exporter ' || bad "exporter not in cuptop --help"

# a store: running, two ended 2 min ago, one crashed 10 min ago
"$b/tui-fill-store" --store "$tmp/store" --sessions 4 --seconds 20 >"$tmp/ids" || bad "fill"
find "$tmp/store" -name data.mdb -exec sha256sum {} + | sort >"$tmp/sum0"
if "$b/cuptop" exporter --store "$tmp/store" --textfile "$tmp/cuptop.prom" --once --retention 300; then
    n=$(grep -c '^cuptop_session_info{' "$tmp/cuptop.prom")
    if [ "$n" = 3 ] && command -v promtool >/dev/null &&
        promtool check metrics <"$tmp/cuptop.prom" >"$tmp/pt" 2>&1; then
        ok "--textfile --once: $n sessions (the one crashed 10 min ago is past --retention 300), promtool accepts it"
    elif [ "$n" = 3 ] && ! command -v promtool >/dev/null; then
        ok "--textfile --once: $n sessions (promtool not installed: not checked)"
    else
        bad "--textfile --once: $n sessions"; cat "$tmp/pt" 2>/dev/null
    fi
else
    bad "--textfile --once failed"
fi
ls "$tmp" | grep -q 'cuptop.prom.tmp' && bad "a temporary file was left behind"
# every --interval: the scrape counter moves; SIGTERM ends it with 0
"$b/cuptop" exporter --store "$tmp/store" --textfile "$tmp/loop.prom" --interval 1 &
epid=$!
i=0
while ! grep -qs '^cuptop_exporter_scrapes_total 3$' "$tmp/loop.prom" && [ $i -lt 100 ]; do
    sleep 0.1; i=$((i + 1))
done
grep -qs '^cuptop_exporter_scrapes_total 3$' "$tmp/loop.prom" && ok "--interval 1 rewrites the file" ||
    bad "--interval 1 did not rewrite the file"
kill -TERM $epid
wait $epid
rc=$?
epid=""
[ $rc = 0 ] && ok "SIGTERM: exit 0" || bad "SIGTERM: exit $rc"
# a textfile that cannot be written: exit 1, one line
"$b/cuptop" exporter --store "$tmp/store" --textfile "$tmp/nodir/x.prom" --once 2>"$tmp/err"
rc=$?
[ $rc = 1 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && ok "unwritable textfile: exit 1, $(cat "$tmp/err")" ||
    bad "unwritable textfile: exit $rc"

# a busy port: exit 2, one line
"$b/cuptop" exporter --store "$tmp/store" --listen 127.0.0.1:0 2>"$tmp/first.err" &
epid=$!
i=0
while ! grep -q 'serving' "$tmp/first.err" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
port=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$tmp/first.err")
"$b/cuptop" exporter --store "$tmp/store" --listen "127.0.0.1:$port" 2>"$tmp/err" &
second=$!
( sleep 10; kill $second 2>/dev/null ) &
wait $second
rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && ok "busy port: exit 2, $(cat "$tmp/err")" ||
    bad "busy port: exit $rc"; 
# the IPv6 loopback, where the host has it
if "$b/cuptop" exporter --store "$tmp/store" --listen '[::1]:0' 2>"$tmp/v6.err" &
then
    v6=$!
    i=0
    while ! grep -q 'serving\|cannot' "$tmp/v6.err" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    if grep -q 'serving http://\[::1\]:' "$tmp/v6.err"; then
        ok "IPv6: $(cat "$tmp/v6.err")"
    else
        echo "note: no IPv6 loopback here: $(cat "$tmp/v6.err")"
    fi
    kill $v6 2>/dev/null
    wait $v6 2>/dev/null
fi
find "$tmp/store" -name data.mdb -exec sha256sum {} + | sort >"$tmp/sum1"
cmp -s "$tmp/sum0" "$tmp/sum1" && ok "the store was not written" || bad "the store was written"
exit $fail
