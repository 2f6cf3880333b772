// graph_cost.cu - a CUDA graph of NODES empty kernels (default 50), captured
// from one stream, instantiated once and replayed N times (issue 32 item 1:
// the cost of per-node kernel records against one GRAPH_TRACE record per
// graph launch).
//
//   graph_cost MODE [N] [NODES]
//
// MODE: none         no CUPTI from this program (run it under the cuptop
//                    agent, or alone for the no-agent baseline)
//       cupti-kernel count-only CUPTI client: CONCURRENT_KERNEL records
//       cupti-graph  count-only CUPTI client: GRAPH_TRACE records
//       probe        CUPTI's limits: enables GRAPH_TRACE and CONCURRENT_KERNEL
//                    in both orders, prints what cuptiActivityEnable returned,
//                    then one graph launch plus one plain kernel and the
//                    records of each kind that came out.
//
// Prints one line: "mode=M graphs=G nodes=K seconds=S kernel_records=R
// graph_records=T" (graphs counts every cudaGraphLaunch, the warm-up
// included; seconds covers the N timed replays only).  Exit 0, 1 on a
// CUDA or CUPTI error.
#include <cuda_runtime.h>
#include <cupti.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void empty_kernel() {}

#define CK(x)                                                                  \
    do {                                                                       \
        cudaError_t e_ = (x);                                                  \
        if (e_ != cudaSuccess) {                                               \
            std::fprintf(stderr, "graph_cost: %s: %s\n", #x,                   \
                         cudaGetErrorString(e_));                              \
            std::exit(1);                                                      \
        }                                                                      \
    } while (0)

#define CU(x)                                                                  \
    do {                                                                       \
        CUptiResult r_ = (x);                                                  \
        if (r_ != CUPTI_SUCCESS) {                                             \
            const char *s_ = "?";                                              \
            cuptiGetResultString(r_, &s_);                                     \
            std::fprintf(stderr, "graph_cost: %s: %s\n", #x, s_);              \
            std::exit(1);                                                      \
        }                                                                      \
    } while (0)

static unsigned long long n_kernel, n_graph, n_other;

static void CUPTIAPI buf_requested(uint8_t **buf, size_t *size, size_t *max)
{
    *size = 8u << 20;
    *buf = static_cast<uint8_t *>(std::aligned_alloc(8, *size));
    *max = 0;
}

// Count only: the client's cost is CUPTI's, not a store's.
static void CUPTIAPI buf_completed(CUcontext, uint32_t, uint8_t *buf,
                                   size_t, size_t valid)
{
    CUpti_Activity *rec = nullptr;
    while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
            rec->kind == CUPTI_ACTIVITY_KIND_KERNEL)
            n_kernel++;
        else if (rec->kind == CUPTI_ACTIVITY_KIND_GRAPH_TRACE)
            n_graph++;
        else
            n_other++;
    }
    std::free(buf);
}

static const char *result_name(CUptiResult r)
{
    const char *s = "?";
    cuptiGetResultString(r, &s);
    return s;
}

static cudaGraphExec_t build_graph(cudaStream_t st, int nodes)
{
    cudaGraph_t g;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < nodes; i++)
        empty_kernel<<<1, 1, 0, st>>>();
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&exec, g, 0));
    CK(cudaGraphDestroy(g));
    return exec;
}

// Both orders: whether CUPTI refuses the second kind, and with what.
static void probe_enable(void)
{
    CUptiResult a = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
    CUptiResult b = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    std::printf("probe: enable GRAPH_TRACE -> %s; then CONCURRENT_KERNEL -> %s\n",
                result_name(a), result_name(b));
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    b = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    a = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
    std::printf("probe: enable CONCURRENT_KERNEL -> %s; then GRAPH_TRACE -> %s\n",
                result_name(b), result_name(a));
    CUptiResult k = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_KERNEL);
    std::printf("probe: then KERNEL -> %s\n", result_name(k));
}

static int run_probe(cudaStream_t st, int nodes)
{
    probe_enable();
    cudaGraphExec_t exec = build_graph(st, nodes);
    CK(cudaGraphLaunch(exec, st));
    empty_kernel<<<1, 1, 0, st>>>();
    CK(cudaStreamSynchronize(st));
    CU(cuptiActivityFlushAll(1));
    std::printf("probe: 1 graph launch of %d kernels + 1 plain kernel -> "
                "kernel_records=%llu graph_records=%llu other=%llu\n",
                nodes, n_kernel, n_graph, n_other);
    CK(cudaGraphExecDestroy(exec));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: graph_cost none|cupti-kernel|cupti-graph|probe [N] [NODES]\n");
        return 2;
    }
    const char *mode = argv[1];
    long n = argc > 2 ? std::atol(argv[2]) : 100000;
    int nodes = argc > 3 ? std::atoi(argv[3]) : 50;
    bool cupti = std::strcmp(mode, "none") != 0;
    if (cupti)
        CU(cuptiActivityRegisterCallbacks(buf_requested, buf_completed));
    if (!std::strcmp(mode, "cupti-kernel"))
        CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    else if (!std::strcmp(mode, "cupti-graph"))
        CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE));
    else if (std::strcmp(mode, "none") && std::strcmp(mode, "probe")) {
        std::fprintf(stderr, "graph_cost: unknown mode %s\n", mode);
        return 2;
    }
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    if (!std::strcmp(mode, "probe"))
        return run_probe(st, nodes);
    cudaGraphExec_t exec = build_graph(st, nodes);
    CK(cudaGraphLaunch(exec, st)); // warm-up: module load, first upload
    CK(cudaStreamSynchronize(st));
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; i++)
        CK(cudaGraphLaunch(exec, st));
    CK(cudaStreamSynchronize(st));
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (cupti)
        CU(cuptiActivityFlushAll(1));
    std::printf("mode=%s graphs=%ld nodes=%d seconds=%.6f kernel_records=%llu graph_records=%llu\n",
                mode, n + 1, nodes, secs, n_kernel, n_graph);
    CK(cudaGraphExecDestroy(exec));
    CK(cudaStreamDestroy(st));
    return 0;
}
