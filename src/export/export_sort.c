/*
 * export_sort.c - the bounded reorder window of the export writers: records
 * arrive in chunk order (not sorted inside a chunk) and leave in (start asc,
 * end desc, arrival) order, parents before the slices they contain.
 *
 * Arrivals are sorted in blocks of EXPORT_SORT_RUN (radix sort on a packed
 * key) into runs, and a small heap merges the runs; whenever more than
 * EXPORT_SORT_WINDOW records are held, the earliest are written.  Memory is
 * fixed at init: EXPORT_SORT_MAX_RUNS run buffers, one arrival block and
 * two key buffers.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export_int.h"

int export_sort_init(export_sort *c)
{
    memset(c, 0, sizeof *c);
    c->in = malloc(EXPORT_SORT_RUN * sizeof *c->in);
    c->keys = malloc(EXPORT_SORT_RUN * sizeof *c->keys);
    c->keys2 = malloc(EXPORT_SORT_RUN * sizeof *c->keys2);
    if (!c->in || !c->keys || !c->keys2)
        return ENOMEM;
    for (uint32_t i = 0; i < EXPORT_SORT_MAX_RUNS; i++) {
        if (!(c->spare[i] = malloc(EXPORT_SORT_RUN * sizeof *c->spare[i])))
            return ENOMEM;
        c->nspare++;
    }
    return 0;
}

void export_sort_free(export_sort *c)
{
    for (uint32_t i = 0; i < EXPORT_SORT_MAX_RUNS; i++)
        free(c->runs[i].recs);
    for (uint32_t i = 0; i < c->nspare; i++)
        free(c->spare[i]);
    free(c->in);
    free(c->keys);
    free(c->keys2);
    memset(c, 0, sizeof *c);
}

/* (start asc, end desc): parents before the slices they contain. */
static int rec_cmp(const cupstore_record *a, const cupstore_record *b)
{
    if (a->start_ns != b->start_ns)
        return a->start_ns < b->start_ns ? -1 : 1;
    if (a->end_ns != b->end_ns)
        return a->end_ns > b->end_ns ? -1 : 1;
    return 0;
}

static int skey_cmp_slow(const void *pa, const void *pb, void *arg)
{
    const struct export_skey *a = pa, *b = pb;
    const cupstore_record *in = arg;
    int c = rec_cmp(&in[a->idx], &in[b->idx]);
    return c ? c : (a->idx < b->idx ? -1 : a->idx > b->idx);
}

/* Sort c->in[0..nin) into keys (indexes in order).  The fast path packs
 * (start - min start) << 32 | ~(end - start) into one word, which orders
 * exactly as rec_cmp when every record has end >= start, a duration below
 * 2^32 ns and the block spans less than 2^32 ns of starts; then a stable
 * LSD radix sort (bytes that are equal in every key are skipped) keeps
 * arrival order among equal keys.  Anything else: qsort with the index as
 * the last key. */
static struct export_skey *sort_block(export_sort *c)
{
    uint32_t n = c->nin;
    const cupstore_record *in = c->in;
    uint64_t lo = UINT64_MAX, hi = 0;
    bool packable = true;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t s = in[i].start_ns, e = in[i].end_ns;
        if (!s || (in[i].flags & CUPSTORE_RF_ZERO_TS))
            continue; /* not written: its place does not matter */
        lo = s < lo ? s : lo;
        hi = s > hi ? s : hi;
        if (e < s || e - s > UINT32_MAX)
            packable = false;
    }
    struct export_skey *k = c->keys, *k2 = c->keys2;
    if (!packable || (lo <= hi && hi - lo > UINT32_MAX)) {
        for (uint32_t i = 0; i < n; i++)
            k[i] = (struct export_skey){.key = 0, .idx = i};
        qsort_r(k, n, sizeof *k, skey_cmp_slow, (void *)in);
        return k;
    }
    uint32_t hist[8][256];
    memset(hist, 0, sizeof hist);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t s = in[i].start_ns, d = in[i].end_ns - s, key = 0;
        if (s && !(in[i].flags & CUPSTORE_RF_ZERO_TS))
            key = (s - lo) << 32 | (uint32_t)~d;
        k[i] = (struct export_skey){.key = key, .idx = i};
        for (int b = 0; b < 8; b++)
            hist[b][(key >> (8 * b)) & 0xff]++;
    }
    for (int b = 0; b < 8; b++) {
        uint32_t *h = hist[b], sum = 0;
        if (h[(k[0].key >> (8 * b)) & 0xff] == n)
            continue; /* this byte is the same in every key */
        for (int v = 0; v < 256; v++) {
            uint32_t t = h[v];
            h[v] = sum;
            sum += t;
        }
        for (uint32_t i = 0; i < n; i++)
            k2[h[(k[i].key >> (8 * b)) & 0xff]++] = k[i];
        struct export_skey *t = k;
        k = k2;
        k2 = t;
    }
    return k;
}

