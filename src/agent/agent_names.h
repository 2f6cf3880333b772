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
} agent_names;

int agent_names_init(agent_names *nm);
void agent_names_free(agent_names *nm);

/** Intern a name (len bytes, or up to NUL / AGENT_NAME_MAX_LEN when len is
 *  SIZE_MAX).  @return its id, or 0 for NULL/empty or when out of memory. */
uint32_t agent_names_intern(agent_names *nm, const char *s, size_t len);

/** Name for an id (NULL if unknown). */
const agent_name *agent_names_get(const agent_names *nm, uint32_t id);

/** Ids the current batch must write (valid until agent_names_batch_end). */
size_t agent_names_pending(const agent_names *nm, const uint32_t **ids);

/** End the current batch: committed = the pending names are now stored;
 *  otherwise they stay pending for the next batch that uses them. */
void agent_names_batch_end(agent_names *nm, bool committed);

#endif /* AGENT_NAMES_H */
