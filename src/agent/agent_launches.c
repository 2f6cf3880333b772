/*
 * agent_launches.c - the launch ledger wired into the agent (see
 * agent_launches.h; the design: doc/design.md "The launch ledger").
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent_int.h"
#include "agent_launches.h"
#include "agent_norm.h"

/* ---- the call ids ------------------------------------------------------ */

/* Where a call's stream is: in its parameters at `off`, (EX) in the
 * CUlaunchConfig its `config` parameter points to, or (a synchronous copy
 * or set, which names none) the default stream: the legacy one, or the
 * thread's own for a _ptds call. */
enum { AT_PARAM = 0, AT_CONFIG, AT_DEFAULT };

typedef struct launch_call {
    CUpti_CallbackId cbid;
    uint8_t kind;             /* agent_ledger_kind                         */
    uint8_t at;               /* AT_PARAM, AT_CONFIG or AT_DEFAULT         */
    uint8_t per_thread;       /* a _ptsz/_ptds call: the per-thread stream */
    uint16_t off;             /* offset of the CUstream (or the config)    */
} launch_call;

#define K AGENT_LEDGER_KERNEL
#define C AGENT_LEDGER_MEMCPY
#define S AGENT_LEDGER_MEMSET
#define G AGENT_LEDGER_GRAPH
#define CALL(name, kind) \
    {CUPTI_DRIVER_TRACE_CBID_##name, kind, AT_PARAM, 0, offsetof(name##_params, hStream)}, \
    {CUPTI_DRIVER_TRACE_CBID_##name##_ptsz, kind, AT_PARAM, 1,                           \
     offsetof(name##_ptsz_params, hStream)}
#define SYNC(name, kind) \
    {CUPTI_DRIVER_TRACE_CBID_##name, kind, AT_DEFAULT, 0, 0}, \
    {CUPTI_DRIVER_TRACE_CBID_##name##_ptds, kind, AT_DEFAULT, 1, 0}

static const launch_call launch_calls[] = {
    CALL(cuLaunchKernel, K),
    CALL(cuLaunchCooperativeKernel, K),
    {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, K, AT_CONFIG, 0, offsetof(cuLaunchKernelEx_params, config)},
    {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, K, AT_CONFIG, 1,
     offsetof(cuLaunchKernelEx_ptsz_params, config)},
    {CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync, K, AT_PARAM, 0,
     offsetof(cuLaunchGridAsync_params, hStream)},
    CALL(cuMemcpyHtoDAsync_v2, C),
    CALL(cuMemcpyDtoHAsync_v2, C),
    CALL(cuMemcpyDtoDAsync_v2, C),
    CALL(cuMemcpyAsync, C),
    CALL(cuMemcpyPeerAsync, C),
    CALL(cuMemcpy2DAsync_v2, C),
    CALL(cuMemcpy3DAsync_v2, C),
    CALL(cuMemsetD8Async, S),
    CALL(cuMemsetD16Async, S),
    CALL(cuMemsetD32Async, S),
    CALL(cuMemsetD2D8Async, S),
    CALL(cuMemsetD2D16Async, S),
    CALL(cuMemsetD2D32Async, S),
    /* a graph launch: one GRAPH_TRACE record (the graph kind), or its
     * nodes' records, all with the launch's correlation id (graph_expect) */
    CALL(cuGraphLaunch, G),
    /* synchronous copies and sets: one record each, on the default stream
     * (the 32-bit entry points of CUDA 3 are not among them: no current
     * runtime or header calls those) */
    SYNC(cuMemcpy, C), SYNC(cuMemcpyPeer, C), SYNC(cuMemcpy3DPeer, C),
    SYNC(cuMemcpyHtoD_v2, C), SYNC(cuMemcpyDtoH_v2, C), SYNC(cuMemcpyDtoD_v2, C),
    SYNC(cuMemcpyHtoA_v2, C), SYNC(cuMemcpyAtoH_v2, C), SYNC(cuMemcpyDtoA_v2, C),
    SYNC(cuMemcpyAtoD_v2, C), SYNC(cuMemcpyAtoA_v2, C),
    SYNC(cuMemcpy2D_v2, C), SYNC(cuMemcpy2DUnaligned_v2, C), SYNC(cuMemcpy3D_v2, C),
    SYNC(cuMemsetD8_v2, S), SYNC(cuMemsetD16_v2, S), SYNC(cuMemsetD32_v2, S),
    SYNC(cuMemsetD2D8_v2, S), SYNC(cuMemsetD2D16_v2, S), SYNC(cuMemsetD2D32_v2, S),
};
#undef CALL
#undef SYNC
#undef K
#undef C
#undef S
#undef G
#define NCALLS (sizeof launch_calls / sizeof *launch_calls)
_Static_assert(NCALLS < 255, "call_of[] holds an index + 1 in a byte");

/* cbid -> launch_calls index + 1 (0: not a ledger call), filled at start;
 * GRAPH_CALL: a graph-management call (agent_graphs_api) */
#define CBID_MAX 1024
#define GRAPH_CALL UINT8_MAX
static uint8_t call_of[CBID_MAX];

static const unsigned ledger_kind_store[AGENT_LEDGER_KINDS] = {
    [AGENT_LEDGER_KERNEL] = CUPSTORE_KIND_KERNEL,
    [AGENT_LEDGER_MEMCPY] = CUPSTORE_KIND_MEMCPY,
    [AGENT_LEDGER_MEMSET] = CUPSTORE_KIND_MEMSET,
    [AGENT_LEDGER_GRAPH] = CUPSTORE_KIND_GRAPH,
};

/* ---- start ------------------------------------------------------------- */


/* The ledger's memory; a launch pushed out of its window with records
 * outstanding is a hole at once (the consumer's thread, live). */
static int ledger_alloc(agent_launches_state *s)
{
    int rc = agent_ledger_init(&s->ledger, AGENT_LEDGER_BITS_DEFAULT);
    if (rc == 0)
        agent_ledger_on_evict(&s->ledger, agent_holes_add, s);
    return rc;
}

/* cuStreamIsCapturing: the process's libcuda (linked or loaded), else
 * what the loaded CUPTI library offers (the simulated one does; a real
 * libcupti does not export it). */
static void *find_is_capturing(agent *a)
{
    return agent_driver_fn(a, "cuStreamIsCapturing");
}

static const char *start_refusal(agent *a)
{
    if (!a->cupti.EnableCallback || !a->cupti.GetStreamIdEx)
        return "this CUPTI lacks cuptiEnableCallback or cuptiGetStreamIdEx";
    if (!agent_attach_subscriber(a))
        return "the agent has no CUPTI subscription (another client holds it)";
    if (!a->launches.is_capturing)
        return "cuStreamIsCapturing was not found (launches into a capturing stream "
               "could not be told apart)";
    return NULL;
}

void agent_launches_start(agent *a)
{
    agent_launches_state *s = &a->launches;
    atomic_store(&s->on, false);
    atomic_store(&s->registering, false);
    atomic_store(&s->partial, false);
    s->switches = 0;
    /* A new session (a forked child's, one after a device reset): reset
     * in place, field by field.  The ledger's memory is kept and never
     * moved: a launch callback of the old session may still be running
     * (it passed the `on` check), and the switch generation stays what it
     * is for the same reason. */
    agent_ledger_reset(&s->ledger);
    agent_graphs_reset(&s->graphs);
    agent_holes_clear(s);
    s->attaches = 0;
    atomic_store(&s->ambiguous, 0);
    atomic_store(&s->capturing, 0);
    atomic_store(&s->scoped_out, 0);
    s->judged = s->unjudged = s->unrecorded_exact = false;
    s->unreturned = 0;
    memset(&s->totals, 0, sizeof s->totals);
    memset(s->missing, 0, sizeof s->missing);
    memset(s->unrecorded, 0, sizeof s->unrecorded);
    memset(s->hole, 0, sizeof s->hole);
    memset(&s->other, 0, sizeof s->other);
    s->nholes = 0;
    for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++) {
        atomic_store(&s->live_arrived[k], 0);
        atomic_store(&s->live_pending[k], 0);
    }
    s->next_sweep_ns = 0;
    if (!a->cfg.ledger)
        return;
    if (!s->ledger.slot && ledger_alloc(s)) {
        agent_note(a, 1, "launch ledger off: no memory for it; losses are counted by class only");
        return;
    }
    atomic_store(&s->on, true);
    atomic_store(&s->registering, true);
}

void agent_launches_attach(agent *a)
{
    agent_launches_state *s = &a->launches;
    if (!s->on)
        return;
    /* release: a thread that sees the new generation sees the contexts
     * the detach forgot (agent_detach_cupti cleared them before) */
    atomic_fetch_add_explicit(&s->ctx_gen, 1, memory_order_release);
    if (!s->is_capturing)
        *(void **)&s->is_capturing = find_is_capturing(a);
    const char *why = start_refusal(a);
    unsigned on = 0;
    memset(call_of, 0, sizeof call_of);
    for (unsigned i = 0; !why && i < NCALLS; i++) {
        if (launch_calls[i].cbid >= CBID_MAX)
            continue;
        call_of[launch_calls[i].cbid] = (uint8_t)(i + 1);
        on += a->cupti.EnableCallback(1, agent_attach_subscriber(a), CUPTI_CB_DOMAIN_DRIVER_API,
                                      launch_calls[i].cbid) == CUPTI_SUCCESS;
    }
    unsigned ng;
    const CUpti_CallbackId *gc = agent_graphs_cbids(&ng);
    for (unsigned i = 0; !why && on && i < ng; i++) {
        if (gc[i] >= CBID_MAX)
            continue;
        call_of[gc[i]] = GRAPH_CALL;
        (void)a->cupti.EnableCallback(1, agent_attach_subscriber(a), CUPTI_CB_DOMAIN_DRIVER_API,
                                      gc[i]);   /* refused: those graphs stay unknown */
    }
    if (!why && !on)
        why = "CUPTI refused every launch callback";
    if (why) {
        /* off for the rest of the session: what it registered so far
         * cannot be judged against records it no longer matches */
        atomic_store(&s->on, false);
        atomic_store(&s->registering, false);
        agent_note(a, 1, "launch ledger off: %s; losses are counted by class only", why);
        return;
    }
    if (!s->attaches++)
        agent_note(a, 0, "launch ledger on: %u launch, copy, set and graph launch calls watched, %zu KiB, "
                   "%u correlation ids in the window", on,
                   agent_ledger_bytes(AGENT_LEDGER_BITS_DEFAULT) >> 10,
                   1u << AGENT_LEDGER_BITS_DEFAULT);
}

/* ---- runtime control ---------------------------------------------------- */

int agent_launches_control(agent *a, bool want, char *why, size_t len)
{
    agent_launches_state *s = &a->launches;
    why[0] = '\0';
    if (want == atomic_load(&s->registering))
        return 0;   /* in force already: nothing changes, not partial */
    if (!want) {
        /* what it registered is still matched and judged at the end */
        atomic_store(&s->registering, false);
        atomic_store(&s->partial, true);
        s->switches++;
        return 0;
    }
    if (!s->ledger.slot && ledger_alloc(s)) {
        snprintf(why, len, "no memory for it");
        return -1;
    }
    bool was_on = atomic_load(&s->on);
    atomic_store(&s->partial, true);
    /* the ledger's memory is initialised before `on` lets the consumer
     * and the launchers in (seq_cst stores) */
    atomic_store(&s->on, true);
    atomic_store(&s->registering, true);
    s->switches++;
    if (!was_on && agent_attached(a)) {
        agent_launches_attach(a);   /* the launch call ids, now */
        if (!atomic_load(&s->on)) {
            snprintf(why, len, "CUPTI refused it (the session's notes say why)");
            return -1;
        }
    }
    return 0;
}

/* ---- application threads ----------------------------------------------- */

static _Thread_local uint32_t tls_tid __attribute__((tls_model("initial-exec")));
static _Thread_local uint32_t tls_ctx_uid __attribute__((tls_model("initial-exec")));
static _Thread_local uint16_t tls_ctx_dev __attribute__((tls_model("initial-exec")));
/* the context has a handle in the agent's table (the device kinds can be
 * enabled on it under a device scope) */
static _Thread_local bool tls_ctx_handle __attribute__((tls_model("initial-exec")));
/* the attach (agent_launches_state.ctx_gen) the cached context is of */
static _Thread_local uint32_t tls_ctx_gen __attribute__((tls_model("initial-exec")));
/* the last kernel name this thread launched, and its id */
static _Thread_local const char *tls_sym __attribute__((tls_model("initial-exec")));
static _Thread_local uint32_t tls_sym_id __attribute__((tls_model("initial-exec")));
/* the kind-switch generation seen at this thread's open call's enter */
static _Thread_local uint32_t tls_gen __attribute__((tls_model("initial-exec")));

/* The launch's device, from a per-thread cache of its context's: the
 * agent's context table, else CUPTI (a context of before a late attach
 * whose CONTEXT record has not been parsed, or was lost).  The cache is
 * of one attach: after a detach and a new attach the context has no
 * handle any more, its device kinds are off under a device scope, and a
 * stale "handle" registered launches that make no record (truth matrix
 * 1105007315094: 900 false unrecorded). */
static uint16_t launch_device(agent *a, CUcontext cu, uint32_t ctx_uid)
{
    uint32_t gen = atomic_load_explicit(&a->launches.ctx_gen, memory_order_acquire);
    if (ctx_uid != tls_ctx_uid || !ctx_uid || gen != tls_ctx_gen) {
        uint32_t id = 0;
        tls_ctx_gen = gen;
        tls_ctx_dev = agent_ctx_lookup(a, ctx_uid, &tls_ctx_handle);
        if (tls_ctx_dev == CUPSTORE_DEVICE_NONE && a->cupti.GetDeviceId &&
            a->cupti.GetDeviceId(cu, &id) == CUPTI_SUCCESS)
            tls_ctx_dev = agent_norm_device(id);
        tls_ctx_uid = tls_ctx_dev == CUPSTORE_DEVICE_NONE ? 0 : ctx_uid;
    }
    return tls_ctx_dev;
}

static CUstream launch_stream(const launch_call *lc, const CUpti_CallbackData *cd)
{
    const char *p = (const char *)cd->functionParams + lc->off;
    if (lc->at == AT_DEFAULT)
        return NULL;   /* cuptiGetStreamIdEx gives the default stream's id */
    if (lc->at == AT_PARAM)
        return *(CUstream const *)(const void *)p;
    const CUlaunchConfig *cfg = *(const CUlaunchConfig *const *)(const void *)p;
    return cfg ? cfg->hStream : NULL;
}

/* What a graph launch makes: with the graph kind on, one graph record
 * (CUPTI 13 then makes no node records, whatever else is on); with it
 * off, the records of the graph's nodes of the kinds that are on, as
 * counted at its instantiate.  false: nothing expected (no node kind on,
 * or a graph of none of them). */
static bool graph_expect(agent *a, const CUpti_CallbackData *cd, unsigned kinds,
                         agent_launch *l)
{
    if (kinds & (1u << CUPSTORE_KIND_GRAPH)) {
        l->expect[AGENT_LEDGER_GRAPH] = 1;
        return true;
    }
    static const agent_ledger_kind nk[] = {AGENT_LEDGER_KERNEL, AGENT_LEDGER_MEMCPY,
                                           AGENT_LEDGER_MEMSET};
    bool any = false;
    for (unsigned i = 0; i < 3; i++)
        any |= (kinds & (1u << ledger_kind_store[nk[i]])) != 0;
    if (!any)
        return false;
    const cuGraphLaunch_params *p = cd->functionParams;   /* _ptsz: the same */
    if (!agent_graphs_lookup(&a->launches.graphs, p->hGraph, l->expect)) {
        /* instantiated before the attach, or not countable */
        atomic_fetch_add_explicit(&a->launches.graphs.launches_unknown, 1, memory_order_relaxed);
        memset(l->expect, 0, sizeof l->expect);
        l->unknowable = true;
        return true;
    }
    unsigned total = 0;
    for (unsigned i = 0; i < 3; i++) {
        if (!(kinds & (1u << ledger_kind_store[nk[i]])))
            l->expect[nk[i]] = 0;
        total += l->expect[nk[i]];
    }
    return total != 0;
}

static void launch_enter(agent *a, const launch_call *lc, const CUpti_CallbackData *cd)
{
    agent_launches_state *s = &a->launches;
    /* the launch time says when a hole was launched (the report's
     * window): the coarse clock's millisecond is enough, at a fifth of
     * the cost (bench/ledger/ledger_callgrind.sh) */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    tls_gen = atomic_load(&s->switch_gen);
    /* after a `ledger off` nothing new is registered; a call that was
     * registered before still has its exit (cancel) handled */
    if (!atomic_load_explicit(&s->registering, memory_order_relaxed))
        return;
    unsigned kinds = (unsigned)atomic_load(&a->kinds);
    if ((tls_gen & 1) || !cd->correlationId || !cd->functionParams ||
        (lc->kind != AGENT_LEDGER_GRAPH && !(kinds & (1u << ledger_kind_store[lc->kind]))))
        return;
    agent_launch l = {.corr = cd->correlationId, .launch_ns = now};
    if (lc->kind != AGENT_LEDGER_GRAPH)
        l.expect[lc->kind] = 1;
    else if (!graph_expect(a, cd, kinds, &l))
        return;
    CUstream hs = launch_stream(lc, cd);
    int cap = 0;
    if (s->is_capturing((void *)hs, &cap) == 0 && cap != 0) {
        atomic_fetch_add_explicit(&s->capturing, 1, memory_order_relaxed);
        return;
    }
    uint32_t sid = 0;
    if (a->cupti.GetStreamIdEx(cd->context, hs, lc->per_thread, &sid) != CUPTI_SUCCESS)
        return;   /* a record of it arrives as an orphan: counted */
    uint16_t dev = launch_device(a, cd->context, cd->contextUid);
    if (a->cfg.devices && (dev >= CUPSTORE_DEVICE_MAX || !(a->cfg.devices & (1u << dev)) ||
                           !tls_ctx_handle)) {
        /* out of the device scope, or a context of before the attach
         * (no handle: its device kinds cannot be enabled): no record */
        atomic_fetch_add_explicit(&s->scoped_out, 1, memory_order_relaxed);
        return;
    }
    if (!tls_tid)
        tls_tid = (uint32_t)syscall(SYS_gettid);
    l.stream = sid;
    l.tid = tls_tid;
    l.device = dev;
    if (lc->kind == AGENT_LEDGER_KERNEL && cd->symbolName) {
        /* a loop launches the same kernel again and again: one compare */
        if (cd->symbolName != tls_sym || !tls_sym_id) {
            tls_sym_id = agent_lname_id(cd->symbolName);
            tls_sym = cd->symbolName;
        }
        l.name_id = tls_sym_id;
    }
    (void)agent_ledger_launch(&s->ledger, &l);
}

static void launch_exit(agent *a, const CUpti_CallbackData *cd)
{
    agent_launches_state *s = &a->launches;
    const CUresult *ret = cd->functionReturnValue;
    if (atomic_load(&s->switch_gen) != tls_gen) {
        /* a kind switch overlapped the call: whether its record comes is
         * CUPTI's decision, not knowable here */
        agent_ledger_cancel(&s->ledger, cd->correlationId);
        atomic_fetch_add_explicit(&s->ambiguous, 1, memory_order_relaxed);
    } else if (ret && *ret != CUDA_SUCCESS) {
        agent_ledger_cancel(&s->ledger, cd->correlationId);   /* no work issued */
    }
}

bool agent_launches_api(agent *a, CUpti_CallbackId cbid, const CUpti_CallbackData *cd)
{
    if (!atomic_load_explicit(&a->launches.on, memory_order_relaxed) || cbid >= CBID_MAX ||
        !call_of[cbid])
        return false;
    if (!cd)
        return true;
    if (call_of[cbid] == GRAPH_CALL)
        agent_graphs_api(a, cbid, cd);
    else if (cd->callbackSite == CUPTI_API_ENTER)
        launch_enter(a, &launch_calls[call_of[cbid] - 1], cd);
    else
        launch_exit(a, cd);
    return true;
}

void agent_launches_switch(agent *a, bool begin)
{
    if (!a->launches.on)
        return;
    uint32_t g = atomic_load(&a->launches.switch_gen);
    if (begin == !(g & 1))   /* begin from even, end from odd */
        atomic_store(&a->launches.switch_gen, g + 1);
}

/* ---- the consumer ------------------------------------------------------ */

void agent_launches_tick(agent *a)
{
    agent_launches_state *s = &a->launches;
    if (!atomic_load_explicit(&s->on, memory_order_relaxed))
        return;
    agent_ledger_drain(&s->ledger);   /* launches pushed out of the window */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);   /* the launches' clock */
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    if (now < s->next_sweep_ns)
        return;
    s->next_sweep_ns = now + 1000000000u;
    /* lost_before 0: live, nothing is declared lost (only the final
     * flush can say a record will never come) */
    uint64_t pending[AGENT_LEDGER_KINDS] = {0};
    agent_ledger_sweep(&s->ledger, now - AGENT_LEDGER_GRACE_NS, 0, NULL, NULL, pending);
    for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++) {
        /* launches pushed out of the window are holes already, but the
         * session has not judged them: still not arrived, i.e. pending */
        pending[k] += s->ledger.lost[k] - s->ledger.late[k];
        atomic_store_explicit(&s->live_pending[k], pending[k], memory_order_relaxed);
        atomic_store_explicit(&s->live_arrived[k], s->ledger.matched[k], memory_order_relaxed);
    }
}

void agent_launches_health(agent *a, cupstore_health *h)
{
    agent_launches_state *s = &a->launches;
    _Static_assert(CUPSTORE_LEDGER_KINDS == AGENT_LEDGER_KINDS, "health row's ledger kinds");
    if (!atomic_load_explicit(&s->on, memory_order_relaxed))
        return;
    if (atomic_load_explicit(&s->registering, memory_order_relaxed))
        h->flags |= CUPSTORE_HF_LEDGER;
    if (atomic_load_explicit(&s->partial, memory_order_relaxed))
        h->flags |= CUPSTORE_HF_LEDGER_PARTIAL;
    for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++) {
        uint64_t e = atomic_load_explicit(&s->ledger.expected[k], memory_order_relaxed);
        uint64_t c = atomic_load_explicit(&s->ledger.cancelled_expect[k], memory_order_relaxed);
        h->ledger_expected[k] = e > c ? e - c : 0;
        h->ledger_arrived[k] = atomic_load_explicit(&s->live_arrived[k], memory_order_relaxed);
        h->ledger_pending[k] = atomic_load_explicit(&s->live_pending[k], memory_order_relaxed);
    }
}

void agent_launches_arrive(agent *a, const cupstore_record *r)
{
    agent_ledger_kind k;
    switch (r->kind) {
    case CUPSTORE_KIND_KERNEL: k = AGENT_LEDGER_KERNEL; break;
    case CUPSTORE_KIND_MEMCPY: k = AGENT_LEDGER_MEMCPY; break;
    case CUPSTORE_KIND_MEMSET: k = AGENT_LEDGER_MEMSET; break;
    case CUPSTORE_KIND_GRAPH: k = AGENT_LEDGER_GRAPH; break;
    default: return;
    }
    if (a->launches.on && r->correlation &&
        agent_ledger_arrive(&a->launches.ledger, r->correlation, k) == AGENT_LEDGER_LATE)
        agent_holes_take_back(&a->launches, r, k);
}

/* ---- the end ----------------------------------------------------------- */

/* The classes that count records which never reached the consumer's
 * match: what can explain a missing record.  (Zero-timestamp and tail
 * records parsed at the end do not arrive; store-refused ones did.) */
static bool explains(unsigned l)
{
    return l != CUPSTORE_LOSS_UNRECORDED && l != CUPSTORE_LOSS_STORE_REFUSED;
}

static uint64_t class_losses(agent *a, unsigned d)
{
    uint64_t n = 0;
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
        for (unsigned k = 0; explains(l) && k < AGENT_KINDS; k++)
            n += atomic_load(&a->c[agent_c_loss(l, d, k)]);
    return n;
}

/* unrecorded = missing - what the other classes counted, per device
 * (their per-kind split is an estimate for CUPTI's drops, so the device
 * is the finest exact grain); losses of no device come off the total.
 * Exact per kind where no other class counted anything. */
static void count_unrecorded(agent *a)
{
    agent_launches_state *s = &a->launches;
    uint64_t left[CUPSTORE_DEVICE_MAX + 1];
    /* losses of no device, and a device's losses beyond its own missing
     * records, may explain any device's (or a launch whose device was not
     * known): they come off what is left, launches of no device first */
    uint64_t pool = class_losses(a, AGENT_DEV_NONE);
    s->unrecorded_exact = true;
    for (unsigned d = 0; d <= CUPSTORE_DEVICE_MAX; d++) {
        uint64_t miss = 0, other = d < CUPSTORE_DEVICE_MAX ? class_losses(a, d) : 0;
        for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++)
            miss += s->missing[d][k];
        left[d] = miss > other ? miss - other : 0;
        pool += other > miss ? other - miss : 0;
        if (other)
            s->unrecorded_exact = false;
    }
    if (pool)
        s->unrecorded_exact = false;
    for (unsigned i = 0; i <= CUPSTORE_DEVICE_MAX; i++) {
        unsigned d = i == 0 ? CUPSTORE_DEVICE_MAX : i - 1;
        uint64_t use = pool < left[d] ? pool : left[d];
        pool -= use;
        left[d] -= use;
        for (unsigned k = 0; k < AGENT_LEDGER_KINDS && left[d]; k++) {
            uint64_t u = s->missing[d][k] < left[d] ? s->missing[d][k] : left[d];
            s->unrecorded[d][k] = u;
            left[d] -= u;
            agent_count(a, agent_c_loss(CUPSTORE_LOSS_UNRECORDED,
                                        d < CUPSTORE_DEVICE_MAX ? d : AGENT_DEV_NONE,
                                        ledger_kind_store[k]), u);
        }
    }
}

