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
 * (cuMemsetD*Async), with their per-thread-stream variants.  Not yet:
 * synchronous copies and sets, graph launches (their records arrive as
 * orphans: counted, never matched by guess).
 */
#ifndef AGENT_LAUNCHES_H
#define AGENT_LAUNCHES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent_cupti.h"
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
} agent_launch_hole;

typedef struct agent_launches_state {
    _Atomic bool on;                 /* the ledger is in force            */
    unsigned attaches;               /* attaches it was enabled at        */
    agent_ledger ledger;
    /* cuStreamIsCapturing (libcuda, or what the simulated CUPTI offers):
     * a launch into a capturing stream makes no record */
    int (*is_capturing)(void *stream, int *status);
    _Atomic uint32_t switch_gen;     /* odd while kinds are switched      */
    _Atomic uint64_t ambiguous;      /* launches taken back: a kind switch
                                        overlapped the call              */
    _Atomic uint64_t capturing;      /* launches into a capturing stream  */
    _Atomic uint64_t scoped_out;     /* launches out of the device scope  */
    /* the final sweep's result (stop thread) */
    bool judged;
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
    uint32_t nlost;
    uint64_t lost_unkept;
} agent_launches_state;

struct agent;

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
 *  CUPTI's last drops queried, the final sweep, the `lost` rows; only a
 *  note when the consumer did not stop (its side may still be in use).
 *  unreturned: buffers counted lost that may hold missing records. */
void agent_launches_stop(struct agent *a, bool consumer_stopped, uint64_t unreturned);
/** Store the launches with records missing (the `lost` rows), in their
 *  own transaction before the final status's, where the disk has room. */
void agent_launches_put_lost(struct agent *a);
/** Write the ledger's result as session metadata (the final's txn). */
int agent_launches_put(struct agent *a, cupstore_txn *txn);

#endif /* AGENT_LAUNCHES_H */
