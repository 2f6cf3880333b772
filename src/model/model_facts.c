/*
 * model_facts.c - what the health rows of a window say: rates and peaks,
 * the buffer pool and queue in the seconds with a loss (each second judged
 * against its own pool limit, not the configured one), the longest loss
 * window, losses by kind and device, and the per-epoch figures with the
 * second of a change split at the acknowledged change time.  Losses are
 * counted by the verdict's rule (model_seconds.c) and the tail the final
 * status knows of goes to the epoch in effect at the end, so the epochs add
 * up to the session's figures.  One pass over the seconds; memory grows
 * with the number of epochs and of change seconds.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model_int.h"

#define NS UINT64_C(1000000000)

/* A second in which more than one epoch was in effect: its counts are
 * split once every epoch's rates in whole seconds are known. */
#define SPLIT_PARTS 8
typedef struct split_row {
    uint64_t second;
    unsigned n;
    uint32_t ids[SPLIT_PARTS];
    double frac[SPLIT_PARTS];   /* share of the second's covered time       */
    uint64_t records;
    uint64_t loss[CUPSTORE_LOSS_MAX];
} split_row;

/* Per epoch (index = position in f->epochs): its effective end and its
 * whole seconds, whose rates weigh the split of a change second. */
typedef struct epoch_acc {
    uint64_t end_ns;            /* end_ns, else the next epoch's start; 0 open */
    double whole_s;
    uint64_t whole_rec;
    uint64_t whole_loss[CUPSTORE_LOSS_MAX];
} epoch_acc;

typedef struct facts_ctx {
    model_facts *f;
    epoch_acc *acc;             /* one per epoch                            */
    split_row *splits;
    size_t nsplits, cap_splits;
    bool have_last;
    size_t last_idx;            /* epoch of the newest second               */
    bool have_collect;
    size_t collect_idx;         /* the newest epoch that collected          */
    uint64_t tail_seen;         /* tail loss counted in the window's seconds */
    uint64_t run_first, run_len, run_lost, prev_loss_s;
    uint64_t run_class[CUPSTORE_LOSS_MAX];
} facts_ctx;

static model_epoch_stat *epoch_find(model_facts *f, uint32_t id, size_t *idx)
{
    for (size_t i = 0; i < f->nepochs; i++)
        if (f->epochs[i].id == id) {
            if (idx)
                *idx = i;
            return &f->epochs[i];
        }
    return NULL;
}

static int epoch_add(facts_ctx *c, uint32_t id, uint32_t kinds, size_t *idx)
{
    model_facts *f = c->f;
    if (epoch_find(f, id, idx))
        return 0;
    size_t n = f->nepochs + 1;
    model_epoch_stat *e = realloc(f->epochs, n * sizeof *e);
    if (!e)
        return ENOMEM;
    f->epochs = e;
    epoch_acc *a = realloc(c->acc, n * sizeof *a);
    if (!a)
        return ENOMEM;
    c->acc = a;
    memset(&e[f->nepochs], 0, sizeof e[0]);
    memset(&a[f->nepochs], 0, sizeof a[0]);
    e[f->nepochs].id = id;
    e[f->nepochs].kinds = kinds;
    if (idx)
        *idx = f->nepochs;
    f->nepochs = n;
    return 0;
}

static int on_epoch(const cupstore_epoch *e, void *arg)
{
    facts_ctx *c = arg;
    size_t i;
    int rc = epoch_add(c, e->id, e->kinds, &i);
    if (rc)
        return rc;
    model_epoch_stat *s = &c->f->epochs[i];
    s->kinds = e->kinds;
    s->start_ns = e->start_ns;
    s->end_ns = e->end_ns;
    s->known = true;
    s->row = *e;
    return 0;
}

/* Effective ends: an epoch row without an end ends where the next starts. */
static void epochs_bound(facts_ctx *c)
{
    model_facts *f = c->f;
    for (size_t i = 0; i < f->nepochs; i++) {
        uint64_t end = f->epochs[i].end_ns;
        if (!end)
            for (size_t j = 0; j < f->nepochs; j++)
                if (f->epochs[j].known && f->epochs[j].start_ns > f->epochs[i].start_ns &&
                    (!end || f->epochs[j].start_ns < end))
                    end = f->epochs[j].start_ns;
        c->acc[i].end_ns = end;
    }
}

/* Does epoch e collect records: kinds on and in scope. */
static bool epoch_collects(const model_epoch_stat *e)
{
    return e->kinds && !(e->known && (e->row.flags & CUPSTORE_EPOCH_OUT_OF_SCOPE));
}

