/*
 * test_sim.c - the simulated CUPTI's own semantics, through a small CUPTI
 * client in this file that loads libcuptop-simcupti.so with dlopen (as the
 * agent does) and drives it with the deterministic producer
 * (cuptopsim_emit) or the producer threads.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cupti.h>

#include "cuptopsim.h"
#include "sim_args.h"

#define FN(name) __typeof__(name) *name
#define NCORR (1u << 18)

/* The library's entry points (bound once) and the client's observations. */
static struct {
    void *h;
    FN(cuptiActivityRegisterCallbacks);
    FN(cuptiActivityEnable);
    FN(cuptiActivityDisable);
    FN(cuptiActivityEnableContext);
    FN(cuptiActivityFlushAll);
    FN(cuptiActivityFlushPeriod);
    FN(cuptiActivityGetNextRecord);
    FN(cuptiActivityGetNumDroppedRecords);
    FN(cuptiActivitySetAttribute);
    FN(cuptiActivityGetAttribute);
    FN(cuptiGetVersion);
    FN(cuptiGetDeviceId);
    FN(cuptiGetContextId);
    FN(cuptiSubscribe_v2);
    FN(cuptiUnsubscribe);
    FN(cuptiEnableDomain);
    FN(cuptiEnableCallback);
    FN(cuptiGetStreamIdEx);
    FN(cuptiActivityEnableRuntimeApi);
    FN(cuptiActivityEnableDriverApi);
    cuptopsim_reset_fn reset;
    cuptopsim_contexts_create_fn ctx_create;
    cuptopsim_contexts_destroy_fn ctx_destroy;
    cuptopsim_app_run_fn app_run;
    cuptopsim_emit_fn emit;
    cuptopsim_truth_get_fn truth_get;
    cuptopsim_truth_write_fn truth_write;
    cuptopsim_context_fn context;
} L;

enum { GIVE, GIVE_NULL, GIVE_SMALL, GIVE_ALTERNATE };

static struct client {
    pthread_mutex_t lock;
    int mode;
    size_t size;
    unsigned requests;
    void *bufs[4096];                /* every buffer handed out (freed at reset) */
    unsigned nbufs;
    pthread_t req_threads[64];
    unsigned nreq_threads;
    unsigned completions, empty_completions, foreign, dup;
    void *completed[4096];
    unsigned ncompleted;
    uint64_t rec[CUPTOPSIM_DEV_MAX][CUPTOPSIM_KINDS];
    uint64_t zero[CUPTOPSIM_KINDS], invalid;
    uint8_t corr[NCORR];             /* bit per sim kind seen with this id */
    uint64_t last_end[CUPTOPSIM_DEV_MAX][64];
    unsigned non_monotone, bad_names;
    unsigned created[CUPTOPSIM_DEV_MAX], destroying[CUPTOPSIM_DEV_MAX];
    unsigned errors;
    void *ctx[CUPTOPSIM_DEV_MAX];    /* context of each device, once created */
    uint32_t rec_stream[NCORR];      /* a GPU record's stream id + 1, by id  */
    uint32_t cb_stream[NCORR];       /* the launch callback's stream id + 1  */
    uint8_t cb_domains[NCORR];       /* bit 0 runtime, bit 1 driver          */
    uint64_t per_stream[CUPTOPSIM_GPU_KINDS][CUPTOPSIM_STREAMS];   /* records received */
    unsigned launch_cbs, launch_exits;
} C = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The callbacks run on the simulator's threads, where a cmocka assertion
 * cannot unwind: they count failures, and each test's teardown checks. */
#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            C.errors++;                                                        \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                      \
    } while (0)

/* The sim kind of a graph launch, and the kinds before it (one op, one
 * record of its own kind): the loops over every kind stop there. */
#define GRAPH 8u
#define PLAIN_KINDS GRAPH

static int sim_kind(uint32_t k)
{
    switch (k) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return 0;
    case CUPTI_ACTIVITY_KIND_MEMCPY: return 1;
    case CUPTI_ACTIVITY_KIND_MEMSET: return 2;
    case CUPTI_ACTIVITY_KIND_RUNTIME: return 3;
    case CUPTI_ACTIVITY_KIND_DRIVER: return 4;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return 5;
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return 6;
    case CUPTI_ACTIVITY_KIND_MARKER: return 7;
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: return GRAPH;
    default: return -1;
    }
}

static int ctx_device(CUcontext ctx)
{
    for (unsigned d = 0; d < CUPTOPSIM_DEV_MAX; d++)
        if (ctx && C.ctx[d] == ctx)
            return (int)d;
    return -1;
}

static void CUPTIAPI buf_requested(uint8_t **buffer, size_t *size, size_t *max)
{
    pthread_mutex_lock(&C.lock);
    pthread_t self = pthread_self();
    unsigned i;
    for (i = 0; i < C.nreq_threads; i++)
        if (pthread_equal(C.req_threads[i], self))
            break;
    if (i == C.nreq_threads && i < 64)
        C.req_threads[C.nreq_threads++] = self;
    unsigned n = C.requests++;
    int mode = C.mode == GIVE_ALTERNATE ? (n % 3 == 2 ? GIVE_NULL : GIVE) : C.mode;
    *max = 0;
    if (mode == GIVE_NULL || C.nbufs == 4096) {
        *buffer = NULL;
        *size = 0;
    } else {
        size_t sz = mode == GIVE_SMALL ? 16 : C.size;
        *buffer = aligned_alloc(8, sz);
        *size = sz;
        C.bufs[C.nbufs++] = *buffer;
    }
    pthread_mutex_unlock(&C.lock);
}

static bool ours(uint8_t *b)
{
    for (unsigned i = 0; i < C.nbufs; i++)
        if (C.bufs[i] == b)
            return true;
    return false;
}