static bool run_before(const export_sort *c, uint32_t a, uint32_t b)
{
    const export_run_buf *ra = &c->runs[a], *rb = &c->runs[b];
    int x = rec_cmp(&ra->recs[ra->pos], &rb->recs[rb->pos]);
    return x ? x < 0 : ra->seq < rb->seq;
}

static void merge_down(export_sort *c, uint32_t i)
{
    uint32_t *m = c->merge, n = c->nmerge, v = m[i];
    for (;;) {
        uint32_t l = 2 * i + 1, j;
        if (l >= n)
            break;
        j = l + 1 < n && run_before(c, m[l + 1], m[l]) ? l + 1 : l;
        if (!run_before(c, m[j], v))
            break;
        m[i] = m[j];
        i = j;
    }
    m[i] = v;
}

/* Write the earliest held record. */
static int emit_earliest(export_sort *c, cupstore_record_fn emit, void *arg)
{
    uint32_t r = c->merge[0];
    export_run_buf *ru = &c->runs[r];
    int rc = emit(&ru->recs[ru->pos], arg);
    c->held--;
    if (++ru->pos == ru->n) {
        c->spare[c->nspare++] = ru->recs;
        ru->recs = NULL;
        c->merge[0] = c->merge[--c->nmerge];
    }
    if (c->nmerge)
        merge_down(c, 0);
    return rc;
}

/* Write the earliest held records until at most keep remain. */
static int drain(export_sort *c, size_t keep, cupstore_record_fn emit, void *arg)
{
    while (c->held > keep) {
        int rc = emit_earliest(c, emit, arg);
        if (rc)
            return rc;
    }
    return 0;
}

/* Sort the arrivals into a new run and put it in the merge heap.  Runs
 * that were mostly written may each keep a few late records: when every
 * run buffer is in use, the earliest records are written until one frees
 * (so the window is EXPORT_SORT_WINDOW records or MAX_RUNS runs, whichever is less). */
static int close_block(export_sort *c, cupstore_record_fn emit, void *arg)
{
    if (!c->nin)
        return 0;
    while (!c->nspare) {
        int rc = emit_earliest(c, emit, arg);
        if (rc)
            return rc;
    }
    struct export_skey *k = sort_block(c);
    uint32_t r = 0;
    while (c->runs[r].recs)
        r++; /* a spare buffer means a free run slot */
    export_run_buf *ru = &c->runs[r];
    ru->recs = c->spare[--c->nspare];
    for (uint32_t i = 0; i < c->nin; i++)
        ru->recs[i] = c->in[k[i].idx];
    ru->pos = 0;
    ru->n = c->nin;
    ru->seq = c->run_seq++;
    c->held += c->nin;
    c->nin = 0;
    uint32_t i = c->nmerge++;
    while (i && run_before(c, r, c->merge[(i - 1) / 2])) {
        c->merge[i] = c->merge[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    c->merge[i] = r;
    return 0;
}

int export_sort_add(export_sort *c, const cupstore_record *r, cupstore_record_fn emit, void *arg)
{
    c->in[c->nin++] = *r;
    if (c->nin < EXPORT_SORT_RUN)
        return 0;
    int rc = close_block(c, emit, arg);
    return rc ? rc : drain(c, EXPORT_SORT_WINDOW, emit, arg);
}

int export_sort_flush(export_sort *c, cupstore_record_fn emit, void *arg)
{
    int rc = close_block(c, emit, arg);
    return rc ? rc : drain(c, 0, emit, arg);
}
