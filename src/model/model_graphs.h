/*
 * model_graphs.h - CUDA graph launches per graph id: the graph kind's
 * records (CUPTI's GRAPH_TRACE, one per graph launch, the graph id in the
 * record's aux) read from a window of a session, with count and duration
 * statistics per graph id.  Shared by `cuptop report` (text and --json);
 * `cuptop compare` keeps its own groups (model_compare.h) with the same
 * histograms.  No LMDB, no curses, no CUPTI.
 *
 * Caveats
 * - model_graphs_read streams every record of the window once (memory: one
 *   histogram per graph id, bounded by the range of durations, plus one
 *   record chunk); its caller skips it for a session with no graph records.
 * - Percentiles are nearest-rank, within 1/128 of a recorded duration
 *   (MODEL_CMP_REL_ERROR, model_hist.h).
 */
#ifndef CUPTOP_MODEL_GRAPHS_H
#define CUPTOP_MODEL_GRAPHS_H

#include <stddef.h>
#include <stdint.h>

#include "cupstore.h"

/* One graph id's launches. */
typedef struct model_graph_stat {
    uint32_t graph_id;
    uint64_t count;             /* graph records (launches) of this id      */
    uint64_t timed;             /* those with a start and an end: the
                                   durations below are over these           */
    uint64_t total_ns, min_ns, p50_ns, p90_ns, p99_ns, max_ns;
} model_graph_stat;

typedef struct model_graphs {
    model_graph_stat *g;        /* by graph id, ascending (caller frees with
                                   model_graphs_free)                       */
    size_t n;
    uint64_t launches;          /* graph records read: the sum of count     */
} model_graphs;

/** Read the graph records whose start lies in [from_ns, to_ns] in txn (a
 *  session's store) into out.
 *  @param[out] out  filled on success; release with model_graphs_free.
 *  @return 0, ENOMEM, or a store error (the records cannot be read). */
int model_graphs_read(cupstore_txn *txn, uint64_t from_ns, uint64_t to_ns, model_graphs *out);
void model_graphs_free(model_graphs *g);

#endif
