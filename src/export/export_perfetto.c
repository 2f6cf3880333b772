/*
 * export_perfetto.c - Perfetto's native trace format (.pftrace): a Trace of
 * TracePackets holding TrackEvents, written by the encoder of export_pb.h.
 *
 * Tracks as in the chrome export: a process per traced process (threads:
 * its runtime/driver API calls), a track per GPU holding one per stream
 * (kernels, copies, sets), NVTX ranges as nested slices on a track per
 * thread, the health series as counter tracks and the loss windows as
 * slices on a "loss" track, one child per loss class.  The verdict,
 * versions, devices and losses are the trace's metadata (a ChromeEventBundle
 * holding the chrome export's otherData object: trace processor's metadata
 * table, keys "cr-*").
 *
 * Size: every track (every lane of one) is written by a sequence of its own
 * (trusted_packet_sequence_id), so that
 *   - its events need no track_uuid (TracePacketDefaults names the track),
 *   - timestamps are deltas on an incremental clock (clock 64, a
 *     ClockSnapshot ties it to CLOCK_REALTIME, the trace's clock), and a
 *     lane's events are in time order by construction: its slices nest, so a
 *     slice's END is written when a later BEGIN passes it (the lane's stack);
 *   - names, categories and annotation names are interned per sequence
 *     (small iids, one byte for the first 127 names of a lane).
 * Records reach the lanes through the chrome writer's reorder window
 * (export_sort.c) in (start asc, end desc) order; a slice that would not
 * nest goes to an overflow lane ("stream 7 (overlap 1)").  Launch -> GPU
 * flows: the API call's BEGIN starts a flow (a small id, handed out again
 * once the flow ended: flow_id_take), the first GPU record of its
 * correlation terminates it.
 *
 * The packets then go through export_perfetto_out.c: deflated in chunks
 * into TracePacket.compressed_packets (what Perfetto's service writes with
 * COMPRESSION_TYPE_DEFLATE), about 5 bytes a record on the bench session
 * against 28 as they are (--uncompressed).
 *
 * Memory: the reorder window (bounded), per lane a stack (nesting depth)
 * and an interning map (bounded by the session's names), a fixed flow
 * table, one packet buffer, two deflate chunks.  Nothing grows with the
 * window's length.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export_int.h"
#include "export_perfetto_int.h"

/* ---- Records ------------------------------------------------------------------- */

static bool is_gpu(unsigned kind)
{
    return kind == CUPSTORE_KIND_KERNEL || kind == CUPSTORE_KIND_MEMCPY ||
           kind == CUPSTORE_KIND_MEMSET || kind == CUPSTORE_KIND_GRAPH;
}

static bool is_api(unsigned kind)
{
    return kind == CUPSTORE_KIND_RUNTIME || kind == CUPSTORE_KIND_DRIVER;
}

/* Launch API calls by correlation id: 4-way sets of consecutive ids (as
 * the chrome writer's), oldest replaced; a launch whose GPU record comes
 * more than FLOW_SLOTS launches later loses its arrow, never a wrong one. */
static pf_flow *flow_set(perfetto *f, uint32_t corr)
{
    pf_flow *b = &f->flows[(corr * 4u) & (FLOW_SLOTS - 4)], *victim = &b[0];
    for (int i = 0; i < 4; i++) {
        if (!b[i].used || b[i].corr == corr)
            return &b[i];
        if (b[i].ts < victim->ts)
            victim = &b[i];
    }
    return victim;
}

static pf_flow *flow_find(perfetto *f, uint32_t corr)
{
    pf_flow *b = &f->flows[(corr * 4u) & (FLOW_SLOTS - 4)];
    for (int i = 0; i < 4; i++)
        if (b[i].used && b[i].corr == corr)
            return &b[i];
    return NULL;
}

/* Flow ids are small numbers handed out again once their flow ended, not
 * correlation ids: 1-2 bytes a flow id instead of 3-5 (two per launch).
 * Trace processor pairs flow ids in timestamp order over the whole trace,
 * so an id is taken again only by a launch that starts strictly after the
 * GPU record that ended its last flow (ts), and the flow of a launch whose
 * GPU record never came (not a launch, lost, or evicted from f->flows)
 * keeps its id forever: a later flow never joins a dangling start.  The
 * ring is FIFO, oldest end first; records leave the reorder window in start
 * order, so its head is the first to be free (a late record or a --job's
 * next process, earlier in time, takes a new id instead). */
