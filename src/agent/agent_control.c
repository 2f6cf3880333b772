/*
 * agent_control.c - runtime control requests, taken and applied in one
 * place (agent_control.h): the health thread's agent_control_poll reads
 * the newest request, applies it under stop_lock, opens the epoch the
 * change starts and acknowledges the generation in the same transaction.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "agent_control.h"
#include "agent_int.h"

/* One request being applied: what it found and what it did (for the
 * acknowledgement and the note). */
struct ctl_change {
    const cupstore_control *c;
    uint32_t kinds_before;
    uint32_t pool_before, pool_applied;
    bool attached_now;                /* this request attached to CUPTI   */
    bool every;                       /* it changed the periodic windows  */
    bool ledger_was;                  /* the ledger registered launches   */
    int32_t result;                   /* 0, or the first error            */
    char api_from[CUPSTORE_API_POLICY_MAX], api_to[CUPSTORE_API_POLICY_MAX];
};

struct ctl_arg {
    agent *a;
    const cupstore_control *c;
    int32_t result;
    uint64_t now;
    uint32_t pool_applied;
    cupstore_epoch old, e;    /* the epoch closed, the one opened */
};

static int put_ctl(cupstore_txn *txn, void *arg)
{
    struct ctl_arg *x = arg;
    int rc = cupstore_epoch_put(txn, &x->old);
    if (rc == 0)
        rc = cupstore_epoch_put(txn, &x->e);
    if (rc == 0)
        rc = agent_api_muted_put(x->a, txn);
    if (rc == 0)
        rc = cupstore_control_ack(txn, x->c->gen, x->now, x->result, x->pool_applied);
    return rc;
}

/* The newest request, when its generation is not applied yet (noted as
 * seen: the health row shows it pending until it is). */
static int control_read(agent *a, void *arg)
{
    cupstore_txn *txn;
    int rc = cupstore_txn_begin(a->env, false, &txn);
    if (rc)
        return rc;
    rc = cupstore_control_latest(txn, arg);
    cupstore_txn_abort(txn);
    return rc;
}

static bool control_take(agent *a, cupstore_control *c)
{
    int rc = agent_guard_run(a, control_read, c);   /* reads the mapping */
    if (rc || c->gen <= atomic_load(&a->ctl.gen_applied))
        return false;
    atomic_store(&a->ctl.gen_seen, c->gen);
    return true;
}

/* Every kind is off: detach, then the teardown once what the detach
 * flushed is stored. */
static void control_detach(agent *a)
{
    uint32_t tmo = a->cfg.stop_timeout_ms ? a->cfg.stop_timeout_ms : 2000;
    agent_detach_cupti(a);
    /* acknowledge only once the flushed buffers are stored and committed:
     * a caller that reads the store after `control --detach` sees every
     * record (bench/gpu/attach.sh read 14032 of 518900 short on the H200
     * with no wait, 13740 of 402100 when the wait did not include the
     * consumer's open batch) */
    bool drained = agent_drain(a, tmo, true) == 0;
    if (!drained)
        agent_note(a, 1, "detach: the flushed buffers were not all stored within %u ms "
                         "of the acknowledgement; they are stored later", tmo);
    agent_detach_release(a, drained);   /* then the teardown (or unsubscribe) */
}

/* The kinds asked for.  Under a capture range they are the ranges' kinds
 * (on now only inside one); otherwise the first kind on attaches (late),
 * and turning every kind off detaches. */
static void control_kinds(agent *a, uint32_t want, struct ctl_change *x)
{
    char why[640] = "";
    if (a->cfg.capture) {
        x->result = agent_scope_set_kinds(a, want);
        return;
    }
    if (want && !agent_attached(a)) {
        if (agent_attach(a, true, why, sizeof why) == 0) {
            x->attached_now = true;
        } else {
            x->result = -1;
            agent_note(a, 1, "cannot attach to CUPTI: %s; staying dormant", why);
        }
    }
    if (!agent_attached(a))
        return;
    (void)a->cupti.ActivityFlushAll(0);
    x->result = agent_apply_kinds(a, want);
    if (!want)
        control_detach(a);
}

/* Periodic windows on, changed or off (before the kinds: from none, the
 * request's kinds become the windows' kinds; off, they apply at once). */
static void control_every(agent *a, struct ctl_change *x)
{
    const cupstore_control *c = x->c;
    bool on = c->every_set == CUPSTORE_CTL_EVERY_ON;
    if (!c->every_set)
        return;
    if (on && !(c->every_window_ms >= AGENT_EVERY_WINDOW_MIN_MS &&
                c->every_window_ms < c->every_period_ms &&
                c->every_period_ms <= AGENT_EVERY_PERIOD_MAX_MS)) {
        x->result = -1;
        agent_note(a, 1, "control: periodic windows %u ms every %u ms refused (want %u ms <= "
                   "window < period <= 24 h)", c->every_window_ms, c->every_period_ms,
                   AGENT_EVERY_WINDOW_MIN_MS);
        return;
    }
    if (agent_scope_every(a, on ? c->every_period_ms : 0, on ? c->every_window_ms : 0)) {
        x->result = -1;
        agent_note(a, 1, "control: periodic windows refused: this session's capture range "
                   "(cudaProfilerApi or nvtx:) stays");
        return;
    }
    x->every = true;
}

/* The API record policy: applied to the API kinds on now, and to those a
 * later request turns on. */
