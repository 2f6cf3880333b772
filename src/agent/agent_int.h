/*
 * agent_int.h - the agent's state and the functions its core shares.  The
 * agent is a guest in someone else's process: its state lives in one
 * struct (agent_g), reached by the CUPTI callbacks (which carry no user
 * pointer) and by the agent's own threads.
 *
 * The struct holds the core every part uses (configuration, the CUPTI
 * table, the run state and kinds, the store, the buffer path, the
 * counters, the contexts under ctx_lock) and one member per subsystem,
 * each owned by one file behind its own header (attach, api, scope, epoch,
 * control, consumer, health, stop; doc/agent.md "Subsystems"), which says
 * which thread calls what and which lock guards what.  A file touches only
 * the core and its own subsystem; it reaches another through that one's
 * functions.
 *
 * Threads: CUPTI's callback threads (bufferRequested on every CUDA-calling
 * thread, bufferCompleted on CUPTI's worker), the consumer, the health
 * thread (1 Hz rows, control polling every 200 ms), the window thread
 * (periodic capture windows, agent_window.h), the stop thread (signals), and a short-lived flush watchdog thread during stop.  Locks,
 * outermost first: stop_lock (agent_stop.h), range_lock (agent_scope.h),
 * ctx_lock (the contexts), the pool's and the reserve's own.
 */
#ifndef AGENT_INT_H
#define AGENT_INT_H

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent_api.h"
#include "agent_attach.h"
#include "agent_config.h"
#include "agent_consumer.h"
#include "agent_control.h"
#include "agent_cupti.h"
#include "agent_epoch.h"
#include "agent_health.h"
#include "agent_window.h"
#include "agent_fd.h"
#include "agent_guard.h"
#include "agent_hist.h"
#include "agent_launches.h"
#include "agent_names.h"
#include "agent_nvtx.h"
#include "agent_nvtx_track.h"
#include "agent_pool.h"
#include "agent_prov.h"
#include "agent_queue.h"
#include "agent_ranges.h"
#include "agent_scope.h"
#include "agent_stop.h"
#include "cupstore.h"

#define AGENT_VERSION "cuptop-agent " PACKAGE_VERSION

/* Counter matrix dimensions: devices 0..15 plus "none"; kinds plus "all". */
#define AGENT_DEVS (CUPSTORE_DEVICE_MAX + 1)
#define AGENT_DEV_NONE CUPSTORE_DEVICE_MAX
#define AGENT_KINDS (CUPSTORE_KIND_MAX + 1)
#define AGENT_KIND_ALL CUPSTORE_KIND_MAX
#define AGENT_CTX_MAX 64
#define AGENT_BATCH_MAX 16384           /* records per chunk               */
#define AGENT_BATCH_NS 50000000ull      /* commit at least every 50 ms     */
#define AGENT_DISCARD_N 64              /* discard buffers (API < 27)      */
#define AGENT_DISCARD_SIZE ((size_t)64 << 10)
#define AGENT_STOP_GRACE_MS 10000u      /* min. wait for a step in progress */

/* Scalar counters (cumulative, relaxed atomics; diffed each second). */
enum {
    C_BUF_REQUESTED = 0,
    C_BUF_PROVIDED,
    C_BUF_DECLINED,
    C_BUF_COMPLETED,
    C_BUF_CONSUMED,
    C_BUF_FOREIGN,
    C_BUF_DUPLICATE,
    C_BYTES,
    C_RECORDS_PARSED,
    C_RECORDS_STORED,
    C_STORE_REFUSED,        /* write transactions refused               */
    /* discard buffers (API < 27): the pooled ones are walked (their
     * records counted exactly as declined); the shared last-resort one,
     * which CUPTI may be writing from other threads while it completes,
     * is never read: its records are estimated from its bytes */
    C_DISCARD_BYTES,        /* bytes walked in pooled discard buffers   */
    C_DISCARD_RECORDS,      /* records counted in them                  */
    C_SHARED_BUFS,          /* completions of the shared one            */
    C_SHARED_BYTES,         /* their valid bytes                        */
    C_SHARED_OUT,           /* hand-outs of the shared one (each is a
                               buffer CUPTI holds until it completes it) */
    C_REQ_THREADS,          /* threads that requested a buffer: each may
                               hold a partial one per context (the stop's
                               bound on what CUPTI holds, agent_stop.c)  */
    C_SCALARS,
    /* records parsed by device slot and kind */
    C_REC = C_SCALARS,
    /* loss by class, device slot, kind slot (AGENT_KIND_ALL = all kinds) */
    C_LOSS = C_REC + AGENT_DEVS * CUPSTORE_KIND_MAX,
    C_OVH = C_LOSS + CUPSTORE_LOSS_MAX * AGENT_DEVS * AGENT_KINDS,
    C_COUNT = C_OVH + CUPSTORE_OVERHEAD_MAX,
};

