/*
 * export_text.c - the line formats: jsonl (one JSON object per record, names
 * resolved) and csv (the window's per-second health rows, one column per
 * field, with a header line).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export_int.h"

/* ---- jsonl ----------------------------------------------------------------- */

/* Graph records whose launch's API record was not read yet: records come
 * in chunk order, and the API record's chunk is keyed at or before the
 * call's start, so before the graph record's start: it has been read by
 * the end of the slice holding that start (export_ctx.slice_end).  Held
 * until then, at most JSONL_PENDING_MAX (then written as they are). */
#define JSONL_PENDING_MAX 65536u

struct jsonl {
    export_ctx *x;
    xout *o;
    export_gnvtx *gnvtx;        /* NULL: no ranges, nothing held          */
    cupstore_record *pending;
    size_t npending;
};

static int jsonl_write(struct jsonl *j, const cupstore_record *r, const export_gnvtx_hit *nv)
{
    xout *o = j->o;
    size_t len, mlen = 0;
    const char *mangled;
    const char *name =
        name_cache_get_full(&j->x->names, j->x->txn, r->name_id, &len, &mangled, &mlen);

    xout_puts(o, "{\"kind\":\"");
    xout_puts(o, cupstore_kind_name(r->kind));
    xout_puts(o, "\",\"name\":");
    if (name) {
        /* "mangled": the name exactly as CUPTI gave it */
        xout_putc(o, '"');
        xout_put(o, name, len);
        xout_puts(o, "\",\"mangled\":\"");
        if (mangled)
            xout_put(o, mangled, mlen);
        else
            xout_put(o, name, len);
        xout_putc(o, '"');
    } else if (r->kind == CUPSTORE_KIND_GRAPH) {
        /* a graph launch, named as the other exports name it; CUPTI gave
         * no name */
        xout_printf(o, "\"graph %u", (unsigned)r->aux);
        if (nv->name) {   /* and the NVTX range around its launch */
            xout_puts(o, " (NVTX: ");
            xout_put(o, nv->json, nv->json_len);
            xout_putc(o, ')');
        }
        xout_puts(o, "\",\"mangled\":null");
    } else {
        xout_puts(o, "null,\"mangled\":null");
    }
    xout_puts(o, ",\"start_ns\":");
    xout_u64(o, r->start_ns);
    xout_puts(o, ",\"end_ns\":");
    xout_u64(o, r->end_ns);
    xout_puts(o, ",\"device\":");
    if (r->device == CUPSTORE_DEVICE_NONE)
        xout_puts(o, "null");
    else
        xout_u64(o, r->device);
    xout_puts(o, ",\"context\":");
    xout_u64(o, r->context);
    xout_puts(o, ",\"stream\":");
    xout_u64(o, r->stream);
    xout_puts(o, ",\"correlation\":");
    xout_u64(o, r->correlation);
    xout_puts(o, ",\"pid\":");
    xout_u64(o, r->pid);
    xout_puts(o, ",\"tid\":");
    xout_u64(o, r->tid);
    xout_puts(o, ",\"cbid\":");
    xout_u64(o, r->cbid);
    xout_puts(o, ",\"aux\":");
    xout_u64(o, r->aux);
    xout_puts(o, ",\"bytes\":");
    xout_u64(o, r->bytes);
    if (r->kind == CUPSTORE_KIND_KERNEL)
        xout_printf(o, ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u]", r->grid[0], r->grid[1],
                    r->grid[2], r->block[0], r->block[1], r->block[2]);
    if (r->kind == CUPSTORE_KIND_MEMSET)
        xout_printf(o, ",\"memory_kind\":%u", CUPSTORE_RF_MEMKIND(r->flags));
    if (r->kind == CUPSTORE_KIND_GRAPH) {
        xout_printf(o, ",\"graph_id\":%u", (unsigned)r->aux);
        if (nv->name) {
            xout_puts(o, ",\"nvtx_range\":\"");
            xout_put(o, nv->json, nv->json_len);
            xout_putc(o, '"');
        }
    }
    xout_printf(o, ",\"zero_ts\":%s,\"truncated\":%s}\n",
                r->flags & CUPSTORE_RF_ZERO_TS ? "true" : "false",
                r->flags & CUPSTORE_RF_TRUNCATED ? "true" : "false");
    return o->err;
}

