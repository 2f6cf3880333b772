/*
 * agent_scope.c - capture ranges: collect only between cudaProfilerStart
 * and cudaProfilerStop (CUPTOP_CAPTURE_RANGE=cudaProfilerApi), once
 * (CUPTOP_CAPTURE_RANGE_END=stop) or for every range (repeat, repeat:N).
 *
 * Seeing the calls needs CUPTI's callback API, so in this mode the agent
 * subscribes at the start - the one CUPTI state it holds outside a range
 * (with the resource domain, so the contexts are known by handle).  The
 * activity side attaches at the first range: buffer callbacks, flush
 * period, dump; kinds go on at the exit of cudaProfilerStart and off at
 * the entry of cudaProfilerStop, on the application's thread inside the
 * callback, so exactly the work in between is collected.  The callback
 * only records the transition (time, kinds) in a small ring; the health
 * thread turns each into an epoch (out-of-scope epochs between ranges).
 * After the last range (stop, or repeat:N reached) the agent detaches
 * for good, unsubscribing too.
 *
 * cudaProfilerStart calls cuProfilerStart: both are watched (a program may
 * call either), and entering a range that is already open is a no-op.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "agent_int.h"
#include "agent_scope.h"

int agent_scope_watch(agent *a, char *why, size_t len)
{
    static const struct {
        CUpti_CallbackDomain dom;
        CUpti_CallbackId cbid;
    } cbs[] = {
        {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000},
        {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop},
    };
    unsigned on = 0;

    pthread_mutex_lock(&a->scope.lock);
    a->scope.kinds = a->cfg.kinds;
    a->scope.in_range = a->scope.done = false;
    a->scope.ranges = 0;
    a->scope.nvtx_open = 0;
    a->scope.ev_head = a->scope.ev_tail = a->scope.ev_lost = 0;
    a->scope.period_ms = a->cfg.capture == AGENT_CAPTURE_EVERY ? a->cfg.capture_period_ms : 0;
    a->scope.window_ms = a->cfg.capture == AGENT_CAPTURE_EVERY ? a->cfg.capture_window_ms : 0;
    pthread_mutex_unlock(&a->scope.lock);
    if (a->cfg.capture == AGENT_CAPTURE_EVERY) {
        /* windows: the window thread opens them (agent_window.c); nothing
         * of CUPTI is watched or attached until the first */
        char ev[40];
        cupstore_every_format(a->scope.period_ms, a->scope.window_ms, ev, sizeof ev);
        agent_note(a, 0, "capture range every:%s: windows aligned to the wall clock; nothing "
                   "of CUPTI is attached until the first window", ev);
        return 0;
    }
    if (a->cfg.capture == AGENT_CAPTURE_NVTX) {
        /* NVTX: the agent's own wrappers in the NVTX table see the range
         * (agent_nvtx.c): no CUPTI call, libcupti not even loaded */
        a->scope.watching = true;
        agent_note(a, 0, "capture range nvtx:%.180s (%s): waiting for the range; nothing of "
                   "CUPTI is attached until then",
                   a->cfg.capture_name, !a->cfg.capture_repeat ? "end: stop"
                                        : a->cfg.capture_max ? "end: repeat:N" : "end: repeat");
        return 0;
    }
    if (agent_attach_load(a, why, len))
        return -1;
    agent_attach_subscribe(a);
    if (agent_attach_subscriber(a) && a->cupti.EnableCallback)
        for (size_t i = 0; i < sizeof cbs / sizeof cbs[0]; i++)
            on += a->cupti.EnableCallback(1, agent_attach_subscriber(a), cbs[i].dom, cbs[i].cbid) ==
                  CUPTI_SUCCESS;
    a->scope.watching = on > 0;
    if (!a->scope.watching)
        agent_note(a, 2, "capture range cudaProfilerApi: %s, so cudaProfilerStart cannot be "
                   "seen and nothing will be collected",
                   agent_attach_subscriber(a) ? "CUPTI refused the profiler API callbacks"
                                 : "no CUPTI subscription (another client holds it)");
    else
        agent_note(a, 0, "capture range cudaProfilerApi (%s): subscribed, waiting for "
                   "cudaProfilerStart; nothing else of CUPTI is attached until then",
                   !a->cfg.capture_repeat ? "end: stop"
                   : a->cfg.capture_max    ? "end: repeat:N"
                                           : "end: repeat");
    return 0;
}

