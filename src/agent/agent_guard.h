/*
 * agent_guard.h - a fault in the agent's own store mappings ends the
 * session's storing, never the application.
 *
 * LMDB maps data.mdb and lock.mdb.  When somebody truncates one of them
 * under a live session (`truncate -s 0 data.mdb`), or it can no longer be
 * written (`chattr +i lock.mdb`), the next access to the mapping raises
 * SIGBUS in whichever thread makes it: the consumer, the health thread,
 * or an application thread running the stop protocol (atexit).  Without a
 * guard the application died of it (exit 135).
 *
 * Every access of the agent to its store goes through agent_guard_run
 * (agent_store_put and the few helpers below): it arms a per-thread frame
 * (sigsetjmp); the agent's SIGBUS handler jumps back to it when a fault
 * (kernel-generated, si_code > 0) hits a thread that has a frame armed.
 * The store is then marked faulted (cupstore_env_fault: the locks this
 * thread held in it are given back, nothing touches LMDB on it again), the
 * call returns CUPSTORE_EFAULT and the session's storing ends: batches
 * that follow are refused and counted as store_refused, rows and the final
 * status cannot be written.  A SIGBUS that is not the agent's (another
 * thread, no frame armed, or sent by kill) goes to the handler the
 * application had before the agent's, or takes the default action, as it
 * would have without the agent.
 *
 * Threads: any.  The frame pointer is thread-local (initial-exec TLS);
 * the handler is installed once per process (agent_guard_install), with
 * the previous disposition saved.  A handler the application installs
 * after the agent's replaces it: faults in the store then reach the
 * application's handler (documented limit).
 */
#ifndef AGENT_GUARD_H
#define AGENT_GUARD_H

#include <stdint.h>

struct agent;

/** Install the SIGBUS handler (once per process; later calls do nothing). */
void agent_guard_install(void);

/** Run fn(a, arg) with the store guarded.  Returns fn's result, or
 *  CUPSTORE_EFAULT when the store faulted now or before (fn not run). */
int agent_guard_run(struct agent *a, int (*fn)(struct agent *, void *), void *arg);

/** The guarded forms of the env calls the agent makes outside a
 *  transaction (each CUPSTORE_EFAULT once the store faulted). */
int agent_store_sync(struct agent *a);
int agent_store_usage(struct agent *a, uint64_t *used, uint64_t *mapsize);
int agent_store_reader_check(struct agent *a);

#endif
