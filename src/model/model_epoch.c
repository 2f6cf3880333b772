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

/* ---- Records by the epoch of their launch ---------------------------------- */

static bool kind_launched(unsigned kind)
{
    return kind == CUPSTORE_KIND_KERNEL || kind == CUPSTORE_KIND_MEMCPY ||
           kind == CUPSTORE_KIND_MEMSET || kind == CUPSTORE_KIND_GRAPH;
}

static int map_on_epoch(const cupstore_epoch *e, void *arg)
{
    model_epoch_map *m = arg;
    model_epoch_span *n = realloc(m->e, (m->n + 1) * sizeof *n);
    if (!n)
        return ENOMEM;
    m->e = n;
    n[m->n++] = (model_epoch_span){
        .id = e->id, .start_ns = e->start_ns, .end_ns = e->end_ns,
        .collects = e->kinds && !(e->flags & CUPSTORE_EPOCH_OUT_OF_SCOPE)};
    return 0;
}

static int cmp_span(const void *a, const void *b)
{
    const model_epoch_span *x = a, *y = b;
    return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns ? 1
                                                                        : (x->id > y->id) - (x->id < y->id);
}

struct corr_min {
    uint64_t to_ns;
    uint32_t lo;
    bool have;
};

static int on_api_corr(const cupstore_record *r, void *arg)
{
    struct corr_min *c = arg;
    if ((r->kind == CUPSTORE_KIND_RUNTIME || r->kind == CUPSTORE_KIND_DRIVER) && r->correlation &&
        r->start_ns && r->start_ns < c->to_ns && (!c->have || r->correlation < c->lo)) {
        c->lo = r->correlation;
        c->have = true;
    }
    return 0;
}

int model_epoch_map_read(cupstore_txn *txn, model_epoch_map *m)
{
    memset(m, 0, sizeof *m);
    int rc = cupstore_epoch_scan(txn, map_on_epoch, m);
    if (rc || !m->n) {
        if (rc)
            model_epoch_map_free(m);
        return rc;
    }
    qsort(m->e, m->n, sizeof *m->e, cmp_span);
    if (!(m->coll = malloc(m->n * sizeof *m->coll))) {
        model_epoch_map_free(m);
        return ENOMEM;
    }
    for (size_t i = 0; i < m->n; i++) {
        model_epoch_span *e = &m->e[i];
        if (!e->collects)
            continue;
        uint64_t to = e->start_ns + 2000000000ull;
        if (e->end_ns && e->end_ns < to)
            to = e->end_ns;
        struct corr_min c = {.to_ns = to};
        if ((rc = cupstore_record_scan(txn, e->start_ns, to, on_api_corr, &c)) != 0) {
            model_epoch_map_free(m);
            return rc;
        }
        e->corr_known = c.have;
        e->corr_lo = c.lo;
        m->coll[m->ncoll++] = i;
    }
    return 0;
}

/* A record without a time (CUPTI's zero timestamps) goes by the window it
 * is read in: its id alone cannot say which attach made it, since CUPTI
 * numbers its calls afresh after a teardown (the truth matrix, seed
 * 1810010430095: zero-ts records of a detached and re-attached session
 * placed by id in an epoch whose scan never read them). */
bool model_epoch_map_places(const model_epoch_map *m, const cupstore_record *r)
{
    (void)m;
    return kind_launched(r->kind) && r->start_ns && !(r->flags & CUPSTORE_RF_ZERO_TS);
}

long model_epoch_map_of(const model_epoch_map *m, const cupstore_record *r)
{
    bool launched = kind_launched(r->kind);
    bool timed = r->start_ns && !(r->flags & CUPSTORE_RF_ZERO_TS);
    if (launched && timed && r->correlation && m->ncoll) {
        /* The last collecting epoch started by the record's start (its
         * launch came before it; MODEL_EPOCH_SKEW_NS for the clocks), then
         * back while the record's id lies below that epoch's first: it was
         * launched before.  No growing ids needed across the epochs: CUPTI
         * gives ids afresh after a teardown (cuptiFinalize between periodic
         * windows; the H100, session 18), and a torn-down attach leaves no
         * GPU work to run into the next one.  Work that started before the
         * first collecting epoch (launched between CUPTI's attach and the
         * epoch's stamp) is the first's. */
        size_t i = m->ncoll;
        while (i > 0 && m->e[m->coll[i - 1]].start_ns > r->start_ns + MODEL_EPOCH_SKEW_NS)
            i--;
        if (i == 0)
            return (long)m->coll[0];
        i--;
        while (i > 0 && m->e[m->coll[i]].corr_known && r->correlation < m->e[m->coll[i]].corr_lo)
            i--;
        return (long)m->coll[i];
    }
    if (!timed)
        return -1;
    if (launched) {
        /* GPU work that starts where nothing is collected (a dormant or
         * out-of-scope epoch, after the end) was launched in the last
         * epoch that collected */
        for (size_t i = m->ncoll; i-- > 0;)
            if (r->start_ns >= m->e[m->coll[i]].start_ns)
                return (long)m->coll[i];
        return -1;
    }
    for (size_t i = m->n; i-- > 0;)
        if (r->start_ns >= m->e[i].start_ns)
            return !m->e[i].end_ns || r->start_ns < m->e[i].end_ns ? (long)i : -1;
    return -1;
}

long model_epoch_map_find(const model_epoch_map *m, uint32_t id)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->e[i].id == id)
            return (long)i;
    return -1;
}

void model_epoch_map_free(model_epoch_map *m)
{
    free(m->e);
    free(m->coll);
    memset(m, 0, sizeof *m);
}
