/*
 * model_facts.c - what the health rows of a window say: rates and peaks,
 * the buffer pool and queue in the seconds with a loss (each second judged
 * against its own pool limit, not the configured one), the longest loss
 * window, losses by kind and device, and the per-epoch figures with the
 * second of a change split at the acknowledged change time.  One pass over
 * the rows; memory grows only with the number of epochs.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#define NS UINT64_C(1000000000)

/* The second of a change: its counts are split once every epoch's rates in
 * whole seconds are known. */
typedef struct split_row {
    uint64_t second;
    uint32_t old_id, new_id;
    double before;              /* fraction of the second before the change */
    uint64_t records, losses;
} split_row;

typedef struct facts_ctx {
    model_facts *f;
    /* epochs: index = position in f->epochs */
    double *whole_s;            /* whole seconds per epoch                  */
    uint64_t *whole_rec, *whole_loss;
    split_row *splits;
    size_t nsplits, cap_splits;
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
    double *ws = realloc(c->whole_s, n * sizeof *ws);
    if (ws)
        c->whole_s = ws;
    uint64_t *wr = realloc(c->whole_rec, n * sizeof *wr);
    if (wr)
        c->whole_rec = wr;
    uint64_t *wl = realloc(c->whole_loss, n * sizeof *wl);
    if (wl)
        c->whole_loss = wl;
    if (!ws || !wr || !wl)
        return ENOMEM;
    memset(&e[f->nepochs], 0, sizeof e[0]);
    e[f->nepochs].id = id;
    e[f->nepochs].kinds = kinds;
    c->whole_s[f->nepochs] = 0;
    c->whole_rec[f->nepochs] = 0;
    c->whole_loss[f->nepochs] = 0;
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

static int on_health(const cupstore_health *h, void *arg)
{
    facts_ctx *c = arg;
    model_facts *f = c->f;
    uint64_t total = 0, loss = 0;
    if (!f->rows)
        f->first_s = h->second;
    f->rows++;
    f->last_s = h->second;
    f->kinds_now = h->kinds_enabled;
    for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX; d++)
        if (h->records_by_device[d])
            f->device_mask |= 1u << d;
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++) {
        total += h->records_by_kind[k];
        if (h->records_by_kind[k] > f->peak_kind[k])
            f->peak_kind[k] = h->records_by_kind[k];
    }
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
#define MAXU(a, b) ((a) = (b) > (a) ? (b) : (a))
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
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
        loss += h->loss[l];

    if (loss) {
        if (!f->loss_seconds || h->pool_limit < f->loss_limit_min)
            f->loss_limit_min = h->pool_limit;
        MAXU(f->loss_limit_max, h->pool_limit);
        f->loss_seconds++;
        f->loss_records += total;
        f->loss_lost += loss;
        f->loss_completed += h->buf_completed;
        f->loss_consumed += h->buf_consumed;
        f->loss_declined += h->buf_declined;
        f->loss_bytes += h->bytes_delivered;
        /* a declined request means every buffer was out at that moment */
        if (h->buf_declined || (h->pool_limit && (h->pool_high_water >= h->pool_limit ||
                                                  h->buf_outstanding >= h->pool_limit)))
            f->loss_at_limit++;
        MAXU(f->loss_q_hw_max, h->queue_high_water);
        MAXU(f->loss_q_cap, h->queue_capacity);
        MAXU(f->loss_commit_p99_max, h->commit_lat.p99_ns);
        if (h->queue_capacity && h->queue_high_water >= h->queue_capacity)
            f->loss_q_full++;
        if (c->run_len && h->second != c->prev_loss_s + 1)
            run_close(c);
        if (!c->run_len) {
            c->run_first = h->second;
            f->windows++;
        }
        c->run_len++;
        c->run_lost += loss;
        for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
            c->run_class[l] += h->loss[l];
        c->prev_loss_s = h->second;
    }