static void walk(CUcontext ctx, uint8_t *buf, size_t valid)
{
    CUpti_Activity *r = NULL;
    int dev = ctx_device(ctx);
    for (;;) {
        CUptiResult st = L.cuptiActivityGetNextRecord(buf, valid, &r);
        if (st == CUPTI_ERROR_MAX_LIMIT_REACHED)
            break;
        if (st == CUPTI_ERROR_INVALID_KIND) {
            C.invalid++;
            continue;
        }
        CHECK(st == CUPTI_SUCCESS);
        int k = st == CUPTI_SUCCESS ? sim_kind(r->kind) : -1;
        CHECK(k >= 0);
        if (k < 0)
            break;
        uint32_t corr = 0, dv = (uint32_t)dev, stream = 0;
        uint64_t start = 1, end = 1;
        const char *name = "";
        bool gpu = false;
        switch (k) {
        case 0: {
            CUpti_ActivityKernel10 *x = (void *)r;
            corr = x->correlationId, dv = x->deviceId, stream = x->streamId;
            start = x->start, end = x->end, name = x->name, gpu = true;
            break;
        }
        case 1: {
            CUpti_ActivityMemcpy6 *x = (void *)r;
            corr = x->correlationId, dv = x->deviceId, stream = x->streamId;
            start = x->start, end = x->end, gpu = true;
            CHECK(x->bytes > 0);
            break;
        }
        case 2: {
            CUpti_ActivityMemset4 *x = (void *)r;
            corr = x->correlationId, dv = x->deviceId, stream = x->streamId;
            start = x->start, end = x->end, gpu = true;
            break;
        }
        case 3:
        case 4: {
            CUpti_ActivityAPI *x = (void *)r;
            corr = x->correlationId;
            CHECK(x->start <= x->end);
            CHECK((x->processId) == ((uint32_t)getpid()));
            break;
        }
        case 5: corr = ((CUpti_ActivitySynchronization2 *)r)->correlationId; break;
        case 6: CHECK((((CUpti_ActivityOverhead3 *)r)->objectId.dcs.deviceId) == (dv)); break;
        case 7: name = ((CUpti_ActivityMarker2 *)r)->name; break;
        case GRAPH: {   /* the real layout: one record per launch, its graph */
            CUpti_ActivityGraphTrace2 *x = (void *)r;
            corr = x->correlationId, dv = x->deviceId;
            CHECK(x->graphId >= 1 && x->graphId <= 3);
            CHECK(x->start <= x->end && x->endDeviceId == x->deviceId);
            break;
        }
        }
        CHECK((dv) == ((uint32_t)dev));
        if (!name)
            C.bad_names++;
        if (start == 0 && end == 0) {
            C.zero[k]++;
        } else if (gpu) {
            if (start > end || start < C.last_end[dv][stream & 63])
                C.non_monotone++;
            C.last_end[dv][stream & 63] = end;
        }
        if (corr < NCORR)
            C.corr[corr] |= (uint8_t)(1u << k);
        if (gpu && corr < NCORR)
            C.rec_stream[corr] = stream + 1;
        if (gpu && stream >= 7 && stream - 7 < CUPTOPSIM_STREAMS)
            C.per_stream[k][stream - 7]++;
        C.rec[dv][k]++;
    }
}

static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                   size_t valid)
{
    (void)stream;
    (void)size;
    pthread_mutex_lock(&C.lock);
    C.completions++;
    if (!valid)
        C.empty_completions++;
    bool mine = ours(buf), seen = false;
    for (unsigned i = 0; i < C.ncompleted; i++)
        seen |= C.completed[i] == buf;
    if (!mine)
        C.foreign++;
    else if (seen)
        C.dup++;
    else if (C.ncompleted < 4096)
        C.completed[C.ncompleted++] = buf;
    if (mine && !seen)
        walk(ctx, buf, valid);
    pthread_mutex_unlock(&C.lock);
}

/* A launch ledger's view: at API enter of the launch, copy and set calls,
 * the correlation id and the stream id of the call's stream parameter. */
static void CUPTIAPI launch_cb(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                               const void *data)
{
    const CUpti_CallbackData *cd = data;
    CUstream hs = NULL;
    uint32_t id = 0;
    (void)ud;
    if (dom == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)
        hs = ((const cuLaunchKernel_params *)cd->functionParams)->hStream;
    else if (dom == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2)
        hs = ((const cuMemcpyHtoDAsync_v2_params *)cd->functionParams)->hStream;
    else if (dom == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async)
        hs = ((const cuMemsetD8Async_params *)cd->functionParams)->hStream;
    else if (dom == CUPTI_CB_DOMAIN_RUNTIME_API &&
             cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000)
        hs = (CUstream)((const cudaLaunchKernel_v7000_params *)cd->functionParams)->stream;
    else
        CHECK(!"a callback for a call id not enabled");
    CHECK(cd->functionReturnValue != NULL);
    pthread_mutex_lock(&C.lock);
    if (cd->callbackSite == CUPTI_API_EXIT) {
        C.launch_exits++;
        pthread_mutex_unlock(&C.lock);
        return;
    }
    C.launch_cbs++;
    pthread_mutex_unlock(&C.lock);
    CHECK(L.cuptiGetStreamIdEx(cd->context, hs, 0, &id) == CUPTI_SUCCESS);
    pthread_mutex_lock(&C.lock);
    uint32_t corr = cd->correlationId;
    CHECK(corr > 0 && corr < NCORR);
    CHECK(C.rec_stream[corr % NCORR] == 0);   /* no record before its launch */
    if (corr < NCORR) {
        if (C.cb_stream[corr])
            CHECK(C.cb_stream[corr] == id + 1);   /* runtime and driver agree */
        C.cb_stream[corr] = id + 1;
        C.cb_domains[corr] |= dom == CUPTI_CB_DOMAIN_RUNTIME_API ? 1 : 2;
    }
    pthread_mutex_unlock(&C.lock);
}

static void CUPTIAPI resource_cb(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                                 const void *data)
{
    const CUpti_ResourceData *rd = data;
    uint32_t dev = 99;
    (void)ud;
    CHECK((dom) == (CUPTI_CB_DOMAIN_RESOURCE));
    CHECK(L.cuptiGetDeviceId(rd->context, &dev) == CUPTI_SUCCESS);
    CHECK(dev < CUPTOPSIM_DEV_MAX);
    if (dev >= CUPTOPSIM_DEV_MAX)
        return;
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED)
        C.created[dev]++;
    else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)
        C.destroying[dev]++;
}

static void bind(void)
{
    const char *top = getenv("top_builddir");
    char path[4096];
    snprintf(path, sizeof path, "%s/libcuptop-simcupti.so", top ? top : ".");
    L.h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!L.h) {
        fprintf(stderr, "test_sim: %s\n", dlerror());
        exit(1);
    }
#define B(f) *(void **)&L.f = dlsym(L.h, #f)
    B(cuptiActivityRegisterCallbacks);
    B(cuptiActivityEnable);
    B(cuptiActivityDisable);
    B(cuptiActivityEnableContext);
    B(cuptiActivityFlushAll);
    B(cuptiActivityFlushPeriod);
    B(cuptiActivityGetNextRecord);
    B(cuptiActivityGetNumDroppedRecords);
    B(cuptiActivitySetAttribute);
    B(cuptiActivityGetAttribute);
    B(cuptiGetVersion);
    B(cuptiGetDeviceId);
    B(cuptiGetContextId);
    B(cuptiSubscribe_v2);
    B(cuptiUnsubscribe);
    B(cuptiEnableDomain);
    B(cuptiEnableCallback);
    B(cuptiGetStreamIdEx);
    B(cuptiActivityEnableRuntimeApi);
    B(cuptiActivityEnableDriverApi);
