/*
 * sim_int.h - internals of the simulated CUPTI (libcuptop-simcupti.so).
 *
 * All mutable state lives in one struct, `sim`, defined in sim_cupti.c.
 *
 * Locking order (never take an earlier lock while holding a later one):
 *   sim.reg_lock (thread list, contexts, subscribers)
 *     -> sim_slot.lock (one per thread and context; held while the client's
 *        bufferRequested runs)
 *       -> sim.q_lock (completion queue, worker state)
 * The worker calls bufferCompleted holding no lock.
 */
#ifndef SIM_INT_H
#define SIM_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda.h>
#include <cupti.h>

#include "cuptopsim.h"

#define SIM_EXPORT __attribute__((visibility("default")))

enum sim_kind {
    SIM_K_KERNEL = 0, SIM_K_MEMCPY, SIM_K_MEMSET, SIM_K_RUNTIME,
    SIM_K_DRIVER, SIM_K_SYNC, SIM_K_OVERHEAD, SIM_K_MARKER,
    SIM_K_GRAPH,                  /* a graph launch: GRAPH_TRACE records   */
    SIM_KINDS = CUPTOPSIM_KINDS
};
#define SIM_DEV_MAX CUPTOPSIM_DEV_MAX
#define SIM_KERNEL_NAMES 14u   /* kernel names the producer picks from (sim_produce.c) */
#define SIM_STREAM_MAX 64
_Static_assert(SIM_STREAM_MAX == CUPTOPSIM_STREAMS, "CUPTOPSIM_STREAMS in cuptopsim.h");
#define SIM_THREAD_MAX 256
#define SIM_CBID_MAX 1024             /* runtime and driver call ids       */

/* The record that stands for a corrupted one: GetNextRecord reports
 * CUPTI_ERROR_INVALID_KIND for it and steps over it (16 bytes). */
#define SIM_INVALID_KIND 0x7ffffff0u
typedef struct sim_rec_invalid {
    uint32_t kind;      /* SIM_INVALID_KIND                   */
    uint32_t size;      /* sizeof(sim_rec_invalid)            */
    uint32_t was_kind;  /* the CUpti_ActivityKind it replaced */
    uint32_t pad;
} sim_rec_invalid;

/** Configuration, from CUPTOPSIM_* (sim_config.c). */
typedef struct sim_config {
    unsigned devices, streams, threads;
    double rate[SIM_KINDS];       /* operations per second per device      */
    double dev_scale[SIM_DEV_MAX]; /* per-device rate factor (default 1)   */
    unsigned device_base;         /* device index of the first context     */
    bool max_rate;                /* produce as fast as possible           */
    uint64_t ops;                 /* per device and kind quota; 0 = none   */
    uint32_t api_version;
    int null_signal;              /* SIGSEGV or SIGABRT (API version < 27) */
    uint64_t seed;
    char truth[PATH_MAX];
    char scenario[32];
    /* faults (CUPTOPSIM_FAULTS) */
    unsigned slow_ms;             /* sleep before each bufferCompleted     */
    double burst_k;               /* rate x K ...                          */
    unsigned burst_ms, burst_every_ms; /* ... for D ms every P ms          */
    unsigned invalid_every;       /* every Nth record written invalid      */
    unsigned zero_ts_every;       /* every Nth GPU record start=end=0      */
    unsigned zero_ts_need_mib;    /* zero_ts only while the device buffers
                                     (size x pool limit) hold less (0: always) */
    bool subscriber;              /* a second subscriber holds CUPTI       */
    unsigned foreign_every;       /* foreign buffer before every Nth       */
    unsigned steal_every;         /* every Nth buffer goes to the other    */
    unsigned dup_every;           /* every Nth buffer completed twice      */
    unsigned silent_every;        /* every Nth record lost, never counted  */
    unsigned sync_copy_every;     /* every Nth copy and set synchronous    */
    unsigned slow_kernel;         /* 1 + the index of the kernel name whose
                                     GPU time is multiplied; 0 off          */
    unsigned slow_kernel_x;       /* ... by this factor (default 4)         */
    unsigned enable_fail;         /* cuptiActivityEnable/Disable return this
                                     CUptiResult (CUPTI cannot start); 0 off */
    bool no_api_filter;           /* cuptiActivityEnableRuntimeApi/DriverApi
                                     answer NOT_SUPPORTED (older CUPTI)    */
    unsigned nvtx_init_ms;        /* cuptiNvtxInitialize2 takes this long  */
    unsigned enable_slow_ms;      /* enabling a record kind takes this long */
    unsigned api_mix;             /* noise API calls per GPU operation     */
    unsigned graph_nodes;         /* kernel nodes per graph launch (1-1000) */
    bool graph_strict;            /* GRAPH_TRACE and both kernel kinds refuse
                                     each other (graph_strict=1): a CUPTI
                                     stricter than 13's                    */
} sim_config;

