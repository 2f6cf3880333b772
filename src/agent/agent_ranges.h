/*
 * agent_ranges.h - NVTX ranges from CUPTI's MARKER records, on the
 * consumer thread (never in a callback): each START, END or instantaneous
 * marker becomes one cupstore_range row update, committed in the same
 * transaction as the batch that holds the record, so the range table and
 * the records agree after any crash.  Nesting depth comes from a small
 * per-thread stack of open marker ids.  Consumer-only state: no locking.
 */
#ifndef AGENT_RANGES_H
#define AGENT_RANGES_H

#include <stdbool.h>
#include <stdint.h>

#include <cupti.h>

#include "cupstore.h"

#define AGENT_RANGE_THREADS 256   /* threads tracked for nesting depth   */
#define AGENT_RANGE_DEPTH 128     /* open ranges tracked per thread      */

typedef struct agent_range_stack {
    uint32_t tid;              /* 0: free slot                            */
    uint32_t n;                /* open ranges (may exceed the ids kept)   */
    uint32_t ids[AGENT_RANGE_DEPTH];
} agent_range_stack;

typedef struct agent_ranges {
    cupstore_range *pend;      /* this batch's row updates                */
    uint32_t n, cap;
    agent_range_stack *stacks; /* AGENT_RANGE_THREADS slots               */
    uint64_t unbalanced;       /* ends whose id was on no thread's stack  */
    uint64_t seen;             /* marker records seen (the session)       */
} agent_ranges;

/** Allocate for batches of cap records.  0 or ENOMEM. */
int agent_ranges_init(agent_ranges *r, uint32_t cap);
void agent_ranges_free(agent_ranges *r);
/** One MARKER record (already normalised into rec, names interned).
 *  false when the batch's row list is full (cannot happen when cap is the
 *  batch size: at most one update per record). */
bool agent_ranges_add(agent_ranges *r, const CUpti_ActivityMarker2 *m, const cupstore_record *rec,
                      uint32_t name_id, uint32_t domain_id);
/** One MARKER_DATA record: colour (ARGB), category and payload of the
 *  marker id.  false when the batch's row list is full. */
bool agent_ranges_add_data(agent_ranges *r, const CUpti_ActivityMarkerData2 *m);
/** A whole range made by the agent (CUPSTORE_RANGE_AGENT: CUPTI never
 *  saw it open), names interned.  false when the row list is full. */
bool agent_ranges_add_whole(agent_ranges *r, uint32_t id, uint32_t pid, uint32_t tid,
                            uint32_t depth, uint64_t start_ns, uint64_t end_ns,
                            uint32_t name_id, uint32_t domain_id);
/** Merge this batch's updates into the store (inside the batch's txn). */
int agent_ranges_put(cupstore_txn *txn, const agent_ranges *r);
/** The batch is over (stored or refused): forget its updates. */
static inline void agent_ranges_batch_end(agent_ranges *r)
{
    r->n = 0;
}

#endif /* AGENT_RANGES_H */