static uint32_t flow_id_take(perfetto *f, uint64_t s)
{
    if (f->nfree && f->free_ids[f->free_head].ts < s) {
        uint32_t id = f->free_ids[f->free_head].id;
        f->free_head = (f->free_head + 1) % FLOW_SLOTS;
        f->nfree--;
        return id;
    }
    return ++f->next_flow_id;
}

/* The flow of id ended at ts (the terminating GPU record's start). */
static void flow_id_give(perfetto *f, uint32_t id, uint64_t ts)
{
    if (f->nfree == FLOW_SLOTS)
        return; /* ring full: the id is never used again (safe) */
    f->free_ids[(f->free_head + f->nfree) % FLOW_SLOTS] = (pf_free_id){id, ts};
    f->nfree++;
}

/* "graph <id> (NVTX: <range>)" into f->namebuf (the range's raw bytes,
 * cut to fit; pf_clean_str makes them valid UTF-8); returns its length. */
static size_t graph_nvtx_name(perfetto *f, const cupstore_record *r, const export_gnvtx_hit *nv)
{
    size_t cap = sizeof f->namebuf;
    int n = snprintf(f->namebuf, cap, "graph %u (NVTX: ", (unsigned)r->aux);
    size_t len = n > 0 ? (size_t)n : 0, take = nv->len < cap - len - 1 ? nv->len : cap - len - 1;
    memcpy(f->namebuf + len, nv->name, take);
    len += take;
    if (len < cap)
        f->namebuf[len++] = ')';
    return len;
}

/* A lost row's place on its stream (export_lost.c), kept until the rows
 * are drawn after the scan, each stream's in time order. */
static int pf_lost_placed(const cupstore_lost *l, uint64_t from_ns, uint64_t to_ns, void *arg)
{
    perfetto *f = arg;
    size_t i = (size_t)(l - f->lost.v);
    f->lost_at[i][0] = from_ns;
    f->lost_at[i][1] = to_ns;
    return 0;
}

/* A DebugAnnotation of a TrackEvent at q (at most 16 bytes): name iid da,
 * value v in field vf (F_DA_UINT, or F_DA_BOOL with 1), as
 * pf_annotate_uint/pf_annotate_bool write it. */
static uint8_t *te_annotation(uint8_t *q, unsigned da, uint32_t vf, uint64_t v)
{
    uint8_t *b = q;
    *q++ = (uint8_t)(F_TE_ANNOTATIONS << 3 | PB_LEN);
    q++;
    q = pb_uint_at(q, F_DA_NAME_IID, da);
    q = pb_uint_at(q, vf, v);
    b[1] = (uint8_t)(q - b - 2);
    return q;
}

