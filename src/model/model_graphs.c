/*
 * model_graphs.c - graph launches per graph id (model_graphs.h): one scan
 * of the window's records, a histogram per graph id found through a small
 * open-addressing table, then the figures sorted by graph id.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model_graphs.h"
#include "model_hist.h"

typedef struct graph_ent {
    uint32_t id;
    uint64_t count;
    model_hist h;
} graph_ent;

typedef struct graphs_ctx {
    graph_ent *e;
    size_t n, cap;
    uint32_t *slot;             /* entry + 1, 0 empty; slot_cap a power of 2 */
    size_t slot_cap;
    size_t last;                /* the entry last found: launches of one
                                   graph come in runs                       */
    int err;
} graphs_ctx;

static size_t slot_of(uint32_t id, size_t cap)
{
    return (size_t)((id * 2654435761u) & (cap - 1));
}

/* The table twice as large, every entry placed again: 0 or ENOMEM. */
static int grow_slots(graphs_ctx *c)
{
    size_t cap = c->slot_cap ? c->slot_cap * 2 : 64;
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t)
        return ENOMEM;
    for (size_t i = 0; i < c->n; i++) {
        size_t j = slot_of(c->e[i].id, cap);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = (uint32_t)i + 1;
    }
    free(c->slot);
    c->slot = t;
    c->slot_cap = cap;
    return 0;
}

/* The entry of graph id, created on first sight; NULL on ENOMEM. */
static graph_ent *graph_get(graphs_ctx *c, uint32_t id)
{
    if (c->n && c->e[c->last].id == id)
        return &c->e[c->last];
    if (c->n * 2 >= c->slot_cap && grow_slots(c))
        return NULL;
    size_t j = slot_of(id, c->slot_cap);
    for (; c->slot[j]; j = (j + 1) & (c->slot_cap - 1))
        if (c->e[c->slot[j] - 1].id == id) {
            c->last = c->slot[j] - 1;
            return &c->e[c->last];
        }
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        graph_ent *e = realloc(c->e, cap * sizeof *e);
        if (!e)
            return NULL;
        c->e = e;
        c->cap = cap;
    }
    memset(&c->e[c->n], 0, sizeof *c->e);
    c->e[c->n].id = id;
    c->slot[j] = (uint32_t)c->n + 1;
    c->last = c->n++;
    return &c->e[c->last];
}

static int on_record(const cupstore_record *r, void *arg)
{
    graphs_ctx *c = arg;
    if (r->kind != CUPSTORE_KIND_GRAPH)
        return 0;
    graph_ent *e = graph_get(c, r->aux);
    if (!e)
        return c->err = ENOMEM;
    e->count++;
    if ((r->flags & CUPSTORE_RF_ZERO_TS) || !r->start_ns || r->end_ns < r->start_ns)
        return 0;   /* a launch without times: counted, not timed */
    return c->err = model_hist_add(&e->h, r->end_ns - r->start_ns);
}

static int by_id(const void *x, const void *y)
{
    const model_graph_stat *a = x, *b = y;
    return (a->graph_id > b->graph_id) - (a->graph_id < b->graph_id);
}

static void ctx_free(graphs_ctx *c)
{
    for (size_t i = 0; i < c->n; i++)
        model_hist_free(&c->e[i].h);
    free(c->e);
    free(c->slot);
}

int model_graphs_read(cupstore_txn *txn, uint64_t from_ns, uint64_t to_ns, model_graphs *out)
{
    graphs_ctx c = {0};
    memset(out, 0, sizeof *out);
    int rc = cupstore_record_scan(txn, from_ns, to_ns, on_record, &c);
    if (c.err)
        rc = c.err;
    if (!rc && c.n && !(out->g = calloc(c.n, sizeof *out->g)))
        rc = ENOMEM;
    for (size_t i = 0; !rc && i < c.n; i++) {
        const model_hist *h = &c.e[i].h;
        out->g[i] = (model_graph_stat){
            .graph_id = c.e[i].id, .count = c.e[i].count, .timed = h->count,
            .total_ns = h->total, .min_ns = h->min, .p50_ns = model_hist_pct(h, 0.50),
            .p90_ns = model_hist_pct(h, 0.90), .p99_ns = model_hist_pct(h, 0.99),
            .max_ns = h->max};
        out->launches += c.e[i].count;
    }
    if (!rc) {
        out->n = c.n;
        if (c.n)
            qsort(out->g, c.n, sizeof *out->g, by_id);
    } else {
        model_graphs_free(out);
    }
    ctx_free(&c);
    return rc;
}

void model_graphs_free(model_graphs *g)
{
    free(g->g);
    memset(g, 0, sizeof *g);
}
