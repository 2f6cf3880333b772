/*
 * agent_launches.h - the launch ledger wired into the agent (--ledger,
 * CUPTOP_LEDGER=1; issue 31): the driver calls that launch kernels, copy
 * and set register the records they will produce (agent_ledger.h), the
 * consumer matches every parsed kernel, memcpy and memset record to its
 * launch, and after the final flush what never arrived is missing: per
 * device, stream and kind, and as the loss class `unrecorded` where no
 * other class counted it.
 *
 * Threads:
 *   agent_launches_start     session start (the starting thread);
 *   agent_launches_attach    each attach, after the subscription: enables
 *                            the call ids;
 *   agent_launches_api       application threads, from the subscriber's
 *                            callback (agent_resource_cb), API enter/exit;
 *   agent_launches_switch    whoever switches kinds (agent_apply_kinds),
 *                            around the switch;
 *   agent_launches_arrive    the consumer thread, one call per record;
 *   agent_launches_final,    the stop protocol, after the consumer has
 *   agent_launches_put       stopped (it owns the consumer's side then).
 *
 * A launch is registered only while its kind is on.  A kind switch that
 * overlaps a call (it began before the call's exit) makes the call
 * ambiguous: CUPTI decides per record whether it comes, so the launch is
 * taken back and counted `ambiguous`, never called missing.
 *
 * Covered calls: cuLaunchKernel(Ex), cuLaunchCooperativeKernel,
 * cuLaunchGridAsync, the asynchronous copies (cuMemcpy*Async) and sets
 * (cuMemsetD*Async), the synchronous ones (cuMemcpy*, cuMemsetD*_v2, on
 * the default stream), with their per-thread-stream variants; graph
 * launches (cuGraphLaunch): with the graph kind on, the one graph record
 * CUPTI 13 makes instead of the nodes' records; with it off, the kernel,
 * memcpy and memset records of the launched graph's nodes, as counted
 * when it was instantiated (agent_graphs.h), or, for a graph not known or
 * not countable, unknowable (matched, never called missing).
 */
#ifndef AGENT_LAUNCHES_H
#define AGENT_LAUNCHES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent_cupti.h"
#include "agent_graphs.h"
#include "agent_ledger.h"
#include "cupstore.h"

/* Streams kept with their own missing counts; the rest are summed as
 * "other streams". */
#define AGENT_LAUNCH_STREAMS 64

/** Records missing on one stream (the final sweep's view). */
typedef struct agent_launch_hole {
    uint16_t device;
    uint32_t stream;
    uint64_t missing[AGENT_LEDGER_KINDS];
    uint64_t first_ns, last_ns;      /* launch times (CLOCK_REALTIME)     */
    uint32_t tid;                    /* a launching thread                */
    uint32_t launches;               /* launches with records missing     */
    uint32_t named;                  /* ... whose kernel name is known    */
} agent_launch_hole;

/** Where a launch's `lost` row is (row1: its index + 1, 0 an empty slot). */
typedef struct agent_row_slot {
    uint32_t corr, row1;
} agent_row_slot;

typedef struct agent_launches_state {
    _Atomic bool on;                 /* the ledger is in force: launches
                                        registered are matched, judged   */
    _Atomic bool registering;        /* launches are registered now (off
                                        after a `ledger off` request)    */
    _Atomic bool partial;            /* switched on or off at runtime: it
                                        covers part of the session only  */
    uint32_t switches;               /* ledger on/off requests applied
                                        (health thread)                  */
    unsigned attaches;               /* attaches it was enabled at        */
    agent_ledger ledger;
    agent_graphs_state graphs;       /* instantiated graphs' node counts  */
    /* cuStreamIsCapturing (libcuda, or what the simulated CUPTI offers):
     * a launch into a capturing stream makes no record */
    int (*is_capturing)(void *stream, int *status);
    _Atomic uint32_t switch_gen;     /* odd while kinds are switched      */
    _Atomic uint64_t ambiguous;      /* launches taken back: a kind switch
                                        overlapped the call              */
    _Atomic uint64_t capturing;      /* launches into a capturing stream  */
    _Atomic uint64_t scoped_out;     /* launches out of the device scope  */
    /* bumped at every attach: a detach forgets the contexts (their
     * handles), so each thread's cached context is stale after it */
    _Atomic uint32_t ctx_gen;
    /* live (consumer thread writes, health thread reads): records
     * arrived to their launch, and pending -- launched more than
     * AGENT_LEDGER_GRACE_NS ago and not arrived -- at the last 1 Hz sweep */
    _Atomic uint64_t live_arrived[AGENT_LEDGER_KINDS];
    _Atomic uint64_t live_pending[AGENT_LEDGER_KINDS];
    uint64_t next_sweep_ns;          /* consumer thread only              */
    /* the final sweep's result (stop thread) */
    bool judged;
    bool unjudged;                   /* no sweep: the consumer was still in
                                        a commit at the stop (its side in
                                        use); launches counted only       */
    agent_ledger_totals totals;
    uint64_t missing[CUPSTORE_DEVICE_MAX + 1][AGENT_LEDGER_KINDS];
    uint64_t unrecorded[CUPSTORE_DEVICE_MAX + 1][AGENT_LEDGER_KINDS];
    bool unrecorded_exact;
    uint64_t unreturned;             /* buffers that never came back: no
                                        missing record called unrecorded */
    agent_launch_hole hole[AGENT_LAUNCH_STREAMS];
    unsigned nholes;
    agent_launch_hole other;         /* streams beyond AGENT_LAUNCH_STREAMS */
    /* each launch with records missing (the store's `lost` rows), at most
     * CUPSTORE_LOST_MAX; the rest only counted */
    cupstore_lost *lost;
    bool lost_tried;                 /* its allocation was tried          */
    agent_row_slot *row_of;          /* the rows by correlation id        */
    uint32_t *lost_name;             /* each row's kernel name (lnames)   */
    uint32_t nlost;
    uint64_t lost_unkept;
} agent_launches_state;

