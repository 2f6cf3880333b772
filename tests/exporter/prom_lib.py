#!/usr/bin/env python3
"""prom_lib.py - helpers for the exporter tests (no third-party modules).

  prom_lib.py free-port
  prom_lib.py wait-ready URL SECONDS
  prom_lib.py compare PROM_URL SECONDS CUPTOP STORE...
      poll Prometheus' HTTP API until, for every session `cuptop sessions
      --json` lists in the stores, the scraped records by kind, losses by
      class, buffers, state and verdict equal what cuptop says
  prom_lib.py wait-query PROM_URL SECONDS EXPR
      poll until EXPR returns a non-empty vector; print it
  prom_lib.py scrape-check FILE EXPORTED OMITTED
      a text exposition: the exporter's counts and the session count
  prom_lib.py http-misc HOST PORT TIMEOUT
      malformed requests and a client that never sends its request
  prom_lib.py wait-alert PROM_URL SECONDS ALERT SESSION
      poll /api/v1/alerts until ALERT is firing for SESSION
  prom_lib.py wait-alert-labels PROM_URL SECONDS ALERT LABEL=VALUE...
      poll /api/v1/alerts until ALERT is firing with those labels
  prom_lib.py none PROM_URL EXPR
      EXPR returns an empty vector now (exit 1 and print it otherwise)
  prom_lib.py dashboard PROM_URL JSON
      every query of a Grafana dashboard runs in Prometheus (and returns data)
  prom_lib.py conn-limit HOST PORT LIMIT TIMEOUT
      LIMIT idle connections fill the server: one more is answered at once,
      the oldest idle one closed to make room
  prom_lib.py slowloris HOST PORT N SECONDS PROM_URL
      N clients trickle request headers (a line every 0.5 s) for SECONDS,
      reconnecting when dropped, while Prometheus scrapes the exporter:
      Prometheus' scrapes (up) and direct ones still succeed
"""
import json
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    print(port)


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def wait_ready(url, seconds):
    end = time.time() + float(seconds)
    while time.time() < end:
        try:
            get(url, 2)
            return 0
        except Exception:
            time.sleep(0.3)
    print("not ready: %s" % url)
    return 1


def query(prom, expr):
    url = prom + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    doc = json.loads(get(url))
    if doc.get("status") != "success":
        raise RuntimeError("query %s: %s" % (expr, doc))
    return doc["data"]["result"]


def by_session(prom, expr, key=None):
    """{(session, key-label): value} of an instant query."""
    out = {}
    for r in query(prom, expr):
        m = r["metric"]
        k = (m.get("session"), m.get(key) if key else None)
        out[k] = float(r["value"][1])
    return out


def sessions_json(cuptop, stores):
    out = []
    for st in stores:
        p = subprocess.run([cuptop, "sessions", "--store", st, "--json"],
                           capture_output=True, text=True)
        # exit 2 when one session is unreadable: the others are still listed
        out.extend(json.loads(p.stdout))
    return out


def differences(prom, cuptop, stores):
    want = sessions_json(cuptop, stores)
    if not want:
        return ["cuptop sessions lists no session"], []
    rec = by_session(prom, "cuptop_records_total", "kind")
    lost = by_session(prom, "cuptop_records_lost_total", "class")
    comp = by_session(prom, "cuptop_buffers_completed_total")
    cons = by_session(prom, "cuptop_buffers_consumed_total")
    devlost = {}
    for r in query(prom, "cuptop_device_records_lost_total"):
        m = r["metric"]
        devlost[(m.get("session"), m.get("device"), m.get("class"))] = float(r["value"][1])
    info = {}
    for r in query(prom, "cuptop_session_info"):
        m = r["metric"]
        info[m["session"]] = (m.get("state"), m.get("verdict"), m.get("pid"),
                              m.get("cuptop_job"), m.get("rank"))
    diffs = []
    for s in want:
        sid = s["id"]
        if sid not in info:
            diffs.append("%s: not in Prometheus" % sid)
            continue
        # the job label only for a job that is not the session's own
        job = None if s["job_own"] else s["job"]
        rank = None if s["rank"] is None else str(s["rank"])
        if info[sid] != (s["state"], s["verdict"], str(s["pid"]), job, rank):
            diffs.append("%s: info %s, cuptop says %s" %
                         (sid, info[sid], (s["state"], s["verdict"], s["pid"], job, rank)))
        for dev, classes in s["loss_by_device"].items():
            for c, v in classes.items():
                got = devlost.get((sid, dev, c))
                if got != float(v):
                    diffs.append("%s: device %s lost %s: prometheus %s, cuptop %s" %
                                 (sid, dev, c, got, v))
        listed = set(s["loss_by_device"])
        extra = sorted(set(d for (i, d, c) in devlost if i == sid) - listed)
        if extra:
            diffs.append("%s: devices %s in Prometheus, not in cuptop" % (sid, extra))
        for k, v in s["records_by_kind"].items():
            got = rec.get((sid, k))
            if got != float(v):
                diffs.append("%s: records %s: prometheus %s, cuptop %s" % (sid, k, got, v))
        for c, v in s["loss"].items():
            got = lost.get((sid, c))
            if got != float(v):
                diffs.append("%s: lost %s: prometheus %s, cuptop %s" % (sid, c, got, v))
        if comp.get((sid, None)) != float(s["buffers_completed"]):
            diffs.append("%s: buffers completed %s vs %s" %
                         (sid, comp.get((sid, None)), s["buffers_completed"]))
        if cons.get((sid, None)) != float(s["buffers_consumed"]):
            diffs.append("%s: buffers consumed %s vs %s" %
                         (sid, cons.get((sid, None)), s["buffers_consumed"]))
    return diffs, want