void agent_launches_final(agent *a, uint64_t unreturned)
{
    agent_launches_state *s = &a->launches;
    if (!s->on || s->judged)
        return;
    s->judged = true;
    s->unreturned = unreturned;
    agent_ledger_sweep(&s->ledger, UINT64_MAX, UINT64_MAX, agent_holes_add, s, NULL);
    agent_ledger_totals_get(&s->ledger, &s->totals);
    /* nothing is pending any more (each record arrived or is missing):
     * the last health row says so, not the last live sweep */
    for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++) {
        atomic_store_explicit(&s->live_pending[k], 0, memory_order_relaxed);
        atomic_store_explicit(&s->live_arrived[k], s->totals.matched[k], memory_order_relaxed);
    }
    if (!unreturned)
        count_unrecorded(a);
    /* switched at runtime: launches outside its spans were never expected,
     * so what no class counted among them cannot be seen, and the other
     * classes' counts cover them too: a lower bound only */
    if (unreturned || atomic_load(&s->partial))
        s->unrecorded_exact = false;
    /* graph launches whose nodes were not counted: their records are
     * matched, never missing, so a silent loss among them is not seen */
    if (s->totals.unknowable)
        s->unrecorded_exact = false;
    uint64_t miss = 0, unrec = 0;
    for (unsigned d = 0; d <= CUPSTORE_DEVICE_MAX; d++)
        for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++) {
            miss += s->missing[d][k];
            unrec += s->unrecorded[d][k];
        }
    if (unrec)
        agent_note(a, 2, "launch ledger: %" PRIu64 " GPU records launched never arrived although "
                   "no other loss class counted them (unrecorded%s; %" PRIu64 " missing in all, "
                   "on %u stream(s))", unrec, s->unrecorded_exact ? "" : ", a lower bound",
                   miss, s->nholes + (s->other.launches ? 1 : 0));
    else if (miss && unreturned)
        agent_note(a, 1, "launch ledger: %" PRIu64 " GPU records launched never arrived; %" PRIu64
                   " buffers handed to CUPTI never came back and may hold any of them (counted "
                   "as tail or conflict, a bound), so none is called unrecorded", miss, unreturned);
}