/* Record a transition; scope.lock held.  A full ring counts it lost. */
static void scope_event(agent *a, uint64_t ns, uint32_t kinds, bool attach, uint64_t sched_ns)
{
    if (a->scope.ev_head - a->scope.ev_tail >= AGENT_RANGE_EVS) {
        a->scope.ev_lost++;
        return;
    }
    agent_range_ev *e = &a->scope.ev[a->scope.ev_head % AGENT_RANGE_EVS];
    e->ns = ns;
    e->kinds = kinds;
    e->attach = attach;
    e->sched_ns = sched_ns;
    e->period_ms = a->scope.period_ms;
    e->window_ms = a->scope.window_ms;
    a->scope.ev_head++;
}

/* Enter (start) or leave the capture range; scope.lock held.  Entering
 * attaches CUPTI at the first range; leaving the last range (stop, or
 * repeat:N reached) marks the capture done (the health thread detaches). */
static void scope_transition(agent *a, bool start, uint64_t sched_ns)
{
    if (atomic_load(&a->state) != AGENT_RUNNING || a->scope.done || a->scope.in_range == start)
        return;
    if (start) {
        char why[256];
        bool first = !agent_attached(a);
        if (first && agent_attach(a, true, why, sizeof why)) {
            a->scope.done = true;   /* cannot collect: noted by the health thread */
            a->scope.ev_lost = UINT32_MAX;
            return;
        }
        /* the epoch starts as the kinds go on (after the attach): no
         * record of it can start before its start */
        uint64_t ns = agent_real_ns();
        (void)agent_apply_kinds(a, a->scope.kinds);
        a->scope.in_range = true;
        a->scope.ranges++;
        scope_event(a, ns, (uint32_t)atomic_load(&a->kinds), first, sched_ns);
    } else {
        (void)agent_apply_kinds(a, 0);
        a->scope.in_range = false;
        if (a->cfg.capture != AGENT_CAPTURE_EVERY &&   /* windows: until the stop */
            (!a->cfg.capture_repeat ||
             (a->cfg.capture_max && a->scope.ranges >= a->cfg.capture_max)))
            a->scope.done = true;
        scope_event(a, agent_real_ns(), 0, false, sched_ns);   /* after: none start after it */
    }
}

void agent_scope_api(agent *a, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                     const CUpti_CallbackData *cd)
{
    bool start, rt = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
    if (!cd || !a->scope.watching)
        return;
    if (cbid == (rt ? CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000
                    : CUPTI_DRIVER_TRACE_CBID_cuProfilerStart))
        start = true;
    else if (cbid == (rt ? CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000
                         : CUPTI_DRIVER_TRACE_CBID_cuProfilerStop))
        start = false;
    else
        return;
    /* the range is strictly between the calls: on after Start returns,
     * off as Stop is entered */
    if (cd->callbackSite != (start ? CUPTI_API_EXIT : CUPTI_API_ENTER))
        return;
    pthread_mutex_lock(&a->scope.lock);
    scope_transition(a, start, 0);
    pthread_mutex_unlock(&a->scope.lock);
}

void agent_scope_window(agent *a, bool open, uint64_t sched_ns, uint32_t period_ms,
                        uint32_t window_ms)
{
    pthread_mutex_lock(&a->scope.lock);
    if (a->cfg.capture == AGENT_CAPTURE_EVERY && a->scope.period_ms == period_ms &&
        a->scope.window_ms == window_ms)
        scope_transition(a, open, sched_ns);
    pthread_mutex_unlock(&a->scope.lock);
}

#define REST_MARGIN_NS 50000000ull   /* the drain ends this long before the next open */
/* A teardown and the attach after it cost tens of ms (the attach alone
 * 24-32 ms on an H100) and the detach's forced flush waits for a slow
 * consumer: below this gap, kinds off is the cheaper rest and never
 * delays the next window. */
#define REST_MIN_GAP_NS 2000000000ull

