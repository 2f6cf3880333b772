/*
 * sim_produce.c - the simulated application's work and the records CUPTI
 * makes of it: kernel launches, copies, memsets and synchronizations
 * (each with its runtime and driver API records, all three sharing one
 * correlation id), standalone API calls, overhead records and markers;
 * and the producer threads that do that work at the configured rates.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "sim_int.h"

/* Kernel names as real applications have them, and the hostile ones a
 * front end must survive: quotes, backslashes, newlines, tabs, terminal
 * escape sequences, invalid UTF-8, and a very long mangled C++ name. */
static const char *const sim_kernel_names[] = {
    "_Z6vecAddPKfS0_Pfi",
    "ampere_sgemm_128x64_nn",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3>)",
    "_ZN7cutlass6KernelINS_4gemm6kernel4GemmINS1_11threadblock13MmaPipelinedINS1_9GemmShapeILi128E"
    "Li128ELi8EEENS_9transform11threadblock22PredicatedTileIteratorINS_11MatrixShapeILi128ELi8EEEf"
    "NS_6layout8RowMajorELi1ENS8_30PitchLinearStripminedThreadMapINSD_16PitchLinearShapeILi8ELi128"
    "EEELi256ELi1EEELi1EEENS9_19RegularTileIteratorISC_fNSD_11ColumnMajorELi1ENS8_33TransposePitch"
    "LinearThreadMapIS8_Li4ELi32EEELi4EEENS_6layout8RowMajorEfNS_4arch13OpMultiplyAddELb0EEENS_8ep"
    "ilogue11threadblock8EpilogueIS6_NS_4gemm4warp11MmaSimtTileIteratorINS_11MatrixShapeILi32ELi64"
    "EEELNS_4gemm7OperandE2EfNS_6layout8RowMajorENS_4gemm4warp13MmaSimtPolicyINS_11MatrixShapeILi4"
    "ELi8EEENS_6layout19RowMajorInterleavedILi2EEENS_4gemm9GemmShapeILi4ELi4ELi1EEEEELi1ELi1EEEEEvN"
    "T_6ParamsE",
    "kernel_with_\"double quotes\"_and_'single'",
    "back\\slash\\kernel\\",
    "multi\nline\nkernel",
    "tab\tseparated\tkernel",
    "\x1b[31mred_kernel\x1b[0m\x1b[2J",
    "bad_utf8_\xff\xfe_kernel",
    "truncated_utf8_\xc3",
    "ovr\xc0\xaflong_utf8",
    "fused_layer_norm_\xe6\xa0\xb8\xe5\xbf\x83_kernel",
    "",
};
#define SIM_NKERNEL (sizeof sim_kernel_names / sizeof *sim_kernel_names)
_Static_assert(SIM_NKERNEL == SIM_KERNEL_NAMES, "SIM_KERNEL_NAMES in sim_int.h");

static const char *const sim_marker_names[] = {
    "forward", "backward", "optimizer.step", "epoch \"1\"", "nvtx\\range\n2", "\x1b[1mbold\x1b[0m",
    "bad\xff" "marker",
};
#define SIM_NMARKER (sizeof sim_marker_names / sizeof *sim_marker_names)

