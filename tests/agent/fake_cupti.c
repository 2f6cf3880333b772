/*
 * fake_cupti.c - a minimal stand-in for libcupti used by the agent's
 * smoke test (tests/agent/fake_smoke.sh), independent of the simulator in
 * src/sim.  One context, synchronous delivery: fake_emit() writes kernel or
 * runtime records (the toolkit's structs) into the current buffer,
 * completing it when full; a NULL buffer drops the record (counted for
 * cuptiActivityGetNumDroppedRecords).  FAKE_API sets the reported API
 * version.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti.h>

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t fk_lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_BuffersCallbackRequestFunc fk_req;
static CUpti_BuffersCallbackCompleteFunc fk_cmp;
static uint8_t *fk_buf;
static size_t fk_size, fk_used;
static size_t fk_dropped;
static int fk_enabled[64];
static int fk_ctx_dummy;

static uint64_t fk_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static size_t fk_recsize(CUpti_ActivityKind k)
{
    return k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? sizeof(CUpti_ActivityKernel10)
                                                      : sizeof(CUpti_ActivityAPI);
}

EXPORT CUptiResult cuptiGetVersion(uint32_t *v)
{
    const char *e = getenv("FAKE_API");
    *v = e ? (uint32_t)atoi(e) : 130001u;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char **s)
{
    *s = r == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR (fake)";
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc r,
                                                  CUpti_BuffersCallbackCompleteFunc c)
{
    fk_req = r;
    fk_cmp = c;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind k)
{
    if ((unsigned)k < 64)
        fk_enabled[k] = 1;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind k)
{
    if ((unsigned)k < 64)
        fk_enabled[k] = 0;
    return CUPTI_SUCCESS;
}

static void fk_complete_locked(void)
{
    if (fk_buf && fk_used)
        fk_cmp((CUcontext)&fk_ctx_dummy, 0, fk_buf, fk_size, fk_used);
    else if (fk_buf)
        fk_cmp((CUcontext)&fk_ctx_dummy, 0, fk_buf, fk_size, 0);
    fk_buf = NULL;
    fk_used = 0;
}

EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
    (void)flag;
    pthread_mutex_lock(&fk_lock);
    fk_complete_locked();
    pthread_mutex_unlock(&fk_lock);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
    size_t off = 0;
    if (*rec)
        off = (size_t)((uint8_t *)*rec - buf) + fk_recsize((*rec)->kind);
    if (off + sizeof(CUpti_Activity) > valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    CUpti_Activity *r = (CUpti_Activity *)(buf + off);
    if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && r->kind != CUPTI_ACTIVITY_KIND_RUNTIME)
        return CUPTI_ERROR_INVALID_KIND;
    *rec = r;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t s, size_t *n)
{
    (void)c;
    (void)s;
    pthread_mutex_lock(&fk_lock);
    *n = fk_dropped;
    fk_dropped = 0;
    pthread_mutex_unlock(&fk_lock);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetTimestamp(uint64_t *t)
{
    *t = fk_now();
    return CUPTI_SUCCESS;
}

/** Emit n records of kind (CONCURRENT_KERNEL or RUNTIME) on device dev.
 *  Returns how many were written into agent buffers. */
EXPORT size_t fake_emit(int kind, uint32_t dev, size_t n);
EXPORT size_t fake_emit(int kind, uint32_t dev, size_t n)
{
    size_t written = 0, rs = fk_recsize((CUpti_ActivityKind)kind);
    pthread_mutex_lock(&fk_lock);
    for (size_t i = 0; i < n; i++) {
        if (!fk_enabled[kind])
            continue;
        if (fk_buf && fk_used + rs > fk_size)
            fk_complete_locked();
        if (!fk_buf) {
            size_t maxrec = 0;
            fk_req(&fk_buf, &fk_size, &maxrec);
            fk_used = 0;
            if (!fk_buf) {
                /* Like CUPTI before API version 27: a NULL buffer breaks it. */
                uint32_t v;
                cuptiGetVersion(&v);
                if (v < 27)
                    abort();
            }
            if (!fk_buf || fk_size < rs) {
                fk_buf = NULL;
                fk_dropped++;
                continue;
            }
        }
        uint8_t *p = fk_buf + fk_used;
        memset(p, 0, rs);
        uint64_t t = fk_now();
        if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            CUpti_ActivityKernel10 *k = (void *)p;
            k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
            k->start = t;
            k->end = t + 1000;
            k->deviceId = dev;
            k->contextId = 1;
            k->streamId = 7;
            k->correlationId = (uint32_t)i;
            k->name = (i & 1) ? "_Z6kernelPf" : "other\"kernel";
        } else {
            CUpti_ActivityAPI *a = (void *)p;
            a->kind = CUPTI_ACTIVITY_KIND_RUNTIME;
            a->start = t;
            a->end = t + 100;
            a->cbid = 211;
            a->correlationId = (uint32_t)i;
        }
        fk_used += rs;
        written++;
    }
    pthread_mutex_unlock(&fk_lock);
    return written;
}

/** Whether a kind is enabled (the smoke test waits on it). */
EXPORT int fake_enabled(int kind);
EXPORT int fake_enabled(int kind)
{
    return (unsigned)kind < 64 && fk_enabled[kind];
}
