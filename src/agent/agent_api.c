/*
 * agent_api.c - the API record policy (agent_api.h): the runtime and
 * driver kinds turned on whole (`all`, or a CUPTI without the per-call
 * functions) or call id by call id.
 *
 * CUPTI's precedence (cupti_activity.h): enabling the whole kind after
 * per-call settings overrides them.  So a filtered kind is never enabled
 * whole: the kind is disabled and each call id of the table is set with
 * cuptiActivityEnableRuntimeApi/DriverApi(cbid, 1 or 0).  Call ids the
 * table does not know (a CUPTI newer than the headers cuptop was built
 * with) stay off under a filter.  Runs on the thread that applies kinds
 * (start, health thread under stop_lock, a capture-range callback).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "agent_api.h"
#include "agent_int.h"

#define API_ROWS (sizeof ((agent_api_state *)0)->on)

static bool row_recorded(const agent *a, const agent_api_entry *e)
{
    bool on = a->api.mode == CUPSTORE_API_ALL || (a->api.mode == CUPSTORE_API_GPU && e->gpu);
    if (a->api.include[0] && agent_config_globs_match(a->api.include, e->name))
        on = true;
    if (a->api.exclude[0] && agent_config_globs_match(a->api.exclude, e->name))
        on = false;
    return on;
}

/* Whole kind on: `all` without excludes (every call, call ids newer than
 * the table included). */
static bool policy_whole(const agent *a)
{
    return a->api.mode == CUPSTORE_API_ALL && !a->api.exclude[0];
}

static void count_muted(agent *a)
{
    a->api.muted[0] = a->api.muted[1] = 0;
    if (policy_whole(a) || a->api.percall_missing)
        return;
    for (unsigned i = 0; i < agent_api_table_count; i++)
        if (!row_recorded(a, &agent_api_table[i]))
            a->api.muted[agent_api_table[i].domain & 1]++;
}

/* Every call id of the domain muted by the policy: the kind is on and
 * yields nothing, by the agent's own doing; said in a note, never silent. */
static void note_all_muted(agent *a, unsigned dom)
{
    for (unsigned i = 0; i < agent_api_table_count; i++)
        if (agent_api_table[i].domain == dom && row_recorded(a, &agent_api_table[i]))
            return;
    char pol[CUPSTORE_API_GLOBS_MAX * 2 + 64];
    agent_api_policy_text(a, pol, sizeof pol);
    agent_note(a, 1, "%s records are on but the API record policy %s mutes every %s call id: "
               "no %s API records will come (muted, not lost; --api all or --api-include "
               "records them)", dom ? "driver" : "runtime", pol, dom ? "driver" : "runtime",
               dom ? "driver" : "runtime");
}

CUptiResult agent_api_apply_kind(agent *a, unsigned kind, bool want)
{
    /* Every path that turns a kind on applies the policy.  One that never
     * set it (api_mode 0 would mute every call id) gets the configured
     * one here, so an API kind on is never silently empty. */
    if (want && !a->api.mode) {
        a->api.mode = a->cfg.api_mode ? a->cfg.api_mode : CUPSTORE_API_GPU;
        snprintf(a->api.include, sizeof a->api.include, "%s", a->cfg.api_include);
        snprintf(a->api.exclude, sizeof a->api.exclude, "%s", a->cfg.api_exclude);
    }
    unsigned dom = kind == CUPSTORE_KIND_DRIVER;
    CUpti_ActivityKind ck = dom ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
    __typeof__(a->cupti.ActivityEnableRuntimeApi) fn =
        dom ? a->cupti.ActivityEnableDriverApi : a->cupti.ActivityEnableRuntimeApi;
    unsigned rows = agent_api_table_count < API_ROWS ? agent_api_table_count : API_ROWS;

    if (!want) {
        if (a->api.filtered[dom] && fn)
            for (unsigned i = 0; i < rows; i++)
                if (agent_api_table[i].domain == dom && a->api.on[i]) {
                    (void)fn(agent_api_table[i].cbid, 0);
                    a->api.on[i] = 0;
                }
        a->api.filtered[dom] = false;
        return a->cupti.ActivityDisable(ck);
    }
    if (!policy_whole(a) && a->api.cuda_first && !a->api.percall_missing) {
        a->api.percall_missing = true;
        agent_note(a, 1, "API record policy %s: CUPTI started after CUDA in this process "
                   "(an attach), and CUPTI then records nothing for call ids enabled one "
                   "by one (CUPTI 13.0.1 on the H200), so every %s API call is recorded "
                   "(as with --api all)", cupstore_api_mode_name(a->api.mode),
                   dom ? "driver" : "runtime");
    }
    if (!policy_whole(a) && !fn && !a->api.percall_missing) {
        a->api.percall_missing = true;
        agent_note(a, 1, "API record policy %s: this CUPTI lacks cuptiActivityEnable%sApi, "
                   "so every %s API call is recorded (as with --api all)",
                   cupstore_api_mode_name(a->api.mode), dom ? "Driver" : "Runtime",
                   dom ? "driver" : "runtime");
    }
    if (policy_whole(a) || a->api.percall_missing) {
        a->api.filtered[dom] = false;
        a->api.whole[dom] = true;
        a->api.unfiltered = !policy_whole(a);
        count_muted(a);
        return a->cupti.ActivityEnable(ck);
    }
    /* filtered: the whole kind off (it would override), then call by call.
     * Disabling the kind whole overrides the per-call settings made before
     * it as enabling does (cupti_activity.h; a call id left as it was went
     * silent: `control --api-include` on a gpu session, a forked child's
     * first session), so every row that is to be on is set again, and a
     * row that was on is set off; all rows when the kind was whole since
     * (its per-call state is then unknown). */
    (void)a->cupti.ActivityDisable(ck);
    bool all_rows = a->api.whole[dom], first = true;
    CUptiResult err = CUPTI_SUCCESS;
    for (unsigned i = 0; i < rows; i++) {
        const agent_api_entry *e = &agent_api_table[i];
        if (e->domain != dom)
            continue;
        uint8_t on = row_recorded(a, e);
        if (!all_rows && !on && !a->api.on[i])
            continue;
        CUptiResult r = fn(e->cbid, on);
        if (r != CUPTI_SUCCESS && first) {
            /* the function is there but does nothing here (older CUPTI,
             * or the simulator set to an older API version) */
            char d[200];
            agent_cupti_describe(&a->cupti, r, d, sizeof d);
            a->api.percall_missing = true;
            agent_note(a, 1, "API record policy %s: cuptiActivityEnable%sApi failed (%s), so "
                       "every runtime and driver API call is recorded (as with --api all)",
                       cupstore_api_mode_name(a->api.mode), dom ? "Driver" : "Runtime", d);
            return agent_api_apply_kind(a, kind, true);
        }
        first = false;
        if (r == CUPTI_SUCCESS)
            a->api.on[i] = on;
        else if (err == CUPTI_SUCCESS)
            err = r;
    }
    a->api.whole[dom] = false;
    a->api.filtered[dom] = true;
    a->api.unfiltered = false;
    count_muted(a);
    note_all_muted(a, dom);
    return err;
}