static inline uint64_t sim_rand(uint64_t *s)
{
    /* xorshift64*: cheap and good enough for field values */
    uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* Mean GPU duration for an op of kind k: short enough that each stream
 * stays busy well under 100% at the configured rate (so GPU time keeps
 * pace with wall time), between 1 us and 50 us. */
static uint64_t sim_dur(uint64_t *rng, unsigned k)
{
    const sim_config *c = &sim.cfg;
    double per_stream = c->max_rate ? 1e6 : c->rate[k] / (c->streams ? c->streams : 1);
    double mean = per_stream > 0 ? 0.4e9 / per_stream : 50000;
    if (mean > 50000)
        mean = 50000;
    if (mean < 1000)
        mean = 1000;
    return (uint64_t)mean / 2 + sim_rand(rng) % (uint64_t)mean;
}

/* Reserve [start, end) on a stream after `launch`: monotone per stream. */
static void sim_stream_slot(struct CUctx_st *c, unsigned s, uint64_t launch, uint64_t dur,
                            uint64_t *start, uint64_t *end)
{
    uint64_t old = atomic_load_explicit(&c->stream_end[s], memory_order_relaxed), st;
    do {
        st = old + 200 > launch ? old + 200 : launch;
    } while (!atomic_compare_exchange_weak_explicit(&c->stream_end[s], &old, st + dur,
                                                    memory_order_relaxed, memory_order_relaxed));
    *start = st;
    *end = st + dur;
}

/* Fault decisions (every Nth record / GPU record, process-wide). */
static bool sim_fault_invalid(void)
{
    unsigned n = sim.cfg.invalid_every;
    return n && (atomic_fetch_add_explicit(&sim.n_invalid, 1, memory_order_relaxed) + 1) % n == 0;
}

/* Zero timestamps are CUPTI's answer to a lack of device memory for its
 * records (cuptiActivityGetNextRecord's documentation; on real GPUs a low
 * CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT brings them on): with
 * zero_ts_need, only while the device buffers, size x pool limit, hold
 * less than the workload needs. */
static bool sim_fault_zero(void)
{
    unsigned n = sim.cfg.zero_ts_every;
    uint64_t need = (uint64_t)sim.cfg.zero_ts_need_mib << 20;
    if (need && sim.attr[CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE] *
                        sim.attr[CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT] >= need)
        return false;
    return n && (atomic_fetch_add_explicit(&sim.n_zero, 1, memory_order_relaxed) + 1) % n == 0;
}

static void sim_emit(sim_thread *t, unsigned d, unsigned k, const void *rec, size_t len,
                     bool zero)
{
    uint32_t ck = ((const CUpti_Activity *)rec)->kind;
    sim_buffer_put(t, d, k, rec, len, zero, sim_fault_invalid(), ck);
}

/* One API call of sim kind k (runtime or driver): counted per call id,
 * recorded only when CUPTI records that call id (the whole kind, or the
 * id alone) or the context has the kind on.  Returns the records made. */
static long sim_api(sim_thread *t, struct CUctx_st *c, unsigned d, unsigned k,
                    CUpti_CallbackId cbid, uint64_t start, uint64_t end, uint32_t corr)
{
    unsigned dom = k == SIM_K_DRIVER;
    if (cbid < SIM_CBID_MAX)
        atomic_fetch_add_explicit(&sim.api_calls[dom][cbid], 1, memory_order_relaxed);
    if (!sim_api_recorded(dom, cbid) &&
        !(atomic_load_explicit(&c->enabled, memory_order_relaxed) & (1u << k)))
        return 0;
    if (cbid < SIM_CBID_MAX)
        atomic_fetch_add_explicit(&sim.api_produced[dom][cbid], 1, memory_order_relaxed);
    CUpti_ActivityAPI a;
    memset(&a, 0, sizeof a);
    a.kind = k == SIM_K_RUNTIME ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
    a.cbid = cbid;
    a.start = start;
    a.end = end;
    a.processId = (uint32_t)sim.pid;
    a.threadId = t->tid;
    a.correlationId = corr;
    sim_emit(t, d, k, &a, sizeof a, false);
    return 1;
}

/* The end of this thread's last API or NVTX call (sim_produce_op, sim_produce_marker). */
static _Thread_local uint64_t sim_api_end;

/* What a framework calls between its launches (CUPTOPSIM_API_MIX per GPU
 * operation, in this order, round robin per thread): device and attribute
 * queries, capture checks, error reads.  None launches or waits. */
static const struct {
    unsigned k;
    CUpti_CallbackId cbid;
} sim_noise[] = {
    {SIM_K_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020},
    {SIM_K_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000},
    {SIM_K_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent},
    {SIM_K_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute},
    {SIM_K_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020},
    {SIM_K_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000},
    {SIM_K_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing},
    {SIM_K_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020},
};
#define SIM_NNOISE (sizeof sim_noise / sizeof *sim_noise)

static const struct {
    CUpti_CallbackId rt, drv;
} sim_api_cbid[SIM_KINDS] = {
    [SIM_K_KERNEL] = {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel},
    [SIM_K_MEMCPY] = {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                      CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2},
    [SIM_K_MEMSET] = {CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
                      CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async},
    [SIM_K_SYNC] = {CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
                    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize},
    [SIM_K_RUNTIME] = {CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, 0},
    [SIM_K_DRIVER] = {0, CUPTI_DRIVER_TRACE_CBID_cuEventRecord},
    [SIM_K_GRAPH] = {CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
                     CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch},
};

void sim_op_cbids(unsigned k, CUpti_CallbackId *rt, CUpti_CallbackId *drv)
{
    *rt = k < SIM_KINDS ? sim_api_cbid[k].rt : 0;
    *drv = k < SIM_KINDS ? sim_api_cbid[k].drv : 0;
}

/* The synchronous variants (sync_copy=N): on the legacy default stream,
 * one record each, like their asynchronous forms. */
void sim_op_sync_cbids(unsigned k, CUpti_CallbackId *rt, CUpti_CallbackId *drv)
{
    *rt = k == SIM_K_MEMCPY   ? CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020
          : k == SIM_K_MEMSET ? CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020
                              : 0;
    *drv = k == SIM_K_MEMCPY   ? CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2
           : k == SIM_K_MEMSET ? CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2
                               : 0;
}

/* Whether this copy or set is a synchronous one (every Nth of the
 * process's copies and sets, sync_copy=N). */
static bool sim_sync_op(unsigned k)
{
    unsigned n = sim.cfg.sync_copy_every;
    return n && (k == SIM_K_MEMCPY || k == SIM_K_MEMSET) &&
           (atomic_fetch_add_explicit(&sim.n_sync_copy, 1, memory_order_relaxed) + 1) % n == 0;
}

/* The name the kernel record of the op being made will carry, for the
 * launch callback's symbolName (CUPTI gives the kernel's name there):
 * drawn ahead on a copy of the generator, as sim_produce_op and
 * sim_kernel_rec will draw it (the API call's length, the registers, then
 * the name), so the records of a seed stay what they were. */
static const char *sim_kernel_name_ahead(const uint64_t *rng)
{
    uint64_t peek = *rng;
    (void)sim_rand(&peek);
    (void)sim_rand(&peek);
    return sim_kernel_names[sim_rand(&peek) % SIM_NKERNEL];
}

/* One kernel record; graph_id != 0: node `node` of a launch of that graph
 * (CUPTI's graphId and graphNodeId).  *end_out: its end (0: zero ts). */
static void sim_kernel_rec(sim_thread *t, uint64_t *rng, struct CUctx_st *c, unsigned s,
                           uint64_t launch, uint32_t corr, uint32_t graph_id, uint32_t node,
                           uint64_t *end_out)
{
    CUpti_ActivityKernel10 r;
    static const int32_t blocks[] = {32, 64, 128, 256, 512, 1024};
    bool zero = sim_fault_zero();
    memset(&r, 0, sizeof r);
    r.kind = atomic_load_explicit(&sim.kernel_is_concurrent, memory_order_relaxed)
                 ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
                 : CUPTI_ACTIVITY_KIND_KERNEL;
    r.registersPerThread = (uint16_t)(16 + sim_rand(rng) % 240);
    r.sharedMemoryConfig = 1;
    /* the name before the duration: slow_kernel= slows one name */
    unsigned ni = (unsigned)(sim_rand(rng) % SIM_NKERNEL);
    r.name = sim_kernel_names[ni];
    if (!zero) {
        uint64_t dur = sim_dur(rng, SIM_K_KERNEL);
        if (sim.cfg.slow_kernel == ni + 1)
            dur *= sim.cfg.slow_kernel_x ? sim.cfg.slow_kernel_x : 4;
        sim_stream_slot(c, s, launch, dur, &r.start, &r.end);
        r.completed = r.end;
    }
    r.deviceId = c->device + sim.cfg.device_base;
    r.contextId = c->id;
    r.streamId = SIM_STREAM_ID(s);
    r.gridX = (int32_t)(1 + sim_rand(rng) % 65535);
    r.gridY = (int32_t)(1 + sim_rand(rng) % 4);
    r.gridZ = 1;
    r.blockX = blocks[sim_rand(rng) % 6];
    r.blockY = 1;
    r.blockZ = 1;
    r.staticSharedMemory = (int32_t)(sim_rand(rng) % 4 * 4096);
    r.dynamicSharedMemory = (int32_t)(sim_rand(rng) % 2 * 16384);
    r.localMemoryPerThread = 0;
    r.localMemoryTotal = 1u << 26;
    r.correlationId = corr;
    r.gridId = (int64_t)corr;
    r.launchType = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
    r.channelID = s;
    r.channelType = CUPTI_CHANNEL_TYPE_COMPUTE;
    r.clusterX = r.clusterY = r.clusterZ = 1;
    r.graphId = graph_id;
    r.graphNodeId = graph_id ? ((uint64_t)graph_id << 32 | node) : 0;
    if (end_out)
        *end_out = r.end;
    sim_emit(t, c->device, SIM_K_KERNEL, &r, sizeof r, zero);
}

static void sim_kernel(sim_thread *t, uint64_t *rng, struct CUctx_st *c, unsigned s,
                       uint64_t launch, uint32_t corr)
{
    sim_kernel_rec(t, rng, c, s, launch, corr, 0, 0, NULL);
}

/* One graph launch's GPU records: one GRAPH_TRACE record when graph
 * records are on, spanning the nodes, and then no node records even with
 * kernel records on (what CUPTI 13 does with both GRAPH_TRACE and
 * CONCURRENT_KERNEL: doc/benchmarks.md "GPU: session 12"); otherwise a
 * kernel record per node when kernel records are on, all carrying the
 * launch's correlation id, as CUPTI gives them.  Without node records the
 * nodes' time is reserved on the stream all the same.  Returns the
 * records made. */
static long sim_graph(sim_thread *t, uint64_t *rng, struct CUctx_st *c, unsigned s,
                      uint64_t launch, uint32_t corr, uint32_t en)
{
    /* the graph, picked by the correlation id its launch call was made
     * with (SIM_GRAPH_OF); this draw picked it before and is kept, so a
     * seed gives the records it gave */
    (void)sim_rand(rng);
    uint32_t gid = SIM_GRAPH_OF(corr);
    unsigned nodes = sim.cfg.graph_nodes ? sim.cfg.graph_nodes : 1;
    uint64_t first = 0, last = 0, end = 0;
    long n = 0;
    if ((en & (1u << SIM_K_KERNEL)) && !(en & (1u << SIM_K_GRAPH))) {
        uint64_t before = atomic_load_explicit(&c->stream_end[s], memory_order_relaxed);
        for (unsigned i = 0; i < nodes; i++) {
            sim_kernel_rec(t, rng, c, s, launch, corr, gid, i, &end);
            atomic_fetch_add_explicit(&c->produced_stream[SIM_K_KERNEL][s], 1,
                                      memory_order_relaxed);
            if (end)
                last = end;
        }
        atomic_fetch_add_explicit(&c->graph_node_records, nodes, memory_order_relaxed);
        first = before + 200 > launch ? before + 200 : launch;
        n += nodes;
    } else {
        sim_stream_slot(c, s, launch, nodes * sim_dur(rng, SIM_K_KERNEL), &first, &last);
    }
    if (!(en & (1u << SIM_K_GRAPH)))
        return n;
    CUpti_ActivityGraphTrace2 g;
    bool zero = sim_fault_zero();
    memset(&g, 0, sizeof g);
    g.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
    g.correlationId = corr;
    if (!zero) {
        g.start = first;
        g.end = last > first ? last : first + 1000;
    }
    g.deviceId = g.endDeviceId = c->device + sim.cfg.device_base;
    g.contextId = g.endContextId = c->id;
    g.streamId = SIM_STREAM_ID(s);
    g.graphId = gid;
    sim_emit(t, c->device, SIM_K_GRAPH, &g, sizeof g, zero);
    return n + 1;
}

static void sim_memcpy(sim_thread *t, uint64_t *rng, struct CUctx_st *c, unsigned s,
                       uint64_t launch, uint32_t corr)
{
    static const struct { uint8_t kind, src, dst; } kinds[] = {
        {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
         CUPTI_ACTIVITY_MEMORY_KIND_DEVICE},
        {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
         CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE},
        {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
         CUPTI_ACTIVITY_MEMORY_KIND_DEVICE},
        {CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
         CUPTI_ACTIVITY_MEMORY_KIND_PINNED},
    };
    CUpti_ActivityMemcpy6 r;
    unsigned i = (unsigned)(sim_rand(rng) % 4);
    bool zero = sim_fault_zero();
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    r.copyKind = kinds[i].kind;
    r.srcKind = kinds[i].src;
    r.dstKind = kinds[i].dst;
    r.bytes = (1ull << (2 + sim_rand(rng) % 21)) + sim_rand(rng) % 4096;
    if (!zero)
        sim_stream_slot(c, s, launch, 1000 + r.bytes / 25, &r.start, &r.end);
    r.deviceId = c->device + sim.cfg.device_base;
    r.contextId = c->id;
    r.streamId = SIM_STREAM_ID(s);
    r.correlationId = corr;
    r.runtimeCorrelationId = corr;
    r.channelID = s;
    r.channelType = CUPTI_CHANNEL_TYPE_COMPUTE;
    r.copyCount = 1;
    sim_emit(t, c->device, SIM_K_MEMCPY, &r, sizeof r, zero);
}

static void sim_memset(sim_thread *t, uint64_t *rng, struct CUctx_st *c, unsigned s,
                       uint64_t launch, uint32_t corr)
{
    CUpti_ActivityMemset4 r;
    bool zero = sim_fault_zero();
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    r.value = (uint32_t)(sim_rand(rng) & 0xff);
    r.bytes = 1ull << (6 + sim_rand(rng) % 20);
    if (!zero)
        sim_stream_slot(c, s, launch, 1000 + r.bytes / 100, &r.start, &r.end);
    r.deviceId = c->device + sim.cfg.device_base;
    r.contextId = c->id;
    r.streamId = SIM_STREAM_ID(s);
    r.correlationId = corr;
    r.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    r.channelID = s;
    r.channelType = CUPTI_CHANNEL_TYPE_COMPUTE;
    sim_emit(t, c->device, SIM_K_MEMSET, &r, sizeof r, zero);
}

static void sim_sync(sim_thread *t, uint64_t *rng, struct CUctx_st *c, unsigned s, uint64_t t0,
                     uint32_t corr)
{
    CUpti_ActivitySynchronization2 r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    r.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    r.start = t0 + 500;
    r.end = r.start + 1000 + sim_rand(rng) % 20000;
    r.correlationId = corr;
    r.contextId = c->id;
    r.streamId = SIM_STREAM_ID(s);
    r.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
    r.cudaEventSyncId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
    sim_emit(t, c->device, SIM_K_SYNC, &r, sizeof r, false);
}

static void sim_overhead(sim_thread *t, uint64_t *rng, struct CUctx_st *c, uint64_t t0)
{
    static const CUpti_ActivityOverheadKind kinds[] = {
        CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH, CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST,
        CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION, CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE,
    };
    CUpti_ActivityOverhead3 r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    r.overheadKind = kinds[sim_rand(rng) % 4];
    r.objectKind = CUPTI_ACTIVITY_OBJECT_CONTEXT;
    r.objectId.dcs.deviceId = c->device + sim.cfg.device_base;
    r.objectId.dcs.contextId = c->id;
    r.start = t0;
    r.end = t0 + 2000 + sim_rand(rng) % 50000;
    sim_emit(t, c->device, SIM_K_OVERHEAD, &r, sizeof r, false);
}

static void sim_marker(sim_thread *t, uint64_t *rng, struct CUctx_st *c, uint64_t t0, uint32_t id)
{
    CUpti_ActivityMarker2 r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_MARKER;
    r.flags = CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS;
    r.timestamp = t0;
    r.id = id;
    r.objectKind = CUPTI_ACTIVITY_OBJECT_CONTEXT;
    r.objectId.dcs.deviceId = c->device + sim.cfg.device_base;
    r.objectId.dcs.contextId = c->id;
    r.name = sim_marker_names[sim_rand(rng) % SIM_NMARKER];
    r.domain = NULL;
    sim_emit(t, c->device, SIM_K_MARKER, &r, sizeof r, false);
}

bool sim_marker_on(void)
{
    struct CUctx_st *c = &sim.ctx[0];
    uint32_t en = atomic_load_explicit(&sim.enabled, memory_order_relaxed) |
                  atomic_load_explicit(&c->enabled, memory_order_relaxed);
    return (en & (1u << SIM_K_MARKER)) && atomic_load_explicit(&c->live, memory_order_acquire);
}

bool sim_produce_marker(uint32_t flags, uint32_t id, const char *name, const char *domain,
                        uint64_t ts)
{
    /* an NVTX call is a call of this thread too: its later API calls
     * start after it (a launch right after a push is inside the range) */
    if (ts > sim_api_end)
        sim_api_end = ts;
    if (!sim_marker_on())
        return false;
    CUpti_ActivityMarker2 r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_MARKER;
    r.flags = (CUpti_ActivityFlag)flags;
    r.timestamp = ts;
    r.id = id;
    r.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    r.objectId.pt.processId = (uint32_t)sim.pid;
    sim_thread *t = sim_thread_self();
    r.objectId.pt.threadId = t->tid;
    r.name = name;
    r.domain = domain;
    sim_emit(t, 0, SIM_K_MARKER, &r, sizeof r, false);
    return true;
}

bool sim_produce_marker_data(uint32_t id, bool color_argb, uint32_t color, uint32_t category,
                             uint64_t payload)
{
    if (!sim_marker_on())
        return false;
    CUpti_ActivityMarkerData2 r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_MARKER_DATA;
    r.flags = color_argb ? CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB : CUPTI_ACTIVITY_FLAG_MARKER_COLOR_NONE;
    r.id = id;
    r.payloadKind = CUPTI_METRIC_VALUE_KIND_UINT64;
    r.payload.metricValueUint64 = payload;
    r.color = color;
    r.category = category;
    sim_emit(sim_thread_self(), 0, SIM_K_MARKER, &r, sizeof r, false);
    return true;
}

long sim_produce_op(sim_thread *t, uint64_t *rng, unsigned d, unsigned k)
{
    if (d >= SIM_DEV_MAX || k >= SIM_KINDS)
        return -1;
    struct CUctx_st *c = &sim.ctx[d];
    if (!atomic_load_explicit(&c->live, memory_order_acquire))
        return -1;
    sim_slot *sl = &t->slot[d];
    uint32_t en = atomic_load_explicit(&sim.enabled, memory_order_relaxed) |
                  atomic_load_explicit(&c->enabled, memory_order_relaxed);
    atomic_fetch_add_explicit(&sl->ops[k], 1, memory_order_relaxed);
    /* the application instantiates its graphs before it first launches
     * one, whether anyone is listening or not (an agent that attaches
     * later never learns their nodes) */
    if (k == SIM_K_GRAPH)
        for (uint32_t g = 1; g <= SIM_GRAPHS; g++)
            sim_graph_instantiate(c, g);
    bool cbs = atomic_load_explicit(&sim.api_domains, memory_order_relaxed) != 0;
    bool recs = en || atomic_load_explicit(&sim.api_on_count, memory_order_relaxed);
    if (!cbs && !recs)
        return 0;
    long n = 0;
    unsigned s = (unsigned)(sim_rand(rng) % (sim.cfg.streams ? sim.cfg.streams : 1));
    bool sync = sim_sync_op(k);
    if (sync)
        s = 0;   /* the legacy default stream */
    uint32_t corr = atomic_fetch_add_explicit(&sim.corr, 1, memory_order_relaxed) + 1;
    /* A client's callbacks, with the op's correlation id, context and
     * stream, before its records exist (as on CUPTI: API enter comes
     * before the work is issued). */
    if (cbs) {
        sim_api_domain_call(k, sync, c, s, corr, k == SIM_K_KERNEL ? sim_kernel_name_ahead(rng)
                                                                   : NULL, &en);
        recs = en || atomic_load_explicit(&sim.api_on_count, memory_order_relaxed);
    }
    if (!recs)
        return 0;
    /* (sim_kernel_name_ahead knows the draws from here to the name) */
    uint64_t api_dur = 2000 + sim_rand(rng) % 3000;
    bool gpu = k == SIM_K_KERNEL || k == SIM_K_MEMCPY || k == SIM_K_MEMSET || k == SIM_K_SYNC ||
               k == SIM_K_GRAPH;
    bool api = gpu || k == SIM_K_RUNTIME || k == SIM_K_DRIVER;
    unsigned mix = gpu ? sim.cfg.api_mix : 0;
    /* The op's API calls, one after the other on this thread, end now:
     * the mix calls (1000 ns apart, 400 ns each), then the runtime call
     * with its driver call inside.  They start at most their nominal
     * length ago and never before this thread's last call ended, squeezed
     * to fit, so the calls of one thread never overlap (a real thread's
     * calls are sequential or nested). */
    uint64_t t0 = sim_now(), lo = t0, total = (uint64_t)mix * 1000 + api_dur;
    if (api) {
        if (t0 < sim_api_end)
            t0 = sim_api_end;
        lo = t0 > total && t0 - total > sim_api_end ? t0 - total : sim_api_end;
        sim_api_end = t0;
    }
    double scale = total ? (double)(t0 - lo) / (double)total : 0.0;
#define SIM_AT(x) (lo + (uint64_t)((double)(x) * scale))
    for (unsigned i = 0; i < mix; i++) {   /* before the launch: each its own correlation id */
        unsigned j = t->noise++ % SIM_NNOISE;
        uint32_t nc = atomic_fetch_add_explicit(&sim.corr, 1, memory_order_relaxed) + 1;
        n += sim_api(t, c, d, sim_noise[j].k, sim_noise[j].cbid, SIM_AT(1000 * i),
                     SIM_AT(1000 * i + 400), nc);
    }
    uint64_t rt0 = (uint64_t)mix * 1000, rts = SIM_AT(rt0);
    CUpti_CallbackId rtid = sim_api_cbid[k].rt, drvid = sim_api_cbid[k].drv;
    if (sync)
        sim_op_sync_cbids(k, &rtid, &drvid);
    if (gpu || k == SIM_K_RUNTIME)
        n += sim_api(t, c, d, SIM_K_RUNTIME, rtid, rts, t0, corr);
    if (gpu || k == SIM_K_DRIVER)
        n += sim_api(t, c, d, SIM_K_DRIVER, drvid, SIM_AT(rt0 + 300), SIM_AT(total - 300), corr);
#undef SIM_AT
    if (k == SIM_K_GRAPH)
        return n + sim_graph(t, rng, c, s, t0, corr, en);
    if (!(en & (1u << k)) || k == SIM_K_RUNTIME || k == SIM_K_DRIVER)
        return n;
    if (k == SIM_K_KERNEL || k == SIM_K_MEMCPY || k == SIM_K_MEMSET)
        atomic_fetch_add_explicit(&c->produced_stream[k][s], 1, memory_order_relaxed);
    switch (k) {
    case SIM_K_KERNEL: sim_kernel(t, rng, c, s, t0, corr); break;
    case SIM_K_MEMCPY: sim_memcpy(t, rng, c, s, t0, corr); break;
    case SIM_K_MEMSET: sim_memset(t, rng, c, s, t0, corr); break;
    case SIM_K_SYNC: sim_sync(t, rng, c, s, rts, corr); break;
    case SIM_K_OVERHEAD: sim_overhead(t, rng, c, t0); break;
    case SIM_K_MARKER: sim_marker(t, rng, c, t0, corr); break;
    default: break;
    }
    return n + 1;
}

/* ---- producer threads -------------------------------------------------- */

static uint64_t sim_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Rate multiplier at `ms` since the start (bursts). */
static double sim_burst(const sim_config *c, uint64_t ms)
{
    if (c->burst_k <= 0 || !c->burst_every_ms)
        return 1.0;
    return ms % c->burst_every_ms < c->burst_ms ? c->burst_k : 1.0;
}

void *sim_produce_main(void *arg)
{
    const sim_config *c = &sim.cfg;
    unsigned idx = (unsigned)(uintptr_t)arg, T = sim.nprod ? sim.nprod : 1;
    uint64_t rng = (c->seed + 1) * 0x9e3779b97f4a7c15ull + idx * 0x632be59bd9b4e019ull;
    double acc[SIM_DEV_MAX][SIM_KINDS] = {{0}};
    uint64_t quota = 0, done[SIM_DEV_MAX][SIM_KINDS] = {{0}};
    sim_thread *t = sim_thread_self();
    uint64_t start = sim_mono_ns(), last = start;

    if (c->ops)
        quota = c->ops / T + (idx < c->ops % T ? 1 : 0);
    while (!atomic_load_explicit(&sim.prod_stop, memory_order_relaxed)) {
        uint64_t now = sim_mono_ns();
        double dt = (double)(now - last) / 1e9, mult = sim_burst(c, (now - start) / 1000000u);
        bool more = false;
        last = now;
        if (dt > 0.1)
            dt = 0.1; /* descheduled: do not catch up in one storm */
        for (unsigned d = 0; d < c->devices; d++)
            for (unsigned k = 0; k < SIM_KINDS; k++) {
                uint64_t n;
                if (c->rate[k] <= 0 || (quota && done[d][k] >= quota))
                    continue;
                if (c->max_rate) {
                    n = (uint64_t)(c->rate[k] / 10000) + 1;
                } else {
                    acc[d][k] += c->rate[k] * c->dev_scale[d] * mult * dt / T;
                    n = (uint64_t)acc[d][k];
                    acc[d][k] -= (double)n;
                }
                if (quota && done[d][k] + n > quota)
                    n = quota - done[d][k];
                for (uint64_t i = 0; i < n; i++)
                    (void)sim_produce_op(t, &rng, d, k);
                done[d][k] += n;
                more |= !quota || done[d][k] < quota;
            }
        if (!more)
            break;
        if (!c->max_rate) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    atomic_fetch_add(&sim.prod_done, 1);
    return NULL;
}
