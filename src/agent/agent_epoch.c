/*
 * agent_epoch.c - the open epoch (agent_epoch.h): opened at the start, at
 * each control request and capture range transition, filled into the
 * epoch records the health thread, the control and the stop write.
 */
#include "config.h"

#include <stdio.h>

#include "agent_epoch.h"
#include "agent_int.h"

/* Flags of an epoch opening now, from the agent's state. */
static uint32_t epoch_flags_now(agent *a)
{
    uint32_t f = 0, kinds = (uint32_t)atomic_load(&a->kinds);
    if (agent_attached(a) && kinds) {
        f |= CUPSTORE_EPOCH_ATTACHED;
        if (!agent_attach_callbacks(a))
            f |= CUPSTORE_EPOCH_NO_CALLBACKS;
        if (agent_attach_late(a))
            f |= CUPSTORE_EPOCH_LATE_ATTACH;
    }
    if (!kinds)
        f |= CUPSTORE_EPOCH_OUT_OF_SCOPE;
    return f;
}

void agent_epoch_set_attach(agent *a, bool attached)
{
    a->epoch.attach_ns = attached ? agent_attach_ns(a) : 0;
    a->epoch.attach_cost_ns = attached ? agent_attach_cost_ns(a) : 0;
}

void agent_epoch_begin(agent *a)
{
    a->epoch.id = 1;
    a->epoch.start_ns = agent_real_ns();
    a->epoch.kinds = (uint32_t)atomic_load(&a->kinds);
    if (a->epoch.kinds)
        a->epoch.kinds_on = a->epoch.kinds;
    a->epoch.ctl_gen = 0;
    a->epoch.flags = epoch_flags_now(a);
    a->epoch.pre_written = agent_attach_pre_contexts(a);
    a->epoch.sched_ns = 0;
    a->epoch.period_ms = a->cfg.capture == AGENT_CAPTURE_EVERY ? a->cfg.capture_period_ms : 0;
    a->epoch.window_ms = a->cfg.capture == AGENT_CAPTURE_EVERY ? a->cfg.capture_window_ms : 0;
}

void agent_epoch_open(agent *a, uint64_t now, uint64_t ctl_gen, bool attached_now)
{
    a->epoch.id++;
    a->epoch.start_ns = now;
    a->epoch.kinds = (uint32_t)atomic_load(&a->kinds);
    if (a->epoch.kinds)
        a->epoch.kinds_on = a->epoch.kinds;
    a->epoch.ctl_gen = ctl_gen;
    a->epoch.flags = epoch_flags_now(a);
    a->epoch.sched_ns = 0;   /* a request: no boundary; the schedule, if any, goes on */
    a->epoch.period_ms = a->cfg.capture == AGENT_CAPTURE_EVERY ? a->cfg.capture_period_ms : 0;
    a->epoch.window_ms = a->cfg.capture == AGENT_CAPTURE_EVERY ? a->cfg.capture_window_ms : 0;
    agent_epoch_set_attach(a, attached_now);
    /* contexts learned at the attach belong to the epochs it covers; a
     * fresh attach starts from none (agent_epoch_refresh adds them) */
    if (!agent_attached(a))
        agent_attach_pre_contexts_forget(a);
    a->epoch.pre_written = attached_now ? 0 : agent_attach_pre_contexts(a);
}

void agent_epoch_open_range(agent *a, const agent_range_ev *ev)
{
    a->epoch.id++;
    a->epoch.start_ns = ev->ns;
    a->epoch.kinds = ev->kinds;
    if (a->epoch.kinds)
        a->epoch.kinds_on = a->epoch.kinds;
    a->epoch.ctl_gen = 0;
    a->epoch.flags = ev->kinds ? CUPSTORE_EPOCH_ATTACHED : CUPSTORE_EPOCH_OUT_OF_SCOPE;
    if (ev->attach)
        a->epoch.flags |= CUPSTORE_EPOCH_LATE_ATTACH;
    if (ev->kinds && !agent_attach_callbacks(a))
        a->epoch.flags |= CUPSTORE_EPOCH_NO_CALLBACKS;
    agent_epoch_set_attach(a, ev->attach);
    a->epoch.pre_written = ev->kinds ? agent_attach_pre_contexts(a) : 0;
    a->epoch.sched_ns = ev->sched_ns;
    a->epoch.period_ms = ev->period_ms;
    a->epoch.window_ms = ev->window_ms;
}

static int put_epoch(cupstore_txn *txn, void *arg)
{
    return cupstore_epoch_put(txn, arg);
}

/* The consumer learned contexts that predate the attach (CONTEXT records
 * of the dump): rewrite the open epoch, which now says its drops are not
 * attributed per device, and say so once. */
void agent_epoch_refresh(agent *a)
{
    uint32_t pre = agent_attach_pre_contexts(a);
    cupstore_epoch e;
    if (!a->session_ok || pre == a->epoch.pre_written)
        return;
    a->epoch.pre_written = pre;
    agent_epoch_fill(a, &e);
    (void)agent_store_put(a, put_epoch, &e, AGENT_PUT_TRIES);
    /* periodic windows attach at every window: the epochs say it, the
     * note is said once (the first window's) */
    if (pre && !a->attach.quiet)
        agent_note(a, 1, "epoch %u: %u context(s) existed before CUPTI was attached; CUPTI "
                   "gives no handle for them, so their drops are reported under device none, "
                   "not per device%s", a->epoch.id, pre,
                   a->cfg.capture == AGENT_CAPTURE_EVERY ? " (so in every periodic window)" : "");
}

void agent_epoch_contexts_written(agent *a, uint32_t n)
{
    a->epoch.pre_written = n;
}

void agent_epoch_fill(agent *a, cupstore_epoch *e)
{
    uint32_t pre = a->epoch.pre_written;   /* what the epoch was told */
    uint32_t f = a->epoch.flags;
    if (pre)
        f |= CUPSTORE_EPOCH_DROPS_UNATTRIBUTED;
    if (a->cfg.capture)
        f |= CUPSTORE_EPOCH_CAPTURE;
    *e = (cupstore_epoch){.id = a->epoch.id, .kinds = a->epoch.kinds,
                          .start_ns = a->epoch.start_ns, .ctl_gen = a->epoch.ctl_gen,
                          .flags = f, .attach_ns = a->epoch.attach_ns,
                          .attach_cost_ns = a->epoch.attach_cost_ns,
                          .devices = a->cfg.devices, .pre_contexts = pre,
                          .sched_ns = a->epoch.sched_ns, .period_ms = a->epoch.period_ms,
                          .window_ms = a->epoch.window_ms};
    agent_api_epoch_fill(a, e);
}

/* The open epoch's muted call ids, compact, as meta api_muted.EPOCH
 * (the epoch row carries the policy and the counts). */
int agent_api_muted_put(agent *a, cupstore_txn *txn)
{
    char key[40], list[8192];
    agent_api_muted_list(a, list, sizeof list);
    snprintf(key, sizeof key, "api_muted.%u", a->epoch.id);
    return cupstore_meta_put(txn, key, list[0] ? list : "-");
}

uint32_t agent_epoch_id(const agent *a)
{
    return a->epoch.id;
}

uint32_t agent_epoch_kinds(const agent *a)
{
    return a->epoch.kinds;
}

uint32_t agent_epoch_kinds_on(const agent *a)
{
    return a->epoch.kinds_on;
}