#undef B
#define S(f, n) *(void **)&L.f = dlsym(L.h, n)
    S(reset, "cuptopsim_reset");
    S(ctx_create, "cuptopsim_contexts_create");
    S(ctx_destroy, "cuptopsim_contexts_destroy");
    S(app_run, "cuptopsim_app_run");
    S(emit, "cuptopsim_emit");
    S(truth_get, "cuptopsim_truth_get");
    S(truth_write, "cuptopsim_truth_write");
    S(context, "cuptopsim_context");
#undef S
    if (!L.reset || !L.emit || !L.cuptiActivityGetNextRecord || !L.cuptiSubscribe_v2) {
        fprintf(stderr, "test_sim: missing symbols in %s\n", path);
        exit(1);
    }
}

static void note_contexts(void)
{
    for (unsigned d = 0; d < CUPTOPSIM_DEV_MAX; d++)
        if (L.context(d))
            C.ctx[d] = L.context(d);
}

static void client_clear(void)
{
    for (unsigned i = 0; i < C.nbufs; i++)
        free(C.bufs[i]);
    pthread_mutex_t l = C.lock;
    memset(&C, 0, sizeof C);
    C.lock = l;
    C.size = 1 << 20;
}

/* Fresh simulator (env as given, e.g. "CUPTOPSIM_FAULTS=dup=1"), callbacks
 * registered, the given CUPTI kinds enabled, contexts created. */
static void setup_sim(const char *faults, const char *devices, const CUpti_ActivityKind *kinds,
                      size_t nkinds)
{
    setenv("CUPTOPSIM_THREADS", "0", 1);
    setenv("CUPTOPSIM_DEVICES", devices ? devices : "1", 1);
    if (faults)
        setenv("CUPTOPSIM_FAULTS", faults, 1);
    else
        unsetenv("CUPTOPSIM_FAULTS");
    assert_int_equal(L.reset(), 0);
    client_clear();
    assert_int_equal(L.cuptiActivityRegisterCallbacks(buf_requested, buf_completed), CUPTI_SUCCESS);
    for (size_t i = 0; i < nkinds; i++)
        assert_int_equal(L.cuptiActivityEnable(kinds[i]), CUPTI_SUCCESS);
    assert_true(L.ctx_create() >= 1);
    note_contexts();
}

static int check_client(void **state)
{
    (void)state;
    pthread_mutex_lock(&C.lock);
    unsigned e = C.errors;
    pthread_mutex_unlock(&C.lock);
    assert_int_equal(e, 0);
    return 0;
}

static const CUpti_ActivityKind all_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_OVERHEAD, CUPTI_ACTIVITY_KIND_MARKER,
};
static const CUpti_ActivityKind kernel_only[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};

/* produced == delivered + dropped + held + stolen + silent, everywhere; a device's
 * drops are either reported or still unreported. */
static void assert_sums(const cuptopsim_truth *t)
{
    for (unsigned d = 0; d < CUPTOPSIM_DEV_MAX; d++) {
        uint64_t dropped = 0;
        for (unsigned k = 0; k < CUPTOPSIM_KINDS; k++) {
            assert_int_equal(t->produced[d][k],
                             t->delivered[d][k] + t->dropped[d][k] + t->held[d][k] +
                                 t->stolen[d][k] + t->silent[d][k]);
            dropped += t->dropped[d][k];
        }
        assert_int_equal(dropped, t->reported_dropped[d] + t->unreported_dropped[d]);
        for (unsigned k = 0; k < CUPTOPSIM_GPU_KINDS; k++) {   /* streams sum to the kind */
            uint64_t by_stream = 0;
            for (unsigned s = 0; s < CUPTOPSIM_STREAMS; s++)
                by_stream += t->produced_stream[d][k][s];
            assert_int_equal(by_stream, t->produced[d][k]);
        }
    }
}

/* ---- tests ----------------------------------------------------------- */

