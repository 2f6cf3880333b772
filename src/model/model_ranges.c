/*
 * model_ranges.c - NVTX range statistics per name (model_ranges.h): read
 * the range table once, group the rows by (name, domain), sort each group
 * by time and by duration, and compute nearest-rank percentiles.
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "model_ranges.h"

#define NO_NAME UINT32_MAX

struct load {
    model_range_inst *inst;
    uint64_t *key;          /* name_id << 32 | domain_id per row          */
    size_t n, cap;
};

static int load_row(const cupstore_range *r, void *arg)
{
    struct load *l = arg;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 1024;
        model_range_inst *ni = realloc(l->inst, cap * sizeof *ni);
        if (!ni)
            return ENOMEM;
        l->inst = ni;
        uint64_t *nk = realloc(l->key, cap * sizeof *nk);
        if (!nk)
            return ENOMEM;
        l->key = nk;
        l->cap = cap;
    }
    model_range_inst *o = &l->inst[l->n];
    memset(o, 0, sizeof *o);
    o->id = r->id;
    o->name = NO_NAME;
    o->flags = r->flags;
    o->pid = r->pid;
    o->tid = r->tid;
    o->end_tid = r->end_tid;
    o->depth = r->depth;
    o->start_ns = r->start_ns;
    o->end_ns = r->end_ns;
    o->color = r->color;
    o->category = r->category;
    o->payload_kind = r->payload_kind;
    o->payload = r->payload;
    if (model_range_closed(o) && r->end_ns >= r->start_ns)
        o->dur_ns = r->end_ns - r->start_ns;
    /* An end without a start has no name: it groups apart (key 0). */
    l->key[l->n] = (r->flags & (CUPSTORE_RANGE_START | CUPSTORE_RANGE_POINT))
                       ? ((uint64_t)r->name_id << 32 | r->domain_id)
                       : 0;
    l->n++;
    return 0;
}

/* qsort has no context argument: the sort keys live here for one call of
 * model_ranges_load (the model is not used from several threads at once
 * with this sort; the pointers are set and cleared around each qsort). */
static _Thread_local const struct load *sort_l;

static int by_key_time(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const struct load *l = sort_l;
    if (l->key[i] != l->key[j])
        return l->key[i] < l->key[j] ? -1 : 1;
    if (l->inst[i].start_ns != l->inst[j].start_ns)
        return l->inst[i].start_ns < l->inst[j].start_ns ? -1 : 1;
    return l->inst[i].id < l->inst[j].id ? -1 : l->inst[i].id > l->inst[j].id;
}

