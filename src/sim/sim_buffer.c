/*
 * sim_buffer.c - CUPTI's buffer semantics: per-thread buffers requested
 * from the client, records appended back to back (8-byte aligned), full
 * buffers queued for completion, the worker thread ("CUPTI's thread")
 * that calls bufferCompleted, the flush period and cuptiActivityFlushAll,
 * and the faults that act on delivery (slow, steal, foreign, dup).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sim_int.h"

/* Per-thread flags of the calling thread (not shared state). */
static __thread struct sim_buffer_tls {
    bool in_request;   /* inside the client's bufferRequested  */
    bool is_worker;    /* this is the completion thread        */
} sim_btls;

/* Largest record the producer writes: a buffer with less room left than
 * this is complete (CUPTI completes a buffer when the next record may not
 * fit). */
#define SIM_REC_MAX sizeof(CUpti_ActivityKernel10)

size_t sim_record_size(uint32_t kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return sizeof(CUpti_ActivityOverhead3);
    case CUPTI_ACTIVITY_KIND_MARKER: return sizeof(CUpti_ActivityMarker2);
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: return sizeof(CUpti_ActivityGraphTrace2);
    case CUPTI_ACTIVITY_KIND_MARKER_DATA: return sizeof(CUpti_ActivityMarkerData2);
    case CUPTI_ACTIVITY_KIND_CONTEXT: return sizeof(CUpti_ActivityContext3);
    case CUPTI_ACTIVITY_KIND_DEVICE: return sizeof(CUpti_ActivityDevice5);
    case SIM_INVALID_KIND: return sizeof(sim_rec_invalid);
    default: return 0;
    }
}

static void sim_count_add(uint64_t dst[SIM_DEV_MAX][SIM_KINDS], unsigned dev, const uint64_t *src,
                          int sign)
{
    for (unsigned k = 0; k < SIM_KINDS; k++)
        dst[dev][k] += sign > 0 ? src[k] : -src[k];
}

static void *sim_worker_main(void *arg);

/* Start the completion thread; q_lock held.  Its signals are blocked so a
 * process-directed signal lands on an application thread. */
static void sim_worker_start_locked(void)
{
    sigset_t all, old;
    if (sim.worker_running)
        return;
    sim.worker_stop = false;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&sim.worker, NULL, sim_worker_main, NULL) == 0)
        sim.worker_running = true;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void sim_buffer_worker_start(void)
{
    pthread_mutex_lock(&sim.q_lock);
    sim_worker_start_locked();
    pthread_mutex_unlock(&sim.q_lock);
}

void sim_buffer_worker_stop(void)
{
    pthread_mutex_lock(&sim.q_lock);
    bool run = sim.worker_running && !sim_btls.is_worker;
    sim.worker_stop = true;
    pthread_cond_broadcast(&sim.q_cond);
    pthread_mutex_unlock(&sim.q_lock);
    if (run)
        pthread_join(sim.worker, NULL);
    pthread_mutex_lock(&sim.q_lock);
    if (run)
        sim.worker_running = false;
    pthread_mutex_unlock(&sim.q_lock);
}

/* Queue a buffer for completion (takes q_lock). */
static void sim_enqueue(struct CUctx_st *ctx, unsigned dev, uint8_t *buf, size_t size, size_t valid,
                        const sim_bufcount *cnt)
{
    sim_qitem *it = calloc(1, sizeof *it);
    if (!it)
        return; /* cannot happen in practice; the buffer is then lost */
    it->ctx = ctx;
    it->device = dev;
    it->buf = buf;
    it->size = size;
    it->valid = valid;
    if (cnt)
        it->cnt = *cnt;
    pthread_mutex_lock(&sim.q_lock);
    it->seq = ++sim.q_seq;
    sim_count_add(sim.queued, dev, it->cnt.rec, 1);
    if (sim.q_tail)
        sim.q_tail->next = it;
    else
        sim.q_head = it;
    sim.q_tail = it;
    sim_worker_start_locked();
    pthread_cond_broadcast(&sim.q_cond);
    pthread_mutex_unlock(&sim.q_lock);
}