static void test_layout_walk(void **state)
{
    cuptopsim_truth t;
    (void)state;
    setup_sim(NULL, "2", all_kinds, 8);
    for (unsigned d = 0; d < 2; d++)
        for (unsigned k = 0; k < PLAIN_KINDS; k++)
            assert_true(L.emit(d, k, 25) > 0);
    assert_int_equal(L.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    L.truth_get(&t);
    assert_sums(&t);
    for (unsigned d = 0; d < 2; d++) {
        for (unsigned k = 0; k < PLAIN_KINDS; k++) {
            assert_int_equal(t.ops[d][k], 25);
            assert_int_equal(t.held[d][k], 0);
            assert_int_equal(C.rec[d][k], t.delivered[d][k]);
        }
        assert_int_equal(C.rec[d][0], 25);
        /* runtime: 4 GPU op kinds + standalone runtime calls */
        assert_int_equal(C.rec[d][3], 5 * 25);
        assert_int_equal(C.rec[d][4], 5 * 25);
    }
    assert_int_equal(C.non_monotone, 0);
    assert_int_equal(C.bad_names, 0);
    assert_int_equal(C.invalid, 0);
}

static void test_correlation(void **state)
{
    (void)state;
    setup_sim(NULL, "1", all_kinds, 8);
    assert_int_equal(L.emit(0, 0, 200), 600);
    assert_int_equal(L.emit(0, 1, 50), 150);
    assert_int_equal(L.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    unsigned paired = 0;
    for (unsigned i = 0; i < NCORR; i++) {
        uint8_t m = C.corr[i];
        if (m & 3u) {   /* a kernel or memcpy */
            assert_int_equal(m & 0x18u, 0x18u); /* runtime and driver */
            paired++;
        }
    }
    assert_int_equal(paired, 250);
}

static void test_drops_null_buffer(void **state)
{
    size_t n = 77;
    cuptopsim_truth t;
    (void)state;
    setup_sim(NULL, "2", kernel_only, 1);
    C.mode = GIVE_NULL;
    assert_int_equal(L.emit(0, 0, 100), 100);
    assert_int_equal(L.emit(1, 0, 40), 40);
    L.truth_get(&t);
    assert_int_equal(t.dropped[0][0], 100);
    assert_int_equal(t.dropped[1][0], 40);
    assert_int_equal(t.buffers_null, 140);     /* one request per dropped record */
    /* per context, reset on read */
    assert_int_equal(L.cuptiActivityGetNumDroppedRecords(L.context(0), 0, &n), CUPTI_SUCCESS);
    assert_int_equal(n, 100);
    assert_int_equal(L.cuptiActivityGetNumDroppedRecords(L.context(0), 0, &n), CUPTI_SUCCESS);
    assert_int_equal(n, 0);
    assert_int_equal(L.cuptiActivityGetNumDroppedRecords(L.context(1), 0, &n), CUPTI_SUCCESS);
    assert_int_equal(n, 40);
    /* NULL after the per-context queries: nothing left */
    assert_int_equal(L.cuptiActivityGetNumDroppedRecords(NULL, 0, &n), CUPTI_SUCCESS);
    assert_int_equal(n, 0);
    /* NULL alone takes every context's unread drops */
    assert_int_equal(L.emit(0, 0, 30), 30);
    assert_int_equal(L.emit(1, 0, 3), 3);
    assert_int_equal(L.cuptiActivityGetNumDroppedRecords(NULL, 0, &n), CUPTI_SUCCESS);
    assert_int_equal(n, 33);
    assert_int_equal(L.cuptiActivityGetNumDroppedRecords(L.context(0), 0, &n), CUPTI_SUCCESS);
    assert_int_equal(n, 0);
    L.truth_get(&t);
    assert_int_equal(t.reported_dropped[0], 130);
    assert_int_equal(t.reported_via_null[0], 30);
    assert_int_equal(t.reported_dropped[1], 43);
    assert_int_equal(t.unreported_dropped[0], 0);
    assert_sums(&t);
    /* a buffer again: no more drops */
    C.mode = GIVE;
    assert_int_equal(L.emit(0, 0, 10), 10);
    assert_int_equal(L.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    assert_int_equal(L.cuptiActivityGetNumDroppedRecords(L.context(0), 0, &n), CUPTI_SUCCESS);
    assert_int_equal(n, 0);
    assert_int_equal(C.rec[0][0], 10);
}

static void test_drops_small_buffer(void **state)
{
    cuptopsim_truth t;
    (void)state;
    setup_sim(NULL, "1", kernel_only, 1);
    C.mode = GIVE_SMALL;
    assert_int_equal(L.emit(0, 0, 5), 5);
    assert_int_equal(L.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
    L.truth_get(&t);
    assert_int_equal(t.dropped[0][0], 5);
    assert_int_equal(t.buffers_small, 5);
    /* the unusable buffers came back, empty */
    assert_int_equal(C.empty_completions, 5);
    assert_int_equal(C.rec[0][0], 0);
}

static void test_flush_variants(void **state)
{
    cuptopsim_truth t;
    (void)state;
    setup_sim(NULL, "1", kernel_only, 1);
    assert_int_equal(L.emit(0, 0, 10), 10);
    assert_int_equal(L.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
    assert_int_equal(C.completions, 0); /* a partial buffer stays */
    L.truth_get(&t);
    assert_int_equal(t.held[0][0], 10);
    assert_int_equal(L.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    assert_int_equal(C.completions, 1); /* returned after the callback ran */
    assert_int_equal(C.rec[0][0], 10);

    /* Small buffers (3 kernel records): full ones go out with FlushAll(0),
     * the partial one only when forced. */
    C.size = 3 * sizeof(CUpti_ActivityKernel10);
    assert_int_equal(L.emit(0, 0, 7), 7);
    assert_int_equal(L.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
    assert_int_equal(C.completions, 3);
    assert_int_equal(C.rec[0][0], 16);
    assert_int_equal(L.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    assert_int_equal(C.completions, 4);
    assert_int_equal(C.rec[0][0], 17);
    L.truth_get(&t);
    assert_int_equal(t.flushes, 2);
    assert_int_equal(t.flushes_forced, 2);
}

static void test_flush_period(void **state)
{
    (void)state;
    setup_sim(NULL, "1", kernel_only, 1);
    assert_int_equal(L.emit(0, 0, 4), 4);
    assert_int_equal(L.cuptiActivityFlushPeriod(10), CUPTI_SUCCESS);
    for (int i = 0; i < 2000; i++) { /* up to 20 s on a loaded machine */
        pthread_mutex_lock(&C.lock);
        unsigned c = C.completions;
        pthread_mutex_unlock(&C.lock);
        if (c)
            break;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(C.rec[0][0], 4);
    assert_int_equal(L.cuptiActivityFlushPeriod(0), CUPTI_SUCCESS);
}

static void test_disabled_kinds(void **state)
{
    cuptopsim_truth t;
    (void)state;
    setup_sim(NULL, "2", kernel_only, 1);
    for (unsigned k = 0; k < PLAIN_KINDS; k++)
        assert_true(L.emit(0, k, 10) >= 0);
    assert_int_equal(L.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
    assert_int_equal(L.emit(0, 0, 10), 0);
    /* per context: memcpy on device 1 only */
    assert_int_equal(L.cuptiActivityEnableContext(L.context(1), CUPTI_ACTIVITY_KIND_MEMCPY),
                     CUPTI_SUCCESS);
    assert_int_equal(L.emit(0, 1, 10), 0);
    assert_int_equal(L.emit(1, 1, 10), 10);
    assert_int_equal(L.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    L.truth_get(&t);
    for (unsigned k = 0; k < PLAIN_KINDS; k++) {
        assert_int_equal(t.produced[0][k], k == 0 ? 10 : 0);
        assert_int_equal(t.produced[1][k], k == 1 ? 10 : 0);
    }
    assert_int_equal(t.ops[0][0], 20);
    assert_int_equal(C.rec[0][0], 10);
    assert_int_equal(C.rec[1][1], 10);
    /* a kind CUPTI does not have */
    assert_int_equal(L.cuptiActivityEnable((CUpti_ActivityKind)0x4000), CUPTI_ERROR_NOT_SUPPORTED);
}

/* Graph launches: with kernel records on, one kernel record per node, all
 * with the launch's correlation id, and no graph record; with GRAPH_TRACE
 * on, one graph record per launch and no node records, also beside
 * CONCURRENT_KERNEL (whose plain launches keep their records); the serial
 * KERNEL kind and GRAPH_TRACE refuse each other (CUPTI_ERROR_NOT_COMPATIBLE),
 * as CUPTI 13 does on an H100. */
static void test_graph_launches(void **state)
{
    cuptopsim_truth t;
    static const CUpti_ActivityKind graph_only[] = {CUPTI_ACTIVITY_KIND_GRAPH_TRACE};
    static const CUpti_ActivityKind serial[] = {CUPTI_ACTIVITY_KIND_KERNEL};
    (void)state;
    setenv("CUPTOPSIM_GRAPH_NODES", "7", 1);
    setup_sim(NULL, "1", kernel_only, 1);
    assert_int_equal(L.emit(0, GRAPH, 10), 70);
    assert_int_equal(L.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    L.truth_get(&t);
    assert_sums(&t);
    assert_int_equal(t.ops[0][GRAPH], 10);
    assert_int_equal(t.graph_nodes, 7);
    assert_int_equal(t.graph_node_records[0], 70);
    assert_int_equal(C.rec[0][0], 70);
    assert_int_equal(C.rec[0][GRAPH], 0);
    /* CONCURRENT_KERNEL on, then GRAPH_TRACE: both on, graph records only */
    assert_int_equal(L.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE), CUPTI_SUCCESS);
    assert_int_equal(L.emit(0, GRAPH, 10), 10);
    assert_int_equal(L.emit(0, 0, 5), 5);          /* plain kernels keep theirs */
    assert_int_equal(L.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_KERNEL), CUPTI_ERROR_NOT_COMPATIBLE);
    assert_int_equal(L.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    L.truth_get(&t);
    assert_sums(&t);
    assert_int_equal(t.ops[0][GRAPH], 20);
    assert_int_equal(t.graph_node_records[0], 70);
    assert_int_equal(t.delivered[0][GRAPH], 10);
    assert_int_equal(C.rec[0][0], 75);
    assert_int_equal(C.rec[0][GRAPH], 10);

    /* GRAPH_TRACE first, then CONCURRENT_KERNEL; per context too */
    setup_sim(NULL, "1", graph_only, 1);
    assert_int_equal(L.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_KERNEL), CUPTI_ERROR_NOT_COMPATIBLE);
    assert_int_equal(L.cuptiActivityEnableContext(L.context(0), CUPTI_ACTIVITY_KIND_KERNEL),
                     CUPTI_ERROR_NOT_COMPATIBLE);
    assert_int_equal(L.emit(0, GRAPH, 10), 10);
    assert_int_equal(L.emit(0, 0, 5), 0);          /* plain kernels: kernel kind off */
    assert_int_equal(L.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
    assert_int_equal(L.emit(0, GRAPH, 4), 4);
    assert_int_equal(L.emit(0, 0, 5), 5);
    assert_int_equal(L.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    L.truth_get(&t);
    assert_sums(&t);
    assert_int_equal(C.rec[0][GRAPH], 14);
    assert_int_equal(t.delivered[0][GRAPH], 14);
    assert_int_equal(t.graph_node_records[0], 0);
    assert_int_equal(C.rec[0][0], 5);

    /* the serial KERNEL kind on: GRAPH_TRACE refused, globally and per context */
    setup_sim(NULL, "1", serial, 1);
    assert_int_equal(L.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE),
                     CUPTI_ERROR_NOT_COMPATIBLE);
    assert_int_equal(L.cuptiActivityEnableContext(L.context(0), CUPTI_ACTIVITY_KIND_GRAPH_TRACE),
                     CUPTI_ERROR_NOT_COMPATIBLE);
    assert_int_equal(L.emit(0, GRAPH, 2), 2 * 7);
    assert_int_equal(L.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);

    /* graph_strict=1: CONCURRENT_KERNEL refused beside GRAPH_TRACE too */
    setup_sim("graph_strict=1", "1", graph_only, 1);
    assert_int_equal(L.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
                     CUPTI_ERROR_NOT_COMPATIBLE);
    assert_int_equal(L.emit(0, GRAPH, 3), 3);
    assert_int_equal(L.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    unsetenv("CUPTOPSIM_GRAPH_NODES");
}

/* API records per call id, with CUPTI's precedence: a per-call enable
 * without the kind records that call only; the whole kind enabled after
 * per-call settings overrides them; the API mix adds its noise calls. */
static void test_api_per_call(void **state)
{
    (void)state;
    setup_sim(NULL, "1", NULL, 0);
    const CUpti_CallbackId launch = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    assert_int_equal(L.emit(0, 0, 10), 0);                       /* nothing on */
    assert_int_equal(L.cuptiActivityEnableRuntimeApi(launch, 1), CUPTI_SUCCESS);
    assert_int_equal(L.emit(0, 0, 10), 10);                      /* the launch call only */
    assert_int_equal(L.emit(0, 1, 10), 0);                       /* not cudaMemcpyAsync */
    assert_int_equal(L.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), CUPTI_SUCCESS);
    assert_int_equal(L.emit(0, 1, 10), 10);                      /* the whole kind */
    assert_int_equal(L.cuptiActivityEnableRuntimeApi(launch, 0), CUPTI_SUCCESS);
    assert_int_equal(L.emit(0, 0, 10), 0);                       /* muted after the kind */
    assert_int_equal(L.emit(0, 3, 10), 10);                      /* other calls still on */
    assert_int_equal(L.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), CUPTI_SUCCESS);
    assert_int_equal(L.emit(0, 0, 10), 10);                      /* the kind overrides */
    assert_int_equal(L.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME), CUPTI_SUCCESS);
    assert_int_equal(L.emit(0, 0, 10), 0);                       /* and clears */
    assert_int_equal(L.cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1),
                     CUPTI_SUCCESS);
    assert_int_equal(L.emit(0, 0, 10), 10);
    assert_int_equal(L.cuptiActivityEnableRuntimeApi(5000, 1), CUPTI_ERROR_INVALID_PARAMETER);
    /* the API mix: 5 noise calls and the 2 launch calls per kernel */
    setenv("CUPTOPSIM_API_MIX", "5", 1);
    setup_sim(NULL, "1", NULL, 0);
    assert_int_equal(L.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), CUPTI_SUCCESS);
    assert_int_equal(L.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER), CUPTI_SUCCESS);
    assert_int_equal(L.emit(0, 0, 8), 8 * 7);
    assert_int_equal(L.emit(0, 3, 8), 8);                        /* standalone: no noise */
    unsetenv("CUPTOPSIM_API_MIX");
    /* a CUPTI without the per-call functions */
    setup_sim("no_api_filter=1", "1", NULL, 0);
    assert_int_equal(L.cuptiActivityEnableRuntimeApi(launch, 1), CUPTI_ERROR_NOT_SUPPORTED);
    assert_int_equal(L.emit(0, 0, 10), 0);
    assert_int_equal(L.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
}

static void test_truth_sums_threads(void **state)
{
    cuptopsim_truth t;
    char path[64], line[256];
    (void)state;
    setenv("CUPTOPSIM_RATES", "kernel=200,memcpy=100,runtime=50,marker=20", 1);
    setenv("CUPTOPSIM_OPS", "300", 1);
    setenv("CUPTOPSIM_MAX_RATE", "1", 1);
    setup_sim(NULL, "2", all_kinds, 8);
    setenv("CUPTOPSIM_THREADS", "3", 1);
    assert_int_equal(L.reset(), 0);
    unsetenv("CUPTOPSIM_RATES");
    unsetenv("CUPTOPSIM_OPS");
    unsetenv("CUPTOPSIM_MAX_RATE");
    assert_int_equal(L.cuptiActivityRegisterCallbacks(buf_requested, buf_completed), CUPTI_SUCCESS);
    for (size_t i = 0; i < 8; i++)
        assert_int_equal(L.cuptiActivityEnable(all_kinds[i]), CUPTI_SUCCESS);
    C.mode = GIVE_ALTERNATE;   /* every third request declined */
    C.size = 64 * 1024;
    assert_int_equal(L.app_run(60), 0); /* ends at the ops quota */
    note_contexts();
    L.truth_get(&t);
    assert_true(t.held[0][0] + t.held[1][0] > 0 || t.dropped[0][0] + t.dropped[1][0] > 0);
    assert_int_equal(L.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    L.truth_get(&t);
    assert_sums(&t);
    uint64_t dropped = 0;
    for (unsigned d = 0; d < 2; d++) {
        assert_int_equal(t.ops[d][0], 300);
        assert_int_equal(t.ops[d][1], 300);
        assert_int_equal(t.ops[d][2], 0);
        assert_int_equal(t.produced[d][3], 900); /* 300 kernel + 300 memcpy + 300 calls */
        for (unsigned k = 0; k < CUPTOPSIM_KINDS; k++) {
            assert_int_equal(t.held[d][k], 0);
            assert_int_equal(C.rec[d][k], t.delivered[d][k]);
            dropped += t.dropped[d][k];
        }
    }
    assert_true(dropped > 0);
    assert_int_equal(dropped, t.buffers_null);
    /* every producing thread asked for buffers of its own */
    assert_true(C.nreq_threads >= 3);

    /* the file says the same */
    snprintf(path, sizeof path, "/tmp/test_sim_truth.%ld", (long)getpid());
    assert_int_equal(L.truth_write(path, 1, "test"), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    bool found = false, end = false;
    char want[64];
    snprintf(want, sizeof want, "delivered 1 kernel %llu\n", (unsigned long long)t.delivered[1][0]);
    while (fgets(line, sizeof line, f)) {
        found |= !strcmp(line, want);
        end |= !strcmp(line, "end\n");
    }
    fclose(f);
    unlink(path);
    assert_true(found);
    assert_true(end);
}

/* API version < 27: a NULL buffer kills the process (in a child). */
static void null_crash_child(const char *how)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* cmocka catches these to report a failing test: not here */
        signal(SIGSEGV, SIG_DFL);
        signal(SIGABRT, SIG_DFL);
        setenv("CUPTOPSIM_API_VERSION", "26", 1);
        setenv("CUPTOPSIM_NULL_CRASH", how, 1);
        setup_sim(NULL, "1", kernel_only, 1);
        uint32_t v = 0;
        L.cuptiGetVersion(&v);
        if (v != 26)
            _exit(3);
        C.mode = GIVE_NULL;
        L.emit(0, 0, 1);
        _exit(0); /* survived: wrong */
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!strcmp(how, "abort")) {
        assert_true(WIFSIGNALED(st));
        assert_int_equal(WTERMSIG(st), SIGABRT);
    } else {
        /* SIGSEGV; a sanitizer build reports it and exits non-zero */
        assert_true((WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV) ||
                    (WIFEXITED(st) && WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 3));
    }
}

static void test_low_api_null_crash(void **state)
{
    (void)state;
    null_crash_child("segv");
    null_crash_child("abort");
    /* the same with a discard buffer: records are delivered normally */
    setenv("CUPTOPSIM_API_VERSION", "26", 1);
    setup_sim(NULL, "1", kernel_only, 1);
    unsetenv("CUPTOPSIM_API_VERSION");
    assert_int_equal(L.emit(0, 0, 5), 5);
    assert_int_equal(L.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    assert_int_equal(C.rec[0][0], 5);
}

static void test_fault_invalid_and_zero(void **state)
{
    cuptopsim_truth t;
    (void)state;
    setup_sim("invalid=5,zero_ts=4", "1", kernel_only, 1);
    assert_int_equal(L.emit(0, 0, 40), 40);
    assert_int_equal(L.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    L.truth_get(&t);
    assert_int_equal(t.invalid[0][0], 8);
    assert_int_equal(C.invalid, 8);
    assert_int_equal(C.rec[0][0], 32);  /* the walk went on past each */
    assert_int_equal(t.zero_ts[0][0], C.zero[0]);
    assert_int_equal(C.zero[0], 8); /* 10 chosen; the 20th and 40th were made invalid */
    assert_int_equal(t.delivered[0][0], 40);
}

static void test_fault_delivery(void **state)
{
    cuptopsim_truth t;
    (void)state;
    /* dup: every buffer twice */
    setup_sim("dup=1", "1", kernel_only, 1);
    C.size = 2 * sizeof(CUpti_ActivityKernel10);
    assert_int_equal(L.emit(0, 0, 6), 6);
    assert_int_equal(L.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
    L.truth_get(&t);
    assert_int_equal(t.buffers_dup, 3);
    assert_int_equal(C.dup, 3);
    assert_int_equal(C.rec[0][0], 6);
    assert_int_equal(t.delivered[0][0], 6);

    /* foreign: a buffer never handed out arrives before every one */
    setup_sim("foreign=1", "1", kernel_only, 1);
    C.size = 2 * sizeof(CUpti_ActivityKernel10);
    assert_int_equal(L.emit(0, 0, 6), 6);
    assert_int_equal(L.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
    L.truth_get(&t);
    assert_int_equal(t.buffers_foreign, 3);
    assert_int_equal(C.foreign, 3);
    assert_int_equal(t.foreign[0][0], 6);
    assert_int_equal(C.rec[0][0], 6);

    /* steal: every second buffer goes to the other client */
    setup_sim("steal=2", "1", kernel_only, 1);
    C.size = 2 * sizeof(CUpti_ActivityKernel10);
    assert_int_equal(L.emit(0, 0, 8), 8);
    assert_int_equal(L.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
    L.truth_get(&t);
    assert_int_equal(t.buffers_stolen, 2);
    assert_int_equal(C.completions, 2);
    assert_int_equal(t.stolen[0][0], 4);
    assert_int_equal(C.rec[0][0], 4);
    assert_sums(&t);

    /* silent: every fourth record is lost and nothing says so: no drop
     * count, no NULL buffer, no gap the client could see */
    setup_sim("silent=4", "1", kernel_only, 1);
    assert_int_equal(L.emit(0, 0, 12), 12);
    assert_int_equal(L.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    L.truth_get(&t);
    assert_int_equal(t.produced[0][0], 12);
    assert_int_equal(t.silent[0][0], 3);
    assert_int_equal(t.delivered[0][0], 9);
    assert_int_equal(C.rec[0][0], 9);
    assert_int_equal(t.dropped[0][0], 0);
    assert_int_equal(t.reported_dropped[0] + t.unreported_dropped[0], 0);
    assert_sums(&t);
}

static void test_fault_slow(void **state)
{
    struct timespec a, b;
    (void)state;
    setup_sim("slow=100", "1", kernel_only, 1);
    C.size = 2 * sizeof(CUpti_ActivityKernel10);
    clock_gettime(CLOCK_MONOTONIC, &a);
    assert_int_equal(L.emit(0, 0, 4), 4);
    assert_int_equal(L.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
    clock_gettime(CLOCK_MONOTONIC, &b);
    /* A lower bound only: two completions each slept 100 ms first. */
    double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
    assert_true(ms >= 199.0);
    assert_int_equal(C.rec[0][0], 4);
}

static void test_fault_burst(void **state)
{
    struct timespec a, b;
    cuptopsim_truth t;
    (void)state;
    setenv("CUPTOPSIM_RATES", "kernel=200", 1);
    setenv("CUPTOPSIM_FAULTS", "burst=20,burst_ms=500,burst_every=1000", 1);
    setenv("CUPTOPSIM_THREADS", "1", 1);
    assert_int_equal(L.reset(), 0);
    unsetenv("CUPTOPSIM_RATES");
    unsetenv("CUPTOPSIM_FAULTS");
    client_clear();
    clock_gettime(CLOCK_MONOTONIC, &a);
    assert_int_equal(L.app_run(0.3), 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    L.truth_get(&t);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    /* Without the burst at most 200/s x s operations; inside the first
     * half second of each second, 20 times that. */
    assert_true((double)t.ops[0][0] > 3.0 * 200.0 * s);
    assert_int_equal(t.produced[0][0], 0); /* no client: nothing enabled */
}

static const CUpti_CallbackId launch_drv[] = {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                               CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
                                               CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async};

/* Callbacks on the launch, copy and set call ids carry what a launch
 * ledger needs: the records' correlation id (the runtime call and the
 * driver call inside it share it), a stream handle cuptiGetStreamIdEx
 * maps to the records' stream id, before any record of the launch exists;
 * only the enabled ids fire, and none once disabled. */
static void test_launch_callbacks(void **state)
{
    CUpti_SubscriberHandle sub = NULL;
    uint32_t id = 0;
    (void)state;
    setup_sim(NULL, "1", all_kinds, 8);
    assert_int_equal(L.cuptiSubscribe_v2(&sub, launch_cb, NULL, NULL), CUPTI_SUCCESS);
    for (size_t i = 0; i < sizeof launch_drv / sizeof *launch_drv; i++)
        assert_int_equal(L.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, launch_drv[i]),
                         CUPTI_SUCCESS);
    assert_int_equal(L.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API,
                                           CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000),
                     CUPTI_SUCCESS);
    assert_true(L.emit(0, 0, 200) > 0);   /* kernels */
    assert_true(L.emit(0, 1, 50) > 0);    /* copies  */
    assert_true(L.emit(0, 2, 30) > 0);    /* sets    */
    assert_true(L.emit(0, 5, 20) > 0);    /* synchronizations: no callback enabled */
    assert_int_equal(L.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    pthread_mutex_lock(&C.lock);
    assert_int_equal(C.launch_cbs, 200 * 2 + 50 + 30);
    assert_int_equal(C.launch_exits, C.launch_cbs);
    unsigned matched = 0, streams = 0;
    uint64_t seen_streams = 0;
    for (unsigned c = 1; c < NCORR; c++) {
        if (!(C.corr[c] & 7u))
            continue;
        assert_int_not_equal(C.cb_stream[c], 0);
        assert_int_equal(C.cb_stream[c], C.rec_stream[c]);
        assert_true(C.cb_domains[c] & 2u);
        if (C.corr[c] & 1u)
            assert_int_equal(C.cb_domains[c], 3);   /* a kernel: runtime and driver */
        seen_streams |= UINT64_C(1) << ((C.rec_stream[c] - 1) & 63);
        matched++;
    }
    for (unsigned b = 0; b < 64; b++)
        streams += (seen_streams >> b) & 1u;
    pthread_mutex_unlock(&C.lock);
    assert_int_equal(matched, 280);
    assert_true(streams > 1);
    /* the truth's per-stream production is what arrived, stream by stream */
    cuptopsim_truth t;
    L.truth_get(&t);
    assert_sums(&t);
    for (unsigned k = 0; k < CUPTOPSIM_GPU_KINDS; k++)
        for (unsigned s = 0; s < CUPTOPSIM_STREAMS; s++)
            assert_int_equal(t.produced_stream[0][k][s], C.per_stream[k][s]);
    /* off again: no more callbacks */
    for (size_t i = 0; i < sizeof launch_drv / sizeof *launch_drv; i++)
        assert_int_equal(L.cuptiEnableCallback(0, sub, CUPTI_CB_DOMAIN_DRIVER_API, launch_drv[i]),
                         CUPTI_SUCCESS);
    assert_int_equal(L.cuptiEnableCallback(0, sub, CUPTI_CB_DOMAIN_RUNTIME_API,
                                           CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000),
                     CUPTI_SUCCESS);
    assert_true(L.emit(0, 0, 10) > 0);
    assert_int_equal(C.launch_cbs, 480);
    /* what cuptiGetStreamIdEx refuses */
    assert_int_equal(L.cuptiGetStreamIdEx(L.context(0), (CUstream)(uintptr_t)1, 0, &id),
                     CUPTI_ERROR_INVALID_PARAMETER);
    assert_int_equal(L.cuptiGetStreamIdEx(NULL, NULL, 0, &id), CUPTI_ERROR_INVALID_CONTEXT);
    assert_int_equal(L.cuptiGetStreamIdEx(L.context(0), NULL, 0, NULL),
                     CUPTI_ERROR_INVALID_PARAMETER);
    /* the NULL stream (a synchronous copy's): the legacy default, stream 0 */
    for (uint8_t pt = 0; pt <= 1; pt++) {
        id = 0;
        assert_int_equal(L.cuptiGetStreamIdEx(L.context(0), NULL, pt, &id), CUPTI_SUCCESS);
        assert_int_equal(id, 7);
    }
    assert_int_equal(L.cuptiUnsubscribe(sub), CUPTI_SUCCESS);
}

static void test_subscriber_and_resources(void **state)
{
    CUpti_SubscriberHandle sub = NULL, sub2 = NULL;
    char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = "";
    CUpti_SubscriberParams p = {.structSize = CUpti_SubscriberParams_STRUCT_SIZE,
                                .subscriberName = "test",
                                .oldSubscriberName = other,
                                .oldSubscriberSize = sizeof other};
    uint32_t id = 0;
    (void)state;
    setup_sim("subscriber=1", "1", kernel_only, 1);
    assert_int_equal(L.cuptiSubscribe_v2(&sub, resource_cb, NULL, &p),
                     CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    assert_string_equal(other, "torch.profiler (simulated)");

    setenv("CUPTOPSIM_DEVICES", "3", 1);
    unsetenv("CUPTOPSIM_FAULTS");
    assert_int_equal(L.reset(), 0);
    client_clear();
    assert_int_equal(L.cuptiSubscribe_v2(&sub, resource_cb, NULL, &p), CUPTI_SUCCESS);
    assert_int_equal(L.cuptiSubscribe_v2(&sub2, resource_cb, NULL, &p),
                     CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    assert_string_equal(other, "CUPTI for test");
    assert_int_equal(L.cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RESOURCE), CUPTI_SUCCESS);
    assert_int_equal(L.cuptiActivityRegisterCallbacks(buf_requested, buf_completed), CUPTI_SUCCESS);
    assert_int_equal(L.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_KERNEL), CUPTI_SUCCESS);
    assert_int_equal(L.ctx_create(), 3);
    note_contexts();
    for (unsigned d = 0; d < 3; d++)
        assert_int_equal(C.created[d], 1);
    assert_int_equal(L.cuptiGetContextId(L.context(2), &id), CUPTI_SUCCESS);
    assert_true(id > 0);
    assert_int_equal(L.emit(2, 0, 3), 3);
    void *ctx2 = L.context(2);
    L.ctx_destroy();
    for (unsigned d = 0; d < 3; d++)
        assert_int_equal(C.destroying[d], 1);
    /* teardown completed the partial buffer */
    assert_int_equal(L.cuptiActivityFlushAll(0), CUPTI_SUCCESS);
    assert_int_equal(C.completions, 1);
    assert_null(L.context(2));
    assert_int_equal(L.cuptiGetContextId(ctx2, &id), CUPTI_ERROR_INVALID_CONTEXT);
    assert_int_equal(L.emit(2, 0, 1), -1);
    assert_int_equal(L.cuptiUnsubscribe(sub), CUPTI_SUCCESS);
    unsetenv("CUPTOPSIM_DEVICES");
}

static void test_attributes(void **state)
{
    size_t v = 1 << 20, sz = sizeof v;
    uint8_t b = 0;
    (void)state;
    setup_sim(NULL, "1", kernel_only, 1);
    assert_int_equal(L.cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &sz, &v),
                     CUPTI_SUCCESS);
    v = 0;
    assert_int_equal(L.cuptiActivityGetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &sz, &v),
                     CUPTI_SUCCESS);
    assert_int_equal(v, 1 << 20);
    sz = 1;
    assert_int_equal(L.cuptiActivityGetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER,
                                                 &sz, &b),
                     CUPTI_SUCCESS);
    assert_int_equal(b, 1);
    sz = 1;
    assert_int_equal(L.cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &sz, &v),
                     CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT);
    sz = sizeof v;
    assert_int_equal(L.cuptiActivitySetAttribute((CUpti_ActivityAttribute)999, &sz, &v),
                     CUPTI_ERROR_INVALID_PARAMETER);
    /* one shared buffer per context when per-thread buffers are off */
    b = 0;
    sz = 1;
    assert_int_equal(L.cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER,
                                                 &sz, &b),
                     CUPTI_SUCCESS);
    assert_int_equal(L.emit(0, 0, 3), 3);
    assert_int_equal(L.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    assert_int_equal(C.rec[0][0], 3);
}

static void test_fork_child_fresh(void **state)
{
    cuptopsim_truth t;
    (void)state;
    setup_sim(NULL, "1", kernel_only, 1);
    assert_int_equal(L.emit(0, 0, 5), 5);  /* held in a partial buffer */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int bad = 0;
        L.truth_get(&t);
        bad |= t.produced[0][0] != 0;
        bad |= L.context(0) != NULL;
        bad |= L.ctx_create() != 1;
        unsigned before = C.completions;
        bad |= L.emit(0, 0, 4) != 4;
        L.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        L.truth_get(&t);
        bad |= t.delivered[0][0] != 4 || C.completions != before + 1;
        _exit(bad ? 1 : 0);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(L.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    assert_int_equal(C.rec[0][0], 5);
}

/* The one parser of the settings cuptop demo passes on: the edges of each
 * range, and what strtoul/strtod would have let through. */
static void test_sim_args(void **state)
{
    unsigned u = 0;
    double d = 0;
    (void)state;
    assert_int_equal(sim_args_devices("1", &u), 0);
    assert_int_equal(u, 1);
    assert_int_equal(sim_args_devices("8", &u), 0);
    assert_int_equal(u, 8);
    assert_int_equal(sim_args_devices("9", &u), -1);
    assert_int_equal(sim_args_devices("0", &u), -1);
    assert_int_equal(sim_args_devices("-1", &u), -1);
    assert_int_equal(sim_args_devices(" 2", &u), -1);
    assert_int_equal(sim_args_devices("2x", &u), -1);
    assert_int_equal(sim_args_devices("", &u), -1);
    assert_int_equal(sim_args_seconds("0", &d), 0);
    assert_int_equal(sim_args_seconds("3600", &d), 0);
    assert_true(d == 3600);
    assert_int_equal(sim_args_seconds("0.5", &d), 0);
    assert_true(d == 0.5);
    assert_int_equal(sim_args_seconds("3601", &d), -1);
    assert_int_equal(sim_args_seconds("3600.5", &d), -1);
    assert_int_equal(sim_args_seconds("-1", &d), -1);
    assert_int_equal(sim_args_seconds("inf", &d), -1);
    assert_int_equal(sim_args_seconds("nan", &d), -1);
    assert_int_equal(sim_args_rate("1e9", 3, &d), 0);
    assert_int_equal(sim_args_rate("1e308", 5, &d), -1);
    assert_int_equal(sim_args_rate("1e999", 5, &d), -1);
    assert_int_equal(sim_args_rate("-5", 2, &d), -1);
    assert_int_equal(sim_args_rate("20000,memcpy=1", 5, &d), 0);   /* a value in a list */
    assert_true(d == 20000);
    assert_int_equal(sim_args_rate("", 0, &d), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_args),
        cmocka_unit_test_teardown(test_layout_walk, check_client),
        cmocka_unit_test_teardown(test_correlation, check_client),
        cmocka_unit_test_teardown(test_drops_null_buffer, check_client),
        cmocka_unit_test_teardown(test_drops_small_buffer, check_client),
        cmocka_unit_test_teardown(test_flush_variants, check_client),
        cmocka_unit_test_teardown(test_flush_period, check_client),
        cmocka_unit_test_teardown(test_disabled_kinds, check_client),
        cmocka_unit_test_teardown(test_graph_launches, check_client),
        cmocka_unit_test_teardown(test_api_per_call, check_client),
        cmocka_unit_test_teardown(test_truth_sums_threads, check_client),
        cmocka_unit_test_teardown(test_low_api_null_crash, check_client),
        cmocka_unit_test_teardown(test_fault_invalid_and_zero, check_client),
        cmocka_unit_test_teardown(test_fault_delivery, check_client),
        cmocka_unit_test_teardown(test_fault_slow, check_client),
        cmocka_unit_test_teardown(test_fault_burst, check_client),
        cmocka_unit_test_teardown(test_subscriber_and_resources, check_client),
        cmocka_unit_test_teardown(test_launch_callbacks, check_client),
        cmocka_unit_test_teardown(test_attributes, check_client),
        cmocka_unit_test_teardown(test_fork_child_fresh, check_client),
    };
    bind();
    unsetenv("CUPTOPSIM_SCENARIO");
    unsetenv("CUPTOPSIM_TRUTH");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
