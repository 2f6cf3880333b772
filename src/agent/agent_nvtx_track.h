/*
 * agent_nvtx_track.h - the agent's own view of NVTX push/pop, per thread:
 * which open push matched the capture range nvtx:NAME[@DOMAIN], and which
 * CUPTI never saw (pushed before its handlers were in: before CUDA, an
 * attach, or while dormant), so that the agent makes those ranges itself
 * when they close.  doc/agent.md "NVTX".
 *
 * Threads: agent_nvtx_track_config runs once, on the application thread
 * of the first library's InitializeInjectionNvtx2 (under agent_nvtx.c's
 * mutex, before any wrapper is installed, so the wrappers read what it
 * wrote without a lock); match, pushed, popped and closed run on every
 * application thread making an NVTX push or pop (agent_nvtx.c's
 * wrappers); agent_nvtx_take on the consumer thread; agent_nvtx_unseen on
 * the consumer thread (its session notes).
 *
 * Locks: the open pushes are thread-local (no lock); the names of pushes
 * CUPTI never saw sit in one table under its own mutex, the closed ranges
 * in one ring under another; both are leaves, held only for a copy.
 * Counters are relaxed atomics (read for notes, nothing ordered by them).
 * A domain is passed as the handle (the key of a thread's stack) and the
 * agent's name for it (NULL: not one of the agent's handles), so this file
 * knows nothing of NVTX's tables or CUPTI.
 */
#ifndef AGENT_NVTX_TRACK_H
#define AGENT_NVTX_TRACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/** Read CUPTOP_CAPTURE_RANGE (the agent's configuration may not be loaded
 *  yet: NVTX can come before CUDA); nvtx:NAME[@DOMAIN] turns capture on. */
void agent_nvtx_track_config(void);
/** A capture range nvtx:... is set for this process. */
bool agent_nvtx_track_capturing(void);
/** Does a push of message m in domain dom (NULL: the default; dom_name:
 *  the agent's name for it, NULL when not the agent's) open the capture
 *  range?  False when no capture range nvtx:... is set. */
bool agent_nvtx_track_match(const char *m, const void *dom, const char *dom_name);
/** A push in dom: match, it opened the capture range; unseen, no CUPTI
 *  handler saw it (then its name and start are kept). */
void agent_nvtx_track_pushed(const void *dom, bool match, bool unseen, const char *name);
/** The pop of dom's innermost open push: *match when it matched the
 *  capture range; true when CUPTI never saw that push (the pop must not go
 *  to CUPTI either: it would close a range of its own, or make an END of
 *  nothing).  *d is its depth.  A pop with nothing open is counted. */
bool agent_nvtx_track_popped(const void *dom, bool *match, uint32_t *d);
/** A range CUPTI never saw open closes now (after popped returned true):
 *  while the marker kind is on, the agent makes the range itself (for
 *  agent_nvtx_take), whether or not CUPTI's handlers are in yet; otherwise
 *  it is out of scope. */
void agent_nvtx_track_closed(const void *dom, const char *dom_name, uint32_t d);

#endif /* AGENT_NVTX_TRACK_H */
