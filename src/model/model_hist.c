/*
 * model_hist.c - log-bucketed duration histograms (model_hist.h).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model_hist.h"

#define SUB (1u << MODEL_CMP_SUB_BITS)

static uint32_t hist_index(uint64_t d)
{
    if (d < SUB)
        return (uint32_t)d;
    unsigned msb = 63u - (unsigned)__builtin_clzll(d);
    return (msb - MODEL_CMP_SUB_BITS + 1) * SUB +
           (uint32_t)((d >> (msb - MODEL_CMP_SUB_BITS)) & (SUB - 1));
}

/* The middle of bucket i: within 1/128 of every duration in it. */
static uint64_t hist_value(uint32_t i)
{
    if (i < SUB)
        return i;
    unsigned msb = i / SUB + MODEL_CMP_SUB_BITS - 1, shift = msb - MODEL_CMP_SUB_BITS;
    uint64_t lower = (uint64_t)(SUB + i % SUB) << shift;
    return lower + ((1ull << shift) >> 1);
}

int model_hist_add(model_hist *h, uint64_t d)
{
    uint32_t i = hist_index(d);
    if (!h->n || i < h->lo || i >= h->lo + h->n) {
        uint32_t lo = h->n ? (i < h->lo ? i : h->lo) : i;
        uint32_t hi = h->n ? (i >= h->lo + h->n ? i + 1 : h->lo + h->n) : i + 1;
        lo = lo > 8 ? lo - 8 : 0;   /* a little room: fewer moves */
        hi += 8;
        uint64_t *c = calloc(hi - lo, sizeof *c);
        if (!c)
            return ENOMEM;
        if (h->n)
            memcpy(c + (h->lo - lo), h->c, h->n * sizeof *c);
        free(h->c);
        h->c = c;
        h->lo = lo;
        h->n = hi - lo;
    }
    h->c[i - h->lo]++;
    if (!h->count || d < h->min)
        h->min = d;
    if (d > h->max)
        h->max = d;
    h->count++;
    h->total += d;
    return 0;
}

/* Nearest rank: the ceil(p * count)-th duration, as its bucket's middle,
 * kept inside [min, max]. */
uint64_t model_hist_pct(const model_hist *h, double p)
{
    if (!h->count)
        return 0;
    uint64_t rank = (uint64_t)(p * (double)h->count);
    if ((double)rank < p * (double)h->count)
        rank++;
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (uint32_t k = 0; k < h->n; k++) {
        seen += h->c[k];
        if (seen >= rank) {
            uint64_t v = hist_value(h->lo + k);
            return v < h->min ? h->min : v > h->max ? h->max : v;
        }
    }
    return h->max;
}

void model_hist_free(model_hist *h)
{
    free(h->c);
    memset(h, 0, sizeof *h);
}
