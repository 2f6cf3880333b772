/* agent_hist.c - lock-free log-linear histograms (see agent_hist.h). */
#include "agent_hist.h"

#include <string.h>

unsigned agent_hist_bucket(uint64_t ns)
{
    if (ns < 16)
        return (unsigned)ns;
    unsigned e = 63u - (unsigned)__builtin_clzll(ns);   /* e >= 4 */
    if (e > 40)
        return AGENT_HIST_BUCKETS - 1;
    unsigned sub = (unsigned)(ns >> (e - 3)) & 7u;
    return 16u + (e - 4u) * 8u + sub;
}

uint64_t agent_hist_bucket_low(unsigned b)
{
    if (b < 16)
        return b;
    unsigned e = 4u + (b - 16u) / 8u, sub = (b - 16u) % 8u;
    return ((uint64_t)1 << e) + ((uint64_t)sub << (e - 3));
}

void agent_hist_add(agent_hist *h, uint64_t ns)
{
    /* relaxed: the counters are statistics; the health thread tolerates
     * seeing an add in the next second's snapshot. */
    atomic_fetch_add_explicit(&h->bucket[agent_hist_bucket(ns)], 1, memory_order_relaxed);
    uint64_t m = atomic_load_explicit(&h->max_ns, memory_order_relaxed);
    while (ns > m && !atomic_compare_exchange_weak_explicit(
                         &h->max_ns, &m, ns, memory_order_relaxed, memory_order_relaxed))
        ;
}

void agent_hist_take(agent_hist *h, agent_hist_snap *prev, agent_hist_snap *out)
{
    memset(out, 0, sizeof *out);
    for (unsigned b = 0; b < AGENT_HIST_BUCKETS; b++) {
        uint64_t now = atomic_load_explicit(&h->bucket[b], memory_order_relaxed);
        out->bucket[b] = now - prev->bucket[b];
        out->count += out->bucket[b];
        prev->bucket[b] = now;
    }
    out->max_ns = atomic_exchange_explicit(&h->max_ns, 0, memory_order_relaxed);
    if (out->count && out->max_ns == 0) {
        /* the value that raised max landed in the previous exchange */
        for (unsigned b = AGENT_HIST_BUCKETS; b-- > 0;)
            if (out->bucket[b]) {
                out->max_ns = agent_hist_bucket_low(b);
                break;
            }
    }
}

uint64_t agent_hist_quantile(const agent_hist_snap *s, double q)
{
    if (!s->count)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)s->count + 0.5);
    if (rank < 1)
        rank = 1;
    if (rank > s->count)
        rank = s->count;
    uint64_t seen = 0;
    for (unsigned b = 0; b < AGENT_HIST_BUCKETS; b++) {
        seen += s->bucket[b];
        if (seen >= rank) {
            uint64_t hi = b + 1 < AGENT_HIST_BUCKETS ? agent_hist_bucket_low(b + 1) - 1
                                                     : agent_hist_bucket_low(b);
            return s->max_ns && hi > s->max_ns ? s->max_ns : hi;
        }
    }
    return s->max_ns;
}
