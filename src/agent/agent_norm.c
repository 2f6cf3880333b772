/* agent_norm.c - CUPTI records -> cupstore_record (see agent_norm.h). */
#include "agent_norm.h"

#include <string.h>

cupstore_kind agent_norm_kind(CUpti_ActivityKind k)
{
    switch (k) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        return CUPSTORE_KIND_KERNEL;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
        return CUPSTORE_KIND_MEMCPY;
    case CUPTI_ACTIVITY_KIND_MEMSET:
        return CUPSTORE_KIND_MEMSET;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
        return CUPSTORE_KIND_RUNTIME;
    case CUPTI_ACTIVITY_KIND_DRIVER:
        return CUPSTORE_KIND_DRIVER;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        return CUPSTORE_KIND_SYNC;
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
        return CUPSTORE_KIND_OVERHEAD;
    case CUPTI_ACTIVITY_KIND_MARKER:
    case CUPTI_ACTIVITY_KIND_MARKER_DATA:   /* colour/payload of a marker */
        return CUPSTORE_KIND_MARKER;
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
        return CUPSTORE_KIND_GRAPH;
    default:
        return CUPSTORE_KIND_OTHER;
    }
}

size_t agent_norm_cupti_kinds(cupstore_kind k, CUpti_ActivityKind out[2])
{
    switch (k) {
    case CUPSTORE_KIND_KERNEL: out[0] = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL; return 1;
    case CUPSTORE_KIND_MEMCPY:
        out[0] = CUPTI_ACTIVITY_KIND_MEMCPY;
        out[1] = CUPTI_ACTIVITY_KIND_MEMCPY2;
        return 2;
    case CUPSTORE_KIND_MEMSET: out[0] = CUPTI_ACTIVITY_KIND_MEMSET; return 1;
    case CUPSTORE_KIND_RUNTIME: out[0] = CUPTI_ACTIVITY_KIND_RUNTIME; return 1;
    case CUPSTORE_KIND_DRIVER: out[0] = CUPTI_ACTIVITY_KIND_DRIVER; return 1;
    case CUPSTORE_KIND_SYNC: out[0] = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION; return 1;
    case CUPSTORE_KIND_OVERHEAD: out[0] = CUPTI_ACTIVITY_KIND_OVERHEAD; return 1;
    case CUPSTORE_KIND_GRAPH: out[0] = CUPTI_ACTIVITY_KIND_GRAPH_TRACE; return 1;
    case CUPSTORE_KIND_MARKER:
        /* MARKER_DATA (colour, payload, category) is optional, like MEMCPY2 */
        out[0] = CUPTI_ACTIVITY_KIND_MARKER;
        out[1] = CUPTI_ACTIVITY_KIND_MARKER_DATA;
        return 2;
    default: return 0;
    }
}

unsigned agent_norm_overhead_index(uint32_t k)
{
    switch (k) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return 0;
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return 1;
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return 2;
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return 3;
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return 4;
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return 5;
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING:
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return 7;
    default: return 6;
    }
}

static uint16_t ctx_dev(agent_ctx_device_fn fn, void *arg, uint32_t ctx)
{
    return fn ? fn(ctx, arg) : CUPSTORE_DEVICE_NONE;
}

/* start/end flags shared by every timed kind */
static void norm_times(cupstore_record *o, uint64_t start, uint64_t end, int gpu)
{
    o->start_ns = start;
    o->end_ns = end;
    if (gpu && start != 0 && end == 0)
        o->flags |= CUPSTORE_RF_TRUNCATED;
    else if (start == 0 || end == 0)
        o->flags |= CUPSTORE_RF_ZERO_TS;
}

/* The fields every GPU activity record (kernel, memcpy, memset) carries
 * under the same names; a macro because the structs differ. */
#define NORM_GPU_COMMON(o, r)                                                  \
    do {                                                                       \
        (o)->device = agent_norm_device((r)->deviceId);                        \
        (o)->context = (r)->contextId;                                         \
        (o)->stream = (r)->streamId;                                           \
        (o)->correlation = (r)->correlationId;                                 \
        norm_times((o), (r)->start, (r)->end, 1);                              \
    } while (0)

