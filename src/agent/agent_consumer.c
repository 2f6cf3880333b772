/*
 * agent_consumer.c - the consumer thread: pop completed buffers, parse
 * them with cuptiActivityGetNextRecord, normalise, intern names, and
 * batch-commit chunks to the store (or only count, with CUPTOP_SINK=null).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent_consumer.h"
#include "agent_int.h"
#include "agent_norm.h"

#define STORE_MAP_MAX_DEFAULT ((uint64_t)8 << 30)   /* the store's default cap */

/* True when committing the batch could eat into the reserve kept below the
 * cap (a quarter of it, at most 8 MiB) for the rows that account for what
 * was refused: health and loss rows, steps, the final status. */
static bool consumer_near_cap(agent *a)
{
    uint64_t used = 0, size = 0;
    uint64_t cap = a->cfg.map_max ? a->cfg.map_max : STORE_MAP_MAX_DEFAULT;
    uint64_t reserve = cap / 4 < ((uint64_t)8 << 20) ? cap / 4 : ((uint64_t)8 << 20);
    if (agent_store_usage(a, &used, &size))
        return false;
    /* the batch itself, at its uncompressed size (an upper bound) */
    return used + reserve + (uint64_t)a->consumer.work.n * sizeof(cupstore_record) >= cap;
}

/* Ranges CUPTI never saw open, made by the agent's NVTX wrappers
 * (agent_nvtx.c): into this batch's range rows, their names interned. */
static void consumer_agent_ranges(agent *a)
{
    agent_consumer_work *c = &a->consumer.work;
    agent_nvtx_range got[16];
    size_t n;
    if (!c->ranges.pend)
        return;
    while (c->ranges.n + 16 <= c->ranges.cap && (n = agent_nvtx_take(got, 16)) > 0)
        for (size_t i = 0; i < n; i++) {
            uint32_t name = agent_names_intern(&c->names, got[i].name, SIZE_MAX);
            uint32_t dom = got[i].domain[0]
                               ? agent_names_intern(&c->names, got[i].domain, SIZE_MAX) : 0;
            (void)agent_ranges_add_whole(&c->ranges, got[i].id, (uint32_t)getpid(), got[i].tid,
                                         got[i].depth, got[i].start_ns, got[i].end_ns, name,
                                         dom);
        }
}

/* One attempt at the batch: its new names, then the records. */
static int put_batch(cupstore_txn *txn, void *arg)
{
    agent_consumer_work *c = arg;
    const uint32_t *ids;
    size_t np = agent_names_pending(&c->names, &ids);
    int rc = 0;
    for (size_t i = 0; i < np && rc == 0; i++) {
        const agent_name *nm = agent_names_get(&c->names, ids[i]);
        rc = cupstore_name_put(txn, ids[i], nm->str, nm->len);
    }
    if (rc == 0 && c->n)   /* none: only ranges the agent made */
        rc = cupstore_chunk_put(txn, c->batch, c->n);
    return rc ? rc : agent_ranges_put(txn, &c->ranges);
}

/* The batch's records by device and kind, counted as records once they
 * are where they go (stored, or the null sink's counting): a batch the
 * store refused is counted as STORE_REFUSED only, one abandoned at the
 * stop as tail only (known.txt 29.5: the health rows' kinds counted
 * every parsed record, refused ones too, against records_stored). */
static void consumer_count_records(agent *a, const agent_consumer_work *c)
{
    for (unsigned d = 0; d < AGENT_DEVS; d++)
        for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
            if (c->counts[d][k])
                agent_count(a, agent_c_rec(d, k), c->counts[d][k]);
}

/* Commit the current batch: names first used by it go in the same txn.
 * EAGAIN (the map grew) and CUPSTORE_EBUSY retry the whole batch
 * (cupstore_write, at most AGENT_PUT_BATCH_TRIES times); anything else counts the
 * batch's records as STORE_REFUSED by device and kind. */
