/*
 * export_lost.c - where a lost record belongs in a trace (export_int.h,
 * "Lost records"): the launch ledger's `lost` rows of the window, placed
 * on their stream between the records that ran before and after them.
 *
 * A stream runs its work in launch order, and correlation ids are given
 * in launch order, so a launch whose record never arrived ran after the
 * stream's last record with a smaller id ended and before the first with
 * a larger id started.  The rows are sorted by device, stream and id; the
 * writer hands each GPU record over as it is written (in start order) and
 * gets back the rows that come before it, with the gap they share.  Only
 * streams with a lost row are followed: nothing is done per record when
 * the window has none.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "export_int.h"

static int by_stream(const void *pa, const void *pb)
{
    const cupstore_lost *a = pa, *b = pb;
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    if (a->stream != b->stream)
        return a->stream < b->stream ? -1 : 1;
    if (a->corr != b->corr)
        return a->corr < b->corr ? -1 : 1;
    return a->launch_ns < b->launch_ns ? -1 : a->launch_ns > b->launch_ns;
}

static bool same_stream(const cupstore_lost *a, const cupstore_lost *b)
{
    return a->device == b->device && a->stream == b->stream;
}

static int on_row(const cupstore_lost *l, void *arg)
{
    export_lost *L = arg;
    if (L->n == L->cap) {
        size_t ncap = L->cap ? L->cap * 2 : 256;
        cupstore_lost *nv = realloc(L->v, ncap * sizeof *nv);
        if (!nv)
            return ENOMEM;
        L->v = nv;
        L->cap = ncap;
    }
    L->v[L->n++] = *l;
    return 0;
}

int export_lost_load(export_lost *L, export_ctx *x)
{
    cupstore_txn *txn;
    *L = (export_lost){0};
    int rc = cupstore_txn_begin(x->env, false, &txn);
    if (rc)
        return rc;
    rc = cupstore_lost_scan(txn, x->from_ns, x->to_ns, on_row, L);
    cupstore_txn_abort(txn);
    return rc ? rc : export_lost_index(L);
}

int export_lost_index(export_lost *L)
{
    if (!L->n)
        return 0;
    qsort(L->v, L->n, sizeof *L->v, by_stream);
    for (size_t i = 0; i < L->n; i++)
        L->ns += !i || !same_stream(&L->v[i - 1], &L->v[i]);
    L->s = calloc(L->ns, sizeof *L->s);
    if (!L->s)
        return ENOMEM;
    size_t g = 0;
    for (size_t i = 0; i < L->n; i++) {
        if (i && same_stream(&L->v[i - 1], &L->v[i])) {
            L->s[g - 1].end = i + 1;
            continue;
        }
        L->s[g++] = (export_lost_stream){.device = L->v[i].device, .stream = L->v[i].stream,
                                         .first = i, .end = i + 1, .next = i};
    }
    return 0;
}

void export_lost_free(export_lost *L)
{
    free(L->v);
    free(L->s);
    *L = (export_lost){0};
}

static export_lost_stream *stream_of(export_lost *L, uint32_t device, uint32_t stream)
{
    size_t lo = 0, hi = L->ns;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const export_lost_stream *s = &L->s[mid];
        if (s->device == device && s->stream == stream)
            return &L->s[mid];
        if (s->device < device || (s->device == device && s->stream < stream))
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Rows next..stop-1 of s share [lo, hi]: equal parts, in id order. */
static int place(const export_lost *L, export_lost_stream *s, size_t stop, uint64_t lo,
                 uint64_t hi, bool bounded, export_lost_fn fn, void *arg)
{
    size_t k = stop - s->next;
    uint64_t part = hi > lo ? (hi - lo) / k : 0;
    for (size_t i = 0; i < k; i++) {
        int rc = fn(&L->v[s->next + i], lo + part * i, bounded ? lo + part * (i + 1) : lo, arg);
        if (rc)
            return rc;
    }
    s->next = stop;
    return 0;
}

int export_lost_before(export_lost *L, uint32_t device, uint32_t stream, uint32_t corr,
                       uint64_t start_ns, uint64_t end_ns, export_lost_fn fn, void *arg)
{
    export_lost_stream *s = L->ns ? stream_of(L, device, stream) : NULL;
    if (!s)
        return 0;
    size_t stop = s->next;
    while (stop < s->end && L->v[stop].corr < corr)
        stop++;
    int rc = 0;
    if (stop > s->next) {
        /* it ran after its launch and after the stream's record before it */
        uint64_t lo = s->prev_end > L->v[s->next].launch_ns ? s->prev_end : L->v[s->next].launch_ns;
        rc = place(L, s, stop, lo > start_ns ? start_ns : lo, start_ns, true, fn, arg);
    }
    if (end_ns > s->prev_end)
        s->prev_end = end_ns;
    return rc;
}

int export_lost_rest(export_lost *L, export_lost_fn fn, void *arg)
{
    for (size_t g = 0; g < L->ns; g++) {
        export_lost_stream *s = &L->s[g];
        while (s->next < s->end) {
            /* no record after it on the stream: after the last one, at
             * its launch at the earliest; a point, not a span */
            const cupstore_lost *l = &L->v[s->next];
            uint64_t at = s->prev_end > l->launch_ns ? s->prev_end : l->launch_ns;
            int rc = place(L, s, s->next + 1, at, at, false, fn, arg);
            if (rc)
                return rc;
        }
    }
    return 0;
}

const char *export_lost_kind(unsigned k)
{
    static const char *const kn[CUPSTORE_LEDGER_KINDS] = {"kernel", "memcpy", "memset", "graph"};
    return k < CUPSTORE_LEDGER_KINDS ? kn[k] : "?";
}

size_t export_lost_kinds(const cupstore_lost *l, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (unsigned k = 0; k < CUPSTORE_LEDGER_KINDS && n < cap; k++)
        if (l->missing[k])
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "+" : "", export_lost_kind(k));
    return n < cap ? n : cap - 1;
}