void agent_scope_window_rest(agent *a, uint64_t next_open_ns)
{
    pthread_mutex_lock(&a->scope.lock);
    bool rest = a->cfg.capture == AGENT_CAPTURE_EVERY && !a->scope.in_range && !a->scope.done;
    pthread_mutex_unlock(&a->scope.lock);
    uint64_t now = agent_real_ns();
    if (!rest || !agent_attached(a) || atomic_load(&a->state) != AGENT_RUNNING)
        return;
    if (next_open_ns < now + REST_MIN_GAP_NS) {
        a->scope.rest_short++;
        return;
    }
    /* --devices: a context that exists before an attach has no handle, so
     * its device kinds could not be enabled again at the next window */
    const char *keep = a->cfg.devices ? "--devices: contexts met again at an attach have no handle"
                                      : agent_detach_refusal(a);
    if (keep) {
        /* kinds off, CUPTI initialised: CUDA calls may stay slower
         * between windows (up to ~20 % on the H200) */
        a->scope.rest_kept++;
        if (!a->attach.quiet)
            agent_note(a, 1, "periodic windows: CUPTI stays attached between windows (%s): "
                       "kinds off only, CUDA calls may stay slower there", keep);
        a->attach.quiet = true;
        return;
    }
    /* the window thread alone opens windows: none opens meanwhile */
    agent_detach_cupti(a);
    now = agent_real_ns();
    uint64_t ms = a->cfg.stop_timeout_ms ? a->cfg.stop_timeout_ms : 2000;
    uint64_t left = next_open_ns > now + REST_MARGIN_NS ? (next_open_ns - now - REST_MARGIN_NS) / 1000000 : 0;
    bool drained = left && agent_drain(a, (uint32_t)(left < ms ? left : ms), true) == 0;
    if (atomic_load(&a->state) == AGENT_RUNNING)   /* the stop disarms one it raced */
        agent_detach_release(a, drained);
    if (drained)
        a->scope.rest_torn++;
    else
        a->scope.rest_undrained++;
    if (!a->attach.quiet)
        agent_note(a, 0, "periodic windows: after each window CUPTI is detached and torn down "
                   "as a detach does (CUDA runs as without CUPTI), and attached again at the "
                   "next; these notes are said once");
    a->attach.quiet = true;
}

void agent_scope_window_summary(agent *a)
{
    agent_scope_state *s = &a->scope;
    uint32_t rests = s->rest_torn + s->rest_undrained + s->rest_kept + s->rest_short;
    if (!rests)
        return;
    agent_note(a, s->rest_undrained || s->rest_kept ? 1 : 0,
               "periodic windows: %" PRIu32 " rests: torn down after %" PRIu32
               " (cuptiFinalize x%" PRIu32 "); CUPTI kept attached after %" PRIu32
               " (buffers still being stored), %" PRIu32 " (a refusal), %" PRIu32
               " (next window under 2 s)",
               rests, s->rest_torn, agent_attach_finalizes(a), s->rest_undrained, s->rest_kept,
               s->rest_short);
}

/* The schedule changes under range_lock: a window open closes (unscheduled:
 * sched_ns 0), and from none every kind goes off until the first window.
 * @return -1 for a capture range of another mode. */
static int scope_every_change(agent *a, uint32_t period_ms, uint32_t window_ms)
{
    int rc = 0;
    pthread_mutex_lock(&a->scope.lock);
    if (a->cfg.capture == AGENT_CAPTURE_PROFILER || a->cfg.capture == AGENT_CAPTURE_NVTX) {
        rc = -1;
    } else if (a->cfg.capture == AGENT_CAPTURE_EVERY) {
        scope_transition(a, false, 0);   /* no-op outside a window */
    } else if (period_ms) {
        a->scope.kinds = (uint32_t)atomic_load(&a->kinds);
        a->scope.in_range = a->scope.done = false;
        (void)agent_apply_kinds(a, 0);
        a->cfg.capture = AGENT_CAPTURE_EVERY;
        a->scope.period_ms = period_ms;
        a->scope.window_ms = window_ms;
        scope_event(a, agent_real_ns(), 0, false, 0);   /* out of scope until the first window */
    }
    if (rc == 0) {
        a->scope.period_ms = period_ms;
        a->scope.window_ms = window_ms;
    }
    pthread_mutex_unlock(&a->scope.lock);
    return rc;
}

int agent_scope_every(agent *a, uint32_t period_ms, uint32_t window_ms)
{
    if (scope_every_change(a, period_ms, window_ms))
        return -1;
    agent_scope_poll(a);   /* the transitions as epochs, before the request's */
    if (!period_ms) {
        pthread_mutex_lock(&a->scope.lock);
        if (a->cfg.capture == AGENT_CAPTURE_EVERY)
            a->cfg.capture = AGENT_CAPTURE_NONE;   /* the request's kinds apply as they are */
        pthread_mutex_unlock(&a->scope.lock);
    } else {
        a->cfg.capture_period_ms = period_ms;
        a->cfg.capture_window_ms = window_ms;
    }
    agent_window_set(a, period_ms, window_ms);
    return 0;
}