static void consumer_commit(agent *a)
{
    agent_consumer_work *c = &a->consumer.work;
    int rc = 0;

    if (!atomic_load_explicit(&a->consumer.abandon, memory_order_acquire))
        consumer_agent_ranges(a);
    if (c->n == 0 && c->ranges.n == 0)
        return;
    /* told to abandon: the batch stays unstored, the stop path counts it
     * as tail once this thread has yielded */
    if (atomic_load_explicit(&a->consumer.abandon, memory_order_acquire))
        return;
    if (a->cfg.sink == AGENT_SINK_NULL || !a->env) {
        agent_names_batch_end(&c->names, true);
        consumer_count_records(a, c);
        goto done;
    }
    uint64_t t0 = agent_mono_ns();
    if (consumer_near_cap(a)) {
        /* keep the map's last bytes for health rows, losses and the final
         * status: without them the refusal itself would be invisible */
        rc = CUPSTORE_EFULL;
        goto refused;
    }
    /* the same on the disk: a full disk must leave room for them too
     * (bound: the batch uncompressed, plus its new names and B-tree pages) */
    if (!agent_reserve_room(a, (uint64_t)c->n * sizeof(cupstore_record) + ((uint64_t)64 << 10),
                            AGENT_RESERVE_KEEP)) {
        rc = ENOSPC;
        goto refused;
    }
    rc = agent_store_put(a, put_batch, c, AGENT_PUT_BATCH_TRIES);
refused:
    agent_hist_add(&a->commit_lat, agent_mono_ns() - t0);
    if (rc == 0) {
        agent_count(a, C_RECORDS_STORED, c->n);
        consumer_count_records(a, c);
        agent_names_batch_end(&c->names, true);
    } else {
        agent_count(a, C_STORE_REFUSED, 1);
        for (unsigned d = 0; d < AGENT_DEVS; d++)
            for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
                if (c->counts[d][k])
                    agent_count(a, agent_c_loss(CUPSTORE_LOSS_STORE_REFUSED, d, k), c->counts[d][k]);
        agent_names_batch_end(&c->names, false);
        if (!c->refused_noted) {
            c->refused_noted = true;
            agent_note(a, 2, "store refused a batch of %u records: %s (counted as store_refused)",
                       c->n, cupstore_strerror(rc));
        }
    }
done:
    agent_hist_add(&a->batch_size, c->n);
    agent_ranges_batch_end(&c->ranges);
    c->n = 0;
    memset(c->counts, 0, sizeof c->counts);
}

/* CUPTI's name of an API callback id (first use of each cbid only).  A
 * cbid CUPTI cannot name stays "cbid N" in every output; the first few are
 * noted so the reason is on record. */
static const char *consumer_api_name(unsigned domain, uint32_t cbid, void *arg)
{
    agent *a = arg;
    const char *name = NULL;
    CUptiResult r = CUPTI_ERROR_NOT_SUPPORTED;
    if (a->cupti.GetCallbackName)
        r = a->cupti.GetCallbackName(domain == AGENT_API_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API
                                                                 : CUPTI_CB_DOMAIN_DRIVER_API,
                                     cbid, &name);
    if (r == CUPTI_SUCCESS && name && name[0])
        return name;
    if (a->consumer.work.unnamed_noted++ < 8)
        agent_note(a, 0, "CUPTI names no %s API cbid %u (%s): shown as \"cbid %u\"",
                   domain == AGENT_API_RUNTIME ? "runtime" : "driver", cbid,
                   a->cupti.GetCallbackName ? agent_cupti_strerror(&a->cupti, r)
                                            : "no cuptiGetCallbackName",
                   cbid);
    return NULL;
}

/* A MARKER record's range row update (its domain interned here). */
static void consumer_range(agent_consumer_work *c, const CUpti_ActivityMarker2 *m,
                           const cupstore_record *r)
{
    uint32_t dom = 0;
    if (!c->ranges.pend)
        return;   /* no memory for ranges at start: records only */
    if (m->domain && m->domain[0] && !(m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END))
        dom = agent_names_intern(&c->names, m->domain, SIZE_MAX);
    (void)agent_ranges_add(&c->ranges, m, r, r->name_id, dom);
}

