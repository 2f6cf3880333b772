/*
 * model_hist.h - duration histograms with 64 sub-buckets per power of two
 * (MODEL_CMP_SUB_BITS): a percentile is within 1/128 of a duration that
 * was recorded (MODEL_CMP_REL_ERROR), in memory bounded by the range of
 * durations seen, not their number.  Used by `cuptop compare` (per kernel
 * name, memcpy kind and graph id) and model_graphs (per graph id).  Not
 * thread-safe: one owner.
 */
#ifndef CUPTOP_MODEL_HIST_H
#define CUPTOP_MODEL_HIST_H

#include <stdint.h>

#include "model_compare.h"

typedef struct model_hist {
    uint32_t lo, n;             /* buckets [lo, lo + n)                       */
    uint64_t *c;
    uint64_t count, total, min, max;
} model_hist;

/** Count duration d (ns).  @return 0 or ENOMEM (h unchanged). */
int model_hist_add(model_hist *h, uint64_t d);
/** The nearest-rank percentile p (0..1) as its bucket's middle, kept
 *  inside [min, max]; 0 when empty. */
uint64_t model_hist_pct(const model_hist *h, double p);
/** Release the buckets; h is empty again. */
void model_hist_free(model_hist *h);

#endif
