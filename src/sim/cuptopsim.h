/*
 * cuptopsim.h - the non-CUPTI entry points of libcuptop-simcupti.so, used
 * by cuptop-simapp (which plays the CUDA application) and by tests.
 *
 * The library exports the CUPTI functions with their real signatures; the
 * functions below drive the simulated "application side": contexts,
 * producer threads, and the ground truth.  Configuration comes from the
 * CUPTOPSIM_* environment variables (doc/sim.md), read on first use and
 * again by cuptopsim_reset().
 *
 * Caveats: the functions are thread-safe unless noted.  After fork() the
 * child starts with fresh counters, no contexts and no buffers (the
 * parent's buffers are abandoned, as CUDA state is after fork); its truth
 * file is "$CUPTOPSIM_TRUTH.child".  All cuptopsim_* symbols can be looked
 * up with dlsym; the typedefs below name their types.
 */
#ifndef CUPTOPSIM_H
#define CUPTOPSIM_H

#include <stdint.h>

#define CUPTOPSIM_API __attribute__((visibility("default")))

#define CUPTOPSIM_KINDS 9       /* kernel memcpy memset runtime driver sync overhead marker graph */
#define CUPTOPSIM_DEV_MAX 8
#define CUPTOPSIM_STREAMS 64     /* streams per device (CUPTOPSIM_STREAMS env: up to this) */
#define CUPTOPSIM_GPU_KINDS 3    /* kernel memcpy memset: the records a launch produces */
#define CUPTOPSIM_CALLS 32      /* CUPTI entry points in the call log        */

/** Ground truth snapshot, per device and simulated kind (same order as
 *  CUPSTORE_KIND_*: kernel, memcpy, memset, runtime, driver, sync,
 *  overhead, marker; then graph, CUPSTORE_KIND_GRAPH, after the store's
 *  "other").  A graph op is one graph launch: its ops count launches, its
 *  records are GRAPH_TRACE records; the per-node kernel records it makes
 *  with kernel records on are counted under kernel. */
typedef struct cuptopsim_truth {
    unsigned devices;
    uint64_t ops[CUPTOPSIM_DEV_MAX][CUPTOPSIM_KINDS];       /* operations the app did     */
    uint64_t produced[CUPTOPSIM_DEV_MAX][CUPTOPSIM_KINDS];  /* records CUPTI generated    */
    uint64_t delivered[CUPTOPSIM_DEV_MAX][CUPTOPSIM_KINDS]; /* inside completed buffers   */
    uint64_t dropped[CUPTOPSIM_DEV_MAX][CUPTOPSIM_KINDS];   /* no/too small buffer        */
    uint64_t held[CUPTOPSIM_DEV_MAX][CUPTOPSIM_KINDS];      /* in buffers not completed   */
    uint64_t stolen[CUPTOPSIM_DEV_MAX][CUPTOPSIM_KINDS];    /* completed to "another client" */
    uint64_t zero_ts[CUPTOPSIM_DEV_MAX][CUPTOPSIM_KINDS];   /* delivered with start=end=0 */
    uint64_t invalid[CUPTOPSIM_DEV_MAX][CUPTOPSIM_KINDS];   /* delivered as invalid kind  */
    uint64_t foreign[CUPTOPSIM_DEV_MAX][CUPTOPSIM_KINDS];   /* in buffers never handed out */
    uint64_t reported_dropped[CUPTOPSIM_DEV_MAX];  /* returned by GetNumDroppedRecords   */
    uint64_t reported_via_null[CUPTOPSIM_DEV_MAX]; /* ... of which through ctx == NULL   */
    uint64_t unreported_dropped[CUPTOPSIM_DEV_MAX];/* dropped, not yet asked for         */
    uint64_t buffers_requested, buffers_null, buffers_small, buffers_completed;
    uint64_t buffers_dup, buffers_foreign, buffers_stolen;
    uint64_t flushes, flushes_forced;
    /* every CUPTI entry point called (cuptopsim_call_name(i)): how often,
     * first and last call (CLOCK_REALTIME ns; 0 when never called) */
    uint64_t call_count[CUPTOPSIM_CALLS], call_first_ns[CUPTOPSIM_CALLS],
        call_last_ns[CUPTOPSIM_CALLS];
    /* records cuptiActivityEnableAndDump wrote for what already existed */
    uint64_t dumped_contexts[CUPTOPSIM_DEV_MAX], dumped_devices[CUPTOPSIM_DEV_MAX];
    uint64_t dump_dropped;
    uint64_t api_callbacks;        /* API-domain callbacks delivered      */
    /* records lost without any count (silent=): in produced, nowhere else */
    uint64_t silent[CUPTOPSIM_DEV_MAX][CUPTOPSIM_KINDS];
    uint64_t finalize_in_api_exit; /* cuptiFinalize inside an API exit cb */
    uint64_t finalize_outside;     /* ... anywhere else                   */
    int subscribed;                /* a subscriber holds the slot now     */
    /* records produced per device, GPU kind and stream (index: the
     * records' streamId - 7), silent ones included: what a launch ledger
     * must account for, stream by stream */
    uint64_t produced_stream[CUPTOPSIM_DEV_MAX][CUPTOPSIM_GPU_KINDS][CUPTOPSIM_STREAMS];
    unsigned graph_nodes;          /* kernel nodes per graph launch        */
    /* per-node kernel records graph launches made (in produced[][kernel]) */
    uint64_t graph_node_records[CUPTOPSIM_DEV_MAX];
} cuptopsim_truth;

