/*
 * agent_queue.h - bounded lock-free multi-producer / single-consumer queue
 * of completed CUPTI buffers.
 *
 * Producers are CUPTI's bufferCompleted callbacks, which may run on several
 * threads at once; the one consumer is the agent's consumer thread.  The
 * ring is Vyukov's bounded queue: each cell carries a sequence number, so a
 * push is one CAS on the tail plus two stores, and never waits for another
 * producer except to retry a lost CAS.  A full queue makes push return
 * false at once (the caller counts the overflow); nothing ever blocks.
 *
 * This file and agent_queue.c depend on nothing else in the agent so the
 * ThreadSanitizer test can build them alone.
 */
#ifndef AGENT_QUEUE_H
#define AGENT_QUEUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** One completed buffer, as handed over by bufferCompleted. */
typedef struct agent_qitem {
    uint8_t *buf;        /* the buffer CUPTI completed                     */
    size_t size;         /* its allocated size                             */
    size_t valid;        /* bytes of valid records                         */
    uint32_t slot;       /* pool slot (agent_pool), or UINT32_MAX          */
    uint32_t ctx_id;     /* CUPTI context id, 0 for the global queue       */
    uint64_t mono_ns;    /* CLOCK_MONOTONIC time of completion             */
} agent_qitem;

typedef struct agent_qcell {
    _Atomic size_t seq;
    agent_qitem item;
} agent_qcell;

typedef struct agent_queue {
    agent_qcell *cells;
    size_t mask;                      /* capacity - 1 (power of two)       */
    size_t capacity;                  /* usable capacity (may be < ring)   */
    _Alignas(64) _Atomic size_t tail; /* next cell to push (producers)     */
    _Alignas(64) _Atomic size_t head; /* next cell to pop (consumer)       */
    _Alignas(64) _Atomic size_t high_water;  /* max depth seen             */
    _Atomic uint32_t wake;            /* futex word: bumped on push        */
    _Atomic uint32_t sleeping;        /* consumer is (about to be) asleep  */
} agent_queue;

/** Allocate a queue holding up to capacity items (>= 1).
 *  @return 0 or ENOMEM / EINVAL. */
int agent_queue_init(agent_queue *q, size_t capacity);
void agent_queue_free(agent_queue *q);

/** Push an item (any thread).  @return false when the queue is full. */
bool agent_queue_push(agent_queue *q, const agent_qitem *it);

/** Pop the oldest item (the one consumer thread only).
 *  @return false when the queue is empty. */
bool agent_queue_pop(agent_queue *q, agent_qitem *out);

/** Items in the queue now (approximate while producers run). */
size_t agent_queue_depth(agent_queue *q);

/** Consumer: sleep until a backlog of two items builds up, a kick, or
 *  timeout_ns passes (futex; spurious wake-ups are fine).  Returns at once
 *  when the queue is not empty.  A single pushed item is only seen when the
 *  timeout expires: keep it short (milliseconds). */
void agent_queue_wait(agent_queue *q, uint64_t timeout_ns);
/** Wake the consumer if it sleeps (used by stop and by push). */
void agent_queue_kick(agent_queue *q);

#endif /* AGENT_QUEUE_H */
