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

/* Bits needed to hold v (0 for 0). */
static unsigned bit_width(uint64_t v)
{
    return v ? 64u - (unsigned)__builtin_clzll(v) : 0u;
}

#define SORT_DIGIT 11u                        /* radix digit: 2048 buckets */
#define SORT_PASSES ((64u + SORT_DIGIT - 1) / SORT_DIGIT)

/* Sort c->in[0..nin) into keys (indexes in order).  The fast path packs
 * (start - min start) << w | (max duration - duration) into one word, w
 * the bits of the block's longest duration: it orders exactly as rec_cmp
 * when every record has end >= start and the two parts fit 64 bits
 * together (a block spans a few ms of starts: about 45 bits).  Then a
 * stable LSD radix sort on 11-bit digits of the bits in use (a digit that
 * is the same in every key is skipped) keeps arrival order among equal
 * keys: 4 passes where whole bytes of (start, ~duration) took 6.  Anything
 * else: qsort with the index as the last key. */
static struct export_skey *sort_block(export_sort *c)
{
    uint32_t n = c->nin;
    const cupstore_record *in = c->in;
    uint64_t lo = UINT64_MAX, hi = 0, dmax = 0;
    bool packable = true;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t s = in[i].start_ns, e = in[i].end_ns;
        if (!s || (in[i].flags & CUPSTORE_RF_ZERO_TS))
            continue; /* not written: its place does not matter */
        lo = s < lo ? s : lo;
        hi = s > hi ? s : hi;
        if (e < s)
            packable = false;
        else if (e - s > dmax)
            dmax = e - s;
    }
    unsigned w = bit_width(dmax), bits = lo <= hi ? bit_width(hi - lo) + w : w;
    struct export_skey *k = c->keys, *k2 = c->keys2;
    if (!packable || bits > 64) {
        for (uint32_t i = 0; i < n; i++)
            k[i] = (struct export_skey){.key = 0, .idx = i};
        qsort_r(k, n, sizeof *k, skey_cmp_slow, (void *)in);
        return k;
    }
    unsigned passes = (bits + SORT_DIGIT - 1) / SORT_DIGIT;
    const uint64_t dmask = (1u << SORT_DIGIT) - 1;
    uint32_t hist[SORT_PASSES][1u << SORT_DIGIT];
    memset(hist, 0, passes * sizeof hist[0]);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t s = in[i].start_ns, key = 0;
        if (s && !(in[i].flags & CUPSTORE_RF_ZERO_TS))
            key = (w < 64 ? (s - lo) << w : 0) | (dmax - (in[i].end_ns - s));
        k[i] = (struct export_skey){.key = key, .idx = i};
    }
    for (unsigned b = 0; b < passes; b++) { /* a digit at a time: a tight loop */
        uint32_t *h = hist[b];
        unsigned sh = SORT_DIGIT * b;
        for (uint32_t i = 0; i < n; i++)
            h[(k[i].key >> sh) & dmask]++;
    }
    for (unsigned b = 0; b < passes; b++) {
        uint32_t *h = hist[b], sum = 0;
        unsigned sh = SORT_DIGIT * b;
        if (h[(k[0].key >> sh) & dmask] == n)
            continue; /* this digit is the same in every key */
        for (uint32_t v = 0; v <= dmask; v++) {
            uint32_t t = h[v];
            h[v] = sum;
            sum += t;
        }
        for (uint32_t i = 0; i < n; i++)
            k2[h[(k[i].key >> sh) & dmask]++] = k[i];
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

/* Sift the root of the merge heap down.  When it stays, its earlier child
 * (the earliest head of the other runs) is kept as c->rival. */
static void merge_down(export_sort *c)
{
    uint32_t *m = c->merge, n = c->nmerge, v = m[0], i = 0;
    c->rival_ok = false;
    for (;;) {
        uint32_t l = 2 * i + 1, j;
        if (l >= n)
            break;
        j = l + 1 < n && run_before(c, m[l + 1], m[l]) ? l + 1 : l;
        if (!run_before(c, m[j], v)) {
            if (i == 0) {
                c->rival = m[j];
                c->rival_ok = true;
            }
            break;
        }
        m[i] = m[j];
        i = j;
    }
    m[i] = v;
}

/* Write the earliest held record.  Runs overlap little, so the root's run
 * usually stays the earliest: one comparison with the rival (the heap
 * below the root is unchanged) instead of two per record. */
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
        c->rival_ok = false;
    } else if (c->rival_ok && run_before(c, r, c->rival)) {
        return rc;
    }
    if (c->nmerge > 1)
        merge_down(c);
    else
        c->rival_ok = false;
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
    c->rival_ok = false;   /* the heap below the root may have changed */
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
