/*
 * agent_attach.c - attaching to CUPTI and detaching from it.
 *
 * The agent takes nothing it does not use (DESIGN invariant 8): while no
 * activity kind is on it makes no CUPTI call at all - libcupti is not even
 * loaded, nothing is subscribed, no buffer callback is registered, no
 * flush period runs.  The first request that turns kinds on attaches;
 * turning every kind off again detaches as far as CUPTI allows.
 *
 * A detach disables every kind, flushes, and then tears CUPTI down with
 * cuptiFinalize, as CUPTI's header recommends: from the exit of a runtime
 * or driver API call (agent_finalize_at_exit, on the application thread
 * that makes the next CUDA call), so no GPU work of that thread is in
 * flight.  Without it CUDA calls stay slower until the process exits
 * (12-19 % on an H200 PyTorch loop, doc/benchmarks.md "GPU: session 6"),
 * the slowdown Kineto's teardown removes too.  Not torn down (the
 * subscriber is released, CUPTI stays initialised, and the session says
 * why): with --on-detach keep; CUPTI older than CUDA 12.6's (API 24:
 * Kineto's teardown crashed on older ones); while a capture range still
 * watches for cudaProfilerStart (that needs the subscription); once an NVTX
 * table was handed to CUPTI (its handlers stay in the library's table and
 * would run on a finalized CUPTI).  libcupti itself stays loaded, and the
 * next attach starts CUPTI afresh (subscribe, callbacks, attributes).

 * A late attach cannot see the contexts that already exist through the
 * resource callbacks; CONTEXT records from cuptiActivityEnableAndDump name
 * them (id, device) but give no CUcontext handle, so their drops can only
 * be read through the NULL-context query (device "none").  The epoch says
 * so (CUPSTORE_EPOCH_DROPS_UNATTRIBUTED with pre_contexts).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_attach.h"
#include "agent_int.h"

/* Attributes CUPTI reads before callbacks are registered: set once. */
static void attach_set_attributes(agent *a)
{
    if (!a->cupti.ActivitySetAttribute)
        return;
    if (a->cfg.device_buffer_size) {
        size_t v = a->cfg.device_buffer_size, sz = sizeof v;
        CUptiResult r = a->cupti.ActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &sz, &v);
        if (r != CUPTI_SUCCESS)
            agent_note(a, 1, "CUPTOP_DEVICE_BUFFER_SIZE not applied: %s",
                       agent_cupti_strerror(&a->cupti, r));
    }
    if (a->cfg.device_buffer_pool_limit) {
        size_t v = a->cfg.device_buffer_pool_limit, sz = sizeof v;
        CUptiResult r = a->cupti.ActivitySetAttribute(
            CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT, &sz, &v);
        if (r != CUPTI_SUCCESS)
            agent_note(a, 1, "CUPTOP_DEVICE_BUFFER_POOL_LIMIT not applied: %s",
                       agent_cupti_strerror(&a->cupti, r));
    }
}

/* Subscribe for resource callbacks; a refusal names the other client. */
void agent_attach_subscribe(agent *a)
{
    CUptiResult r = CUPTI_ERROR_NOT_SUPPORTED;
    char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = "";

    if (a->attach.subscriber) {   /* kept by a detach whose teardown was cancelled */
        if (!a->attach.callbacks && a->cupti.EnableDomain)
            a->attach.callbacks =
                a->cupti.EnableDomain(1, a->attach.subscriber, CUPTI_CB_DOMAIN_RESOURCE) == CUPTI_SUCCESS;
        return;
    }
    a->attach.callbacks = false;
    if (a->cupti.Subscribe_v2) {
        CUpti_SubscriberParams p = {.structSize = CUpti_SubscriberParams_STRUCT_SIZE,
                                    .subscriberName = "cuptop",
                                    .oldSubscriberName = other,
                                    .oldSubscriberSize = sizeof other - 1};
        r = a->cupti.Subscribe_v2(&a->attach.subscriber, agent_resource_cb, a, &p);
    } else if (a->cupti.Subscribe) {
        r = a->cupti.Subscribe(&a->attach.subscriber, agent_resource_cb, a);
    }
    if (r == CUPTI_SUCCESS) {
        if (a->cupti.EnableDomain &&
            a->cupti.EnableDomain(1, a->attach.subscriber, CUPTI_CB_DOMAIN_RESOURCE) == CUPTI_SUCCESS)
            a->attach.callbacks = true;
        return;
    }
    a->attach.subscriber = NULL;
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        /* A note and the epoch's flags (no_callbacks, drops_unattributed),
         * not a loss: no record was lost by the refusal (a count of 1 here
         * made "all" one more than the kinds and the truth, 27.11).  What
         * the other client takes is counted where it happens: its buffers
         * completed to us, ours it never gives back. */
        other[sizeof other - 1] = '\0';
        agent_note(a, 2,
                   "subscriber conflict: another CUPTI client is active (%s); continuing "
                   "with activity records only (no per-device drops, no context-destroy flush)",
                   other[0] ? other : "not named");
    } else if (a->cupti.Subscribe || a->cupti.Subscribe_v2) {
        agent_note(a, 1, "cuptiSubscribe failed: %s; no resource callbacks",
                   agent_cupti_strerror(&a->cupti, r));
    }
}

