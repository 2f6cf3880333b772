/*
 * agent_ledger.h - the launch ledger: for every call that launches GPU
 * work, the GPU records it will produce, keyed by CUPTI correlation id,
 * and the records matched to it as they are parsed (issue 31).
 *
 * Why the launching thread registers (doc/design.md "The launch ledger"):
 * a launch is seen by the thread that makes it, synchronously, with no
 * buffer in between.  API activity records travel in the same buffers as
 * the GPU records and are lost with them, so they cannot witness their own
 * loss; CUPTI's dropped count is per context and cannot say which records.
 *
 * Threads and what they may call:
 *   agent_ledger_launch   application threads, any number at once, at the
 *                         launch callback's API enter (the correlation id
 *                         is known there, and the work is not issued yet,
 *                         so no record of it can be parsed before);
 *   agent_ledger_cancel   the same thread at API exit, when the call failed
 *                         (no work was issued, no record will come);
 *   agent_ledger_arrive,  the consumer thread only: one call per parsed
 *   agent_ledger_sweep,   GPU record; a sweep at 1 Hz (pending records)
 *   agent_ledger_totals   and after the final flush (everything still
 *                         expected is lost).
 * Nothing here takes a lock or allocates after init; a launch is a CAS and
 * a few relaxed stores.
 *
 * Memory is bounded: a ring of 2^bits slots indexed by correlation id
 * (correlation ids also advance for API calls that launch nothing, so the
 * window is measured in ids, not launches).  A launch whose slot still
 * holds an older launch with records outstanding overwrites it: counted
 * (`overrun`), and the overwritten launch's records then count in the
 * totals only, never per stream.  Launch entries are written with a
 * sequence count (odd while written) so the consumer never reads a torn
 * one; the consumer's own counts (records arrived per slot) are private to
 * its thread.
 *
 * This file and agent_ledger.c depend on nothing else in the agent so the
 * ThreadSanitizer test can build them alone.
 */
#ifndef AGENT_LEDGER_H
#define AGENT_LEDGER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** The kinds of GPU record a launch produces. */
typedef enum agent_ledger_kind {
    AGENT_LEDGER_KERNEL = 0,
    AGENT_LEDGER_MEMCPY,
    AGENT_LEDGER_MEMSET,
    AGENT_LEDGER_KINDS
} agent_ledger_kind;

#define AGENT_LEDGER_BITS_MIN 4
#define AGENT_LEDGER_BITS_MAX 24
#define AGENT_LEDGER_BITS_DEFAULT 17   /* 131,072 ids: agent_ledger_bytes */

/** One launch as the launching thread sees it. */
typedef struct agent_launch {
    uint32_t corr;          /* CUPTI correlation id (never 0)             */
    uint32_t stream;        /* CUPTI stream id                            */
    uint32_t tid;           /* launching thread                           */
    uint32_t name_id;       /* interned kernel name, 0 when unknown       */
    uint64_t launch_ns;     /* CPU time of the call (CUPTI's clock)       */
    uint16_t device;        /* device index                               */
    bool unknowable;        /* a graph whose record count cannot be known
                             * (conditional nodes, device launches): its
                             * records are matched, never called missing */
    uint16_t expect[AGENT_LEDGER_KINDS];   /* records of each kind        */
} agent_launch;

/** What arrive found for a record. */
typedef enum agent_ledger_match {
    AGENT_LEDGER_MATCHED = 0,  /* its launch is in the ledger             */
    AGENT_LEDGER_EXTRA,        /* its launch is, but expected no more of
                                * this kind (counted: `extra`)            */
    AGENT_LEDGER_LATE,         /* its launch was already declared lost:
                                * the caller takes one back from the loss */
    AGENT_LEDGER_ORPHAN        /* no launch for it: made before the ledger
                                * began, by a call it does not cover, or
                                * overwritten (overrun)                   */
} agent_ledger_match;

/** Counts since init (consumer thread, or any thread after a stop). */
typedef struct agent_ledger_totals {
    uint64_t launches;                       /* registered                 */
    uint64_t cancelled;                      /* failed calls, taken back   */
    uint64_t overrun;                        /* overwritten while open     */
    uint64_t busy;                           /* slot being written by
                                              * another launch: not kept   */
    uint64_t expected[AGENT_LEDGER_KINDS];   /* registered, not cancelled  */
    uint64_t matched[AGENT_LEDGER_KINDS];    /* arrived to their launch    */
    uint64_t extra[AGENT_LEDGER_KINDS];
    uint64_t late[AGENT_LEDGER_KINDS];
    uint64_t orphan[AGENT_LEDGER_KINDS];
    uint64_t lost[AGENT_LEDGER_KINDS];       /* declared lost by sweeps    */
    uint64_t unknowable;                     /* launches not judged        */
} agent_ledger_totals;