static int emit_record(perfetto *f, const cupstore_record *r)
{
    uint64_t pid, tid;
    uint8_t cls;
    if (r->kind == CUPSTORE_KIND_MARKER && r->start_ns == 0 && !(r->flags & CUPSTORE_RF_ZERO_TS))
        return 0;   /* MARKER_DATA: no time of its own */
    if (r->kind == CUPSTORE_KIND_MARKER && f->range_table) {
        f->markers_in_ranges++;   /* drawn as the ranges they make */
        return 0;
    }
    if (r->start_ns == 0 || (r->flags & CUPSTORE_RF_ZERO_TS)) {
        f->zero_ts++;
        return 0;
    }
    uint64_t s = r->start_ns, e = r->end_ns >= r->start_ns ? r->end_ns : r->start_ns;
    if (is_gpu(r->kind) && f->lost.n) {   /* the stream's lost records before it */
        int rc = export_lost_before(&f->lost, r->device, r->stream, r->correlation, s, e,
                                    pf_lost_placed, f);
        if (rc)
            return rc;
    }
    if (is_gpu(r->kind)) {
        pid = f->group;
        tid = r->stream;
        cls = CLS_STREAM;
    } else if (r->tid || is_api(r->kind)) {
        pid = f->group ? f->group
                       : r->pid ? r->pid : (uint64_t)(f->x->sum.pid > 0 ? f->x->sum.pid : 0);
        tid = r->tid;
        cls = CLS_THREAD;
    } else {
        pid = f->group;
        tid = r->kind;
        cls = CLS_KIND;
    }
    pf_track *t = pf_track_get(f, pid, cls == CLS_THREAD ? tid : tid | (uint64_t)r->device << 40,
                               cls, r->device, tid);
    if (!t)
        return ENOMEM;
    pf_lane *l = pf_track_place(f, t, s, e);
    if (!l)
        return ENOMEM;
    if (!l->seq)
        pf_sequence_start(f, l, s, true);
    pf_lane_pop(f, l, s);
    if (l->depth == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 4;
        uint64_t *ns = realloc(l->stack, ncap * sizeof *ns);
        if (!ns)
            return ENOMEM;
        l->stack = ns;
        l->cap = ncap;
    }
    l->stack[l->depth++] = e;
    l->last_start = s;

    /* a graph launch: the NVTX range around its launch call, if any */
    export_gnvtx_hit nv = {0};
    uint32_t label = 0;
    if (r->kind == CUPSTORE_KIND_GRAPH) {
        bool known;
        int rc = export_gnvtx_find(f->gnvtx, r, &nv, &known);
        if (rc)
            return rc;
        if (nv.name)
            label = export_gnvtx_label(f->gnvtx, r->aux, nv.idx);
    } else if (is_api(r->kind)) {
        export_gnvtx_api(f->gnvtx, r);
    }

    /* the BEGIN packet: interned data first (what this sequence lacks) */
    uint64_t key = r->name_id ? r->name_id
                   : is_api(r->kind) && r->cbid ? KEY_CBID + r->cbid
                   : r->kind == CUPSTORE_KIND_MEMCPY
                       ? KEY_GPU + ((uint64_t)r->kind << 32) + (r->aux & 0xffffffu)
                   : r->kind == CUPSTORE_KIND_MEMSET
                       ? KEY_GPU + ((uint64_t)r->kind << 32) + CUPSTORE_RF_MEMKIND(r->flags)
                   : r->kind == CUPSTORE_KIND_GRAPH   /* "graph <id>", one slice per launch */
                       ? KEY_GPU + ((uint64_t)r->kind << 32) + r->aux
                       : KEY_KIND + r->kind;
    if (label)
        key = KEY_GNVTX + label;
    if (l->nn >= PF_LANE_NAMES_MAX)
        key = KEY_KIND + r->kind; /* a lane with this many names: kinds only */
    bool fresh;
    uint32_t iid = pf_lane_iid(l, key, &fresh);
    if (!iid)
        return ENOMEM;
    bool bytes = r->kind == CUPSTORE_KIND_MEMCPY || r->kind == CUPSTORE_KIND_MEMSET;
    bool trunc = r->flags & CUPSTORE_RF_TRUNCATED, no_end = r->end_ns < r->start_ns;

    /* Nearly every BEGIN interns nothing: then it is built in place in the
     * chunk (its TrackEvent too), one write.  Else the TrackEvent is built
     * in te_buf and goes after the interned data. */
    bool in_place = !fresh && (l->cats & (1u << r->kind)) &&
                    (!bytes || (l->das & (1u << DA_BYTES))) && !trunc && !no_end &&
                    !nv.name;
    uint8_t te_buf[64], *b = NULL, *q = te_buf;
    if (in_place) {
        b = pf_small_at(f);
        q = pb_uint_at(b + 2, F_TP_TIMESTAMP, s - l->last_ts);
        q = pb_uint_at(q, F_TP_SEQ_ID, l->seq);
        *q++ = (uint8_t)(F_TP_TRACK_EVENT << 3 | PB_LEN);
        q++;   /* its length, below */
    }

    /* The TrackEvent (at most 48 bytes: one-byte lengths). */
    uint8_t *te = q;
    q = pb_uint_at(q, F_TE_TYPE, TYPE_SLICE_BEGIN);
    q = pb_uint_at(q, F_TE_NAME_IID, iid);
    q = pb_uint_at(q, F_TE_CATEGORY_IIDS, r->kind + 1u);
    if (bytes)
        q = te_annotation(q, DA_BYTES, F_DA_UINT, r->bytes);
    if (trunc)
        q = te_annotation(q, DA_TRUNCATED, F_DA_BOOL, 1);
    if (no_end)
        q = te_annotation(q, DA_END_MISSING, F_DA_BOOL, 1);
    /* A driver call made by an open runtime call on the same thread never
     * starts an arrow: CUPTI gives the GPU work the runtime call's
     * correlation id, so its start would dangle (7 bytes each). */
    bool nested_driver = r->kind == CUPSTORE_KIND_DRIVER && l->rt_end > s && l->depth > 1;
    if (r->kind == CUPSTORE_KIND_RUNTIME)
        l->rt_end = e;
    if (r->correlation && is_api(r->kind) && !nested_driver) {
        pf_flow *fl = flow_set(f, r->correlation);
        *fl = (pf_flow){.corr = r->correlation, .used = true, .id = flow_id_take(f, s), .ts = s};
        q = pb_uint_at(q, F_TE_FLOW_OLD, fl->id);
    } else if (r->correlation && is_gpu(r->kind)) {
        pf_flow *fl = flow_find(f, r->correlation);
        if (fl && fl->ts <= s) {
            q = pb_uint_at(q, F_TE_TERM_FLOW_OLD, fl->id);
            fl->used = false; /* one arrow: launch -> its first GPU record */
            /* at the launch's own start, trace processor may take the
             * end before the start (no arrow, the id stays open): keep it */
            if (fl->ts < s)
                flow_id_give(f, fl->id, s);
            f->flows_out++;
        }
    }
    size_t te_len = (size_t)(q - te);
    if (in_place) {
        te[-1] = (uint8_t)te_len;
        b[0] = (uint8_t)(F_TRACE_PACKET << 3 | PB_LEN);
        b[1] = (uint8_t)(q - b - 2);   /* < 128: at most 69 bytes */
        l->last_ts = s;
        pf_small_put(f, b, (size_t)(q - b));
        f->written++;
        return 0;
    }

    /* the BEGIN packet: interned data first (what this sequence lacks) */
    pf_lane_packet(f, l, s);
    pb *p = &f->p;
    size_t im = SIZE_MAX;
    if (fresh) {
        size_t n = key >= KEY_GNVTX && key < KEY_GNVTX + (1ull << 40)
                       ? graph_nvtx_name(f, r, &nv) : pf_name_text(f, r, key);
        im = pf_interned_open(f, im);
        size_t en = pb_open(p, F_ID_NAMES);
        pb_uint(p, F_IID, iid);
        pf_clean_str(f, F_INAME, f->namebuf, n);
        pb_close(p, en);
    }
    if (!(l->cats & (1u << r->kind))) {
        l->cats |= 1u << r->kind;
        im = pf_interned_open(f, im);
        size_t ec = pb_open(p, F_ID_CATEGORIES);
        pb_uint(p, F_IID, r->kind + 1u);
        pb_str(p, F_INAME, export_kineto_cat(r->kind));
        pb_close(p, ec);
    }
    if (bytes)
        pf_intern_da(f, l, DA_BYTES, &im);
    if (trunc)
        pf_intern_da(f, l, DA_TRUNCATED, &im);
    if (no_end)
        pf_intern_da(f, l, DA_END_MISSING, &im);
    if (nv.name)
        pf_intern_da(f, l, DA_NVTX_RANGE, &im);
    if (im != SIZE_MAX)
        pb_close(p, im);
    if (nv.name) {   /* the range's name: any length, so not raw */
        size_t m = pb_open(p, F_TP_TRACK_EVENT);
        if (pb_reserve(p, te_len) == 0) {
            memcpy(p->b + p->len, te, te_len);
            p->len += te_len;
        }
        size_t a = pb_open(p, F_TE_ANNOTATIONS);
        pb_uint(p, F_DA_NAME_IID, DA_NVTX_RANGE);
        pf_clean_str(f, F_DA_STRING, nv.name, nv.len);
        pb_close(p, a);
        pb_close(p, m);
    } else {
        pb_bytes(p, F_TP_TRACK_EVENT, te, te_len);
    }
    pf_packet_end(f);
    f->written++;
    return p->err;
}

