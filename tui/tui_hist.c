/* tui_hist.c - per-second history of one session in plain arrays, laid
 * out from the model's live series (model_live_series): the seconds and
 * their losses are the model's, counted by the verdict's rule; nothing here
 * reads health or loss rows or sums a loss.
 *
 * Every series is a contiguous double[] with a bool[] of validity, indexed
 * by (second - base).  When the arrays fill up, the oldest half is dropped
 * with one memmove, so plotting always gets one contiguous window. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tui_int.h"

int tui_hist_init(tui_hist *h)
{
    memset(h, 0, sizeof *h);
    h->cap = 2 * (size_t)TUI_HIST_KEEP;
    h->v = calloc((size_t)TUI_S_MAX * h->cap, sizeof *h->v);
    h->valid = calloc((size_t)TUI_S_MAX * h->cap, sizeof *h->valid);
    if (!h->v || !h->valid) {
        tui_hist_free(h);
        return ENOMEM;
    }
    return 0;
}

void tui_hist_free(tui_hist *h)
{
    free(h->v);
    free(h->valid);
    model_live_free(&h->live);
    memset(h, 0, sizeof *h);
}

void tui_hist_reset(tui_hist *h)
{
    double *v = h->v;
    bool *valid = h->valid;
    size_t cap = h->cap;
    model_live_free(&h->live);
    memset(h, 0, sizeof *h);
    h->v = v;
    h->valid = valid;
    h->cap = cap;
}

const double *tui_hist_v(const tui_hist *h, int series)
{
    return h->v + (size_t)series * h->cap;
}

const bool *tui_hist_valid(const tui_hist *h, int series)
{
    return h->valid + (size_t)series * h->cap;
}

/* Make room for `second`; returns its index or -1 when it is too old. */
static long hist_slot(tui_hist *h, uint64_t second)
{
    if (h->len == 0) {
        h->base = second;
    } else if (second < h->base) {
        return -1;
    }
    uint64_t idx = second - h->base;
    if (idx >= h->cap) {
        /* Keep the newest TUI_HIST_KEEP seconds that end at `second`. */
        uint64_t new_base = second + 1 - TUI_HIST_KEEP;
        uint64_t drop = new_base - h->base;
        size_t keep = drop < h->len ? h->len - (size_t)drop : 0;
        for (int s = 0; s < TUI_S_MAX; s++) {
            double *v = h->v + (size_t)s * h->cap;
            bool *va = h->valid + (size_t)s * h->cap;
            if (keep)
                memmove(v, v + drop, keep * sizeof *v), memmove(va, va + drop, keep);
            memset(va + keep, 0, h->cap - keep);
        }
        h->base = new_base;
        h->len = keep;
        idx = second - h->base;
    }
    if (idx >= h->len) {
        for (int s = 0; s < TUI_S_MAX; s++)
            memset(h->valid + (size_t)s * h->cap + h->len, 0, (size_t)idx + 1 - h->len);
        h->len = (size_t)idx + 1;
    }
    return (long)idx;
}

void tui_hist_set(tui_hist *h, int series, uint64_t second, double v)
{
    long i = hist_slot(h, second);
    if (i < 0)
        return;
    h->v[(size_t)series * h->cap + (size_t)i] = v;
    h->valid[(size_t)series * h->cap + (size_t)i] = true;
}

/* The launch ledger's expected and arrived per second: the difference of
 * its counts since the session's start between two health rows (the
 * first row read gives no point: the counts before it are not this
 * second's); pending is the row's own. */
static void hist_ledger(tui_hist *h, uint64_t s, const cupstore_health *r)
{
    uint64_t exp = 0, arr = 0, pend = 0;
    for (int k = 0; k < CUPSTORE_LEDGER_KINDS; k++) {
        exp += r->ledger_expected[k];
        arr += r->ledger_arrived[k];
        pend += r->ledger_pending[k];
    }
    if (!exp && !arr && !h->ledger_second)
        return;   /* no ledger (yet) */
    if (h->ledger_second && s > h->ledger_second) {
        tui_hist_set(h, TUI_S_LEDGER_EXP, s, exp >= h->ledger_exp ? (double)(exp - h->ledger_exp) : 0.0);
        tui_hist_set(h, TUI_S_LEDGER_ARR, s, arr >= h->ledger_arr ? (double)(arr - h->ledger_arr) : 0.0);
    }
    tui_hist_set(h, TUI_S_LEDGER_PEND, s, (double)pend);
    if (s > h->ledger_second) {
        h->ledger_second = s;
        h->ledger_exp = exp;
        h->ledger_arr = arr;
    }
}

double tui_hist_at(const tui_hist *h, int series, uint64_t second, bool *valid)
{
    if (h->len == 0 || second < h->base || second - h->base >= h->len) {
        if (valid)
            *valid = false;
        return 0.0;
    }
    size_t k = (size_t)series * h->cap + (size_t)(second - h->base);
    if (valid)
        *valid = h->valid[k];
    return h->valid[k] ? h->v[k] : 0.0;
}