/* CUPTI's library and API version, and the provenance collected again now
 * that CUPTI is loaded: a session that started dormant (or by cuptop
 * attach) collected it without CUPTI, so it did not know it ran on the
 * simulator, nor CUPTI's version ("13.0.1"); every start path records the
 * same provenance (issue 27 item 11). */
static int put_cupti_meta(cupstore_txn *txn, void *arg)
{
    agent *a = arg;
    char v[32];
    int rc = cupstore_meta_put(txn, "cupti_library", a->cupti.path);
    snprintf(v, sizeof v, "%u", a->api_version);
    if (rc == 0)
        rc = cupstore_meta_put(txn, "cupti_api_version", v);
    if (rc == 0)
        rc = agent_prov_put(a, txn);
    return rc;
}

/* Load CUPTI and its version (the first attach only), and what depends on
 * the version: the discard buffers of API < 27, allocated up front
 * because the decline path must not allocate. */
int agent_attach_load(agent *a, char *why, size_t len)
{
    if (a->attach.loaded)
        return 0;
    agent_fd_hold();
    int lrc = agent_cupti_load(&a->cupti, a->cfg.cupti_library, why, len);
    agent_fd_release();
    if (lrc)
        return -1;
    CUptiResult r = a->cupti.GetVersion(&a->api_version);
    if (r != CUPTI_SUCCESS) {
        char e[200];
        agent_cupti_describe(&a->cupti, r, e, sizeof e);
        snprintf(why, len, "cuptiGetVersion: %s", e);
        a->cupti_error_rc = (int)r;
        return -1;
    }
    a->attach.loaded = true;
    agent_prov_collect(a);   /* now with CUPTI: simulated or not, its version */
    a->use_discard = a->api_version < 27;
    if (a->use_discard && !a->discard_last) {
        if (agent_pool_init(&a->discard, AGENT_DISCARD_SIZE, AGENT_DISCARD_N, AGENT_DISCARD_N) == 0) {
            uint8_t *b;
            int slots[AGENT_DISCARD_N], n = 0;
            while (n < AGENT_DISCARD_N && (slots[n] = agent_pool_get(&a->discard, &b)) >= 0)
                n++;
            while (n > 0)
                agent_pool_put(&a->discard, slots[--n]);
        }
        a->discard_last = aligned_alloc(AGENT_POOL_ALIGN, AGENT_DISCARD_SIZE);
    }
    if (a->env)
        (void)agent_store_put(a, put_cupti_meta, a, AGENT_PUT_TRIES);
    return 0;
}