static int emit_sorted(const cupstore_record *r, void *arg)
{
    return emit_record(arg, r);
}

static int on_record(const cupstore_record *r, void *arg)
{
    perfetto *f = arg;
    int rc = export_sort_add(&f->sort, r, emit_sorted, f);
    return rc ? rc : f->o->err;
}

static int on_slice(export_ctx *x, void *arg)
{
    perfetto *f = arg;
    (void)x;
    int rc = export_sort_flush(&f->sort, emit_sorted, f);
    return rc ? rc : f->o->err;
}

/* ---- Health counters and loss windows ---------------------------------------------- */

/* The counter series: name, and the value of a health row. */
enum { CT_KIND0 = 0, CT_LOSS0 = CT_KIND0 + CUPSTORE_KIND_MAX, CT_POOL = CT_LOSS0 + CUPSTORE_LOSS_MAX,
       CT_POOL_LIMIT, CT_QUEUE, CT_QUEUE_HW, CT_COMPLETED, CT_CMP_P99, CT_MAX };

static uint64_t counter_value(const cupstore_health *h, unsigned c)
{
    if (c < CT_LOSS0)
        return h->records_by_kind[c - CT_KIND0];
    if (c < CT_POOL)
        return h->loss[c - CT_LOSS0];
    switch (c) {
    case CT_POOL: return h->buf_outstanding;
    case CT_POOL_LIMIT: return h->pool_limit;
    case CT_QUEUE: return h->queue_depth;
    case CT_QUEUE_HW: return h->queue_high_water;
    case CT_COMPLETED: return h->buf_completed;
    default: return h->cmp_lat.p99_ns;
    }
}

