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
 * wrappers' next slots are atomics, read lock-free.  The wrappers' view of
 * pushes and pops, and the ranges the agent makes, are agent_nvtx_track.h's.
 */
#ifndef AGENT_NVTX_H
#define AGENT_NVTX_H

struct agent;

/** CUPTI is attached: hand it the NVTX tables kept so far. */
void agent_nvtx_attached(struct agent *a);
/** InitializeInjectionNvtx2 calls so far (NVTX routed to the agent). */
unsigned long agent_nvtx_inits(void);
/** How many NVTX tables CUPTI accepted (its handlers sit in them). */
unsigned agent_nvtx_given(void);
/** NVTX_INJECTION64_PATH = this library, when unset (best effort). */
void agent_nvtx_setenv(void);

#endif /* AGENT_NVTX_H */