static int attach_run(agent *a, bool late, char *why, size_t len)
{
    uint64_t t0 = agent_mono_ns();

    if (len)
        why[0] = '\0';
    if (atomic_load(&a->attach.on))
        return 0;
    agent_finalize_settle(a, true);   /* a teardown still pending: disarm */
    bool first = !a->attach.loaded;
    if (agent_attach_load(a, why, len))   /* the first load collects provenance */
        return -1;
    /* CUPTI starts here when it was never subscribed, or finalized since */
    if (first || a->attach.finalizes != a->attach.started_at_fin) {
        agent_api_cupti_start(a, late);
        a->attach.started_at_fin = a->attach.finalizes;
    }
    if (!late && !first)   /* a new session's start: CUPTI loaded, no kind on */
        agent_prov_collect(a);
    if (!a->attach.attrs_set) {
        attach_set_attributes(a);
        a->attach.attrs_set = true;
    }
    agent_attach_subscribe(a);
    agent_launches_attach(a);
    CUptiResult r = a->cupti.ActivityRegisterCallbacks(agent_buffer_requested,
                                                       agent_buffer_completed);
    if (r != CUPTI_SUCCESS) {
        char e[200];
        agent_cupti_describe(&a->cupti, r, e, sizeof e);
        snprintf(why, len, "cuptiActivityRegisterCallbacks: %s", e);
        a->cupti_error_rc = (int)r;
        if (a->attach.subscriber && a->cupti.Unsubscribe)
            (void)a->cupti.Unsubscribe(a->attach.subscriber);
        a->attach.subscriber = NULL;
        a->attach.callbacks = false;
        return -1;
    }
    if (a->cfg.flush_period_ms && a->cupti.ActivityFlushPeriod)
        (void)a->cupti.ActivityFlushPeriod(a->cfg.flush_period_ms);
    atomic_store(&a->attach.pre_contexts, 0);
    agent_epoch_contexts_written(a, 0);
    atomic_store(&a->attach.on, true);   /* before the dump: its records count */
    /* What exists already (a late attach): DEVICE records (provenance,
     * agent_prov.c, on every attach) and CONTEXT records arrive in the next
     * buffers; the consumer learns the devices and the contexts. */
    a->prov.device_records_on = false;
    agent_prov_enable_devices(a);
    if (a->cupti.ActivityEnableAndDump) {
        (void)a->cupti.ActivityEnableAndDump(CUPTI_ACTIVITY_KIND_CONTEXT);
        a->attach.dump_on = true;
        /* deliver them now (no kind is on yet: nothing else is held), so
         * the contexts are known before the first drop query */
        if (late && !agent_scope_watching(a))   /* (not inside the profiler callback) */
            (void)a->cupti.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    }
    a->attach.count++;
    a->attach.late = late;
    if (late || agent_scope_watching(a))
        agent_stop_atexit_late();   /* our protocol before CUDA's teardown */
    agent_nvtx_attached(a);   /* NVTX calls reach CUPTI from here on */
    a->attach.ns = agent_real_ns();
    a->attach.cost_ns = agent_mono_ns() - t0;
    return 0;
}

/* Under an fd hold: loading CUPTI and its first calls open descriptors,
 * which must not land on a 0-2 the application closed (agent_fd.h). */
int agent_attach(agent *a, bool late, char *why, size_t len)
{
    agent_fd_hold();
    int rc = attach_run(a, late, why, len);
    agent_fd_release();
    return rc;
}

/* Why this detach may not tear CUPTI down (NULL: it may). */
const char *agent_detach_refusal(agent *a)
{
    if (a->cfg.detach_keep)
        return "--on-detach keep";
    if (!a->cupti.Finalize)
        return "this CUPTI has no cuptiFinalize";
    if (a->api_version < 24)
        return "CUPTI older than CUDA 12.6's";
    if (agent_scope_watching(a))
        return "the capture range still watches for cudaProfilerStart";
    if (agent_nvtx_given())
        return "NVTX was handed to CUPTI, whose handlers stay in the NVTX tables";
    if (!a->attach.subscriber || !a->cupti.EnableDomain)
        return "no CUPTI subscriber to run it from an API callback";
    if (atomic_load(&a->launches.on))
        return "the launch ledger matches records to launches by call id, and CUPTI gives "
               "ids afresh after a teardown";
    return NULL;
}

