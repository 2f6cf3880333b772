/*
 * model_seconds.c - the seconds of a session as the verdict counts them.
 * One rule, here only: a class's loss in a second is the larger of the
 * health row's counter and the sum of that second's exact (non-estimate)
 * loss rows, so a class written to only one of the two tables still
 * counts, and one written to both is not counted twice.  A second with loss
 * rows but no health row (a tail written after the last row, a crash) is a
 * second too.  model_summarize, model_facts_read (the per-epoch figures)
 * and the monitor's live series (model_live_series) all read seconds
 * through model_seconds_scan, so they cannot disagree.
 *
 * Cost: one health scan, and per health row one seek into the loss rows of
 * its second (plus one for each gap with loss rows only); memory is one
 * model_second.
 */
#include "config.h"

#include <string.h>

#include "model.h"

typedef struct seconds_ctx {
    cupstore_txn *txn;
    model_second_fn fn;
    void *arg;
    uint64_t next;              /* first second not yet emitted             */
    model_second cur;           /* the second being gathered                */
    bool have;                  /* cur holds loss rows (loss-only pass)     */
} seconds_ctx;

/* Add one loss row to s (its second). */
static void second_add_row(model_second *s, const cupstore_loss_row *r)
{
    if (r->loss >= CUPSTORE_LOSS_MAX)
        return;
    if (r->estimate) {
        /* kind "all": a count estimated on its own (the shared discard
         * buffer); other estimates split an exact count over kinds */
        if (r->kind == CUPSTORE_KIND_ALL)
            s->estimate[r->loss] += r->count;
        else if (r->kind < CUPSTORE_KIND_MAX)
            s->est_kind[r->kind] += r->count;
        return;
    }
    s->rows_loss[r->loss] += r->count;
    s->loss_by_device[r->device < CUPSTORE_DEVICE_MAX ? r->device : MODEL_DEVICE_NONE]
                     [r->loss] += r->count;
}

/* The verdict's rule, once the second's rows are all in. */
static void second_merge(model_second *s)
{
    s->loss_total = 0;
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++) {
        uint64_t h = s->have_health ? s->h.loss[l] : 0;
        s->loss[l] = s->rows_loss[l] > h ? s->rows_loss[l] : h;
        s->loss_total += s->loss[l];
    }
}

static int gather_row(const cupstore_loss_row *r, void *arg)
{
    second_add_row(arg, r);
    return 0;
}

/* Loss-only seconds: gathered row by row, emitted when the second changes. */
static int emit_cur(seconds_ctx *c)
{
    if (!c->have)
        return 0;
    c->have = false;
    second_merge(&c->cur);
    return c->fn(&c->cur, c->arg);
}

static int loss_only_row(const cupstore_loss_row *r, void *arg)
{
    seconds_ctx *c = arg;
    if (c->have && r->second != c->cur.second) {
        int rc = emit_cur(c);
        if (rc)
            return rc;
    }
    if (!c->have) {
        memset(&c->cur, 0, sizeof c->cur);
        c->cur.second = c->cur.h.second = r->second;
        c->have = true;
    }
    second_add_row(&c->cur, r);
    return 0;
}

static int loss_only(seconds_ctx *c, uint64_t from, uint64_t to)
{
    if (from > to)
        return 0;
    int rc = cupstore_loss_scan(c->txn, from, to, loss_only_row, c);
    return rc ? rc : emit_cur(c);
}

static int health_second(const cupstore_health *h, void *arg)
{
    seconds_ctx *c = arg;
    int rc;
    if (h->second > c->next && (rc = loss_only(c, c->next, h->second - 1)) != 0)
        return rc;
    memset(&c->cur, 0, sizeof c->cur);
    c->cur.second = h->second;
    c->cur.have_health = true;
    c->cur.h = *h;
    if ((rc = cupstore_loss_scan(c->txn, h->second, h->second, gather_row, &c->cur)) != 0)
        return rc;
    second_merge(&c->cur);
    c->next = h->second + 1;
    return c->fn(&c->cur, c->arg);
}

int model_seconds_scan(cupstore_txn *txn, uint64_t from, uint64_t to, model_second_fn fn,
                       void *arg)
{
    seconds_ctx c = {.txn = txn, .fn = fn, .arg = arg, .next = from};
    int rc = cupstore_health_scan(txn, from, to, health_second, &c);
    return rc ? rc : loss_only(&c, c.next, to);
}
