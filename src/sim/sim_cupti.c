/*
 * sim_cupti.c - the CUPTI entry points of the simulated CUPTI, with the
 * toolkit's own prototypes (cupti.h), and the state they share.
 *
 * Modelled: versions and result strings, activity callbacks, enable and
 * disable (global and per context), flush, the record iterator, dropped
 * record counts, attributes, timestamps, context and device ids.  The
 * callback API (one subscriber with the resource domain) is
 * sim_callback.c's.  Anything else the toolkit
 * declares is simply not exported; the few a client might call without
 * checking return CUPTI_ERROR_NOT_SUPPORTED.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sim_int.h"

sim_state sim = {
    .once = PTHREAD_ONCE_INIT,
    .reg_lock = PTHREAD_MUTEX_INITIALIZER,
    .q_lock = PTHREAD_MUTEX_INITIALIZER,
    .q_cond = PTHREAD_COND_INITIALIZER,
    .q_done = PTHREAD_COND_INITIALIZER,
};

static const char *const sim_call_names[SIM_CALLS] = {
    "cuptiGetVersion", "cuptiGetResultString", "cuptiGetTimestamp",
    "cuptiActivityRegisterTimestampCallback", "cuptiGetDeviceId", "cuptiGetContextId",
    "cuptiActivityRegisterCallbacks", "cuptiActivityEnable", "cuptiActivityDisable",
    "cuptiActivityEnableAndDump", "cuptiActivityEnableContext", "cuptiActivityDisableContext",
    "cuptiActivityFlushAll", "cuptiActivityFlushPeriod", "cuptiActivityGetNextRecord",
    "cuptiActivityGetNumDroppedRecords", "cuptiActivitySetAttribute", "cuptiActivityGetAttribute",
    "cuptiSubscribe", "cuptiSubscribe_v2", "cuptiUnsubscribe", "cuptiEnableDomain",
    "cuptiEnableCallback", "cuptiFinalize", "cuptiActivityPushExternalCorrelationId",
    "cuptiActivityPopExternalCorrelationId", "cuptiActivityEnableRuntimeApi",
    "cuptiActivityEnableDriverApi", "cuptiNvtxInitialize2", "cuptiGetStreamIdEx",
};

/* Count a call: relaxed atomics (a test reads them after the fact; the
 * first time is set once by compare-and-swap, the last one by max). */
void sim_call(enum sim_call c)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec, z = 0, last;
    atomic_fetch_add_explicit(&sim.call_n[c], 1, memory_order_relaxed);
    (void)atomic_compare_exchange_strong_explicit(&sim.call_first[c], &z, now,
                                                  memory_order_relaxed, memory_order_relaxed);
    last = atomic_load_explicit(&sim.call_last[c], memory_order_relaxed);
    while (last < now && !atomic_compare_exchange_weak_explicit(&sim.call_last[c], &last, now,
                                                                memory_order_relaxed,
                                                                memory_order_relaxed))
        ;
}

void sim_calls_clear(void)
{
    for (unsigned c = 0; c < SIM_CALLS; c++) {
        atomic_store(&sim.call_n[c], 0);
        atomic_store(&sim.call_first[c], 0);
        atomic_store(&sim.call_last[c], 0);
    }
    for (unsigned d = 0; d < SIM_DEV_MAX; d++) {
        atomic_store(&sim.dumped_ctx[d], 0);
        atomic_store(&sim.dumped_dev[d], 0);
    }
    atomic_store(&sim.dump_dropped, 0);
}

const char *sim_call_name(unsigned c)
{
    return c < SIM_CALLS ? sim_call_names[c] : NULL;
}

SIM_EXPORT const char *cuptopsim_call_name(unsigned i)
{
    return sim_call_name(i);
}

/* The calling thread's producer state (NULL until it first produces). */
static __thread sim_thread *sim_self;

static void sim_slots_init(sim_thread *t)
{
    for (unsigned d = 0; d < SIM_DEV_MAX; d++)
        pthread_mutex_init(&t->slot[d].lock, NULL);
}

