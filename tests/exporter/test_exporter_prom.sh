#!/bin/sh
# test_exporter_prom.sh - cuptop exporter scraped by the real Prometheus.
#
# Starts Debian's prometheus binary directly (never the system service) on
# a free loopback port with a temporary config (scrape every second) and a
# temporary TSDB, and `cuptop exporter` on other free loopback ports, then:
#   - simulated sessions (clean, drops, crash; and a live writer killed
#     with -9) until Prometheus' HTTP API returns, for every session and
#     every loss class, what `cuptop sessions --json` says;
#   - the crash and the killed writer show as crashed, heartbeat stale;
#   - promtool check metrics on both formats' scrapes;
#   - a damaged session: the others are served, the error is counted;
#   - malformed requests get 4xx, HEAD is served, a client that never
#     sends its request is dropped, a connection past the limit evicts the
#     oldest idle one, 64 clients trickling headers do not stop Prometheus'
#     scrapes, 200 sessions are capped;
#   - the exporter never wrote the stores.
# Exits 77 only when the prometheus binary is not installed.
set -u
b=${top_builddir:?}
s=${top_srcdir:?}
prom=$(command -v prometheus || echo /usr/bin/prometheus)
promtool=$(command -v promtool || echo /usr/bin/promtool)
if [ ! -x "$prom" ] || [ ! -x "$promtool" ]; then
    echo "prometheus/promtool not installed (apt-get install prometheus): skipped"
    exit 77
fi
py="python3 $s/tests/exporter/prom_lib.py"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cuptop-prom-test.XXXXXX")
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    for p in $pids; do wait "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }

. "$s/tests/exporter/prom_lib.sh"

# ---- stores -------------------------------------------------------------
mkdir -m 700 "$tmp/sim" "$tmp/fill" "$tmp/damaged" "$tmp/many"
have_sim=yes
for f in libcuptop-agent.so libcuptop-simcupti.so cuptop-simapp; do
    [ -e "$b/$f" ] || have_sim=no
done
if [ $have_sim = yes ]; then
    for sc in clean drops crash; do
        "$b/cuptop" demo --headless --seconds 2 --scenario "$sc" --store "$tmp/sim" \
            >"$tmp/demo-$sc.out" 2>&1
    done
    # a job of two ranks on two devices with drops: per-device losses and
    # the cuptop_job / rank labels
    CUPTOP_CUPTI_LIBRARY=$b/libcuptop-simcupti.so "$b/cuptop" run --store "$tmp/sim" \
        --job promjob --pool 4 --buffer-size 64K -- sh -c "RANK=0 '$b/cuptop-simapp' --seconds 2 --scenario drops --devices 2 &
            RANK=1 '$b/cuptop-simapp' --seconds 2 --scenario drops --devices 2; wait" \
        >"$tmp/job.out" 2>&1 || bad "the job under cuptop run failed"
    "$b/cuptop" sessions --store "$tmp/sim" --job promjob --json >"$tmp/job.json"
    python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert sorted(s["rank"] for s in j) == [0, 1], j
assert any(v["cupti_dropped"] for s in j for d, v in s["loss_by_device"].items()), "no per-device drops"
' "$tmp/job.json" && ok "the job: ranks 0 and 1, per-device drops" || bad "the job's sessions"
    grep -q 'crashed' "$tmp/demo-crash.out" || bad "the crash scenario did not crash"
    grep -q 'cupti_dropped' "$tmp/demo-drops.out" || bad "the drops scenario lost nothing"
else
    echo "note: the simulated CUPTI is not built: store sessions only"
fi
# complete, incomplete (several loss classes), crashed; one live writer
"$b/tui-fill-store" --store "$tmp/fill" --sessions 4 --seconds 30 --live 0 \
    >"$tmp/fill.ids" 2>&1 &
livepid=$!
pids="$pids $livepid"
i=0
while { [ ! -f "$tmp/fill.ids" ] || [ "$(wc -l <"$tmp/fill.ids")" -lt 4 ]; } && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
live_id=$(awk '$1 == "running" {print $2}' "$tmp/fill.ids")
# a store with one good session and one damaged one
"$b/tui-fill-store" --store "$tmp/damaged" --sessions 3 --seconds 20 >"$tmp/damaged.ids"
bad_id=$(awk '$1 == "incomplete" {print $2}' "$tmp/damaged.ids")
good_id=$(awk '$1 == "complete" {print $2}' "$tmp/damaged.ids")
rm -rf "$tmp/damaged/$(awk '$1 == "running" {print $2}' "$tmp/damaged.ids")"
head -c 65536 /dev/urandom >"$tmp/damaged/$bad_id/data.mdb"
# 200 sessions for the cap
"$b/tui-fill-store" --store "$tmp/many" --sessions 200 --seconds 10 >"$tmp/many.ids"
for d in sim fill damaged; do
    find "$tmp/$d" -name data.mdb -exec sha256sum {} + | sort >"$tmp/$d.sum0"
