/*
 * agent_api.h - the API record policy (cuptop run --api all|gpu|none,
 * --api-include, --api-exclude): which runtime and driver calls CUPTI
 * records.  `gpu` keeps the calls that launch, copy, set, synchronize,
 * allocate or free, and create or destroy streams, events and graphs (the
 * ones that correlate with GPU records or explain a wait); the rest are
 * muted per call id with cuptiActivityEnableRuntimeApi/DriverApi.
 *
 * Threads and locks: the policy's state (agent_api_state, the agent's
 * `api` member) is agent_api.c's alone; other files ask through the
 * functions below.  They run on whichever thread applies kinds, one at a
 * time: the start (before the agent's threads exist), the health thread
 * applying a control request (stop_lock held, and range_lock through
 * agent_scope_set_api_policy), a capture range's callback on an
 * application thread (range_lock), the stop protocol (stop_lock and
 * range_lock).  The epoch writers read it (agent_api_epoch_fill) from
 * the health thread or the stop, under stop_lock or alone.
 *
 * The table is generated at build time (tools/gen_cbid_names.sh --policy)
 * from the toolkit's cbid headers and src/agent/api_rules.txt; the entry
 * type stands first so the generated file needs nothing else of it.
 */
#ifndef AGENT_API_H
#define AGENT_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent_cupti.h"
#include "cupstore.h"

/** One runtime (domain 0) or driver (domain 1) call id. */
typedef struct agent_api_entry {
    uint8_t domain;
    uint16_t cbid;
    uint8_t gpu;          /* recorded under the `gpu` policy               */
    const char *name;     /* without CUDA's version suffix                 */
} agent_api_entry;

extern const agent_api_entry agent_api_table[];
extern const unsigned agent_api_table_count;

/* The policy in effect and what is set in CUPTI (agent_api.c only). */
typedef struct agent_api_state {
    uint32_t mode;                    /* CUPSTORE_API_*                   */
    char include[CUPSTORE_API_GLOBS_MAX], exclude[CUPSTORE_API_GLOBS_MAX];
    bool percall_missing;             /* CUPTI lacks the per-call calls
                                         (or ignores them: cuda_first)   */
    bool cuda_first;                  /* CUPTI started after CUDA here    */
    bool filtered[2];                 /* runtime/driver set call by call  */
    bool unfiltered;                  /* a filter was asked, all recorded */
    uint32_t muted[2];                /* call ids muted (known table)     */
    bool whole[2];                    /* kind enabled whole since the
                                         call ids were last all set       */
    uint8_t on[2048];                 /* per table row: enabled by us     */
} agent_api_state;

struct agent;

/** Turn the runtime or driver kind on or off under the policy (whole
 *  kind, or call id by call id).  @return CUPTI's first error. */
CUptiResult agent_api_apply_kind(struct agent *a, unsigned kind, bool want);
/** CUPTI is starting (its first subscription, or the first after a
 *  cuptiFinalize); after_cuda: CUDA was running already (cuptop attach,
 *  a dormant session's attach, a re-attach after a teardown).  CUPTI
 *  13.0.1 then records nothing for API call ids enabled one by one
 *  (measured on the H200: doc/benchmarks.md), so the policy records whole
 *  kinds, with a note.  Before any kind is applied; health thread or the
 *  start. */
void agent_api_cupti_start(struct agent *a, bool after_cuda);
/** Set the policy (mode 0, include/exclude NULL: unchanged) and apply it
 *  to the API kinds on.  @return 0 or CUPTI's first error. */
int agent_api_set_policy(struct agent *a, uint32_t mode, const char *include,
                         const char *exclude);
/** The policy's text (epoch api_policy). */
void agent_api_policy_text(const struct agent *a, char *buf, size_t len);
/** The muted call ids, compact ("runtime 1-9,11 driver 2-5"). */
void agent_api_muted_list(const struct agent *a, char *buf, size_t len);
/** The policy's part of an epoch record: api_mode, api_muted, api_policy
 *  and the API_UNFILTERED flag. */
void agent_api_epoch_fill(const struct agent *a, cupstore_epoch *e);

#endif /* AGENT_API_H */