static void sim_after_fork_child(void)
{
    sim.pid = getpid();
    sim.is_child = true;
    pthread_mutex_init(&sim.reg_lock, NULL);
    sim_buffer_after_fork();
    /* Every thread's buffers are the parent's: abandon them and start the
     * child's counts from zero (its truth file is separate). */
    for (sim_thread *t = sim.threads;; t = t->next) {
        if (!t)
            t = &sim.shared;
        for (unsigned d = 0; d < SIM_DEV_MAX; d++) {
            sim_slot *s = &t->slot[d];
            memset(s, 0, sizeof *s);
            pthread_mutex_init(&s->lock, NULL);
        }
        if (t == &sim.shared)
            break;
    }
    for (unsigned d = 0; d < SIM_DEV_MAX; d++) {
        struct CUctx_st *c = &sim.ctx[d];
        atomic_store(&c->live, false);
        atomic_store(&c->pending_drops, 0);
        atomic_store(&c->reported, 0);
        atomic_store(&c->via_null, 0);
    }
    sim_stream_counts_clear();
    memset(sim.delivered, 0, sizeof sim.delivered);
    memset(sim.zero_ts, 0, sizeof sim.zero_ts);
    memset(sim.invalid, 0, sizeof sim.invalid);
    memset(sim.stolen, 0, sizeof sim.stolen);
    memset(sim.foreign, 0, sizeof sim.foreign);
    memset(sim.queued, 0, sizeof sim.queued);
    atomic_store(&sim.b_requested, 0);
    atomic_store(&sim.b_null, 0);
    atomic_store(&sim.b_small, 0);
    atomic_store(&sim.global_drops, 0);
    sim.b_completed = sim.b_dup = sim.b_foreign = sim.b_stolen = 0;
    sim.flushes = sim.flushes_forced = sim.n_completed = 0;
    sim.nprod = 0;
    atomic_store(&sim.prod_stop, false);
    sim_calls_clear();
}

/* CUPTI's attribute defaults (CUDA 13). */
void sim_attr_defaults(void)
{
    memset(sim.attr, 0, sizeof sim.attr);
    sim.attr[CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE] = 8u << 20;
    sim.attr[CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE_CDP] = 8u << 20;
    sim.attr[CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT] = 250;
    sim.attr[CUPTI_ACTIVITY_ATTR_PROFILING_SEMAPHORE_POOL_SIZE] = 65536;
    sim.attr[CUPTI_ACTIVITY_ATTR_PROFILING_SEMAPHORE_POOL_LIMIT] = 65536;
    sim.attr[CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER] = 1;
    sim.attr[CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE_DEVICE_GRAPHS] = 16u << 20;
}

static void sim_once(void)
{
    char why[256] = "";
    sim.pid = getpid();
    sim_slots_init(&sim.shared);
    sim_attr_defaults();
    sim.cfg_ok = sim_config_load(&sim.cfg, why, sizeof why) == 0;
    if (!sim.cfg_ok) {
        /* A misconfigured simulator still loads (a CUPTI must not take the
         * application down); it produces nothing. */
        fprintf(stderr, "cuptop-simcupti: %s; producing nothing\n", why);
        sim.cfg.devices = 1;
        sim.cfg.api_version = CUPTI_API_VERSION;
    }
    pthread_atfork(NULL, NULL, sim_after_fork_child);
}

void sim_init(void)
{
    pthread_once(&sim.once, sim_once);
}

void sim_sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

