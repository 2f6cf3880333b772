/*
 * sim_app.c - the application side of the simulator (cuptopsim_* in
 * cuptopsim.h): contexts and their resource callbacks, the producer
 * threads, the deterministic producer for tests, and reset.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sim_int.h"

/* Call the subscriber for one resource event, holding no lock. */
static void sim_resource(CUpti_CallbackId cbid, struct CUctx_st *c)
{
    CUpti_CallbackFunc cb = NULL;
    void *ud = NULL;
    pthread_mutex_lock(&sim.reg_lock);
    if (sim.sub_used && sim.sub.cb &&
        (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED ? atomic_load(&sim.sub.created)
                                                     : atomic_load(&sim.sub.destroy_starting))) {
        cb = sim.sub.cb;
        ud = sim.sub.userdata;
    }
    pthread_mutex_unlock(&sim.reg_lock);
    if (cb) {
        CUpti_ResourceData rd;
        memset(&rd, 0, sizeof rd);
        rd.context = (CUcontext)c;
        cb(ud, CUPTI_CB_DOMAIN_RESOURCE, cbid, &rd);
    }
}

/* The subscriber's callback if on (a per-cbid or a whole-domain enable). */
static CUpti_CallbackFunc sim_api_sub(const _Atomic bool *on, const _Atomic bool *dom, void **ud)
{
    CUpti_CallbackFunc cb = NULL;
    pthread_mutex_lock(&sim.reg_lock);
    if (sim.sub_used && sim.sub.cb && ((on && atomic_load(on)) || atomic_load(dom))) {
        cb = sim.sub.cb;
        *ud = sim.sub.userdata;
    }
    pthread_mutex_unlock(&sim.reg_lock);
    return cb;
}

static void sim_api_site(CUpti_CallbackFunc cb, void *ud, CUpti_CallbackDomain dom,
                         CUpti_CallbackId cbid, CUpti_CallbackData *cd, CUpti_ApiCallbackSite site)
{
    cd->callbackSite = site;
    atomic_fetch_add_explicit(&sim.api_cbs, 1, memory_order_relaxed);
    sim_in_api_exit = site == CUPTI_API_EXIT;
    cb(ud, dom, cbid, cd);
    sim_in_api_exit = false;
}

/* One runtime or driver API callback (enter, then exit), holding no lock. */
static void sim_api_cb(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const char *name,
                       _Atomic bool *on)
{
    void *ud = NULL;
    CUpti_CallbackFunc cb = sim_api_sub(on, dom == CUPTI_CB_DOMAIN_RUNTIME_API
                                                ? &sim.sub.rt_domain : &sim.sub.drv_domain, &ud);
    if (!cb)
        return;
    CUpti_CallbackData cd;
    memset(&cd, 0, sizeof cd);
    cd.functionName = name;
    sim_api_site(cb, ud, dom, cbid, &cd, CUPTI_API_ENTER);
    sim_api_site(cb, ud, dom, cbid, &cd, CUPTI_API_EXIT);
}

void sim_graph_instantiate(struct CUctx_st *c, uint32_t gid)
{
    if (gid == 0 || gid > SIM_GRAPHS)
        return;
    uint8_t st = 0;
    if (!atomic_compare_exchange_strong(&c->graph_inst[gid], &st, 1)) {
        while (atomic_load(&c->graph_inst[gid]) != 2)
            sched_yield();   /* another thread instantiates it right now */
        return;
    }
    void *ud = NULL;
    CUpti_CallbackFunc cb = sim_api_sub(&sim.sub.drv_inst, &sim.sub.drv_domain, &ud);
    if (cb) {
        CUgraphExec exec = NULL;
        cuGraphInstantiateWithFlags_params p = {.phGraphExec = &exec,
                                                .hGraph = SIM_GRAPH_HANDLE(gid), .flags = 0};
        CUresult ret = CUDA_SUCCESS;
        CUpti_CallbackData cd;
        memset(&cd, 0, sizeof cd);
        cd.functionName = "cuGraphInstantiateWithFlags";
        cd.correlationId = atomic_fetch_add_explicit(&sim.corr, 1, memory_order_relaxed) + 1;
        cd.context = (CUcontext)c;
        cd.contextUid = c->id;
        cd.functionParams = &p;
        cd.functionReturnValue = &ret;
        sim_api_site(cb, ud, CUPTI_CB_DOMAIN_DRIVER_API,
                     CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags, &cd, CUPTI_API_ENTER);
        exec = SIM_GRAPH_EXEC(c->device, gid);   /* made by the call */
        sim_api_site(cb, ud, CUPTI_CB_DOMAIN_DRIVER_API,
                     CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags, &cd, CUPTI_API_EXIT);
    }
    atomic_store(&c->graph_inst[gid], 2);
}

