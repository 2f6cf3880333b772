// ledger_probe.cu - what the launch ledger (issue 31) must know about real
// CUPTI before it is wired: which callback's correlation id do GPU records
// carry (the runtime call's, or the driver call's under it), does a graph
// launch's every node record carry the graph launch's id, and does the
// stream id from cuptiGetStreamIdEx at the callback equal the record's.
//
// A self-contained CUPTI client (no agent): callbacks on the launch, copy,
// set and graph-launch call ids of both API domains record (domain, cbid,
// correlation id, CUPTI stream id) at API enter; the activity API collects
// kernel, memcpy, memset, runtime and driver records.  The workload: kernels
// by <<<>>> and by cuLaunchKernel, cudaMemcpyAsync, cudaMemsetAsync, and a
// CUDA graph (4 kernel nodes, 1 memset node) launched 10 times.
//
// Prints "key value" lines (bench/gpu/ledger_probe.sh turns them into a
// table); exit 0, or 1 on a CUDA/CUPTI error.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#define CK(x)                                                                            \
    do {                                                                                 \
        cudaError_t e_ = (x);                                                            \
        if (e_ != cudaSuccess) {                                                         \
            std::fprintf(stderr, "ledger_probe: %s: %s\n", #x, cudaGetErrorString(e_));  \
            std::exit(1);                                                                \
        }                                                                                \
    } while (0)
#define CU(x)                                                                            \
    do {                                                                                 \
        CUptiResult r_ = (x);                                                            \
        if (r_ != CUPTI_SUCCESS) {                                                       \
            const char *s_ = "?";                                                        \
            cuptiGetResultString(r_, &s_);                                               \
            std::fprintf(stderr, "ledger_probe: %s: %s\n", #x, s_);                      \
            std::exit(1);                                                                \
        }                                                                                \
    } while (0)

__global__ void k_empty(int *p) { if (p) p[threadIdx.x] = 1; }

struct call {
    int domain;
    unsigned cbid;
    uint32_t stream;   // from cuptiGetStreamIdEx, or UINT32_MAX
};

static std::mutex mu;
static std::map<uint32_t, std::vector<call>> calls;   // corr -> enter callbacks
static std::map<uint32_t, std::vector<std::pair<int, uint32_t>>> gpu;   // corr -> (kind, stream)
static std::map<uint32_t, std::set<int>> api;   // corr -> API record kinds
static uint64_t n_records;

static uint32_t stream_id(CUcontext ctx, CUstream s)
{
    uint32_t id = UINT32_MAX;
    if (ctx && cuptiGetStreamIdEx(ctx, s, 0, &id) != CUPTI_SUCCESS)
        id = UINT32_MAX;
    return id;
}

static void CUPTIAPI on_call(void *, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                             const void *data)
{
    auto *cb = static_cast<const CUpti_CallbackData *>(data);
    if (cb->callbackSite != CUPTI_API_ENTER)
        return;
    CUstream s = nullptr;
    bool have = true;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
        switch (cbid) {
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
            s = (CUstream)((cudaLaunchKernel_v7000_params *)cb->functionParams)->stream;
            break;
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
            s = (CUstream)((cudaMemcpyAsync_v3020_params *)cb->functionParams)->stream;
            break;
        case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
            s = (CUstream)((cudaMemsetAsync_v3020_params *)cb->functionParams)->stream;
            break;
        case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
            s = (CUstream)((cudaGraphLaunch_v10000_params *)cb->functionParams)->stream;
            break;
        default: have = false; break;
        }
    } else {
        switch (cbid) {
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
            s = ((cuLaunchKernel_params *)cb->functionParams)->hStream;
            break;
        case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
            s = ((cuGraphLaunch_params *)cb->functionParams)->hStream;
            break;
        default: have = false; break;
        }
    }
    uint32_t sid = have ? stream_id(cb->context, s) : UINT32_MAX;
    std::lock_guard<std::mutex> g(mu);
    calls[cb->correlationId].push_back({(int)domain, (unsigned)cbid, sid});
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
    std::lock_guard<std::mutex> g(mu);
    while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
        n_records++;
        switch (r->kind) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
            auto *k = (CUpti_ActivityKernel9 *)r;
            gpu[k->correlationId].push_back({0, (uint32_t)k->streamId});
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
            auto *m = (CUpti_ActivityMemcpy6 *)r;
            gpu[m->correlationId].push_back({1, (uint32_t)m->streamId});
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
            auto *m = (CUpti_ActivityMemset4 *)r;
            gpu[m->correlationId].push_back({2, (uint32_t)m->streamId});
            break;
        }
        case CUPTI_ACTIVITY_KIND_RUNTIME:
        case CUPTI_ACTIVITY_KIND_DRIVER: {
            auto *a = (CUpti_ActivityAPI *)r;
            api[a->correlationId].insert(r->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? 0 : 1);
            break;
        }
        default: break;
        }
    }
    free(buf);
}

