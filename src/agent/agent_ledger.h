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
 * holds an older launch with records outstanding pushes that one out of
 * the window: the launcher hands a copy to the consumer through a bounded
 * queue, and the consumer declares its missing records lost there and
 * then, on its stream (`evicted`; the callback set by
 * agent_ledger_on_evict).  Under a starved pool most such launches are
 * ones whose records CUPTI dropped (counted by the drop classes); a record
 * of one that still comes is LATE (a bitmap keeps the ids declared so),
 * and the caller takes it back from its stream.  Only when that queue is
 * full is the old launch overwritten unseen: counted (`overrun`), its
 * records then count in the totals only, never per stream.  Launch
 * entries are written with a
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
    AGENT_LEDGER_GRAPH,        /* a graph launch's GRAPH_TRACE record      */
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
    uint64_t lost[AGENT_LEDGER_KINDS];       /* declared lost by sweeps and
                                              * evictions (late ones
                                              * included: missing is
                                              * lost - late)              */
    uint64_t evicted;                        /* launches pushed out of the
                                              * window with records
                                              * outstanding, declared lost */
    uint64_t unknowable;                     /* launches not judged        */
} agent_ledger_totals;

/** A launch with records still missing, as sweeps and evictions report it. */
typedef void (*agent_ledger_lost_fn)(const agent_launch *launch,
                                     const uint32_t missing[AGENT_LEDGER_KINDS], void *arg);

/** A launch pushed out of the window with records outstanding, on its way
 *  from its launcher to the consumer (a bounded MPSC queue: the cell is
 *  free for position p when seq == p, filled when seq == p + 1). */
typedef struct agent_ledger_evict_cell {
    _Atomic uint64_t seq;
    agent_launch launch;
} agent_ledger_evict_cell;

/* The eviction queue holds 2^min(bits, EVICT_BITS) launches: the consumer
 * empties it at every record and loop turn (at most 10 ms apart), and
 * 32,768 is about 70 ms of evictions at the H100's launch storm rate. */
#define AGENT_LEDGER_EVICT_BITS 15
/* The records declared lost at eviction are remembered, a bit per id and
 * kind over 2^GONE_BITS ids (4M ids, 1.5 MiB): a record that comes later
 * is LATE, not an orphan.  (A record later than that, or an orphan whose
 * id shares a bit with a launch declared lost 4M ids before, is taken for
 * late: the loss is then a lower bound, never more than it was.) */
#define AGENT_LEDGER_GONE_BITS 22
/* A launch pushed out with more than one record of a kind outstanding (a
 * graph launch's nodes) is remembered with its counts, direct-mapped by
 * id over 2^GONE_MULTI_BITS entries: each late record takes one back.
 * One that finds its entry taken by a later such launch is counted
 * `overrun` (the ledger is then no longer whole: never exact). */
#define AGENT_LEDGER_GONE_MULTI_BITS 10

/** The counts of one launch pushed out with several records of a kind
 *  outstanding (consumer). */
typedef struct agent_ledger_gone_multi {
    uint32_t corr;
    uint16_t left[AGENT_LEDGER_KINDS];
} agent_ledger_gone_multi;

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
    /* launches pushed out of the window: launchers push, the consumer pops */
    agent_ledger_evict_cell *evq;
    uint32_t evq_mask;
    _Atomic uint64_t evq_head;
    uint64_t evq_tail;                  /* consumer                       */
    uint64_t *gone;                     /* ids declared lost at eviction,
                                           a bit each (consumer)          */
    agent_ledger_gone_multi *gone_multi; /* ... several records of a kind
                                           (consumer)                     */
    uint64_t gone_forgot;               /* gone_multi entries overwritten
                                           with records left (consumer)   */
    agent_ledger_lost_fn evict_fn;      /* told of each such launch       */
    void *evict_arg;
    uint64_t evicted;                   /* consumer                       */
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

/** A GPU record of `kind` with correlation id corr was parsed (consumer).
 *  LATE: its launch was declared lost (pushed out of the window, or by a
 *  sweep); the caller takes one record back from the launch's stream. */
agent_ledger_match agent_ledger_arrive(agent_ledger *l, uint32_t corr, agent_ledger_kind kind);

/** Who is told of a launch declared lost at eviction (consumer thread,
 *  from agent_ledger_arrive, _drain and _sweep).  Set before launches. */
void agent_ledger_on_evict(agent_ledger *l, agent_ledger_lost_fn fn, void *arg);
/** Take in the launches pushed out of the window (consumer thread; arrive
 *  and sweep do it too): each with records missing is declared lost. */
void agent_ledger_drain(agent_ledger *l);

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
/** The launcher side's counts only (any thread, the consumer still
 *  running): launches, cancelled, overrun, busy, unknowable, expected;
 *  the consumer's counts (matched, extra, late, orphan, lost) are 0. */
void agent_ledger_totals_launched(agent_ledger *l, agent_ledger_totals *out);

/** After the final sweep: records of kind k expected but neither arrived
 *  nor declared lost per launch -- those of overwritten launches, missing
 *  in total but on no stream.  0 when nothing was overwritten.  (Orphans
 *  are taken as theirs when something was: a lower bound then.) */
uint64_t agent_ledger_unattributed(const agent_ledger_totals *t, agent_ledger_kind k);

#endif /* AGENT_LEDGER_H */