/* Parse one buffer into the batch; publish its counts once at the end.
 * Told to abandon at a full batch, the rest of the buffer is counted as
 * tail here (exactly, by kind and device) instead of being committed. */
static void consumer_parse(agent *a, const agent_qitem *it)
{
    agent_consumer_work *c = &a->consumer.work;
    CUpti_Activity *rec = NULL;
    uint64_t zero[AGENT_DEVS][CUPSTORE_KIND_MAX];
    uint64_t tail[AGENT_DEVS][CUPSTORE_KIND_MAX];
    uint64_t ovh[CUPSTORE_OVERHEAD_MAX] = {0}, parsed = 0, errors = 0;
    bool to_tail = false;
    const char *name;

    memset(zero, 0, sizeof zero);
    memset(tail, 0, sizeof tail);
    for (;;) {
        CUpti_Activity *prev = rec;
        CUptiResult st = a->cupti.ActivityGetNextRecord(it->buf, it->valid, &rec);
        if (st == CUPTI_ERROR_MAX_LIMIT_REACHED)
            break;
        if (st != CUPTI_SUCCESS) {
            /* A record CUPTI cannot describe: count it; continue only when
             * the iterator moved past it, else the rest of the buffer
             * cannot be walked safely. */
            errors++;
            if (rec == prev || errors > 1000000)
                break;
            continue;
        }
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONTEXT || rec->kind == CUPTI_ACTIVITY_KIND_DEVICE) {
            /* resource records (EnableAndDump at an attach, or a context
             * created since), not activity: CONTEXT records map contexts to
             * devices (contextId and deviceId sit at the same offsets in
             * every version of the record); DEVICE records are provenance,
             * stored as "device.N". Neither is counted as a record (the
             * simulator's truth has neither). */
            if (rec->kind == CUPTI_ACTIVITY_KIND_CONTEXT) {
                const CUpti_ActivityContext3 *cx = (const CUpti_ActivityContext3 *)rec;
                agent_ctx_dumped(a, cx->contextId, cx->deviceId);
            } else if (!to_tail) {
                agent_prov_device(a, rec);
            }
            continue;
        }
        if (c->n == AGENT_BATCH_MAX && !to_tail) {
            if (!atomic_load_explicit(&a->consumer.abandon, memory_order_acquire))
                consumer_commit(a);
            if (c->n == AGENT_BATCH_MAX) {
                /* abandoned (before or during that commit, which then did
                 * not start): the rest of this buffer is tail loss */
                to_tail = true;
            }
            if (atomic_load_explicit(&a->consumer.state, memory_order_acquire) == AGENT_CONS_ORPHANED)
                break;   /* the stop wrote its final status without us */
        }
        cupstore_record tmp, *r = to_tail ? &tmp : &c->batch[c->n];
        agent_norm_record(rec, r, &name, agent_ctx_device, a);
        unsigned d = agent_dev_slot(r->device);
        if (to_tail) {
            tail[d][r->kind]++;
        } else {
            if (name)
                r->name_id = agent_names_intern(&c->names, name, SIZE_MAX);
            if (rec->kind == CUPTI_ACTIVITY_KIND_MARKER)
                consumer_range(c, (const CUpti_ActivityMarker2 *)rec, r);
            else if (rec->kind == CUPTI_ACTIVITY_KIND_MARKER_DATA && c->ranges.pend)
                (void)agent_ranges_add_data(&c->ranges, (const CUpti_ActivityMarkerData2 *)rec);
            else if (r->kind == CUPSTORE_KIND_RUNTIME || r->kind == CUPSTORE_KIND_DRIVER)
                r->name_id = agent_names_api(&c->names,
                                             r->kind == CUPSTORE_KIND_RUNTIME ? AGENT_API_RUNTIME
                                                                              : AGENT_API_DRIVER,
                                             r->cbid, consumer_api_name, a);
            if (!(r->flags & CUPSTORE_RF_ZERO_TS))   /* (those are counted lost) */
                agent_launches_arrive(a, r);
            if (c->n++ == 0)
                c->first_mono = agent_mono_ns();
            c->counts[d][r->kind]++;
        }
        if (r->flags & CUPSTORE_RF_ZERO_TS)
            zero[d][r->kind]++;
        if (r->kind == CUPSTORE_KIND_OVERHEAD)
            ovh[r->aux % CUPSTORE_OVERHEAD_MAX]++;
        parsed++;
    }
    agent_note_fill(a, it->size, it->valid, parsed + errors);
    for (unsigned d = 0; d < AGENT_DEVS; d++)
        for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++) {
            if (zero[d][k])
                agent_count(a, agent_c_loss(CUPSTORE_LOSS_ZERO_TS, d, k), zero[d][k]);
            if (tail[d][k])
                agent_count(a, agent_c_loss(CUPSTORE_LOSS_TAIL, d, k), tail[d][k]);
        }
    for (unsigned i = 0; i < CUPSTORE_OVERHEAD_MAX; i++)
        if (ovh[i])
            agent_count(a, C_OVH + i, ovh[i]);
    if (errors) {
        agent_count(a, agent_c_loss(CUPSTORE_LOSS_PARSE_ERROR, AGENT_DEV_NONE, AGENT_KIND_ALL), errors);
        atomic_fetch_or(&a->flags_seen, AGENT_SEEN_PARSE_ERROR);
    }
    agent_count(a, C_RECORDS_PARSED, parsed);
}

