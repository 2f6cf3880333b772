/*
 * sim_callback.c - the simulated CUPTI's callback API: one subscriber (a
 * second is refused as CUPTI refuses it, and a configured foreign one can
 * hold the slot), the resource domain, callbacks enabled per domain and
 * id, and finalize; and the external-correlation calls, modelled as
 * absent.  The state is sim_cupti.c's (sim_int.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sim_int.h"

/* ---- callback API: one subscriber, resource domain -------------------- */

static CUptiResult sim_subscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                                 void *userdata, CUpti_SubscriberParams *p)
{
    sim_init();
    if (!subscriber)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&sim.reg_lock);
    const char *old = sim.cfg.subscriber ? "torch.profiler (simulated)"
                      : sim.sub_used       ? sim.sub.name
                                           : NULL;
    if (old) {
        pthread_mutex_unlock(&sim.reg_lock);
        if (p && p->oldSubscriberName && p->oldSubscriberSize)
            snprintf(p->oldSubscriberName, p->oldSubscriberSize, "%s", old);
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    }
    memset(&sim.sub, 0, sizeof sim.sub);
    sim.sub.cb = callback;
    sim.sub.userdata = userdata;
    snprintf(sim.sub.name, sizeof sim.sub.name, "CUPTI for %s",
             p && p->subscriberName ? p->subscriberName : "(unnamed)");
    sim.sub_used = true;
    *subscriber = &sim.sub;
    pthread_mutex_unlock(&sim.reg_lock);
    return CUPTI_SUCCESS;
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber,
                                               CUpti_CallbackFunc callback, void *userdata)
{
    sim_call(SIM_C_Subscribe);
    return sim_subscribe(subscriber, callback, userdata, NULL);
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber,
                                                  CUpti_CallbackFunc callback, void *userdata,
                                                  CUpti_SubscriberParams *pParams)
{
    sim_call(SIM_C_Subscribe_v2);
    return sim_subscribe(subscriber, callback, userdata, pParams);
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
    sim_call(SIM_C_Unsubscribe);
    sim_init();
    pthread_mutex_lock(&sim.reg_lock);
    if (subscriber != &sim.sub || !sim.sub_used) {
        pthread_mutex_unlock(&sim.reg_lock);
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    sim.sub_used = false;
    sim.sub.cb = NULL;
    pthread_mutex_unlock(&sim.reg_lock);
    return CUPTI_SUCCESS;
}

/* Turn an API-domain enable (a whole domain, or one operation's call id)
 * on or off, keeping the count of those on (sim.api_domains: a producer
 * calls no callback while it is 0). */
static void sim_api_switch(_Atomic bool *on, uint32_t enable)
{
    pthread_mutex_lock(&sim.reg_lock);
    if (atomic_exchange(on, enable != 0) != (enable != 0)) {
        if (enable)
            atomic_fetch_add(&sim.api_domains, 1);
        else
            atomic_fetch_sub(&sim.api_domains, 1);
    }
    pthread_mutex_unlock(&sim.reg_lock);
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                                  CUpti_CallbackDomain domain)
{
    sim_call(SIM_C_EnableDomain);
    if (subscriber != &sim.sub || !sim.sub_used)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        _Atomic bool *on = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? &sim.sub.rt_domain
                                                                 : &sim.sub.drv_domain;
        sim_api_switch(on, enable);
        return CUPTI_SUCCESS;
    }
    if (domain != CUPTI_CB_DOMAIN_RESOURCE)
        return CUPTI_ERROR_NOT_SUPPORTED;
    atomic_store(&sim.sub.resource_domain, enable != 0);
    atomic_store(&sim.sub.created, enable != 0);
    atomic_store(&sim.sub.destroy_starting, enable != 0);
    return CUPTI_SUCCESS;
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable,
                                                    CUpti_SubscriberHandle subscriber,
                                                    CUpti_CallbackDomain domain,
                                                    CUpti_CallbackId cbid)
{
    sim_call(SIM_C_EnableCallback);
    if (subscriber != &sim.sub || !sim.sub_used)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        bool rt = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
        if (cbid == (rt ? CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000
                        : CUPTI_DRIVER_TRACE_CBID_cuProfilerStart))
            atomic_store(rt ? &sim.sub.rt_start : &sim.sub.drv_start, enable != 0);
        else if (cbid == (rt ? CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000
                             : CUPTI_DRIVER_TRACE_CBID_cuProfilerStop))
            atomic_store(rt ? &sim.sub.rt_stop : &sim.sub.drv_stop, enable != 0);
        else if (!rt && cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags)
            atomic_store(&sim.sub.drv_inst, enable != 0);
        for (unsigned k = 0; k < SIM_KINDS; k++) {
            CUpti_CallbackId r, d, sr, sd;
            sim_op_cbids(k, &r, &d);
            sim_op_sync_cbids(k, &sr, &sd);
            if (cbid && cbid == (rt ? r : d))
                sim_api_switch(rt ? &sim.sub.rt_op[k] : &sim.sub.drv_op[k], enable);
            if (cbid && cbid == (rt ? sr : sd))
                sim_api_switch(rt ? &sim.sub.rt_sop[k] : &sim.sub.drv_sop[k], enable);
        }
        return CUPTI_SUCCESS; /* other API callbacks never fire here */
    }
    if (domain != CUPTI_CB_DOMAIN_RESOURCE)
        return CUPTI_ERROR_NOT_SUPPORTED;
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED)
        atomic_store(&sim.sub.created, enable != 0);
    else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)
        atomic_store(&sim.sub.destroy_starting, enable != 0);
    return CUPTI_SUCCESS; /* other resource callbacks never fire here */
}

