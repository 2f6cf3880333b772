/*
 * agent_health.h - the health thread: one cupstore_health row per second
 * (aligned to wall-clock seconds) with its loss rows, CUPTI's drop counts,
 * and a tick every 200 ms that turns range transitions into epochs,
 * settles a teardown, refreshes the open epoch and applies the control
 * request (agent_control.c).
 *
 * Threads: the health thread alone runs the rows and the tick; it is
 * started by a session's start and stopped (joined, its last row written)
 * by the stop protocol, both under stop_lock.  agent_health_query_drops
 * also runs on the stop path and in a detach (health thread).
 *
 * Locks: the state (agent_health_state, the agent's `health` member) is
 * agent_health.c's alone: `lock` and `cond` only wake the thread early
 * (the stop sets `quit`); the snapshot of every counter it diffs is
 * health-thread-only.  It reads the counters (relaxed atomics) and the
 * other subsystems through their accessors, and takes ctx_lock for the
 * drop query.
 */
#ifndef AGENT_HEALTH_H
#define AGENT_HEALTH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* The health thread (agent_health.c only). */
typedef struct agent_health_state {
    pthread_t th;
    bool up;
    _Atomic int quit;
    pthread_mutex_t lock;             /* with cond: wakes the thread      */
    pthread_cond_t cond;
} agent_health_state;

#define AGENT_HEALTH_INIT {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER}

struct agent;

int agent_health_start(struct agent *a);
/** Tell the thread to write its last row and join it (timeout_ms).
 *  @return 0, or the join's error (it is still running). */
int agent_health_stop(struct agent *a, uint32_t timeout_ms);
/** CUPTI's drops split over kinds (the estimate rows), per kind: those
 *  of the rows written and of the last row the store refused (its counts
 *  carry over, so a refused row's split is redone in the next).  For the
 *  final status, once the thread is joined; out has CUPSTORE_KIND_MAX.
 *  @return 0, or EBUSY while the thread still runs (out untouched). */
int agent_health_dropped_est(struct agent *a, uint64_t *out);
/** Ask CUPTI for drops (per known context, then NULL); counts them. */
void agent_health_query_drops(struct agent *a);
/** Write the process down (pid, host, boot id, start time, PID
 *  namespace), right after the store is opened and before any thread of
 *  the agent writes a health row: a session killed while the agent starts
 *  is then judged by its dead process (crashed), never as one that cannot
 *  be checked.  @return 0 or a cupstore error. */
int agent_health_put_process(struct agent *a);
/** Open the first epoch and write the session metadata. */
void agent_health_begin_session(struct agent *a, const char *cupti_note);
/** This process's start time: clock ticks after boot, field 22 of
 *  /proc/self/stat (0 when it cannot be read).  With the pid and the boot
 *  id it names the process in any PID namespace, whatever reuses the pid. */
unsigned long long agent_health_start_ticks(void);
/** Forked child: no health thread here; its lock and cond afresh. */
void agent_health_forked(struct agent *a);

#endif /* AGENT_HEALTH_H */
