/*
 * model_ledger.h - the launch ledger's result as the agent wrote it at the
 * end of a session (`cuptop run --ledger`; the session's `ledger` and
 * `ledger.stream.N` metadata, doc/store-format.md): per GPU kind what was
 * launched, what arrived and what is missing, and the streams the missing
 * records were launched on.  Shared by report and check.  A session
 * without the ledger (older, or not asked for) reads as not present.
 */
#ifndef CUPTOP_MODEL_LEDGER_H
#define CUPTOP_MODEL_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cupstore.h"

enum { MODEL_LEDGER_KINDS = 4 };            /* kernel, memcpy, memset, graph */
#define MODEL_LEDGER_STREAMS 65             /* the agent's 64 + "other"    */
#define MODEL_LEDGER_SECONDS 32

typedef struct model_ledger_stream {
    bool other;                             /* the streams beyond 64       */
    uint32_t device, stream, tid, launches;
    bool named_known;                       /* the agent said (`named`)    */
    uint32_t named;                         /* launches whose kernel name
                                             * is known                    */
    uint64_t missing[MODEL_LEDGER_KINDS];
    uint64_t first_ns, last_ns;             /* launch times (realtime ns)  */
} model_ledger_stream;

typedef struct model_ledger {
    bool present;
    bool exact;                             /* unrecorded exact per kind   */
    bool partial;                           /* switched on/off at runtime:
                                             * covers part of the session,
                                             * its counts are lower bounds */
    bool unjudged;                          /* no final sweep (the consumer
                                             * still ran at the stop): no
                                             * record called missing, arrived
                                             * only as last counted live   */
    uint32_t switches;                      /* ledger on/off requests      */
    uint64_t launches, cancelled, ambiguous, capturing, overrun, busy;
    /* graph launches whose node records could not be counted (the graph
     * was instantiated before the agent attached, or is not countable):
     * matched, never called missing; and the instantiated graphs counted */
    uint64_t unknowable, graphs, graphs_unknowable;
    uint64_t expected[MODEL_LEDGER_KINDS], matched[MODEL_LEDGER_KINDS];
    uint64_t missing[MODEL_LEDGER_KINDS], unrecorded[MODEL_LEDGER_KINDS];
    uint64_t orphan[MODEL_LEDGER_KINDS], extra[MODEL_LEDGER_KINDS];
    unsigned nstreams;
    model_ledger_stream stream[MODEL_LEDGER_STREAMS];
    /* missing records by launch second (from the store's `lost` rows, in
     * time order): the first MODEL_LEDGER_SECONDS seconds with any, then
     * how many more seconds had some */
    unsigned nseconds;
    struct {
        uint64_t second;
        uint64_t missing[MODEL_LEDGER_KINDS];
    } second[MODEL_LEDGER_SECONDS];
    uint64_t seconds_more, more_last;
    uint64_t lost_rows;                     /* rows read from `lost`        */
} model_ledger;

/** The kind's name ("kernel", "memcpy", "memset", "graph"). */
const char *model_ledger_kind_name(unsigned k);
/** One stream's hole in words: "stream 9 on device 0: 53 kernel, 4 memcpy
 *  records missing, launched 2026-...Z..2026-...Z by thread 29274 (59
 *  launches)".  Always NUL-terminated. */
void model_ledger_hole_text(const model_ledger_stream *h, char *buf, size_t len);
/** The words a partial ledger's figures need: "ledger: partial (switched
 *  on or off N times at runtime): launches outside its spans were not
 *  expected; unrecorded is a lower bound", or for one not judged at the
 *  stop, why nothing is called missing.  Always NUL-terminated. */
void model_ledger_partial_text(const model_ledger *l, char *buf, size_t len);
/** Read the ledger of the session txn belongs to.  0 (l->present false
 *  when the session has none), or a store error. */
int model_ledger_read(cupstore_txn *txn, model_ledger *l);

#endif /* CUPTOP_MODEL_LEDGER_H */
