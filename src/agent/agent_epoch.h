/*
 * agent_epoch.h - the open epoch (DESIGN invariant 4): every change of
 * the collection scope - a control request, a capture range entered or
 * left, the first attach - closes the epoch and opens the next, so figures
 * are only ever compared within one scope.
 *
 * Threads: the epoch is opened at the session's start (before the
 * agent's threads exist), then only by the health thread (a control
 * request, agent_control.c; a range transition, agent_scope_poll; a
 * refresh when the consumer learned pre-attach contexts), and read at the
 * end by the stop protocol once the health thread is joined.  The
 * consumer reads the open epoch's kinds (agent_epoch_kinds) for which
 * kinds it may see records of; a stale value there only widens that set.
 *
 * Lock: the state (agent_epoch_state, the agent's `epoch` member) is
 * agent_epoch.c's alone; its writers hold stop_lock or run alone (the
 * start, the stop after the join), so it needs no lock of its own.
 */
#ifndef AGENT_EPOCH_H
#define AGENT_EPOCH_H

#include <stdbool.h>
#include <stdint.h>

#include "cupstore.h"

/* The open epoch (agent_epoch.c only). */
typedef struct agent_epoch_state {
    uint32_t id;
    uint64_t start_ns;
    uint32_t kinds;                   /* kinds of the open epoch          */
    uint32_t kinds_on;                /* those of the newest epoch with any */
    uint64_t ctl_gen;                 /* generation that opened it        */
    uint32_t flags;                   /* CUPSTORE_EPOCH_* of the open one */
    uint32_t pre_written;             /* pre-attach contexts it was told  */
    uint64_t attach_ns, attach_cost_ns; /* the attach that opened it      */
    uint64_t sched_ns;                /* periodic window: the boundary due */
    uint32_t period_ms, window_ms;    /* ... of the schedule (0: none)    */
} agent_epoch_state;

struct agent;
struct agent_range_ev;

/** Whether the session's first epoch opens with an attach (its time and
 *  cost then go into the epoch).  Session start. */
void agent_epoch_set_attach(struct agent *a, bool attached);
/** The session's first epoch (no store write). */
void agent_epoch_begin(struct agent *a);
/** Open a new epoch after a scope change (no store write). */
void agent_epoch_open(struct agent *a, uint64_t now, uint64_t ctl_gen, bool attached_now);
/** Open the epoch a capture range transition starts (no store write). */
void agent_epoch_open_range(struct agent *a, const struct agent_range_ev *ev);
/** The consumer learned contexts that predate the attach: rewrite the
 *  open epoch and say so once.  Health thread. */
void agent_epoch_refresh(struct agent *a);
/** Set how many pre-attach contexts the open epoch was told of. */
void agent_epoch_contexts_written(struct agent *a, uint32_t n);
/** Fill an epoch record from the open epoch. */
void agent_epoch_fill(struct agent *a, cupstore_epoch *e);
/** Meta api_muted.EPOCH of the open epoch (in the caller's txn). */
int agent_api_muted_put(struct agent *a, cupstore_txn *txn);
/** The open epoch's id and kinds. */
uint32_t agent_epoch_id(const struct agent *a);
uint32_t agent_epoch_kinds(const struct agent *a);
/** The kinds of the newest epoch that had any (0: none yet): drops read
 *  after the kinds went off (a detach, a range's or window's end) were
 *  records of those kinds. */
uint32_t agent_epoch_kinds_on(const struct agent *a);

#endif /* AGENT_EPOCH_H */