/** Counts of the records inside one buffer, by kind. */
typedef struct sim_bufcount {
    uint64_t rec[SIM_KINDS], zero[SIM_KINDS], inval[SIM_KINDS];
} sim_bufcount;

/** One producing thread's buffer for one context (CUPTI's per-thread
 *  activity buffer).  Everything but the totals is under `lock`; the
 *  totals are written under `lock` and read relaxed by the truth. */
typedef struct sim_slot {
    pthread_mutex_t lock;
    uint8_t *buf;
    size_t size, used, maxrec, nrec;
    sim_bufcount cnt;
    _Atomic uint64_t ops[SIM_KINDS], produced[SIM_KINDS], dropped[SIM_KINDS];
    _Atomic uint64_t silent[SIM_KINDS]; /* lost without a count (silent=) */
} sim_slot;

/** One application thread known to CUPTI. */
typedef struct sim_thread {
    struct sim_thread *next;
    uint32_t tid;
    unsigned index;
    unsigned noise;               /* next call of the API mix              */
    sim_slot slot[SIM_DEV_MAX];
} sim_thread;

/* Fake CUcontext: the toolkit only declares struct CUctx_st. */
/* The simulated application's CUDA graphs: ids 1-SIM_GRAPHS, each of
 * sim.cfg.graph_nodes kernel nodes; a graph launch picks one by its
 * correlation id.  Handles as the driver's queries (cuGraphGetNodes, ...)
 * and the launch's parameters give them: a CUgraph per id, a CUgraphExec
 * per id and context, a CUgraphNode per node. */
#define SIM_GRAPHS 3u
#define SIM_GRAPH_OF(corr) (1u + (uint32_t)(corr) % SIM_GRAPHS)
#define SIM_GRAPH_HANDLE(gid) ((CUgraph)(uintptr_t)(0x6a000u + (unsigned)(gid)))
#define SIM_GRAPH_EXEC(dev, gid) \
    ((CUgraphExec)(uintptr_t)(0x6c000u + 16u * (unsigned)(dev) + (unsigned)(gid)))
#define SIM_GRAPH_NODE(gid, i) \
    ((CUgraphNode)(uintptr_t)(0x6b00000u + 0x10000u * (unsigned)(gid) + (unsigned)(i)))

struct CUctx_st {
    uint32_t magic;               /* SIM_CTX_MAGIC                         */
    uint32_t device, id;
    _Atomic bool live;
    _Atomic uint32_t enabled;     /* cuptiActivityEnableContext, sim kinds */
    _Atomic uint64_t pending_drops, reported, via_null;
    _Atomic uint64_t stream_end[SIM_STREAM_MAX]; /* GPU clock per stream  */
    /* records produced per GPU kind (kernel, memcpy, memset) and stream */
    _Atomic uint64_t produced_stream[CUPTOPSIM_GPU_KINDS][SIM_STREAM_MAX];
    _Atomic uint64_t graph_node_records; /* kernel records of graph nodes */
    /* each graph's instantiation in this context: 0 not yet, 1 under way,
     * 2 done (sim_graph_instantiate) */
    _Atomic uint8_t graph_inst[SIM_GRAPHS + 1];
};
#define SIM_CTX_MAGIC 0x43747853u