/* One second from the model (model_live_series): laid out in the arrays.
 * The loss series are the verdict's (model_seconds.c); a second with loss
 * rows only has loss series and nothing else. */
static int second_cb(const model_second *m, void *arg)
{
    tui_hist *h = arg;
    uint64_t s = m->second;
    for (int c = 0; c < CUPSTORE_LOSS_MAX; c++)
        tui_hist_set(h, TUI_S_LOSS + c, s, (double)m->loss[c]);
    tui_hist_set(h, TUI_S_LOSS_TOTAL, s, (double)m->loss_total);
    for (int k = 0; k < CUPSTORE_KIND_MAX; k++)
        tui_hist_set(h, TUI_S_EST_KIND + k, s, (double)m->est_kind[k]);
    for (int d = 0; d <= CUPSTORE_DEVICE_MAX; d++) {
        double n = 0.0;
        for (int c = 0; c < CUPSTORE_LOSS_MAX; c++)
            n += (double)m->loss_by_device[d][c];
        tui_hist_set(h, d < CUPSTORE_DEVICE_MAX ? TUI_S_DROP_DEV + d : TUI_S_DROP_HOST, s, n);
    }
    if (!m->have_health)
        return 0;
    const cupstore_health *r = &m->h;
    double total = 0.0;
    for (int k = 0; k < CUPSTORE_KIND_MAX; k++) {
        tui_hist_set(h, TUI_S_REC_KIND + k, s, (double)r->records_by_kind[k]);
        total += (double)r->records_by_kind[k];
    }
    tui_hist_set(h, TUI_S_REC_TOTAL, s, total);
    double ovh = 0.0;
    for (int i = 0; i < CUPSTORE_OVERHEAD_MAX; i++)
        ovh += (double)r->overhead_by_type[i];
    tui_hist_set(h, TUI_S_BUF_OUT, s, r->buf_outstanding);
    tui_hist_set(h, TUI_S_POOL_LIMIT, s, r->pool_limit);
    tui_hist_set(h, TUI_S_BUF_DECLINED, s, (double)r->buf_declined);
    tui_hist_set(h, TUI_S_OVERHEAD, s, ovh);
    tui_hist_set(h, TUI_S_Q_DEPTH, s, r->queue_depth);
    tui_hist_set(h, TUI_S_Q_HW, s, r->queue_high_water);
    tui_hist_set(h, TUI_S_Q_CAP, s, r->queue_capacity);
    tui_hist_set(h, TUI_S_CMP_P50, s, r->cmp_lat.p50_ns);
    tui_hist_set(h, TUI_S_CMP_P99, s, r->cmp_lat.p99_ns);
    tui_hist_set(h, TUI_S_CMP_MAX, s, r->cmp_lat.max_ns);
    tui_hist_set(h, TUI_S_COMMIT_P50, s, r->commit_lat.p50_ns);
    tui_hist_set(h, TUI_S_COMMIT_P99, s, r->commit_lat.p99_ns);
    tui_hist_set(h, TUI_S_COMMIT_MAX, s, r->commit_lat.max_ns);
    tui_hist_set(h, TUI_S_EPOCH, s, r->epoch);
    tui_hist_set(h, TUI_S_KINDS, s, r->kinds_enabled);
    hist_ledger(h, s, r);
    if (s >= h->last_second) {
        h->last_second = s;
        h->last = *r;
        h->have_last = true;
    }
    return 0;
}

static int epoch_cb(const cupstore_epoch *e, void *arg)
{
    tui_hist *h = arg;
    if (h->nepochs < TUI_MAX_EPOCHS)
        h->epochs[h->nepochs++] = *e;
    return 0;
}

static int mark_cb(const cupstore_mark *m, void *arg)
{
    tui_hist *h = arg;
    if (h->nmarks < TUI_MAX_MARKS)
        h->marks[h->nmarks++] = *m;
    return 0;
}

int tui_hist_sample(tui_hist *h, cupstore_env *env)
{
    char *cause = NULL;
    int rc = model_live_series(env, &h->live, second_cb, h, &cause);
    free(cause);   /* "ID: model_strerror(rc)": the frame shows the code's words */
    if (rc != 0)
        return rc;
    cupstore_txn *txn;
    if ((rc = cupstore_txn_begin(env, false, &txn)) != 0)
        return rc;
    h->nepochs = 0;
    rc = cupstore_epoch_scan(txn, epoch_cb, h);
    if (rc == 0) {
        h->nmarks = 0;
        rc = cupstore_mark_scan(txn, mark_cb, h);
    }
    if (rc == 0) {
        rc = cupstore_control_latest(txn, &h->ctl);
        h->have_ctl = rc == 0;
        if (rc == CUPSTORE_ENOTFOUND)
            rc = 0;
    }
    if (rc == 0) {
        rc = cupstore_final_get(txn, &h->fin);
        h->have_final = rc == 0;
        if (rc == CUPSTORE_ENOTFOUND)
            rc = 0;
    }
    cupstore_txn_abort(txn);
    if (rc != 0)
        return rc;
    h->loaded = true;
    return 0;
}
