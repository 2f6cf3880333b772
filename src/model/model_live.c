/*
 * model_live.c - model_summarize for live sessions at the cost of their
 * new rows.  A session's seconds are independent in the summary: records
 * and buffers are per-row sums, and each loss class is merged per second
 * (health row against exact loss rows), so the summary of [0, S] plus the
 * summary of [S+1, now] gives the whole session's counts.  The seconds up
 * to S (a few seconds behind the newest row, so no write can still land
 * in them) are folded into a base once; each update summarises only the
 * seconds after S.  While the session runs its verdict is COMPLETE so far
 * exactly when nothing was lost and the agent never stepped aside; once it
 * has ended or crashed, the final-status judgement needs the whole
 * session, so that update is a full model_summarize (once an ended
 * session's summary stands: nothing changes after its final status).
 * model_live_series gives a live front end the per-second series with the
 * same rule (model_seconds_scan), re-reading the newest MODEL_LIVE_GUARD
 * seconds each frame: the one staleness policy.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* Fold once the open tail holds this many seconds, keeping the newest
 * LIVE_GUARD seconds out of the base. */
#define LIVE_FOLD_AT 16
#define LIVE_GUARD MODEL_LIVE_GUARD

static bool has_reason(const model_summary *s, unsigned reason)
{
    for (size_t i = 0; i < s->nreasons; i++)
        if (s->reasons[i].reason == reason)
            return true;
    return false;
}

/* a += b for the per-second counts. */
static void add_counts(model_summary *a, const model_summary *b)
{
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
        a->records_by_kind[k] += b->records_by_kind[k];
    for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX; d++)
        a->records_by_device[d] += b->records_by_device[d];
    a->device_mask |= b->device_mask;
    a->records_total += b->records_total;
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++) {
        a->loss[l] += b->loss[l];
        for (unsigned d = 0; d <= MODEL_DEVICE_NONE; d++)
            a->loss_by_device[d][l] += b->loss_by_device[d][l];
    }
    a->loss_total += b->loss_total;
    a->buf_completed += b->buf_completed;
    a->buf_consumed += b->buf_consumed;
    a->seconds += b->seconds;
}

void model_live_free(model_live *l)
{
    model_summary_free(&l->sum);
    model_summary_free(&l->base);
    memset(l, 0, sizeof *l);
}

static void replace_sum(model_live *l, model_summary *s)
{
    model_summary_free(&l->sum);
    l->sum = *s;
    l->have_sum = true;
}

int model_live_update(cupstore_env *env, model_live *l, char **cause)
{
    model_summary tail;
    if (cause)
        *cause = NULL;
    if (l->have_sum && l->sum.state == MODEL_STATE_ENDED)
        return 0;   /* a final status: nothing changes any more */
    uint64_t from = l->have_base ? l->base_to + 1 : 0;
    int rc = model_summarize(env, from, UINT64_MAX, &tail, cause);
    if (rc)
        return rc;
    if (tail.state != MODEL_STATE_RUNNING || !l->have_base) {
        if (l->have_base) {
            /* ended or crashed: judge the whole session */
            model_summary_free(&tail);
            if ((rc = model_summarize(env, 0, UINT64_MAX, &tail, cause)) != 0)
                return rc;
        }
        if (tail.state == MODEL_STATE_RUNNING) {
            /* the first update: the whole session so far is the tail */
            l->base_to = 0;
            l->have_base = false;
        }
        replace_sum(l, &tail);
    } else {
        /* running: base + tail; the tail carries the session-wide fields */
        bool disabled = l->disabled || has_reason(&tail, MODEL_REASON_DISABLED);
        add_counts(&tail, &l->base);
        tail.complete = tail.loss_total == 0 && !disabled;
        replace_sum(l, &tail);
    }
    if (l->sum.state != MODEL_STATE_RUNNING)
        return 0;

    /* Fold old seconds of the tail into the base: those more than
     * LIVE_GUARD seconds before the newest row. */
    uint64_t tail_seconds = l->sum.seconds - (l->have_base ? l->base.seconds : 0);
    if (tail_seconds < LIVE_FOLD_AT)
        return 0;
    cupstore_txn *txn;
    cupstore_health last;
    if (cupstore_txn_begin(env, false, &txn) != 0)
        return 0;
    rc = cupstore_health_last(txn, &last);
    cupstore_txn_abort(txn);
    uint64_t newest = last.second;
    if (rc || newest < LIVE_GUARD || newest - LIVE_GUARD < from)
        return 0;
    uint64_t to = newest - LIVE_GUARD;
    model_summary part;
    /* A failure here loses no cause: the sum above stands, and the next
     * update summarizes these seconds again (from base_to + 1, unchanged),
     * where the same failure is returned with its cause. */
    if (model_summarize(env, from, to, &part, NULL) != 0)
        return 0;
    l->disabled = l->disabled || has_reason(&part, MODEL_REASON_DISABLED);
    if (!l->have_base) {
        l->base = part;
        l->have_base = true;
    } else {
        add_counts(&l->base, &part);
        model_summary_free(&part);
    }
    l->base_to = to;
    return 0;
}

typedef struct series_ctx {
    model_second_fn fn;
    void *arg;
    uint64_t newest;
    bool any;
} series_ctx;

static int series_second(const model_second *m, void *arg)
{
    series_ctx *c = arg;
    c->newest = m->second;
    c->any = true;
    return c->fn(m, c->arg);
}

int model_live_series(cupstore_env *env, model_live *l, model_second_fn fn, void *arg,
                      char **cause)
{
    int rc = model_live_update(env, l, cause);
    if (rc)
        return rc;
    cupstore_txn *txn;
    if ((rc = cupstore_txn_begin(env, false, &txn)) != 0) {
        if (cause && asprintf(cause, "%s: %s", cupstore_env_id(env), model_strerror(rc)) < 0)
            *cause = NULL;
        return rc;
    }
    series_ctx c = {.fn = fn, .arg = arg};
    uint64_t from = l->series_started ? l->series_from : 0;
    rc = model_seconds_scan(txn, from, UINT64_MAX, series_second, &c);
    cupstore_txn_abort(txn);
    if (rc) {
        if (cause && asprintf(cause, "%s: %s", cupstore_env_id(env), model_strerror(rc)) < 0)
            *cause = NULL;
        return rc;
    }
    if (c.any) {
        uint64_t next = c.newest >= MODEL_LIVE_GUARD ? c.newest - MODEL_LIVE_GUARD + 1 : 0;
        l->series_from = next > from ? next : from;
        l->series_started = true;
    }
    return 0;
}