struct CUpti_Subscriber_st {
    CUpti_CallbackFunc cb;
    void *userdata;
    char name[CUPTI_SUBSCRIBER_NAME_MAX_LEN + 1];
    _Atomic bool resource_domain;
    _Atomic bool created, destroy_starting;  /* per-cbid enables */
    /* runtime/driver API callbacks for cudaProfilerStart/Stop and
     * cuProfilerStart/Stop (per cbid), and whole API domains
     * (cuptiEnableDomain: every simulated API call, enter and exit) */
    _Atomic bool rt_start, rt_stop, drv_start, drv_stop;
    _Atomic bool rt_domain, drv_domain;
    /* cuGraphInstantiateWithFlags (per cbid): a graph's first launch in a
     * context instantiates it, callbacks only (as the profiler calls) */
    _Atomic bool drv_inst;
    /* per-cbid enables of the calls behind each simulated op (the launch,
     * copy, set and synchronize calls: sim_op_cbids), as a launch ledger
     * enables them */
    _Atomic bool rt_op[SIM_KINDS], drv_op[SIM_KINDS];
    /* the same for the synchronous variants (sync_copy=N): cudaMemcpy /
     * cuMemcpyDtoH_v2, cudaMemset / cuMemsetD8_v2 */
    _Atomic bool rt_sop[SIM_KINDS], drv_sop[SIM_KINDS];
};
/* The CUstream handle the simulator passes in API callback parameters for
 * stream s; cuptiGetStreamIdEx maps it to the records' stream id.  Stream
 * 0 is also the legacy default stream: a synchronous copy or set
 * (sync_copy=N) runs there, and the NULL handle maps to its id. */
#define SIM_STREAM_HANDLE(s) ((CUstream)(uintptr_t)(0x5ea00u + (unsigned)(s)))
#define SIM_STREAM_ID(s) (7u + (unsigned)(s))

/** The CUPTI entry points the simulator exports, for the call log in the
 *  truth (every call counted, with its first and last CLOCK_REALTIME). */
enum sim_call {
    SIM_C_GetVersion = 0, SIM_C_GetResultString, SIM_C_GetTimestamp,
    SIM_C_ActivityRegisterTimestampCallback, SIM_C_GetDeviceId, SIM_C_GetContextId,
    SIM_C_ActivityRegisterCallbacks, SIM_C_ActivityEnable, SIM_C_ActivityDisable,
    SIM_C_ActivityEnableAndDump, SIM_C_ActivityEnableContext, SIM_C_ActivityDisableContext,
    SIM_C_ActivityFlushAll, SIM_C_ActivityFlushPeriod, SIM_C_ActivityGetNextRecord,
    SIM_C_ActivityGetNumDroppedRecords, SIM_C_ActivitySetAttribute, SIM_C_ActivityGetAttribute,
    SIM_C_Subscribe, SIM_C_Subscribe_v2, SIM_C_Unsubscribe, SIM_C_EnableDomain,
    SIM_C_EnableCallback, SIM_C_Finalize, SIM_C_ActivityPushExternalCorrelationId,
    SIM_C_ActivityPopExternalCorrelationId, SIM_C_ActivityEnableRuntimeApi,
    SIM_C_ActivityEnableDriverApi, SIM_C_NvtxInitialize2, SIM_C_GetStreamIdEx,
    SIM_CALLS
};
_Static_assert(SIM_CALLS <= CUPTOPSIM_CALLS, "CUPTOPSIM_CALLS too small");

/** A buffer on its way to the client's bufferCompleted. */
typedef struct sim_qitem {
    struct sim_qitem *next;
    struct CUctx_st *ctx;
    unsigned device;
    uint8_t *buf;
    size_t size, valid;
    sim_bufcount cnt;
    bool own;                     /* allocated by the sim (foreign)        */
    uint64_t seq;
} sim_qitem;