static void control_api(agent *a, struct ctl_change *x)
{
    const cupstore_control *c = x->c;
    agent_api_policy_text(a, x->api_from, sizeof x->api_from);
    if (!c->api_mode && !c->api_set)
        return;
    int r = agent_scope_set_api_policy(
        a, c->api_mode, (c->api_set & CUPSTORE_CTL_API_INCLUDE) ? c->api_include : NULL,
        (c->api_set & CUPSTORE_CTL_API_EXCLUDE) ? c->api_exclude : NULL);
    if (r && !x->result)
        x->result = r;
    agent_api_policy_text(a, x->api_to, sizeof x->api_to);
}

/* The launch ledger on or off from now (agent_launches_control). */
static void control_ledger(agent *a, struct ctl_change *x)
{
    char why[160];
    x->ledger_was = atomic_load(&a->launches.registering);
    if (!x->c->ledger_set)
        return;
    bool on = x->c->ledger_set == CUPSTORE_CTL_LEDGER_ON;
    if (agent_launches_control(a, on, why, sizeof why) != 0) {
        if (!x->result)
            x->result = -1;
        agent_note(a, 1, "control: launch ledger not turned on: %s", why);
    }
}

/* The operator's pool limit (clamped to 1..AGENT_POOL_MAX) replaces the
 * automatic one for the rest of the session.  Lowering it hands out no
 * buffer above the limit; buffers already allocated are kept. */
static void control_pool(agent *a, const cupstore_control *c)
{
    if (!c->pool || !a->pool_ready)
        return;
    atomic_store(&a->pool_pinned, true);
    agent_pool_set_limit(&a->pool, c->pool);
}

/* The note that says what the request changed. */
static void control_note(agent *a, const struct ctl_change *x)
{
    char from[128], to[128], pool[64] = "";
    char api[2 * CUPSTORE_API_POLICY_MAX + 32] = "", every[64] = "", ledger[160] = "";
    cupstore_kinds_format(x->kinds_before, from, sizeof from);
    cupstore_kinds_format((uint32_t)atomic_load(&a->kinds), to, sizeof to);
    if (x->c->pool)
        snprintf(pool, sizeof pool, ", buffer pool %u -> %u", x->pool_before, x->pool_applied);
    if (x->api_to[0])
        snprintf(api, sizeof api, ", API records %s -> %s", x->api_from, x->api_to);
    if (x->every && x->c->every_set == CUPSTORE_CTL_EVERY_ON) {
        char ev[40];
        cupstore_every_format(x->c->every_period_ms, x->c->every_window_ms, ev, sizeof ev);
        snprintf(every, sizeof every, ", capture range every:%s", ev);
    } else if (x->every) {
        snprintf(every, sizeof every, ", capture range none (periodic windows off)");
    }
    bool led = atomic_load(&a->launches.registering);
    if (x->c->ledger_set && led != x->ledger_was)
        snprintf(ledger, sizeof ledger, ", launch ledger %s (launches %s are out of its scope: "
                 "it covers part of the session, its unrecorded count is a lower bound)",
                 led ? "on" : "off", led ? "made before now" : "made from now");
    else if (x->c->ledger_set)
        snprintf(ledger, sizeof ledger, ", launch ledger %s (unchanged)", led ? "on" : "off");
    agent_note(a, 0, "control generation %llu applied: kinds %s -> %s%s%s%s%s (epoch %u)%s",
               (unsigned long long)x->c->gen, from, to, pool, api, every, ledger,
               agent_epoch_id(a), x->result ? " with errors" : "");
}

void agent_control_poll(agent *a)
{
    cupstore_control c;
    struct ctl_change x = {.c = &c};

    if (!control_take(a, &c))
        return;
    /* One scope change at a time with the stop protocol; when a stop runs
     * (it holds the lock while it joins this thread) try again later. */
    if (!agent_stop_trylock(a))
        return;
    if (atomic_load(&a->state) != AGENT_RUNNING) {
        agent_stop_unlock(a);
        return;
    }
    x.kinds_before = (uint32_t)atomic_load(&a->kinds);
    struct ctl_arg ack = {.a = a, .c = &c};
    agent_epoch_fill(a, &ack.old);   /* as it was: the request changes the API policy */
    x.pool_before = a->pool_ready ? atomic_load(&a->pool.limit) : 0;
    control_every(a, &x);
    control_ledger(a, &x);   /* before an attach the kinds make: it enables the calls */
    control_kinds(a, c.kinds & CUPSTORE_KINDS_EVERY, &x);
    control_api(a, &x);
    control_pool(a, &c);
    x.pool_applied = a->pool_ready ? atomic_load(&a->pool.limit) : 0;
    ack.result = x.result;
    ack.now = agent_real_ns();
    ack.pool_applied = x.pool_applied;
    ack.old.end_ns = ack.now;
    agent_epoch_open(a, ack.now, c.gen, x.attached_now);
    agent_epoch_fill(a, &ack.e);
    int rc = agent_store_put(a, put_ctl, &ack, AGENT_PUT_TRIES);
    atomic_store(&a->ctl.gen_applied, c.gen);
    agent_stop_unlock(a);
    if (x.attached_now)
        agent_note(a, 0, "attached to CUPTI in %.1f ms (epoch %u)%s",
                   (double)agent_attach_cost_ns(a) / 1e6, agent_epoch_id(a),
                   agent_attach_callbacks(a) ? "" : ": no resource callbacks (activity records only)");
    if (rc)
        agent_log(a, 1, "cannot acknowledge control generation %llu: %s",
                  (unsigned long long)c.gen, cupstore_strerror(rc));
    control_note(a, &x);
}

void agent_control_reset(agent *a)
{
    atomic_store(&a->ctl.gen_applied, 0);
    atomic_store(&a->ctl.gen_seen, 0);
}

void agent_control_gens(const agent *a, uint64_t *applied, uint64_t *seen)
{
    *applied = atomic_load(&a->ctl.gen_applied);
    *seen = atomic_load(&a->ctl.gen_seen);
}