uint64_t sim_now(void)
{
    CUpti_TimestampCallbackFunc f = sim.ts_cb;
    struct timespec ts;
    if (f)
        return f();
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

sim_thread *sim_thread_self(void)
{
    sim_thread *t = sim_self;
    if (!sim.attr[CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER])
        return &sim.shared;
    if (t)
        return t;
    t = calloc(1, sizeof *t);
    if (!t)
        return &sim.shared;
    sim_slots_init(t);
    t->tid = (uint32_t)syscall(SYS_gettid);
    pthread_mutex_lock(&sim.reg_lock);
    t->index = sim.nthreads++;
    t->next = sim.threads;
    sim.threads = t;
    pthread_mutex_unlock(&sim.reg_lock);
    sim_self = t;
    return t;
}

/* Free every thread record (cuptopsim_reset, no producer running). */
void sim_thread_list_free(void)
{
    pthread_mutex_lock(&sim.reg_lock);
    sim_thread *t = sim.threads;
    while (t) {
        sim_thread *next = t->next;
        for (unsigned d = 0; d < SIM_DEV_MAX; d++)
            pthread_mutex_destroy(&t->slot[d].lock);
        free(t);
        t = next;
    }
    sim.threads = NULL;
    sim.nthreads = 0;
    for (unsigned d = 0; d < SIM_DEV_MAX; d++) {
        sim_slot *s = &sim.shared.slot[d];
        pthread_mutex_destroy(&s->lock);
        memset(s, 0, sizeof *s);
        pthread_mutex_init(&s->lock, NULL);
    }
    pthread_mutex_unlock(&sim.reg_lock);
    sim_self = NULL;
}

/* ---- versions, results, timestamps ------------------------------------ */

SIM_EXPORT CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version)
{
    sim_call(SIM_C_GetVersion);
    sim_init();
    if (!version)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *version = sim.cfg.api_version;
    return CUPTI_SUCCESS;
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str)
{
    sim_call(SIM_C_GetResultString);
    static const struct { CUptiResult r; const char *s; } names[] = {
        {CUPTI_SUCCESS, "CUPTI_SUCCESS"},
        {CUPTI_ERROR_INVALID_PARAMETER, "CUPTI_ERROR_INVALID_PARAMETER"},
        {CUPTI_ERROR_INVALID_DEVICE, "CUPTI_ERROR_INVALID_DEVICE"},
        {CUPTI_ERROR_INVALID_CONTEXT, "CUPTI_ERROR_INVALID_CONTEXT"},
        {CUPTI_ERROR_INVALID_OPERATION, "CUPTI_ERROR_INVALID_OPERATION"},
        {CUPTI_ERROR_OUT_OF_MEMORY, "CUPTI_ERROR_OUT_OF_MEMORY"},
        {CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT, "CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT"},
        {CUPTI_ERROR_MAX_LIMIT_REACHED, "CUPTI_ERROR_MAX_LIMIT_REACHED"},
        {CUPTI_ERROR_NOT_READY, "CUPTI_ERROR_NOT_READY"},
        {CUPTI_ERROR_NOT_INITIALIZED, "CUPTI_ERROR_NOT_INITIALIZED"},
        {CUPTI_ERROR_INVALID_KIND, "CUPTI_ERROR_INVALID_KIND"},
        {CUPTI_ERROR_NOT_SUPPORTED, "CUPTI_ERROR_NOT_SUPPORTED"},
        {CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
         "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"},
        {CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"},
        {CUPTI_ERROR_NOT_COMPATIBLE, "CUPTI_ERROR_NOT_COMPATIBLE"},
        {CUPTI_ERROR_UNKNOWN, "CUPTI_ERROR_UNKNOWN"},
    };
    if (!str)
        return CUPTI_ERROR_INVALID_PARAMETER;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].r == result) {
            *str = names[i].s;
            return CUPTI_SUCCESS;
        }
    *str = NULL;
    return CUPTI_ERROR_INVALID_PARAMETER;
}

/* CUPTI's messages for the codes the simulator returns (cupti_result.h). */
SIM_EXPORT CUptiResult CUPTIAPI cuptiGetErrorMessage(CUptiResult result, const char **str)
{
    static const struct { CUptiResult r; const char *s; } msgs[] = {
        {CUPTI_SUCCESS, "No error."},
        {CUPTI_ERROR_INVALID_PARAMETER, "One or more of the parameters is invalid."},
        {CUPTI_ERROR_NOT_INITIALIZED, "CUPTI is unable to initialize its connection to the CUDA "
                                      "driver."},
        {CUPTI_ERROR_NOT_SUPPORTED, "The operation is not supported."},
        {CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, "The user does not have sufficient privileges "
                                              "required to perform the operation."},
        {CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, "Multiple subscribers are not "
                                                         "supported."},
        {CUPTI_ERROR_NOT_COMPATIBLE, "The current operation is not compatible with the "
                                     "current state of the object."},
        {CUPTI_ERROR_UNKNOWN, "An unknown internal error has occurred."},
    };
    if (!str)
        return CUPTI_ERROR_INVALID_PARAMETER;
    for (size_t i = 0; i < sizeof msgs / sizeof *msgs; i++)
        if (msgs[i].r == result) {
            *str = msgs[i].s;
            return CUPTI_SUCCESS;
        }
    *str = NULL;
    return CUPTI_ERROR_INVALID_PARAMETER;
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *timestamp)
{
    sim_call(SIM_C_GetTimestamp);
    if (!timestamp)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *timestamp = sim_now();
    return CUPTI_SUCCESS;
}