static inline unsigned agent_c_rec(unsigned dev, unsigned kind)
{
    return C_REC + dev * CUPSTORE_KIND_MAX + kind;
}
static inline unsigned agent_c_loss(unsigned loss, unsigned dev, unsigned kind)
{
    return C_LOSS + (loss * AGENT_DEVS + dev) * AGENT_KINDS + kind;
}
/* device index (or CUPSTORE_DEVICE_NONE) -> counter slot */
static inline unsigned agent_dev_slot(uint16_t dev)
{
    return dev < CUPSTORE_DEVICE_MAX ? dev : AGENT_DEV_NONE;
}

typedef enum agent_state {
    AGENT_OFF = 0,          /* not started, or stepped aside for good     */
    AGENT_RUNNING,
    AGENT_STOPPING,
    AGENT_STOPPED,          /* stop protocol done                         */
    AGENT_CHILD,            /* forked child: new session on first use     */
} agent_state;

typedef struct agent_ctx {
    CUcontext cu;           /* NULL: no handle (free, or dumped)          */
    uint32_t id;
    uint16_t device;
    bool live;              /* !cu && !live: free slot                    */
    bool dumped;            /* learned from a CONTEXT record at a late
                               attach: no handle, so no per-context drop
                               query and no per-context enable            */
} agent_ctx;

/* Room allocated on the disk ahead of data.mdb (agent_reserve.c). */
typedef struct agent_reserve {
    int fd;                 /* data.mdb, for fallocate; -1: no reserve    */
    int aside_fd;           /* final.aside (cupstore_final_aside_open):
                               the final status when the store refuses
                               it; -1: none                               */
    uint64_t allocated;     /* bytes of data.mdb backed by disk blocks    */
    bool full;              /* the disk refused a step ahead              */
    pthread_mutex_t lock;   /* consumer and health thread                 */
} agent_reserve;

#define AGENT_RESERVE_KEEP ((uint64_t)512 << 10)   /* for the last rows  */

