/*
 * agent_pool.h - the bounded pool of activity buffers handed to CUPTI.
 *
 * Buffers are 64-byte aligned, allocated lazily up to the pool's limit and
 * recycled, never freed while the process lives (CUPTI may still hold one
 * at exit).  Every buffer is registered in a lock-free pointer -> slot
 * table, so bufferCompleted can tell its own buffers from foreign ones
 * (another CUPTI client) and catch a buffer completed twice, without a
 * lock.  get/put take a mutex for O(1) work (a free-list pop or push, or
 * one allocation while the pool grows); the consumer never holds it for
 * longer than that.
 */
#ifndef AGENT_POOL_H
#define AGENT_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AGENT_POOL_ALIGN 64
#define AGENT_POOL_HEAD 8   /* bytes zeroed at hand-out: written or not */

enum {
    AGENT_SLOT_FREE = 0,    /* in the free list                            */
    AGENT_SLOT_OUT,         /* handed to CUPTI                             */
    AGENT_SLOT_QUEUED,      /* completed: queued or being parsed           */
    AGENT_SLOT_TAKEN,       /* written, and not given back by a forced
                             * flush that returned: another client's now
                             * (counted once; never reused)                */
};

typedef struct agent_pool_slot {
    uint8_t *buf;
    _Atomic uint32_t state;
} agent_pool_slot;

typedef struct agent_pool {
    size_t buf_size;
    uint32_t max_slots;               /* hard cap (slots array size)       */
    _Atomic uint32_t limit;           /* current limit (<= max_slots)      */
    _Atomic uint32_t allocated;       /* slots with a buffer               */
    _Atomic uint32_t outstanding;     /* handed out, not yet completed     */
    _Atomic uint32_t in_use;          /* allocated - free                  */
    _Atomic uint32_t high_water;      /* max in_use                        */
    agent_pool_slot *slots;
    pthread_mutex_t lock;             /* guards free[] and growth          */
    uint32_t *free;
    uint32_t nfree;
    _Atomic uintptr_t *keys;          /* pointer table: buffer address     */
    uint32_t *vals;                   /*   -> slot index                   */
    uint32_t hmask;
} agent_pool;

/** Set up a pool of buffers of buf_size bytes; limit buffers may be in use
 *  at once now, max_slots ever (agent_pool_set_limit raises limit).
 *  Allocates only the bookkeeping.  @return 0 or ENOMEM/EINVAL. */
int agent_pool_init(agent_pool *p, size_t buf_size, uint32_t limit, uint32_t max_slots);
/** Free every buffer (only when CUPTI can no longer hold one: tests). */
void agent_pool_free(agent_pool *p);

/** Raise (or lower) the in-use limit, clamped to max_slots. */
void agent_pool_set_limit(agent_pool *p, uint32_t limit);

/** Take a buffer (any thread): recycled, or newly allocated while under
 *  the limit.  Marks it OUT.  @return the slot index, or -1 when the pool
 *  is exhausted or memory ran out. */
int agent_pool_get(agent_pool *p, uint8_t **buf);

/** Slot of a buffer this pool handed out, or -1 (foreign).  Lock-free. */
int agent_pool_find(agent_pool *p, const uint8_t *buf);

/** Completion: OUT -> QUEUED.  @return false when the slot was not OUT
 *  (completed twice, or never handed out). */
bool agent_pool_complete(agent_pool *p, int slot);

/** Give a slot back (from QUEUED, OUT or TAKEN) to the free list. */
void agent_pool_put(agent_pool *p, int slot);

/** After a forced flush that returned (every buffer holding a record came
 *  back): each buffer still OUT that CUPTI wrote a record into (its first
 *  bytes are no longer the zeros agent_pool_get put there) was taken by
 *  another client: OUT -> TAKEN, no longer outstanding.  An empty one
 *  CUPTI may keep stays OUT.  @return how many were taken. */
uint32_t agent_pool_take_written(agent_pool *p);

#endif /* AGENT_POOL_H */