struct agent;

/* A record is pending once its launch is this old: work may still be
 * queued on the GPU behind earlier work, and CUPTI delivers a buffer only
 * when it is full or flushed (the agent flushes at 1 Hz), so a record of a
 * healthy session can take up to about a second after its work ends. */
#define AGENT_LEDGER_GRACE_NS 2000000000ull

/** Consumer thread, each turn of its loop: at most once a second, count
 *  the pending records (nothing is declared lost live). */
void agent_launches_tick(struct agent *a);
/** The health row's ledger fields and flags (health thread). */
void agent_launches_health(struct agent *a, cupstore_health *h);
/** A `ledger on|off` control request (health thread, under the stop
 *  lock).  On: launches are registered from now (those made before are
 *  out of its scope: their records arrive as orphans); off: no launch is
 *  registered any more, those registered are still matched and judged.
 *  Either makes the ledger partial for the session: `unrecorded` is then
 *  a lower bound, never exact.  Asking for what is in force changes
 *  nothing.  @return 0, or -1 with why (the ledger stays as it was). */
int agent_launches_control(struct agent *a, bool on, char *why, size_t len);

/** A new session (its start, before any attach): a fresh ledger when
 *  CUPTOP_LEDGER asks for one. */
void agent_launches_start(struct agent *a);
/** CUPTI attached (subscribed): find cuStreamIsCapturing, enable the
 *  launch call ids on the agent's subscriber.  A ledger that cannot work
 *  is said in a note and is off for the rest of the session. */
void agent_launches_attach(struct agent *a);
/** The subscriber's callback for a driver call id (application thread).
 *  @return true when cbid is one of the ledger's (handled here). */
bool agent_launches_api(struct agent *a, CUpti_CallbackId cbid, const CUpti_CallbackData *cd);
/** Kinds are about to be switched (begin) / were switched (end). */
void agent_launches_switch(struct agent *a, bool begin);
/** A parsed record (consumer thread): matched to its launch when it is a
 *  kernel, memcpy or memset.  Records that are themselves counted lost
 *  (zero timestamps, tail) must not arrive. */
void agent_launches_arrive(struct agent *a, const cupstore_record *r);
/** After the final drain (stop thread): everything still expected is
 *  missing; count `unrecorded` as the part no other class explains --
 *  none when `unreturned` buffers (counted lost, their records only
 *  bounded) may hold any of them. */
void agent_launches_final(struct agent *a, uint64_t unreturned);
/** The stop protocol's part (stop thread, after the consumer's stop):
 *  CUPTI's last drops queried, the final sweep, the `lost` rows.
 *  consumer_stopped: the consumer thread has ended (joined: done, or
 *  yielded / taken over, its batch counted as tail), so its side of the
 *  ledger is the stop's.  When it has not (orphaned in a commit, its side
 *  still in use), no sweep: a note, and a result that is partial and not
 *  judged (`unjudged=1`): launches counted, arrivals up to the last live
 *  count, nothing called missing or unrecorded.
 *  unreturned: buffers counted lost that may hold missing records. */
void agent_launches_stop(struct agent *a, bool consumer_stopped, uint64_t unreturned);
/** Store the launches with records missing (the `lost` rows), in their
 *  own transaction before the final status's, where the disk has room. */
void agent_launches_put_lost(struct agent *a);
/* agent_lnames.c: a launch's kernel name (the launch callback's
 * symbolName), interned by its pointer from any thread.  0: unknown.
 * Kept as long as the consumer keeps a kernel record's name
 * (AGENT_NAME_MAX_LEN), so a lost launch's name is the same names-table
 * entry as its kernel's records. */
#define AGENT_LNAME_MAX (4096 + 1)
uint32_t agent_lname_id(const char *sym);
/** The text of a name id, NULL when unknown. */
const char *agent_lname(uint32_t id);

/* agent_holes.c (the consumer, or the stop thread once it stopped) */
/** One launch with records missing (arg: the state): its stream's hole
 *  and its `lost` row (the ledger's sweep and eviction callback). */
void agent_holes_add(const agent_launch *in, const uint32_t missing[AGENT_LEDGER_KINDS], void *arg);
/** A record of a launch already made a hole came after all (LATE): one
 *  record less on its stream (the record names it) and in its row. */
void agent_holes_take_back(agent_launches_state *s, const cupstore_record *r, agent_ledger_kind k);
/** Free the rows (a new session). */
void agent_holes_clear(agent_launches_state *s);

/** Write the ledger's result as session metadata (the final's txn). */
int agent_launches_put(struct agent *a, cupstore_txn *txn);

#endif /* AGENT_LAUNCHES_H */