void sim_buffer_put_meta(const void *recs, size_t len)
{
    uint8_t *b = NULL;
    size_t sz = 0, maxrec = 0;
    CUpti_BuffersCallbackRequestFunc req = sim.req_cb;

    if (!req)
        return;   /* no buffers registered: nothing is delivered (as CUPTI) */
    atomic_fetch_add_explicit(&sim.b_requested, 1, memory_order_relaxed);
    sim_btls.in_request = true;
    req(&b, &sz, &maxrec);
    sim_btls.in_request = false;
    if (!b) {
        atomic_fetch_add_explicit(&sim.b_null, 1, memory_order_relaxed);
        return;
    }
    if (sz < len || ((uintptr_t)b & 7u)) {
        atomic_fetch_add_explicit(&sim.b_small, 1, memory_order_relaxed);
        sim_enqueue(NULL, 0, b, sz, 0, NULL);
        return;
    }
    memcpy(b, recs, len);
    sim_enqueue(NULL, 0, b, sz, len, NULL);
}

/* Hand the slot's buffer to the completion queue; slot lock held. */
static void sim_slot_detach(sim_slot *s, unsigned dev)
{
    sim_enqueue(&sim.ctx[dev], dev, s->buf, s->size, s->used, &s->cnt);
    s->buf = NULL;
    s->size = s->used = s->maxrec = s->nrec = 0;
    memset(&s->cnt, 0, sizeof s->cnt);
}

/* Count one record as dropped on device dev; slot lock held. */
static void sim_drop(sim_slot *s, unsigned dev, unsigned k)
{
    atomic_fetch_add_explicit(&s->dropped[k], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&sim.ctx[dev].pending_drops, 1, memory_order_relaxed);
}

/* Ask the client for a buffer; slot lock held.  Returns false when the
 * record must be dropped. */
static bool sim_request(sim_slot *s, unsigned dev, size_t need)
{
    uint8_t *b = NULL;
    size_t sz = 0, maxrec = 0;
    CUpti_BuffersCallbackRequestFunc req = sim.req_cb;

    if (!req)
        return false;
    atomic_fetch_add_explicit(&sim.b_requested, 1, memory_order_relaxed);
    sim_btls.in_request = true;
    req(&b, &sz, &maxrec);
    sim_btls.in_request = false;
    if (!b) {
        atomic_fetch_add_explicit(&sim.b_null, 1, memory_order_relaxed);
        /* Before API version 27 (CUDA 12.9) CUPTI cannot take a NULL buffer
         * and the process dies; see doc/sim.md. */
        if (sim.cfg.api_version < 27)
            raise(sim.cfg.null_signal);
        return false;
    }
    if (sz < need || ((uintptr_t)b & 7u)) {
        /* Unusable: give it straight back (empty) and drop the record. */
        atomic_fetch_add_explicit(&sim.b_small, 1, memory_order_relaxed);
        sim_enqueue(&sim.ctx[dev], dev, b, sz, 0, NULL);
        return false;
    }
    if (sim.attr[CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER])
        memset(b, 0, sz);
    s->buf = b;
    s->size = sz;
    s->maxrec = maxrec;
    s->used = s->nrec = 0;
    return true;
}

void sim_buffer_put(sim_thread *t, unsigned dev, unsigned k, const void *rec, size_t len,
                    bool zero, bool inval, uint32_t cupti_kind)
{
    sim_slot *s = &t->slot[dev];
    size_t need = inval ? sizeof(sim_rec_invalid) : len;

    pthread_mutex_lock(&s->lock);
    atomic_fetch_add_explicit(&s->produced[k], 1, memory_order_relaxed);
    /* silent=N: a CUPTI that loses every Nth record and says nothing (no
     * drop count, no gap in its buffers): only the launch ledger can see it */
    if (sim.cfg.silent_every &&
        (atomic_fetch_add_explicit(&sim.n_silent, 1, memory_order_relaxed) + 1) %
                sim.cfg.silent_every == 0) {
        atomic_fetch_add_explicit(&s->silent[k], 1, memory_order_relaxed);
        pthread_mutex_unlock(&s->lock);
        return;
    }
    if (s->buf && (s->used + need > s->size || (s->maxrec && s->nrec >= s->maxrec)))
        sim_slot_detach(s, dev);
    if (!s->buf && !sim_request(s, dev, need)) {
        sim_drop(s, dev, k);
        pthread_mutex_unlock(&s->lock);
        return;
    }
    uint8_t *p = s->buf + s->used;
    if (inval) {
        sim_rec_invalid r = {.kind = SIM_INVALID_KIND, .size = sizeof r, .was_kind = cupti_kind};
        memcpy(p, &r, sizeof r);
        s->cnt.inval[k]++;
    } else {
        memcpy(p, rec, len);
        if (zero)
            s->cnt.zero[k]++;
    }
    s->used += need;
    s->nrec++;
    s->cnt.rec[k]++;
    if (s->size - s->used < SIM_REC_MAX || (s->maxrec && s->nrec >= s->maxrec))
        sim_slot_detach(s, dev);
    pthread_mutex_unlock(&s->lock);
}

