/*
 * model_compare.c - two windows side by side (model_compare.h): the
 * losses, per-name duration histograms and per-stream event order, streamed
 * over the record chunks of each side.  Each side's operand and its
 * comparability are model_compare_side.c's; the baseline's verdict is
 * model_baseline.c's.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model_compare_int.h"
#include "model_hist.h"

/* ---- the scan state -------------------------------------------------------------- */

typedef struct item {
    uint64_t start;
    uint32_t group;
} item;

typedef struct stream_side {
    uint64_t n;
    item *heap;                 /* max-heap by start: the earliest kept      */
    size_t len, cap;
} stream_side;

typedef struct stream_ent {
    uint16_t device;
    uint32_t stream;
    stream_side s[2];
} stream_ent;

typedef struct group_ent {
    model_cmp_gkind kind;
    char *name;
    size_t len;
    model_hist h[2];
} group_ent;

typedef struct cmp_ctx {
    const model_compare_opts *o;
    uint32_t window, cap;
    group_ent *g;
    size_t ng, gcap;
    uint32_t *ghash;            /* open addressing: group + 1, 0 empty       */
    size_t ghash_cap;
    stream_ent *st;
    size_t nst;
    uint64_t untracked;
    /* per side while scanning */
    int side;
    cupstore_txn *txn;
    model_cmp_side *sd;
    uint32_t *name_map;         /* name id -> group + 1                      */
    size_t name_map_cap;
    uint32_t memcpy_group[16];  /* copy kind -> group + 1 (per comparison)   */
    uint32_t graph_last, graph_last_id; /* the last graph id's group + 1     */
    uint64_t from_ns, to_ns;
    /* an epoch side: its records by their launch's epoch (29.2) */
    model_epoch_map map;
    long epoch;                 /* index into map.e; -1: not an epoch side   */
    bool late;                  /* the scan past the window: late GPU records */
    size_t last_stream;
    int err;
    char *buf;                  /* name_fn output                            */
} cmp_ctx;

#define NAME_BUF (16384u + 64u)