/* The parameters of op k's runtime and driver calls (only the stream is
 * filled in: what a client reads there), for stream handle hs. */
typedef union sim_rt_params {
    cudaLaunchKernel_v7000_params kernel;
    cudaMemcpyAsync_v3020_params memcpy;
    cudaMemsetAsync_v3020_params memset;
    cudaStreamSynchronize_v3020_params sync;
    cudaGraphLaunch_v10000_params graph;
} sim_rt_params;
typedef union sim_drv_params {
    cuLaunchKernel_params kernel;
    cuMemcpyHtoDAsync_v2_params memcpy;
    cuMemsetD8Async_params memset;
    cuStreamSynchronize_params sync;
    cuGraphLaunch_params graph;
} sim_drv_params;

static void sim_op_params(unsigned k, CUstream hs, sim_rt_params *r, sim_drv_params *d)
{
    memset(r, 0, sizeof *r);
    memset(d, 0, sizeof *d);
    switch (k) {
    case SIM_K_KERNEL:
        r->kernel.stream = (cudaStream_t)hs;
        d->kernel.hStream = hs;
        break;
    case SIM_K_MEMCPY:
        r->memcpy.stream = (cudaStream_t)hs;
        d->memcpy.hStream = hs;
        break;
    case SIM_K_MEMSET:
        r->memset.stream = (cudaStream_t)hs;
        d->memset.hStream = hs;
        break;
    case SIM_K_SYNC:
        r->sync.stream = (cudaStream_t)hs;
        d->sync.hStream = hs;
        break;
    case SIM_K_GRAPH:
        r->graph.stream = (cudaStream_t)hs;
        d->graph.hStream = hs;
        break;
    default: break;
    }
}

static uint32_t sim_enabled_now(struct CUctx_st *c)
{
    return atomic_load_explicit(&sim.enabled, memory_order_relaxed) |
           atomic_load_explicit(&c->enabled, memory_order_relaxed);
}

void sim_api_domain_call(unsigned k, bool sync, struct CUctx_st *c, unsigned stream, uint32_t corr,
                         const char *symbol, uint32_t *en)
{
    CUpti_CallbackId rt, drv;
    void *urt = NULL, *udrv = NULL;
    if (sync)
        sim_op_sync_cbids(k, &rt, &drv);
    else
        sim_op_cbids(k, &rt, &drv);
    _Atomic bool *ort = sync ? &sim.sub.rt_sop[k] : &sim.sub.rt_op[k];
    _Atomic bool *odrv = sync ? &sim.sub.drv_sop[k] : &sim.sub.drv_op[k];
    CUpti_CallbackFunc crt = rt ? sim_api_sub(ort, &sim.sub.rt_domain, &urt) : NULL;
    CUpti_CallbackFunc cdrv = drv ? sim_api_sub(odrv, &sim.sub.drv_domain, &udrv) : NULL;
    if (!crt && !cdrv) {
        *en = sim_enabled_now(c);
        return;
    }
    sim_rt_params rp;
    sim_drv_params dp;
    cudaError_t rret = cudaSuccess;
    CUresult dret = CUDA_SUCCESS;
    /* a synchronous copy or set names no stream: the legacy default one */
    sim_op_params(k, sync ? NULL : SIM_STREAM_HANDLE(stream), &rp, &dp);
    if (k == SIM_K_GRAPH) {   /* the graph launched: picked by corr */
        rp.graph.graphExec = (cudaGraphExec_t)SIM_GRAPH_EXEC(c->device, SIM_GRAPH_OF(corr));
        dp.graph.hGraph = SIM_GRAPH_EXEC(c->device, SIM_GRAPH_OF(corr));
    }
    CUpti_CallbackData r, d;
    memset(&r, 0, sizeof r);
    memset(&d, 0, sizeof d);
    r.functionName = rt < sim_runtime_cbid_names_count && sim_runtime_cbid_names[rt]
                         ? sim_runtime_cbid_names[rt] : "";
    d.functionName = drv < sim_driver_cbid_names_count && sim_driver_cbid_names[drv]
                         ? sim_driver_cbid_names[drv] : "";
    /* one correlation id for the runtime call and the driver call inside
     * it, the one the op's records carry (as CUPTI 13 does: doc/benchmarks.md
     * "GPU: session 9") */
    r.correlationId = d.correlationId = corr;
    r.symbolName = d.symbolName = symbol;   /* a launch's kernel name */
    r.context = d.context = (CUcontext)c;
    r.contextUid = d.contextUid = c->id;
    r.functionParams = &rp;
    d.functionParams = &dp;
    r.functionReturnValue = &rret;
    d.functionReturnValue = &dret;
    /* the runtime call makes the driver call inside it */
    if (crt)
        sim_api_site(crt, urt, CUPTI_CB_DOMAIN_RUNTIME_API, rt, &r, CUPTI_API_ENTER);
    if (cdrv)
        sim_api_site(cdrv, udrv, CUPTI_CB_DOMAIN_DRIVER_API, drv, &d, CUPTI_API_ENTER);
    *en = sim_enabled_now(c);   /* the work is issued here */
    if (cdrv)
        sim_api_site(cdrv, udrv, CUPTI_CB_DOMAIN_DRIVER_API, drv, &d, CUPTI_API_EXIT);
    if (crt)
        sim_api_site(crt, urt, CUPTI_CB_DOMAIN_RUNTIME_API, rt, &r, CUPTI_API_EXIT);
}