/** All state of the simulated CUPTI. */
typedef struct sim_state {
    pthread_once_t once;
    sim_config cfg;
    bool cfg_ok;
    pid_t pid;
    bool is_child;                /* after fork()                          */

    pthread_mutex_t reg_lock;
    sim_thread *threads;          /* every thread that produced            */
    unsigned nthreads;
    sim_thread shared;            /* PER_THREAD_ACTIVITY_BUFFER = 0        */
    struct CUctx_st ctx[SIM_DEV_MAX];
    uint32_t next_ctx_id;
    struct CUpti_Subscriber_st sub;
    bool sub_used;

    /* activity API state */
    CUpti_BuffersCallbackRequestFunc req_cb;
    CUpti_BuffersCallbackCompleteFunc cmp_cb;
    _Atomic uint32_t enabled;     /* sim kinds enabled globally            */
    _Atomic bool kernel_is_concurrent; /* which kernel kind was enabled    */
    CUpti_TimestampCallbackFunc ts_cb;
    uint64_t attr[CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE_DEVICE_GRAPHS + 1];
    _Atomic uint32_t corr;        /* correlation ids                       */
    _Atomic uint64_t n_invalid, n_zero, n_silent; /* fault counters        */
    _Atomic uint64_t n_sync_copy; /* copies and sets made (sync_copy=)     */
    _Atomic uint64_t global_drops;/* NULL-context queue                    */
    /* API records per call id ([0] runtime, [1] driver): whether CUPTI
     * records the call (cuptiActivityEnable of the kind sets every id,
     * Disable clears every id, EnableRuntimeApi/DriverApi one), and the
     * calls the application made and the records produced of them */
    _Atomic uint8_t api_on[2][SIM_CBID_MAX];
    _Atomic uint32_t api_on_count;
    _Atomic uint64_t api_calls[2][SIM_CBID_MAX], api_produced[2][SIM_CBID_MAX];
    _Atomic uint32_t api_domains; /* API domains and op cbids enabled      */
    _Atomic uint64_t api_cbs;     /* API-domain callbacks delivered        */
    /* cuptiFinalize: inside an API exit callback (as CUPTI recommends)
     * or elsewhere; a CUPTI call after it re-initialises */
    _Atomic uint64_t fin_in_exit, fin_outside;

    /* completion queue and worker (q_lock) */
    pthread_mutex_t q_lock;
    pthread_cond_t q_cond, q_done;
    sim_qitem *q_head, *q_tail;
    uint64_t q_seq, q_done_seq;   /* enqueued / delivered                  */
    bool worker_running, worker_stop;
    pthread_t worker;
    uint32_t flush_period_ms;
    uint64_t n_completed;         /* for dup/steal/foreign every-Nth       */

    /* truth accumulated at delivery (q_lock) */
    uint64_t delivered[SIM_DEV_MAX][SIM_KINDS], zero_ts[SIM_DEV_MAX][SIM_KINDS];
    uint64_t invalid[SIM_DEV_MAX][SIM_KINDS], stolen[SIM_DEV_MAX][SIM_KINDS];
    uint64_t foreign[SIM_DEV_MAX][SIM_KINDS];
    uint64_t queued[SIM_DEV_MAX][SIM_KINDS]; /* in the queue, not yet out */
    _Atomic uint64_t b_requested, b_null, b_small;
    uint64_t b_completed, b_dup, b_foreign, b_stolen, flushes, flushes_forced;

    /* call log: every CUPTI entry point (relaxed atomics: counts and
     * times, read for the truth only) */
    _Atomic uint64_t call_n[SIM_CALLS], call_first[SIM_CALLS], call_last[SIM_CALLS];
    /* DEVICE/CONTEXT records written by cuptiActivityEnableAndDump */
    _Atomic uint64_t dumped_ctx[SIM_DEV_MAX], dumped_dev[SIM_DEV_MAX], dump_dropped;

    /* producers */
    char exit_path[32];           /* last one given to truth_write         */
    pthread_t prod[SIM_THREAD_MAX];
    unsigned nprod;
    _Atomic bool prod_stop;
    _Atomic unsigned prod_done;
} sim_state;

extern sim_state sim;

/* sim_cupti.c: count one call of an entry point (first thing it does). */
void sim_call(enum sim_call c);
const char *sim_call_name(unsigned c);
void sim_calls_clear(void);
void sim_attr_defaults(void);
extern _Thread_local bool sim_in_api_exit;

/* sim_cupti.c: the per-call-id API state (reg_lock held or no producer) */
void sim_api_set_all(unsigned dom, bool on);

/* sim_app.c: the whole-domain API callbacks of one simulated call (its
 * runtime and driver call ids; 0: none), enter and exit */
/* The op's runtime and driver API callbacks (enter, exit) for a client
 * subscribed to them (symbol: a kernel launch's name, for symbolName); *en is the kinds mask read while the call runs
 * (between the enters and the exits: where CUDA issues the work and CUPTI
 * decides whether it will make a record of it). */
/* Instantiate graph gid in context c unless done (the context's first
 * graph launch does, for every graph; others wait for it). */
void sim_graph_instantiate(struct CUctx_st *c, uint32_t gid);
void sim_api_domain_call(unsigned k, bool sync, struct CUctx_st *c, unsigned stream, uint32_t corr,
                         const char *symbol, uint32_t *en);