/** Re-read the environment and clear every counter, buffer and context.
 *  Only while no producer runs.  Callbacks and subscribers are dropped too.
 *  @return 0, or -1 when producers are running or the config is invalid
 *  (the reason is printed to stderr). */
CUPTOPSIM_API int cuptopsim_reset(void);

/** Create one context per configured device and call the resource
 *  subscriber (CONTEXT_CREATED) for each.  No-op for live contexts.
 *  @return the number of live contexts. */
CUPTOPSIM_API int cuptopsim_contexts_create(void);

/** Call the resource subscriber (CONTEXT_DESTROY_STARTING) for each live
 *  context, then complete its partial buffers (as CUDA's teardown does)
 *  and mark it dead. */
CUPTOPSIM_API void cuptopsim_contexts_destroy(void);

/** Start the configured producer threads (contexts are created first when
 *  there are none).  @return 0, or an errno value. */
CUPTOPSIM_API int cuptopsim_app_start(void);

/** Run the producers for up to `seconds` (or until the CUPTOPSIM_OPS quota
 *  is reached), then stop them.  Starts them when not running.
 *  @return 0, or an errno value. */
CUPTOPSIM_API int cuptopsim_app_run(double seconds);

/** Stop and join the producer threads (their buffers stay held). */
CUPTOPSIM_API void cuptopsim_app_stop(void);

/** Perform `n` operations of simulated kind `kind` (0..7, see above) on
 *  `device` from the calling thread, synchronously: the deterministic
 *  producer for tests.  A kernel/memcpy/memset/sync operation yields its
 *  runtime and driver API records too (when those kinds are enabled).
 *  @return the number of records generated (produced, not necessarily
 *  delivered), or -1 for a bad device/kind or a dead context. */
CUPTOPSIM_API long cuptopsim_emit(unsigned device, unsigned kind, uint64_t n);

/** Copy the ground truth.  Consistent per buffer (a buffer is counted as
 *  held or delivered, never both). */
CUPTOPSIM_API void cuptopsim_truth_get(cuptopsim_truth *t);

/** Write the truth file (doc/sim.md).  path NULL: $CUPTOPSIM_TRUTH (in a
 *  forked child: with ".child" appended); nothing when that is unset.
 *  @param[in] final  1 for the process's last word (written as "final 1").
 *  @param[in] exit_path  free text for the "exit_path" line, or NULL.
 *  @return 0 or an errno value.  Uses only open/write/rename. */
CUPTOPSIM_API int cuptopsim_truth_write(const char *path, int final, const char *exit_path);

/** The application calls cudaProfilerStart (start != 0) or
 *  cudaProfilerStop: the subscriber's runtime-API callback for it (enter,
 *  exit) when enabled, then the driver's (cuProfilerStart/Stop), as the
 *  runtime calls the driver. */
CUPTOPSIM_API void cuptopsim_profiler(int start);

/** The CUcontext of a device (NULL when not live), for tests. */
CUPTOPSIM_API void *cuptopsim_context(unsigned device);

/** Name of CUPTI entry point i of the call log ("cuptiActivityEnable"),
 *  NULL past the end. */
CUPTOPSIM_API const char *cuptopsim_call_name(unsigned i);

/** Simulated kind names ("kernel" ...), NULL past the end. */
CUPTOPSIM_API const char *cuptopsim_kind_name(unsigned kind);

/** The simulated application's side of the NVTX truth: it pushed (push
 *  1: NAME in DOMAIN, NULL for the default) or is about to pop (push 0)
 *  an NVTX range; appended to $CUPTOPSIM_NVTX_TRUTH as "apush|apop TID
 *  TIMESTAMP IN ON DOMAIN NAME-as-hex" (doc/sim.md): IN whether CUPTI's
 *  handlers are in an NVTX table, ON whether a marker record would be
 *  made now.  What the application did, whether or not CUPTI sees it. */
CUPTOPSIM_API void cuptopsim_nvtx_app(int push, const char *domain, const char *name);

typedef int (*cuptopsim_reset_fn)(void);
typedef int (*cuptopsim_contexts_create_fn)(void);
typedef void (*cuptopsim_contexts_destroy_fn)(void);
typedef int (*cuptopsim_app_start_fn)(void);
typedef int (*cuptopsim_app_run_fn)(double);
typedef void (*cuptopsim_app_stop_fn)(void);
typedef long (*cuptopsim_emit_fn)(unsigned, unsigned, uint64_t);
typedef void (*cuptopsim_truth_get_fn)(cuptopsim_truth *);
typedef int (*cuptopsim_truth_write_fn)(const char *, int, const char *);
typedef void *(*cuptopsim_context_fn)(unsigned);
typedef const char *(*cuptopsim_call_name_fn)(unsigned);
typedef void (*cuptopsim_profiler_fn)(int);
typedef void (*cuptopsim_nvtx_app_fn)(int, const char *, const char *);

#endif /* CUPTOPSIM_H */