SIM_EXPORT void cuptopsim_profiler(int start)
{
    sim_init();
    /* cudaProfilerStart calls cuProfilerStart inside, as the runtime does */
    if (start) {
        sim_api_cb(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000,
                   "cudaProfilerStart", &sim.sub.rt_start);
        sim_api_cb(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart,
                   "cuProfilerStart", &sim.sub.drv_start);
    } else {
        sim_api_cb(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000,
                   "cudaProfilerStop", &sim.sub.rt_stop);
        sim_api_cb(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop,
                   "cuProfilerStop", &sim.sub.drv_stop);
    }
}

SIM_EXPORT int cuptopsim_contexts_create(void)
{
    int live = 0;
    sim_init();
    for (unsigned d = 0; d < sim.cfg.devices; d++) {
        struct CUctx_st *c = &sim.ctx[d];
        if (atomic_load(&c->live)) {
            live++;
            continue;
        }
        pthread_mutex_lock(&sim.reg_lock);
        c->magic = SIM_CTX_MAGIC;
        c->device = d; /* internal index; reported as d + device_base */
        c->id = ++sim.next_ctx_id;
        for (unsigned s = 0; s < SIM_STREAM_MAX; s++)
            atomic_store(&c->stream_end[s], 0);
        for (unsigned g = 0; g <= SIM_GRAPHS; g++)
            atomic_store(&c->graph_inst[g], 0);   /* a new context has none */
        atomic_store_explicit(&c->live, true, memory_order_release);
        pthread_mutex_unlock(&sim.reg_lock);
        sim_resource(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, c);
        live++;
    }
    return live;
}

SIM_EXPORT void cuptopsim_contexts_destroy(void)
{
    sim_init();
    for (unsigned d = 0; d < SIM_DEV_MAX; d++) {
        struct CUctx_st *c = &sim.ctx[d];
        if (!atomic_load(&c->live))
            continue;
        sim_resource(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, c);
        atomic_store(&c->live, false);
        /* CUDA's teardown completes the context's partial buffers. */
        sim_buffer_detach_partial(c);
    }
}

SIM_EXPORT void *cuptopsim_context(unsigned device)
{
    if (device >= SIM_DEV_MAX || !atomic_load(&sim.ctx[device].live))
        return NULL;
    return &sim.ctx[device];
}

SIM_EXPORT const char *cuptopsim_kind_name(unsigned kind)
{
    return sim_kind_name(kind);
}

SIM_EXPORT long cuptopsim_emit(unsigned device, unsigned kind, uint64_t n)
{
    static __thread uint64_t rng;
    long total = 0;
    sim_init();
    if (!rng)
        rng = (sim.cfg.seed + 7) * 0x9e3779b97f4a7c15ull;
    if (device >= SIM_DEV_MAX || kind >= SIM_KINDS || !atomic_load(&sim.ctx[device].live))
        return -1;
    sim_thread *t = sim_thread_self();
    for (uint64_t i = 0; i < n; i++) {
        long r = sim_produce_op(t, &rng, device, kind);
        if (r < 0)
            return -1;
        total += r;
    }
    return total;
}