/* The rows' kernel names as names-table ids: the consumer's own (it has
 * stopped, so its table is this thread's now), interned where no record
 * used them (a launch whose every record was lost) and pending until the
 * rows' transaction commits. */
static void lost_names(agent *a)
{
    agent_launches_state *s = &a->launches;
    agent_names *nm = &a->consumer.work.names;
    for (uint32_t i = 0; i < s->nlost; i++) {
        const char *sym = s->lost_name ? agent_lname(s->lost_name[i]) : NULL;
        uint32_t id = sym ? agent_names_intern(nm, sym, SIZE_MAX) : 0;
        if (id)
            agent_names_touch(nm, id);
        s->lost[i].name_id = id;
    }
}

struct put_lost_arg {
    agent_launches_state *s;
    agent_names *names;
};

static int put_lost(cupstore_txn *txn, void *arg)
{
    struct put_lost_arg *p = arg;
    const uint32_t *ids;
    size_t np = agent_names_pending(p->names, &ids);
    int rc = 0;
    for (size_t i = 0; i < np && rc == 0; i++) {
        const agent_name *n = agent_names_get(p->names, ids[i]);
        rc = cupstore_name_put(txn, ids[i], n->str, n->len);
    }
    for (uint32_t i = 0; rc == 0 && i < p->s->nlost; i++)
        rc = cupstore_lost_put(txn, &p->s->lost[i]);
    return rc;
}

