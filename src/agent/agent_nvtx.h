/*
 * agent_nvtx.h - NVTX routed through the agent: the library exports
 * InitializeInjectionNvtx2, keeps each NVTX library's export table while
 * dormant, and hands the tables to CUPTI (cuptiNvtxInitialize2) once it
 * is attached; with a capture range nvtx:NAME its wrappers see the range
 * (agent_scope_nvtx).  doc/agent.md "NVTX".
 *
 * Threads: InitializeInjectionNvtx2 runs on an application thread (a
 * library's first NVTX call); agent_nvtx_attached on the thread that
 * attaches (the start, the health thread, a range callback); the wrappers
 * on every application thread that makes an NVTX call.
 *
 * Locks: the state is agent_nvtx.c's own (file-static, not in struct
 * agent): one mutex of its own around the kept tables, never held across
 * anything that can block on the application; the counters below and the
 * wrappers' next slots are atomics, read lock-free.
 */
#ifndef AGENT_NVTX_H
#define AGENT_NVTX_H

#include <stddef.h>
#include <stdint.h>

struct agent;

/** A range CUPTI never saw open (pushed before its handlers were in:
 *  before CUDA, an attach, or while dormant), closed once they were: the
 *  agent makes it from its own wrappers' view (a ring of its own, under its
 *  own mutex; the consumer takes them). */
typedef struct agent_nvtx_range {
    uint32_t id;                 /* from UINT32_MAX down: never CUPTI's    */
    uint32_t tid, depth;
    uint64_t start_ns, end_ns;   /* CLOCK_REALTIME of the push and the pop */
    char name[64];               /* the push's message (cut to 63 bytes)  */
    char domain[64];             /* "" : the default domain               */
} agent_nvtx_range;
/** Consumer: take at most max of those waiting.  @return how many. */
size_t agent_nvtx_take(agent_nvtx_range *out, size_t max);
/** What CUPTI never saw: pushes still open that it never saw (and the
 *  first one's name), pops with no push open, ranges the agent could not
 *  keep (its ring was full). */
void agent_nvtx_unseen(long *open, unsigned long *unbalanced, unsigned long *lost, char *first,
                       size_t len);

/** CUPTI is attached: hand it the NVTX tables kept so far. */
void agent_nvtx_attached(struct agent *a);
/** InitializeInjectionNvtx2 calls so far (NVTX routed to the agent). */
unsigned long agent_nvtx_inits(void);
/** How many NVTX tables CUPTI accepted (its handlers sit in them). */
unsigned agent_nvtx_given(void);
/** NVTX_INJECTION64_PATH = this library, when unset (best effort). */
void agent_nvtx_setenv(void);

#endif /* AGENT_NVTX_H */
