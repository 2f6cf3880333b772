/*
 * agentctl.c - small helper for the agent's integration tests and the GPU
 * script: read what the agent stored, and write control requests, through
 * the store API only.
 *
 *   agentctl sessions STORE                    session ids, oldest first
 *   agentctl wait-session STORE N TIMEOUT_S    wait for >= N sessions
 *   agentctl dump STORE [SESSION]              key=value lines (newest session)
 *   agentctl control STORE SESSION KINDS       request kinds; prints the generation
 *   agentctl wait-ack STORE SESSION GEN TIMEOUT_S
 *                                              wait for the ack and a health row
 *                                              carrying it; prints the delay in ms
 *   agentctl wait-final STORE SESSION TIMEOUT_S
 *   agentctl seconds STORE SESSION             one line per health row
 *
 * Exit: 0 ok, 1 timeout / not found, 2 usage or store error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cupstore.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void nap(void)
{
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL);
}

static char *newest(const char *store)
{
    char **ids;
    size_t n;
    if (cupstore_dir_sessions(store, &ids, &n) || n == 0)
        return NULL;
    char *id = strdup(ids[n - 1]);
    cupstore_ids_free(ids, n);
    return id;
}

#define DEVS (CUPSTORE_DEVICE_MAX + 1)
#define KINDS (CUPSTORE_KIND_MAX + 1)

#define STREAMS 128
struct dump {
    uint64_t rec[DEVS][KINDS];
    /* GPU records (kernel, memcpy, memset) per device and stream id below
     * STREAMS (the simulator's: 7..70): the ledger's per-stream check */
    uint64_t rec_stream[DEVS][3][STREAMS];
    uint64_t zero_ts, truncated, total, named;
    uint64_t loss[CUPSTORE_LOSS_MAX][DEVS][KINDS];
    uint64_t est[CUPSTORE_LOSS_MAX][DEVS][KINDS];
    uint64_t rows;
    cupstore_health sum;
    uint32_t max_queue_hw, max_pool_hw;
    uint64_t last_pending;     /* the last health row's ledger pending */
    uint32_t req_p50, req_p99, req_max, cmp_p50, cmp_p99, cmp_max, commit_p99;
    uint64_t last_ctl_applied;
    /* the epochs' spans (the first EPOCHS_MAX), and the records whose start
     * falls in each (periodic windows: nothing outside a window) */
    unsigned nep;
    uint64_t ep_start[64], ep_end[64], ep_rec[64], ep_api[64], ep_ovh[64], rec_outside, api_outside;
    bool ep_collects[64];      /* kinds on, in scope                      */
    uint64_t by_inference;     /* GPU records without a stored launch put
                                  in the epoch that collected before the
                                  one their start falls in (STRADDLE_NS)  */
    /* the API records' (correlation id, start), sorted by id: a GPU record
     * falls in the epoch of its launch's call (the truth of 29.2: exact,
     * each record by its own launch, where the model goes by each epoch's
     * first id); one with no stored launch, by its own start */
    struct launch {
        uint32_t corr;
        uint64_t start_ns;
    } *launch;
    size_t nlaunch, cap_launch;
    uint64_t by_launch;        /* GPU records placed by their launch     */
};
#define EPOCHS_MAX 64

static unsigned dslot(unsigned d)
{
    return d < CUPSTORE_DEVICE_MAX ? d : CUPSTORE_DEVICE_MAX;
}
static unsigned kslot(unsigned k)
{
    return k < CUPSTORE_KIND_MAX ? k : CUPSTORE_KIND_MAX;
}
static const char *dname(unsigned d, char *buf)
{
    if (d == CUPSTORE_DEVICE_MAX)
        return "none";
    sprintf(buf, "%u", d);
    return buf;
}
static const char *kname(unsigned k)
{
    return k == CUPSTORE_KIND_MAX ? "all" : cupstore_kind_name(k);
}

#define LAUNCH_SKEW_NS 1000000ull
#define STRADDLE_NS 1000000000ull