static void counter_name(unsigned c, char *buf, size_t len)
{
    if (c < CT_LOSS0)
        snprintf(buf, len, "records/s %s", cupstore_kind_name(c - CT_KIND0));
    else if (c < CT_POOL)
        snprintf(buf, len, "lost/s %s", cupstore_loss_name(c - CT_LOSS0));
    else
        snprintf(buf, len, "%s",
                 c == CT_POOL ? "buffers in use (pool)" : c == CT_POOL_LIMIT ? "pool limit"
                 : c == CT_QUEUE ? "queue depth" : c == CT_QUEUE_HW ? "queue high water"
                 : c == CT_COMPLETED ? "buffers completed/s"
                                     : "completion callback p99 (ns)");
}

struct loss_state;
static void loss_second(perfetto *f, struct loss_state *ls, const cupstore_health *h);

struct health_state {
    perfetto *f;
    struct loss_state *ls;   /* the loss windows, from the same rows     */
    pf_lane seq;             /* the health sequence (no default track)   */
    uint64_t uuid[CT_MAX];   /* counter tracks (0: not shown)            */
    bool described;
};

static int on_health(const cupstore_health *h, void *arg)
{
    struct health_state *hs = arg;
    perfetto *f = hs->f;
    uint64_t ns = h->second * 1000000000ull;
    if (ns < f->x->base_ns)
        return 0;
    if (!hs->described) {
        const model_summary *s = &f->x->sum;
        uint64_t parent = pf_health_uuid(f);
        char buf[96];
        for (unsigned c = 0; c < CT_MAX; c++) {
            bool show = c < CT_LOSS0 ? s->records_by_kind[c - CT_KIND0] > 0
                        : c < CT_POOL ? s->loss[c - CT_LOSS0] > 0
                                      : true;
            if (!show)
                continue;
            hs->uuid[c] = ++f->next_uuid;
            counter_name(c, buf, sizeof buf);
            pf_describe(f, hs->uuid[c], parent, buf, 0, 0, false, false, true, (int64_t)c);
        }
        hs->described = true;
        pf_sequence_start(f, &hs->seq, ns, false);
    }
    loss_second(f, hs->ls, h);
    for (unsigned c = 0; c < CT_MAX; c++) {
        if (!hs->uuid[c])
            continue;
        pf_lane_packet(f, &hs->seq, ns);
        size_t te = pb_open(&f->p, F_TP_TRACK_EVENT);
        pb_uint(&f->p, F_TE_TYPE, TYPE_COUNTER);
        pb_uint(&f->p, F_TE_TRACK_UUID, hs->uuid[c]);
        pb_int(&f->p, F_TE_COUNTER, (int64_t)counter_value(h, c));
        pb_close(&f->p, te);
        pf_packet_end(f);
    }
    return f->p.err ? f->p.err : f->o->err;
}