bool sim_buffer_put_resource(unsigned dev, const void *rec, size_t len)
{
    sim_slot *s = &sim_thread_self()->slot[dev];
    bool ok = true;

    pthread_mutex_lock(&s->lock);
    if (s->buf && (s->used + len > s->size || (s->maxrec && s->nrec >= s->maxrec)))
        sim_slot_detach(s, dev);
    if (!s->buf && !sim_request(s, dev, len)) {
        ok = false;
    } else {
        memcpy(s->buf + s->used, rec, len);
        s->used += len;
        s->nrec++;
        /* completed when full or at the next forced flush, like records */
        if (s->size - s->used < SIM_REC_MAX)
            sim_slot_detach(s, dev);
    }
    pthread_mutex_unlock(&s->lock);
    return ok;
}

/* Detach the non-empty partial buffers of every thread (of one context
 * when `only` is set).  Takes reg_lock, then each slot lock. */
void sim_buffer_detach_partial(struct CUctx_st *only)
{
    pthread_mutex_lock(&sim.reg_lock);
    for (sim_thread *t = sim.threads;; t = t->next) {
        if (!t)
            t = &sim.shared;
        for (unsigned d = 0; d < SIM_DEV_MAX; d++) {
            sim_slot *s = &t->slot[d];
            if (only && only != &sim.ctx[d])
                continue;
            pthread_mutex_lock(&s->lock);
            if (s->buf && s->used)
                sim_slot_detach(s, d);
            pthread_mutex_unlock(&s->lock);
        }
        if (t == &sim.shared)
            break;
    }
    pthread_mutex_unlock(&sim.reg_lock);
}

/* Deliver one queued buffer to the client, applying the delivery faults. */
static void sim_deliver(sim_qitem *it)
{
    const sim_config *c = &sim.cfg;
    uint8_t *copy = NULL;
    bool dup = false;
    CUpti_BuffersCallbackCompleteFunc cmp = sim.cmp_cb;

    pthread_mutex_lock(&sim.q_lock);
    uint64_t n = ++sim.n_completed;
    sim_count_add(sim.queued, it->device, it->cnt.rec, -1);
    uint64_t acts = 0;   /* activity records: a DEVICE dump buffer has none */
    for (unsigned k = 0; k < SIM_KINDS; k++)
        acts += it->cnt.rec[k];
    /* DEVICE records are outside every delivery fault (doc/sim.md) */
    if (!cmp || (c->steal_every && it->valid && acts && n % c->steal_every == 0)) {
        /* Completed to the other subscriber: the client never sees it. */
        sim_count_add(sim.stolen, it->device, it->cnt.rec, 1);
        sim.b_stolen++;
        pthread_mutex_unlock(&sim.q_lock);
        return;
    }
    if (c->foreign_every && it->valid && n % c->foreign_every == 0 &&
        (copy = aligned_alloc(8, (it->valid + 7) & ~(size_t)7)) != NULL) {
        memcpy(copy, it->buf, it->valid);
        sim_count_add(sim.foreign, it->device, it->cnt.rec, 1);
        sim.b_foreign++;
    }
    sim_count_add(sim.delivered, it->device, it->cnt.rec, 1);
    sim_count_add(sim.zero_ts, it->device, it->cnt.zero, 1);
    sim_count_add(sim.invalid, it->device, it->cnt.inval, 1);
    sim.b_completed++;
    if (c->dup_every && it->valid && n % c->dup_every == 0) {
        dup = true;
        sim.b_dup++;
    }
    pthread_mutex_unlock(&sim.q_lock);

    if (c->slow_ms)
        sim_sleep_ms(c->slow_ms);
    if (copy) {
        cmp((CUcontext)it->ctx, 0, copy, it->valid, it->valid);
        free(copy);
    }
    cmp((CUcontext)it->ctx, 0, it->buf, it->size, it->valid);
    if (dup)
        cmp((CUcontext)it->ctx, 0, it->buf, it->size, it->valid);
}