SIM_EXPORT CUptiResult CUPTIAPI
cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc funcTimestamp)
{
    sim_call(SIM_C_ActivityRegisterTimestampCallback);
    sim_init();
    sim.ts_cb = funcTimestamp;
    return CUPTI_SUCCESS;
}

/* ---- contexts ------------------------------------------------------------ */

static struct CUctx_st *sim_ctx(CUcontext c)
{
    struct CUctx_st *x = (struct CUctx_st *)c;
    if (x < &sim.ctx[0] || x >= &sim.ctx[SIM_DEV_MAX] || x->magic != SIM_CTX_MAGIC)
        return NULL;
    return x;
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext context, uint32_t *deviceId)
{
    sim_call(SIM_C_GetDeviceId);
    struct CUctx_st *c = sim_ctx(context);
    if (!deviceId)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (!c || !atomic_load(&c->live))
        return CUPTI_ERROR_INVALID_CONTEXT;
    *deviceId = c->device + sim.cfg.device_base;
    return CUPTI_SUCCESS;
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiGetContextId(CUcontext context, uint32_t *contextId)
{
    sim_call(SIM_C_GetContextId);
    struct CUctx_st *c = sim_ctx(context);
    if (!contextId)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (!c || !atomic_load(&c->live))
        return CUPTI_ERROR_INVALID_CONTEXT;
    *contextId = c->id;
    return CUPTI_SUCCESS;
}

/* The driver's cuStreamIsCapturing, as a CUPTI client finds it in the
 * process (the launch ledger skips launches into a capturing stream):
 * stream capture is not simulated, so no stream is capturing.  A real
 * libcupti does not export it; the agent looks here last. */
SIM_EXPORT CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    (void)hStream;
    if (!captureStatus)
        return CUDA_ERROR_INVALID_VALUE;
    *captureStatus = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}

/* The driver's graph queries, as a CUPTI client finds them in the process
 * (the launch ledger counts an instantiated graph's nodes): every
 * simulated graph has sim.cfg.graph_nodes kernel nodes and no child
 * graph.  A real libcupti does not export them; the agent looks here
 * last. */
static uint32_t sim_graph_id(CUgraph g)
{
    uintptr_t v = (uintptr_t)g;
    return v > (uintptr_t)SIM_GRAPH_HANDLE(0) && v <= (uintptr_t)SIM_GRAPH_HANDLE(SIM_GRAPHS)
               ? (uint32_t)(v - (uintptr_t)SIM_GRAPH_HANDLE(0)) : 0;
}

SIM_EXPORT CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    uint32_t gid = sim_graph_id(hGraph);
    if (!gid || !numNodes)
        return CUDA_ERROR_INVALID_VALUE;
    size_t n = sim.cfg.graph_nodes ? sim.cfg.graph_nodes : 1;
    if (nodes)
        for (size_t i = 0; i < n && i < *numNodes; i++)
            nodes[i] = SIM_GRAPH_NODE(gid, i);
    *numNodes = n;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    uintptr_t v = (uintptr_t)hNode;
    if (!type || v < (uintptr_t)SIM_GRAPH_NODE(1, 0) ||
        v >= (uintptr_t)SIM_GRAPH_NODE(SIM_GRAPHS + 1, 0))
        return CUDA_ERROR_INVALID_VALUE;
    *type = CU_GRAPH_NODE_TYPE_KERNEL;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph *phGraph)
{
    (void)hNode;
    (void)phGraph;
    return CUDA_ERROR_INVALID_VALUE;   /* no child graph node here */
}

/* The records' stream id of a handle from an API callback's parameters
 * (SIM_STREAM_HANDLE); NULL, the default stream, is stream 0 (the
 * per-thread default stream is not simulated apart from it). */
