/*
 * export_kineto.c - Kineto's names for cuptop's records, shared by the
 * chrome and perfetto writers: the categories (libkineto's ActivityType
 * names) and the names of copies and sets (libkineto's memcpyName and the
 * memset's name in CuptiActivity.h), so tools written for Kineto's traces
 * (HTA, TensorBoard's profiler plugin) find what they look for.
 */
#include "config.h"

#include <stdio.h>

#include "export_int.h"

const char *export_kineto_cat(unsigned kind)
{
    switch (kind) {
    case CUPSTORE_KIND_KERNEL:
        return "kernel";
    case CUPSTORE_KIND_MEMCPY:
        return "gpu_memcpy";
    case CUPSTORE_KIND_MEMSET:
        return "gpu_memset";
    case CUPSTORE_KIND_RUNTIME:
        return "cuda_runtime";
    case CUPSTORE_KIND_DRIVER:
        return "cuda_driver";
    case CUPSTORE_KIND_SYNC:
        return "cuda_sync";
    default:
        return cupstore_kind_name(kind);  /* overhead, marker, other */
    }
}

/* CUPTI's CUpti_ActivityMemcpyKind, spelled as Kineto spells it. */
static const char *copy_kind_name(unsigned k)
{
    static const char *const names[] = {"<unknown>", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                        "AtoD",      "DtoA", "DtoD", "HtoH", "PtoP"};
    return k < sizeof names / sizeof *names ? names[k] : "<unknown>";
}

/* CUPTI's CUpti_ActivityMemoryKind, spelled as Kineto spells it. */
static const char *memory_kind_name(unsigned k)
{
    static const char *const names[] = {"Unknown", "Pageable",      "Pinned",        "Device",
                                        "Array",   "Managed",       "Device Static", "Managed Static"};
    return k < sizeof names / sizeof *names ? names[k] : "Unrecognized";
}

size_t export_gpu_name(const cupstore_record *r, char *buf, size_t len)
{
    int n;
    if (r->kind == CUPSTORE_KIND_MEMCPY)
        n = snprintf(buf, len, "Memcpy %s (%s -> %s)", copy_kind_name(CUPSTORE_COPY_KIND(r->aux)),
                     memory_kind_name(CUPSTORE_COPY_SRC(r->aux)),
                     memory_kind_name(CUPSTORE_COPY_DST(r->aux)));
    else if (r->kind == CUPSTORE_KIND_MEMSET)
        n = snprintf(buf, len, "Memset (%s)", memory_kind_name(CUPSTORE_RF_MEMKIND(r->flags)));
    else if (r->kind == CUPSTORE_KIND_GRAPH)   /* one graph launch, named by its graph id */
        n = snprintf(buf, len, "graph %u", (unsigned)r->aux);
    else
        return 0;
    return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}