/* A graph record, named by the range around its launch. */
static int jsonl_graph(struct jsonl *j, const cupstore_record *r)
{
    export_gnvtx_hit nv;
    bool known;
    int rc = export_gnvtx_find(j->gnvtx, r, &nv, &known);
    return rc ? rc : jsonl_write(j, r, &nv);
}

/* Write the held graph records whose launch has been read by now (all of
 * them when all): in the order they came. */
static int jsonl_pending(struct jsonl *j, bool all)
{
    size_t keep = 0;
    for (size_t i = 0; i < j->npending; i++) {
        const cupstore_record *r = &j->pending[i];
        if (!all && r->start_ns > j->x->slice_end) {
            j->pending[keep++] = *r;
            continue;
        }
        int rc = jsonl_graph(j, r);
        if (rc)
            return rc;
    }
    j->npending = keep;
    return 0;
}

static int jsonl_record(const cupstore_record *r, void *arg)
{
    struct jsonl *j = arg;
    static const export_gnvtx_hit none;
    if (!j->gnvtx)
        return jsonl_write(j, r, &none);
    if (r->kind == CUPSTORE_KIND_RUNTIME || r->kind == CUPSTORE_KIND_DRIVER)
        export_gnvtx_api(j->gnvtx, r);
    if (r->kind != CUPSTORE_KIND_GRAPH || !r->start_ns || (r->flags & CUPSTORE_RF_ZERO_TS))
        return jsonl_write(j, r, &none);
    export_gnvtx_hit nv;
    bool known;
    int rc = export_gnvtx_find(j->gnvtx, r, &nv, &known);
    if (rc || known)
        return rc ? rc : jsonl_write(j, r, &nv);
    if (!j->pending && !(j->pending = malloc(JSONL_PENDING_MAX * sizeof *j->pending)))
        return ENOMEM;
    if (j->npending == JSONL_PENDING_MAX && (rc = jsonl_pending(j, true)) != 0)
        return rc;
    j->pending[j->npending++] = *r;
    return 0;
}

static int jsonl_slice(export_ctx *x, void *arg)
{
    struct jsonl *j = arg;
    int rc = jsonl_pending(j, x->slice_end >= x->to_ns);
    return rc ? rc : j->o->err;
}

/* The first line: what the session ran on (kind "session"), so a jsonl
 * file carries its provenance with it. */
static void jsonl_session(export_ctx *x, xout *o)
{
    const model_summary *s = &x->sum;
    xout_puts(o, "{\"kind\":\"session\",\"session\":");
    xout_json_str(o, s->id, strlen(s->id));
    xout_printf(o, ",\"pid\":%d,\"host\":", s->pid);
    xout_json_str(o, s->host, strlen(s->host));
    xout_puts(o, ",\"command\":");
    xout_json_str(o, s->cmdline, strlen(s->cmdline));
    xout_printf(o, ",\"start_ns\":%llu,\"window\":{\"from_ns\":%llu,\"to_ns\":%llu}",
                (unsigned long long)s->start_ns, (unsigned long long)x->from_ns,
                (unsigned long long)x->to_ns);
    xout_printf(o, ",\"verdict\":\"%s\",\"count_only\":%s,\"names\":\"%s\"",
                model_verdict_name(s), s->count_only ? "true" : "false",
                x->o->mangled ? "mangled" : "demangled");
    if (s->count_only)
        xout_puts(o, ",\"records_note\":\"count-only session (CUPTOP_SINK=null): the agent "
                     "counted every record but stored none, by design; no record line follows\"");
    export_range_json(x, o);
    prov_json(o, s->prov, s->device_mask);
    xout_puts(o, ",\"config\":");
    if (s->prov && s->prov->config)
        xout_json_str(o, s->prov->config, strlen(s->prov->config));
    else
        xout_puts(o, "null");
    xout_puts(o, "}\n");
}

int export_jsonl(export_ctx *x, xout *o)
{
    struct jsonl j = {.x = x, .o = o};
    jsonl_session(x, o);
    int rc = export_gnvtx_open(x, &j.gnvtx);
    if (!rc)
        rc = export_scan(x, jsonl_record, j.gnvtx ? jsonl_slice : NULL, &j);
    if (!rc)
        rc = jsonl_pending(&j, true);   /* (records after the window's end) */
    free(j.pending);
    export_gnvtx_close(j.gnvtx);
    return rc ? rc : o->err;
}