/* Consumer: IDLE -> BUSY for a step; false when the stop path has taken
 * the work over (TAKEN) - then nothing may be touched. */
static bool consumer_enter(agent *a)
{
    int s = AGENT_CONS_IDLE;
    return atomic_compare_exchange_strong(&a->consumer.state, &s, AGENT_CONS_BUSY);
}

/* Consumer: end a step in state `to` (IDLE, or DONE); false when the stop
 * path gave up on the step (ORPHANED) - then exit without touching more. */
static bool consumer_leave(agent *a, int to)
{
    int s = AGENT_CONS_BUSY;
    return atomic_compare_exchange_strong(&a->consumer.state, &s, to);
}

static bool consumer_batch_due(agent *a)
{
    return a->consumer.work.n && agent_mono_ns() - a->consumer.work.first_mono >= AGENT_BATCH_NS;
}

/* At the end: the marker kind was on but no NVTX call was routed to the
 * agent and no marker record came: say exactly what to set (never a
 * silent 0 markers). */
static void consumer_nvtx_note(agent *a)
{
    uint32_t m = 1u << CUPSTORE_KIND_MARKER;
    uint32_t on = a->cfg.kinds | (uint32_t)atomic_load(&a->kinds) | agent_epoch_kinds(a);
    if (!(on & m) || a->consumer.work.ranges.seen || agent_nvtx_inits())
        return;
    const char *p = getenv("NVTX_INJECTION64_PATH");
    agent_note(a, 1,
               "marker kind on, but no NVTX call reached CUPTI: set NVTX_INJECTION64_PATH to "
               "libcuptop-agent.so (cuptop run does) before the program's first NVTX call%s%.80s",
               p ? "; it is " : " (it is unset)", p ? p : "");
}

/* At the end: NVTX ranges CUPTI never saw open that are still open (the
 * agent cannot close them), pops with no push open, ranges the agent could
 * not keep: counted and named, never silent. */
static void consumer_unseen_note(agent *a)
{
    long open;
    unsigned long unbalanced, lost;
    char first[64];
    agent_nvtx_unseen(&open, &unbalanced, &lost, first, sizeof first);
    if (open > 0)
        agent_note(a, 1, "%ld NVTX range(s) pushed before CUPTI was attached (before CUDA, an "
                   "attach or while dormant) were still open at the end: not in the range "
                   "table (the first push CUPTI never saw: \"%.60s\")", open, first);
    if (unbalanced)
        agent_note(a, 1, "%lu NVTX pop(s) on a thread with no range open (unbalanced ends)",
                   unbalanced);
    if (lost)
        agent_note(a, 1, "%lu NVTX range(s) opened before CUPTI was attached were closed but "
                   "not stored (more than 256 waiting at once)", lost);
}