SIM_EXPORT CUptiResult CUPTIAPI cuptiGetStreamIdEx(CUcontext context, CUstream stream,
                                                    uint8_t perThreadStream, uint32_t *streamId)
{
    sim_call(SIM_C_GetStreamIdEx);
    struct CUctx_st *c = sim_ctx(context);
    uintptr_t h = (uintptr_t)stream, base = (uintptr_t)SIM_STREAM_HANDLE(0);
    if (!streamId || perThreadStream > 1)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (!c || !atomic_load(&c->live))
        return CUPTI_ERROR_INVALID_CONTEXT;
    if (!h) {   /* the default stream (legacy or per thread): stream 0's */
        *streamId = SIM_STREAM_ID(0);
        return CUPTI_SUCCESS;
    }
    if (h < base || h >= base + SIM_STREAM_MAX)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *streamId = SIM_STREAM_ID(h - base);
    return CUPTI_SUCCESS;
}

/* ---- activity API ---------------------------------------------------- */

SIM_EXPORT CUptiResult CUPTIAPI
cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                               CUpti_BuffersCallbackCompleteFunc funcBufferCompleted)
{
    sim_call(SIM_C_ActivityRegisterCallbacks);
    sim_init();
    if (!funcBufferRequested || !funcBufferCompleted)
        return CUPTI_ERROR_INVALID_PARAMETER;
    sim.req_cb = funcBufferRequested;
    sim.cmp_cb = funcBufferCompleted;
    sim_buffer_worker_start();
    return CUPTI_SUCCESS;
}

/* The sim kind for a CUPTI kind, -1 when produced by no one here, -2 when
 * not an activity kind at all. */
static int sim_kind_of(CUpti_ActivityKind kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return SIM_K_KERNEL;
    case CUPTI_ACTIVITY_KIND_MEMCPY: return SIM_K_MEMCPY;
    case CUPTI_ACTIVITY_KIND_MEMSET: return SIM_K_MEMSET;
    case CUPTI_ACTIVITY_KIND_RUNTIME: return SIM_K_RUNTIME;
    case CUPTI_ACTIVITY_KIND_DRIVER: return SIM_K_DRIVER;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return SIM_K_SYNC;
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return SIM_K_OVERHEAD;
    case CUPTI_ACTIVITY_KIND_MARKER: return SIM_K_MARKER;
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: return SIM_K_GRAPH;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:       /* accepted, never produced */
    case CUPTI_ACTIVITY_KIND_STREAM:
    case CUPTI_ACTIVITY_KIND_DEVICE:
    case CUPTI_ACTIVITY_KIND_CONTEXT:
    case CUPTI_ACTIVITY_KIND_NAME:
    case CUPTI_ACTIVITY_KIND_MARKER_DATA:
        return -1;
    default: return -2;
    }
}

/* GRAPH_TRACE beside kernel records, as CUPTI 13 does on an H100
 * (doc/benchmarks.md "GPU: session 12"): CONCURRENT_KERNEL and
 * GRAPH_TRACE may both be on, in either order; the serial KERNEL kind
 * enabled while GRAPH_TRACE is on, or GRAPH_TRACE while KERNEL is on, is
 * CUPTI_ERROR_NOT_COMPATIBLE and changes nothing.  `serial` says the
 * kernel kind on is KERNEL, not CONCURRENT_KERNEL.  The fault
 * graph_strict=1 refuses every kernel kind beside GRAPH_TRACE: a stricter
 * CUPTI, so that the agent's word on a refused pair is tested. */
static bool sim_graph_conflict(CUpti_ActivityKind kind, int k, uint32_t en, bool serial)
{
    if (sim.cfg.graph_strict)
        return (k == SIM_K_GRAPH && (en & (1u << SIM_K_KERNEL))) ||
               (k == SIM_K_KERNEL && (en & (1u << SIM_K_GRAPH)));
    return (k == SIM_K_GRAPH && (en & (1u << SIM_K_KERNEL)) && serial) ||
           (kind == CUPTI_ACTIVITY_KIND_KERNEL && (en & (1u << SIM_K_GRAPH)));
}

