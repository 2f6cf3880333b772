#!/usr/bin/env python3
"""sessinfo.py JSON FIELD [EXIT_NS] - one figure from `cuptop sessions --json`
(the newest session): losses | kernels | gpu_records | records | tail_ms."""
import json
import sys

s = json.load(open(sys.argv[1]))[-1]
f = sys.argv[2]
gpu = sum(s["records_by_kind"].get(k, 0) for k in ("kernel", "memcpy", "memset"))
if f == "losses":
    print(",".join(f"{k}={v}" for k, v in s["loss"].items() if v) or "none")
elif f == "kernels":
    print(s["records_by_kind"].get("kernel", 0))
elif f == "records":
    print(f"{gpu} gpu / {s['records']} all")
elif f == "id":
    print(s["id"])
elif f == "tail_ms":
    print(f"{(s['end_ns'] - int(sys.argv[3])) / 1e6:.1f}")
else:
    sys.exit(f"sessinfo: unknown field {f}")