void agent_launches_put_lost(agent *a)
{
    agent_launches_state *s = &a->launches;
    if (!s->judged || !s->nlost || !a->env)
        return;
    /* its own transaction, before the final status's, and only where the
     * disk keeps the room for that one: the rows are the trace's markers,
     * the final status is the verdict */
    lost_names(a);
    struct put_lost_arg p = {s, &a->consumer.work.names};
    const uint32_t *ids;
    uint64_t need = (uint64_t)s->nlost * (sizeof(cupstore_lost) + 16) * 2;
    for (size_t i = 0, np = agent_names_pending(p.names, &ids); i < np; i++)
        need += agent_names_get(p.names, ids[i])->len + 64;
    int rc = agent_reserve_room(a, need, AGENT_RESERVE_KEEP)
                 ? agent_store_put(a, put_lost, &p, AGENT_PUT_NOTE_TRIES) : ENOSPC;
    agent_names_batch_end(p.names, rc == 0);
    if (rc) {
        agent_note(a, 1, "launch ledger: the %" PRIu32 " launches with records missing were not "
                   "stored (%s): the report's per-stream holes stand, the trace has no markers",
                   s->nlost, rc == ENOSPC ? "no room on the disk" : cupstore_strerror(rc));
        s->nlost = 0;
    }
}

