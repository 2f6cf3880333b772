/*
 * export_chrome_meta.c - what the chrome export writes besides the records:
 * the health rows as counters, losses and epochs as instants, the trace's
 * metadata (otherData: verdict, versions, devices, provenance, a job's
 * processes) and the NVTX ranges from the range table.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export_int.h"
#include "export_chrome_int.h"

/* ---- Health, losses, epochs, metadata ------------------------------------- */

int chrome_on_health(const cupstore_health *h, void *arg)
{
    chrome *c = arg;
    xout *o = c->o;
    uint64_t ns = h->second * 1000000000ull;
    if (ns < c->x->base_ns)
        return 0;
    uint64_t hp = chrome_health_pid(c);
    chrome_process_seen(c, hp);
    chrome_ev_begin(c);
    XOUT_LIT(o, "\"ph\":\"C\",\"name\":\"records/s\"");
    PUT_KV_U64(o, ",\"pid\":", hp);
    chrome_put_ts(c, ns);
    XOUT_LIT(o, ",\"args\":{");
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
        xout_printf(o, "%s\"%s\":%llu", k ? "," : "", cupstore_kind_name(k),
                    (unsigned long long)h->records_by_kind[k]);
    XOUT_LIT(o, "}}");
    chrome_ev_begin(c);
    XOUT_LIT(o, "\"ph\":\"C\",\"name\":\"losses/s\"");
    PUT_KV_U64(o, ",\"pid\":", hp);
    chrome_put_ts(c, ns);
    XOUT_LIT(o, ",\"args\":{");
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
        xout_printf(o, "%s\"%s\":%llu", l ? "," : "", cupstore_loss_name(l),
                    (unsigned long long)h->loss[l]);
    XOUT_LIT(o, "}}");
    chrome_ev_begin(c);
    xout_printf(o, "\"ph\":\"C\",\"name\":\"buffers\",\"pid\":%llu", (unsigned long long)hp);
    chrome_put_ts(c, ns);
    xout_printf(o, ",\"args\":{\"requested\":%llu,\"declined\":%llu,\"completed\":%llu,"
                   "\"consumed\":%llu,\"outstanding\":%u,\"pool_limit\":%u}}",
                (unsigned long long)h->buf_requested, (unsigned long long)h->buf_declined,
                (unsigned long long)h->buf_completed, (unsigned long long)h->buf_consumed,
                h->buf_outstanding, h->pool_limit);
    chrome_ev_begin(c);
    xout_printf(o, "\"ph\":\"C\",\"name\":\"queue\",\"pid\":%llu", (unsigned long long)hp);
    chrome_put_ts(c, ns);
    xout_printf(o, ",\"args\":{\"depth\":%u,\"high_water\":%u,\"capacity\":%u}}",
                h->queue_depth, h->queue_high_water, h->queue_capacity);
    chrome_ev_begin(c);
    xout_printf(o, "\"ph\":\"C\",\"name\":\"completion callback (ns)\",\"pid\":%llu",
                (unsigned long long)hp);
    chrome_put_ts(c, ns);
    xout_printf(o, ",\"args\":{\"p50\":%u,\"p99\":%u,\"max\":%u}}", h->cmp_lat.p50_ns,
                h->cmp_lat.p99_ns, h->cmp_lat.max_ns);
    return o->err;
}

int chrome_on_loss(const cupstore_loss_row *r, void *arg)
{
    chrome *c = arg;
    xout *o = c->o;
    uint64_t ns = r->second * 1000000000ull;
    if (ns < c->x->base_ns || !r->count)
        return 0;
    chrome_process_seen(c, chrome_health_pid(c));
    chrome_ev_begin(c);
    xout_printf(o, "\"ph\":\"i\",\"s\":\"p\",\"cat\":\"loss\",\"name\":\"loss: %s\",\"pid\":%llu,"
                   "\"tid\":0",
                cupstore_loss_name(r->loss), (unsigned long long)chrome_health_pid(c));
    chrome_put_ts(c, ns);
    xout_printf(o, ",\"args\":{\"class\":\"%s\",\"count\":%llu,\"kind\":\"%s\",\"device\":",
                cupstore_loss_name(r->loss), (unsigned long long)r->count,
                r->kind == CUPSTORE_KIND_ALL ? "all" : cupstore_kind_name(r->kind));
    if (r->device == CUPSTORE_DEVICE_NONE)
        XOUT_LIT(o, "null");
    else
        xout_u64(o, r->device);
    xout_printf(o, ",\"estimate\":%s}}", r->estimate ? "true" : "false");
    return o->err;
}