void agent_scope_nvtx(agent *a, bool start)
{
    if (!a->scope.watching || a->cfg.capture != AGENT_CAPTURE_NVTX)
        return;
    pthread_mutex_lock(&a->scope.lock);
    /* the outermost of the matching ranges open (nested, or on several
     * threads) opens and closes the capture range */
    uint32_t *open = &a->scope.nvtx_open;
    if (start ? (*open)++ == 0 : (*open > 0 && --*open == 0))
        scope_transition(a, start, 0);
    pthread_mutex_unlock(&a->scope.lock);
}

int agent_scope_set_kinds(agent *a, uint32_t want)
{
    int rc = 0;
    pthread_mutex_lock(&a->scope.lock);
    a->scope.kinds = want;
    if (a->scope.in_range)
        rc = agent_apply_kinds(a, want);
    pthread_mutex_unlock(&a->scope.lock);
    return rc;
}

int agent_scope_set_api_policy(agent *a, uint32_t mode, const char *include, const char *exclude)
{
    pthread_mutex_lock(&a->scope.lock);   /* a range's callback applies kinds too */
    int rc = agent_api_set_policy(a, mode, include, exclude);
    pthread_mutex_unlock(&a->scope.lock);
    return rc;
}

static int put_two(cupstore_txn *txn, void *arg)
{
    cupstore_epoch *e = arg;
    int rc = cupstore_epoch_put(txn, &e[0]);
    return rc ? rc : cupstore_epoch_put(txn, &e[1]);
}

void agent_scope_poll(agent *a)
{
    if (a->cfg.capture == AGENT_CAPTURE_NONE || !a->session_ok)
        return;
    for (;;) {
        agent_range_ev ev;
        uint32_t lost;
        pthread_mutex_lock(&a->scope.lock);
        bool have = a->scope.ev_tail != a->scope.ev_head;
        if (have)
            ev = a->scope.ev[a->scope.ev_tail++ % AGENT_RANGE_EVS];
        lost = a->scope.ev_lost;
        a->scope.ev_lost = 0;
        bool done = a->scope.done && !a->scope.in_range;
        pthread_mutex_unlock(&a->scope.lock);
        if (lost == UINT32_MAX)
            agent_note(a, 2, "capture range: cannot attach to CUPTI at cudaProfilerStart; "
                       "nothing is collected");
        else if (lost)
            agent_note(a, 2, "capture range: %u range transition(s) not recorded as epochs "
                       "(the ranges came faster than the agent could write them)", lost);
        if (!have) {
            if (done && agent_attached(a) && atomic_load(&a->state) == AGENT_RUNNING) {
                a->scope.watching = false;   /* no range opens any more */
                agent_detach_cupti(a);   /* the last range is over */
                agent_detach_release(a, agent_drain(a, a->cfg.stop_timeout_ms, true) == 0);
            }
            return;
        }
        cupstore_epoch e[2];
        agent_epoch_fill(a, &e[0]);
        e[0].end_ns = ev.ns;
        agent_epoch_open_range(a, &ev);
        agent_epoch_fill(a, &e[1]);
        (void)agent_store_put(a, put_two, e, AGENT_PUT_TRIES);
        if (!ev.window_ms)
            agent_note(a, 0, "capture range %s (epoch %u)", ev.kinds ? "entered" : "left",
                       agent_epoch_id(a));
        else if (ev.attach && !a->attach.quiet)
            agent_note(a, 0, "periodic window: CUPTI attached at the first window in %.1f ms "
                       "(epoch %u)", (double)agent_attach_cost_ns(a) / 1e6, agent_epoch_id(a));
    }
}

bool agent_scope_watching(const agent *a)
{
    return atomic_load(&a->scope.watching);
}

int agent_scope_stop(agent *a)
{
    pthread_mutex_lock(&a->scope.lock);
    if (a->cfg.capture) {
        a->scope.done = true;   /* no range opens any more */
        a->scope.in_range = false;
    }
    int rc = agent_apply_kinds(a, 0);
    pthread_mutex_unlock(&a->scope.lock);
    return rc;
}

void agent_scope_forked(agent *a)
{
    pthread_mutex_init(&a->scope.lock, NULL);
}
