/*
 * export_gnvtx.c - the NVTX range around a graph launch, for the names of
 * the graph slices of the chrome, perfetto and jsonl writers ("graph 7
 * (NVTX: forward)").
 *
 * A graph record (one per cudaGraphLaunch / cuGraphLaunch) carries no
 * thread.  Its launch's API record does (same correlation id, stored with
 * --api gpu, the default): the writers hand every API record over
 * (export_gnvtx_api), which keeps the graph launches' thread and start by
 * correlation id in a fixed table of 4-way sets of consecutive ids (as the
 * writers' flow tables: a launch whose graph record comes more than
 * GN_SLOTS launches later keeps the plain name, never a wrong one).  A
 * graph record then looks its launch up (export_gnvtx_find) and the range
 * table for the innermost range open on that thread at the call's start.
 *
 * The range table is read once, at the first graph record: per thread its
 * ranges (push/pop and start/end; marks left out) by start, each with the
 * range that was open around its start (its parent), so a lookup is one
 * binary search and a walk up the parents.  Memory: the range table (as the
 * writers' NVTX slices already read it), 24 bytes a range, the fixed launch
 * table, and one entry per distinct (graph id, range name) label.  A
 * session without a range table costs nothing: export_gnvtx_open gives
 * NULL and every call takes NULL.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export_int.h"

#define GN_SLOTS (1u << 16)        /* graph launches remembered           */
#define GN_NAME_CACHE 256u         /* API name ids: graph launch or not   */
#define GN_LABELS_MAX (1u << 20)   /* distinct (graph id, range) labels   */

typedef struct gn_launch {
    uint32_t corr;                 /* 0: empty                            */
    uint32_t tid;
    uint64_t start_ns;
} gn_launch;

/* One range of the index: by (tid, start asc, end desc). */
typedef struct gn_range {
    uint32_t tid;
    uint32_t name;                 /* index into model_ranges.names       */
    uint32_t parent;               /* the range open around its start on
                                      its thread (UINT32_MAX: none)       */
    uint64_t start_ns, end_ns;     /* end UINT64_MAX: still open          */
} gn_range;

typedef struct gn_label {
    uint64_t key;                  /* graph id << 32 | name + 1; 0: empty */
    uint32_t label;
} gn_label;

struct export_gnvtx {
    export_ctx *x;
    gn_launch *launches;           /* GN_SLOTS                            */
    struct {
        uint32_t id;
        bool graph;
    } names[GN_NAME_CACHE];        /* direct mapped by name id            */
    bool loaded;                   /* the range index is built            */
    model_ranges *m;
    gn_range *r;
    size_t nr;
    char **json;                   /* per m->names: JSON-escaped, lazily  */
    size_t *json_len;
    gn_label *labels;
    size_t label_cap, nlabels;
};

int export_gnvtx_open(export_ctx *x, export_gnvtx **out)
{
    cupstore_txn *txn;
    uint64_t n = 0;
    *out = NULL;
    int rc = cupstore_txn_begin(x->env, false, &txn);
    if (rc)
        return rc;
    rc = cupstore_range_count(txn, &n);
    cupstore_txn_abort(txn);
    if (rc || !n)
        return rc;   /* no range table: the graph slices keep their names */
    export_gnvtx *g = calloc(1, sizeof *g);
    if (!g || !(g->launches = calloc(GN_SLOTS, sizeof *g->launches))) {
        free(g);
        return ENOMEM;
    }
    g->x = x;
    *out = g;
    return 0;
}

void export_gnvtx_close(export_gnvtx *g)
{
    if (!g)
        return;
    if (g->json && g->m)
        for (size_t i = 0; i < g->m->nnames; i++)
            free(g->json[i]);
    free(g->json);
    free(g->json_len);
    free(g->r);
    model_ranges_free(g->m);
    free(g->labels);
    free(g->launches);
    free(g);
}

/* Is the API call named name_id a graph launch (cudaGraphLaunch*,
 * cuGraphLaunch*)?  A call whose name is unknown counts as one: its graph
 * record (if any) looks it up by correlation id all the same. */
