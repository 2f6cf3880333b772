/*
 * agent_stop.h - the stop protocol (stop work -> flush -> drain -> commit
 * -> close, each step timed and recorded) and every path into it: atexit,
 * the stop signals (chained to the host's handlers), SIGABRT, the last
 * context's destruction, a detach; and the fork rules.
 *
 * Threads: the protocol runs once, on the first thread that asks - the
 * application's thread at exit or at the last context's destruction, or
 * the agent's stop thread, which a signal handler wakes (sem_post, the
 * only thing a handler does besides a bounded wait for `done`).
 *
 * Locks: the state (agent_stop_state, the agent's `stop` member) is
 * agent_stop.c's alone.  Its `lock` (stop_lock) is the agent's one
 * "scope change" lock: a session's start, a control request and a
 * teardown's settling (health thread, trylock) and the stop protocol each
 * hold it for their whole run (agent_stop_lock / agent_stop_trylock), so
 * they never interleave; range_lock and ctx_lock are taken inside it,
 * never around it.  `signal` and `done` are atomics (signal handlers).
 */
#ifndef AGENT_STOP_H
#define AGENT_STOP_H

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* The stop protocol's state (agent_stop.c only). */
typedef struct agent_stop_state {
    pthread_mutex_t lock;             /* stop_lock: one scope change or
                                         stop protocol at a time          */
    sem_t sem;                        /* a signal handler wakes the thread */
    pthread_t th;                     /* the stop thread                  */
    bool up;                          /* ... is running                   */
    _Atomic int quit;                 /* ... is told to end               */
    _Atomic int signal;               /* signal that asked for a stop     */
    _Atomic int done;                 /* the protocol has ended           */
    int exit_path, exit_detail;       /* CUPSTORE_EXIT_* of the session   */
    /* the stop signal that ended the session was handled by the
     * application, whose handler returned: the process carried on.  The
     * signal, when, and whether the stop thread still has to write it
     * (set in the handler, async-signal-safe) */
    _Atomic int continued_sig;
    _Atomic int continued_post;
    _Atomic uint64_t continued_ns;
} agent_stop_state;

#define AGENT_STOP_INIT {.lock = PTHREAD_MUTEX_INITIALIZER}

struct agent;

void agent_stop_install(struct agent *a);
void agent_stop_atexit_late(void);   /* at a late attach: before CUDA's exit */
/** Run the stop protocol once (later callers wait for the first). */
void agent_stop_run(struct agent *a, int exit_path, int detail);
/** Mark this thread as one of the agent's (signal handlers skip waits). */
void agent_thread_enter(void);
/** stop_lock: hold it across a scope change (see above). */
void agent_stop_lock(struct agent *a);
void agent_stop_unlock(struct agent *a);
/** Take stop_lock if free.  @return true when taken. */
bool agent_stop_trylock(struct agent *a);
/** A new session: no stop asked, none done, exit path unknown.  Session
 *  start, under stop_lock. */
void agent_stop_reset(struct agent *a);
/** How the session ended (CUPSTORE_EXIT_*; UNKNOWN while running). */
int agent_stop_exit_path(const struct agent *a);

#endif /* AGENT_STOP_H */
