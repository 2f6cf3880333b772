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

/* The distinct keys of the rows, in an open-addressing table at most half
 * full: slot_group[h] is the group of keys[h] (SIZE_MAX: a free slot),
 * groups numbered as their keys first appear.  The caller frees both. */
struct key_table {
    uint64_t *keys;
    size_t *slot_group;
    size_t cap, ng;
};

/* Fill t from l's rows, row_group[i]: row i's group; the table is rebuilt
 * four times larger until it is at most half full.  0 or ENOMEM. */
static int key_table_fill(struct key_table *t, const struct load *l, uint32_t *row_group)
{
    for (size_t cap = 64;; cap *= 4) {
        free(t->keys);
        free(t->slot_group);
        t->keys = malloc(cap * sizeof *t->keys);
        t->slot_group = malloc(cap * sizeof *t->slot_group);
        if (!t->keys || !t->slot_group)
            return ENOMEM;
        for (size_t i = 0; i < cap; i++)
            t->slot_group[i] = SIZE_MAX;
        t->cap = cap;
        t->ng = 0;
        bool full = false;
        for (size_t i = 0; i < l->n && !full; i++) {
            uint64_t k = l->key[i];
            size_t h = (size_t)((k * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
            while (t->slot_group[h] != SIZE_MAX && t->keys[h] != k)
                h = (h + 1) & (cap - 1);
            if (t->slot_group[h] == SIZE_MAX) {
                if (2 * (t->ng + 1) > cap) {
                    full = true;
                    break;
                }
                t->keys[h] = k;
                t->slot_group[h] = t->ng++;
            }
            row_group[i] = (uint32_t)t->slot_group[h];
        }
        if (!full)
            return 0;
    }
}

/* Order the row indexes by (key, start, id) into idx: rows are grouped by
 * key with a small hash table (few distinct names), stably, so each group
 * keeps marker-id order, which is nearly always start order already; a
 * group is sorted only when it is not.  Linear for the usual table. */
static int group_rows(const struct load *l, size_t *idx, size_t *ngroups)
{
    struct key_table kt = {NULL, NULL, 0, 0};
    size_t *count = NULL, *pos = NULL;
    uint32_t *row_group = malloc((l->n ? l->n : 1) * sizeof *row_group);
    int rc = ENOMEM;
    if (!row_group)
        return ENOMEM;
    if (key_table_fill(&kt, l, row_group) != 0)
        goto out;
    size_t cap = kt.cap, ng = kt.ng;
    const uint64_t *keys = kt.keys;
    const size_t *slot_group = kt.slot_group;
    /* groups in key order, as the callers expect */
    size_t *order = malloc((ng ? ng : 1) * sizeof *order), *rank = malloc((ng ? ng : 1) * sizeof *rank);
    uint64_t *gkey = malloc((ng ? ng : 1) * sizeof *gkey);
    count = calloc(ng ? ng : 1, sizeof *count);
    pos = malloc((ng ? ng : 1) * sizeof *pos);
    if (!order || !rank || !gkey || !count || !pos) {
        free(order);
        free(rank);
        free(gkey);
        goto out;
    }
    for (size_t h = 0; h < cap; h++)
        if (slot_group[h] != SIZE_MAX)
            gkey[slot_group[h]] = keys[h];
    for (size_t g = 0; g < ng; g++)
        order[g] = g;
    for (size_t a = 1; a < ng; a++) /* insertion sort: few groups */
        for (size_t b = a; b > 0 && gkey[order[b - 1]] > gkey[order[b]]; b--) {
            size_t swap = order[b];
            order[b] = order[b - 1];
            order[b - 1] = swap;
        }
    for (size_t g = 0; g < ng; g++)
        rank[order[g]] = g;
    for (size_t i = 0; i < l->n; i++)
        count[rank[row_group[i]]]++;
    size_t acc = 0;
    for (size_t g = 0; g < ng; g++) {
        pos[g] = acc;
        acc += count[g];
    }
    for (size_t i = 0; i < l->n; i++)
        idx[pos[rank[row_group[i]]]++] = i;
    acc = 0;
    for (size_t g = 0; g < ng; g++) {
        size_t *p = idx + acc;
        bool sorted = true;
        for (size_t i = 1; i < count[g] && sorted; i++)
            sorted = by_key_time(&p[i - 1], &p[i]) <= 0;
        if (!sorted)
            qsort(p, count[g], sizeof *p, by_key_time);
        acc += count[g];
    }
    free(order);
    free(rank);
    free(gkey);
    *ngroups = ng;
    rc = 0;
out:
    free(kt.keys);
    free(kt.slot_group);
    free(count);
    free(pos);
    free(row_group);
    return rc;
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
    if (nc)
        qsort(e->by_dur, nc, sizeof *e->by_dur, by_dur_desc);
    for (size_t i = 0; i < nc; i++) /* ascending, from the slowest-first order */
        d[i] = m->inst[e->by_dur[nc - 1 - i]].dur_ns;
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

/* One name per group of rows (idx: the rows in key order) that passes the
 * filter, with its statistics, into m->names; the rows of no range
 * (key 0) counted as unbalanced ends.  0 or an error (m->nnames covers
 * every name to free). */
static int load_names(cupstore_txn *txn, const model_ranges_opts *opts, const struct load *l,
                      const size_t *idx, model_ranges *m)
{
    int rc;
    for (size_t i = 0; i < l->n;) {
        size_t j = i;
        while (j < l->n && l->key[idx[j]] == l->key[idx[i]])
            j++;
        uint64_t key = l->key[idx[i]];
        if (key == 0) { /* unbalanced ends (and colour/payload rows whose marker never came) */
            for (size_t q = i; q < j; q++)
                m->unbalanced += (m->inst[idx[q]].flags & CUPSTORE_RANGE_END) != 0;
            i = j;
            continue;
        }
        model_range_name *e = &m->names[m->nnames];
        if ((rc = name_copy(txn, (uint32_t)(key >> 32), &e->name, &e->name_len)) != 0 ||
            (rc = name_copy(txn, (uint32_t)key, &e->domain, &e->domain_len)) != 0) {
            m->nnames++;
            return rc;
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
            return rc;
        i = j;
    }
    return 0;
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
    uint64_t rows = 0;
    if (cupstore_range_count(txn, &rows) == 0 && rows && rows < SIZE_MAX / sizeof *l.inst) {
        l.inst = malloc((size_t)rows * sizeof *l.inst);
        l.key = malloc((size_t)rows * sizeof *l.key);
        l.cap = l.inst && l.key ? (size_t)rows : 0;
    }
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
    sort_l = &l;
    size_t ngroups = 0;
    if ((rc = group_rows(&l, idx, &ngroups)) != 0)
        goto fail;
    m->names = calloc(ngroups ? ngroups : 1, sizeof *m->names);
    if (!m->names) {
        rc = ENOMEM;
        goto fail;
    }
    if ((rc = load_names(txn, opts, &l, idx, m)) != 0)
        goto fail;
    sort_l = NULL;
    if (m->nnames)
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