def compare(prom, seconds, cuptop, stores):
    end = time.time() + float(seconds)
    diffs = ["never queried"]
    while time.time() < end:
        try:
            diffs, want = differences(prom, cuptop, stores)
        except Exception as e:  # Prometheus not scraped yet, ...
            diffs = ["error: %s" % e]
            want = []
        if not diffs:
            classes = sum(1 for s in want for v in s["loss"].values() if v)
            print("equal: %d sessions, %d non-zero loss classes, states %s" %
                  (len(want), classes, sorted({s["state"] for s in want})))
            return 0
        time.sleep(1)
    print("Prometheus never agreed with cuptop sessions --json:")
    for d in diffs[:40]:
        print("  " + d)
    return 1


def wait_query(prom, seconds, expr):
    end = time.time() + float(seconds)
    while time.time() < end:
        try:
            r = query(prom, expr)
            if r:
                for x in r:
                    print(x["metric"].get("session", ""), x["value"][1])
                return 0
        except Exception:
            pass
        time.sleep(0.5)
    print("no result for %s" % expr)
    return 1


def scrape_check(path, exported, omitted):
    vals, infos = {}, 0
    states = {}
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        name, _, value = line.rpartition(" ")
        if name.startswith("cuptop_session_info{"):
            infos += 1
            st = name.split('state="')[1].split('"')[0]
            states[st] = states.get(st, 0) + 1
        if "{" not in name:
            vals[name] = float(value)
    ok = (vals.get("cuptop_exporter_sessions_exported") == float(exported) and
          vals.get("cuptop_exporter_sessions_omitted") == float(omitted) and
          infos == int(exported) and "ended" not in states)
    print("exported %s omitted %s, %d sessions (%s)" %
          (vals.get("cuptop_exporter_sessions_exported"),
           vals.get("cuptop_exporter_sessions_omitted"), infos, states))
    return 0 if ok else 1


def raw(host, port, data, timeout=5):
    s = socket.create_connection((host, int(port)), timeout=timeout)
    try:
        s.sendall(data)
        buf = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            buf += chunk
            if b"\r\n\r\n" in buf and not data.startswith(b"GET /metrics"):
                break
        return buf
    finally:
        s.close()


def status_of(resp):
    line = resp.split(b"\r\n", 1)[0].decode(errors="replace")
    parts = line.split()
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None, line