static void *consumer_main(void *arg)
{
    agent *a = arg;
    agent_qitem it;

    agent_thread_enter();
    for (;;) {
        if (atomic_load_explicit(&a->consumer.abandon, memory_order_acquire)) {
            /* stop gave up waiting: hand it the batch and the queue */
            int s = AGENT_CONS_IDLE;
            (void)atomic_compare_exchange_strong(&a->consumer.state, &s, AGENT_CONS_YIELDED);
            return NULL;
        }
        if (!consumer_enter(a))
            return NULL;   /* taken over between steps */
        bool got = agent_queue_pop(&a->queue, &it);
        bool quit = !got && atomic_load_explicit(&a->consumer.quit, memory_order_acquire);
        if (got) {
            atomic_store_explicit(&a->consumer.busy, 1, memory_order_relaxed);
            if (it.valid)   /* an empty one (a flush, a teardown): no CUPTI call */
                consumer_parse(a, &it);
            agent_pool_put(&a->pool, (int)it.slot);
            agent_count(a, C_BUF_CONSUMED, 1);
            atomic_store_explicit(&a->consumer.busy, 0, memory_order_release);
        }
        agent_launches_tick(a);   /* the ledger's pending, once a second */
        /* agent_drain(commit) asked for the batch once the queue is empty */
        uint64_t req = atomic_load_explicit(&a->consumer.commit_req, memory_order_acquire);
        bool asked = !got && req != atomic_load_explicit(&a->consumer.commit_done, memory_order_relaxed);
        if (quit || asked || consumer_batch_due(a))
            consumer_commit(a);   /* no-op once told to abandon */
        if (asked)
            atomic_store_explicit(&a->consumer.commit_done, req, memory_order_release);
        if (quit && !atomic_load_explicit(&a->consumer.abandon, memory_order_acquire)) {
            if (a->consumer.work.ranges.unbalanced)
                agent_note(a, 1,
                           "%llu NVTX range end(s) (pop or end) matched no open range of the "
                           "session: stored as unbalanced (cuptop ranges counts them)",
                           (unsigned long long)a->consumer.work.ranges.unbalanced);
            consumer_nvtx_note(a);
            consumer_unseen_note(a);
            (void)consumer_leave(a, AGENT_CONS_DONE);
            return NULL;
        }
        if (!consumer_leave(a, AGENT_CONS_IDLE))
            return NULL;   /* orphaned: the stop path did not wait for us */
        if (!got && !quit)   /* short: a single completed buffer does not wake us */
            agent_queue_wait(&a->queue, a->consumer.work.n ? 5000000u : 10000000u);
    }
}

int agent_consumer_start(agent *a)
{
    agent_consumer_work *c = &a->consumer.work;
    if (a->consumer.orphaned)
        return EBUSY;   /* a consumer left in a commit still owns its work */
    if (!c->batch) {
        c->batch = malloc(AGENT_BATCH_MAX * sizeof *c->batch);
        if (!c->batch || agent_names_init(&c->names))
            return ENOMEM;
    } else {
        /* a new session: the old one's names are not in the new store */
        agent_names_free(&c->names);
        if (agent_names_init(&c->names))
            return ENOMEM;
    }
    agent_ranges_free(&c->ranges);
    if (agent_ranges_init(&c->ranges, AGENT_BATCH_MAX))
        agent_note(a, 1, "no memory for the NVTX range table: marker records only");
    c->n = 0;
    c->refused_noted = false;
    c->unnamed_noted = 0;
    memset(c->counts, 0, sizeof c->counts);
    atomic_store(&a->consumer.quit, 0);
    atomic_store(&a->consumer.abandon, 0);
    atomic_store(&a->consumer.state, AGENT_CONS_IDLE);
    int rc = pthread_create(&a->consumer.th, NULL, consumer_main, a);
    a->consumer.up = rc == 0;
    return rc;
}

static int consumer_join(agent *a, uint32_t timeout_ms)
{
    struct timespec ts;
    agent_deadline(&ts, timeout_ms);
    int rc = pthread_timedjoin_np(a->consumer.th, NULL, &ts);
    if (rc == 0)
        a->consumer.up = false;
    return rc;
}