/* A loss window: consecutive seconds with losses of one class. */
struct loss_win {
    bool open;
    uint64_t from_s, to_s, count;
};

struct loss_state {
    struct loss_win w[CUPSTORE_LOSS_MAX];
};

/* The "loss" group track, described once. */
static void loss_group(perfetto *f)
{
    if (!f->loss_uuid) {
        f->loss_uuid = ++f->next_uuid;
        pf_describe(f, f->loss_uuid, pf_health_uuid(f), "loss", 0, 0, false, false, false, -1);
    }
}

/* An event of the loss group starting at s on lane l of its track: the
 * lane's sequence started, what ended before s closed, the packet open. */
static void loss_lane_at(perfetto *f, pf_lane *l, uint64_t s)
{
    if (!l->seq)
        pf_sequence_start(f, l, s, true);
    pf_lane_pop(f, l, s);
    l->last_start = s;
    pf_lane_packet(f, l, s);
}

/* Draw the window of class l as one slice on the "loss: CLASS" track. */
static void loss_emit(perfetto *f, unsigned cls, const struct loss_win *w)
{
    char name[96];
    loss_group(f);
    pf_track *t = pf_track_get(f, f->group, cls, CLS_LOSS, CUPSTORE_DEVICE_NONE, cls);
    uint64_t s = w->from_s * 1000000000ull, e = (w->to_s + 1) * 1000000000ull;
    pf_lane *l = t ? pf_track_place(f, t, s, e) : NULL;
    if (!l) {
        f->p.err = ENOMEM;
        return;
    }
    loss_lane_at(f, l, s);
    pb *p = &f->p;
    size_t im = SIZE_MAX;
    pf_intern_da(f, l, DA_COUNT, &im);
    pf_intern_da(f, l, DA_SECONDS, &im);
    if (im != SIZE_MAX)
        pb_close(p, im);
    size_t te = pb_open(p, F_TP_TRACK_EVENT);
    pb_uint(p, F_TE_TYPE, TYPE_SLICE_BEGIN);
    snprintf(name, sizeof name, "%s: %llu", cupstore_loss_name(cls),
             (unsigned long long)w->count);
    pb_str(p, F_TE_NAME, name);
    pf_annotate_uint(f, DA_COUNT, w->count);
    pf_annotate_uint(f, DA_SECONDS, w->to_s - w->from_s + 1);
    pb_close(p, te);
    pf_packet_end(f);
    pf_lane_packet(f, l, e);
    te = pb_open(p, F_TP_TRACK_EVENT);
    pb_uint(p, F_TE_TYPE, TYPE_SLICE_END);
    pb_close(p, te);
    pf_packet_end(f);
}

/* The name of a lost row: "lost: " and the kernel's name when the ledger
 * knew it (demangled as its records are), else the kinds missing. */
static size_t lost_name(perfetto *f, cupstore_txn *txn, const cupstore_lost *l)
{
    char *b = f->namebuf;
    size_t cap = sizeof f->namebuf, n = (size_t)snprintf(b, cap, "lost: ");
    bool found = false;
    size_t k = l->name_id ? pf_name_stored(f, txn, l->name_id, true, b + n, cap - n, &found) : 0;
    return n + (found && k ? k : export_lost_kinds(l, b + n, cap - n));
}

/* One launch whose records never arrived (the store's `lost` rows, with
 * --ledger): "lost: NAME" on the loss group's track of its stream, a
 * slice where it ran between its stream's neighbours, or an instant after
 * the stream's last record when none came after it. */
