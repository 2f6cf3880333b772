/*
 * agent_main.c - the entry point (InitializeInjection), session start, and
 * the two CUPTI buffer callbacks: the only agent code that runs on the
 * application's and CUPTI's threads.  Callbacks: bounds check, count,
 * O(1) enqueue, return.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent_int.h"
#include "agent_norm.h"

agent agent_g = {
    .ctx_lock = PTHREAD_MUTEX_INITIALIZER,
    .health = AGENT_HEALTH_INIT,
    .stop = AGENT_STOP_INIT,
    .scope = AGENT_SCOPE_INIT,
    .window = AGENT_WINDOW_INIT,
    .reserve = {.fd = -1, .aside_fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER},
    .launches = {.graphs = {.lock = PTHREAD_MUTEX_INITIALIZER}},
};

/* Buffer requests this thread made, counted to 2: a thread is counted in
 * threads_seen (the pool's auto size, meta "threads") at its second
 * request, so a one-off request (the DEVICE/CONTEXT dump at an attach,
 * delivered at once) does not count as a thread that holds a buffer.
 * initial-exec TLS, see agent_stop.c. */
static _Thread_local uint8_t agent_tls_requests __attribute__((tls_model("initial-exec")));

uint64_t agent_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t agent_real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* stderr only when CUPTOP_LOG asks (level <= log) or stderr is a terminal
 * (warnings only); never stdout. */
void agent_log(agent *a, int level, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    if (!(a->cfg.log >= level || (level <= 1 && isatty(STDERR_FILENO))))
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "cuptop-agent[%d]: %s\n", (int)getpid(), line);
}

