/*
 * agent_scope.h - capture ranges (CUPTOP_CAPTURE_RANGE): collect only
 * between cudaProfilerStart and cudaProfilerStop, or inside an NVTX range
 * of a given name; once, or for every range (repeat, repeat:N).
 *
 * Threads: the range callbacks (agent_scope_api, agent_scope_nvtx) run on
 * the application's threads and turn the kinds on or off right there;
 * they only record the transition in a small ring, which the health
 * thread (agent_scope_poll, every tick) turns into epochs.  The control
 * request (health thread) sets the ranges' kinds and the API policy
 * through agent_scope_set_kinds / agent_scope_set_api_policy; the stop
 * protocol ends the ranges (agent_scope_stop).
 *
 * Lock: the scope's state (agent_scope_state, the agent's `scope` member)
 * is agent_scope.c's alone, guarded by its `lock` (range_lock), which
 * every function here takes itself; `watching` is also read without it
 * (agent_scope_watching).  range_lock serialises every kind change that
 * can race with a range callback, and is taken after stop_lock, never
 * before it.  Nothing else of the agent takes it.
 */
#ifndef AGENT_SCOPE_H
#define AGENT_SCOPE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent_cupti.h"

/* One range transition, waiting for the health thread to make it an
 * epoch. */
typedef struct agent_range_ev {
    uint64_t ns;                      /* CLOCK_REALTIME of the call       */
    uint32_t kinds;                   /* on from then (0: out of range)   */
    bool attach;                      /* the first attach happened here   */
    uint64_t sched_ns;                /* a window's boundary (0: a range) */
    uint32_t period_ms, window_ms;    /* ... of the schedule every:P/W    */
} agent_range_ev;

#define AGENT_RANGE_EVS 64

/* The capture range's state (agent_scope.c only), under `lock`. */
typedef struct agent_scope_state {
    pthread_mutex_t lock;             /* range_lock                       */
    _Atomic bool watching;            /* subscribed for cudaProfilerStart
                                         (or NVTX wrapped): read by the
                                         range callbacks without the lock */
    bool in_range, done;              /* inside a range; no range opens   */
    uint32_t ranges;                  /* ranges entered                   */
    uint32_t kinds;                   /* kinds on inside a range          */
    uint32_t nvtx_open;               /* nvtx:NAME ranges open            */
    uint32_t period_ms, window_ms;    /* every:P/W in force (0: none)     */
    agent_range_ev ev[AGENT_RANGE_EVS];
    uint32_t ev_head, ev_tail;        /* ring of ev                       */
    uint32_t ev_lost;                 /* transitions the ring had no room
                                         for (the health thread was late) */
    /* periodic windows, the rest after each (the window thread writes,
     * the stop reads after joining it) */
    uint32_t rest_torn;               /* detached, teardown armed         */
    uint32_t rest_undrained;          /* detached, not drained: kept      */
    uint32_t rest_kept;               /* kinds off only (refusal)         */
    uint32_t rest_short;              /* next window under 2 s: kinds off */
} agent_scope_state;

#define AGENT_SCOPE_INIT {.lock = PTHREAD_MUTEX_INITIALIZER}

struct agent;

/** At the start with CUPTOP_CAPTURE_RANGE: load CUPTI and subscribe to the
 *  profiler API callbacks (and the resource domain), nothing else.
 *  @return 0, or -1 with the reason (CUPTI cannot be loaded). */
int agent_scope_watch(struct agent *a, char *why, size_t len);
/** True while a capture range is watched for (the subscription it needs
 *  must stay).  Any thread. */
bool agent_scope_watching(const struct agent *a);
/** A runtime/driver API callback (cudaProfilerStart/Stop, cuProfiler*),
 *  on the application's thread: enter or leave the range. */
void agent_scope_api(struct agent *a, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                     const CUpti_CallbackData *cd);
/** nvtx:NAME capture: a matching NVTX range was opened (start) or closed,
 *  on the application thread (agent_nvtx.c). */
void agent_scope_nvtx(struct agent *a, bool start);
/** The window thread: open (or close) the window due at sched_ns of the
 *  schedule every period_ms/window_ms; refused when that schedule is no
 *  longer in force (a control request replaced it meanwhile). */
void agent_scope_window(struct agent *a, bool open, uint64_t sched_ns, uint32_t period_ms,
                        uint32_t window_ms);
/** The window thread, after it closed a window: detach from CUPTI and
 *  tear it down as a detach does, where CUPTI allows it, so CUDA runs as
 *  without CUPTI until the next window attaches again; where it does not
 *  (agent_detach_refusal, --devices) or the next window opens within 2 s,
 *  the kinds stay off and CUPTI attached.  The
 *  teardown waits for what the detach flushed to be stored, at most until
 *  shortly before next_open_ns (CLOCK_REALTIME): the next window opens on
 *  time, and a detach not drained by then only unsubscribes. */
void agent_scope_window_rest(struct agent *a, uint64_t next_open_ns);
/** At the stop, after the window thread ended: one note saying how the
 *  rests between windows went (torn down, kept attached and why), so a
 *  window's cost can be read against them. */
void agent_scope_window_summary(struct agent *a);
/** A control request's schedule (health thread): every period_ms for
 *  window_ms, or none (period_ms 0: collect whenever kinds are on).  A
 *  window open now closes (an epoch of its own); from none, every kind
 *  goes off until the first window.  Writes the pending transitions as
 *  epochs, then starts the new schedule (agent_window_set).
 *  @return 0, or -1 when the session's capture range is not every: or
 *  none (cudaProfilerApi, nvtx: keep theirs). */
int agent_scope_every(struct agent *a, uint32_t period_ms, uint32_t window_ms);
/** Health thread (and the stop, alone): turn the range transitions into
 *  epochs; detach for good after the last range. */
void agent_scope_poll(struct agent *a);
/** A control request's kinds under a capture range: the ranges' kinds,
 *  applied now only inside one.  Health thread. */
int agent_scope_set_kinds(struct agent *a, uint32_t want);
/** A control request's API record policy (agent_api_set_policy),
 *  serialised with the range callbacks that apply kinds (uncontended
 *  without a capture range).  Health thread. */
int agent_scope_set_api_policy(struct agent *a, uint32_t mode, const char *include,
                               const char *exclude);
/** Stop protocol, step 1: no range opens any more (capture range), and
 *  every kind off, serialised with the range callbacks.
 *  @return agent_apply_kinds' result. */
int agent_scope_stop(struct agent *a);
/** Forked child: range_lock may have been held by a parent thread. */
void agent_scope_forked(struct agent *a);

#endif /* AGENT_SCOPE_H */
