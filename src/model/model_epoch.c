/*
 * model_epoch.c - one epoch judged by the per-epoch rule (DESIGN
 * invariant 4): its own losses, the end-of-session reasons only where the
 * epoch holds the end; and the session's baseline epoch, never one that
 * shares an unjudged tail.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model_int.h"

/* ---- One epoch, by the per-epoch rule ------------------------------------- */

static bool epoch_collects(const model_epoch_stat *e)
{
    return e->kinds && !(e->known && (e->row.flags & CUPSTORE_EPOCH_OUT_OF_SCOPE));
}

/* Reasons that judge the end of the session (its tail). */
static bool reason_at_end(unsigned r)
{
    return r == MODEL_REASON_UNCONSUMED || r == MODEL_REASON_NO_FINAL ||
           r == MODEL_REASON_PROTOCOL || r == MODEL_REASON_FLUSH;
}

int model_summarize_epoch(cupstore_env *env, uint32_t epoch, model_summary *out,
                          model_epoch_stat *stat, char **cause)
{
    model_facts f;
    if (cause)
        *cause = NULL;
    memset(out, 0, sizeof *out);
    int rc = model_facts_read(env, 0, UINT64_MAX, &f, cause);
    if (rc)
        return rc;
    const model_epoch_stat *e = NULL;
    bool last = true;
    for (size_t i = 0; i < f.nepochs; i++) {
        if (f.epochs[i].id == epoch && f.epochs[i].known)
            e = &f.epochs[i];
    }
    for (size_t i = 0; e && i < f.nepochs; i++)
        if (f.epochs[i].known && f.epochs[i].start_ns > e->start_ns)
            last = false;
    if (!e) {
        model_facts_free(&f);
        if (cause && asprintf(cause, "session %s has no epoch %" PRIu32, cupstore_env_id(env),
                              epoch) < 0)
            *cause = NULL;
        return CUPSTORE_ENOTFOUND;
    }
    model_epoch_stat st = *e;
    model_facts_free(&f);
    uint64_t from_s = st.start_ns / 1000000000u;
    uint64_t to_s = last || !st.end_ns ? UINT64_MAX : (st.end_ns - 1) / 1000000000u;
    if ((rc = model_summarize(env, from_s, to_s, out, cause)) != 0)
        return rc;
    /* the reasons: the epoch's own losses, then what still applies */
    model_reason *old = out->reasons;
    size_t nold = out->nreasons;
    bool collects = epoch_collects(&st);
    out->reasons = NULL;
    out->nreasons = 0;
    out->loss_total = 0;
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++) {
        out->loss[l] = st.loss[l];
        out->loss_total += st.loss[l];
        if (!collects)
            out->loss_estimate[l] = 0;
        if (st.loss[l] &&
            (rc = model_reason_add(out, l, st.loss[l], from_s, to_s == UINT64_MAX ? out->end_ns /
                             1000000000u : to_s, 0, "%s: %" PRIu64 " records lost in epoch %"
                             PRIu32 " (%s)", cupstore_loss_name(l), st.loss[l], epoch,
                             cupstore_loss_describe(l))) != 0)
            break;
    }
    for (size_t i = 0; !rc && i < nold; i++) {
        unsigned r = old[i].reason;
        if (r < CUPSTORE_LOSS_MAX || (reason_at_end(r) && !(last && collects)))
            continue;
        model_reason *n = realloc(out->reasons, (out->nreasons + 1) * sizeof *n);
        if (!n) {
            rc = ENOMEM;
            break;
        }
        out->reasons = n;
        n[out->nreasons++] = old[i];
    }
    free(old);
    /* the records a dead session stored after its last row: the epoch
     * open at its end */
    out->records_total = st.records + (last ? out->records_after_rows : 0);
    out->seconds = (uint64_t)(st.seconds + 0.5);
    out->complete = out->nreasons == 0;
    if (stat)
        *stat = st;
    if (rc) {
        model_summary_free(out);
        if (cause && !*cause)
            model_fail(cause, rc, cupstore_env_id(env));
    }
    return rc;
}

int model_session_baseline(const model_summary *s, const model_facts *f)
{
    int base = model_epoch_baseline(f->epochs, f->nepochs);
    if (base < 0)
        return base;
    bool end_judged = false;   /* the tail is missing or unjudged */
    for (size_t i = 0; i < s->nreasons; i++)
        end_judged |= reason_at_end(s->reasons[i].reason);
    if (!end_judged)
        return base;
    /* the epoch open at the end shares the session's end: never a baseline */
    const model_epoch_stat *b = &f->epochs[base];
    for (size_t i = 0; i < f->nepochs; i++)
        if (f->epochs[i].known && f->epochs[i].start_ns > b->start_ns)
            return base;
    model_epoch_stat *copy = malloc(f->nepochs * sizeof *copy);
    if (!copy)
        return -1;
    memcpy(copy, f->epochs, f->nepochs * sizeof *copy);
    copy[base].losses = 1;   /* judged lossy: take the next best */
    int next = model_epoch_baseline(copy, f->nepochs);
    free(copy);
    return next;
}
