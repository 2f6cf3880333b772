/*
 * agent_consumer.h - the consumer thread: pops completed buffers from the
 * queue (agent_queue.h), parses and normalises their records, interns
 * names, pairs NVTX ranges and batch-commits chunks to the store.
 *
 * Threads: the consumer thread alone touches its work (agent_consumer_work:
 * the unstored batch, the names, the ranges) until the stop protocol
 * takes it over through the hand-off below.  agent_consumer_start and
 * agent_consumer_stop run under stop_lock (a session's start, the stop
 * protocol); agent_drain on the health thread (a detach) or the stop.
 *
 * Locks: none.  The hand-off (`state`) changes only by compare-and-swap;
 * `busy`, `commit_req` and `commit_done` are atomics with acquire/release
 * (agent_drain reads them to know the consumer holds nothing); `quit` and
 * `abandon` are flags the stop sets.  The state (agent_consumer_state,
 * the agent's `consumer` member) is agent_consumer.c's alone.
 */
#ifndef AGENT_CONSUMER_H
#define AGENT_CONSUMER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent_names.h"
#include "agent_ranges.h"
#include "cupstore.h"

/* Who owns the consumer's work (its unstored batch, the buffer it is
 * parsing, the queue) - the hand-off between the consumer and the stop
 * protocol, changed only by compare-and-swap:
 *   IDLE -> BUSY -> IDLE   consumer: a step (pop + parse, or a commit)
 *   BUSY -> DONE           consumer: finished normally (batch stored)
 *   IDLE -> YIELDED        consumer: told to abandon, exits at a boundary
 *   IDLE -> TAKEN          stop: took over a consumer between steps
 *   BUSY -> ORPHANED       stop: gave up on a step that would not end
 * In YIELDED, TAKEN and DONE the stop path owns the batch and the queue
 * (the consumer never touches them again); in ORPHANED it owns only the
 * queue (the consumer's step in progress ends with a store or a refusal
 * the final status cannot include: the only uncertain case, noted). */
enum {
    AGENT_CONS_IDLE = 0,
    AGENT_CONS_BUSY,
    AGENT_CONS_DONE,
    AGENT_CONS_YIELDED,
    AGENT_CONS_TAKEN,
    AGENT_CONS_ORPHANED,
};

/* Per-session work of the consumer thread (consumer-only until handed
 * off). */
typedef struct agent_consumer_work {
    cupstore_record *batch;
    uint32_t n;
    uint64_t first_mono;    /* when the batch got its first record        */
    uint32_t counts[CUPSTORE_DEVICE_MAX + 1][CUPSTORE_KIND_MAX];   /* batch's
                               records by device slot (AGENT_DEVS) and kind */
    agent_names names;
    bool refused_noted;
    unsigned unnamed_noted;   /* notes about cbids CUPTI cannot name     */
    agent_ranges ranges;      /* NVTX range rows of the batch (agent_ranges.h) */
} agent_consumer_work;

/* The consumer thread and its hand-off (agent_consumer.c only). */
typedef struct agent_consumer_state {
    pthread_t th;
    bool up;
    bool orphaned;                    /* a consumer left behind in a step:
                                         no new session's consumer here   */
    _Atomic int quit;
    _Atomic int abandon;              /* stop: exit now, commit nothing   */
    _Atomic int busy;                 /* a buffer is being parsed         */
    _Atomic uint64_t commit_req;      /* agent_drain(commit): asks the    */
    _Atomic uint64_t commit_done;     /* consumer to store its batch now  */
    _Atomic int state;                /* AGENT_CONS_*: the hand-off       */
    agent_consumer_work work;
} agent_consumer_state;

struct agent;

int agent_consumer_start(struct agent *a);
/** Ask the consumer to finish (drain the queue, commit its batch) and join
 *  it, waiting at most timeout_ms.  If it does not finish in time it is told
 *  to abandon the rest: it exits at the next boundary (between buffers, or
 *  at a full batch: the rest of that buffer is counted as tail by the
 *  consumer) without committing again; a step in progress (a commit on a
 *  slow disk) gets AGENT_STOP_GRACE_MS more.  Once it has yielded, its
 *  unstored batch is counted as tail loss by kind and device here.  The
 *  queue is never touched by the consumer after this returns.
 *  @return 0 (finished), ETIMEDOUT (abandoned: the batch is counted, the
 *  queue left is exact tail for the caller), or EBUSY (a step never ended:
 *  the consumer is orphaned, its batch is uncertain; the queue is still the
 *  caller's to count). */
int agent_consumer_stop(struct agent *a, uint32_t timeout_ms);
/** Wait up to timeout_ms until the queue is empty and the consumer holds no
 *  buffer: what CUPTI handed back is stored; with commit, also until the
 *  consumer has stored its batch.  @return 0 or ETIMEDOUT. */
int agent_drain(struct agent *a, uint32_t timeout_ms, bool commit);
/** Forked child: no consumer thread here (none orphaned either). */
void agent_consumer_forked(struct agent *a);

#endif /* AGENT_CONSUMER_H */