done

# ---- exporter 1, scraped by Prometheus -----------------------------------
if "$promtool" check rules "$s/doc/prometheus/cuptop-alerts.yml" >"$tmp/rules.out" 2>&1; then
    ok "promtool check rules doc/prometheus/cuptop-alerts.yml"
else
    bad "promtool check rules"; cat "$tmp/rules.out"
fi
# (a retention of an hour: tui-fill-store's crashed session is 10 min old)
start_exporter main --store "$tmp/sim" --store "$tmp/fill" --store "$tmp/damaged" --timeout 3 \
    --retention 3600
port1=$eport
start_prometheus "$s/doc/prometheus/cuptop-alerts.yml" "127.0.0.1:$port1"
ok "prometheus on 127.0.0.1:$pport scrapes the exporter on 127.0.0.1:$port1"

# The live session is seen running, then, killed, as crashed with a stale
# heartbeat.
if $py wait-query "$purl" 60 \
    "cuptop_session_state{session=\"$live_id\",state=\"running\"} == 1" >/dev/null; then
    ok "live session $live_id is running in Prometheus"
else
    bad "live session never seen running"
fi
# the live writer drops records while it runs: the example alert fires
if out=$($py wait-alert "$purl" 60 CuptopRecordsLost "$live_id"); then
    ok "doc/prometheus/cuptop-alerts.yml: $out (an increase)"
else
    bad "$out"
fi
kill -9 "$livepid"
wait "$livepid" 2>/dev/null
if $py wait-query "$purl" 60 "cuptop_session_state{session=\"$live_id\",state=\"crashed\"} == 1 \
        and on(session) cuptop_heartbeat_age_seconds > 5" >/dev/null; then
    ok "the killed writer shows as crashed with a stale heartbeat"
else
    bad "the killed writer never showed as crashed"
fi
if [ $have_sim = yes ]; then
    crash_id=$(grep -o 'session [0-9T-]*' "$tmp/demo-crash.out" | head -1 | cut -d' ' -f2)
    if $py wait-query "$purl" 30 "cuptop_session_state{session=\"$crash_id\",state=\"crashed\"} \
            == 1 and on(session) cuptop_heartbeat_age_seconds > 5" >/dev/null; then
        ok "the crash scenario shows as crashed with a stale heartbeat"
    else
        bad "the crash scenario is not crashed in Prometheus"
    fi
fi

for a in CuptopSessionCrashed CuptopHeartbeatStale; do
    if out=$($py wait-alert "$purl" 60 $a "$live_id"); then
        ok "doc/prometheus/cuptop-alerts.yml: $out"
    else
        bad "$out"
    fi
done
inc_id=$(awk '$1 == "incomplete" {print $2}' "$tmp/fill.ids")
if out=$($py wait-alert "$purl" 30 CuptopRecordsLost "$inc_id"); then
    ok "doc/prometheus/cuptop-alerts.yml: $out (ended with losses before it was first scraped)"
else
    bad "$out"
fi
if out=$($py dashboard "$purl" "$s/doc/prometheus/cuptop-grafana.json"); then
    ok "doc/prometheus/cuptop-grafana.json: $out"
else
    bad "the Grafana dashboard: $out"
fi

# Every session and loss class equal to cuptop sessions --json.
if out=$($py compare "$purl" 90 "$b/cuptop" "$tmp/sim" "$tmp/fill" "$tmp/damaged"); then
    ok "Prometheus equals cuptop sessions --json ($out)"
else
    bad "Prometheus differs from cuptop sessions --json"; echo "$out"
fi

# The damaged session: counted, the good one in the same store served.
if $py wait-query "$purl" 30 'cuptop_exporter_sessions_unreadable == 1' >/dev/null &&
    $py wait-query "$purl" 30 'cuptop_exporter_read_errors_total > 1' >/dev/null &&
    $py wait-query "$purl" 10 "cuptop_session_info{session=\"$good_id\"}" >/dev/null; then
    ok "damaged session counted (unreadable 1), $good_id still served"
else
    bad "the damaged store was not handled"
fi

# promtool on both formats.
curl -sf "http://127.0.0.1:$port1/metrics" >"$tmp/scrape.txt" || bad "curl /metrics"
if "$promtool" check metrics <"$tmp/scrape.txt" >"$tmp/promtool.out" 2>&1; then
    ok "promtool check metrics: text format ($(wc -l <"$tmp/scrape.txt") lines)"
else
    bad "promtool check metrics"; cat "$tmp/promtool.out"