void agent_deadline(struct timespec *ts, uint32_t ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

struct put_arg {
    int (*fn)(cupstore_txn *, void *);
    void *arg;
    unsigned tries;
};

/* Inside the write transaction (LMDB's writer lock held): marked for the
 * descriptor hold's lock-order check (agent_fd.h). */
static int put_marked(cupstore_txn *txn, void *arg)
{
    struct put_arg *p = arg;
    agent_fd_write_enter();
    int rc = p->fn(txn, p->arg);
    agent_fd_write_leave();
    return rc;
}

static int put_guarded(agent *a, void *arg)
{
    struct put_arg *p = arg;
    return cupstore_write(a->env, put_marked, p, p->tries);
}

/* Every write of the agent: one retry policy (cupstore_write), under the
 * SIGBUS guard (agent_guard.h): a store whose mapping faults ends its
 * storing (CUPSTORE_EFAULT), never the application. */
int agent_store_put(agent *a, int (*fn)(cupstore_txn *, void *), void *arg, unsigned tries)
{
    struct put_arg p = {fn, arg, tries};
    int rc = agent_guard_run(a, put_guarded, &p);
    agent_fd_write_leave();   /* a fault that jumped out of put_marked */
    return rc;
}

static int put_note(cupstore_txn *txn, void *arg)
{
    return cupstore_note_put(txn, arg);
}

void agent_note(agent *a, uint32_t level, const char *fmt, ...)
{
    cupstore_note n = {.time_ns = agent_real_ns(), .level = level};
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(n.text, sizeof n.text, fmt, ap);
    va_end(ap);
    agent_log(a, level >= 1 ? 1 : 2, "%s", n.text);
    if (!a->env || a->session_pid != getpid())
        return;
    (void)agent_store_put(a, put_note, &n, AGENT_PUT_NOTE_TRIES);
}

uint16_t agent_ctx_lookup(agent *a, uint32_t ctx_id, bool *handle)
{
    uint16_t dev = CUPSTORE_DEVICE_NONE;
    bool h = false;
    pthread_mutex_lock(&a->ctx_lock);
    for (int i = 0; i < AGENT_CTX_MAX; i++)
        if ((a->ctx[i].cu || a->ctx[i].live) && a->ctx[i].id == ctx_id) {
            dev = a->ctx[i].device;
            h = a->ctx[i].cu != NULL;
            break;
        }
    pthread_mutex_unlock(&a->ctx_lock);
    if (handle)
        *handle = h;
    return dev;
}

uint16_t agent_ctx_device(uint32_t ctx_id, void *arg)
{
    return agent_ctx_lookup(arg, ctx_id, NULL);
}

uint64_t agent_count_lost(agent *a, uint8_t *buf, size_t valid, unsigned loss)
{
    CUpti_Activity *rec = NULL;
    uint64_t n = 0;
    cupstore_record r;
    const char *name;

    if (!buf || !a->cupti.ActivityGetNextRecord)
        return 0;
    for (;;) {
        CUpti_Activity *prev = rec;
        CUptiResult st = a->cupti.ActivityGetNextRecord(buf, valid, &rec);
        if (st == CUPTI_ERROR_MAX_LIMIT_REACHED)
            break;
        if (st != CUPTI_SUCCESS) {
            /* A record CUPTI cannot describe, lost with the buffer: a
             * parse error of no known kind or device, as the consumer
             * counts it.  Walk on when the iterator moved past it (the
             * consumer's rule), else the rest cannot be walked safely. */
            agent_count(a, agent_c_loss(CUPSTORE_LOSS_PARSE_ERROR, AGENT_DEV_NONE, AGENT_KIND_ALL), 1);
            atomic_fetch_or(&a->flags_seen, AGENT_SEEN_PARSE_ERROR);
            n++;
            if (rec == prev || n > 1000000)
                break;
            continue;
        }
        /* Device is only known from the record itself here: the context
         * map takes a lock, which a callback must not wait on for long. */
        if (rec->kind == CUPTI_ACTIVITY_KIND_DEVICE || rec->kind == CUPTI_ACTIVITY_KIND_CONTEXT)
            continue;   /* resource records, no activity: never a loss
                           (the consumer does not count them either) */
        agent_norm_record(rec, &r, &name, NULL, NULL);
        agent_count(a, agent_c_loss(loss, agent_dev_slot(r.device), r.kind), 1);
        n++;
    }
    return n;
}

void agent_note_fill(agent *a, size_t size, size_t valid, uint64_t n)
{
    (void)size;
    /* every non-empty one, the partial buffers of a flush too: a buffer
     * CUPTI kept may be as empty as the emptiest it returned */
    if (!n || !valid)
        return;
    uint32_t r = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
    uint32_t cur = atomic_load_explicit(&a->fill_min, memory_order_relaxed);
    while ((cur == 0 || r < cur) &&
           !atomic_compare_exchange_weak_explicit(&a->fill_min, &cur, r, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

uint64_t agent_held_records(agent *a)
{
    /* half: buffers of one session vary (a periodic flush cuts them at
     * any fill), and the emptiest returned is only a sample's minimum;
     * the margin keeps the bound below the truth (test_unreturned.sh) */
    uint32_t m = atomic_load_explicit(&a->fill_min, memory_order_relaxed) / 2;
    return m ? m : 1;
}

/* Buffers handed to CUPTI that have not come back (invariant 12), and a
 * lower bound on the records in them.  Each is taken to hold at least
 * half as many records as the emptiest non-empty buffer CUPTI returned in
 * the session, the partial ones of a flush included (1 when none came
 * back): a bound as good as that assumption, and said to be one.  A flush that returned gave back every buffer holding a record,
 * so each one still out was taken (flush_ok: all of them count).  A flush
 * that gave up leaves the last buffer of each thread for each context
 * (and for records of no context) possibly empty: those count as none. */
uint64_t agent_unreturned(agent *a, bool flush_ok, uint64_t *bound)
{
    uint64_t own = a->pool_ready ? atomic_load(&a->pool.outstanding) : 0;
    uint64_t disc = a->discard.slots ? atomic_load(&a->discard.outstanding) : 0;
    uint64_t so = atomic_load(&a->c[C_SHARED_OUT]), sc = atomic_load(&a->c[C_SHARED_BUFS]);
    uint64_t n = own + disc > a->out_base ? own + disc - a->out_base : 0;
    n += so > sc ? so - sc : 0;
    uint64_t threads = atomic_load(&a->c[C_REQ_THREADS]);
    uint64_t seen = atomic_load(&a->threads_seen);
    if (seen > threads)   /* threads that requested in an earlier session */
        threads = seen;
    uint64_t ctxs = (uint64_t)__builtin_popcount(atomic_load(&a->device_mask));
    uint64_t partial = flush_ok ? 0 : (threads ? threads : 1) * ((ctxs ? ctxs : 1) + 1);
    *bound = n > partial ? (n - partial) * agent_held_records(a) : 0;
    return n;
}

/* ---- CUPTI buffer callbacks ------------------------------------------- */

/* A discard buffer for API < 27 (a NULL there breaks CUPTI): one of a
 * small pool, so concurrent requesters never share one and its records
 * can be counted as DECLINED when it completes.  When that pool is out
 * too, a shared last-resort buffer: several threads may hold it at once,
 * so CUPTI writes it while it completes and it is never read (its records
 * are estimated from its bytes, agent_health.c). */
static uint8_t *agent_discard_get(agent *a, size_t *size)
{
    uint8_t *b = NULL;
    *size = AGENT_DISCARD_SIZE;
    if (a->discard.slots && agent_pool_get(&a->discard, &b) >= 0)
        return b;
    agent_count(a, C_SHARED_OUT, 1);
    return a->discard_last;
}

int agent_session_start(agent *a);

void CUPTIAPI agent_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    agent *a = &agent_g;
    uint64_t t0 = agent_mono_ns();
    int slot = -1;
    uint8_t *buf = NULL;

    *max_records = 0;
    if (atomic_load_explicit(&a->state, memory_order_acquire) == AGENT_CHILD)
        (void)agent_session_start(a);   /* forked child: a session of its own */
    agent_count(a, C_BUF_REQUESTED, 1);
    if (agent_tls_requests == 0)
        agent_count(a, C_REQ_THREADS, 1);
    if (agent_tls_requests < 2 && ++agent_tls_requests == 2) {
        uint32_t t = atomic_fetch_add_explicit(&a->threads_seen, 1, memory_order_relaxed) + 1;
        if (!a->cfg.pool_explicit && a->pool_ready &&
            !atomic_load_explicit(&a->pool_pinned, memory_order_relaxed)) {
            uint32_t want = AGENT_DEFAULT_POOL_MIN + 2 * t;
            if (want > atomic_load_explicit(&a->pool.limit, memory_order_relaxed))
                agent_pool_set_limit(&a->pool, want);
        }
    }
    if (a->pool_ready && atomic_load_explicit(&a->state, memory_order_acquire) == AGENT_RUNNING)
        slot = agent_pool_get(&a->pool, &buf);
    if (slot >= 0) {
        agent_count(a, C_BUF_PROVIDED, 1);
        *buffer = buf;
        *size = a->pool.buf_size;
    } else {
        agent_count(a, C_BUF_DECLINED, 1);
        atomic_fetch_or_explicit(&a->flags_seen, AGENT_SEEN_DECLINED, memory_order_relaxed);
        if (a->use_discard && a->discard_last) {
            *buffer = agent_discard_get(a, size);
        } else {
            *buffer = NULL;
            *size = 0;
        }
    }
    agent_hist_add(&a->req_lat, agent_mono_ns() - t0);
}

void CUPTIAPI agent_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                     size_t size, size_t valid)
{
    agent *a = &agent_g;
    uint64_t t0 = agent_mono_ns();
    (void)ctx;
    (void)stream;

    if (!buffer)
        return;
    if (atomic_load_explicit(&a->state, memory_order_acquire) == AGENT_CHILD)
        (void)agent_session_start(a);   /* forked child: a session of its own */
    /* seq_cst with the stop's store of STOPPED: either this call sees it,
     * or the stop waits for this call before walking the queue */
    atomic_fetch_add(&a->cb_inflight, 1);
    int dslot = a->discard.slots ? agent_pool_find(&a->discard, buffer) : -1;
    if (dslot >= 0 || (a->discard_last && buffer == a->discard_last)) {
        /* API < 27: records CUPTI wrote into a declined (discard) buffer */
        size_t n = valid > AGENT_DISCARD_SIZE ? AGENT_DISCARD_SIZE : valid;
        agent_count(a, C_BUF_COMPLETED, 1);
        agent_count(a, C_BYTES, valid);
        if (dslot >= 0) {
            /* ours alone until now: its records are whole, count them */
            uint64_t nrec = agent_count_lost(a, buffer, n, CUPSTORE_LOSS_DECLINED);
            agent_count(a, C_DISCARD_BYTES, n);
            agent_count(a, C_DISCARD_RECORDS, nrec);
            agent_note_fill(a, AGENT_DISCARD_SIZE, n, nrec);
        } else {
            /* the shared one: other threads may be writing it right now,
             * so its bytes are no records (a half-written one reads as a
             * phantom device or kind): never parsed, only its size kept */
            atomic_fetch_or_explicit(&a->flags_seen, AGENT_SEEN_SHARED_DISCARD,
                                     memory_order_relaxed);
            agent_count(a, C_SHARED_BUFS, 1);
            agent_count(a, C_SHARED_BYTES, n);
        }
        agent_count(a, C_BUF_CONSUMED, 1);
        if (dslot >= 0)
            agent_pool_put(&a->discard, dslot);
        goto out;
    }
    int slot = a->pool_ready ? agent_pool_find(&a->pool, buffer) : -1;
    if (slot < 0) {
        /* Another CUPTI client's buffer: count its records as a conflict;
         * never free or reuse it (it is not ours).  Counted in buf_foreign
         * only, not in buf_completed: completed/consumed (and the bytes)
         * are about the agent's own buffers. */
        agent_count(a, C_BUF_FOREIGN, 1);
        atomic_fetch_or_explicit(&a->flags_seen, AGENT_SEEN_FOREIGN, memory_order_relaxed);
        uint64_t n = agent_count_lost(a, buffer, valid, CUPSTORE_LOSS_CONFLICT);
        if (n == 0)
            agent_count(a, agent_c_loss(CUPSTORE_LOSS_CONFLICT, AGENT_DEV_NONE, AGENT_KIND_ALL), 1);
        goto out;
    }
    if (!agent_pool_complete(&a->pool, slot)) {
        /* Completed twice (or never handed out by this pool's state): the
         * content belongs to the first completion; count the anomaly (in
         * buf_foreign, not again in buf_completed). */
        agent_count(a, C_BUF_DUPLICATE, 1);
        atomic_fetch_or_explicit(&a->flags_seen, AGENT_SEEN_DUPLICATE, memory_order_relaxed);
        agent_count(a, agent_c_loss(CUPSTORE_LOSS_CONFLICT, AGENT_DEV_NONE, AGENT_KIND_ALL), 1);
        goto out;
    }
    agent_count(a, C_BUF_COMPLETED, 1);
    agent_count(a, C_BYTES, valid);
    if (valid > a->pool.buf_size)
        valid = a->pool.buf_size;   /* bounds check: never read past ours */
    int st = atomic_load(&a->state);
    if (st != AGENT_RUNNING && st != AGENT_STOPPING) {
        /* no consumer any more: the records are tail loss */
        agent_count_lost(a, buffer, valid, CUPSTORE_LOSS_TAIL);
        agent_count(a, C_BUF_CONSUMED, 1);
        agent_pool_put(&a->pool, slot);
        goto out;
    }
    agent_qitem it = {.buf = buffer, .size = size, .valid = valid, .slot = (uint32_t)slot,
                      .mono_ns = t0};
    if (!agent_queue_push(&a->queue, &it)) {
        /* Queue full: app-side loss, counted exactly by walking this one
         * buffer (the overflow path only), then the buffer is recycled. */
        atomic_fetch_or_explicit(&a->flags_seen, AGENT_SEEN_OVERFLOW, memory_order_relaxed);
        agent_note_fill(a, a->pool.buf_size, valid,
                        agent_count_lost(a, buffer, valid, CUPSTORE_LOSS_QUEUE_OVERFLOW));
        agent_count(a, C_BUF_CONSUMED, 1);
        agent_pool_put(&a->pool, slot);
    }
out:
    atomic_fetch_sub_explicit(&a->cb_inflight, 1, memory_order_release);
    agent_hist_add(&a->cmp_lat, agent_mono_ns() - t0);
}

/* ---- Resource callbacks: contexts -> devices, last-context stop -------- */

static void agent_ctx_created(agent *a, CUcontext cu)
{
    uint32_t id = 0, dev = UINT32_MAX;
    if (a->cupti.GetContextId)
        (void)a->cupti.GetContextId(cu, &id);
    if (a->cupti.GetDeviceId)
        (void)a->cupti.GetDeviceId(cu, &dev);
    uint16_t d = agent_norm_device(dev);
    pthread_mutex_lock(&a->ctx_lock);
    for (int i = 0; i < AGENT_CTX_MAX; i++)
        if (!a->ctx[i].cu && !a->ctx[i].live) {
            a->ctx[i] = (agent_ctx){.cu = cu, .id = id, .device = d, .live = true};
            break;
        }
    pthread_mutex_unlock(&a->ctx_lock);
    if (d != CUPSTORE_DEVICE_NONE)
        atomic_fetch_or(&a->device_mask, 1u << d);
    /* device scope: the new context gets the device kinds now on */
    agent_apply_ctx_kinds(a, cu, d, (uint32_t)atomic_load(&a->kinds));
}

void agent_ctx_dumped(agent *a, uint32_t ctx_id, uint32_t device_id)
{
    uint16_t d = agent_norm_device(device_id);
    pthread_mutex_lock(&a->ctx_lock);
    /* detached (the flag changes under this lock): a record of a past attach */
    bool known = !agent_attached(a);
    for (int i = 0; i < AGENT_CTX_MAX && !known; i++)
        known = (a->ctx[i].cu || a->ctx[i].live) && a->ctx[i].id == ctx_id;
    for (int i = 0; i < AGENT_CTX_MAX && !known; i++)
        if (!a->ctx[i].cu && !a->ctx[i].live) {
            a->ctx[i] = (agent_ctx){.id = ctx_id, .device = d, .live = true, .dumped = true};
            agent_attach_pre_context(a);
            break;
        }
    pthread_mutex_unlock(&a->ctx_lock);
    if (d != CUPSTORE_DEVICE_NONE)
        atomic_fetch_or(&a->device_mask, 1u << d);
}

/* Returns true when the last live context is going away. */
static bool agent_ctx_destroying(agent *a, CUcontext cu)
{
    int live = 0;
    size_t n = 0;
    uint32_t id = 0;
    if (a->cupti.GetContextId)
        (void)a->cupti.GetContextId(cu, &id);
    pthread_mutex_lock(&a->ctx_lock);
    for (int i = 0; i < AGENT_CTX_MAX; i++) {
        if (a->ctx[i].cu == cu || (a->ctx[i].dumped && a->ctx[i].live && id &&
                                   a->ctx[i].id == id)) {
            /* Collect its drop count now: the context will be gone when
             * the health thread next asks. */
            if (a->cupti.ActivityGetNumDroppedRecords &&
                a->cupti.ActivityGetNumDroppedRecords(cu, 0, &n) == CUPTI_SUCCESS)
                a->dropped_at_destroy[agent_dev_slot(a->ctx[i].device)] += n;
            a->ctx[i].cu = NULL;
            a->ctx[i].live = false;
            a->ctx[i].dumped = false;
        } else if (a->ctx[i].cu || a->ctx[i].live) {
            live++;
        }
    }
    pthread_mutex_unlock(&a->ctx_lock);
    return live == 0;
}

void CUPTIAPI agent_resource_cb(void *userdata, CUpti_CallbackDomain domain,
                                CUpti_CallbackId cbid, const void *data)
{
    agent *a = userdata;
    const CUpti_ResourceData *rd = data;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        if (agent_finalize_pending(a)) {
            agent_finalize_at_exit(a, data);   /* the detach's teardown */
            return;
        }
        if (domain == CUPTI_CB_DOMAIN_DRIVER_API && agent_launches_api(a, cbid, data))
            return;   /* the launch ledger's */
        agent_scope_api(a, domain, cbid, data);   /* capture range */
        return;
    }
    if (domain != CUPTI_CB_DOMAIN_RESOURCE || !rd)
        return;
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
        int st = atomic_load(&a->state);
        if (st == AGENT_CHILD || (st == AGENT_STOPPED && agent_stop_exit_path(a) == CUPSTORE_EXIT_CTX_DESTROY))
            (void)agent_session_start(a);   /* new work after a device reset */
        agent_ctx_created(a, rd->context);
    } else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
        if (agent_ctx_destroying(a, rd->context) && atomic_load(&a->state) == AGENT_RUNNING &&
            a->session_pid == getpid())
            agent_stop_run(a, CUPSTORE_EXIT_CTX_DESTROY, 0);
    }
}