typedef struct agent {
    agent_config cfg;
    agent_cupti cupti;
    agent_prov prov;                  /* provenance (agent_prov.h)        */
    uint32_t api_version;
    _Atomic int state;
    _Atomic int kinds;                /* mask currently enabled           */
    char run_report[512];             /* CUPTOP_RUN_REPORT (cuptop run)   */
    char kinds_error[384];            /* agent_apply_kinds' first error   */
    int kinds_rc;                     /*   and its CUPTI code              */
    int cupti_error_rc;               /* CUPTI could not start: its code,
                                         0 when not a CUPTI result (load) */
    bool session_ok;                  /* the session started normally     */
    int session_pid;                  /* process that owns the session    */

    /* store */
    cupstore_env *env;
    cupstore_env *abandoned_env;      /* a parent's or an ended session's:
                                         never used or closed again       */
    agent_reserve reserve;            /* disk room for the final status   */
    char *session_id;

    /* buffer path */
    agent_pool pool;
    agent_queue queue;
    bool pool_ready;
    _Atomic bool pool_pinned;         /* an operator set the limit: no
                                         automatic growth any more        */
    _Atomic uint32_t threads_seen;
    agent_pool discard;               /* discard buffers (API < 27): one
                                         per declined request, so their
                                         records can be counted exactly   */
    uint8_t *discard_last;            /* shared last resort               */
    bool use_discard;                 /* CUPTI API version < 27           */
    _Atomic uint32_t cb_inflight;     /* bufferCompleted calls running:
                                         the stop waits for them to end
                                         before it walks the queue        */

    /* counters */
    _Atomic uint64_t c[C_COUNT];
    uint64_t out_base;                /* pool + discard buffers out when
                                         the session started (not its)   */
    _Atomic uint32_t fill_min;        /* the fewest records a completed
                                         non-empty buffer held (0: none
                                         yet; agent_note_fill)            */
    agent_hist req_lat, cmp_lat, commit_lat, batch_size;
    _Atomic uint32_t flags_seen;      /* AGENT_SEEN_* for the health notes */

    /* contexts (resource callbacks), guarded by ctx_lock */
    pthread_mutex_t ctx_lock;
    agent_ctx ctx[AGENT_CTX_MAX];
    _Atomic uint32_t device_mask;
    uint64_t dropped_at_destroy[AGENT_DEVS];   /* under ctx_lock          */

    /* The subsystems, each owned by one file: its header says which
     * thread calls what and which lock guards what; the others go
     * through its functions. */
    agent_attach_state attach;        /* attach and teardown (agent_attach.h) */
    agent_api_state api;              /* API record policy (agent_api.h)  */
    agent_scope_state scope;          /* capture ranges (agent_scope.h)   */
    agent_epoch_state epoch;          /* the open epoch (agent_epoch.h)   */
    agent_control_state ctl;          /* control generations (agent_control.h) */
    agent_consumer_state consumer;    /* consumer thread (agent_consumer.h) */
    agent_health_state health;        /* health thread (agent_health.h)   */
    agent_window_state window;        /* periodic windows (agent_window.h) */
    agent_stop_state stop;            /* stop protocol (agent_stop.h)     */
    agent_launches_state launches;    /* the launch ledger (agent_launches.h) */
    _Atomic int store_faulted;        /* the store's mapping faulted: storing
                                         ended (agent_guard.c)            */

} agent;

enum {
    AGENT_SEEN_FOREIGN = 1u << 0,
    AGENT_SEEN_DUPLICATE = 1u << 1,
    AGENT_SEEN_OVERFLOW = 1u << 2,
    AGENT_SEEN_DECLINED = 1u << 3,
    AGENT_SEEN_PARSE_ERROR = 1u << 4,
    AGENT_SEEN_ZERO_TS = 1u << 5,
    AGENT_SEEN_SHARED_DISCARD = 1u << 6,   /* the last-resort discard buffer */
};

extern agent agent_g;