/** The runtime and driver call ids behind simulated op k (0: none); sync:
 *  its synchronous variant (copies and sets only, else 0). */
void sim_op_cbids(unsigned k, CUpti_CallbackId *rt, CUpti_CallbackId *drv);
void sim_op_sync_cbids(unsigned k, CUpti_CallbackId *rt, CUpti_CallbackId *drv);
/** Clear every context's per-stream counts (reset, fork child). */
void sim_stream_counts_clear(void);
static inline bool sim_api_recorded(unsigned dom, uint32_t cbid)
{
    return cbid < SIM_CBID_MAX &&
           atomic_load_explicit(&sim.api_on[dom & 1][cbid], memory_order_relaxed);
}

/* sim_config.c */
int sim_config_load(sim_config *c, char *why, size_t whylen);
const char *sim_kind_name(unsigned k);

/* sim_cupti.c */
void sim_init(void);
uint64_t sim_now(void);
/** Sleep ms milliseconds (through signals). */
void sim_sleep_ms(unsigned ms);
sim_thread *sim_thread_self(void);
void sim_thread_list_free(void);

/* sim_produce.c: one MARKER record (THREAD object) from an NVTX call on
 * the calling thread, for device 0's buffers; false when the marker kind
 * is off or no context is live (nothing produced). */
/** Whether a MARKER record would be made now (the kind on, device 0's
 *  context live). */
bool sim_marker_on(void);
bool sim_produce_marker(uint32_t flags, uint32_t id, const char *name, const char *domain,
                        uint64_t ts);
/* The MARKER_DATA record of marker id (colour ARGB when color_argb). */
bool sim_produce_marker_data(uint32_t id, bool color_argb, uint32_t color, uint32_t category,
                             uint64_t payload);

/* sim_buffer.c */
/** Append one record (already formatted in `rec`, `len` bytes) for device
 *  `dev` of sim kind `k` to the calling thread's buffer; requests a buffer
 *  when needed.  `zero` / `inval` mark the fault variants. */
void sim_buffer_put(sim_thread *t, unsigned dev, unsigned k, const void *rec, size_t len,
                    bool zero, bool inval, uint32_t cupti_kind);
void sim_buffer_detach_partial(struct CUctx_st *only);
/** Append one resource record (DEVICE or CONTEXT, from EnableAndDump) for
 *  device `dev` to the calling thread's buffer; not a producer kind, so it
 *  is counted apart.  @return false when it was dropped (no buffer). */
bool sim_buffer_put_resource(unsigned dev, const void *rec, size_t len);
CUptiResult sim_buffer_flush(uint32_t flag);
void sim_buffer_worker_start(void);
void sim_buffer_worker_stop(void);
void sim_buffer_after_fork(void);
void sim_buffer_set_period(uint32_t ms);
size_t sim_record_size(uint32_t cupti_kind);
/** Hand records that are no activity of the workload (DEVICE records) to
 *  the client in a buffer of their own: outside every per-kind count and
 *  fault.  Without a buffer from the client they are not delivered. */
void sim_buffer_put_meta(const void *recs, size_t len);

/* sim_names.c: callback names (tables generated from the toolkit's
 * cupti_*_cbid.h at build time) and the simulated devices */
extern const char *const sim_runtime_cbid_names[];
extern const unsigned sim_runtime_cbid_names_count;
extern const char *const sim_driver_cbid_names[];
extern const unsigned sim_driver_cbid_names_count;
/** The DEVICE record of simulated device d (0-based). */
void sim_device_record(unsigned d, CUpti_ActivityDevice5 *r);
/** Deliver one DEVICE record per simulated device (enable of the DEVICE
 *  kind, cuptiActivityEnableAndDump). */
void sim_devices_dump(void);

/* sim_produce.c */
/** One application operation of sim kind k on device d from thread t;
 *  returns the number of records generated, -1 for a dead context. */
long sim_produce_op(sim_thread *t, uint64_t *rng, unsigned d, unsigned k);
/** Producer thread body (arg: thread index as uintptr_t). */
void *sim_produce_main(void *arg);

/* sim_truth.c */
void sim_truth_collect(cuptopsim_truth *t);

#endif /* SIM_INT_H */