static int lost_draw(perfetto *f, cupstore_txn *txn, size_t i)
{
    const cupstore_lost *l = &f->lost.v[i];
    uint64_t from = f->lost_at[i][0], to = f->lost_at[i][1];
    pb *p = &f->p;
    uint64_t n = 0;
    for (unsigned k = 0; k < CUPSTORE_LEDGER_KINDS; k++)
        n += l->missing[k];
    loss_group(f);
    uint16_t dev = l->device < CUPSTORE_DEVICE_MAX ? (uint16_t)l->device : CUPSTORE_DEVICE_NONE;
    pf_track *t = pf_track_get(f, f->group, ((uint64_t)dev << 32) | l->stream, CLS_LOST, dev,
                               l->stream);
    pf_lane *ln = t ? pf_track_place(f, t, from, to) : NULL;
    if (!ln)
        return ENOMEM;
    loss_lane_at(f, ln, from);
    size_t im = SIZE_MAX;
    pf_intern_da(f, ln, DA_COUNT, &im);
    pf_intern_da(f, ln, DA_CORRELATION, &im);
    pf_intern_da(f, ln, DA_THREAD, &im);
    if (im != SIZE_MAX)
        pb_close(p, im);
    size_t te = pb_open(p, F_TP_TRACK_EVENT);
    pb_uint(p, F_TE_TYPE, to > from ? TYPE_SLICE_BEGIN : TYPE_INSTANT);
    pf_clean_str(f, F_TE_NAME, f->namebuf, lost_name(f, txn, l));
    pf_annotate_uint(f, DA_COUNT, n);
    pf_annotate_uint(f, DA_CORRELATION, l->corr);
    pf_annotate_uint(f, DA_THREAD, l->tid);
    pb_close(p, te);
    pf_packet_end(f);
    if (to > from) {
        pf_lane_packet(f, ln, to);
        te = pb_open(p, F_TP_TRACK_EVENT);
        pb_uint(p, F_TE_TYPE, TYPE_SLICE_END);
        pb_close(p, te);
        pf_packet_end(f);
    }
    f->lost_out++;
    return p->err;
}

struct lost_ord {
    size_t row;      /* rows are by device and stream already */
    uint64_t from;
};

static int lost_order(const void *pa, const void *pb_)
{
    const struct lost_ord *a = pa, *b = pb_;
    return a->from != b->from ? (a->from < b->from ? -1 : 1) : (a->row > b->row) - (a->row < b->row);
}

/* After the scan: the rows no record came after placed too, then all
 * drawn, each stream's in time order. */
static int lost_write(perfetto *f, export_ctx *x)
{
    if (!f->lost.n)
        return 0;
    int rc = export_lost_rest(&f->lost, pf_lost_placed, f);
    struct lost_ord *ord = rc ? NULL : malloc(f->lost.n * sizeof *ord);
    if (!rc && !ord)
        rc = ENOMEM;
    if (rc)
        return rc;
    for (size_t i = 0; i < f->lost.n; i++)
        ord[i] = (struct lost_ord){i, f->lost_at[i][0]};
    for (size_t g = 0; g < f->lost.ns; g++)   /* each stream's rows by time */
        qsort(ord + f->lost.s[g].first, f->lost.s[g].end - f->lost.s[g].first, sizeof *ord,
              lost_order);
    cupstore_txn *txn;
    if ((rc = cupstore_txn_begin(x->env, false, &txn)) == 0) {
        for (size_t i = 0; rc == 0 && i < f->lost.n; i++)
            rc = lost_draw(f, txn, ord[i].row);
        cupstore_txn_abort(txn);
    }
    free(ord);
    return rc;
}

/* The loss windows from a health row: a class with losses this second
 * extends its window (or opens one); a window whose class had none ends. */
static void loss_second(perfetto *f, struct loss_state *ls, const cupstore_health *h)
{
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++) {
        struct loss_win *w = &ls->w[l];
        if (h->loss[l] && w->open && h->second == w->to_s + 1) {
            w->to_s = h->second;
            w->count += h->loss[l];
            continue;
        }
        if (w->open)
            loss_emit(f, l, w);
        w->open = false;
        if (h->loss[l])
            *w = (struct loss_win){.open = true, .from_s = h->second, .to_s = h->second,
                                   .count = h->loss[l]};
    }
}

/* ---- Sessions ----------------------------------------------------------------------- */