static int by_dur_desc(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const model_range_inst *x = &sort_l->inst[i], *y = &sort_l->inst[j];
    if (x->dur_ns != y->dur_ns)
        return x->dur_ns > y->dur_ns ? -1 : 1;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int name_cmp(const void *a, const void *b)
{
    const model_range_name *x = a, *y = b;
    if (x->total_ns != y->total_ns)
        return x->total_ns > y->total_ns ? -1 : 1;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(x->name, y->name, n);
    if (c)
        return c;
    if (x->name_len != y->name_len)
        return x->name_len < y->name_len ? -1 : 1;
    n = x->domain_len < y->domain_len ? x->domain_len : y->domain_len;
    c = memcmp(x->domain, y->domain, n);
    return c ? c : (x->domain_len > y->domain_len) - (x->domain_len < y->domain_len);
}

uint64_t model_percentile(const uint64_t *sorted, size_t n, double q)
{
    if (!n)
        return 0;
    double x = q * (double)n;
    size_t rank = (size_t)x;
    if ((double)rank < x)
        rank++; /* ceil without libm */
    size_t i = rank < 1 ? 0 : rank - 1;
    return sorted[i < n ? i : n - 1];
}

/* A malloc'ed NUL-terminated copy of an interned name ("" for id 0). */
static int name_copy(cupstore_txn *txn, uint32_t id, char **out, size_t *len)
{
    const char *p = "";
    size_t n = 0;
    if (id) {
        int rc = cupstore_name_get(txn, id, &p, &n);
        if (rc == CUPSTORE_ENOTFOUND) {
            p = "";
            n = 0;
        } else if (rc) {
            return rc;
        }
    }
    *out = malloc(n + 1);
    if (!*out)
        return ENOMEM;
    memcpy(*out, p, n);
    (*out)[n] = '\0';
    *len = n;
    return 0;
}

/* Whether a group's name and domain pass the filter. */
static bool wanted(const model_ranges_opts *o, const model_range_name *e)
{
    if (!o)
        return true;
    if (o->domain && strcmp(o->domain, e->domain) != 0)
        return false;
    if (o->name_glob && (strlen(e->name) != e->name_len || fnmatch(o->name_glob, e->name, 0)))
        return false;
    return true;
}

/* Fill e from the rows idx[0..n) of one group (sorted by time). */
static int group_stats(model_ranges *m, model_range_name *e, const size_t *idx, size_t n,
                       uint32_t name_index)
{
    e->by_time = malloc((n ? n : 1) * sizeof *e->by_time);
    e->by_dur = malloc((n ? n : 1) * sizeof *e->by_dur);
    uint64_t *d = malloc((n ? n : 1) * sizeof *d);
    if (!e->by_time || !e->by_dur || !d) {
        free(d);
        return ENOMEM;
    }
    size_t nc = 0;
    for (size_t i = 0; i < n; i++) {
        model_range_inst *r = &m->inst[idx[i]];
        r->name = name_index;
        e->by_time[i] = idx[i];
        if (r->flags & CUPSTORE_RANGE_POINT)
            e->points++;
        else if (model_range_closed(r)) {
            e->by_dur[nc] = idx[i];
            d[nc++] = r->dur_ns;
            e->total_ns += r->dur_ns;
        } else if (model_range_open(r))
            e->open++;
    }
    e->ntime = n;
    e->count = nc;
    qsort(d, nc, sizeof *d, u64_cmp);
    qsort(e->by_dur, nc, sizeof *e->by_dur, by_dur_desc);
    if (nc) {
        e->min_ns = d[0];
        e->max_ns = d[nc - 1];
        e->p50_ns = model_percentile(d, nc, 0.50);
        e->p90_ns = model_percentile(d, nc, 0.90);
        e->p99_ns = model_percentile(d, nc, 0.99);
    }
    free(d);
    return 0;
}

static void name_free(model_range_name *e)
{
    free(e->name);
    free(e->domain);
    free(e->by_dur);
    free(e->by_time);
}

int model_ranges_load(cupstore_txn *txn, const model_ranges_opts *opts, model_ranges **out)
{
    struct load l = {0};
    size_t *idx = NULL;
    model_ranges *m = calloc(1, sizeof *m);
    if (!txn || !out) {
        free(m);
        return CUPSTORE_EINVAL;
    }
    *out = NULL;
    if (!m)
        return ENOMEM;
    int rc = cupstore_range_scan(txn, load_row, &l);
    if (rc == CUPSTORE_ENOTFOUND)
        rc = 0;
    if (rc)
        goto fail;
    m->inst = l.inst;
    m->ninst = l.n;
    idx = malloc((l.n ? l.n : 1) * sizeof *idx);
    if (!idx) {
        rc = ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < l.n; i++)
        idx[i] = i;
    sort_l = &l;
    qsort(idx, l.n, sizeof *idx, by_key_time);
    size_t ngroups = 0;
    for (size_t i = 0; i < l.n; i++)
        if (i == 0 || l.key[idx[i]] != l.key[idx[i - 1]])
            ngroups++;
    m->names = calloc(ngroups ? ngroups : 1, sizeof *m->names);
    if (!m->names) {
        rc = ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < l.n;) {
        size_t j = i;
        while (j < l.n && l.key[idx[j]] == l.key[idx[i]])
            j++;
        uint64_t key = l.key[idx[i]];
        if (key == 0) { /* unbalanced ends */
            m->unbalanced += j - i;
            i = j;
            continue;
        }
        model_range_name *e = &m->names[m->nnames];
        if ((rc = name_copy(txn, (uint32_t)(key >> 32), &e->name, &e->name_len)) != 0 ||
            (rc = name_copy(txn, (uint32_t)key, &e->domain, &e->domain_len)) != 0) {
            m->nnames++;
            goto fail;
        }
        if (!wanted(opts, e)) {
            name_free(e);
            memset(e, 0, sizeof *e);
            i = j;
            continue;
        }
        rc = group_stats(m, e, idx + i, j - i, 0);
        m->nnames++;
        if (rc)
            goto fail;
        i = j;
    }
    sort_l = NULL;
    qsort(m->names, m->nnames, sizeof *m->names, name_cmp);
    for (size_t k = 0; k < m->nnames; k++) {
        model_range_name *e = &m->names[k];
        for (size_t i = 0; i < e->ntime; i++)
            m->inst[e->by_time[i]].name = (uint32_t)k;
        m->open += e->open;
        m->points += e->points;
    }
    free(idx);
    free(l.key);
    *out = m;
    return 0;
fail:
    sort_l = NULL;
    free(idx);
    free(l.key);
    if (l.inst != m->inst)
        free(l.inst);
    model_ranges_free(m);
    return rc;
}

void model_ranges_free(model_ranges *m)
{
    if (!m)
        return;
    for (size_t k = 0; k < m->nnames; k++)
        name_free(&m->names[k]);
    free(m->names);
    free(m->inst);
    free(m);
}

long model_ranges_find(const model_ranges *m, const char *name, const char *domain)
{
    if (!m || !name)
        return -1;
    size_t nl = strlen(name);
    for (size_t k = 0; k < m->nnames; k++) {
        const model_range_name *e = &m->names[k];
        if (e->name_len == nl && memcmp(e->name, name, nl) == 0 &&
            (!domain || strcmp(e->domain, domain) == 0))
            return (long)k;
    }
    return -1;
}

long model_ranges_step(const model_ranges *m, size_t name, uint64_t t_ns, int dir)
{
    if (!m || name >= m->nnames || dir == 0)
        return -1;
    const model_range_name *e = &m->names[name];
    /* first index whose start is > t_ns (dir > 0) or >= t_ns (dir < 0) */
    size_t lo = 0, hi = e->ntime;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t s = m->inst[e->by_time[mid]].start_ns;
        if (dir > 0 ? s <= t_ns : s < t_ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (dir > 0)
        return lo < e->ntime ? (long)e->by_time[lo] : -1;
    return lo > 0 ? (long)e->by_time[lo - 1] : -1;
}

long model_ranges_nth(const model_ranges *m, size_t name, uint64_t n)
{
    if (!m || name >= m->nnames || n == 0 || n > m->names[name].ntime)
        return -1;
    return (long)m->names[name].by_time[n - 1];
}