/* The epoch in effect at time t (ns): the latest known start <= t. */
static const model_epoch_stat *epoch_at(const model_facts *f, uint64_t t)
{
    const model_epoch_stat *best = NULL;
    for (size_t i = 0; i < f->nepochs; i++) {
        const model_epoch_stat *e = &f->epochs[i];
        if (e->known && e->start_ns <= t && (!best || e->start_ns >= best->start_ns))
            best = e;
    }
    return best;
}

static void run_close(facts_ctx *c)
{
    model_window *w = &c->f->longest;
    if (c->run_len && (c->run_len > w->seconds || (c->run_len == w->seconds && c->run_lost > w->lost))) {
        w->first_s = c->run_first;
        w->seconds = c->run_len;
        w->lost = c->run_lost;
        memcpy(w->by_class, c->run_class, sizeof w->by_class);
    }
    c->run_len = 0;
    c->run_lost = 0;
    memset(c->run_class, 0, sizeof c->run_class);
}

/* The health row's facts of one second. */
static void facts_health(model_facts *f, const cupstore_health *h, uint64_t total)
{
#define MAXU(a, b) ((a) = (b) > (a) ? (b) : (a))
    if (!f->rows)
        f->first_s = h->second;
    f->rows++;
    f->last_s = h->second;
    f->kinds_now = h->kinds_enabled;
    for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX; d++)
        if (h->records_by_device[d])
            f->device_mask |= 1u << d;
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
        MAXU(f->peak_kind[k], h->records_by_kind[k]);
    if (total > f->peak_total) {
        f->peak_total = total;
        f->peak_second = h->second;
    }
    f->requested += h->buf_requested;
    f->provided += h->buf_provided;
    f->declined += h->buf_declined;
    f->completed += h->buf_completed;
    f->consumed += h->buf_consumed;
    f->foreign += h->buf_foreign;
    f->bytes += h->bytes_delivered;
    MAXU(f->pool_limit, h->pool_limit);
    MAXU(f->pool_hw, h->pool_high_water);
    MAXU(f->q_cap, h->queue_capacity);
    MAXU(f->q_hw, h->queue_high_water);
    MAXU(f->req_p99_max, h->req_lat.p99_ns);
    MAXU(f->cmp_p99_max, h->cmp_lat.p99_ns);
    MAXU(f->cmp_max, h->cmp_lat.max_ns);
    MAXU(f->commit_p99_max, h->commit_lat.p99_ns);
    f->store_refused += h->store_refused;
    for (unsigned i = 0; i < MODEL_OVERHEAD_TYPES; i++)
        f->overhead[i] += h->overhead_by_type[i];
#undef MAXU
}

/* The facts of a second with a loss (counted by the verdict's rule). */
static void facts_lossy(facts_ctx *c, const model_second *m, uint64_t total)
{
#define MAXU(a, b) ((a) = (b) > (a) ? (b) : (a))
    model_facts *f = c->f;
    const cupstore_health *h = &m->h;
    if (!f->loss_seconds || h->pool_limit < f->loss_limit_min)
        f->loss_limit_min = h->pool_limit;
    MAXU(f->loss_limit_max, h->pool_limit);
    f->loss_seconds++;
    f->loss_records += total;
    f->loss_lost += m->loss_total;
    f->loss_completed += h->buf_completed;
    f->loss_consumed += h->buf_consumed;
    f->loss_declined += h->buf_declined;
    f->loss_bytes += h->bytes_delivered;
    f->loss_kinds |= h->kinds_enabled;
    /* a declined request means every buffer was out at that moment */
    if (h->buf_declined || (h->pool_limit && (h->pool_high_water >= h->pool_limit ||
                                              h->buf_outstanding >= h->pool_limit)))
        f->loss_at_limit++;
    MAXU(f->loss_q_hw_max, h->queue_high_water);
    MAXU(f->loss_q_cap, h->queue_capacity);
    MAXU(f->loss_commit_p99_max, h->commit_lat.p99_ns);
    if (h->queue_capacity && h->queue_high_water >= h->queue_capacity)
        f->loss_q_full++;
    if (c->run_len && m->second != c->prev_loss_s + 1)
        run_close(c);
    if (!c->run_len) {
        c->run_first = m->second;
        f->windows++;
    }
    c->run_len++;
    c->run_lost += m->loss_total;
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
        c->run_class[l] += m->loss[l];
    c->prev_loss_s = m->second;
#undef MAXU
}

/* The epochs in effect during second sec (known rows only), with the share
 * of the second's covered time each had.  Returns how many. */