/* End every open slice (the lanes' stacks) and forget the tracks. */
static void tracks_close(perfetto *f)
{
    for (size_t i = 0; i < f->cap; i++) {
        pf_track *t = &f->tracks[i];
        for (uint32_t k = 0; k < t->nlanes; k++) {
            if (t->used && t->lanes[k].seq)
                pf_lane_pop(f, &t->lanes[k], UINT64_MAX);
            free(t->lanes[k].stack);
            free(t->lanes[k].names);
        }
        free(t->lanes);
    }
    free(f->tracks);
    f->tracks = NULL;
    f->ntracks = f->cap = 0;
}

static int perfetto_session(perfetto *f, export_ctx *x)
{
    cupstore_txn *txn;
    int rc;
    f->x = x;
    memset(f->dev_uuid, 0, sizeof f->dev_uuid);
    f->health_uuid = f->loss_uuid = 0;
    struct health_state *hs = calloc(1, sizeof *hs);
    struct loss_state ls = {0};
    if (!hs)
        return ENOMEM;
    hs->f = f;
    hs->ls = &ls;
    if ((rc = cupstore_txn_begin(x->env, false, &txn)) != 0) {
        free(hs);
        return rc;
    }
    rc = cupstore_health_scan(txn, x->from_ns / 1000000000ull, x->to_ns / 1000000000ull,
                              on_health, hs);
    cupstore_txn_abort(txn);
    for (unsigned l = 0; !rc && l < CUPSTORE_LOSS_MAX; l++)
        if (ls.w[l].open)
            loss_emit(f, l, &ls.w[l]);
    free(hs);
    f->range_table = false;
    if (!rc) {
        model_ranges *m = NULL;
        if (cupstore_txn_begin(x->env, false, &txn) == 0) {
            int lrc = model_ranges_load(txn, NULL, &m);
            cupstore_txn_abort(txn);
            f->range_table = lrc == 0 && m && m->ninst > 0;
            model_ranges_free(m);
        }
    }
    if (!rc && f->range_table)
        rc = export_gnvtx_open(x, &f->gnvtx);
    if (!rc && (rc = export_lost_load(&f->lost, x)) == 0 && f->lost.n &&
        !(f->lost_at = calloc(f->lost.n, sizeof *f->lost_at)))
        rc = ENOMEM;
    if (!rc)
        rc = export_scan(x, on_record, on_slice, f);
    export_gnvtx_close(f->gnvtx);
    f->gnvtx = NULL;
    if (!rc)
        rc = pf_write_nvtx(f);
    if (!rc)
        rc = lost_write(f, x);
    free(f->lost_at);
    f->lost_at = NULL;
    export_lost_free(&f->lost);
    tracks_close(f);
    return rc ? rc : f->p.err ? f->p.err : f->o->err;
}

int export_perfetto(export_ctx *x, xout *o)
{
    perfetto *f = calloc(1, sizeof *f);
    int rc;
    if (!f)
        return ENOMEM;
    f->x = x;
    f->o = o;
    f->flows = calloc(FLOW_SLOTS, sizeof *f->flows);
    f->free_ids = malloc(FLOW_SLOTS * sizeof *f->free_ids);
    if (!f->flows || !f->free_ids || export_sort_init(&f->sort) != 0 ||
        pf_out_init(f, o, !(x->o && x->o->uncompressed)) != 0) {
        rc = ENOMEM;
        goto out;
    }
    if ((rc = pf_write_header(f)) != 0)
        goto out;
    if (x->job) {
        for (size_t i = 0; i < x->job->n; i++) {
            export_ctx *m = &x->job->procs[i];
            const model_summary *s = &m->sum;
            f->group = m->group;
            f->group_sort = s->rank >= 0 ? (uint64_t)s->rank : 1000000u + i;
            export_job_group_name(x->job, i, f->group_name, sizeof f->group_name);
            memset(f->flows, 0, FLOW_SLOTS * sizeof *f->flows);
            rc = perfetto_session(f, m);
            if (m->cancelled)
                x->cancelled = true;
            x->done += m->done;
            if (rc)
                goto out;
        }
    } else if ((rc = perfetto_session(f, x)) != 0) {
        goto out;
    }
    rc = pf_out_finish(f);
out:
    tracks_close(f);
    pf_out_free(f);
    export_sort_free(&f->sort);
    free(f->flows);
    free(f->free_ids);
    pb_free(&f->p);
    free(f);
    return rc;
}
