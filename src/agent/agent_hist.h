/*
 * agent_hist.h - lock-free log-linear latency histograms.
 *
 * Callback threads record nanosecond values with two relaxed atomic adds
 * (bucket, count) and a CAS loop on the maximum; the health thread takes a
 * snapshot each second and subtracts the previous one, so a second's
 * figures never mix with the next's.  Buckets: values below 16 ns exactly,
 * then 8 sub-buckets per power of two (12.5% resolution) up to 2^40 ns.
 */
#ifndef AGENT_HIST_H
#define AGENT_HIST_H

#include <stdatomic.h>
#include <stdint.h>

#define AGENT_HIST_BUCKETS (16 + 37 * 8)

typedef struct agent_hist {
    _Atomic uint64_t bucket[AGENT_HIST_BUCKETS];
    _Atomic uint64_t max_ns;      /* reset by each snapshot               */
} agent_hist;

/** A snapshot or a difference of two snapshots (plain memory). */
typedef struct agent_hist_snap {
    uint64_t bucket[AGENT_HIST_BUCKETS];
    uint64_t count;
    uint64_t max_ns;
} agent_hist_snap;

/** Bucket index of a value (exposed for tests). */
unsigned agent_hist_bucket(uint64_t ns);
/** Smallest value that falls into bucket b. */
uint64_t agent_hist_bucket_low(unsigned b);

/** Record one value (any thread, lock-free). */
void agent_hist_add(agent_hist *h, uint64_t ns);

/** Take the figures since the previous call: cumulative counts are copied
 *  into *prev and the difference written to *out; the maximum is swapped
 *  to zero.  One caller thread only (the health thread). */
void agent_hist_take(agent_hist *h, agent_hist_snap *prev, agent_hist_snap *out);

/** Quantile q (0..1) of a snapshot: the upper end of the bucket holding
 *  it, clamped to the snapshot's max.  0 when empty. */
uint64_t agent_hist_quantile(const agent_hist_snap *s, double q);

#endif /* AGENT_HIST_H */