static unsigned epochs_in_second(const facts_ctx *c, uint64_t sec, uint32_t *ids, double *frac)
{
    const model_facts *f = c->f;
    uint64_t a = sec * NS, b = a + NS, covered = 0;
    uint64_t span[SPLIT_PARTS];
    unsigned n = 0;
    for (size_t i = 0; i < f->nepochs && n < SPLIT_PARTS; i++) {
        const model_epoch_stat *e = &f->epochs[i];
        uint64_t end = c->acc[i].end_ns ? c->acc[i].end_ns : UINT64_MAX;
        if (!e->known || e->start_ns >= b || end <= a)
            continue;
        uint64_t lo = e->start_ns > a ? e->start_ns : a, hi = end < b ? end : b;
        ids[n] = e->id;
        span[n] = hi - lo;
        covered += span[n];
        n++;
    }
    for (unsigned i = 0; i < n; i++)
        frac[i] = covered ? (double)span[i] / (double)covered : 1.0 / n;
    return n;
}

static int split_push(facts_ctx *c, const split_row *r)
{
    if (c->nsplits == c->cap_splits) {
        size_t cap = c->cap_splits ? 2 * c->cap_splits : 8;
        split_row *s = realloc(c->splits, cap * sizeof *s);
        if (!s)
            return ENOMEM;
        c->splits = s;
        c->cap_splits = cap;
    }
    c->splits[c->nsplits++] = *r;
    return 0;
}

/* One second (model_seconds_scan): the facts, then its epoch(s). */
static int on_second(const model_second *m, void *arg)
{
    facts_ctx *c = arg;
    model_facts *f = c->f;
    const cupstore_health *h = &m->h;
    uint64_t total = 0;
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
        total += h->records_by_kind[k];
    if (m->have_health)
        facts_health(f, h, total);
    if (m->loss_total)
        facts_lossy(c, m, total);
    c->tail_seen += m->loss[CUPSTORE_LOSS_TAIL];

    /* Epochs: the one in effect all second; a second in which a change was
     * acknowledged is split between the epochs it saw (epochs_finish). */
    split_row r = {.second = m->second, .records = total};
    memcpy(r.loss, m->loss, sizeof r.loss);
    r.n = epochs_in_second(c, m->second, r.ids, r.frac);
    size_t ni = 0;
    int rc;
    if (r.n == 0) {
        /* no epoch row covers it: the row's epoch, else the last one seen */
        if (m->have_health || !c->have_last) {
            if ((rc = epoch_add(c, h->epoch, h->kinds_enabled, &ni)) != 0)
                return rc;
        } else {
            ni = c->last_idx;
        }
    } else if (r.n == 1) {
        epoch_find(f, r.ids[0], &ni);
    } else {
        for (unsigned i = 0; i < r.n; i++) {
            size_t k;
            model_epoch_stat *e = epoch_find(f, r.ids[i], &k);
            if (m->have_health && epoch_collects(e))
                e->pool_limit = h->pool_limit;
        }
        c->have_last = epoch_find(f, r.ids[r.n - 1], &c->last_idx) != NULL;
        for (unsigned i = 0; i < r.n; i++) {
            size_t k;
            if (epoch_find(f, r.ids[i], &k) && epoch_collects(&f->epochs[k])) {
                c->have_collect = true;
                c->collect_idx = k;
            }
        }
        return split_push(c, &r);
    }
    c->have_last = true;
    c->last_idx = ni;
    if (epoch_collects(&f->epochs[ni])) {
        c->have_collect = true;
        c->collect_idx = ni;
    }
    if (m->have_health)
        f->epochs[ni].pool_limit = h->pool_limit;
    epoch_acc *a = &c->acc[ni];
    a->whole_s += m->have_health ? 1.0 : 0.0;
    /* Records are counted when consumed: those of an epoch that collects
     * nothing came late from the newest epoch that collected (a capture
     * range shorter than a second, the flush after a detach), and so did
     * its losses; its time stays its own. */
    if (!epoch_collects(&f->epochs[ni]) && c->have_collect)
        a = &c->acc[c->collect_idx];
    a->whole_rec += total;
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
        a->whole_loss[l] += m->loss[l];
    return 0;
}

static int on_step(const cupstore_step *st, void *arg)
{
    if (st->timed_out)
        ((facts_ctx *)arg)->f->steps_timed_out++;
    return 0;
}

static int on_loss(const cupstore_loss_row *l, void *arg)
{
    model_facts *f = ((facts_ctx *)arg)->f;
    if (l->kind < CUPSTORE_KIND_MAX) {
        if (l->estimate)
            f->kind_loss_est[l->kind] += l->count;
        else
            f->kind_loss[l->kind] += l->count;
    }
    if (l->device < CUPSTORE_DEVICE_MAX && !l->estimate)
        f->dev_loss[l->device] += l->count;
    return 0;
}

