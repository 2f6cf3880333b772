/*
 * model_job_win.c - periodic windows across the processes of a job.  Each
 * process opens its windows (cuptop run --capture-range every:P/W) at the
 * same wall-clock boundaries by its own clock; from the epochs each store
 * kept, how far apart the processes opened the window of one boundary, and
 * which boundaries only some of them opened.  The hosts' clocks are taken
 * as they are: the spread is the job's alignment as the data shows it; an
 * offset between two hosts' clocks is not in it (the caller says so).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static int opening_cmp(const void *a, const void *b)
{
    const model_job_opening *x = a, *y = b;
    if (x->sched_ns != y->sched_ns)
        return x->sched_ns < y->sched_ns ? -1 : 1;
    if (x->proc != y->proc)
        return x->proc < y->proc ? -1 : 1;
    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

/* The processes that opened any window (distinct proc values). */
static size_t procs_with_windows(const model_job_opening *v, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < i && v[j].proc != v[i].proc)
            j++;
        k += j == i;
    }
    return k;
}

void model_job_windows_align(model_job_opening *v, size_t n, model_job_windows *out)
{
    memset(out, 0, sizeof *out);
    if (!n)
        return;
    out->procs = procs_with_windows(v, n);
    qsort(v, n, sizeof *v, opening_cmp);
    for (size_t i = 0; i < n;) {
        size_t j = i, procs = 0;
        uint64_t lo = v[i].start_ns, hi = v[i].start_ns;
        for (; j < n && v[j].sched_ns == v[i].sched_ns; j++) {
            procs += j == i || v[j].proc != v[j - 1].proc;
            if (v[j].start_ns < lo)
                lo = v[j].start_ns;
            if (v[j].start_ns > hi)
                hi = v[j].start_ns;
        }
        out->boundaries++;
        if (procs == out->procs)
            out->in_all++;
        if (procs > 1 && hi - lo > out->spread_ns) {
            out->spread_ns = hi - lo;
            out->spread_sched_ns = v[i].sched_ns;
        }
        i = j;
    }
}

struct win_collect {
    model_job_opening *v;
    size_t n, cap;
    size_t proc;
    int oom;
};

static int on_epoch(const cupstore_epoch *e, void *arg)
{
    struct win_collect *c = arg;
    if (!e->window_ms || !e->sched_ns || (e->flags & CUPSTORE_EPOCH_OUT_OF_SCOPE))
        return 0;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        model_job_opening *p = realloc(c->v, cap * sizeof *p);
        if (!p) {
            c->oom = 1;
            return 1;
        }
        c->v = p;
        c->cap = cap;
    }
    c->v[c->n++] = (model_job_opening){.proc = c->proc, .sched_ns = e->sched_ns,
                                       .start_ns = e->start_ns};
    return 0;
}

/* One process' window epochs, read in a guarded transaction. */
struct win_read {
    cupstore_env *env;
    struct win_collect *c;
};

static int win_read(void *arg)
{
    struct win_read *r = arg;
    cupstore_txn *txn;
    int rc = cupstore_txn_begin(r->env, false, &txn);
    if (rc)
        return rc;
    rc = cupstore_epoch_scan(txn, on_epoch, r->c);
    cupstore_txn_abort(txn);
    return r->c->oom ? -ENOMEM : rc;
}

int model_job_windows_read(const model_job *j, model_job_windows *out)
{
    struct win_collect c = {0};
    int rc = 0;
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < j->n && !rc; i++) {
        struct win_read r = {.env = model_job_env(j, &j->procs[i]), .c = &c};
        c.proc = i;
        if (r.env)
            rc = cupstore_guarded(win_read, &r);
    }
    if (!rc)
        model_job_windows_align(c.v, c.n, out);
    free(c.v);
    return rc;
}
