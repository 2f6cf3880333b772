/*
 * agent_api.h - the API record policy (cuptop run --api all|gpu|none,
 * --api-include, --api-exclude): which runtime and driver calls CUPTI
 * records.  `gpu` keeps the calls that launch, copy, set, synchronize,
 * allocate or free, and create or destroy streams, events and graphs (the
 * ones that correlate with GPU records or explain a wait); the rest are
 * muted per call id with cuptiActivityEnableRuntimeApi/DriverApi.
 *
 * The table is generated at build time (tools/gen_cbid_names.sh --policy)
 * from the toolkit's cbid headers and src/agent/api_rules.txt; it stands
 * alone so tests can link it without the agent.
 */
#ifndef AGENT_API_H
#define AGENT_API_H

#include <stdint.h>

/** One runtime (domain 0) or driver (domain 1) call id. */
typedef struct agent_api_entry {
    uint8_t domain;
    uint16_t cbid;
    uint8_t gpu;          /* recorded under the `gpu` policy               */
    const char *name;     /* without CUDA's version suffix                 */
} agent_api_entry;

extern const agent_api_entry agent_api_table[];
extern const unsigned agent_api_table_count;

#endif /* AGENT_API_H */