/* Split n over the k parts by weight w (cumulative rounding: the parts add
 * up to n exactly). */
static void split_n(uint64_t n, const double *w, unsigned k, uint64_t *out)
{
    double sum = 0, cum = 0;
    for (unsigned i = 0; i < k; i++)
        sum += w[i];
    uint64_t given = 0;
    for (unsigned i = 0; i < k; i++) {
        cum += w[i];
        uint64_t upto = i + 1 == k ? n : (uint64_t)((double)n * cum / sum + 0.5);
        if (upto > n)
            upto = n;
        out[i] = upto > given ? upto - given : 0;
        given += out[i];
    }
}

/* The weights of one quantity in a split second: each part's share of the
 * time, times its rate of that quantity in its whole seconds when every
 * collecting part has whole seconds; an epoch that collects nothing (kinds
 * off, out of scope) gets none of it unless no part collects. */
static void split_weights(const facts_ctx *c, const split_row *r, const size_t *idx,
                          int loss_class, double *w)
{
    const model_facts *f = c->f;
    bool rates = true, any = false;
    for (unsigned i = 0; i < r->n; i++)
        if (epoch_collects(&f->epochs[idx[i]])) {
            any = true;
            rates = rates && c->acc[idx[i]].whole_s > 0;
        }
    double sum = 0;
    for (unsigned i = 0; i < r->n; i++) {
        const epoch_acc *a = &c->acc[idx[i]];
        w[i] = any && !epoch_collects(&f->epochs[idx[i]]) ? 0 : r->frac[i];
        if (any && rates && w[i] > 0) {
            uint64_t q = loss_class < 0 ? a->whole_rec : a->whole_loss[loss_class];
            w[i] *= (double)q / a->whole_s;
        }
        sum += w[i];
    }
    if (!(sum > 0))   /* no rate says: by time, among those that collect */
        for (unsigned i = 0; i < r->n; i++)
            w[i] = any && !epoch_collects(&f->epochs[idx[i]]) ? 0 : r->frac[i];
}

static void epochs_finish(facts_ctx *c)
{
    model_facts *f = c->f;
    for (size_t i = 0; i < f->nepochs; i++) {
        model_epoch_stat *e = &f->epochs[i];
        e->seconds = c->acc[i].whole_s;
        e->records = c->acc[i].whole_rec;
        memcpy(e->loss, c->acc[i].whole_loss, sizeof e->loss);
    }
    for (size_t j = 0; j < c->nsplits; j++) {
        const split_row *r = &c->splits[j];
        size_t idx[SPLIT_PARTS];
        double w[SPLIT_PARTS];
        uint64_t part[SPLIT_PARTS];
        for (unsigned i = 0; i < r->n; i++)
            epoch_find(f, r->ids[i], &idx[i]);
        split_weights(c, r, idx, -1, w);
        split_n(r->records, w, r->n, part);
        for (unsigned i = 0; i < r->n; i++) {
            f->epochs[idx[i]].records += part[i];
            f->epochs[idx[i]].seconds += r->frac[i];
        }
        for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++) {
            if (!r->loss[l])
                continue;
            split_weights(c, r, idx, (int)l, w);
            split_n(r->loss[l], w, r->n, part);
            for (unsigned i = 0; i < r->n; i++)
                f->epochs[idx[i]].loss[l] += part[i];
        }
    }
}

/* Tail loss the final status knows of but no row recorded (the verdict
 * adds it at the end second): the epoch in effect at the end. */
static void epochs_tail(facts_ctx *c, const cupstore_final *fin, uint64_t from_s, uint64_t to_s)
{
    model_facts *f = c->f;
    uint64_t end_s = fin->end_ns / NS;
    if (end_s < from_s || end_s > to_s || fin->tail_lost <= c->tail_seen || !f->nepochs)
        return;
    const model_epoch_stat *at = epoch_at(f, fin->end_ns);
    size_t i = f->nepochs - 1;
    if (at)
        epoch_find(f, at->id, &i);
    else if (c->have_last)
        i = c->last_idx;
    /* an epoch that collects nothing (the session ended outside its
     * capture range) held no records to lose: the tail is the newest
     * collecting epoch's, as its late records and losses are */
    if (!epoch_collects(&f->epochs[i]) && c->have_collect)
        i = c->collect_idx;
    f->epochs[i].loss[CUPSTORE_LOSS_TAIL] += fin->tail_lost - c->tail_seen;
}