int agent_consumer_stop(agent *a, uint32_t timeout_ms)
{
    agent_consumer_work *c = &a->consumer.work;
    int rc = ETIMEDOUT;

    if (!a->consumer.up)
        return 0;
    atomic_store(&a->consumer.abandon, 0);
    atomic_store_explicit(&a->consumer.quit, 1, memory_order_release);
    agent_queue_kick(&a->queue);
    if (consumer_join(a, timeout_ms) == 0)
        return 0;   /* DONE: its batch is stored (or counted refused) */
    atomic_store_explicit(&a->consumer.abandon, 1, memory_order_release);
    agent_queue_kick(&a->queue);
    /* Wait for it to yield at a boundary, or take its work over between
     * two steps.  A step in progress (a commit on a slow disk) gets the
     * grace period: the final status needs the store's write lock that the
     * commit holds anyway.  Past it, the step is orphaned. */
    uint32_t grace = timeout_ms > AGENT_STOP_GRACE_MS ? timeout_ms : AGENT_STOP_GRACE_MS;
    uint64_t deadline = agent_mono_ns() + (uint64_t)grace * 1000000u;
    for (;;) {
        int s = atomic_load_explicit(&a->consumer.state, memory_order_acquire);
        if (s == AGENT_CONS_DONE) {
            rc = 0;   /* it finished after all */
            break;
        }
        if (s == AGENT_CONS_YIELDED)
            break;
        if (s == AGENT_CONS_IDLE &&
            atomic_compare_exchange_strong(&a->consumer.state, &s, AGENT_CONS_TAKEN))
            break;
        if (s == AGENT_CONS_BUSY && agent_mono_ns() >= deadline &&
            atomic_compare_exchange_strong(&a->consumer.state, &s, AGENT_CONS_ORPHANED)) {
            /* its batch and the buffer it parses are lost uncounted, or
             * stored after the final status: the caller notes it */
            pthread_detach(a->consumer.th);
            a->consumer.up = false;
            a->consumer.orphaned = true;   /* it still uses its work */
            return EBUSY;
        }
        agent_queue_kick(&a->queue);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    /* YIELDED, TAKEN or DONE: the thread touches nothing any more and
     * exits at once (TAKEN: at most its 10 ms queue wait). */
    pthread_join(a->consumer.th, NULL);
    a->consumer.up = false;
    /* its unstored batch is tail loss, by its own per-kind, per-device
     * counts (records it counted as tail itself are not in the batch) */
    for (unsigned d = 0; d < AGENT_DEVS; d++)
        for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
            if (c->counts[d][k])
                agent_count(a, agent_c_loss(CUPSTORE_LOSS_TAIL, d, k), c->counts[d][k]);
    c->n = 0;
    agent_ranges_batch_end(&c->ranges);   /* the batch's range rows go with it */
    memset(c->counts, 0, sizeof c->counts);
    return rc;
}

/* Wait until the queue is empty and the consumer holds no buffer (the stop
 * protocol's step 3, which commits in its step 4); with commit, also until
 * the consumer has stored its batch (a detach before it acknowledges,
 * agent_control.c: a reader after the acknowledgement sees every record). */
int agent_drain(agent *a, uint32_t timeout_ms, bool commit)
{
    uint64_t deadline = agent_mono_ns() + (uint64_t)timeout_ms * 1000000u;
    uint64_t want = commit ? atomic_fetch_add(&a->consumer.commit_req, 1) + 1 : 0;
    while (agent_queue_depth(&a->queue) ||
           atomic_load_explicit(&a->cb_inflight, memory_order_acquire) ||
           atomic_load_explicit(&a->consumer.busy, memory_order_acquire) ||
           atomic_load_explicit(&a->consumer.commit_done, memory_order_acquire) < want) {
        if (agent_mono_ns() >= deadline)
            return ETIMEDOUT;
        agent_queue_kick(&a->queue);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

void agent_consumer_forked(agent *a)
{
    a->consumer.up = false;
    a->consumer.orphaned = false;   /* no orphan thread here: the work is free */
}