int chrome_on_epoch(const cupstore_epoch *e, void *arg)
{
    struct epochs_arg *a = arg;
    xout *o = a->c->o;
    char kinds[160];
    cupstore_kinds_format(e->kinds, kinds, sizeof kinds);
    if (a->events) {
        uint64_t end = e->end_ns ? e->end_ns : UINT64_MAX;
        if (e->start_ns > a->c->x->to_ns || end < a->c->x->from_ns ||
            e->start_ns < a->c->x->base_ns)
            return 0;
        chrome_process_seen(a->c, chrome_health_pid(a->c));
        chrome_ev_begin(a->c);
        xout_printf(o, "\"ph\":\"i\",\"s\":\"%s\",\"cat\":\"epoch\",\"name\":\"epoch %u: %s\","
                       "\"pid\":%llu,\"tid\":0",
                    a->c->group ? "p" : "g", e->id, kinds,
                    (unsigned long long)chrome_health_pid(a->c));
        chrome_put_ts(a->c, e->start_ns);
        XOUT_LIT(o, "}");
        return o->err;
    }
    xout_printf(o, "%s{\"id\":%u,\"kinds\":\"%s\",\"start_ns\":%llu,\"end_ns\":%llu,"
                   "\"ctl_gen\":%llu}",
                a->first ? "" : ",", e->id, kinds, (unsigned long long)e->start_ns,
                (unsigned long long)e->end_ns, (unsigned long long)e->ctl_gen);
    a->first = false;
    return 0;
}

static void meta_str(chrome *c, cupstore_txn *txn, const char *key, const char *json_key)
{
    char *v = NULL;
    xout_printf(c->o, ",\"%s\":", json_key);
    if (cupstore_meta_get(txn, key, &v) == 0 && v)
        xout_json_str(c->o, v, strlen(v));
    else
        XOUT_LIT(c->o, "null");
    free(v);
}

/* Track names: the devices the agent recorded (model_prov: CUPTI's
 * DEVICE records, or the older "devices" key). */
void chrome_load_devices(chrome *c)
{
    const model_prov *p = c->x->sum.prov;
    for (unsigned d = 0; p && d < CUPSTORE_DEVICE_MAX; d++)
        if (p->dev[d].known)
            snprintf(c->devnames[d], sizeof c->devnames[d], "%s", p->dev[d].name);
}

static void json_or_null(xout *o, const char *s)
{
    if (s)
        xout_json_str(o, s, strlen(s));
    else
        XOUT_LIT(o, "null");
}

/* Provenance for trace viewers: Kineto's names where Kineto has one
 * (deviceProperties, cuda_driver_version, cuda_runtime_version,
 * cupti_version), the agent's strings as values (null: unknown). */
static void write_provenance(chrome *c)
{
    const model_prov *p = c->x->sum.prov;
    xout *o = c->o;
    XOUT_LIT(o, ",\"label\":");
    json_or_null(o, p ? p->label : NULL);
    xout_printf(o, ",\"simulated\":%s", p && p->simulated ? "true" : "false");
    XOUT_LIT(o, ",\"cuda_driver_version\":");
    json_or_null(o, p ? p->v[MODEL_V_CUDA_DRIVER] : NULL);
    XOUT_LIT(o, ",\"cuda_runtime_version\":");
    json_or_null(o, p ? p->v[MODEL_V_CUDA_RUNTIME] : NULL);
    XOUT_LIT(o, ",\"cupti_version\":");
    json_or_null(o, p ? p->v[MODEL_V_CUPTI] : NULL);
    XOUT_LIT(o, ",\"driver_version\":");
    json_or_null(o, p ? p->v[MODEL_V_DRIVER] : NULL);
    XOUT_LIT(o, ",\"deviceProperties\":");
    chrome_write_device_props(c);
}

/* The session's devices as Kineto's deviceProperties array (id, name,
 * totalGlobalMem, computeMajor, computeMinor, numSms where CUPTI said). */