static int cmp_epoch(const void *a, const void *b)
{
    const model_epoch_stat *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* A setting of the agent: the structured meta key KEY (or config.KEY),
 * else "KEY=N" in the agent's configuration text; 0 when absent. */
uint64_t model_config_u64(cupstore_txn *txn, const char *key)
{
    char *v = NULL, name[64];
    uint64_t n = 0;
    snprintf(name, sizeof name, CUPSTORE_META_CONFIG "%s", key);
    if ((cupstore_meta_get(txn, name, &v) == 0 && v) ||
        (free(v), v = NULL, cupstore_meta_get(txn, key, &v) == 0 && v)) {
        n = strtoull(v, NULL, 10);
        free(v);
        return n;
    }
    free(v);
    v = NULL;
    if (cupstore_meta_get(txn, "config", &v) == 0 && v) {
        size_t kl = strlen(key);
        for (const char *p = v; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
            if (!strncmp(p, key, kl) && p[kl] == '=') {
                n = strtoull(p + kl + 1, NULL, 10);
                break;
            }
    }
    free(v);
    return n;
}

int model_facts_read(cupstore_env *env, uint64_t from_s, uint64_t to_s, model_facts *out,
                     char **cause)
{
    cupstore_txn *txn;
    facts_ctx c;
    int rc;
    if (cause)
        *cause = NULL;
    memset(out, 0, sizeof *out);
    memset(&c, 0, sizeof c);
    c.f = out;
    if ((rc = cupstore_txn_begin(env, false, &txn)) != 0)
        goto fail;
    out->buffer_size = model_config_u64(txn, "buffer_size");
    out->device_buffer_size = model_config_u64(txn, "device_buffer_size");
    out->device_buffer_pool_limit = (uint32_t)model_config_u64(txn, "device_buffer_pool_limit");
    out->stop_timeout_ms = (uint32_t)model_config_u64(txn, "stop_timeout_ms");
    out->threads = (uint32_t)model_config_u64(txn, "threads");
    cupstore_final fin;
    bool have_final = false;
    if ((rc = cupstore_epoch_scan(txn, on_epoch, &c)) == 0) {
        epochs_bound(&c);
        rc = model_seconds_scan(txn, from_s, to_s, on_second, &c);
    }
    if (rc == 0)
        rc = cupstore_loss_scan(txn, from_s, to_s, on_loss, &c);
    if (rc == 0)
        rc = cupstore_step_scan(txn, on_step, &c);
    if (rc == 0) {
        rc = cupstore_final_get(txn, &fin);
        have_final = rc == 0;
        if (rc == CUPSTORE_ENOTFOUND)
            rc = 0;
    }
    if (rc == 0 && have_final && fin.aside && fin.end_ns / 1000000000u >= from_s &&
        fin.end_ns / 1000000000u <= to_s) {
        /* the store refused the final status and the rows before it: the
         * kinds of what the agent counted beyond the rows (the summary
         * credits the same losses to the end) */
        model_loss_rows lr;
        if ((rc = model_loss_rows_read(txn, &lr)) == 0)
            model_final_kind_extra(&fin, &lr, out->kind_loss, out->kind_loss_est);
    }
    cupstore_txn_abort(txn);
    if (rc)
        goto fail;
    run_close(&c);
    epochs_finish(&c);
    if (have_final)
        epochs_tail(&c, &fin, from_s, to_s);
    for (size_t i = 0; i < out->nepochs; i++) {
        out->epochs[i].losses = 0;
        for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
            out->epochs[i].losses += out->epochs[i].loss[l];
    }
    if (out->nepochs)   /* (no epoch row: epochs is NULL) */
        qsort(out->epochs, out->nepochs, sizeof *out->epochs, cmp_epoch);
    for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX; d++)
        if (out->device_mask & (1u << d))
            out->devices++;
    free(c.acc);
    free(c.splits);
    return 0;
fail:
    free(c.acc);
    free(c.splits);
    model_facts_free(out);
    if (cause && asprintf(cause, "%s: %s", cupstore_env_id(env), cupstore_strerror(rc)) < 0)
        *cause = NULL;
    return rc;
}

void model_facts_free(model_facts *f)
{
    if (!f)
        return;
    free(f->epochs);
    f->epochs = NULL;
    f->nepochs = 0;
}

int model_epoch_baseline(const model_epoch_stat *e, size_t n)
{
    int best = -1;
    for (size_t i = 0; i < n; i++) {
        if (e[i].losses || !e[i].kinds || !e[i].records || !(e[i].seconds > 0))
            continue;
        if (best < 0 || e[i].seconds >= e[best].seconds)
            best = (int)i;
    }
    return best;
}
