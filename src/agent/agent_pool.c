/* agent_pool.c - bounded buffer pool (see agent_pool.h). */
#include "agent_pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint32_t pool_hash(uintptr_t p)
{
    uint64_t x = (uint64_t)p >> 6;
    x *= 0x9e3779b97f4a7c15ull;
    return (uint32_t)(x >> 32);
}

int agent_pool_init(agent_pool *p, size_t buf_size, uint32_t limit, uint32_t max_slots)
{
    uint32_t hsize = 16;

    memset(p, 0, sizeof *p);
    if (buf_size < AGENT_POOL_ALIGN || max_slots == 0 || limit == 0)
        return EINVAL;
    if (limit > max_slots)
        limit = max_slots;
    while (hsize < 2 * max_slots)
        hsize <<= 1;
    p->buf_size = (buf_size + AGENT_POOL_ALIGN - 1) & ~(size_t)(AGENT_POOL_ALIGN - 1);
    p->max_slots = max_slots;
    atomic_init(&p->limit, limit);
    p->slots = calloc(max_slots, sizeof *p->slots);
    p->free = calloc(max_slots, sizeof *p->free);
    p->keys = calloc(hsize, sizeof *p->keys);
    p->vals = calloc(hsize, sizeof *p->vals);
    p->hmask = hsize - 1;
    if (!p->slots || !p->free || !p->keys || !p->vals) {
        agent_pool_free(p);
        return ENOMEM;
    }
    pthread_mutex_init(&p->lock, NULL);
    return 0;
}

void agent_pool_free(agent_pool *p)
{
    if (p->slots) {
        uint32_t n = atomic_load(&p->allocated);
        for (uint32_t i = 0; i < n; i++)
            free(p->slots[i].buf);
        pthread_mutex_destroy(&p->lock);
    }
    free(p->slots);
    free(p->free);
    free((void *)p->keys);
    free(p->vals);
    memset(p, 0, sizeof *p);
}

void agent_pool_set_limit(agent_pool *p, uint32_t limit)
{
    if (limit > p->max_slots)
        limit = p->max_slots;
    atomic_store_explicit(&p->limit, limit, memory_order_relaxed);
}

static void pool_note_use(agent_pool *p)
{
    uint32_t u = atomic_fetch_add_explicit(&p->in_use, 1, memory_order_relaxed) + 1;
    uint32_t hw = atomic_load_explicit(&p->high_water, memory_order_relaxed);
    while (u > hw && !atomic_compare_exchange_weak_explicit(&p->high_water, &hw, u,
                                                            memory_order_relaxed,
                                                            memory_order_relaxed))
        ;
}

/* Register a new buffer in the pointer table (under p->lock). */
static void pool_register(agent_pool *p, uint8_t *buf, uint32_t slot)
{
    uint32_t i = pool_hash((uintptr_t)buf) & p->hmask;
    while (atomic_load_explicit(&p->keys[i], memory_order_relaxed))
        i = (i + 1) & p->hmask;
    p->vals[i] = slot;
    /* release: a reader that sees the key also sees vals[i]. */
    atomic_store_explicit(&p->keys[i], (uintptr_t)buf, memory_order_release);
}

int agent_pool_get(agent_pool *p, uint8_t **buf)
{
    int slot = -1;

    pthread_mutex_lock(&p->lock);
    uint32_t in_use = atomic_load_explicit(&p->in_use, memory_order_relaxed);
    uint32_t limit = atomic_load_explicit(&p->limit, memory_order_relaxed);
    if (in_use < limit) {
        if (p->nfree) {
            slot = (int)p->free[--p->nfree];
        } else {
            uint32_t n = atomic_load_explicit(&p->allocated, memory_order_relaxed);
            if (n < p->max_slots) {
                uint8_t *b = aligned_alloc(AGENT_POOL_ALIGN, p->buf_size);
                if (b) {
                    p->slots[n].buf = b;
                    pool_register(p, b, n);
                    atomic_store_explicit(&p->allocated, n + 1, memory_order_release);
                    slot = (int)n;
                }
            }
        }
    }
    if (slot >= 0) {
        pool_note_use(p);
        /* a record's first field (its kind) is never 0: zeros here say
         * CUPTI wrote nothing into it (agent_pool_take_written) */
        memset(p->slots[slot].buf, 0, AGENT_POOL_HEAD);
        atomic_store_explicit(&p->slots[slot].state, AGENT_SLOT_OUT, memory_order_release);
        atomic_fetch_add_explicit(&p->outstanding, 1, memory_order_relaxed);
        *buf = p->slots[slot].buf;
    }
    pthread_mutex_unlock(&p->lock);
    return slot;
}

int agent_pool_find(agent_pool *p, const uint8_t *buf)
{
    uint32_t i = pool_hash((uintptr_t)buf) & p->hmask;
    uintptr_t k;
    while ((k = atomic_load_explicit(&p->keys[i], memory_order_acquire))) {
        if (k == (uintptr_t)buf)
            return (int)p->vals[i];
        i = (i + 1) & p->hmask;
    }
    return -1;
}

bool agent_pool_complete(agent_pool *p, int slot)
{
    uint32_t want = AGENT_SLOT_OUT;
    /* acq_rel: ordered after the get that handed it out; the consumer's
     * later reads of the buffer follow via the queue's release/acquire. */
    if (!atomic_compare_exchange_strong_explicit(&p->slots[slot].state, &want,
                                                 AGENT_SLOT_QUEUED, memory_order_acq_rel,
                                                 memory_order_relaxed))
        return false;
    atomic_fetch_sub_explicit(&p->outstanding, 1, memory_order_relaxed);
    return true;
}

void agent_pool_put(agent_pool *p, int slot)
{
    uint32_t old = atomic_exchange_explicit(&p->slots[slot].state, AGENT_SLOT_FREE,
                                            memory_order_acq_rel);
    if (old == AGENT_SLOT_FREE)
        return;   /* already free: never push a slot twice */
    if (old == AGENT_SLOT_OUT)
        atomic_fetch_sub_explicit(&p->outstanding, 1, memory_order_relaxed);
    pthread_mutex_lock(&p->lock);
    p->free[p->nfree++] = (uint32_t)slot;
    atomic_fetch_sub_explicit(&p->in_use, 1, memory_order_relaxed);
    pthread_mutex_unlock(&p->lock);
}

uint32_t agent_pool_take_written(agent_pool *p)
{
    static const uint8_t zero[AGENT_POOL_HEAD];
    uint32_t n = 0, all = atomic_load_explicit(&p->allocated, memory_order_acquire);
    for (uint32_t i = 0; i < all; i++) {
        uint32_t want = AGENT_SLOT_OUT;
        if (atomic_load_explicit(&p->slots[i].state, memory_order_acquire) != want ||
            !memcmp(p->slots[i].buf, zero, sizeof zero))
            continue;
        if (atomic_compare_exchange_strong_explicit(&p->slots[i].state, &want, AGENT_SLOT_TAKEN,
                                                    memory_order_acq_rel, memory_order_relaxed)) {
            atomic_fetch_sub_explicit(&p->outstanding, 1, memory_order_relaxed);
            n++;
        }
    }
    return n;
}