void agent_api_cupti_start(agent *a, bool after_cuda)
{
    a->api.cuda_first = after_cuda;
    if (!after_cuda)
        return;
    /* the per-call state CUPTI had is gone with the restart: set every row
     * again (whole kinds from now on) */
    a->api.whole[0] = a->api.whole[1] = false;
    a->api.filtered[0] = a->api.filtered[1] = false;
    memset(a->api.on, 0, sizeof a->api.on);
}

int agent_api_set_policy(agent *a, uint32_t mode, const char *include, const char *exclude)
{
    int first = 0;
    if (mode)
        a->api.mode = mode;
    if (include)
        snprintf(a->api.include, sizeof a->api.include, "%s", include);
    if (exclude)
        snprintf(a->api.exclude, sizeof a->api.exclude, "%s", exclude);
    count_muted(a);
    if (!agent_attached(a))
        return 0;
    uint32_t on = (uint32_t)atomic_load(&a->kinds);
    for (unsigned k = CUPSTORE_KIND_RUNTIME; k <= CUPSTORE_KIND_DRIVER; k++)
        if (on & (1u << k)) {
            CUptiResult r = agent_api_apply_kind(a, k, true);
            if (r != CUPTI_SUCCESS && !first)
                first = (int)r;
        }
    return first;
}

void agent_api_policy_text(const agent *a, char *buf, size_t len)
{
    agent_config_api_format(a->api.mode, a->api.include, a->api.exclude, buf, len);
}

void agent_api_muted_list(const agent *a, char *buf, size_t len)
{
    size_t off = 0;
    if (!len)
        return;
    buf[0] = '\0';
    if (policy_whole(a) || a->api.percall_missing)
        return;
    for (unsigned dom = 0; dom < 2; dom++) {
        int lo = -1, prev = -2;
        int n = snprintf(buf + off, len - off, "%s%s", off ? " " : "", dom ? "driver " : "runtime ");
        if (n < 0 || (size_t)n >= len - off)
            return;
        off += (size_t)n;
        bool any = false;
        for (unsigned i = 0; i <= agent_api_table_count; i++) {
            const agent_api_entry *e = i < agent_api_table_count ? &agent_api_table[i] : NULL;
            bool muted = e && e->domain == dom && !row_recorded(a, e);
            int id = muted ? (int)e->cbid : -1;
            if (muted && id == prev + 1) {
                prev = id;
                continue;
            }
            if (lo >= 0) {   /* close the run lo..prev */
                n = lo == prev ? snprintf(buf + off, len - off, "%s%d", any ? "," : "", lo)
                               : snprintf(buf + off, len - off, "%s%d-%d", any ? "," : "", lo, prev);
                if (n < 0 || (size_t)n >= len - off)
                    return;
                off += (size_t)n;
                any = true;
                lo = -1;
            }
            if (muted)
                lo = prev = id;
        }
        if (!any && off + 2 < len) {
            buf[off++] = '-';
            buf[off] = '\0';
        }
    }
}

void agent_api_epoch_fill(const agent *a, cupstore_epoch *e)
{
    e->api_mode = a->api.mode;
    e->api_muted[0] = a->api.muted[0];
    e->api_muted[1] = a->api.muted[1];
    if (a->api.unfiltered)
        e->flags |= CUPSTORE_EPOCH_API_UNFILTERED;
    agent_api_policy_text(a, e->api_policy, sizeof e->api_policy);
}