SIM_EXPORT int cuptopsim_app_start(void)
{
    sigset_t all, old;
    int rc = 0;
    sim_init();
    if (!sim.cfg_ok)
        return EINVAL;
    if (sim.nprod)
        return 0;
    cuptopsim_contexts_create();
    atomic_store(&sim.prod_stop, false);
    atomic_store(&sim.prod_done, 0);
    /* Producer threads block the signals an application is sent, so a
     * process-directed signal lands on the main thread (see doc/sim.md). */
    sigemptyset(&all);
    sigaddset(&all, SIGTERM);
    sigaddset(&all, SIGINT);
    sigaddset(&all, SIGHUP);
    sigaddset(&all, SIGQUIT);
    sigaddset(&all, SIGUSR1);
    sigaddset(&all, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    sim.nprod = sim.cfg.threads;
    for (unsigned i = 0; i < sim.cfg.threads; i++)
        if ((rc = pthread_create(&sim.prod[i], NULL, sim_produce_main, (void *)(uintptr_t)i))) {
            sim.nprod = i;
            break;
        }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

SIM_EXPORT void cuptopsim_app_stop(void)
{
    atomic_store(&sim.prod_stop, true);
    for (unsigned i = 0; i < sim.nprod; i++)
        pthread_join(sim.prod[i], NULL);
    sim.nprod = 0;
}

SIM_EXPORT int cuptopsim_app_run(double seconds)
{
    struct timespec t0, now, nap = {0, 5000000};
    int rc = cuptopsim_app_start();
    if (rc)
        return rc;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        double el = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
        if (el >= seconds || atomic_load(&sim.prod_done) >= sim.nprod)
            break;
        nanosleep(&nap, NULL);
    }
    cuptopsim_app_stop();
    return 0;
}

SIM_EXPORT int cuptopsim_reset(void)
{
    char why[256] = "";
    sim_init();
    if (sim.nprod)
        return -1;
    /* Deliver what is queued to the old client, then forget everything. */
    sim_buffer_worker_stop();
    sim_thread_list_free();
    pthread_mutex_lock(&sim.reg_lock);
    for (unsigned d = 0; d < SIM_DEV_MAX; d++) {
        struct CUctx_st *c = &sim.ctx[d];
        atomic_store(&c->live, false);
        atomic_store(&c->enabled, 0);
        atomic_store(&c->pending_drops, 0);
        atomic_store(&c->reported, 0);
        atomic_store(&c->via_null, 0);
    }
    memset(&sim.sub, 0, sizeof sim.sub);
    sim.sub_used = false;
    sim.req_cb = NULL;
    sim.cmp_cb = NULL;
    sim.ts_cb = NULL;
    atomic_store(&sim.enabled, 0);
    sim_api_set_all(0, false);
    sim_api_set_all(1, false);
    memset(sim.api_calls, 0, sizeof sim.api_calls);
    memset(sim.api_produced, 0, sizeof sim.api_produced);
    atomic_store(&sim.api_cbs, 0);
    atomic_store(&sim.fin_in_exit, 0);
    atomic_store(&sim.fin_outside, 0);
    atomic_store(&sim.n_invalid, 0);
    atomic_store(&sim.n_zero, 0);
    atomic_store(&sim.n_silent, 0);
    atomic_store(&sim.n_sync_copy, 0);
    atomic_store(&sim.global_drops, 0);
    atomic_store(&sim.b_requested, 0);
    atomic_store(&sim.b_null, 0);
    atomic_store(&sim.b_small, 0);
    sim.attr[CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER] = 1;
    sim.attr[CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER] = 0;
    pthread_mutex_unlock(&sim.reg_lock);

    sim_stream_counts_clear();
    pthread_mutex_lock(&sim.q_lock);
    memset(sim.delivered, 0, sizeof sim.delivered);
    memset(sim.zero_ts, 0, sizeof sim.zero_ts);
    memset(sim.invalid, 0, sizeof sim.invalid);
    memset(sim.stolen, 0, sizeof sim.stolen);
    memset(sim.foreign, 0, sizeof sim.foreign);
    memset(sim.queued, 0, sizeof sim.queued);
    sim.b_completed = sim.b_dup = sim.b_foreign = sim.b_stolen = 0;
    sim.flushes = sim.flushes_forced = sim.n_completed = 0;
    sim.flush_period_ms = 0;
    pthread_mutex_unlock(&sim.q_lock);
    sim_calls_clear();
    sim.exit_path[0] = '\0';

    sim.cfg_ok = sim_config_load(&sim.cfg, why, sizeof why) == 0;
    if (!sim.cfg_ok) {
        fprintf(stderr, "cuptop-simcupti: %s\n", why);
        sim.cfg.devices = 1;
        sim.cfg.api_version = CUPTI_API_VERSION;
        return -1;
    }
    return 0;
}