void chrome_write_device_props(chrome *c)
{
    const model_prov *p = c->x->sum.prov;
    xout *o = c->o;
    XOUT_LIT(o, "[");
    for (unsigned d = 0, n = 0; p && d < CUPSTORE_DEVICE_MAX; d++) {
        const model_device *v = &p->dev[d];
        if (!v->known)
            continue;
        xout_printf(o, "%s{\"id\":%u,\"name\":", n++ ? "," : "", d);
        xout_json_str(o, v->name, strlen(v->name));
        if (v->from_cupti) {
            unsigned maj = 0, min = 0;
            (void)sscanf(v->cc, "%u.%u", &maj, &min);
            xout_printf(o, ",\"totalGlobalMem\":%llu,\"computeMajor\":%u,\"computeMinor\":%u,"
                           "\"numSms\":%u,\"uuid\":",
                        (unsigned long long)v->memory, maj, min, v->sm);
            xout_json_str(o, v->uuid, strlen(v->uuid));
            xout_printf(o, ",\"migEnabled\":%s,\"simulated\":%s}",
                        v->mig < 0 ? "null" : v->mig ? "true" : "false",
                        v->simulated ? "true" : "false");
        } else {
            XOUT_LIT(o, "}");
        }
    }
    XOUT_LIT(o, "]");
}

int chrome_write_metadata(chrome *c, cupstore_txn *txn)
{
    export_ctx *x = c->x;
    const model_summary *s = &x->sum;
    xout *o = c->o;
    char kinds[160];

    xout_puts(o, "\"otherData\":{\"tool\":\"cuptop\",\"cuptop_version\":\"" PACKAGE_VERSION "\"");
    XOUT_LIT(o, ",\"session\":");
    xout_json_str(o, s->id, strlen(s->id));
    xout_printf(o, ",\"pid\":%d", s->pid);
    XOUT_LIT(o, ",\"host\":");
    xout_json_str(o, s->host, strlen(s->host));
    XOUT_LIT(o, ",\"command\":");
    xout_json_str(o, s->cmdline, strlen(s->cmdline));
    xout_printf(o, ",\"base_ns\":%llu,\"time_unit\":\"ts and dur are microseconds after base_ns\"",
                (unsigned long long)x->base_ns);
    xout_printf(o, ",\"window\":{\"from_ns\":%llu,\"to_ns\":%llu}", (unsigned long long)x->from_ns,
                (unsigned long long)x->to_ns);
    xout_printf(o, ",\"state\":\"%s\",\"verdict\":\"%s\",\"count_only\":%s",
                model_state_name(s->state), model_verdict_name(s),
                s->count_only ? "true" : "false");
    if (s->count_only)
        XOUT_LIT(o, ",\"records_note\":\"count-only session (CUPTOP_SINK=null): the agent "
                    "counted every record but stored none, by design; this trace has no record "
                    "events, only the per-second counters\"");
    export_range_json(x, o);
    XOUT_LIT(o, ",\"reasons\":[");
    for (size_t i = 0; i < s->nreasons; i++) {
        const model_reason *r = &s->reasons[i];
        xout_printf(o, "%s{\"class\":\"%s\",\"count\":%llu,\"first_second\":%llu,"
                       "\"last_second\":%llu,\"seconds_affected\":%llu,\"text\":",
                    i ? "," : "", model_reason_name(r->reason), (unsigned long long)r->count,
                    (unsigned long long)r->first_second, (unsigned long long)r->last_second,
                    (unsigned long long)r->seconds_affected);
        xout_json_str(o, r->text, strlen(r->text));
        xout_putc(o, '}');
    }
    XOUT_LIT(o, "],\"loss\":{");
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
        xout_printf(o, "%s\"%s\":%llu", l ? "," : "", cupstore_loss_name(l),
                    (unsigned long long)s->loss[l]);
    XOUT_LIT(o, "},\"records_by_kind\":{");
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
        xout_printf(o, "%s\"%s\":%llu", k ? "," : "", cupstore_kind_name(k),
                    (unsigned long long)s->records_by_kind[k]);
    cupstore_kinds_format(s->kinds_enabled, kinds, sizeof kinds);
    xout_printf(o, "},\"kinds_enabled\":\"%s\"", kinds);
    meta_str(c, txn, "config", "config");
    meta_str(c, txn, "devices", "devices");
    write_provenance(c);
    xout_puts(o, ",\"versions\":{\"cuptop\":\"" PACKAGE_VERSION "\"");
    meta_str(c, txn, "agent_version", "agent");
    meta_str(c, txn, "cuda_version", "cuda");
    meta_str(c, txn, "cuda_runtime_version", "cuda_runtime");
    meta_str(c, txn, "cupti_version", "cupti");
    meta_str(c, txn, "cupti_api_version", "cupti_api");
    meta_str(c, txn, "driver_version", "driver");
    XOUT_LIT(o, "},\"epochs\":[");
    struct epochs_arg ea = {.c = c, .first = true, .events = false};
    int rc = cupstore_epoch_scan(txn, chrome_on_epoch, &ea);
    XOUT_LIT(o, "]}");
    return rc;
}