#undef MAXU

    /* Epochs: the row's own epoch, unless a change was acknowledged inside
     * this second; then the part before it belongs to the old epoch. */
    size_t ni;
    int rc = epoch_add(c, h->epoch, h->kinds_enabled, &ni);
    if (rc)
        return rc;
    f->epochs[ni].pool_limit = h->pool_limit;
    const model_epoch_stat *nw = &f->epochs[ni];
    const model_epoch_stat *old = epoch_at(f, h->second * NS);
    if (nw->known && old && old->id != nw->id && nw->start_ns > h->second * NS &&
        nw->start_ns < (h->second + 1) * NS) {
        if (c->nsplits == c->cap_splits) {
            size_t cap = c->cap_splits ? 2 * c->cap_splits : 8;
            split_row *s = realloc(c->splits, cap * sizeof *s);
            if (!s)
                return ENOMEM;
            c->splits = s;
            c->cap_splits = cap;
        }
        c->splits[c->nsplits++] = (split_row){
            .second = h->second, .old_id = old->id, .new_id = nw->id,
            .before = (double)(nw->start_ns - h->second * NS) / (double)NS,
            .records = total, .losses = loss};
    } else {
        c->whole_s[ni] += 1.0;
        c->whole_rec[ni] += total;
        c->whole_loss[ni] += loss;
    }
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

/* Split n between two epochs: by time weighted by each one's rate in its
 * whole seconds; by time alone when either has no whole second. */
static uint64_t split_before(uint64_t n, double before, double ws_old, double rate_old,
                             double ws_new, double rate_new)
{
    double wo = before, wn = 1.0 - before;
    if (ws_old > 0 && ws_new > 0) {
        wo *= rate_old;
        wn *= rate_new;
    }
    if (!(wo + wn > 0))
        wo = before, wn = 1.0 - before;
    double x = (double)n * wo / (wo + wn) + 0.5;
    uint64_t b = x >= (double)n ? n : (uint64_t)x;
    return b;
}

static void epochs_finish(facts_ctx *c)
{
    model_facts *f = c->f;
    for (size_t i = 0; i < f->nepochs; i++) {
        f->epochs[i].seconds = c->whole_s[i];
        f->epochs[i].records = c->whole_rec[i];
        f->epochs[i].losses = c->whole_loss[i];
    }
    for (size_t j = 0; j < c->nsplits; j++) {
        const split_row *r = &c->splits[j];
        size_t io = 0, in = 0;
        if (!epoch_find(f, r->old_id, &io) || !epoch_find(f, r->new_id, &in))
            continue;
        double wso = c->whole_s[io], wsn = c->whole_s[in];
        double ro = wso > 0 ? (double)c->whole_rec[io] / wso : 0;
        double rn = wsn > 0 ? (double)c->whole_rec[in] / wsn : 0;
        uint64_t rb = split_before(r->records, r->before, wso, ro, wsn, rn);
        ro = wso > 0 ? (double)c->whole_loss[io] / wso : 0;
        rn = wsn > 0 ? (double)c->whole_loss[in] / wsn : 0;
        uint64_t lb = split_before(r->losses, r->before, wso, ro, wsn, rn);
        f->epochs[io].records += rb;
        f->epochs[in].records += r->records - rb;
        f->epochs[io].losses += lb;
        f->epochs[in].losses += r->losses - lb;
        f->epochs[io].seconds += r->before;
        f->epochs[in].seconds += 1.0 - r->before;
    }
}

static int cmp_epoch(const void *a, const void *b)
{
    const model_epoch_stat *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* A setting of the agent: the structured meta key KEY (or config.KEY),
 * else "KEY=N" in the agent's configuration text; 0 when absent. */
static uint64_t config_u64(cupstore_txn *txn, const char *key)
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
    out->buffer_size = config_u64(txn, "buffer_size");
    out->device_buffer_size = config_u64(txn, "device_buffer_size");
    out->device_buffer_pool_limit = (uint32_t)config_u64(txn, "device_buffer_pool_limit");
    out->stop_timeout_ms = (uint32_t)config_u64(txn, "stop_timeout_ms");
    out->threads = (uint32_t)config_u64(txn, "threads");
    if ((rc = cupstore_epoch_scan(txn, on_epoch, &c)) == 0 &&
        (rc = cupstore_health_scan(txn, from_s, to_s, on_health, &c)) == 0)
        rc = cupstore_loss_scan(txn, from_s, to_s, on_loss, &c);
    if (rc == 0)
        rc = cupstore_step_scan(txn, on_step, &c);
    cupstore_txn_abort(txn);
    if (rc)
        goto fail;
    run_close(&c);
    epochs_finish(&c);
    if (out->nepochs)   /* (no epoch row: epochs is NULL) */
        qsort(out->epochs, out->nepochs, sizeof *out->epochs, cmp_epoch);
    for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX; d++)
        if (out->device_mask & (1u << d))
            out->devices++;
    free(c.whole_s);
    free(c.whole_rec);
    free(c.whole_loss);
    free(c.splits);
    return 0;
fail:
    free(c.whole_s);
    free(c.whole_rec);
    free(c.whole_loss);
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