fi
grep -q '^# TYPE cuptop_records_total counter$' "$tmp/scrape.txt" || bad "no counter TYPE"
curl -sf -D "$tmp/om.hdr" -H 'Accept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5' \
    "http://127.0.0.1:$port1/metrics" >"$tmp/scrape.om" || bad "curl OpenMetrics"
if grep -qi '^content-type: application/openmetrics-text; version=1.0.0' "$tmp/om.hdr" &&
    [ "$(tail -n 1 "$tmp/scrape.om")" = "# EOF" ] &&
    grep -q '^# TYPE cuptop_records counter$' "$tmp/scrape.om" &&
    grep -q '^# TYPE cuptop_session info$' "$tmp/scrape.om"; then
    ok "OpenMetrics when Accept asks for it"
else
    bad "OpenMetrics exposition"; head -5 "$tmp/om.hdr"
fi
# Prometheus' own view of the target: up, and no scrape errors.
if $py wait-query "$purl" 10 'up{job="cuptop"} == 1' >/dev/null; then
    ok "target up in Prometheus"
else
    bad "target not up"
fi

# Slow clients: 64 connections trickling their headers (a line every 0.5 s)
# for 12 s against exporter 1 (--timeout 3, 32 connections at most) while
# Prometheus scrapes it every second: the scrapes go on.
if out=$($py slowloris 127.0.0.1 "$port1" 64 12 "$purl" 2>&1); then
    ok "slow clients: $out"
else
    bad "slow clients held the scrapes off: $out"
fi

# Malformed requests and a silent client (against exporter 1: --timeout 3).
if $py http-misc 127.0.0.1 "$port1" 3 >"$tmp/misc.out" 2>&1; then
    ok "malformed requests and a silent client:"; sed 's/^/     /' "$tmp/misc.out"
else
    bad "malformed requests:"; cat "$tmp/misc.out"
fi

# ---- exporter 2: 200 sessions, capped; a connection limit -----------------
start_exporter many --store "$tmp/many" --max-sessions 50 --retention 3600 \
    --max-connections 4 --timeout 2
port2=$eport
curl -sf "http://127.0.0.1:$port2/metrics" >"$tmp/many.txt" || bad "curl many"
if out=$($py scrape-check "$tmp/many.txt" 50 150); then
    ok "200 sessions capped: $out"
else
    bad "the cap: $out"
fi
"$promtool" check metrics <"$tmp/many.txt" >/dev/null 2>&1 || bad "promtool on the capped scrape"
if out=$($py conn-limit 127.0.0.1 "$port2" 4 2 2>&1); then
    ok "connection limit:"; echo "$out" | sed 's/^/     /'
else
    bad "connection limit:"; echo "$out"
fi

# ---- retention: sessions over for longer are not exported, but counted ----
# (a store of its own, made now, with its live writer running: the writer
# of $tmp/fill was stopped above for the crash alerts, and on a loaded
# machine its session is past 60 s by now)
"$b/tui-fill-store" --store "$tmp/ret" --sessions 4 --seconds 30 --live 0 >"$tmp/ret.ids" 2>&1 &
pids="$pids $!"
i=0
while { [ ! -f "$tmp/ret.ids" ] || [ "$(wc -l <"$tmp/ret.ids")" -lt 4 ]; } && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
start_exporter short --store "$tmp/ret" --retention 60
curl -sf "http://127.0.0.1:$eport/metrics" >"$tmp/short.txt" || bad "curl short"
crashed_id=$(awk '$1 == "crashed" {print $2}' "$tmp/ret.ids")
ended_id=$(awk '$1 == "complete" {print $2}' "$tmp/ret.ids")
live_id=$(awk '$1 == "running" {print $2}' "$tmp/ret.ids")
if grep -q "^cuptop_exporter_sessions_expired 3$" "$tmp/short.txt" &&
    ! grep -q "session=\"$crashed_id\"" "$tmp/short.txt" &&
    ! grep -q "session=\"$ended_id\"" "$tmp/short.txt" &&
    grep -q "session=\"$live_id\"" "$tmp/short.txt"; then
    ok "--retention 60: the two sessions ended 2 min ago and the one crashed 10 min ago are dropped (expired 3), the live one kept"
else
    bad "retention"; grep -E 'expired|session_info' "$tmp/short.txt"
fi

# ---- the stores were never written ------------------------------------------
for d in sim damaged; do
    find "$tmp/$d" -name data.mdb -exec sha256sum {} + | sort >"$tmp/$d.sum1"
    cmp -s "$tmp/$d.sum0" "$tmp/$d.sum1" || bad "the exporter changed a data.mdb in $d"
done
[ $fail = 0 ] && ok "no data.mdb changed"
exit $fail