void export_range_json(const export_ctx *x, xout *o)
{
    const export_opts *eo = x->o;
    if (!eo->range_name)
        return;
    XOUT_LIT(o, ",\"range\":{\"name\":");
    xout_json_str(o, eo->range_name, eo->range_name_len);
    XOUT_LIT(o, ",\"domain\":");
    xout_json_str(o, eo->range_domain ? eo->range_domain : "",
                  eo->range_domain ? strlen(eo->range_domain) : 0);
    xout_printf(o, ",\"id\":%u,\"nth\":%llu,\"open\":%s}", eo->range_id,
                (unsigned long long)eo->range_nth, eo->range_open ? "true" : "false");
}

/* Does the session have a range table (an agent that pairs NVTX ranges)?
 * Its MARKER records are then drawn as the ranges they make. */
bool chrome_has_range_table(export_ctx *x)
{
    cupstore_txn *txn;
    model_ranges *m = NULL;
    if (cupstore_txn_begin(x->env, false, &txn) != 0)
        return false;
    int rc = model_ranges_load(txn, NULL, &m);
    cupstore_txn_abort(txn);
    bool any = rc == 0 && m && m->ninst > 0;
    model_ranges_free(m);
    return any;
}

/* NVTX ranges of the window as slices on their CPU thread's track
 * (category "nvtx"; nested ranges nest, as Kineto draws user annotations);
 * open ranges end at the window's end (args.open), marks are instants. */
int chrome_write_nvtx(chrome *c)
{
    export_ctx *x = c->x;
    xout *o = c->o;
    cupstore_txn *txn;
    model_ranges *m = NULL;
    int rc = cupstore_txn_begin(x->env, false, &txn);
    if (rc)
        return rc;
    rc = model_ranges_load(txn, NULL, &m);
    cupstore_txn_abort(txn);
    if (rc)
        return rc;
    for (size_t i = 0; i < m->ninst; i++) {
        const model_range_inst *r = &m->inst[i];
        if (r->name == UINT32_MAX || !r->start_ns)
            continue;
        bool open = model_range_open(r), point = r->flags & CUPSTORE_RANGE_POINT;
        uint64_t s = r->start_ns, e = open ? x->to_ns : r->end_ns;
        if (s > x->to_ns || e < x->from_ns || e < s)
            continue;
        if (s < x->from_ns)
            s = x->from_ns;
        if (e > x->to_ns)
            e = x->to_ns;
        const model_range_name *n = &m->names[r->name];
        uint64_t pid = r->pid ? r->pid : (uint64_t)(x->sum.pid > 0 ? x->sum.pid : 0);
        if (c->group)   /* --job: the process' group */
            pid = c->group;
        chrome_process_seen(c, pid);
        chrome_ev_begin(c);
        if (point)
            XOUT_LIT(o, "\"ph\":\"i\",\"s\":\"t\",\"cat\":\"nvtx\",\"name\":");
        else
            XOUT_LIT(o, "\"ph\":\"X\",\"cat\":\"nvtx\",\"name\":");
        xout_json_str(o, n->name, n->name_len);
        PUT_KV_U64(o, ",\"pid\":", pid);
        PUT_KV_U64(o, ",\"tid\":", r->tid);
        chrome_put_ts(c, s);
        if (!point) {
            XOUT_LIT(o, ",\"dur\":");
            xout_us(o, e - s);
        }
        PUT_KV_U64(o, ",\"args\":{\"id\":", r->id);
        PUT_KV_U64(o, ",\"depth\":", r->depth);
        XOUT_LIT(o, ",\"domain\":");
        xout_json_str(o, n->domain, n->domain_len);
        if (r->flags & CUPSTORE_RANGE_COLOR)
            PUT_KV_U64(o, ",\"color\":", r->color);
        if (open)
            XOUT_LIT(o, ",\"open\":true");
        XOUT_LIT(o, "}}");
    }
    model_ranges_free(m);
    return o->err;
}