/* Whether the kernel kind that is on is the serial KERNEL kind. */
static bool sim_kernel_serial(void)
{
    return !atomic_load(&sim.kernel_is_concurrent);
}

static CUptiResult sim_enable(CUpti_ActivityKind kind, bool on)
{
    sim_init();
    if (sim.cfg.enable_fail)   /* fault: CUPTI cannot start */
        return (CUptiResult)sim.cfg.enable_fail;
    int k = sim_kind_of(kind);
    if (k == -2)
        return CUPTI_ERROR_NOT_SUPPORTED;
    if (kind == CUPTI_ACTIVITY_KIND_DEVICE && on)
        sim_devices_dump();   /* the simulated devices exist from the start */
    if (k < 0)
        return CUPTI_SUCCESS;
    if (on && sim_graph_conflict(kind, k, atomic_load(&sim.enabled), sim_kernel_serial()))
        return CUPTI_ERROR_NOT_COMPATIBLE;
    if (on && sim.cfg.enable_slow_ms)   /* fault: a slow start (enable_slow) */
        sim_sleep_ms(sim.cfg.enable_slow_ms);
    if (on) {
        if (k == SIM_K_KERNEL)
            atomic_store(&sim.kernel_is_concurrent, kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        atomic_fetch_or(&sim.enabled, 1u << k);
    } else {
        atomic_fetch_and(&sim.enabled, ~(1u << k));
    }
    /* the whole API kind overrides every per-call setting made before */
    if (k == SIM_K_RUNTIME || k == SIM_K_DRIVER)
        sim_api_set_all(k == SIM_K_DRIVER, on);
    return CUPTI_SUCCESS;
}

static pthread_mutex_t sim_api_lock = PTHREAD_MUTEX_INITIALIZER;

static void sim_api_set_one(unsigned dom, uint32_t cbid, bool on)
{
    uint8_t old = atomic_exchange_explicit(&sim.api_on[dom][cbid], on, memory_order_relaxed);
    if (old && !on)
        atomic_fetch_sub(&sim.api_on_count, 1);
    else if (!old && on)
        atomic_fetch_add(&sim.api_on_count, 1);
}

void sim_api_set_all(unsigned dom, bool on)
{
    pthread_mutex_lock(&sim_api_lock);
    for (uint32_t i = 0; i < SIM_CBID_MAX; i++)
        sim_api_set_one(dom & 1, i, on);
    pthread_mutex_unlock(&sim_api_lock);
}

/* cuptiActivityEnableRuntimeApi / DriverApi: one call id on or off.  With
 * CUPTOPSIM_FAULTS=no_api_filter (a CUPTI without them) or an API version
 * below 20 they answer CUPTI_ERROR_NOT_SUPPORTED and change nothing. */
static CUptiResult sim_api_enable(unsigned dom, CUpti_CallbackId cbid, uint8_t enable)
{
    sim_init();
    if (sim.cfg.enable_fail)
        return (CUptiResult)sim.cfg.enable_fail;
    if (sim.cfg.no_api_filter || sim.cfg.api_version < 20)
        return CUPTI_ERROR_NOT_SUPPORTED;
    unsigned n = dom ? sim_driver_cbid_names_count : sim_runtime_cbid_names_count;
    if (cbid >= n || cbid >= SIM_CBID_MAX)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&sim_api_lock);
    sim_api_set_one(dom, cbid, enable != 0);
    pthread_mutex_unlock(&sim_api_lock);
    return CUPTI_SUCCESS;
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid,
                                                             uint8_t enable)
{
    sim_call(SIM_C_ActivityEnableRuntimeApi);
    return sim_api_enable(0, cbid, enable);
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid,
                                                            uint8_t enable)
{
    sim_call(SIM_C_ActivityEnableDriverApi);
    return sim_api_enable(1, cbid, enable);
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
    sim_call(SIM_C_ActivityEnable);
    return sim_enable(kind, true);
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind)
{
    sim_call(SIM_C_ActivityDisable);
    return sim_enable(kind, false);
}