static void fin_api_domains(agent *a, uint32_t on)
{
    (void)a->cupti.EnableDomain(on, a->attach.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
    (void)a->cupti.EnableDomain(on, a->attach.subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
}

static void detach_unsubscribe(agent *a)
{
    if (!a->attach.subscriber)
        return;
    if (a->cupti.EnableDomain)
        (void)a->cupti.EnableDomain(0, a->attach.subscriber, CUPTI_CB_DOMAIN_RESOURCE);
    if (a->cupti.Unsubscribe)
        (void)a->cupti.Unsubscribe(a->attach.subscriber);
    a->attach.subscriber = NULL;
}

/* The detach's forced flush returned: every buffer holding a record came
 * back, so one still out that CUPTI wrote into was taken by another
 * client (the truth matrix's steal workload in a capture range,
 * 1105053315235: 953 records lost in silence, the session COMPLETE).
 * How full it was is not known: one record each, a lower bound, as the
 * stop counts those of an attached session.  An empty one CUPTI may keep
 * (seed 29000120) is not counted. */
static void detach_count_taken(agent *a)
{
    uint32_t n = a->pool_ready ? agent_pool_take_written(&a->pool) : 0;
    if (!n)
        return;
    agent_count(a, agent_c_loss(CUPSTORE_LOSS_CONFLICT, AGENT_DEV_NONE, AGENT_KIND_ALL), n);
    atomic_fetch_or_explicit(&a->flags_seen, AGENT_SEEN_FOREIGN, memory_order_relaxed);
    agent_note(a, 2, "%" PRIu32 " buffers CUPTI wrote records into did not come back with the "
               "detach's forced flush: another CUPTI client took them (at least %" PRIu32
               " records lost, one a buffer: a lower bound, counted as conflict)", n, n);
}

void agent_detach_cupti(agent *a)
{
    uint64_t t0 = agent_mono_ns();
    bool was_subscribed = a->attach.subscriber != NULL;
    CUptiResult fr;

    if (!atomic_load(&a->attach.on))
        return;
    if (a->attach.dump_on) {
        (void)a->cupti.ActivityDisable(CUPTI_ACTIVITY_KIND_DEVICE);
        (void)a->cupti.ActivityDisable(CUPTI_ACTIVITY_KIND_CONTEXT);
        a->attach.dump_on = false;
    }
    /* every record CUPTI still holds comes back now; the consumer stores
     * it (the buffer callbacks stay ours until another client replaces
     * them or the teardown) */
    fr = a->cupti.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    agent_health_query_drops(a);
    if (fr == CUPTI_SUCCESS)
        detach_count_taken(a);
    if (a->cfg.flush_period_ms && a->cupti.ActivityFlushPeriod)
        (void)a->cupti.ActivityFlushPeriod(0);
    const char *keep = agent_detach_refusal(a);
    a->attach.fin_armable = keep == NULL;
    if (a->attach.subscriber && a->cupti.EnableDomain)
        (void)a->cupti.EnableDomain(0, a->attach.subscriber, CUPTI_CB_DOMAIN_RESOURCE);
    if (keep)
        detach_unsubscribe(a);
    a->attach.callbacks = false;
    /* Without callbacks a handle may die unseen: forget every context.
     * The next attach learns them again (as dumped contexts). */
    pthread_mutex_lock(&a->ctx_lock);
    memset(a->ctx, 0, sizeof a->ctx);
    atomic_store(&a->attach.on, false);   /* late CONTEXT records: ignored */
    atomic_store(&a->attach.pre_contexts, 0);
    pthread_mutex_unlock(&a->ctx_lock);
    if (keep && !a->attach.quiet)
        agent_note(a, 0,
                   "detached from CUPTI in %.1f ms: kinds disabled, buffers flushed%s%s; not "
                   "released: CUPTI stays initialised, not torn down (%s): CUDA calls may stay "
                   "slower, up to ~20 %% on the H200, until the process exits; the activity "
                   "buffer callbacks stay registered and libcupti stays loaded",
                   (double)(agent_mono_ns() - t0) / 1e6,
                   fr == CUPTI_SUCCESS ? "" : " (the forced flush failed)",
                   was_subscribed ? ", unsubscribed (the subscriber slot is free for another tool)"
                                  : "",
                   keep);
    else if (!a->attach.quiet)
        agent_note(a, 0,
                   "detached from CUPTI in %.1f ms: kinds disabled, buffers flushed%s; CUPTI is "
                   "torn down (cuptiFinalize) at the exit of the next CUDA call, which frees "
                   "the subscriber slot; libcupti stays loaded",
                   (double)(agent_mono_ns() - t0) / 1e6,
                   fr == CUPTI_SUCCESS ? "" : " (the forced flush failed)");
}

void agent_detach_release(agent *a, bool drained)
{
    if (!a->attach.fin_armable || atomic_load(&a->attach.on))
        return;
    a->attach.fin_armable = false;
    if (!a->attach.subscriber)
        return;
    if (!drained) {
        /* the consumer still parses what the detach flushed (CUPTI calls):
         * CUPTI stays, the subscriber goes */
        detach_unsubscribe(a);
        agent_note(a, 1, "CUPTI not torn down after the detach: its last buffers were still "
                         "being stored; CUDA calls may stay slower until the process exits");
        return;
    }
    a->attach.fin_arm_ns = agent_real_ns();
    atomic_store(&a->attach.fin, AGENT_FIN_PENDING);   /* before the callbacks fire */
    fin_api_domains(a, 1);
}

void agent_finalize_at_exit(agent *a, const void *cbdata)
{
    const CUpti_CallbackData *cd = cbdata;
    int want = AGENT_FIN_PENDING;
    if (!cd || cd->callbackSite != CUPTI_API_EXIT ||
        !atomic_compare_exchange_strong(&a->attach.fin, &want, AGENT_FIN_RUNNING))
        return;
    CUptiResult r = a->cupti.Finalize();
    atomic_store(&a->attach.fin_rc, (int)r);
    atomic_store(&a->attach.fin_ns, agent_real_ns());
    atomic_store(&a->attach.fin, AGENT_FIN_DONE);
}

/* Take back a teardown no thread has started (PENDING -> NONE): the API
 * callbacks go off, the subscriber stays.  False when none was pending. */
static bool fin_disarm(agent *a)
{
    int s = AGENT_FIN_PENDING;
    if (!atomic_compare_exchange_strong(&a->attach.fin, &s, AGENT_FIN_NONE))
        return false;
    fin_api_domains(a, 0);
    return true;
}

void agent_finalize_stop(agent *a)
{
    /* not inside CUDA's own exit (its teardown's API calls would run it) */
    if (fin_disarm(a)) {
        detach_unsubscribe(a);
        agent_note(a, 0, "the detach's CUPTI teardown was still waiting for a CUDA call when "
                         "the session stopped: not done at the process's exit; unsubscribed");
        return;
    }
    while (atomic_load(&a->attach.fin) == AGENT_FIN_RUNNING) {   /* one in progress: its note */
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    agent_finalize_settle(a, false);
}

void agent_finalize_settle(agent *a, bool cancel)
{
    if (cancel && fin_disarm(a)) {   /* still subscribed: the attach goes on from here */
        agent_note(a, 0, "the detach's CUPTI teardown was still waiting for a CUDA call: "
                         "cancelled by the attach");
        return;
    }
    int s = atomic_load(&a->attach.fin);
    while (cancel && s == AGENT_FIN_RUNNING) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        s = atomic_load(&a->attach.fin);
    }
    if (s != AGENT_FIN_DONE)
        return;
    CUptiResult r = (CUptiResult)atomic_load(&a->attach.fin_rc);
    double ms = (double)(atomic_load(&a->attach.fin_ns) - a->attach.fin_arm_ns) / 1e6;
    /* one settler only: an attach and the stop may both come here */
    if (!atomic_compare_exchange_strong(&a->attach.fin, &s, AGENT_FIN_NONE))
        return;
    if (r == CUPTI_SUCCESS) {
        /* gone with CUPTI: the subscriber, the callbacks, the attributes */
        a->attach.subscriber = NULL;
        a->attach.callbacks = false;
        a->attach.attrs_set = false;
        a->attach.finalizes++;
        if (!a->attach.quiet)
            agent_note(a, 0, "CUPTI torn down (cuptiFinalize) %.1f ms after the detach, at the exit "
                         "of the next CUDA call: CUDA runs as without CUPTI; the next attach "
                         "starts it again", ms);
    } else {
        fin_api_domains(a, 0);
        detach_unsubscribe(a);
        agent_note(a, 1, "cuptiFinalize after the detach failed: %s; CUPTI stays initialised "
                         "(CUDA calls may stay slower until the process exits), unsubscribed",
                   agent_cupti_strerror(&a->cupti, r));
    }
}

bool agent_attached(const agent *a)
{
    return atomic_load(&a->attach.on);
}

bool agent_attach_loaded(const agent *a)
{
    return a->attach.loaded;
}

CUpti_SubscriberHandle agent_attach_subscriber(const agent *a)
{
    return a->attach.subscriber;
}

bool agent_attach_callbacks(const agent *a)
{
    return a->attach.callbacks;
}

uint64_t agent_attach_ns(const agent *a)
{
    return a->attach.ns;
}

uint32_t agent_attach_finalizes(const agent *a)
{
    return a->attach.finalizes;
}

uint64_t agent_attach_cost_ns(const agent *a)
{
    return a->attach.cost_ns;
}

bool agent_attach_late(const agent *a)
{
    return a->attach.late;
}

void agent_attach_pre_context(agent *a)
{
    atomic_fetch_add(&a->attach.pre_contexts, 1);
}

uint32_t agent_attach_pre_contexts(const agent *a)
{
    return atomic_load(&a->attach.pre_contexts);
}

void agent_attach_pre_contexts_forget(agent *a)
{
    atomic_store(&a->attach.pre_contexts, 0);
}

bool agent_finalize_pending(const agent *a)
{
    return atomic_load_explicit(&a->attach.fin, memory_order_acquire) == AGENT_FIN_PENDING;
}

bool agent_finalize_done(const agent *a)
{
    return atomic_load(&a->attach.fin) == AGENT_FIN_DONE;
}