/* The job's metadata: the verdict over every process, the job's losses,
 * and per process its rank, pid, session, verdict and losses. */
void chrome_write_job_metadata(chrome *c, const export_job *jb)
{
    const model_job *j = &jb->j;
    const export_ctx *x = c->x;
    xout *o = c->o;
    xout_puts(o, "\"otherData\":{\"tool\":\"cuptop\",\"cuptop_version\":\"" PACKAGE_VERSION "\"");
    XOUT_LIT(o, ",\"job\":");
    xout_json_str(o, j->id, strlen(j->id));
    xout_printf(o, ",\"base_ns\":%llu,\"time_unit\":\"ts and dur are microseconds after base_ns\""
                   ",\"clock\":\"one clock for every process: CUPTI timestamps are wall-clock "
                   "(CLOCK_REALTIME) nanoseconds\"",
                (unsigned long long)x->base_ns);
    xout_printf(o, ",\"window\":{\"from_ns\":%llu,\"to_ns\":%llu}", (unsigned long long)x->from_ns,
                (unsigned long long)x->to_ns);
    xout_printf(o, ",\"state\":\"%s\",\"verdict\":\"%s\",\"processes\":%zu,\"incomplete\":%zu,"
                   "\"crashed\":%zu,\"missing_ranks\":%zu",
                model_state_name(j->state), j->complete ? "COMPLETE" : "INCOMPLETE", j->n,
                j->incomplete, j->crashed, j->missing);
    if (j->nstores > 1)
        xout_printf(o, ",\"stores\":%zu", j->nstores);
    XOUT_LIT(o, ",\"loss\":{");
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
        xout_printf(o, "%s\"%s\":%llu", l ? "," : "", cupstore_loss_name(l),
                    (unsigned long long)j->loss[l]);
    xout_printf(o, "},\"loss_total\":%llu,\"ranks\":[", (unsigned long long)j->loss_total);
    for (size_t i = 0; i < jb->n; i++) {
        const model_summary *s = &jb->procs[i].sum;
        xout_printf(o, "%s{\"rank\":", i ? "," : "");
        if (s->rank >= 0)
            xout_printf(o, "%d", s->rank);
        else
            XOUT_LIT(o, "null");
        xout_printf(o, ",\"pid\":%d,\"group_pid\":%llu,\"session\":", s->pid,
                    (unsigned long long)jb->procs[i].group);
        xout_json_str(o, s->id, strlen(s->id));
        XOUT_LIT(o, ",\"host\":");
        xout_json_str(o, s->host, strlen(s->host));
        if (s->store) {   /* several stores: the session's (ids are unique within one) */
            XOUT_LIT(o, ",\"store\":");
            xout_json_str(o, s->store, strlen(s->store));
        }
        XOUT_LIT(o, ",\"command\":");
        xout_json_str(o, s->cmdline, strlen(s->cmdline));
        xout_printf(o, ",\"state\":\"%s\",\"verdict\":\"%s\",\"records\":%llu,\"loss\":{",
                    model_state_name(s->state), model_verdict_name(s),
                    (unsigned long long)s->records_total);
        for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
            xout_printf(o, "%s\"%s\":%llu", l ? "," : "", cupstore_loss_name(l),
                        (unsigned long long)s->loss[l]);
        XOUT_LIT(o, "},\"reasons\":[");
        for (size_t k = 0; k < s->nreasons; k++) {
            xout_puts(o, k ? "," : "");
            xout_json_str(o, s->reasons[k].text, strlen(s->reasons[k].text));
        }
        XOUT_LIT(o, "]}");
    }
    XOUT_LIT(o, "]}");
}