static uint64_t fnv(unsigned kind, const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull ^ kind;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* The group of (kind, name), created on first sight: -1 on ENOMEM. */
static long group_get(cmp_ctx *c, model_cmp_gkind kind, const char *s, size_t n)
{
    if (c->ng * 2 >= c->ghash_cap) {
        size_t cap = c->ghash_cap ? c->ghash_cap * 2 : 256;
        uint32_t *t = calloc(cap, sizeof *t);
        if (!t)
            return -1;
        for (size_t i = 0; i < c->ng; i++) {
            size_t j = fnv(c->g[i].kind, c->g[i].name, c->g[i].len) & (cap - 1);
            while (t[j])
                j = (j + 1) & (cap - 1);
            t[j] = (uint32_t)i + 1;
        }
        free(c->ghash);
        c->ghash = t;
        c->ghash_cap = cap;
    }
    size_t j = fnv(kind, s, n) & (c->ghash_cap - 1);
    while (c->ghash[j]) {
        group_ent *e = &c->g[c->ghash[j] - 1];
        if (e->kind == kind && e->len == n && memcmp(e->name, s, n) == 0)
            return (long)c->ghash[j] - 1;
        j = (j + 1) & (c->ghash_cap - 1);
    }
    if (c->ng == c->gcap) {
        size_t cap = c->gcap ? c->gcap * 2 : 64;
        group_ent *g = realloc(c->g, cap * sizeof *g);
        if (!g)
            return -1;
        c->g = g;
        c->gcap = cap;
    }
    group_ent *e = &c->g[c->ng];
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->len = n;
    if (!(e->name = malloc(n + 1)))
        return -1;
    memcpy(e->name, s, n);
    e->name[n] = '\0';
    c->ghash[j] = (uint32_t)c->ng + 1;
    return (long)c->ng++;
}

static long kernel_group(cmp_ctx *c, uint32_t name_id)
{
    if (name_id < c->name_map_cap && c->name_map[name_id])
        return (long)c->name_map[name_id] - 1;
    if (name_id >= c->name_map_cap) {
        size_t cap = c->name_map_cap ? c->name_map_cap : 256;
        while (cap <= name_id)
            cap *= 2;
        uint32_t *m = realloc(c->name_map, cap * sizeof *m);
        if (!m)
            return -1;
        memset(m + c->name_map_cap, 0, (cap - c->name_map_cap) * sizeof *m);
        c->name_map = m;
        c->name_map_cap = cap;
    }
    const char *s = "(no name)";
    size_t n = strlen(s);
    if (name_id && cupstore_name_get(c->txn, name_id, &s, &n) != 0) {
        s = "(unknown name)";
        n = strlen(s);
    }
    if (c->o->name_fn && n) {
        size_t d = c->o->name_fn(s, n, c->buf, NAME_BUF);
        if (d) {
            s = c->buf;
            n = d;
        }
    }
    long g = group_get(c, MODEL_CMP_KERNEL, s, n);
    if (g >= 0)
        c->name_map[name_id] = (uint32_t)g + 1;
    return g;
}

const char *model_memcpy_kind_name(uint32_t kind, char *buf, size_t len)
{
    static const char *const names[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                        "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
    if (kind < sizeof names / sizeof *names)
        return names[kind];
    snprintf(buf, len, "kind %" PRIu32, kind);
    return buf;
}

static long memcpy_group(cmp_ctx *c, uint32_t kind)
{
    if (kind < 16 && c->memcpy_group[kind])
        return (long)c->memcpy_group[kind] - 1;
    char tmp[32], name[48];
    snprintf(name, sizeof name, "memcpy %s", model_memcpy_kind_name(kind, tmp, sizeof tmp));
    long g = group_get(c, MODEL_CMP_MEMCPY, name, strlen(name));
    if (g >= 0 && kind < 16)
        c->memcpy_group[kind] = (uint32_t)g + 1;
    return g;
}

static stream_ent *stream_get(cmp_ctx *c, uint16_t device, uint32_t stream)
{
    if (c->last_stream < c->nst && c->st[c->last_stream].device == device &&
        c->st[c->last_stream].stream == stream)
        return &c->st[c->last_stream];
    for (size_t i = 0; i < c->nst; i++)
        if (c->st[i].device == device && c->st[i].stream == stream) {
            c->last_stream = i;
            return &c->st[i];
        }
    if (c->nst == MODEL_CMP_STREAMS)
        return NULL;
    stream_ent *e = &c->st[c->nst];
    memset(e, 0, sizeof *e);
    e->device = device;
    e->stream = stream;
    c->last_stream = c->nst++;
    return e;
}

static void heap_down(item *h, size_t len, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < len && h[l].start > h[m].start)
            m = l;
        if (r < len && h[r].start > h[m].start)
            m = r;
        if (m == i)
            return;
        item t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* Keep the `window` earliest kernels of the stream. */
static int order_add(cmp_ctx *c, stream_side *s, uint64_t start, uint32_t group)
{
    s->n++;
    if (s->len == c->window) {
        if (start >= s->heap[0].start)
            return 0;
        s->heap[0] = (item){start, group};
        heap_down(s->heap, s->len, 0);
        return 0;
    }
    if (s->len == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        if (cap > c->window)
            cap = c->window;
        item *h = realloc(s->heap, cap * sizeof *h);
        if (!h)
            return ENOMEM;
        s->heap = h;
        s->cap = cap;
    }
    size_t i = s->len++;
    s->heap[i] = (item){start, group};
    while (i) {
        size_t p = (i - 1) / 2;
        if (s->heap[p].start >= s->heap[i].start)
            break;
        item t = s->heap[p];
        s->heap[p] = s->heap[i];
        s->heap[i] = t;
        i = p;
    }
    return 0;
}

/* A graph id's group ("graph <id>": the name the exports give its
 * launches), the last one looked up kept (launches of one graph come in
 * runs). */
static long graph_group(cmp_ctx *c, uint32_t graph_id)
{
    if (c->graph_last && c->graph_last_id == graph_id)
        return (long)c->graph_last - 1;
    char name[32];
    int n = snprintf(name, sizeof name, "graph %" PRIu32, graph_id);
    long g = group_get(c, MODEL_CMP_GRAPH, name, (size_t)n);
    if (g >= 0) {
        c->graph_last = (uint32_t)g + 1;
        c->graph_last_id = graph_id;
    }
    return g;
}

/* Whether an epoch side takes r: a GPU record by its launch's epoch
 * (model_epoch_map_of), any other as the window's scan delivered it (past
 * the window: none). */
static bool epoch_takes(const cmp_ctx *c, const cupstore_record *r)
{
    if (c->epoch < 0)
        return true;
    if (model_epoch_map_places(&c->map, r))
        return model_epoch_map_of(&c->map, r) == c->epoch;
    return !c->late;
}

static int on_record(const cupstore_record *r, void *arg)
{
    cmp_ctx *c = arg;
    model_cmp_side *sd = c->sd;
    long g;
    if (!epoch_takes(c, r))
        return 0;
    sd->records++;
    if (r->kind == CUPSTORE_KIND_KERNEL) {
        sd->kernels++;
        g = kernel_group(c, r->name_id);
    } else if (r->kind == CUPSTORE_KIND_MEMCPY) {
        sd->memcpys++;
        g = memcpy_group(c, CUPSTORE_COPY_KIND(r->aux));
    } else if (r->kind == CUPSTORE_KIND_GRAPH) {
        sd->graphs++;
        g = graph_group(c, r->aux);
    } else {
        return 0;
    }
    if (g < 0)
        return c->err = ENOMEM;
    if ((r->flags & CUPSTORE_RF_ZERO_TS) || !r->start_ns || r->end_ns < r->start_ns) {
        sd->no_duration++;
        return 0;
    }
    if ((c->err = model_hist_add(&c->g[g].h[c->side], r->end_ns - r->start_ns)) != 0)
        return c->err;
    if (r->kind != CUPSTORE_KIND_KERNEL)
        return 0;
    stream_ent *e = stream_get(c, r->device, r->stream);
    if (!e) {
        c->untracked++;
        return 0;
    }
    return c->err = order_add(c, &e->s[c->side], r->start_ns, (uint32_t)g);
}

/* ---- order: Myers' difference with a cap ------------------------------------------- */

static int item_cmp(const void *x, const void *y)
{
    const item *a = x, *b = y;
    return a->start < b->start ? -1 : a->start > b->start ? 1 : (a->group > b->group) - (a->group < b->group);
}

/* D, the fewest insertions and deletions turning a into b, if <= cap;
 * -1 beyond the cap, -2 out of memory. */
static long myers(const item *a, long n, const item *b, long m, long cap)
{
    long max = n + m < cap ? n + m : cap;
    long *v = malloc((size_t)(2 * max + 3) * sizeof *v);
    if (!v)
        return -2;
    long off = max + 1;
    for (long i = 0; i < 2 * max + 3; i++)
        v[i] = -1;
    for (long d = 0; d <= max; d++) {
        long kmin = -d, kmax = d;
        while (kmin < -m)
            kmin += 2;
        while (kmax > n)
            kmax -= 2;
        for (long k = kmin; k <= kmax; k += 2) {
            long x;
            if (d == 0) {
                x = 0;
            } else {
                long down = v[off + k + 1], right = v[off + k - 1];
                long xd = down >= 0 && down - k <= m ? down : -1;
                long xr = right >= 0 && right + 1 <= n ? right + 1 : -1;
                x = xd > xr ? xd : xr;
                if (x < 0) {
                    v[off + k] = -1;
                    continue;
                }
            }
            long y = x - k;
            while (x < n && y < m && a[x].group == b[y].group)
                x++, y++;
            v[off + k] = x;
            if (x >= n && y >= m) {
                free(v);
                return d;
            }
        }
    }
    free(v);
    return -1;
}

static int by_stream(const void *x, const void *y)
{
    const stream_ent *a = x, *b = y;
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    return (a->stream > b->stream) - (a->stream < b->stream);
}

static int order_finish(cmp_ctx *c, model_compare *out)
{
    if (!c->nst)
        return 0;
    qsort(c->st, c->nst, sizeof *c->st, by_stream);
    out->streams = calloc(c->nst, sizeof *out->streams);
    if (!out->streams)
        return ENOMEM;
    out->nstreams = c->nst;
    for (size_t i = 0; i < c->nst; i++) {
        stream_ent *e = &c->st[i];
        model_cmp_stream *o = &out->streams[i];
        o->device = e->device;
        o->stream = e->stream;
        for (int s = 0; s < 2; s++) {
            if (e->s[s].len)   /* no kernel on this side: heap is NULL */
                qsort(e->s[s].heap, e->s[s].len, sizeof *e->s[s].heap, item_cmp);
            o->kernels[s] = e->s[s].n;
            o->compared[s] = e->s[s].len;
        }
        const item *a = e->s[0].heap, *b = e->s[1].heap;
        size_t na = e->s[0].len, nb = e->s[1].len, shorter = na < nb ? na : nb, j = 0;
        while (j < shorter && a[j].group == b[j].group)
            j++;
        o->diverged = j < na || j < nb;
        o->diverge_index = j;
        o->diverge_group[0] = o->diverge_group[1] = -1;
        if (o->diverged) {
            if (j < na) {
                o->diverge_ns[0] = a[j].start;
                o->diverge_group[0] = a[j].group;
            }
            if (j < nb) {
                o->diverge_ns[1] = b[j].start;
                o->diverge_group[1] = b[j].group;
            }
        }
        /* the common prefix is part of every longest common subsequence */
        long d = myers(a + j, (long)(na - j), b + j, (long)(nb - j), (long)c->cap);
        if (d == -2)
            return ENOMEM;
        if (d >= 0) {
            o->lcs = (uint64_t)j + (uint64_t)(((long)(na - j) + (long)(nb - j) - d) / 2);
        } else {
            o->lcs_bound = true;   /* D > cap: LCS < (n + m - cap) / 2 */
            long rest = ((long)(na - j) + (long)(nb - j) - (long)c->cap) / 2;
            long most = (long)(shorter - j);
            o->lcs = (uint64_t)j + (uint64_t)(rest < most ? (rest < 0 ? 0 : rest) : most);
        }
        o->agreement = shorter ? (double)o->lcs / (double)shorter : (na == nb ? 1.0 : 0.0);
    }
    return 0;
}

/* ---- the whole comparison ---------------------------------------------------------------- */

static int by_change(const void *x, const void *y)
{
    const model_cmp_group *a = x, *b = y;
    if (a->change_ns != b->change_ns)
        return a->change_ns < b->change_ns ? 1 : -1;
    uint64_t ta = a->s[0].total_ns > a->s[1].total_ns ? a->s[0].total_ns : a->s[1].total_ns;
    uint64_t tb = b->s[0].total_ns > b->s[1].total_ns ? b->s[0].total_ns : b->s[1].total_ns;
    if (ta != tb)
        return ta < tb ? 1 : -1;
    if (a->kind != b->kind)
        return (int)a->kind - (int)b->kind;
    return strcmp(a->name, b->name);
}

static void ctx_free(cmp_ctx *c)
{
    for (size_t i = 0; i < c->ng; i++) {
        free(c->g[i].name);
        free(c->g[i].h[0].c);
        free(c->g[i].h[1].c);
    }
    free(c->g);
    free(c->ghash);
    for (size_t i = 0; i < c->nst; i++) {
        free(c->st[i].s[0].heap);
        free(c->st[i].s[1].heap);
    }
    free(c->st);
    free(c->name_map);
    free(c->buf);
}

/* Each side's records in its window (on_record), into c's groups and
 * streams.  0, or an error with *cause said where it has words. */
static int cmp_scan(cmp_ctx *c, cupstore_env *env[2], model_compare *out, char **cause)
{
    int rc = 0;
    for (int s = 0; s < 2 && !rc; s++) {
        c->side = s;
        c->sd = &out->side[s];
        memset(c->memcpy_group, 0, sizeof c->memcpy_group);
        c->name_map_cap = 0;
        free(c->name_map);
        c->name_map = NULL;
        if ((rc = cupstore_txn_begin(env[s], false, &c->txn)) != 0)
            break;
        const model_cmp_side *sd = &out->side[s];
        c->epoch = -1;
        c->late = false;
        if (sd->op.kind == MODEL_OP_EPOCH && (rc = model_epoch_map_read(c->txn, &c->map)) == 0)
            c->epoch = model_epoch_map_find(&c->map, sd->op.epoch);
        if (!rc)
            rc = cupstore_record_scan(c->txn, sd->from_ns, sd->to_ns, on_record, c);
        if (!rc && c->epoch >= 0 && sd->to_ns < UINT64_MAX) {
            /* its launches whose GPU work started after its end */
            uint64_t to = sd->to_ns > UINT64_MAX - MODEL_EPOCH_LATE_NS
                              ? UINT64_MAX
                              : sd->to_ns + MODEL_EPOCH_LATE_NS;
            c->late = true;
            rc = cupstore_record_scan(c->txn, sd->to_ns + 1, to, on_record, c);
        }
        model_epoch_map_free(&c->map);
        cupstore_txn_abort(c->txn);
        if (c->err)
            rc = c->err;
        if (rc && cause && !*cause && asprintf(cause, "session %s: reading its records: %s",
                                               out->side[s].id, model_strerror(rc)) < 0)
            *cause = NULL;
    }
    return rc;
}

/* The duration groups, from c's histograms (their names handed over). */
static int cmp_groups(cmp_ctx *c, model_compare *out)
{
    out->groups = calloc(c->ng ? c->ng : 1, sizeof *out->groups);
    if (!out->groups)
        return ENOMEM;
    for (size_t i = 0; i < c->ng; i++) {
        model_cmp_group *g = &out->groups[i];
        g->kind = c->g[i].kind;
        g->name = c->g[i].name;
        g->name_len = c->g[i].len;
        g->id = (uint32_t)i;
        c->g[i].name = NULL;
        for (int s = 0; s < 2; s++) {
            const model_hist *h = &c->g[i].h[s];
            g->s[s] = (model_cmp_stat){.count = h->count, .total_ns = h->total,
                                       .p50_ns = model_hist_pct(h, 0.50),
                                       .p90_ns = model_hist_pct(h, 0.90),
                                       .p99_ns = model_hist_pct(h, 0.99), .min_ns = h->min,
                                       .max_ns = h->max};
        }
        g->change_ns = g->s[1].total_ns > g->s[0].total_ns ? g->s[1].total_ns - g->s[0].total_ns
                                                           : g->s[0].total_ns - g->s[1].total_ns;
    }
    return 0;
}

/* The groups sorted by their change in total, largest first; the
 * streams' divergence points follow their groups to the new places. */
static int cmp_sort_groups(size_t ng, model_compare *out)
{
    if (out->ngroups)
        qsort(out->groups, out->ngroups, sizeof *out->groups, by_change);
    /* the streams name groups by their index before sorting */
    uint32_t *inv = malloc((ng ? ng : 1) * sizeof *inv);
    if (!inv)
        return ENOMEM;
    for (size_t i = 0; i < ng; i++)
        inv[out->groups[i].id] = (uint32_t)i;
    for (size_t i = 0; i < out->nstreams; i++)
        for (int s = 0; s < 2; s++)
            if (out->streams[i].diverge_group[s] >= 0)
                out->streams[i].diverge_group[s] = inv[out->streams[i].diverge_group[s]];
    free(inv);
    return 0;
}

int model_compare_run(const model_compare_opts *o, const char *a, const char *b,
                      model_compare *out, char **cause)
{
    const char *args[2] = {a, b};
    cupstore_env *env[2] = {NULL, NULL};
    model_summary sum[2];
    kv_list facts[2] = {{0}, {0}};
    cmp_ctx c = {.o = o};
    int rc = 0;

    memset(out, 0, sizeof *out);
    memset(sum, 0, sizeof sum);
    if (cause)
        *cause = NULL;
    c.window = o->order_window ? o->order_window : MODEL_CMP_ORDER_WINDOW;
    c.cap = o->edit_cap ? o->edit_cap : MODEL_CMP_EDIT_CAP;
    out->order_window = c.window;
    out->edit_cap = c.cap;
    c.st = calloc(MODEL_CMP_STREAMS, sizeof *c.st);
    c.buf = malloc(NAME_BUF);
    if (!c.st || !c.buf) {
        rc = ENOMEM;
        goto done;
    }
    for (int s = 0; s < 2 && !rc; s++) {
        rc = model_cmp_side_open(o->side_dir[s] ? o->side_dir[s] : o->store_dir, args[s],
                                 &out->side[s], &sum[s], &env[s], cause);
        if (!rc)
            rc = model_cmp_facts_read(env[s], &sum[s], out->side[s].kinds, &facts[s]);
    }
    if (rc)
        goto done;
    if ((rc = model_cmp_comparable(out, facts)) != 0)
        goto done;
    rc = cmp_scan(&c, env, out, cause);
    if (rc)
        goto done;
    if ((rc = cmp_groups(&c, out)) != 0)
        goto done;
    out->ngroups = c.ng;
    out->streams_untracked = c.untracked;
    if ((rc = order_finish(&c, out)) != 0)
        goto done;
    if ((rc = cmp_sort_groups(c.ng, out)) != 0)
        goto done;
    out->exit_status = out->comparable && !out->side[0].lossy && !out->side[1].lossy
                           ? CUPTOP_EXIT_OK
                           : CUPTOP_EXIT_NO;
done:
    if (rc == ENOMEM && cause && !*cause)
        *cause = strdup("out of memory");
    for (int s = 0; s < 2; s++) {
        model_summary_free(&sum[s]);
        model_cmp_facts_free(&facts[s]);
        if (env[s])
            cupstore_env_close(env[s]);
    }
    ctx_free(&c);
    if (rc)
        model_compare_free(out);
    return rc;
}

void model_compare_free(model_compare *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->ngroups; i++)
        free(c->groups[i].name);
    free(c->groups);
    free(c->diffs);
    free(c->streams);
    c->groups = NULL;
    c->diffs = NULL;
    c->streams = NULL;
    c->ngroups = c->ndiffs = c->nstreams = 0;
}

const char *model_cmp_gkind_name(model_cmp_gkind k)
{
    return k == MODEL_CMP_MEMCPY ? "memcpy" : k == MODEL_CMP_GRAPH ? "graph" : "kernel";
}