/* ---- Session start ----------------------------------------------------- */

static const char *agent_getenv(const char *name, void *arg)
{
    (void)arg;
    return agent_env(name);   /* the environment (or cuptop attach's settings) */
}

static void agent_reset_counters(agent *a)
{
    for (unsigned i = 0; i < C_COUNT; i++)
        atomic_store_explicit(&a->c[i], 0, memory_order_relaxed);
    memset(&a->req_lat, 0, sizeof a->req_lat);
    memset(&a->cmp_lat, 0, sizeof a->cmp_lat);
    memset(&a->commit_lat, 0, sizeof a->commit_lat);
    memset(&a->batch_size, 0, sizeof a->batch_size);
    atomic_store(&a->flags_seen, 0);
    agent_control_reset(a);
    atomic_store(&a->fill_min, 0);
    /* buffers an ended session left with CUPTI are that session's loss:
     * this one counts only what goes out from now on (agent_stop.c) */
    a->out_base = (a->pool_ready ? atomic_load(&a->pool.outstanding) : 0) +
                  (a->discard.slots ? atomic_load(&a->discard.outstanding) : 0);
    memset(a->dropped_at_destroy, 0, sizeof a->dropped_at_destroy);
}

/* Tell `cuptop run` (CUPTOP_RUN_REPORT, a file it created) whether this
 * process got a session: one line, appended in one write ("session ID" or
 * "error WHY"), so cuptop run can say why nothing was traced. */