static bool api_is_graph_launch(export_gnvtx *g, uint32_t name_id)
{
    const char *s;
    size_t len;
    if (!name_id || !g->x->txn)
        return true;
    unsigned h = name_id % GN_NAME_CACHE;
    if (g->names[h].id == name_id)
        return g->names[h].graph;
    bool graph = true;
    if (cupstore_name_get(g->x->txn, name_id, &s, &len) == 0)
        graph = (len >= 15 && !memcmp(s, "cudaGraphLaunch", 15)) ||
                (len >= 13 && !memcmp(s, "cuGraphLaunch", 13));
    g->names[h].id = name_id;
    g->names[h].graph = graph;
    return graph;
}

static gn_launch *launch_bucket(export_gnvtx *g, uint32_t corr)
{
    /* consecutive ids in consecutive sets, as the flow tables */
    return &g->launches[(corr * 4u) & (GN_SLOTS - 4)];
}

void export_gnvtx_api(export_gnvtx *g, const cupstore_record *r)
{
    if (!g || !r->correlation || !r->start_ns || (r->flags & CUPSTORE_RF_ZERO_TS) ||
        !api_is_graph_launch(g, r->name_id))
        return;
    gn_launch *b = launch_bucket(g, r->correlation), *victim = &b[0];
    for (int i = 0; i < 4; i++) {
        if (b[i].corr == r->correlation) {
            /* the runtime call and the driver call inside it share the id:
             * keep the earlier start (the outer call's) */
            if (r->start_ns < b[i].start_ns)
                b[i] = (gn_launch){r->correlation, r->tid, r->start_ns};
            return;
        }
        if (!b[i].corr) {
            victim = &b[i];
            break;
        }
        if (b[i].start_ns < victim->start_ns)
            victim = &b[i];
    }
    *victim = (gn_launch){r->correlation, r->tid, r->start_ns};
}

static int range_cmp(const void *pa, const void *pb)
{
    const gn_range *a = pa, *b = pb;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    if (a->start_ns != b->start_ns)
        return a->start_ns < b->start_ns ? -1 : 1;
    if (a->end_ns != b->end_ns)
        return a->end_ns > b->end_ns ? -1 : 1;   /* the outer one first */
    return 0;
}

/* Read the range table (in the scan's transaction) and build the index:
 * per thread by start, and each range's parent from a stack of the ranges
 * still open at its start (ends that passed are popped from the top only:
 * a start/end range that does not nest stays below until its turn, which
 * the walk of export_gnvtx_find skips). */
static int index_build(export_gnvtx *g)
{
    g->loaded = true;
    if (!g->x->txn)
        return 0;
    int rc = model_ranges_load(g->x->txn, NULL, &g->m);
    if (rc)
        return rc;
    model_ranges *m = g->m;
    if (!m->ninst || !m->nnames)
        return 0;
    if (!(g->r = malloc(m->ninst * sizeof *g->r)) ||
        !(g->json = calloc(m->nnames, sizeof *g->json)) ||
        !(g->json_len = calloc(m->nnames, sizeof *g->json_len)))
        return ENOMEM;
    for (size_t i = 0; i < m->ninst; i++) {
        const model_range_inst *ri = &m->inst[i];
        if (ri->name == UINT32_MAX || !ri->start_ns || (ri->flags & CUPSTORE_RANGE_POINT) ||
            !(ri->flags & CUPSTORE_RANGE_START))
            continue;
        uint64_t end = model_range_open(ri) ? UINT64_MAX : ri->end_ns;
        if (end < ri->start_ns)
            continue;
        g->r[g->nr++] = (gn_range){.tid = ri->tid, .name = ri->name, .parent = UINT32_MAX,
                                   .start_ns = ri->start_ns, .end_ns = end};
    }
    if (!g->nr)
        return 0;
    qsort(g->r, g->nr, sizeof *g->r, range_cmp);
    uint32_t *stack = malloc(g->nr * sizeof *stack);
    if (!stack)
        return ENOMEM;
    size_t depth = 0;
    for (size_t i = 0; i < g->nr; i++) {
        if (i && g->r[i].tid != g->r[i - 1].tid)
            depth = 0;   /* the next thread */
        while (depth && g->r[stack[depth - 1]].end_ns <= g->r[i].start_ns)
            depth--;
        g->r[i].parent = depth ? stack[depth - 1] : UINT32_MAX;
        stack[depth++] = (uint32_t)i;
    }
    free(stack);
    return 0;
}