/* ---- csv ------------------------------------------------------------------- */

static void csv_lat_head(xout *o, const char *p)
{
    xout_printf(o, ",%s_count,%s_p50_ns,%s_p99_ns,%s_max_ns", p, p, p, p);
}

static void csv_lat(xout *o, const cupstore_lat *l)
{
    xout_printf(o, ",%u,%u,%u,%u", l->count, l->p50_ns, l->p99_ns, l->max_ns);
}

static void csv_header(xout *o)
{
    xout_puts(o, "second,heartbeat_ns,epoch,kinds_enabled,ctl_gen_applied,ctl_gen_seen,"
                 "buf_requested,buf_provided,buf_declined,buf_completed,buf_consumed,"
                 "buf_foreign,bytes_delivered,buf_outstanding,pool_limit,pool_high_water,"
                 "records_parsed,records_stored");
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
        xout_printf(o, ",records_%s", cupstore_kind_name(k));
    for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX; d++)
        xout_printf(o, ",records_device%u", d);
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
        xout_printf(o, ",loss_%s", cupstore_loss_name(l));
    for (unsigned i = 0; i < CUPSTORE_OVERHEAD_MAX; i++)
        xout_printf(o, ",overhead_%s", cupstore_overhead_name(i));
    xout_puts(o, ",queue_depth,queue_high_water,queue_capacity");
    csv_lat_head(o, "req_lat");
    csv_lat_head(o, "cmp_lat");
    csv_lat_head(o, "commit_lat");
    xout_puts(o, ",batch_records_p50,store_refused,flags\n");
}

static int csv_row(const cupstore_health *h, void *arg)
{
    xout *o = arg;
    char kinds[160];
    cupstore_kinds_format(h->kinds_enabled, kinds, sizeof kinds);
    xout_printf(o, "%llu,%llu,%u,\"%s\",%llu,%llu", (unsigned long long)h->second,
                (unsigned long long)h->heartbeat_ns, h->epoch, kinds,
                (unsigned long long)h->ctl_gen_applied, (unsigned long long)h->ctl_gen_seen);
    const uint64_t b[] = {h->buf_requested, h->buf_provided, h->buf_declined, h->buf_completed,
                          h->buf_consumed, h->buf_foreign, h->bytes_delivered};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        xout_putc(o, ',');
        xout_u64(o, b[i]);
    }
    xout_printf(o, ",%u,%u,%u,%llu,%llu", h->buf_outstanding, h->pool_limit, h->pool_high_water,
                (unsigned long long)h->records_parsed, (unsigned long long)h->records_stored);
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++) {
        xout_putc(o, ',');
        xout_u64(o, h->records_by_kind[k]);
    }
    for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX; d++) {
        xout_putc(o, ',');
        xout_u64(o, h->records_by_device[d]);
    }
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++) {
        xout_putc(o, ',');
        xout_u64(o, h->loss[l]);
    }
    for (unsigned i = 0; i < CUPSTORE_OVERHEAD_MAX; i++) {
        xout_putc(o, ',');
        xout_u64(o, h->overhead_by_type[i]);
    }
    xout_printf(o, ",%u,%u,%u", h->queue_depth, h->queue_high_water, h->queue_capacity);
    csv_lat(o, &h->req_lat);
    csv_lat(o, &h->cmp_lat);
    csv_lat(o, &h->commit_lat);
    xout_printf(o, ",%u,%u,%u\n", h->batch_records_p50, h->store_refused, h->flags);
    return o->err;
}

int export_csv(export_ctx *x, xout *o)
{
    cupstore_txn *txn;
    csv_header(o);
    /* Health rows are one per second: read them a minute at a time. */
    uint64_t from = x->from_ns / 1000000000ull, to = x->to_ns / 1000000000ull;
    for (uint64_t s = from; s <= to; s += 60) {
        uint64_t e = to - s < 59 ? to : s + 59;
        int rc = cupstore_txn_begin(x->env, false, &txn);
        if (rc)
            return rc;
        rc = cupstore_health_scan(txn, s, e, csv_row, o);
        cupstore_txn_abort(txn);
        if (rc)
            return rc;
        if (e == UINT64_MAX)
            break;
    }
    return o->err;
}
