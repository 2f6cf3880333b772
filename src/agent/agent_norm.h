/*
 * agent_norm.h - normalise CUPTI activity records (the toolkit's structs)
 * into cupstore_record, and map kinds both ways.
 */
#ifndef AGENT_NORM_H
#define AGENT_NORM_H

#include <stddef.h>
#include <stdint.h>

#include <cupti.h>

#include "cupstore.h"

/** Context id -> device index (CUPSTORE_DEVICE_NONE when unknown). */
typedef uint16_t (*agent_ctx_device_fn)(uint32_t ctx_id, void *arg);

/** cuptop kind of a CUPTI record kind (CUPSTORE_KIND_OTHER if none). */
cupstore_kind agent_norm_kind(CUpti_ActivityKind k);

/** CUPTI kinds to enable for one cuptop kind; returns how many (<= 2). */
size_t agent_norm_cupti_kinds(cupstore_kind k, CUpti_ActivityKind out[2]);

/** Index into cupstore_health.overhead_by_type of an overhead kind. */
unsigned agent_norm_overhead_index(uint32_t overhead_kind);

/** Device index from a CUPTI device id (NONE when out of range). */
static inline uint16_t agent_norm_device(uint32_t device_id)
{
    return device_id < CUPSTORE_DEVICE_MAX ? (uint16_t)device_id : CUPSTORE_DEVICE_NONE;
}

/** Normalise one record.  Sets the ZERO_TS flag (start or end is 0, for
 *  kinds that carry both) and TRUNCATED (a GPU activity with a start but
 *  end 0: still running at a forced flush; not ZERO_TS).
 *  @param[out] name, name_len  the record's name (kernel, marker), or NULL;
 *              points into the CUPTI buffer: valid while it is.
 *  Never fails: unknown kinds come back as CUPSTORE_KIND_OTHER. */
void agent_norm_record(const CUpti_Activity *rec, cupstore_record *out, const char **name,
                       agent_ctx_device_fn ctx_device, void *arg);

#endif /* AGENT_NORM_H */