/* The innermost range open on thread tid at t: the latest-starting one
 * holding t.  The last range of the thread starting at or before t, then
 * its parents: every range started after the answer ended before t, and
 * the answer is on the chain (it was on the stack below each of them). */
static const gn_range *innermost(const export_gnvtx *g, uint32_t tid, uint64_t t)
{
    size_t lo = 0, hi = g->nr;   /* first range after (tid, t) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const gn_range *r = &g->r[mid];
        if (r->tid < tid || (r->tid == tid && r->start_ns <= t))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo || g->r[lo - 1].tid != tid)
        return NULL;
    uint32_t i = (uint32_t)(lo - 1);
    while (i != UINT32_MAX && g->r[i].end_ns <= t)
        i = g->r[i].parent;
    return i == UINT32_MAX ? NULL : &g->r[i];
}

int export_gnvtx_find(export_gnvtx *g, const cupstore_record *r, export_gnvtx_hit *hit,
                      bool *known)
{
    memset(hit, 0, sizeof *hit);
    *known = false;
    if (!g || !r->correlation)
        return 0;
    const gn_launch *b = launch_bucket(g, r->correlation), *l = NULL;
    for (int i = 0; i < 4; i++)
        if (b[i].corr == r->correlation)
            l = &b[i];
    if (!l)
        return 0;   /* no API record (--api none), or not seen yet */
    *known = true;
    if (!g->loaded) {
        int rc = index_build(g);
        if (rc)
            return rc;
    }
    const gn_range *gr = g->nr ? innermost(g, l->tid, l->start_ns) : NULL;
    if (!gr)
        return 0;
    const model_range_name *n = &g->m->names[gr->name];
    if (!g->json[gr->name]) {
        char *e = NULL;
        long el = json_escape_dup(n->name, n->name_len, &e);
        if (el < 0)
            return ENOMEM;
        g->json[gr->name] = e;
        g->json_len[gr->name] = (size_t)el;
    }
    hit->name = n->name;
    hit->len = n->name_len;
    hit->json = g->json[gr->name];
    hit->json_len = g->json_len[gr->name];
    hit->idx = gr->name;
    return 0;
}

static size_t label_hash(uint64_t key, size_t cap)
{
    return (size_t)(key * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
}

uint32_t export_gnvtx_label(export_gnvtx *g, uint32_t graph_id, uint32_t idx)
{
    uint64_t key = (uint64_t)graph_id << 32 | ((uint64_t)idx + 1);
    if (g->label_cap) {
        size_t i = label_hash(key, g->label_cap);
        while (g->labels[i].key) {
            if (g->labels[i].key == key)
                return g->labels[i].label;
            i = (i + 1) & (g->label_cap - 1);
        }
    }
    if (g->nlabels >= GN_LABELS_MAX)
        return 0;
    if ((g->nlabels + 1) * 2 > g->label_cap) {
        size_t ncap = g->label_cap ? g->label_cap * 2 : 64;
        gn_label *nl = calloc(ncap, sizeof *nl);
        if (!nl)
            return 0;
        for (size_t k = 0; k < g->label_cap; k++) {
            if (!g->labels[k].key)
                continue;
            size_t j = label_hash(g->labels[k].key, ncap);
            while (nl[j].key)
                j = (j + 1) & (ncap - 1);
            nl[j] = g->labels[k];
        }
        free(g->labels);
        g->labels = nl;
        g->label_cap = ncap;
    }
    size_t i = label_hash(key, g->label_cap);
    while (g->labels[i].key)
        i = (i + 1) & (g->label_cap - 1);
    g->labels[i] = (gn_label){key, (uint32_t)++g->nlabels};
    return g->labels[i].label;
}
