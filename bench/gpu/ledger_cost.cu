// ledger_cost.cu - what the launch ledger costs the launching thread on
// real CUPTI (issue 31 item 4), before it is wired into the agent: a
// launch storm (N empty kernels round-robin over S streams) under a
// self-contained CUPTI client in one of four modes, chosen by argv[1]:
//
//   none      no CUPTI at all
//   kernels   kernel activity records only (CONCURRENT_KERNEL), counted
//   callbacks kernels + callbacks on cuLaunchKernel (enter and exit), counting
//   ledger    kernels + callbacks that register each launch in the real
//             ledger (src/agent/agent_ledger.c: stream id by
//             cuptiGetStreamIdEx, CUPTI timestamp, one CAS) and match every
//             record to it in the buffer walk; the final sweep must find
//             every launch's record (missing 0)
//
// Prints "mode M launches N seconds X per_launch_ns Y records R missing Z".
// bench/gpu/ledger_cost.sh interleaves the modes and prints the table.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// the real ledger, through ledger_cost_glue.c (C++ has no C11 _Atomic)
extern "C" {
int lc_init(void);
void lc_launch(uint32_t corr, uint32_t stream, uint64_t ns, uint32_t tid);
void lc_cancel(uint32_t corr);
void lc_arrive(uint32_t corr);
unsigned long long lc_final(void);
}

__global__ void k_empty() {}

static int mode;   // 0 none, 1 kernels, 2 callbacks, 3 ledger
static std::atomic<unsigned long long> n_records{0}, n_calls{0};

static void CUPTIAPI on_call(void *, CUpti_CallbackDomain, CUpti_CallbackId, const void *data)
{
    auto *cb = static_cast<const CUpti_CallbackData *>(data);
    if (mode == 2) {
        if (cb->callbackSite == CUPTI_API_EXIT)
            n_calls.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    if (cb->callbackSite == CUPTI_API_EXIT) {
        if (*(const CUresult *)cb->functionReturnValue != CUDA_SUCCESS)
            lc_cancel(cb->correlationId);
        return;
    }
    auto *p = (const cuLaunchKernel_params *)cb->functionParams;
    uint32_t stream = UINT32_MAX;
    if (cuptiGetStreamIdEx(cb->context, p->hStream, 0, &stream) != CUPTI_SUCCESS)
        stream = UINT32_MAX;
    uint64_t ts = 0;
    cuptiGetTimestamp(&ts);
    static thread_local uint32_t tid = (uint32_t)syscall(SYS_gettid);
    lc_launch(cb->correlationId, stream, ts, tid);
}

static void CUPTIAPI buf_req(uint8_t **buf, size_t *size, size_t *max)
{
    *size = 8u << 20;
    *buf = (uint8_t *)aligned_alloc(8, *size);
    *max = 0;
}

static void CUPTIAPI buf_done(CUcontext, uint32_t, uint8_t *buf, size_t, size_t valid)
{
    CUpti_Activity *r = nullptr;
    unsigned long long n = 0;
    while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
        n++;
        if (mode == 3 && r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
            lc_arrive(((CUpti_ActivityKernel9 *)r)->correlationId);
    }
    n_records += n;
    free(buf);
}

int main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "none";
    long n = argc > 2 ? std::atol(argv[2]) : 300000;
    int ns = 4;
    mode = !std::strcmp(m, "kernels") ? 1 : !std::strcmp(m, "callbacks") ? 2
         : !std::strcmp(m, "ledger") ? 3 : 0;
    if (mode >= 1) {
        if (cuptiActivityRegisterCallbacks(buf_req, buf_done) != CUPTI_SUCCESS ||
            cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
            return std::fprintf(stderr, "ledger_cost: CUPTI refused\n"), 1;
    }
    if (mode >= 2) {
        CUpti_SubscriberHandle sub;
        if (mode == 3 && lc_init() != 0)
            return 1;
        if (cuptiSubscribe(&sub, on_call, nullptr) != CUPTI_SUCCESS ||
            cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API,
                                CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) != CUPTI_SUCCESS)
            return std::fprintf(stderr, "ledger_cost: callbacks refused\n"), 1;
    }
    std::vector<cudaStream_t> st(ns);
    for (auto &s : st)
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    k_empty<<<1, 1, 0, st[0]>>>();   // warm-up: module load, context
    cudaDeviceSynchronize();
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; i++)
        k_empty<<<1, 1, 0, st[i % ns]>>>();
    cudaDeviceSynchronize();
    auto t1 = std::chrono::steady_clock::now();
    if (cudaGetLastError() != cudaSuccess)
        return std::fprintf(stderr, "ledger_cost: CUDA error\n"), 1;
    if (mode >= 1)
        cuptiActivityFlushAll(1);
    unsigned long long missing_total = mode == 3 ? lc_final() : 0;
    double s = std::chrono::duration<double>(t1 - t0).count();
    std::printf("mode %s launches %ld seconds %.4f per_launch_ns %.1f records %llu missing %llu\n",
                m, n, s, s * 1e9 / (double)n, (unsigned long long)n_records.load(),
                missing_total);
    return 0;
}
