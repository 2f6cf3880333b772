/* agent_queue.c - bounded lock-free MPSC queue (see agent_queue.h). */
#include "agent_queue.h"

#include <errno.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int agent_queue_init(agent_queue *q, size_t capacity)
{
    size_t ring = 1;

    if (!q || capacity == 0 || capacity > ((size_t)1 << 24))
        return EINVAL;
    while (ring < capacity)
        ring <<= 1;
    q->cells = calloc(ring, sizeof *q->cells);
    if (!q->cells)
        return ENOMEM;
    for (size_t i = 0; i < ring; i++)
        atomic_init(&q->cells[i].seq, i);
    q->mask = ring - 1;
    q->capacity = capacity;
    atomic_init(&q->tail, 0);
    atomic_init(&q->head, 0);
    atomic_init(&q->high_water, 0);
    atomic_init(&q->wake, 0);
    atomic_init(&q->sleeping, 0);
    return 0;
}

void agent_queue_free(agent_queue *q)
{
    if (!q)
        return;
    free(q->cells);
    q->cells = NULL;
}

static void queue_note_depth(agent_queue *q, size_t depth)
{
    /* depth was computed from a relaxed (possibly stale, so smaller) head:
     * it can only overestimate, and the true depth never exceeds capacity */
    if (depth > q->capacity)
        depth = q->capacity;
    size_t hw = atomic_load_explicit(&q->high_water, memory_order_relaxed);
    while (depth > hw &&
           !atomic_compare_exchange_weak_explicit(&q->high_water, &hw, depth,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

bool agent_queue_push(agent_queue *q, const agent_qitem *it)
{
    size_t pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
    agent_qcell *c;

    for (;;) {
        /* The capacity bound may be below the ring size; head is read
         * relaxed: a stale head only makes the queue look fuller. */
        size_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
        if (pos - head >= q->capacity) {
            /* Re-read tail: another producer may have moved on. */
            size_t now = atomic_load_explicit(&q->tail, memory_order_relaxed);
            if (now == pos)
                return false;
            pos = now;
            continue;
        }
        c = &q->cells[pos & q->mask];
        /* acquire: pairs with the consumer's release of seq, so the
         * consumer's read of the old item happened before we overwrite. */
        size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
        intptr_t dif = (intptr_t)seq - (intptr_t)pos;
        if (dif == 0) {
            if (atomic_compare_exchange_weak_explicit(&q->tail, &pos, pos + 1,
                                                      memory_order_relaxed,
                                                      memory_order_relaxed))
                break;
        } else if (dif < 0) {
            return false;   /* the ring is full */
        } else {
            pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
        }
    }
    c->item = *it;
    /* release: publishes the item to the consumer's acquire load. */
    atomic_store_explicit(&c->seq, pos + 1, memory_order_release);
    queue_note_depth(q, pos + 1 - atomic_load_explicit(&q->head, memory_order_relaxed));
    /* Wake a sleeping consumer only once a backlog builds (two or more
     * items): a lone buffer waits for the consumer's own short timeout, so
     * the common completion costs no syscall and no context switch. */
    if (pos + 1 - atomic_load_explicit(&q->head, memory_order_relaxed) >= 2 &&
        atomic_load_explicit(&q->sleeping, memory_order_seq_cst))
        agent_queue_kick(q);
    return true;
}

bool agent_queue_pop(agent_queue *q, agent_qitem *out)
{
    size_t pos = atomic_load_explicit(&q->head, memory_order_relaxed);
    agent_qcell *c = &q->cells[pos & q->mask];
    size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);

    if (seq != pos + 1)
        return false;   /* empty, or a producer has not finished its cell */
    *out = c->item;
    /* release: the cell may be reused by a producer one lap later. */
    atomic_store_explicit(&c->seq, pos + q->mask + 1, memory_order_release);
    atomic_store_explicit(&q->head, pos + 1, memory_order_relaxed);
    return true;
}

size_t agent_queue_depth(agent_queue *q)
{
    size_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
    size_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
    return t > h ? t - h : 0;
}

void agent_queue_kick(agent_queue *q)
{
    atomic_fetch_add_explicit(&q->wake, 1, memory_order_release);
    syscall(SYS_futex, &q->wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void agent_queue_wait(agent_queue *q, uint64_t timeout_ns)
{
    uint32_t w = atomic_load_explicit(&q->wake, memory_order_acquire);
    struct timespec ts = {(time_t)(timeout_ns / 1000000000u),
                          (long)(timeout_ns % 1000000000u)};

    /* seq_cst on both sides (sleeping store here, load in push) so that
     * either the producer sees sleeping = 1 and wakes us, or we see its
     * item in the depth check below. */
    atomic_store_explicit(&q->sleeping, 1, memory_order_seq_cst);
    if (agent_queue_depth(q) == 0)
        syscall(SYS_futex, &q->wake, FUTEX_WAIT_PRIVATE, w, &ts, NULL, 0);
    atomic_store_explicit(&q->sleeping, 0, memory_order_relaxed);
}