static int on_rec(const cupstore_record *r, void *arg)
{
    struct dump *d = arg;
    d->rec[dslot(r->device)][kslot(r->kind)]++;
    if (r->kind <= CUPSTORE_KIND_MEMSET && r->stream < STREAMS)
        d->rec_stream[dslot(r->device)][r->kind][r->stream]++;
    d->total++;
    if (r->flags & CUPSTORE_RF_ZERO_TS)
        d->zero_ts++;
    if (r->flags & CUPSTORE_RF_TRUNCATED)
        d->truncated++;
    if (r->name_id)
        d->named++;
    uint64_t at = r->start_ns;
    bool gpu = r->kind == CUPSTORE_KIND_KERNEL || r->kind == CUPSTORE_KIND_MEMCPY ||
               r->kind == CUPSTORE_KIND_MEMSET || r->kind == CUPSTORE_KIND_GRAPH;
    if (gpu && r->correlation && d->nlaunch) {
        size_t lo = 0, hi = d->nlaunch;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (d->launch[mid].corr < r->correlation)
                lo = mid + 1;
            else
                hi = mid;
        }
        /* CUPTI gives call ids afresh after a teardown (cuptiFinalize
         * between periodic windows: ids from 1 again in each), so one id
         * may name a call of each attach: the launch is the latest call
         * with it that started by the record's start (1 ms for the clocks'
         * skew), else the first */
        size_t pick = lo;
        for (size_t i = lo; i < d->nlaunch && d->launch[i].corr == r->correlation; i++)
            if (d->launch[i].start_ns <= r->start_ns + LAUNCH_SKEW_NS)
                pick = i;
        if (lo < d->nlaunch && d->launch[pick].corr == r->correlation) {
            at = d->launch[pick].start_ns;
            d->by_launch++;
            gpu = false;   /* placed */
        }
    }
    if (at && !(r->flags & CUPSTORE_RF_ZERO_TS)) {
        unsigned i = 0;
        while (i < d->nep && !(at >= d->ep_start[i] && (!d->ep_end[i] || at < d->ep_end[i])))
            i++;
        if (gpu && (i == d->nep || !d->ep_collects[i])) {
            /* no launch stored (no API kind): GPU work that starts where
             * nothing is collected (a rest between windows, after the end)
             * was launched in the epoch that collected before it, as the
             * model infers; here only where it starts at most STRADDLE_NS
             * after that epoch's end (a kernel that straddled its close) */
            unsigned j = i;
            while (j > 0 && !d->ep_collects[j - 1])
                j--;
            if (j > 0 && d->ep_end[j - 1] && at >= d->ep_end[j - 1] &&
                at - d->ep_end[j - 1] <= STRADDLE_NS) {
                i = j - 1;
                d->by_inference++;
            }
        }
        /* API records start at the CPU call: their epoch is exact, where a
         * GPU record may start after the change that ended its launch's */
        bool api = r->kind == CUPSTORE_KIND_RUNTIME || r->kind == CUPSTORE_KIND_DRIVER;
        if (i < d->nep) {
            d->ep_rec[i]++;
            d->ep_api[i] += api;
            d->ep_ovh[i] += r->kind == CUPSTORE_KIND_OVERHEAD;   /* CUPTI's own */
        } else {
            d->rec_outside++;
            d->api_outside += api;
        }
    }
    return 0;
}

static int on_launch(const cupstore_record *r, void *arg)
{
    struct dump *d = arg;
    if ((r->kind != CUPSTORE_KIND_RUNTIME && r->kind != CUPSTORE_KIND_DRIVER) ||
        !r->correlation || !r->start_ns)
        return 0;
    if (d->nlaunch == d->cap_launch) {
        size_t cap = d->cap_launch ? 2 * d->cap_launch : 4096;
        struct launch *n = realloc(d->launch, cap * sizeof *n);
        if (!n)
            return ENOMEM;
        d->launch = n;
        d->cap_launch = cap;
    }
    d->launch[d->nlaunch++] = (struct launch){r->correlation, r->start_ns};
    return 0;
}