def http_misc(host, port, timeout):
    fails = 0
    # (name, request, statuses wanted; None: closed without an answer,
    # which is what libmicrohttpd does with a request line of one word)
    cases = [
        ("a request line of one word", b"GARBAGE\r\n\r\n", [None]),
        ("control bytes as the method", b"\x01\x02 / HTTP/1.1\r\nHost: x\r\n\r\n", [405]),
        ("a header without a colon", b"GET /metrics HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n",
         [400]),
        ("HTTP/9.9", b"GET /metrics HTTP/9.9\r\nHost: x\r\n\r\n", [505]),
        ("POST /metrics", b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
         b"Connection: close\r\n\r\nabc", [405]),
        ("DELETE /", b"DELETE / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", [405]),
        ("GET /nothing", b"GET /nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", [404]),
        ("GET /metrics/../etc", b"GET /metrics/../etc/passwd HTTP/1.1\r\nHost: x\r\n"
         b"Connection: close\r\n\r\n", [404]),
        ("HTTP/1.1 without Host", b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n",
         [400]),
        ("GET with a body", b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
         b"Connection: close\r\n\r\nhello", [400]),
        ("a 100 KiB header", b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 102400 +
         b"\r\nConnection: close\r\n\r\n", range(400, 500)),
        ("GET /", b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", [200]),
        ("HEAD /metrics", b"HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
         [200]),
    ]
    for name, data, want in cases:
        try:
            resp = raw(host, port, data)
        except OSError as e:
            resp = b""
            err = str(e)
        else:
            err = ""
        code, line = status_of(resp)
        if code is None and resp:
            code = -1  # an answer that is not HTTP
        if code in want:
            print("ok   %s: %s" % (name, line or "closed without an answer"))
        else:
            print("FAIL %s: got %r %s" % (name, line, err))
            fails += 1
        if name == "GET /" and b'href="/metrics"' not in resp:
            print("FAIL GET /: no link to /metrics")
            fails += 1
        if name == "POST /metrics" and b"Allow: GET, HEAD" not in resp:
            print("FAIL POST /metrics: no Allow: GET, HEAD")
            fails += 1
        if name == "HEAD /metrics" and resp.split(b"\r\n\r\n", 1)[-1] != b"":
            print("FAIL HEAD /metrics: a body came with the answer")
            fails += 1
    # A client that connects and never sends its request: the exporter
    # serves others meanwhile and closes it after the timeout.
    idle = socket.create_connection((host, int(port)), timeout=float(timeout) + 10)
    t0 = time.time()
    body = get("http://%s:%s/metrics" % (host, port), 5)
    if "cuptop_exporter_scrapes_total" in body:
        print("ok   scrape served while a client sends nothing (%.2f s)" % (time.time() - t0))
    else:
        print("FAIL scrape while a client is idle")
        fails += 1
    try:
        got = idle.recv(100)
    except socket.timeout:
        got = None
    waited = time.time() - t0
    if got == b"" and waited <= float(timeout) + 5:
        print("ok   the silent client was dropped after %.1f s (timeout %s s)" %
              (waited, timeout))
    else:
        print("FAIL the silent client was not dropped (recv %r after %.1f s)" % (got, waited))
        fails += 1
    idle.close()
    return 1 if fails else 0


def conn_limit(host, port, limit, timeout):
    """LIMIT idle clients fill the server: one more is answered at once
    (well before their idle timeout), the oldest idle one closed for it."""
    socks = [socket.create_connection((host, int(port)), timeout=5) for _ in range(int(limit))]
    time.sleep(0.3)
    t0 = time.time()
    try:
        r = raw(host, port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                float(timeout) + 10)
        code = status_of(r)[0]
    except OSError:
        code = None
    waited = time.time() - t0
    socks[0].settimeout(2)
    try:
        evicted = socks[0].recv(10) == b""
    except OSError:
        evicted = False
    for s in socks:
        s.close()
    quick = waited < float(timeout) - 0.5
    ok = quick and code == 200 and evicted
    print("%s  with %s idle clients connected, one more was answered %s after %.1f s "
          "(idle timeout %s s); the oldest idle one %s" %
          ("ok  " if ok else "FAIL", limit, code, waited, timeout,
           "was closed" if evicted else "was NOT closed"))
    return 0 if ok else 1


def slowloris(host, port, n, seconds, prom):
    """N clients each send a request line and then one header line every
    0.5 s, never the end of the headers (what held every scrape off for
    60 s before the request deadline and the eviction at the limit)."""
    n, seconds = int(n), float(seconds)
    url = "http://%s:%s/metrics" % (host, port)

    def attacker():
        s = socket.create_connection((host, int(port)), timeout=1)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        return s

    socks = [attacker() for _ in range(n)]
    t_start = time.time()
    end = t_start + seconds
    direct_ok = direct_fail = dropped = 0
    next_direct = t_start + 1
    while time.time() < end:
        for i, s in enumerate(socks):
            try:
                s.sendall(b"X-Slow: 1\r\n")
            except OSError:
                dropped += 1
                s.close()
                try:
                    socks[i] = attacker()
                except OSError:
                    pass
        if time.time() >= next_direct:
            try:
                body = get(url, 5)
                direct_ok += "cuptop_exporter_scrapes_total" in body
            except Exception:
                direct_fail += 1
            next_direct = time.time() + 1
        time.sleep(0.5)
    for s in socks:
        s.close()
    time.sleep(2.5)  # let Prometheus record the last scrapes of the window
    win = "%ds" % int(seconds)
    at = "&time=%.3f" % (t_start + seconds)

    def value(expr):
        u = prom + "/api/v1/query?" + urllib.parse.urlencode({"query": expr}) + at
        doc = json.loads(get(u))
        r = doc.get("data", {}).get("result", [])
        return float(r[0]["value"][1]) if r else 0.0

    total = value('count_over_time(up{job="cuptop"}[%s])' % win)
    good = value('sum_over_time(up{job="cuptop"}[%s])' % win)
    ok = total >= 3 and good >= 0.8 * total and direct_ok >= 1 and direct_ok >= direct_fail
    print("%s  %d clients trickling headers for %.0f s (%d dropped by the exporter and "
          "reconnected): Prometheus scraped %d of %d times, direct scrapes %d ok, %d failed" %
          ("ok  " if ok else "FAIL", n, seconds, dropped, good, total, direct_ok, direct_fail))
    return 0 if ok else 1


def wait_alert(prom, seconds, name, session):
    end = time.time() + float(seconds)
    seen = []
    while time.time() < end:
        try:
            doc = json.loads(get(prom + "/api/v1/alerts"))
            seen = [(a["labels"].get("alertname"), a["labels"].get("session"), a["state"])
                    for a in doc["data"]["alerts"]]
            if (name, session, "firing") in seen:
                print("%s firing for %s" % (name, session))
                return 0
        except Exception:
            pass
        time.sleep(0.5)
    print("%s never fired for %s; alerts: %s" % (name, session, seen[:10]))
    return 1


def wait_alert_labels(prom, seconds, name, pairs):
    want = dict(p.split("=", 1) for p in pairs)
    end = time.time() + float(seconds)
    seen = []
    while time.time() < end:
        try:
            doc = json.loads(get(prom + "/api/v1/alerts"))
            seen = [(a["labels"], a["state"]) for a in doc["data"]["alerts"]
                    if a["labels"].get("alertname") == name]
            for labels, state in seen:
                if state == "firing" and all(labels.get(k) == v for k, v in want.items()):
                    print("%s firing for %s" % (name, " ".join(pairs)))
                    return 0
        except Exception:
            pass
        time.sleep(0.5)
    print("%s never fired for %s; its alerts: %s" % (name, " ".join(pairs), seen[:10]))
    return 1


def none(prom, expr):
    r = query(prom, expr)
    if r:
        print("%s: %s" % (expr, [(x["metric"], x["value"][1]) for x in r[:5]]))
        return 1
    return 0


def dashboard(prom, path):
    dash = json.load(open(path))
    fails, n, empty = 0, 0, []
    for p in dash["panels"]:
        for t in p.get("targets", []):
            expr = t["expr"].replace("$host", ".*").replace("$session", ".*")
            n += 1
            try:
                r = query(prom, expr)
            except Exception as e:
                print("FAIL panel %r: %s: %s" % (p["title"], expr, e))
                fails += 1
                continue
            if not r:
                empty.append(p["title"])
    for v in dash["templating"]["list"]:
        if v["type"] == "query":
            q = v["query"]["query"]
            m = q[len("label_values("):-1].rsplit(",", 1)
            sel = m[0].replace('$host', '.*')
            r = query(prom, "count by (%s) (%s)" % (m[1].strip(), sel))
            n += 1
            if not r:
                empty.append("variable " + v["name"])
    print("%d dashboard queries run, %d failed, without data: %s" % (n, fails, empty or "none"))
    return 1 if fails else 0


def main(argv):
    cmd = argv[1]
    if cmd == "free-port":
        free_port()
        return 0
    if cmd == "wait-ready":
        return wait_ready(argv[2], argv[3])
    if cmd == "compare":
        return compare(argv[2], argv[3], argv[4], argv[5:])
    if cmd == "wait-query":
        return wait_query(argv[2], argv[3], argv[4])
    if cmd == "scrape-check":
        return scrape_check(argv[2], argv[3], argv[4])
    if cmd == "http-misc":
        return http_misc(argv[2], argv[3], argv[4])
    if cmd == "wait-alert":
        return wait_alert(argv[2], argv[3], argv[4], argv[5])
    if cmd == "wait-alert-labels":
        return wait_alert_labels(argv[2], argv[3], argv[4], argv[5:])
    if cmd == "none":
        return none(argv[2], argv[3])
    if cmd == "dashboard":
        return dashboard(argv[2], argv[3])
    if cmd == "conn-limit":
        return conn_limit(argv[2], argv[3], argv[4], argv[5])
    if cmd == "slowloris":
        return slowloris(argv[2], argv[3], argv[4], argv[5], argv[6])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