/* Device/context/stream or process/thread, as the object kind says. */
static void norm_object(cupstore_record *o, CUpti_ActivityObjectKind kind,
                        const CUpti_ActivityObjectKindId *id)
{
    if (kind == CUPTI_ACTIVITY_OBJECT_DEVICE || kind == CUPTI_ACTIVITY_OBJECT_CONTEXT ||
        kind == CUPTI_ACTIVITY_OBJECT_STREAM) {
        o->device = agent_norm_device(id->dcs.deviceId);
        o->context = id->dcs.contextId;
        o->stream = id->dcs.streamId;
    } else {
        o->pid = id->pt.processId;
        o->tid = id->pt.threadId;
    }
}

void agent_norm_record(const CUpti_Activity *rec, cupstore_record *o, const char **name,
                       agent_ctx_device_fn ctx_device, void *arg)
{
    memset(o, 0, sizeof *o);
    *name = NULL;
    o->kind = (uint8_t)agent_norm_kind(rec->kind);
    o->device = CUPSTORE_DEVICE_NONE;

    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        /* The leading fields are the same in every CUpti_ActivityKernelN
         * since version 4; only those are read. */
        const CUpti_ActivityKernel10 *k = (const void *)rec;
        NORM_GPU_COMMON(o, k);
        o->aux = k->registersPerThread;
        o->bytes = (uint64_t)k->staticSharedMemory + (uint64_t)k->dynamicSharedMemory;
        o->grid[0] = (uint32_t)k->gridX;
        o->grid[1] = (uint32_t)k->gridY;
        o->grid[2] = (uint32_t)k->gridZ;
        o->block[0] = (uint32_t)k->blockX;
        o->block[1] = (uint32_t)k->blockY;
        o->block[2] = (uint32_t)k->blockZ;
        *name = k->name;
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const void *)rec;
        NORM_GPU_COMMON(o, m);
        o->aux = CUPSTORE_COPY_AUX(m->copyKind, m->srcKind, m->dstKind);
        o->bytes = m->bytes;
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
        const CUpti_ActivityMemcpyPtoP4 *m = (const void *)rec;
        NORM_GPU_COMMON(o, m);
        o->aux = CUPSTORE_COPY_AUX(m->copyKind, m->srcKind, m->dstKind);
        o->bytes = m->bytes;
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const void *)rec;
        NORM_GPU_COMMON(o, m);
        o->aux = m->value;
        o->flags |= (uint8_t)((m->memoryKind & 0xfu) << CUPSTORE_RF_MEMKIND_SHIFT);
        o->bytes = m->bytes;
        break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
        const CUpti_ActivityAPI *a = (const void *)rec;
        o->correlation = a->correlationId;
        o->cbid = a->cbid;
        o->pid = a->processId;
        o->tid = a->threadId;
        norm_times(o, a->start, a->end, 0);
        break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const CUpti_ActivitySynchronization2 *s = (const void *)rec;
        o->context = s->contextId;
        o->stream = s->streamId;
        o->correlation = s->correlationId;
        o->aux = (uint32_t)s->type;
        o->device = ctx_dev(ctx_device, arg, s->contextId);
        norm_times(o, s->start, s->end, 0);
        break;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
        const CUpti_ActivityOverhead3 *v = (const void *)rec;
        o->aux = agent_norm_overhead_index((uint32_t)v->overheadKind);
        o->correlation = v->correlationId;
        norm_object(o, v->objectKind, &v->objectId);
        /* CUPTI documents start == end == 0 as "not collected" for
         * overhead records: still a record without timing. */
        norm_times(o, v->start, v->end, 0);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
        const CUpti_ActivityMarker2 *m = (const void *)rec;
        o->start_ns = o->end_ns = m->timestamp;
        o->aux = (uint32_t)m->flags;
        o->correlation = m->id;
        norm_object(o, m->objectKind, &m->objectId);
        if (m->timestamp == 0)
            o->flags |= CUPSTORE_RF_ZERO_TS;
        *name = m->name;
        break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER_DATA: {
        /* no time of its own (start 0: it belongs to its chunk's window,
         * and it is no ZERO_TS loss); its fields go to the range row */
        const CUpti_ActivityMarkerData2 *m = (const void *)rec;
        o->aux = (uint32_t)m->flags;
        o->correlation = m->id;
        break;
    }
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: {
        /* one record per graph launch, for the whole graph: the device,
         * context and stream its first node ran on, the launch's
         * correlation id (the cudaGraphLaunch API record's), the graph id */
        const CUpti_ActivityGraphTrace2 *g = (const void *)rec;
        NORM_GPU_COMMON(o, g);
        o->aux = g->graphId;
        break;
    }
    default:
        o->aux = (uint32_t)rec->kind;
        break;
    }
}
