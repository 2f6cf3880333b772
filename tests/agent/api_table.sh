#!/bin/sh
# api_table.sh - the API record policy table (generated at build time from
# the toolkit's cupti_runtime_cbid.h / cupti_driver_cbid.h and
# src/agent/api_rules.txt) against the installed headers themselves:
#  - every call id of both headers has exactly one row;
#  - every call that launches, copies, sets, synchronizes, allocates or
#    frees (the families below, written here by hand, independent of the
#    rules) is recorded under `gpu`;
#  - the noise a framework makes between launches is muted.
# Exits 77 without the CUPTI headers (no generated table).
set -u
b=${top_builddir:?}
t=$b/src/agent/agent_api_table.c
[ -f "$t" ] || { echo "no $t (no CUPTI headers): skipped"; exit 77; }
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
inc=$(sed -n 's/^CUDA_CPPFLAGS = *//p' "$b/Makefile")
python3 - "$t" "${CPP:-cc -E} $inc" <<'PY'
import re, subprocess, sys
table, cpp = sys.argv[1], sys.argv[2]
rows = {}
for m in re.finditer(r'\{(\d), (\d+), (\d), "([^"]+)"\}', open(table).read()):
    rows[(int(m[1]), int(m[2]))] = (int(m[3]), m[4])
fail = 0
def check(what, ok):
    global fail
    print(("ok   " if ok else "FAIL ") + what)
    fail |= not ok
# the headers, independently of the generator
ids = {}
for dom, hdr, pre in ((0, "cupti_runtime_cbid.h", "CUPTI_RUNTIME_TRACE_CBID_"),
                      (1, "cupti_driver_cbid.h", "CUPTI_DRIVER_TRACE_CBID_")):
    src = subprocess.run(cpp.split() + ["-"], input="#include <%s>\n" % hdr, text=True,
                         capture_output=True, check=True).stdout
    for name, val in re.findall(pre + r"(\w+)\s*=\s*(\d+)", src):
        if name in ("INVALID", "SIZE", "FORCE_INT"):
            continue
        ids[(dom, int(val))] = re.sub(r"_v\d{4,5}$", "", name)
check("every call id of the headers has a row (%d ids, %d rows)" % (len(ids), len(rows)),
      set(ids) == set(rows))
check("row names are the header names without the version suffix",
      all(rows.get(k, (0, None))[1] == v for k, v in ids.items()))
families = [r"^cu(da)?.*Launch", r"^__cudaLaunch", r"Memcpy", r"Memset", r"Synchronize",
            r"^cuda(Malloc|Free)", r"^cuMem(Alloc|Free)", r"^cu(da)?(Stream|Event)(Create|Destroy)",
            r"^cu(da)?EventRecord", r"^cu(da)?StreamWaitEvent$", r"^cu(da)?Graph(Create|Destroy|"
            r"Instantiate|Launch|ExecDestroy|Upload)"]
# not a copy, set or launch although the name says so: interop and the
# parameters of graph nodes
exempt = [r"Graphics", r"Graph(Exec)?(Memcpy|Memset|Kernel)Node[GS]et", r"KernelNodeCopyAttributes"]
missing = sorted({n for k, n in ids.items()
                  if any(re.search(f, n) for f in families)
                  and not any(re.search(e, n) for e in exempt) and not rows[k][0]})
check("every launch/copy/set/sync/alloc/free/create/destroy call is recorded under gpu"
      + (": missing " + ", ".join(missing[:12]) if missing else ""), not missing)
for must in ("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx", "cudaGraphLaunch",
             "cuGraphLaunch", "cudaMemcpyAsync", "cuMemcpyHtoDAsync_v2", "cudaMemsetAsync",
             "cudaStreamSynchronize", "cudaDeviceSynchronize", "cuCtxSynchronize",
             "cudaEventSynchronize", "cudaMalloc", "cudaFree", "cuMemAlloc_v2", "cudaMallocAsync",
             "cudaStreamCreateWithFlags", "cudaEventCreate", "cudaEventDestroy",
             "cudaStreamWaitEvent", "cudaGraphInstantiate"):
    got = [rows[k][0] for k, n in ids.items() if n == must]
    check("gpu records %s" % must, bool(got) and all(got))
for noise in ("cudaGetDevice", "cuCtxGetCurrent", "cudaStreamIsCapturing", "cuStreamIsCapturing",
              "cuDeviceGetAttribute", "cudaDeviceGetAttribute", "cudaGetLastError",
              "cudaPeekAtLastError", "cudaStreamQuery", "cudaEventQuery", "cuDeviceGet",
              "cudaGetDeviceCount", "cuModuleGetFunction", "cudaFuncGetAttributes",
              "cudaStreamGetCaptureInfo", "cuCtxGetDevice", "cudaGraphicsMapResources"):
    got = [rows[k][0] for k, n in ids.items() if n == noise]
    check("gpu mutes %s" % noise, bool(got) and not any(got))
sys.exit(1 if fail else 0)
PY