/* Set while the simulator delivers an API exit callback on this thread. */
_Thread_local bool sim_in_api_exit;

/* cuptiFinalize: CUPTI is torn down as if never initialised - what is held
 * is delivered, every kind and call id is off, the subscriber (with its
 * domains and callbacks) and the buffer callbacks are gone, the attributes
 * are back at their defaults, the correlation ids start again from 1; any
 * later CUPTI call starts afresh. */
SIM_EXPORT CUptiResult CUPTIAPI cuptiFinalize(void)
{
    sim_call(SIM_C_Finalize);
    sim_init();
    atomic_fetch_add(sim_in_api_exit ? &sim.fin_in_exit : &sim.fin_outside, 1);
    (void)sim_buffer_flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&sim.reg_lock);
    atomic_store(&sim.enabled, 0);
    sim_api_set_all(0, false);
    sim_api_set_all(1, false);
    for (unsigned d = 0; d < SIM_DEV_MAX; d++)
        atomic_store(&sim.ctx[d].enabled, 0);
    sim.sub_used = false;
    memset(&sim.sub, 0, sizeof sim.sub);   /* domains and per-cbid enables off */
    atomic_store(&sim.api_domains, 0);
    sim.req_cb = NULL;
    sim.cmp_cb = NULL;
    sim_attr_defaults();
    /* call ids start afresh, as CUPTI's do after a teardown (an H100,
     * session 18: the GPU records of every periodic window matched the
     * first window's calls) */
    atomic_store(&sim.corr, 0);
    pthread_mutex_unlock(&sim.reg_lock);
    return CUPTI_SUCCESS;
}

/* Modelled as absent: a client that probes them gets a clean refusal. */
SIM_EXPORT CUptiResult CUPTIAPI cuptiActivityPushExternalCorrelationId(
    CUpti_ExternalCorrelationKind kind, uint64_t id)
{
    sim_call(SIM_C_ActivityPushExternalCorrelationId);
    (void)kind;
    (void)id;
    return CUPTI_ERROR_NOT_SUPPORTED;
}

SIM_EXPORT CUptiResult CUPTIAPI cuptiActivityPopExternalCorrelationId(
    CUpti_ExternalCorrelationKind kind, uint64_t *lastId)
{
    sim_call(SIM_C_ActivityPopExternalCorrelationId);
    (void)kind;
    (void)lastId;
    return CUPTI_ERROR_NOT_SUPPORTED;
}
