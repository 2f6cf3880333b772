/*
 * agent_attach.h - attaching to CUPTI and detaching from it (lazy attach,
 * DESIGN invariant 8), and the teardown after a detach (cuptiFinalize).
 *
 * Threads: agent_attach runs on the thread that turns the first kind on -
 * the start (InitializeInjection, before the agent's threads exist), the
 * health thread applying a control request, or a capture range's callback
 * on an application thread.  The detach and the teardown's arming and
 * settling run on the health thread, the teardown itself
 * (agent_finalize_at_exit) on the first application thread that leaves a
 * runtime or driver API call after it is armed, agent_finalize_stop in
 * the stop protocol.
 *
 * Locks: the state (agent_attach_state, the agent's `attach` member) is
 * agent_attach.c's alone.  Its writers are serialised by stop_lock (the
 * health thread and the stop hold it; the start runs before any other
 * thread; a range callback holds range_lock, which the health thread also
 * holds whenever it changes kinds under a capture range).  `on`, `fin*`
 * and `pre_contexts` are atomics, read from any thread through the
 * accessors below.
 */
#ifndef AGENT_ATTACH_H
#define AGENT_ATTACH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent_cupti.h"

/* cuptiFinalize after a detach (agent_attach.c) */
enum {
    AGENT_FIN_NONE = 0,     /* nothing armed                              */
    AGENT_FIN_PENDING,      /* armed: the next API exit callback runs it  */
    AGENT_FIN_RUNNING,      /* cuptiFinalize in progress on an app thread */
    AGENT_FIN_DONE,         /* returned (fin_rc); not yet settled         */
};

/* What the agent holds of CUPTI (agent_attach.c only). */
typedef struct agent_attach_state {
    bool loaded;                      /* libcupti loaded, version known   */
    bool callbacks;                   /* resource callbacks enabled       */
    CUpti_SubscriberHandle subscriber;
    _Atomic bool on;                  /* attached: subscribed + buffer
                                         callbacks registered             */
    bool attrs_set;                   /* attributes go in once            */
    bool dump_on;                     /* DEVICE/CONTEXT enabled (dump)    */
    uint32_t count;                   /* attaches in this process         */
    /* cuptiFinalize after a detach: armed by the detach, run by the first
     * runtime/driver API exit callback on an application thread, settled
     * (noted, subscriber forgotten) by the health thread or the next
     * attach */
    _Atomic int fin;                  /* AGENT_FIN_*                      */
    bool fin_armable;                 /* the detach kept the subscriber   */
    uint64_t fin_arm_ns;              /* CLOCK_REALTIME when armed        */
    _Atomic uint64_t fin_ns;          /* ... when cuptiFinalize returned  */
    _Atomic int fin_rc;               /* its result                       */
    uint32_t finalizes;               /* finalized in this process        */
    uint32_t started_at_fin;          /* finalizes when CUPTI last started */
    uint64_t ns, cost_ns;             /* the latest attach                */
    bool late;                        /* ... came after the start         */
    _Atomic bool quiet;               /* periodic windows: the detach's and
                                         teardown's routine notes said once */
    _Atomic uint32_t pre_contexts;    /* contexts dumped at that attach   */
} agent_attach_state;

struct agent;

/** Load CUPTI and its version (first time only).  @return 0 or -1. */
int agent_attach_load(struct agent *a, char *why, size_t len);
/** Subscribe to the resource domain (a refusal is noted).  No-op when
 *  subscribed. */
void agent_attach_subscribe(struct agent *a);
/** Attach to CUPTI: load it (first time), set the attributes (first
 *  time), subscribe to the resource domain (a refusal is noted, not
 *  fatal), register the buffer callbacks, set the flush period, and
 *  EnableAndDump DEVICE and CONTEXT for what already exists.  Records the
 *  time and cost (agent_attach_ns, agent_attach_cost_ns).  No-op when
 *  attached.
 *  @param[out] why  the reason on failure.  @return 0, -1 (CUPTI cannot
 *  be loaded or refuses the callbacks: nothing is attached). */
int agent_attach(struct agent *a, bool late, char *why, size_t len);
/** Detach as far as CUPTI allows (kinds already off): disable the dump
 *  kinds, forced flush, last drop query, flush period off, unsubscribe.
 *  Notes what could not be released.  Health thread or stop path. */
void agent_detach_cupti(struct agent *a);
/** Why a detach now could not tear CUPTI down (NULL: it could). */
const char *agent_detach_refusal(struct agent *a);
/** After a detach and the drain of what it flushed (drained: complete):
 *  arm the teardown (cuptiFinalize at the next runtime/driver API exit)
 *  where allowed, else unsubscribe.  Health thread. */
void agent_detach_release(struct agent *a, bool drained);
/** A runtime/driver API callback while a teardown is armed: at an exit
 *  site, the first thread to get here calls cuptiFinalize. */
void agent_finalize_at_exit(struct agent *a, const void *cbdata);
/** Settle a teardown: note a finished cuptiFinalize and forget what it
 *  destroyed; with cancel (before an attach) also disarm one still pending
 *  and wait for one in progress.  Health thread or attach. */
void agent_finalize_settle(struct agent *a, bool cancel);
/** The session stops: a teardown done since the last health tick is
 *  noted; one still pending is not done (it would run inside CUDA's own
 *  exit): unsubscribe instead.  Stop protocol. */
void agent_finalize_stop(struct agent *a);

/* Accessors, any thread. */
/** Attached: the buffer callbacks are registered (kinds may be on). */
bool agent_attached(const struct agent *a);
/** libcupti is loaded (its version known). */
bool agent_attach_loaded(const struct agent *a);
/** The subscriber (NULL: none), for the capture range's callbacks. */
CUpti_SubscriberHandle agent_attach_subscriber(const struct agent *a);
/** Resource callbacks are enabled (contexts known by handle). */
bool agent_attach_callbacks(const struct agent *a);
/** The latest attach: when (CLOCK_REALTIME), its cost, and whether it
 *  came after the start. */
uint64_t agent_attach_ns(const struct agent *a);
uint64_t agent_attach_cost_ns(const struct agent *a);
/** cuptiFinalize calls that succeeded in this process. */
uint32_t agent_attach_finalizes(const struct agent *a);
bool agent_attach_late(const struct agent *a);
/** Contexts learned from the attach's dump (no handle): count one more
 *  (consumer thread), read, or forget them (a detached epoch). */
void agent_attach_pre_context(struct agent *a);
uint32_t agent_attach_pre_contexts(const struct agent *a);
void agent_attach_pre_contexts_forget(struct agent *a);
/** A teardown is armed (the API callbacks run it).  Acquire: what the
 *  detach did before arming it is visible to the caller. */
bool agent_finalize_pending(const struct agent *a);
/** A teardown returned and is not settled yet (the health tick notes it). */
bool agent_finalize_done(const struct agent *a);

#endif /* AGENT_ATTACH_H */