void agent_run_report(agent *a, const char *fmt, ...)
{
    char line[700];
    va_list ap;
    if (!a->run_report[0])
        return;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    int fd = agent_fd_open(a->run_report, O_WRONLY | O_APPEND | O_NOFOLLOW);
    if (fd < 0)
        return;   /* not ours to create: cuptop run made it */
    if (write(fd, line, (size_t)n) < 0) {
        /* best effort: cuptop run then says it does not know why */
    }
    close(fd);
}

static int agent_open_store(agent *a)
{
    char *dir = NULL;
    /* LMDB opens lock.mdb and data.mdb twice: none of them may land on
     * a 0-2 the application closed (agent_fd.h) */
    agent_fd_hold();
    int rc = cupstore_dir_resolve(a->cfg.store[0] ? a->cfg.store : NULL, &dir);
    if (rc == 0)
        rc = cupstore_dir_prepare(dir);
    if (rc == 0) {
        cupstore_open_opts o = {.map_max = a->cfg.map_max};
        if (a->cfg.map_max && a->cfg.map_max < ((uint64_t)64 << 20))
            o.map_initial = a->cfg.map_max;
        free(a->session_id);
        a->session_id = NULL;
        rc = cupstore_session_create(&a->env, &a->session_id, dir, (int)getpid(), &o);
        if (rc == 0)
            agent_reserve_open(a, dir);
    }
    agent_fd_release();
    if (rc == 0)
        agent_guard_install();   /* before the first write (agent_guard.h) */
    if (rc) {
        agent_log(a, 1, "cannot open the store %s: %s; not tracing", dir ? dir : "(none)",
                  cupstore_strerror(rc));
        agent_run_report(a, "error cannot open the store %s: %s", dir ? dir : "(none)",
                         cupstore_strerror(rc));
    } else {
        agent_run_report(a, "session %s", a->session_id);
    }
    free(dir);
    return rc;
}