/* agent_main.c */
uint64_t agent_mono_ns(void);
uint64_t agent_real_ns(void);
void agent_log(agent *a, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/** Write a note to the session (own short txn; never from a callback). */
/** CLOCK_REALTIME deadline ms from now (for pthread_timedjoin_np). */
void agent_deadline(struct timespec *ts, uint32_t ms);
/* Transactions agent_store_put tries (cupstore_write's attempts). */
#define AGENT_PUT_TRIES CUPSTORE_WRITE_ATTEMPTS /* a row or a few: the store's default */
#define AGENT_PUT_NOTE_TRIES 4    /* a note: best effort, fewer */
#define AGENT_PUT_BATCH_TRIES 16  /* a batch of records: the largest write, the one that
                                   * meets a growing map most often */
/** One write transaction running fn through cupstore_write (retried while
 *  the store grows its map), at most tries times: one of the AGENT_PUT_*
 *  counts above.  Returns 0 or the store's error. */
int agent_store_put(agent *a, int (*fn)(cupstore_txn *, void *), void *arg, unsigned tries);
void agent_note(agent *a, uint32_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
uint16_t agent_ctx_device(uint32_t ctx_id, void *arg);
/** A context's device (CUPSTORE_DEVICE_NONE: unknown) and whether the
 *  agent holds its handle (handle may be NULL); takes ctx_lock. */
uint16_t agent_ctx_lookup(agent *a, uint32_t ctx_id, bool *handle);
static inline void agent_count(agent *a, unsigned idx, uint64_t n)
{
    atomic_fetch_add_explicit(&a->c[idx], n, memory_order_relaxed);
}
/** Walk a buffer and add its records to loss class `loss` per kind and
 *  device (the rare paths: overflow, discard, foreign, tail).
 *  @return the number of records. */
uint64_t agent_count_lost(agent *a, uint8_t *buf, size_t valid, unsigned loss);
/** A completed buffer held n records in valid bytes: keep n if the fewest
 *  any non-empty buffer of the session held (the stop's bound on what the
 *  buffers that never came back held).  Lock-free. */
void agent_note_fill(agent *a, size_t size, size_t valid, uint64_t n);
/** Records at least in one buffer CUPTI kept (agent_stop.c): half the
 *  fewest any completed non-empty buffer held, at least 1. */
uint64_t agent_held_records(agent *a);
/** Buffers handed to CUPTI this session that never came back, and in
 *  *bound a lower bound on the records in them (agent_main.c says how). */
uint64_t agent_unreturned(agent *a, bool flush_ok, uint64_t *bound);
/** Enable/disable CUPTI kinds to reach mask; returns the first error.
 *  With a device scope (CUPTOP_DEVICES) the device kinds are enabled per
 *  context, on the contexts of those devices only. */
int agent_apply_kinds(agent *a, uint32_t mask);
/** Kinds whose records belong to one context (enabled per context under
 *  a device scope); the others (API, overhead, marker) are global. */
#define AGENT_CTX_KINDS ((1u << CUPSTORE_KIND_KERNEL) | (1u << CUPSTORE_KIND_MEMCPY) | \
                         (1u << CUPSTORE_KIND_MEMSET) | (1u << CUPSTORE_KIND_SYNC) |   \
                         (1u << CUPSTORE_KIND_GRAPH))
/** Turn the device kinds of `mask` on for one new context (device scope). */
void agent_apply_ctx_kinds(agent *a, CUcontext cu, uint16_t device, uint32_t mask);
/* The CUPTI callbacks (agent_main.c), registered by agent_attach. */
void CUPTIAPI agent_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records);
void CUPTIAPI agent_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                     size_t size, size_t valid);
void CUPTIAPI agent_resource_cb(void *userdata, CUpti_CallbackDomain domain,
                                CUpti_CallbackId cbid, const void *data);
/** A context learned from a CONTEXT record (consumer thread). */
void agent_ctx_dumped(agent *a, uint32_t ctx_id, uint32_t device_id);



/* agent_reserve.c */
/** Open the session's data.mdb for the disk reserve and allocate the
 *  first AGENT_RESERVE_KEEP bytes past its end (no reserve, silently, on a
 *  filesystem without fallocate or with CUPTOP_SINK=null). */
void agent_reserve_open(agent *a, const char *store_dir);
void agent_reserve_close(agent *a);
/** The store refused the final status: write it to the session's aside
 *  file, allocated at the start (store/cupstore.h).  @return 0 or an errno
 *  (ENOENT: the session has no aside). */
int agent_reserve_aside(agent *a, const cupstore_final *f);
/** After the final status: give the blocks past data.mdb's end back. */
void agent_reserve_release(agent *a);
/** Make sure the disk holds blocks for `need` bytes of new pages plus
 *  `keep` more past LMDB's last page.  False: the disk is full - refuse
 *  the write yourself, so the blocks stay for the final status.  True
 *  when there is no disk reserve. */
bool agent_reserve_room(agent *a, uint64_t need, uint64_t keep);


/* agent_main.c: the start, shared with an attach into a running process */
/** True for the first caller in this process (InitializeInjection or
 *  cuptop_agent_attach): the agent starts once. */
bool agent_enter_once(void);
/** Start a session (store, buffers, threads, kinds); see agent_main.c. */
int agent_session_start(agent *a);
/** Append one line to CUPTOP_RUN_REPORT (cuptop run / attach), if set. */
void agent_run_report(agent *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* agent_remote.c: cuptop attach */
/** A CUPTOP_* setting: cuptop attach's argument when it set one, else the
 *  process's environment. */
const char *agent_env(const char *name);

#endif /* AGENT_INT_H */
