/*
 * agent_window.h - periodic capture windows (--capture-range
 * every:PERIOD/WINDOW): collect for WINDOW at every multiple of PERIOD on
 * the wall clock (CLOCK_REALTIME), so every process of a job on every
 * host with synchronised clocks collects the same seconds.
 *
 * Threads: a thread of its own (the window thread) sleeps until the next
 * boundary with an absolute CLOCK_REALTIME deadline and opens or closes
 * the window there through agent_scope_window (kinds on or off under
 * range_lock, as a capture range's callback does); the health thread turns
 * each transition into an epoch (agent_scope_poll) carrying the boundary
 * it was due at, so how late each open and close came is in the store.
 * The health thread's 200 ms tick would put a window's edges up to 200 ms
 * off; this thread wakes at the boundary itself.  A control request
 * changes the schedule (agent_window_set, health thread); the stop
 * protocol ends the thread (agent_window_stop) before it disables kinds.
 *
 * Lock: the schedule (period, window, gen) is under the state's own
 * `lock`, which nothing else nests inside; the window thread takes
 * range_lock only after releasing it.  The monitor needs nothing from
 * here: windows sit at multiples of the period, so the schedule in the
 * open epoch says when the next one opens (model_window_next).
 */
#ifndef AGENT_WINDOW_H
#define AGENT_WINDOW_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* The window thread's state (agent_window.c only). */
typedef struct agent_window_state {
    pthread_t th;
    pthread_mutex_t lock;
    pthread_cond_t cond;              /* CLOCK_REALTIME deadlines          */
    bool up;                          /* the thread runs                   */
    bool quit;                        /* under lock                        */
    uint32_t period_ms, window_ms;    /* the schedule (0: none), under lock */
    uint32_t gen;                     /* schedule changes, under lock      */
} agent_window_state;

#define AGENT_WINDOW_INIT {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER}

struct agent;

/** Start the window thread with the configured schedule (nothing when
 *  the capture is not every:).  Session start, under stop_lock.
 *  @return 0 or pthread_create's error. */
int agent_window_start(struct agent *a);
/** A control request's schedule: every period_ms for window_ms, or none
 *  (period_ms 0).  A window open now closes first; the first window of a
 *  new schedule is the next whole one.  Health thread. */
void agent_window_set(struct agent *a, uint32_t period_ms, uint32_t window_ms);
/** Stop protocol, before kinds go off: end the thread (a window open
 *  now stays open; the stop closes it).  @return 0, or ETIMEDOUT. */
int agent_window_stop(struct agent *a, uint32_t timeout_ms);
/** Forked child: the thread does not exist there; locks re-initialised. */
void agent_window_forked(struct agent *a);

#endif /* AGENT_WINDOW_H */
