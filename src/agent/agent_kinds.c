/*
 * agent_kinds.c - turning activity kinds on and off in CUPTI: globally,
 * or for a device kind under a device scope on each context of a device
 * in scope, and on a context created later.  Called at session start, for
 * control requests and scope changes (the health thread) and from the
 * resource callback (a new context); what each kind is in CUPTI is
 * agent_norm's.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "agent_int.h"
#include "agent_norm.h"

/* Enable or disable one cuptop kind: globally, or - for a device kind
 * under a device scope - on every known context of a device in scope
 * (contexts without a handle, learned at a late attach, cannot be). */
static CUptiResult apply_one(agent *a, unsigned k, bool want, bool *skipped)
{
    CUpti_ActivityKind ck[2];
    size_t n = agent_norm_cupti_kinds((cupstore_kind)k, ck);
    CUptiResult first = CUPTI_SUCCESS;
    bool per_ctx = a->cfg.devices && (AGENT_CTX_KINDS & (1u << k)) &&
                   a->cupti.ActivityEnableContext && a->cupti.ActivityDisableContext;

    if (k == CUPSTORE_KIND_RUNTIME || k == CUPSTORE_KIND_DRIVER)
        return agent_api_apply_kind(a, k, want);   /* the API record policy */

    for (size_t i = 0; i < n; i++) {
        CUptiResult r = CUPTI_SUCCESS;
        if (!per_ctx) {
            r = want ? a->cupti.ActivityEnable(ck[i]) : a->cupti.ActivityDisable(ck[i]);
        } else {
            pthread_mutex_lock(&a->ctx_lock);
            for (int c = 0; c < AGENT_CTX_MAX; c++) {
                agent_ctx *x = &a->ctx[c];
                if (!x->live || x->device >= CUPSTORE_DEVICE_MAX ||
                    !(a->cfg.devices & (1u << x->device)))
                    continue;
                if (!x->cu) {
                    *skipped = true;
                    continue;
                }
                CUptiResult rc = want ? a->cupti.ActivityEnableContext(x->cu, ck[i])
                                      : a->cupti.ActivityDisableContext(x->cu, ck[i]);
                if (rc != CUPTI_SUCCESS && r == CUPTI_SUCCESS)
                    r = rc;
            }
            pthread_mutex_unlock(&a->ctx_lock);
        }
        /* MEMCPY2 (peer copies) is optional: not every CUPTI has it. */
        if (i == 0)
            first = r;
    }
    return first;
}

/* Say once why CUPTI refused a kind (kinds_error, a note); for graph and
 * kernel, which CUPTI 13 traces together (the agent's kernel kind is
 * CONCURRENT_KERNEL) but a CUPTI may refuse, say which to choose. */
static void kinds_failed(agent *a, unsigned k, bool want, CUptiResult r, uint32_t cur)
{
    char e[200];
    const uint32_t pair = (1u << CUPSTORE_KIND_GRAPH) | (1u << CUPSTORE_KIND_KERNEL);
    bool graph_pair = want && r == CUPTI_ERROR_NOT_COMPATIBLE && (pair & (1u << k)) &&
                      (cur & pair & ~(1u << k));
    a->kinds_rc = (int)r;
    agent_cupti_describe(&a->cupti, r, e, sizeof e);
    /* the advice first: a note's text is bounded and CUPTI's is long */
    snprintf(a->kinds_error, sizeof a->kinds_error, "cuptiActivity%s(%s)%s: %s",
             want ? "Enable" : "Disable", cupstore_kind_name(k),
             graph_pair ? " refused beside kernel (this CUPTI will not trace graph launches "
                          "as a whole beside kernel records: choose one)" : "", e);
    agent_note(a, 1, "%s", a->kinds_error);
}

int agent_apply_kinds(agent *a, uint32_t mask)
{
    uint32_t cur = (uint32_t)atomic_load(&a->kinds);
    int first_err = 0;
    bool skipped = false;

    if (!agent_attached(a)) {
        atomic_store(&a->kinds, 0);   /* nothing on without CUPTI */
        return 0;
    }
    if (mask != cur)
        agent_launches_switch(a, true);   /* a launch overlapping it is ambiguous */
    /* the kinds going off first, then those coming on: where a CUPTI
     * refuses graph beside kernel, kernel -> graph turns kernel off before */
    for (unsigned i = 0; i < 2 * CUPSTORE_KIND_MAX; i++) {
        unsigned k = i % CUPSTORE_KIND_MAX;
        bool want = mask & (1u << k), have = cur & (1u << k);
        if (want == have || want != (i >= CUPSTORE_KIND_MAX))
            continue;
        CUptiResult r = apply_one(a, k, want, &skipped);
        bool enable_failed = want && r != CUPTI_SUCCESS;
        if (r != CUPTI_SUCCESS && !first_err) {
            first_err = (int)r;
            kinds_failed(a, k, want, r, cur);
        }
        /* a kind CUPTI refused to enable is not on: never recorded as
         * enabled (nor disabled at stop, which would fail the same way) */
        if (want && !enable_failed)
            cur |= 1u << k;
        else if (!want)
            cur &= ~(1u << k);
    }
    atomic_store(&a->kinds, (int)cur);
    agent_launches_switch(a, false);
    if (skipped)
        agent_note(a, 1, "device scope: contexts that existed before the attach have no "
                   "handle, so their device kinds cannot be enabled per context: they are "
                   "not collected");
    return first_err;
}

void agent_apply_ctx_kinds(agent *a, CUcontext cu, uint16_t device, uint32_t mask)
{
    if (!a->cfg.devices || device >= CUPSTORE_DEVICE_MAX || !(a->cfg.devices & (1u << device)) ||
        !a->cupti.ActivityEnableContext)
        return;
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++) {
        CUpti_ActivityKind ck[2];
        if (!(mask & AGENT_CTX_KINDS & (1u << k)))
            continue;
        size_t n = agent_norm_cupti_kinds((cupstore_kind)k, ck);
        for (size_t i = 0; i < n; i++)
            (void)a->cupti.ActivityEnableContext(cu, ck[i]);
    }
}