static CUptiResult sim_enable_ctx(CUcontext context, CUpti_ActivityKind kind, bool on)
{
    sim_init();
    if (sim.cfg.enable_fail)
        return (CUptiResult)sim.cfg.enable_fail;
    struct CUctx_st *c = sim_ctx(context);
    int k = sim_kind_of(kind);
    if (!c)
        return CUPTI_ERROR_INVALID_CONTEXT;
    if (k == -2)
        return CUPTI_ERROR_NOT_SUPPORTED;
    if (kind == CUPTI_ACTIVITY_KIND_DEVICE && on)
        sim_devices_dump();   /* the simulated devices exist from the start */
    if (k < 0)
        return CUPTI_SUCCESS;
    if (on && sim_graph_conflict(kind, k, atomic_load(&sim.enabled) | atomic_load(&c->enabled),
                                 sim_kernel_serial()))
        return CUPTI_ERROR_NOT_COMPATIBLE;
    if (on && k == SIM_K_KERNEL)
        atomic_store(&sim.kernel_is_concurrent, kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (on)
        atomic_fetch_or(&c->enabled, 1u << k);
    else
        atomic_fetch_and(&c->enabled, ~(1u << k));
    return CUPTI_SUCCESS;
}

/* Late attach: DEVICE and CONTEXT records for what already exists go to
 * the registered buffers (none when no callbacks are registered, as the
 * toolkit documents). The simulated devices exist from the start: one
 * DEVICE record each (sim_devices_dump); CONTEXT records for the live
 * contexts. Every other kind is a plain enable. */
SIM_EXPORT CUptiResult CUPTIAPI cuptiActivityEnableAndDump(CUpti_ActivityKind kind)
{
    sim_call(SIM_C_ActivityEnableAndDump);
    sim_init();
    if (kind != CUPTI_ACTIVITY_KIND_DEVICE && kind != CUPTI_ACTIVITY_KIND_CONTEXT)
        return sim_enable(kind, true);
    if (sim.cfg.enable_fail)   /* fault: CUPTI cannot start */
        return (CUptiResult)sim.cfg.enable_fail;
    if (!sim.req_cb)
        return CUPTI_SUCCESS;
    if (kind == CUPTI_ACTIVITY_KIND_DEVICE) {
        unsigned n = sim.cfg.devices < SIM_DEV_MAX ? sim.cfg.devices : SIM_DEV_MAX;
        sim_devices_dump();
        for (unsigned d = 0; d < n; d++)
            atomic_fetch_add(&sim.dumped_dev[d], 1);
        return CUPTI_SUCCESS;
    }
    for (unsigned d = 0; d < SIM_DEV_MAX; d++) {
        struct CUctx_st *c = &sim.ctx[d];
        if (!atomic_load(&c->live))
            continue;
        CUpti_ActivityContext3 r;
        memset(&r, 0, sizeof r);
        r.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
        r.contextId = c->id;
        r.deviceId = c->device + sim.cfg.device_base;
        r.computeApiKind = CUPTI_ACTIVITY_COMPUTE_API_CUDA;
        if (sim_buffer_put_resource(d, &r, sizeof r))
            atomic_fetch_add(&sim.dumped_ctx[d], 1);
        else
            atomic_fetch_add(&sim.dump_dropped, 1);
    }
    return CUPTI_SUCCESS;
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiActivityEnableContext(CUcontext context,
                                                           CUpti_ActivityKind kind)
{
    sim_call(SIM_C_ActivityEnableContext);
    return sim_enable_ctx(context, kind, true);
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiActivityDisableContext(CUcontext context,
                                                            CUpti_ActivityKind kind)
{
    sim_call(SIM_C_ActivityDisableContext);
    return sim_enable_ctx(context, kind, false);
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
    sim_call(SIM_C_ActivityFlushAll);
    sim_init();
    return sim_buffer_flush(flag);
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t time)
{
    sim_call(SIM_C_ActivityFlushPeriod);
    sim_init();
    sim_buffer_set_period(time);
    return CUPTI_SUCCESS;
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer,
                                                           size_t validBufferSizeBytes,
                                                           CUpti_Activity **record)
{
    sim_call(SIM_C_ActivityGetNextRecord);
    size_t off = 0;
    if (!buffer || !record)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (*record) {
        uint8_t *p = (uint8_t *)*record;
        size_t sz;
        if (p < buffer || p >= buffer + validBufferSizeBytes)
            return CUPTI_ERROR_INVALID_PARAMETER;
        sz = sim_record_size(((CUpti_Activity *)p)->kind);
        if (!sz)
            return CUPTI_ERROR_INVALID_KIND; /* cannot step over it */
        off = (size_t)(p - buffer) + sz;
    }
    if (off + sizeof(CUpti_Activity) > validBufferSizeBytes)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    uint32_t kind = ((CUpti_Activity *)(buffer + off))->kind;
    size_t sz = sim_record_size(kind);
    if (!sz)
        return CUPTI_ERROR_INVALID_KIND;
    if (off + sz > validBufferSizeBytes)
        return CUPTI_ERROR_MAX_LIMIT_REACHED; /* truncated tail */
    if (kind == SIM_INVALID_KIND && ((sim_rec_invalid *)(buffer + off))->size != sz)
        return CUPTI_ERROR_INVALID_KIND;
    *record = (CUpti_Activity *)(buffer + off);
    return kind == SIM_INVALID_KIND ? CUPTI_ERROR_INVALID_KIND : CUPTI_SUCCESS;
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context,
                                                                  uint32_t streamId,
                                                                  size_t *dropped)
{
    sim_call(SIM_C_ActivityGetNumDroppedRecords);
    (void)streamId; /* drops are counted per context here */
    sim_init();
    if (!dropped)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (context) {
        struct CUctx_st *c = sim_ctx(context);
        if (!c)
            return CUPTI_ERROR_INVALID_CONTEXT;
        uint64_t n = atomic_exchange(&c->pending_drops, 0);
        atomic_fetch_add(&c->reported, n);
        *dropped = (size_t)n;
        return CUPTI_SUCCESS;
    }
    /* NULL: what no per-context query has taken yet, from every context
     * (as measured on the H200), plus the global queue. */
    uint64_t sum = atomic_exchange(&sim.global_drops, 0);
    for (unsigned d = 0; d < SIM_DEV_MAX; d++) {
        struct CUctx_st *c = &sim.ctx[d];
        uint64_t n = atomic_exchange(&c->pending_drops, 0);
        atomic_fetch_add(&c->reported, n);
        atomic_fetch_add(&c->via_null, n);
        sum += n;
    }
    *dropped = (size_t)sum;
    return CUPTI_SUCCESS;
}

/* Width of an attribute's value. */
static size_t sim_attr_width(CUpti_ActivityAttribute a)
{
    switch (a) {
    case CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER:
    case CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED:
    case CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER:
        return sizeof(uint8_t);
    case CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE:
    case CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE_CDP:
    case CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT:
    case CUPTI_ACTIVITY_ATTR_PROFILING_SEMAPHORE_POOL_SIZE:
    case CUPTI_ACTIVITY_ATTR_PROFILING_SEMAPHORE_POOL_LIMIT:
    case CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE:
    case CUPTI_ACTIVITY_ATTR_PROFILING_SEMAPHORE_PRE_ALLOCATE_VALUE:
    case CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE_DEVICE_GRAPHS:
        return sizeof(size_t);
    default:
        return 0;
    }
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiActivitySetAttribute(CUpti_ActivityAttribute attr,
                                                          size_t *valueSize, void *value)
{
    sim_call(SIM_C_ActivitySetAttribute);
    sim_init();
    size_t w = sim_attr_width(attr);
    if (!w || !valueSize || !value)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (*valueSize < w)
        return CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT;
    if (w == sizeof(uint8_t))
        sim.attr[attr] = *(uint8_t *)value;
    else
        sim.attr[attr] = *(size_t *)value;
    return CUPTI_SUCCESS;
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiActivityGetAttribute(CUpti_ActivityAttribute attr,
                                                          size_t *valueSize, void *value)
{
    sim_call(SIM_C_ActivityGetAttribute);
    sim_init();
    size_t w = sim_attr_width(attr);
    if (!w || !valueSize || !value)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (*valueSize < w)
        return CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT;
    if (w == sizeof(uint8_t))
        *(uint8_t *)value = (uint8_t)sim.attr[attr];
    else
        *(size_t *)value = (size_t)sim.attr[attr];
    *valueSize = w;
    return CUPTI_SUCCESS;
}