/** A launch slot, written by launchers under its sequence count. */
typedef struct agent_ledger_slot {
    _Atomic uint32_t seq;        /* odd while written                     */
    _Atomic uint32_t corr;       /* 0: empty                              */
    _Atomic uint32_t stream, tid, name_id;
    _Atomic uint16_t device;
    _Atomic uint8_t unknowable;
    _Atomic uint64_t launch_ns;
    _Atomic uint16_t expect[AGENT_LEDGER_KINDS];
    _Atomic uint32_t closed;     /* corr the consumer closed (all arrived
                                  * or declared lost); read by launchers  */
} agent_ledger_slot;

/** The consumer's own view of a slot (its thread only). */
typedef struct agent_ledger_seen {
    uint32_t corr;               /* the launch these counts belong to      */
    uint8_t lost;                /* declared lost by a sweep              */
    uint16_t arrived[AGENT_LEDGER_KINDS];
} agent_ledger_seen;

typedef struct agent_ledger {
    agent_ledger_slot *slot;
    agent_ledger_seen *seen;
    uint32_t mask;
    /* launcher-side counts (any thread) */
    _Atomic uint64_t launches, cancelled, overrun, busy, unknowable;
    _Atomic uint64_t expected[AGENT_LEDGER_KINDS];
    _Atomic uint64_t cancelled_expect[AGENT_LEDGER_KINDS];
    /* consumer-side counts (its thread) */
    uint64_t matched[AGENT_LEDGER_KINDS], extra[AGENT_LEDGER_KINDS];
    uint64_t late[AGENT_LEDGER_KINDS], orphan[AGENT_LEDGER_KINDS];
    uint64_t lost[AGENT_LEDGER_KINDS];
} agent_ledger;

/** Allocate a ledger of 2^bits slots (AGENT_LEDGER_BITS_MIN..MAX).
 *  @return 0, EINVAL or ENOMEM. */
int agent_ledger_init(agent_ledger *l, unsigned bits);
void agent_ledger_free(agent_ledger *l);
/** Empty the ledger for a new session, keeping its memory (a launch
 *  callback of the old session may still be running: never freed while
 *  the process lives). */
void agent_ledger_reset(agent_ledger *l);
/** Bytes a ledger of 2^bits slots takes (the figure the docs quote). */
size_t agent_ledger_bytes(unsigned bits);

/** Register a launch (application thread, at API enter).  A launch
 *  expecting nothing is not kept.  @return false when not kept because
 *  another launch is writing the same slot right now (counted `busy`). */
bool agent_ledger_launch(agent_ledger *l, const agent_launch *in);
/** Take back a registered launch whose call failed (same thread, API
 *  exit): no record will come.  Harmless when corr was not kept. */
void agent_ledger_cancel(agent_ledger *l, uint32_t corr);

/** A GPU record of `kind` with correlation id corr was parsed (consumer). */
agent_ledger_match agent_ledger_arrive(agent_ledger *l, uint32_t corr, agent_ledger_kind kind);

/** A launch with records still missing, as a sweep reports it. */
typedef void (*agent_ledger_lost_fn)(const agent_launch *launch,
                                     const uint32_t missing[AGENT_LEDGER_KINDS], void *arg);

/** Walk the ledger (consumer thread).  Launches made before lost_before_ns
 *  with records missing are declared lost: `fn` is called once for each,
 *  and a record of theirs that arrives later is LATE.  Launches made
 *  before pending_before_ns and after lost_before_ns with records missing
 *  add to pending[kind] (not lost: work may still be queued on the GPU, or
 *  its records in a buffer CUPTI has not delivered).  After the final
 *  flush: lost_before_ns = UINT64_MAX.  pending may be NULL. */
void agent_ledger_sweep(agent_ledger *l, uint64_t pending_before_ns, uint64_t lost_before_ns,
                        agent_ledger_lost_fn fn, void *arg,
                        uint64_t pending[AGENT_LEDGER_KINDS]);

/** The counts so far (consumer thread). */
void agent_ledger_totals_get(agent_ledger *l, agent_ledger_totals *out);

/** After the final sweep: records of kind k expected but neither arrived
 *  nor declared lost per launch -- those of overwritten launches, missing
 *  in total but on no stream.  0 when nothing was overwritten.  (Orphans
 *  are taken as theirs when something was: a lower bound then.) */
uint64_t agent_ledger_unattributed(const agent_ledger_totals *t, agent_ledger_kind k);

#endif /* AGENT_LEDGER_H */
