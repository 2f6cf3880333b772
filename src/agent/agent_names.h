/*
 * agent_names.h - name interning for the consumer thread (kernel and
 * marker names).  Ids start at 1.  A name is written to the store
 * (cupstore_name_put) in the same transaction as the first chunk that uses
 * it: the consumer asks for the batch's pending names before committing and
 * reports whether the commit held.  Single-threaded (consumer only).
 */
#ifndef AGENT_NAMES_H
#define AGENT_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AGENT_NAME_MAX_LEN 4096         /* longer names are cut here       */
#define AGENT_NAMES_MAX (1u << 20)      /* past this, names get id 0       */
#define AGENT_CBID_MAX 2048u            /* API names cached per domain     */
#define AGENT_API_UNNAMED UINT32_MAX    /* cache: CUPTI cannot name it     */

/* API domains of the name cache */
enum { AGENT_API_RUNTIME = 0, AGENT_API_DRIVER = 1 };

typedef struct agent_name {
    char *str;
    uint32_t len;
    uint32_t hash;
    uint32_t batch;     /* batch number it was last made pending in       */
    bool stored;        /* committed to the store                          */
} agent_name;

typedef struct agent_names {
    agent_name *v;      /* by id - 1                                       */
    uint32_t n, cap;
    uint32_t *table;    /* open addressing: id, 0 = empty                  */
    uint32_t tmask;
    uint32_t *pending;  /* ids to write with the current batch             */
    uint32_t npending, pcap;
    uint32_t batch;
    uint32_t *api;      /* [2][AGENT_CBID_MAX]: cbid -> name id; 0 = not
                           asked yet, AGENT_API_UNNAMED = no name        */
} agent_names;

/** Resolve an API callback id to CUPTI's name (NULL: CUPTI has none). */
typedef const char *(*agent_api_name_fn)(unsigned domain, uint32_t cbid, void *arg);

int agent_names_init(agent_names *nm);
void agent_names_free(agent_names *nm);

/** Intern a name (len bytes, or up to NUL / AGENT_NAME_MAX_LEN when len is
 *  SIZE_MAX).  @return its id, or 0 for NULL/empty or when out of memory. */
uint32_t agent_names_intern(agent_names *nm, const char *s, size_t len);

/** Mark id as used by the current batch (a no-op once it is stored). */
void agent_names_touch(agent_names *nm, uint32_t id);

/** Name id for an API record: resolved through fn once per (domain, cbid)
 *  and interned with its version suffix stripped (agent_names_api_strip);
 *  later calls are one array read.  @return 0 when fn has no name (the
 *  readers then show "cbid N"), for cbids past AGENT_CBID_MAX, or when
 *  out of memory. */
static inline uint32_t agent_names_api(agent_names *nm, unsigned domain, uint32_t cbid,
                                       agent_api_name_fn fn, void *arg);

/** Length of an API name without CUPTI's "_vNNNN" version suffix ("_v"
 *  then 4 or 5 digits at the end: cudaLaunchKernel_v7000 ->
 *  cudaLaunchKernel; cuMemcpyHtoDAsync_v2, a function of its own, stays). */
size_t agent_names_api_strip(const char *s, size_t len);

/** The slow half of agent_names_api (first use of a cbid). */
uint32_t agent_names_api_resolve(agent_names *nm, unsigned domain, uint32_t cbid,
                                 agent_api_name_fn fn, void *arg);

static inline uint32_t agent_names_api(agent_names *nm, unsigned domain, uint32_t cbid,
                                       agent_api_name_fn fn, void *arg)
{
    if (cbid >= AGENT_CBID_MAX || domain > AGENT_API_DRIVER || !nm->api)
        return 0;
    uint32_t id = nm->api[domain * AGENT_CBID_MAX + cbid];
    if (id == 0)
        return agent_names_api_resolve(nm, domain, cbid, fn, arg);
    if (id == AGENT_API_UNNAMED)
        return 0;
    if (!nm->v[id - 1].stored)
        agent_names_touch(nm, id);
    return id;
}

/** Name for an id (NULL if unknown). */
const agent_name *agent_names_get(const agent_names *nm, uint32_t id);

/** Ids the current batch must write (valid until agent_names_batch_end). */
size_t agent_names_pending(const agent_names *nm, const uint32_t **ids);

/** End the current batch: committed = the pending names are now stored;
 *  otherwise they stay pending for the next batch that uses them. */
void agent_names_batch_end(agent_names *nm, bool committed);

#endif /* AGENT_NAMES_H */