int main()
{
    CUpti_SubscriberHandle sub;
    CU(cuptiSubscribe(&sub, on_call, nullptr));
    const CUpti_CallbackId rt[] = {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                   CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                                   CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
                                   CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000};
    for (auto c : rt)
        CU(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, c));
    CU(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API));   // every driver call: see what is under
    CU(cuptiActivityRegisterCallbacks(buf_req, buf_done));
    for (auto k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                   CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER})
        CU(cuptiActivityEnable(k));

    const int N = 1000, NDRV = 100, NCOPY = 50, NSET = 50, NGRAPH = 10;
    cudaStream_t st[2];
    for (auto &s : st)
        CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    int *dev = nullptr, *host = nullptr;
    CK(cudaMalloc(&dev, 4096));
    CK(cudaMallocHost(&host, 4096));
    for (int i = 0; i < N; i++)
        k_empty<<<1, 1, 0, st[i % 2]>>>(nullptr);
    CUfunction fn;
    CK(cudaGetFuncBySymbol(&fn, (const void *)k_empty));
    for (int i = 0; i < NDRV; i++) {
        void *arg = nullptr;
        void *args[] = {&arg};
        if (cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, (CUstream)st[i % 2], args, nullptr) != CUDA_SUCCESS)
            return std::fprintf(stderr, "ledger_probe: cuLaunchKernel failed\n"), 1;
    }
    for (int i = 0; i < NCOPY; i++)
        CK(cudaMemcpyAsync(dev, host, 4096, cudaMemcpyHostToDevice, st[i % 2]));
    for (int i = 0; i < NSET; i++)
        CK(cudaMemsetAsync(dev, 0, 4096, st[i % 2]));
    // a graph: 4 kernels and a memset, captured from a stream
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(st[0], cudaStreamCaptureModeGlobal));
    for (int i = 0; i < 4; i++)
        k_empty<<<1, 1, 0, st[0]>>>(dev);
    CK(cudaMemsetAsync(dev, 0, 4096, st[0]));
    CK(cudaStreamEndCapture(st[0], &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    size_t nodes = 0;
    CK(cudaGraphGetNodes(graph, nullptr, &nodes));
    for (int i = 0; i < NGRAPH; i++)
        CK(cudaGraphLaunch(exec, st[1]));
    CK(cudaDeviceSynchronize());
    CU(cuptiActivityFlushAll(1));

    // Judge.
    std::lock_guard<std::mutex> g(mu);
    unsigned gpu_records = 0, on_rt = 0, on_drv = 0, on_none = 0, same_corr_rt_drv = 0,
             stream_eq = 0, stream_ne = 0, graph_nodes_on_launch = 0;
    std::map<unsigned, unsigned> drv_under_rt;   // driver cbid seen with a runtime call's corr
    for (auto &c : calls) {
        bool r = false, d = false;
        for (auto &x : c.second) {
            r |= x.domain == CUPTI_CB_DOMAIN_RUNTIME_API;
            d |= x.domain == CUPTI_CB_DOMAIN_DRIVER_API;
        }
        if (r && d) {
            same_corr_rt_drv++;
            for (auto &x : c.second)
                if (x.domain == CUPTI_CB_DOMAIN_DRIVER_API)
                    drv_under_rt[x.cbid]++;
        }
    }
    for (auto &gr : gpu) {
        auto it = calls.find(gr.first);
        for (auto &rec : gr.second) {
            gpu_records++;
            if (it == calls.end()) {
                on_none++;
                continue;
            }
            bool r = false, d = false;
            uint32_t sid = UINT32_MAX;
            for (auto &x : it->second) {
                r |= x.domain == CUPTI_CB_DOMAIN_RUNTIME_API;
                d |= x.domain == CUPTI_CB_DOMAIN_DRIVER_API;
                if (x.stream != UINT32_MAX)
                    sid = x.stream;
                if (x.domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
                    x.cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000)
                    graph_nodes_on_launch++;
            }
            on_rt += r;
            on_drv += d;
            (sid == rec.second ? stream_eq : stream_ne)++;
        }
    }
    unsigned api_both = 0;
    for (auto &a : api)
        api_both += a.second.size() == 2;
    std::printf("launched_kernels %d\nlaunched_by_driver %d\nlaunched_memcpy %d\nlaunched_memset %d\n"
                "graph_launches %d\ngraph_nodes %zu\n",
                N, NDRV, NCOPY, NSET, NGRAPH, nodes);
    std::printf("activity_records %llu\ngpu_records %u\n", (unsigned long long)n_records, gpu_records);
    std::printf("gpu_records_with_runtime_callback_corr %u\ngpu_records_with_driver_callback_corr %u\n"
                "gpu_records_with_no_callback %u\n", on_rt, on_drv, on_none);
    std::printf("corr_ids_with_runtime_and_driver_callbacks %u\n", same_corr_rt_drv);
    for (auto &d : drv_under_rt) {
        const char *name = "?";
        cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, d.first, &name);
        std::printf("driver_call_sharing_runtime_corr %s %u\n", name, d.second);
    }
    std::printf("api_records_runtime_and_driver_same_corr %u\n", api_both);
    std::printf("record_stream_equals_callback_stream %u\nrecord_stream_differs %u\n", stream_eq, stream_ne);
    std::printf("graph_node_records_on_graph_launch_corr %u\n", graph_nodes_on_launch);
    return 0;
}