static void *sim_worker_main(void *arg)
{
    (void)arg;
    sim_btls.is_worker = true;
    pthread_mutex_lock(&sim.q_lock);
    while (!sim.worker_stop || sim.q_head) {
        sim_qitem *it = sim.q_head;
        if (it) {
            sim.q_head = it->next;
            if (!sim.q_head)
                sim.q_tail = NULL;
            pthread_mutex_unlock(&sim.q_lock);
            sim_deliver(it);
            pthread_mutex_lock(&sim.q_lock);
            sim.q_done_seq = it->seq;
            free(it);
            pthread_cond_broadcast(&sim.q_done);
            continue;
        }
        if (sim.flush_period_ms) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)sim.flush_period_ms * 1000000u;
            ts.tv_sec += (time_t)(ns / 1000000000u);
            ts.tv_nsec = (long)(ns % 1000000000u);
            if (pthread_cond_timedwait(&sim.q_cond, &sim.q_lock, &ts) == ETIMEDOUT &&
                !sim.worker_stop) {
                pthread_mutex_unlock(&sim.q_lock);
                sim_buffer_detach_partial(NULL);
                pthread_mutex_lock(&sim.q_lock);
            }
        } else {
            pthread_cond_wait(&sim.q_cond, &sim.q_lock);
        }
    }
    pthread_mutex_unlock(&sim.q_lock);
    return NULL;
}

void sim_buffer_set_period(uint32_t ms)
{
    pthread_mutex_lock(&sim.q_lock);
    sim.flush_period_ms = ms;
    sim_worker_start_locked();
    pthread_cond_broadcast(&sim.q_cond);
    pthread_mutex_unlock(&sim.q_lock);
}

CUptiResult sim_buffer_flush(uint32_t flag)
{
    bool forced = flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED;

    /* The caller holds its own slot lock inside bufferRequested. */
    if (sim_btls.in_request)
        return CUPTI_ERROR_INVALID_OPERATION;
    if (forced)
        sim_buffer_detach_partial(NULL);
    pthread_mutex_lock(&sim.q_lock);
    if (forced)
        sim.flushes_forced++;
    else
        sim.flushes++;
    uint64_t target = sim.q_seq;
    /* Inside bufferCompleted the worker cannot wait for itself: the
     * buffers go out right after the callback returns. */
    if (!sim_btls.is_worker) {
        if (sim.q_done_seq < target)
            sim_worker_start_locked();
        while (sim.q_done_seq < target && sim.worker_running)
            pthread_cond_wait(&sim.q_done, &sim.q_lock);
    }
    pthread_mutex_unlock(&sim.q_lock);
    if (forced)
        (void)cuptopsim_truth_write(NULL, 0, NULL);
    return CUPTI_SUCCESS;
}

/* In a forked child: no worker, no producer, fresh locks; the parent's
 * buffers and queue are abandoned (only the calling thread survived). */
void sim_buffer_after_fork(void)
{
    sim_qitem *it = sim.q_head;
    while (it) {
        sim_qitem *next = it->next;
        free(it);
        it = next;
    }
    pthread_mutex_init(&sim.q_lock, NULL);
    pthread_cond_init(&sim.q_cond, NULL);
    pthread_cond_init(&sim.q_done, NULL);
    sim.q_head = sim.q_tail = NULL;
    sim.q_seq = sim.q_done_seq = 0;
    sim.worker_running = sim.worker_stop = false;
    sim_btls.is_worker = false;
    sim_btls.in_request = false;
}