static int cmp_launch(const void *a, const void *b)   /* by id, then start */
{
    const struct launch *x = a, *y = b;
    if (x->corr != y->corr)
        return (x->corr > y->corr) - (x->corr < y->corr);
    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

static int on_epoch_span(const cupstore_epoch *e, void *arg)
{
    struct dump *d = arg;
    if (d->nep < EPOCHS_MAX) {
        d->ep_start[d->nep] = e->start_ns;
        d->ep_collects[d->nep] = e->kinds && !(e->flags & CUPSTORE_EPOCH_OUT_OF_SCOPE);
        d->ep_end[d->nep++] = e->end_ns;
    }
    return 0;
}

static int on_loss(const cupstore_loss_row *r, void *arg)
{
    struct dump *d = arg;
    if (r->loss >= CUPSTORE_LOSS_MAX)
        return 0;
    if (r->estimate)
        d->est[r->loss][dslot(r->device)][kslot(r->kind)] += r->count;
    else
        d->loss[r->loss][dslot(r->device)][kslot(r->kind)] += r->count;
    return 0;
}

static int on_health(const cupstore_health *h, void *arg)
{
    struct dump *d = arg;
    d->rows++;
    d->sum.buf_requested += h->buf_requested;
    d->sum.buf_provided += h->buf_provided;
    d->sum.buf_declined += h->buf_declined;
    d->sum.buf_completed += h->buf_completed;
    d->sum.buf_consumed += h->buf_consumed;
    d->sum.buf_foreign += h->buf_foreign;
    d->sum.records_parsed += h->records_parsed;
    d->sum.records_stored += h->records_stored;
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
        d->sum.loss[l] += h->loss[l];
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
        d->sum.records_by_kind[k] += h->records_by_kind[k];
    for (unsigned i = 0; i < CUPSTORE_OVERHEAD_MAX; i++)
        d->sum.overhead_by_type[i] += h->overhead_by_type[i];
    d->sum.store_refused += h->store_refused;
    /* the ledger's counts: expected and arrived grow, pending is now --
     * d->sum keeps the highest of each (the last for the growing ones) */
    for (unsigned k = 0; k < CUPSTORE_LEDGER_KINDS; k++) {
        if (h->ledger_expected[k] > d->sum.ledger_expected[k])
            d->sum.ledger_expected[k] = h->ledger_expected[k];
        if (h->ledger_arrived[k] > d->sum.ledger_arrived[k])
            d->sum.ledger_arrived[k] = h->ledger_arrived[k];
        if (h->ledger_pending[k] > d->sum.ledger_pending[k])
            d->sum.ledger_pending[k] = h->ledger_pending[k];
    }
    d->last_pending = 0;
    for (unsigned k = 0; k < CUPSTORE_LEDGER_KINDS; k++)
        d->last_pending += h->ledger_pending[k];
#define MAXOF(f, v) if ((v) > d->f) d->f = (v)
    MAXOF(req_p50, h->req_lat.p50_ns);
    MAXOF(req_p99, h->req_lat.p99_ns);
    MAXOF(req_max, h->req_lat.max_ns);
    MAXOF(cmp_p50, h->cmp_lat.p50_ns);
    MAXOF(cmp_p99, h->cmp_lat.p99_ns);
    MAXOF(cmp_max, h->cmp_lat.max_ns);
    MAXOF(commit_p99, h->commit_lat.p99_ns);
#undef MAXOF
    if (h->queue_high_water > d->max_queue_hw)
        d->max_queue_hw = h->queue_high_water;
    if (h->pool_high_water > d->max_pool_hw)
        d->max_pool_hw = h->pool_high_water;
    if (h->ctl_gen_applied > d->last_ctl_applied)
        d->last_ctl_applied = h->ctl_gen_applied;
    d->sum.flags |= h->flags;
    return 0;
}

static int on_step(const cupstore_step *s, void *arg)
{
    (void)arg;
    printf("step.%s=rc:%d timed_out:%u queue:%llu us:%llu\n", cupstore_step_name(s->step), s->rc,
           s->timed_out, (unsigned long long)s->queue_remaining,
           (unsigned long long)((s->end_mono_ns - s->start_mono_ns) / 1000));
    return 0;
}

static int on_epoch(const cupstore_epoch *e, void *arg)
{
    char k[128];
    (*(unsigned *)arg)++;
    cupstore_kinds_format(e->kinds, k, sizeof k);
    printf("epoch.%u=kinds:%s ctl_gen:%llu open:%d\n", e->id, k, (unsigned long long)e->ctl_gen,
           e->end_ns == 0);
    cupstore_epoch_flags_format(e->flags, k, sizeof k);
    printf("epoch.%u.scope=flags:%s attach_ns:%llu attach_cost_ns:%llu pre_contexts:%u "
           "devices:%#x\n", e->id, k, (unsigned long long)e->attach_ns,
           (unsigned long long)e->attach_cost_ns, e->pre_contexts, e->devices);
    printf("epoch.%u.start_ns=%llu\n", e->id, (unsigned long long)e->start_ns);
    printf("epoch.%u.end_ns=%llu\n", e->id, (unsigned long long)e->end_ns);
    if (e->window_ms)
        printf("epoch.%u.window=sched_ns:%llu period_ms:%u window_ms:%u\n", e->id,
               (unsigned long long)e->sched_ns, e->period_ms, e->window_ms);
    return 0;
}

static int on_note(const cupstore_note *n, void *arg)
{
    (void)arg;
    printf("note.%llu=%u %s\n", (unsigned long long)n->seq, n->level, n->text);
    return 0;
}

static int on_ctl(const cupstore_control *c, void *arg)
{
    (void)arg;
    printf("control.%llu=kinds:%#x applied:%d result:%d\n", (unsigned long long)c->gen, c->kinds,
           c->applied_ns != 0, c->result);
    printf("control.%llu.requested_ns=%llu\ncontrol.%llu.applied_ns=%llu\n",
           (unsigned long long)c->gen, (unsigned long long)c->requested_ns,
           (unsigned long long)c->gen, (unsigned long long)c->applied_ns);
    return 0;
}

static void print_meta(cupstore_txn *txn, const char *key)
{
    char *v = NULL;
    if (cupstore_meta_get(txn, key, &v) == 0) {
        for (char *p = v; *p; p++)
            if (*p == '\n')
                *p = ';';
        printf("meta.%s=%s\n", key, v);
    }
    free(v);
}

static int dump(const char *store, const char *id)
{
    static struct dump d;
    cupstore_env *env;
    cupstore_txn *txn;
    cupstore_final f;
    char b[16];
    unsigned nepochs = 0;

    int rc = cupstore_session_open(&env, store, id, CUPSTORE_RDONLY);
    if (rc) {
        fprintf(stderr, "agentctl: %s: %s\n", id, cupstore_strerror(rc));
        return 2;
    }
    if ((rc = cupstore_txn_begin(env, false, &txn))) {
        cupstore_env_close(env);
        return 2;
    }
    printf("session=%s\n", cupstore_env_id(env));
    const char *keys[] = {"pid", "sink", "cupti_api_version", "cupti_library", "devices",
                          "cupti_error", "cupti_error_code", "config", "config.api",
                          "config.api_include", "config.api_exclude", "config.on_detach", "api_muted.1",
                          "api_muted.2", "attached_ns", "attached_uid", "attached_by_pid",
                          "device.0", "device.1"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        print_meta(txn, keys[i]);
    print_meta(txn, "ledger");   /* the launch ledger's result (--ledger) */
    for (unsigned i = 0; i < 64; i++) {
        char k[32];
        snprintf(k, sizeof k, "ledger.stream.%u", i);
        print_meta(txn, k);
    }
    print_meta(txn, "ledger.stream.other");
    memset(&d, 0, sizeof d);
    cupstore_epoch_scan(txn, on_epoch_span, &d);
    if (cupstore_record_scan(txn, 0, UINT64_MAX, on_launch, &d) != 0)
        d.nlaunch = 0;   /* out of memory: every record by its own start */
    if (d.nlaunch)
        qsort(d.launch, d.nlaunch, sizeof *d.launch, cmp_launch);
    cupstore_record_scan(txn, 0, UINT64_MAX, on_rec, &d);
    free(d.launch);
    d.launch = NULL;
    cupstore_loss_scan(txn, 0, UINT64_MAX, on_loss, &d);
    cupstore_health_scan(txn, 0, UINT64_MAX, on_health, &d);
    printf("records.total=%llu\nrecords.zero_ts=%llu\nrecords.truncated=%llu\nrecords.named=%llu\n",
           (unsigned long long)d.total, (unsigned long long)d.zero_ts,
           (unsigned long long)d.truncated, (unsigned long long)d.named);
    for (unsigned i = 0; i < d.nep; i++)
        printf("records_epoch.%u=%llu\nrecords_epoch.%u.api=%llu\nrecords_epoch.%u.overhead=%llu\n",
               i + 1, (unsigned long long)d.ep_rec[i], i + 1, (unsigned long long)d.ep_api[i],
               i + 1, (unsigned long long)d.ep_ovh[i]);
    printf("records_no_epoch=%llu\nrecords_no_epoch.api=%llu\nrecords_epoch_by_launch=%llu\n"
           "records_epoch_by_inference=%llu\n",
           (unsigned long long)d.rec_outside, (unsigned long long)d.api_outside,
           (unsigned long long)d.by_launch, (unsigned long long)d.by_inference);
    for (unsigned dv = 0; dv < DEVS; dv++)
        for (unsigned k = 0; k < KINDS; k++)
            if (d.rec[dv][k])
                printf("records.%s.%s=%llu\n", kname(k), dname(dv, b), (unsigned long long)d.rec[dv][k]);
    for (unsigned dv = 0; dv < DEVS; dv++)
        for (unsigned k = 0; k <= CUPSTORE_KIND_MEMSET; k++)
            for (unsigned s = 0; s < STREAMS; s++)
                if (d.rec_stream[dv][k][s])
                    printf("records_stream.%s.%s.%u=%llu\n", kname(k), dname(dv, b), s,
                           (unsigned long long)d.rec_stream[dv][k][s]);
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++) {
        uint64_t tot = 0;
        for (unsigned dv = 0; dv < DEVS; dv++)
            for (unsigned k = 0; k < KINDS; k++) {
                tot += d.loss[l][dv][k];
                if (d.loss[l][dv][k])
                    printf("loss.%s.%s.%s=%llu\n", cupstore_loss_name(l), kname(k), dname(dv, b),
                           (unsigned long long)d.loss[l][dv][k]);
                if (d.est[l][dv][k])
                    printf("estimate.%s.%s.%s=%llu\n", cupstore_loss_name(l), kname(k),
                           dname(dv, b), (unsigned long long)d.est[l][dv][k]);
            }
        printf("loss.%s=%llu\n", cupstore_loss_name(l), (unsigned long long)tot);
        printf("health.loss.%s=%llu\n", cupstore_loss_name(l), (unsigned long long)d.sum.loss[l]);
    }
    printf("health.rows=%llu\nhealth.buf_requested=%llu\nhealth.buf_provided=%llu\n"
           "health.buf_declined=%llu\nhealth.buf_completed=%llu\nhealth.buf_consumed=%llu\n"
           "health.buf_foreign=%llu\nhealth.records_parsed=%llu\nhealth.records_stored=%llu\n"
           "health.store_refused=%u\nhealth.queue_high_water=%u\nhealth.pool_high_water=%u\n"
           "health.ctl_gen_applied=%llu\nhealth.flags=%#x\n",
           (unsigned long long)d.rows, (unsigned long long)d.sum.buf_requested,
           (unsigned long long)d.sum.buf_provided, (unsigned long long)d.sum.buf_declined,
           (unsigned long long)d.sum.buf_completed, (unsigned long long)d.sum.buf_consumed,
           (unsigned long long)d.sum.buf_foreign, (unsigned long long)d.sum.records_parsed,
           (unsigned long long)d.sum.records_stored, d.sum.store_refused, d.max_queue_hw,
           d.max_pool_hw, (unsigned long long)d.last_ctl_applied, d.sum.flags);
    for (unsigned k = 0; k < CUPSTORE_LEDGER_KINDS; k++)
        printf("health.ledger.%s=expected:%llu arrived:%llu pending_max:%llu\n",
               (const char *[]){"kernel", "memcpy", "memset", "graph"}[k],
               (unsigned long long)d.sum.ledger_expected[k],
               (unsigned long long)d.sum.ledger_arrived[k],
               (unsigned long long)d.sum.ledger_pending[k]);
    printf("health.ledger_pending_last=%llu\n", (unsigned long long)d.last_pending);
    printf("lat.req_p50_ns=%u\nlat.req_p99_ns=%u\nlat.req_max_ns=%u\nlat.cmp_p50_ns=%u\n"
           "lat.cmp_p99_ns=%u\nlat.cmp_max_ns=%u\nlat.commit_p99_ns=%u\n",
           d.req_p50, d.req_p99, d.req_max, d.cmp_p50, d.cmp_p99, d.cmp_max, d.commit_p99);
    {
        uint64_t chunks = 0, nrec = 0, bytes = 0;
        if (cupstore_record_stats(txn, &chunks, &nrec, &bytes) == 0)
            printf("store.chunks=%llu\nstore.records=%llu\nstore.bytes=%llu\n",
                   (unsigned long long)chunks, (unsigned long long)nrec,
                   (unsigned long long)bytes);
    }
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
        printf("health.records.%s=%llu\n", cupstore_kind_name(k),
               (unsigned long long)d.sum.records_by_kind[k]);
    for (unsigned i = 0; i < CUPSTORE_OVERHEAD_MAX; i++)
        if (d.sum.overhead_by_type[i])
            printf("health.overhead.%s=%llu\n", cupstore_overhead_name(i),
                   (unsigned long long)d.sum.overhead_by_type[i]);
    cupstore_step_scan(txn, on_step, NULL);
    cupstore_epoch_scan(txn, on_epoch, &nepochs);
    printf("epochs=%u\n", nepochs);
    cupstore_control_scan(txn, on_ctl, NULL);
    cupstore_note_scan(txn, on_note, NULL);
    if (cupstore_final_get(txn, &f) == 0)
        printf("final.exit_path=%s\nfinal.exit_detail=%d\nfinal.protocol_complete=%u\n"
               "final.flush_ok=%u\nfinal.tail_lost=%llu\nfinal.buffers_completed=%llu\n"
               "final.buffers_consumed=%llu\nfinal.records_stored=%llu\n",
               cupstore_exit_name(f.exit_path), f.exit_detail, f.protocol_complete, f.flush_ok,
               (unsigned long long)f.tail_lost, (unsigned long long)f.buffers_completed,
               (unsigned long long)f.buffers_consumed, (unsigned long long)f.records_stored);
    if (cupstore_final_get(txn, &f) == 0) {
        printf("final.buffers_outstanding=%llu\nfinal.tail_bound=%llu\n"
               "final.conflict_bound=%llu\nfinal.store_refused=%llu\nfinal.aside=%u\n",
               (unsigned long long)f.buffers_outstanding, (unsigned long long)f.tail_bound,
               (unsigned long long)f.conflict_bound, (unsigned long long)f.store_refused,
               f.aside);
        for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
            printf("final.loss.%s=%llu\n", cupstore_loss_name(l),
                   (unsigned long long)f.loss_total[l]);
    } else
        printf("final=none\n");
    cupstore_txn_abort(txn);
    cupstore_env_close(env);
    return 0;
}

static int on_second(const cupstore_health *h, void *arg)
{
    char k[128];
    (void)arg;
    cupstore_kinds_format(h->kinds_enabled, k, sizeof k);
    printf("%llu epoch=%u kinds=%s records=%llu dropped=%llu declined=%llu overflow=%llu "
           "req_p99_us=%.1f cmp_p50_us=%.1f cmp_p99_us=%.1f cmp_max_us=%.1f queue_hw=%u "
           "pool_hw=%u/%u ctl=%llu\n",
           (unsigned long long)h->second, h->epoch, k, (unsigned long long)h->records_parsed,
           (unsigned long long)h->loss[CUPSTORE_LOSS_CUPTI_DROPPED],
           (unsigned long long)h->loss[CUPSTORE_LOSS_DECLINED],
           (unsigned long long)h->loss[CUPSTORE_LOSS_QUEUE_OVERFLOW], h->req_lat.p99_ns / 1e3,
           h->cmp_lat.p50_ns / 1e3, h->cmp_lat.p99_ns / 1e3, h->cmp_lat.max_ns / 1e3,
           h->queue_high_water, h->pool_high_water, h->pool_limit,
           (unsigned long long)h->ctl_gen_applied);
    return 0;
}

static int seconds(const char *store, const char *id)
{
    cupstore_env *env;
    cupstore_txn *txn;
    if (cupstore_session_open(&env, store, id, CUPSTORE_RDONLY))
        return 2;
    if (cupstore_txn_begin(env, false, &txn) == 0) {
        cupstore_health_scan(txn, 0, UINT64_MAX, on_second, NULL);
        cupstore_txn_abort(txn);
    }
    cupstore_env_close(env);
    return 0;
}

struct ctl_req {
    uint32_t kinds;
    uint64_t *gen;
};

static int put_ctl_req(cupstore_txn *txn, void *arg)
{
    struct ctl_req *r = arg;
    return cupstore_control_request(txn, r->kinds, r->gen);
}

static int control(const char *store, const char *id, const char *kinds)
{
    cupstore_env *env;
    uint32_t mask;
    uint64_t gen = 0;
    const char *bad;
    int rc;

    if (cupstore_kinds_parse(kinds, &mask, &bad)) {
        fprintf(stderr, "agentctl: bad kinds %s\n", kinds);
        return 2;
    }
    if ((rc = cupstore_session_open(&env, store, id, 0))) {
        fprintf(stderr, "agentctl: %s: %s\n", id, cupstore_strerror(rc));
        return 2;
    }
    struct ctl_req r = {mask, &gen};
    rc = cupstore_write(env, put_ctl_req, &r, 0);
    cupstore_env_close(env);
    if (rc) {
        fprintf(stderr, "agentctl: control: %s\n", cupstore_strerror(rc));
        return 2;
    }
    printf("%llu\n", (unsigned long long)gen);
    return 0;
}

struct ack_find {
    uint64_t gen, applied_ns, requested_ns;
};

static int on_ack(const cupstore_control *c, void *arg)
{
    struct ack_find *a = arg;
    if (c->gen == a->gen) {
        a->applied_ns = c->applied_ns;
        a->requested_ns = c->requested_ns;
    }
    return 0;
}

static int wait_ack(const char *store, const char *id, uint64_t gen, double timeout)
{
    uint64_t deadline = now_ns() + (uint64_t)(timeout * 1e9);
    cupstore_env *env;
    int rc = cupstore_session_open(&env, store, id, CUPSTORE_RDONLY);
    if (rc)
        return 2;
    for (;;) {
        cupstore_txn *txn;
        struct ack_find a = {gen, 0, 0};
        cupstore_health h;
        bool row = false;
        if (cupstore_txn_begin(env, false, &txn) == 0) {
            cupstore_control_scan(txn, on_ack, &a);
            row = cupstore_health_last(txn, &h) == 0 && h.ctl_gen_applied >= gen;
            cupstore_txn_abort(txn);
        }
        if (a.applied_ns && row) {
            printf("%.1f\n", (double)(a.applied_ns - a.requested_ns) / 1e6);
            cupstore_env_close(env);
            return 0;
        }
        if (now_ns() > deadline)
            break;
        nap();
    }
    cupstore_env_close(env);
    return 1;
}

static int wait_final(const char *store, const char *id, double timeout)
{
    uint64_t deadline = now_ns() + (uint64_t)(timeout * 1e9);
    for (;;) {
        cupstore_env *env;
        if (cupstore_session_open(&env, store, id, CUPSTORE_RDONLY) == 0) {
            cupstore_txn *txn;
            cupstore_final f;
            int rc = 1;
            if (cupstore_txn_begin(env, false, &txn) == 0) {
                rc = cupstore_final_get(txn, &f);
                cupstore_txn_abort(txn);
            }
            cupstore_env_close(env);
            if (rc == 0)
                return 0;
        }
        if (now_ns() > deadline)
            return 1;
        nap();
    }
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "sessions")) {
        char **ids;
        size_t n;
        if (cupstore_dir_sessions(argv[2], &ids, &n))
            return 2;
        for (size_t i = 0; i < n; i++)
            printf("%s\n", ids[i]);
        cupstore_ids_free(ids, n);
        return 0;
    }
    if (argc >= 5 && !strcmp(argv[1], "wait-session")) {
        uint64_t deadline = now_ns() + (uint64_t)(atof(argv[4]) * 1e9);
        size_t want = (size_t)atoi(argv[3]);
        for (;;) {
            char **ids;
            size_t n;
            if (cupstore_dir_sessions(argv[2], &ids, &n) == 0) {
                if (n >= want) {
                    printf("%s\n", ids[n - 1]);
                    cupstore_ids_free(ids, n);
                    return 0;
                }
                cupstore_ids_free(ids, n);
            }
            if (now_ns() > deadline)
                return 1;
            nap();
        }
    }
    if (argc >= 3 && !strcmp(argv[1], "dump")) {
        char *id = argc >= 4 ? strdup(argv[3]) : newest(argv[2]);
        if (!id) {
            fprintf(stderr, "agentctl: no session in %s\n", argv[2]);
            return 1;
        }
        int rc = dump(argv[2], id);
        free(id);
        return rc;
    }
    if (argc == 5 && !strcmp(argv[1], "control"))
        return control(argv[2], argv[3], argv[4]);
    if (argc == 6 && !strcmp(argv[1], "wait-ack"))
        return wait_ack(argv[2], argv[3], strtoull(argv[4], NULL, 10), atof(argv[5]));
    if (argc == 4 && !strcmp(argv[1], "seconds"))
        return seconds(argv[2], argv[3]);
    if (argc == 5 && !strcmp(argv[1], "wait-final"))
        return wait_final(argv[2], argv[3], atof(argv[4]));
    fprintf(stderr, "usage: agentctl sessions|wait-session|dump|control|wait-ack|wait-final ...\n");
    return 2;
}