static int put_detach(cupstore_txn *txn, void *arg)
{
    return cupstore_final_put(txn, arg);
}

/* Step aside for good: record why, write a final status (DETACH). */
static void agent_detach(agent *a, const char *why)
{
    agent_note(a, 2, "agent disabled: %s", why);
    if (a->env) {
        cupstore_final f = {.end_ns = agent_real_ns(), .exit_path = CUPSTORE_EXIT_DETACH};
        (void)agent_store_put(a, put_detach, &f, AGENT_PUT_TRIES);
        (void)agent_store_sync(a);
    }
    agent_reserve_release(a);
    atomic_store(&a->state, AGENT_OFF);
}

/* Start a session: store, CUPTI, buffers, threads, kinds.  Used by
 * InitializeInjection, by a forked child on its first CUDA use, and after
 * a device reset ended the previous session.  Serialised by stop_lock. */
int agent_session_start(agent *a)
{
    char why[640];

    agent_stop_lock(a);
    int st = atomic_load(&a->state);
    if (st == AGENT_RUNNING || st == AGENT_STOPPING ||
        (st == AGENT_OFF && a->session_pid == getpid() && a->env)) {
        agent_stop_unlock(a);
        return 0;
    }
    agent_reset_counters(a);
    a->cupti_error_rc = 0;
    agent_stop_reset(a);
    if (a->env)             /* an ended session's (threads may linger) */
        a->abandoned_env = a->env;
    a->env = NULL;
    a->session_pid = (int)getpid();
    if (agent_open_store(a)) {
        atomic_store(&a->state, AGENT_OFF);
        agent_stop_unlock(a);
        return -1;
    }
    /* the process first, before CUPTI and before our threads write a
     * health row: a kill at the very start leaves a session whose process
     * can be checked (crashed), not one judged INCOMPLETE for want of a
     * pid (58be4e1); the rest of the metadata comes with the session */
    int prc = agent_health_put_process(a);
    if (prc)
        agent_log(a, 1, "cannot write the process down: %s", cupstore_strerror(prc));
    for (unsigned i = 0; i < a->cfg.nwarn; i++) {
        agent_log(a, 1, "%s", a->cfg.warn[i]);
        agent_note(a, 1, "%s", a->cfg.warn[i]);
    }
    if (!a->pool_ready) {
        /* Room for AGENT_POOL_MAX buffers even with CUPTOP_POOL: a control
         * request may raise the limit at runtime (only bookkeeping is
         * allocated here, ~100 KiB; buffers come as they are needed). */
        uint32_t limit = a->cfg.pool_explicit ? a->cfg.pool : AGENT_DEFAULT_POOL_MIN;
        if (agent_pool_init(&a->pool, a->cfg.buffer_size, limit, AGENT_POOL_MAX)) {
            agent_health_begin_session(a, NULL);
            agent_detach(a, "out of memory for the buffer pool");
            agent_stop_unlock(a);
            return -1;
        }
        a->pool_ready = true;
    }
    agent_queue_free(&a->queue);
    uint32_t qcap = a->cfg.queue ? a->cfg.queue : a->pool.max_slots;
    if (agent_queue_init(&a->queue, qcap)) {
        agent_health_begin_session(a, NULL);
        agent_detach(a, "out of memory for the queue");
        agent_stop_unlock(a);
        return -1;
    }
    agent_launches_start(a);
    /* Lazy attach: CUPTI is loaded and attached only when kinds are to
     * be on; a dormant session makes no CUPTI call at all. */
    uint32_t want = a->cfg.dormant || a->cfg.capture ? 0 : a->cfg.kinds;
    atomic_store(&a->kinds, 0);
    agent_epoch_set_attach(a, false);
    if (a->cfg.capture && !agent_scope_watching(a) && agent_scope_watch(a, why, sizeof why)) {
        agent_health_begin_session(a, why);
        agent_detach(a, why);
        agent_stop_unlock(a);
        return -1;
    }
    /* running before the attach: the DEVICE/CONTEXT dump it asks for
     * requests buffers and completes them at once (queued for the
     * consumer, which starts below) */
    atomic_store(&a->state, AGENT_RUNNING);
    if (want && !agent_attached(a)) {
        if (agent_attach(a, false, why, sizeof why)) {
            agent_health_begin_session(a, why);
            agent_detach(a, why);
            agent_stop_unlock(a);
            return -1;
        }
        agent_epoch_set_attach(a, true);
    }
    if (agent_consumer_start(a) || agent_health_start(a) || agent_window_start(a)) {
        agent_health_begin_session(a, NULL);
        agent_detach(a, "cannot start the agent's threads");
        agent_stop_unlock(a);
        return -1;
    }
    atomic_store(&a->kinds, 0);
    if (!agent_attached(a))
        agent_prov_collect(a);   /* dormant (an attach at the start collects it itself) */
    if (want && agent_apply_kinds(a, want) && atomic_load(&a->kinds) == 0) {
        /* CUPTI refused every kind: it could not start (no privileges,
         * another profiler, a library that does not match the driver).
         * Say so first, with CUPTI's error, and step aside. */
        snprintf(why, sizeof why, "%s", a->kinds_error);
        a->cupti_error_rc = a->kinds_rc;
        agent_health_begin_session(a, why);
        agent_note(a, 2, "CUPTI could not start: %s", why);
        agent_stop_unlock(a);
        agent_stop_run(a, CUPSTORE_EXIT_DETACH, 0);
        return -1;
    }
    a->session_ok = true;
    agent_health_begin_session(a, NULL);
    agent_stop_unlock(a);
    agent_stop_install(a);
    return 0;
}

