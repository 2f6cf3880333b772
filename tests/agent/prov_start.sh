#!/bin/sh
# prov_start.sh - every start path records the same provenance (issue 27
# item 11): a session that starts with CUPTI attached, one that starts
# dormant and is attached later by `cuptop control --attach`, over the
# simulated CUPTI.  Each must say it ran on the simulator (simulated:
# true), every version ends in "(simulated)", CUPTI's version reads
# "13.0.1"-style (never the raw API number), and no version is left
# "unknown" because CUPTI was not loaded yet.  Before the fix the dormant
# session said simulated:false, "driver 13.0" and CUPTI "130001".
SIM_LIB_NAME=prov; . "${top_srcdir:?}/tests/agent/sim_lib.sh"

# start NAME [VAR=VALUE...]: simdrive that waits for DIR/go after its
# contexts exist, then emits and returns
start() {
    n=$1; shift
    mkdir -p "$tmp/$n"
    env CUPTOP_STORE="$tmp/$n/store" "$@" "$drive" "$sim" "$agent" "$tmp/$n/truth" \
        seq:ctx,mark:ready,wait:go,emit:200 return >"$tmp/$n/out" 2>"$tmp/$n/err" &
    pid=$!
    i=0
    while [ ! -e "$tmp/$n/ready" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
    id=$("$ctl" sessions "$tmp/$n/store" | head -1)
}
finish_run() {
    touch "$tmp/$1/go"
    wait "$pid"
    check "$1: exit status" "$?" 0
    pid=
    "$b/cuptop" sessions --store "$tmp/$1/store" --json >"$tmp/$1/sessions.json"
    check "$1: sessions --json" "$?" 0
}

start attached
finish_run attached

start dormant CUPTOP_DORMANT=1
"$b/cuptop" control --store "$tmp/dormant/store" "$id" --attach --wait 60 >"$tmp/dormant/ctl" 2>&1
check "dormant: cuptop control --attach" "$?" 0
finish_run dormant

python3 - "$tmp/attached/sessions.json" "$tmp/dormant/sessions.json" <<'PY'
import json, re, sys
fails = []
def expect(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        fails.append(what)
a = json.load(open(sys.argv[1]))[0]
d = json.load(open(sys.argv[2]))[0]
for name, s in (("attached", a), ("dormant", d)):
    expect(s["simulated"] is True, "%s: simulated" % name)
    v = s["versions"]
    for k in ("driver", "cuda_driver", "cupti"):
        expect(v.get(k) is not None and v[k].endswith("(simulated)"),
               "%s: version %s marked simulated: %s" % (name, k, v.get(k)))
    expect(v.get("cupti") is not None and re.match(r"\d+\.\d+\.\d+ \(simulated\)$", v["cupti"]),
           "%s: CUPTI version as x.y.z: %s" % (name, v.get("cupti")))
for k in ("driver", "cuda_driver", "cuda_runtime", "cupti", "cupti_api"):
    expect(a["versions"].get(k) == d["versions"].get(k),
           "the same %s on both paths: %s / %s" % (k, a["versions"].get(k), d["versions"].get(k)))
sys.exit(1 if fails else 0)
PY
[ $? = 0 ] || fail=1
exit $fail