/* The consumer still runs (orphaned in a commit): its side of the ledger
 * (what arrived, per launch) is in use, so no sweep can say what is
 * missing.  What the launchers counted is known; what arrived only as of
 * the consumer's last live count (a lower bound).  Written as a partial
 * result, so no reader takes the absence of `unrecorded` for a clean
 * ledger and none takes a missing result for a ledger never asked for. */
static void launches_unjudged(agent *a)
{
    agent_launches_state *s = &a->launches;
    s->judged = true;
    s->unjudged = true;
    s->unrecorded_exact = false;
    atomic_store(&s->partial, true);
    agent_ledger_totals_launched(&s->ledger, &s->totals);
    for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++)
        s->totals.matched[k] = atomic_load_explicit(&s->live_arrived[k], memory_order_relaxed);
    agent_note(a, 1, "launch ledger not judged: the consumer did not stop in time (still in a "
               "store commit): launches counted, no record called missing or unrecorded");
}

void agent_launches_stop(agent *a, bool consumer_stopped, uint64_t unreturned)
{
    if (!atomic_load(&a->launches.on))
        return;
    if (!consumer_stopped) {
        launches_unjudged(a);
        return;
    }
    /* CUPTI's drops since the health thread's last query explain missing
     * records too: counted before the sweep compares */
    agent_health_query_drops(a);
    agent_launches_final(a, unreturned);
    agent_launches_put_lost(a);
}

