/*
 * agent_control.h - runtime control (DESIGN invariant 7): a front end
 * writes a control request with a generation number (cuptop's kind panel,
 * `cuptop control`, `cuptop attach`); the agent takes the newest one here
 * and applies it - kinds on or off (attaching to CUPTI at the first kind,
 * detaching at the last), the API record policy, the buffer pool limit -
 * opens a new epoch and acknowledges the generation, all in one place.
 *
 * Thread: the health thread alone calls agent_control_poll, once per tick
 * (every 200 ms).  Locks: stop_lock, taken with trylock around the whole
 * change (one scope change at a time with the stop protocol, which holds
 * stop_lock while it joins the health thread: a request seen then is
 * applied at a later tick, or never when the session stops).  Kind changes
 * that can race with a capture range's callbacks go through the scope's
 * own functions (agent_scope_set_kinds, agent_scope_set_api_policy), which
 * take range_lock themselves: nothing here takes it.
 *
 * State: the generations seen and applied (agent_control_state, the
 * agent's `ctl` member), written by the health thread alone (reset at a
 * session's start, before it runs), read by the health row through
 * agent_control_gens; atomics, so any thread may read them.
 */
#ifndef AGENT_CONTROL_H
#define AGENT_CONTROL_H

#include <stdatomic.h>
#include <stdint.h>

/* The control generations (agent_control.c only). */
typedef struct agent_control_state {
    _Atomic uint64_t gen_applied;     /* acknowledged in the store        */
    _Atomic uint64_t gen_seen;        /* newest read, maybe not applied   */
} agent_control_state;

struct agent;

/** Read the store's newest control request; apply a generation newer than
 *  the one applied (flush first, so the change loses nothing), open the
 *  epoch it starts and acknowledge it.  Health thread. */
void agent_control_poll(struct agent *a);
/** A new session: no generation seen or applied.  Session start. */
void agent_control_reset(struct agent *a);
/** The generations applied and seen, for the health row.  Any thread. */
void agent_control_gens(const struct agent *a, uint64_t *applied, uint64_t *seen);

#endif /* AGENT_CONTROL_H */
