/*
 * model_ranges.h - NVTX ranges of a session, as people ask about them:
 * per range name (and domain) the count and duration statistics, and every
 * instance in time order and slowest first.  Built from the store's range
 * table (cupstore_range_scan); shared by `cuptop ranges`, `cuptop export
 * --range` and the monitor.  No LMDB, no curses, no CUPTI.
 *
 * Caveats
 * - model_ranges_load reads the whole range table in the caller's read
 *   transaction: for a live session call it once per refresh, not per
 *   frame (1M ranges load in well under a second; doc/benchmarks.md).
 * - Everything returned is owned by the model_ranges and valid until
 *   model_ranges_free; nothing points into the transaction.
 * - Names and domains are raw bytes as the program gave them (any bytes,
 *   possibly invalid UTF-8 or control characters): escape them
 *   (model_escape / model_sanitize / the JSON writer) before printing.
 */
#ifndef CUPTOP_MODEL_RANGES_H
#define CUPTOP_MODEL_RANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cupstore.h"

/* One instance: a row of the store's range table. */
typedef struct model_range_inst {
    uint32_t id;            /* CUPTI marker id                             */
    uint32_t name;          /* index into model_ranges.names; UINT32_MAX:
                               an unbalanced end, or a name the filter
                               left out                                    */
    uint32_t flags;         /* CUPSTORE_RANGE_*                            */
    uint32_t pid, tid;      /* thread that opened it                       */
    uint32_t end_tid;       /* thread that closed it (0: same / unknown)   */
    uint32_t depth;         /* nesting depth on its thread (0: outermost)  */
    uint64_t start_ns;      /* 0 for an unbalanced end                     */
    uint64_t end_ns;        /* 0 while open                                */
    uint64_t dur_ns;        /* end - start of a closed range; else 0       */
    uint32_t color;         /* ARGB when flags has CUPSTORE_RANGE_COLOR    */
    uint32_t category;
    uint32_t payload_kind;  /* cupstore_range.payload_kind (0: none)       */
    uint64_t payload;
} model_range_inst;

/* Instance states, from the flags. */
static inline bool model_range_open(const model_range_inst *r)
{
    return (r->flags & (CUPSTORE_RANGE_START | CUPSTORE_RANGE_END | CUPSTORE_RANGE_POINT)) ==
           CUPSTORE_RANGE_START;
}
static inline bool model_range_closed(const model_range_inst *r)
{
    return (r->flags & (CUPSTORE_RANGE_START | CUPSTORE_RANGE_END)) ==
               (CUPSTORE_RANGE_START | CUPSTORE_RANGE_END) &&
           !(r->flags & CUPSTORE_RANGE_POINT);
}

/* One range name within one domain, with its statistics.  Durations are
 * over the closed instances only (count); open ones and points are counted
 * apart.  Percentiles are nearest-rank: the value at rank ceil(q * count)
 * (1-based) of the durations sorted ascending. */
typedef struct model_range_name {
    char *name;             /* raw bytes, NUL-terminated copy (malloc'ed)  */
    size_t name_len;        /* bytes (the name may hold a NUL)             */
    char *domain;           /* "" for the default domain                   */
    size_t domain_len;
    uint64_t count;         /* closed instances                            */
    uint64_t open;          /* still open at the end of the data (or crash) */
    uint64_t points;        /* instantaneous marks of this name            */
    uint64_t total_ns, min_ns, p50_ns, p90_ns, p99_ns, max_ns;
    size_t *by_dur;         /* count indexes into inst[], slowest first
                               (ties: earlier start first)                 */
    size_t *by_time;        /* ntime indexes into inst[] (closed, open and
                               points), by start time (ties: id)           */
    size_t ntime;
} model_range_name;

typedef struct model_ranges {
    model_range_inst *inst; /* every row of the table, marker-id order (the
                               filter selects names[], not rows)           */
    size_t ninst;
    model_range_name *names;/* sorted by total_ns descending, then by name */
    size_t nnames;
    uint64_t unbalanced;    /* ends (pops) with no start: in inst[] with
                               name UINT32_MAX, counted here, in no entry
                               (also when a filter is given)               */
    uint64_t open;          /* sum of names[].open                         */
    uint64_t points;        /* sum of names[].points                       */
} model_ranges;

typedef struct model_ranges_opts {
    const char *name_glob;  /* fnmatch(3) pattern on the name; NULL: all   */
    const char *domain;     /* exact domain; NULL: any; "": default only   */
} model_ranges_opts;

/** Read the session's range table and compute the statistics.
 *  @param[in] opts  may be NULL (every range)
 *  @param[out] out  free with model_ranges_free
 *  @return 0, ENOMEM, CUPSTORE_ECORRUPT (a damaged row), or a store code.
 *  @note a session without a range table (an older agent, or marker off)
 *        gives an empty model_ranges, not an error. */
int model_ranges_load(cupstore_txn *txn, const model_ranges_opts *opts, model_ranges **out);
void model_ranges_free(model_ranges *m);

/** Index into m->names of the entry whose name is name (NUL-terminated)
 *  and domain is domain (NULL: the first entry of that name in any domain,
 *  in the sort order).  @return the index, or -1. */
long model_ranges_find(const model_ranges *m, const char *name, const char *domain);

/** Step through one name's instances in time: the index into inst[] of the
 *  first instance of names[name] that starts after t_ns (dir > 0), or the
 *  last one that starts before t_ns (dir < 0).  @return -1 when none. */
long model_ranges_step(const model_ranges *m, size_t name, uint64_t t_ns, int dir);

/** The n-th instance (1-based, in time order) of names[name]: index into
 *  inst[], or -1 when out of range. */
long model_ranges_nth(const model_ranges *m, size_t name, uint64_t n);

/** Nearest-rank percentile of n values sorted ascending (q in (0,1]);
 *  0 when n is 0. */
uint64_t model_percentile(const uint64_t *sorted, size_t n, double q);

#endif /* CUPTOP_MODEL_RANGES_H */