/* "d s k=N,k=N first_ns last_ns tid launches" per stream with holes */
static int put_hole(cupstore_txn *txn, const agent_launch_hole *h, const char *key)
{
    char v[256];
    snprintf(v, sizeof v,
             "device=%u stream=%" PRIu32 " kernel=%" PRIu64 " memcpy=%" PRIu64 " memset=%" PRIu64
             " graph=%" PRIu64 " first_ns=%" PRIu64 " last_ns=%" PRIu64 " tid=%" PRIu32
             " launches=%" PRIu32 " named=%" PRIu32,
             h->device, h->stream, h->missing[AGENT_LEDGER_KERNEL], h->missing[AGENT_LEDGER_MEMCPY],
             h->missing[AGENT_LEDGER_MEMSET], h->missing[AGENT_LEDGER_GRAPH], h->first_ns,
             h->last_ns, h->tid, h->launches, h->named < h->launches ? h->named : h->launches);
    return cupstore_meta_put(txn, key, v);
}

int agent_launches_put(agent *a, cupstore_txn *txn)
{
    agent_launches_state *s = &a->launches;
    if (!s->judged)
        return 0;
    const agent_ledger_totals *t = &s->totals;
    char v[1536], key[48];
    int n = 0;
    n += snprintf(v + n, sizeof v - (size_t)n,
                  "launches=%" PRIu64 " cancelled=%" PRIu64 " ambiguous=%" PRIu64
                  " capturing=%" PRIu64 " overrun=%" PRIu64 " busy=%" PRIu64 " exact=%d"
                  " unreturned=%" PRIu64 " scoped_out=%" PRIu64 " lost_rows=%" PRIu32
                  " lost_unkept=%" PRIu64 " partial=%d switches=%" PRIu32 " evicted=%" PRIu64
                  " unknowable=%" PRIu64 " graphs=%" PRIu64 " graphs_unknowable=%" PRIu64
                  " graphs_untracked=%" PRIu64 " graph_launches_unknown=%" PRIu64 "%s",
                  t->launches, t->cancelled, atomic_load(&s->ambiguous),
                  atomic_load(&s->capturing), t->overrun, t->busy, s->unrecorded_exact,
                  s->unreturned, atomic_load(&s->scoped_out), s->nlost, s->lost_unkept,
                  (int)atomic_load(&s->partial), s->switches, t->evicted, t->unknowable,
                  atomic_load(&s->graphs.known), atomic_load(&s->graphs.unknowable),
                  atomic_load(&s->graphs.untracked), atomic_load(&s->graphs.launches_unknown),
                  s->unjudged ? " unjudged=1" : "");
    static const char *const kn[AGENT_LEDGER_KINDS] = {"kernel", "memcpy", "memset", "graph"};
    for (unsigned k = 0; k < AGENT_LEDGER_KINDS && n < (int)sizeof v; k++) {
        uint64_t unrec = 0;
        for (unsigned d = 0; d <= CUPSTORE_DEVICE_MAX; d++)
            unrec += s->unrecorded[d][k];
        n += snprintf(v + n, sizeof v - (size_t)n,
                      " %s.expected=%" PRIu64 " %s.matched=%" PRIu64 " %s.missing=%" PRIu64
                      " %s.unrecorded=%" PRIu64 " %s.orphan=%" PRIu64 " %s.extra=%" PRIu64
                      " %s.unattributed=%" PRIu64 " %s.late=%" PRIu64,
                      kn[k], t->expected[k], kn[k], t->matched[k], kn[k], t->lost[k] - t->late[k],
                      kn[k], unrec, kn[k], t->orphan[k], kn[k], t->extra[k], kn[k],
                      s->unjudged ? 0 : agent_ledger_unattributed(t, (agent_ledger_kind)k), kn[k],
                      t->late[k]);
    }
    int rc = cupstore_meta_put(txn, "ledger", v);
    for (unsigned i = 0; rc == 0 && i < s->nholes; i++) {
        snprintf(key, sizeof key, "ledger.stream.%u", i);
        rc = put_hole(txn, &s->hole[i], key);
    }
    if (rc == 0 && s->other.launches)
        rc = put_hole(txn, &s->other, "ledger.stream.other");
    return rc;
}
