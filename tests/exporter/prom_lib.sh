# prom_lib.sh - sourced by the exporter tests that run the real Prometheus:
# start `cuptop exporter` on a free loopback port, and Debian's prometheus
# binary (never the system service) on another with a temporary config
# (scrape and evaluate every second) and a temporary TSDB.  The caller
# sets b (build dir), tmp, py ("python3 .../prom_lib.py"), prom, pids
# (processes to kill at exit) and the functions bad.

# Start an exporter with a free port (port 0) and read the port it printed
# into eport.
start_exporter() { # NAME ARGS...
    name=$1
    shift
    "$b/cuptop" exporter --listen 127.0.0.1:0 "$@" 2>"$tmp/$name.err" &
    epid=$!
    pids="$pids $epid"
    i=0
    while ! grep -q 'serving http' "$tmp/$name.err" 2>/dev/null; do
        i=$((i + 1))
        if [ $i -gt 100 ] || ! kill -0 "$epid" 2>/dev/null; then
            bad "exporter $name did not start"; cat "$tmp/$name.err"; exit 1
        fi
        sleep 0.1
    done
    eport=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$tmp/$name.err")
}

# Start Prometheus scraping TARGETS (host:port, space-separated) as scrape
# job "cuptop", evaluating RULES (rule files, space-separated); a port
# taken meanwhile is retried.  Sets pport and purl; exits when it cannot.
start_prometheus() { # "RULES" "TARGETS"
    ppid=""
    for attempt in 1 2 3; do
        pport=$($py free-port)
        {
            printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n'
            printf '  evaluation_interval: 1s\nrule_files:\n'
            for r in $1; do printf '  - %s\n' "$r"; done
            printf 'scrape_configs:\n  - job_name: cuptop\n    static_configs:\n'
            printf '      - targets: ['
            sep=""
            for t in $2; do printf "%s'%s'" "$sep" "$t"; sep=", "; done
            printf ']\n'
        } >"$tmp/prometheus.yml"
        "$prom" --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
            --web.listen-address="127.0.0.1:$pport" --log.level=warn >"$tmp/prom.log" 2>&1 &
        ppid=$!
        if $py wait-ready "http://127.0.0.1:$pport/-/ready" 60 >/dev/null; then
            break
        fi
        kill "$ppid" 2>/dev/null
        wait "$ppid" 2>/dev/null
        ppid=""
    done
    [ -n "$ppid" ] || { bad "prometheus did not start"; cat "$tmp/prom.log"; exit 1; }
    pids="$pids $ppid"
    purl="http://127.0.0.1:$pport"
}