static int put_skipped(cupstore_txn *txn, void *arg)
{
    return cupstore_meta_put(txn, "skipped", arg);
}

/* --only-if did not match: step aside before touching CUPTI, leaving a
 * session with one note, a "skipped" meta key and a DETACH final status,
 * so a listing shows which processes were skipped and why.  The session
 * keeps the job and rank (a skipped rank is part of its job). */
static void agent_skip(agent *a, const char *why)
{
    a->session_pid = (int)getpid();
    if (agent_open_store(a))
        return;
    agent_prov_identity(a);
    agent_health_begin_session(a, NULL);
    if (a->env)
        (void)agent_store_put(a, put_skipped, (void *)why, AGENT_PUT_TRIES);
    agent_detach(a, why);
}

/** Entry point called by the CUDA driver (CUDA_INJECTION64_PATH) or by
 *  cuptop-simapp.  Returns 1 (the driver ignores the value); on any
 *  failure the agent records why and steps aside. */
__attribute__((visibility("default"))) int InitializeInjection(void);

/* The agent starts once per process: InitializeInjection or an attach
 * (agent_remote.c), whichever comes first. */
static atomic_int agent_once;

bool agent_enter_once(void)
{
    return atomic_exchange(&agent_once, 1) == 0;
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
    agent *a = &agent_g;
    if (!agent_enter_once())
        return 1;
    agent_fd_hold();   /* CUPTOP_CONFIG's file */
    agent_config_load(&a->cfg, agent_getenv, NULL);
    agent_fd_release();
    (void)agent_api_set_policy(a, a->cfg.api_mode, a->cfg.api_include, a->cfg.api_exclude);
    agent_nvtx_setenv();   /* NVTX of libraries not yet initialised (doc/agent.md) */
    const char *rr = getenv("CUPTOP_RUN_REPORT");
    if (rr && rr[0] == '/' && strlen(rr) < sizeof a->run_report)
        memcpy(a->run_report, rr, strlen(rr) + 1);
    char why[256];
    if (agent_config_skip(&a->cfg, agent_getenv, NULL, why, sizeof why)) {
        agent_skip(a, why);   /* before any CUPTI call */
        return 1;
    }
    (void)agent_session_start(a);
    return 1;
}
