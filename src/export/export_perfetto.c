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
 * flows: the API call's BEGIN carries flow id = correlation, the first GPU
 * record of that correlation terminates it.
 *
 * Memory: the reorder window (bounded), per lane a stack (nesting depth)
 * and an interning map (bounded by the session's names), a fixed flow
 * table, one packet buffer.  Nothing grows with the window's length.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export_int.h"
#include "export_pb.h"

/* ---- Field numbers (perfetto/protos, see tests/perfetto/) ----------------- */
enum {
    F_TRACE_PACKET = 1,
    /* TracePacket */
    F_TP_TIMESTAMP = 8, F_TP_CLOCK_ID = 58, F_TP_TRACK_EVENT = 11, F_TP_TRACK_DESC = 60,
    F_TP_CHROME_EVENTS = 5, F_TP_CLOCK_SNAPSHOT = 6, F_TP_SEQ_ID = 10, F_TP_INTERNED = 12,
    F_TP_SEQ_FLAGS = 13, F_TP_DEFAULTS = 59,
    /* TracePacketDefaults, TrackEventDefaults */
    F_TPD_CLOCK_ID = 58, F_TPD_TRACK_EVENT = 11, F_TED_TRACK_UUID = 11,
    /* ClockSnapshot */
    F_CS_CLOCKS = 1, F_CS_PRIMARY = 2, F_CLK_ID = 1, F_CLK_TS = 2, F_CLK_INCREMENTAL = 3,
    /* InternedData */
    F_ID_CATEGORIES = 1, F_ID_NAMES = 2, F_ID_ANNOTATION_NAMES = 3, F_IID = 1, F_INAME = 2,
    /* TrackEvent */
    F_TE_CATEGORY_IIDS = 3, F_TE_NAME_IID = 10, F_TE_NAME = 23, F_TE_TYPE = 9,
    F_TE_TRACK_UUID = 11, F_TE_COUNTER = 30, F_TE_FLOW_OLD = 36, F_TE_TERM_FLOW_OLD = 42,
    F_TE_ANNOTATIONS = 4,
    /* DebugAnnotation */
    F_DA_NAME_IID = 1, F_DA_NAME = 10, F_DA_BOOL = 2, F_DA_UINT = 3, F_DA_STRING = 6,
    /* TrackDescriptor, ProcessDescriptor, ThreadDescriptor */
    F_TD_UUID = 1, F_TD_PARENT = 5, F_TD_NAME = 2, F_TD_PROCESS = 3, F_TD_THREAD = 4,
    F_TD_COUNTER = 8, F_TD_ORDER = 12, F_PD_PID = 1, F_PD_NAME = 6, F_PD_SORT = 3,
    F_THD_PID = 1, F_THD_TID = 2, F_THD_NAME = 5, F_CD_UNIT_NAME = 6,
    /* ChromeEventBundle, ChromeMetadata */
    F_CEB_METADATA = 2, F_CM_NAME = 1, F_CM_STRING = 2, F_CM_JSON = 5,
};
enum { TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };
enum { SEQ_INCREMENTAL_STATE_CLEARED = 1 };
#define CLOCK_REALTIME_ID 1
#define CLOCK_INCREMENTAL 64   /* sequence-scoped clock (64..127)           */

/* Interned name keys: store name ids below 2^32, then synthetic names. */
#define KEY_KIND (1ull << 40)       /* + kind: the kind's name              */
#define KEY_CBID (2ull << 40)       /* + cbid: "cbid N"                     */
#define KEY_NVTX (3ull << 40)       /* + index into model_ranges.names      */

/* Debug annotation names (iids, fixed) */
enum { DA_BYTES = 1, DA_TRUNCATED, DA_END_MISSING, DA_OPEN, DA_DOMAIN, DA_COUNT, DA_SECONDS,
       DA_MAX };
static const char *const da_names[DA_MAX] = {
    [DA_BYTES] = "bytes", [DA_TRUNCATED] = "truncated", [DA_END_MISSING] = "end_missing",
    [DA_OPEN] = "open", [DA_DOMAIN] = "domain", [DA_COUNT] = "count",
    [DA_SECONDS] = "seconds",
};

#define FLOW_SLOTS (1u << 16)
#define PF_LANE_NAMES_MAX 65536u     /* interned names per lane before a reset */

/* Track classes (the key of a track with its lanes). */
enum { CLS_STREAM, CLS_THREAD, CLS_KIND, CLS_NVTX, CLS_LOSS };

typedef struct iid_ent {
    uint64_t key;            /* 0: empty                                   */
    uint32_t iid;
} iid_ent;

/* One lane: one Perfetto track, written by one sequence. */
typedef struct pf_lane {
    uint32_t seq;            /* 0: not started (no event yet)              */
    uint64_t uuid;
    uint64_t last_ts;        /* the incremental clock's value              */
    uint64_t last_start;
    uint64_t *stack;         /* ends of the open slices                    */
    size_t depth, cap;
    iid_ent *names;          /* name key -> iid on this sequence           */
    size_t ncap, nn;
    uint32_t cats;           /* categories interned (bit = kind)           */
    uint32_t das;            /* annotation names interned (bit = DA_*)     */
} pf_lane;

typedef struct pf_track {
    uint64_t pid, tid;       /* key (tid: thread, or stream/kind and device) */
    uint64_t shown;          /* the stream, thread, kind or class it shows */
    uint16_t device;
    bool used;
    uint8_t cls;
    uint32_t nlanes;
    pf_lane *lanes;
} pf_track;

typedef struct pf_flow {
    uint32_t corr;
    bool used;
    uint64_t ts;
} pf_flow;

typedef struct pf_proc {
    uint64_t pid, uuid;
} pf_proc;

typedef struct perfetto {
    export_ctx *x;
    xout *o;
    pb p;                    /* the packet being built                     */
    uint32_t next_seq;
    uint64_t next_uuid;
    pf_track *tracks;
    size_t ntracks, cap;
    pf_proc procs[64];       /* host processes described so far            */
    size_t nprocs;
    uint64_t dev_uuid[CUPSTORE_DEVICE_MAX + 1]; /* device tracks (last: none) */
    uint64_t health_uuid, loss_uuid;
    export_sort sort;
    pf_flow *flows;
    uint64_t flow_base;      /* --job: process index << 32                 */
    uint64_t written, zero_ts, overflowed, flows_out, markers_in_ranges, nvtx;
    bool range_table;
    uint64_t group;          /* --job: the process' group pid, else 0      */
    uint64_t group_sort;
    char group_name[96];
    char namebuf[EXPORT_DEMANGLE_MAX];
    char utf8[3 * EXPORT_DEMANGLE_MAX + 8];
} perfetto;

/* ---- Packets ------------------------------------------------------------- */

static void packet_begin(perfetto *f)
{
    f->p.len = 0;
}

/* Frame the built packet as Trace.packet and write it out. */
static void packet_end(perfetto *f)
{
    uint8_t hdr[11];
    size_t n = 0;
    if (f->p.err)
        return;
    hdr[n++] = (uint8_t)((F_TRACE_PACKET << 3) | PB_LEN);
    n += pb_varint_at(hdr + n, f->p.len);
    xout_put(f->o, (const char *)hdr, n);
    xout_put(f->o, (const char *)f->p.b, f->p.len);
}

/* Bytes as valid UTF-8 (protobuf strings must be): invalid sequences
 * become U+FFFD.  Returns a pointer to f->utf8 (or s when already valid). */
static const char *utf8_clean(perfetto *f, const char *s, size_t n, size_t *out_len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, k = 0;
    bool clean = true;
    if (n > EXPORT_DEMANGLE_MAX)
        n = EXPORT_DEMANGLE_MAX;
    while (i < n) {
        unsigned c = u[i];
        size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
                                  : (c & 0xf8) == 0xf0 ? 4 : 0;
        bool ok = len && i + len <= n;
        for (size_t j = 1; ok && j < len; j++)
            ok = (u[i + j] & 0xc0) == 0x80;
        if (ok && len == 2)
            ok = c >= 0xc2;
        if (ok && len == 3) {
            unsigned cp = ((c & 0x0fu) << 12) | ((u[i + 1] & 0x3fu) << 6) | (u[i + 2] & 0x3fu);
            ok = cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff);
        }
        if (ok && len == 4) {
            unsigned cp = ((c & 0x07u) << 18) | ((u[i + 1] & 0x3fu) << 12);
            ok = cp >= 0x10000 && cp <= 0x10ffff;
        }
        if (ok) {
            memcpy(f->utf8 + k, s + i, len);
            k += len;
            i += len;
        } else {
            memcpy(f->utf8 + k, "\xef\xbf\xbd", 3);
            k += 3;
            i++;
            clean = false;
        }
    }
    *out_len = clean ? n : k;
    return clean ? s : f->utf8;
}

static void pb_clean_str(perfetto *f, uint32_t field, const char *s, size_t n)
{
    size_t len;
    const char *c = utf8_clean(f, s, n, &len);
    pb_bytes(&f->p, field, c, len);
}

/* ---- Sequences and track descriptors ------------------------------------------ */

/* The first packet of a lane's sequence: incremental state cleared, the
 * lane's track as default, the incremental clock at ts. */
static void sequence_start(perfetto *f, pf_lane *l, uint64_t ts, bool default_track)
{
    l->seq = ++f->next_seq;
    l->last_ts = ts;
    packet_begin(f);
    pb *p = &f->p;
    pb_uint(p, F_TP_SEQ_ID, l->seq);
    pb_uint(p, F_TP_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
    size_t d = pb_open(p, F_TP_DEFAULTS);
    pb_uint(p, F_TPD_CLOCK_ID, CLOCK_INCREMENTAL);
    if (default_track) {
        size_t t = pb_open(p, F_TPD_TRACK_EVENT);
        pb_uint(p, F_TED_TRACK_UUID, l->uuid);
        pb_close(p, t);
    }
    pb_close(p, d);
    size_t cs = pb_open(p, F_TP_CLOCK_SNAPSHOT);
    size_t c = pb_open(p, F_CS_CLOCKS);
    pb_uint(p, F_CLK_ID, CLOCK_REALTIME_ID);
    pb_uint(p, F_CLK_TS, ts);
    pb_close(p, c);
    c = pb_open(p, F_CS_CLOCKS);
    pb_uint(p, F_CLK_ID, CLOCK_INCREMENTAL);
    pb_uint(p, F_CLK_TS, ts);
    pb_uint(p, F_CLK_INCREMENTAL, 1);
    pb_close(p, c);
    pb_close(p, cs);
    packet_end(f);
}

/* A TrackDescriptor packet (on sequence 1, the metadata's); pid/tid for a
 * thread track, pid alone for a process track, neither for a plain one. */
static void describe(perfetto *f, uint64_t uuid, uint64_t parent, const char *name, int pid,
                     int64_t tid, bool thread, bool process, bool counter, int64_t order)
{
    pb *p = &f->p;
    packet_begin(f);
    pb_uint(p, F_TP_SEQ_ID, 1);
    size_t td = pb_open(p, F_TP_TRACK_DESC);
    pb_uint(p, F_TD_UUID, uuid);
    if (parent)
        pb_uint(p, F_TD_PARENT, parent);
    if (process) {
        size_t pd = pb_open(p, F_TD_PROCESS);
        pb_int(p, F_PD_PID, pid);
        pb_clean_str(f, F_PD_NAME, name, strlen(name));
        if (order >= 0)
            pb_int(p, F_PD_SORT, order);
        pb_close(p, pd);
    } else if (thread) {
        size_t th = pb_open(p, F_TD_THREAD);
        pb_int(p, F_THD_PID, pid);
        pb_int(p, F_THD_TID, tid);
        pb_clean_str(f, F_THD_NAME, name, strlen(name));
        pb_close(p, th);
    } else {
        pb_clean_str(f, F_TD_NAME, name, strlen(name));
        if (order >= 0)
            pb_int(p, F_TD_ORDER, order);
    }
    if (counter) {
        size_t cd = pb_open(p, F_TD_COUNTER);
        pb_close(p, cd);
    }
    pb_close(p, td);
    packet_end(f);
}

/* The process track of pid (described once). */
static uint64_t process_uuid(perfetto *f, uint64_t pid)
{
    char buf[128];
    for (size_t i = 0; i < f->nprocs; i++)
        if (f->procs[i].pid == pid)
            return f->procs[i].uuid;
    uint64_t uuid = ++f->next_uuid;
    if (f->nprocs < sizeof f->procs / sizeof f->procs[0])
        f->procs[f->nprocs++] = (pf_proc){pid, uuid};
    if (f->group)
        snprintf(buf, sizeof buf, "%s", f->group_name);
    else
        snprintf(buf, sizeof buf, "host process %llu", (unsigned long long)pid);
    describe(f, uuid, 0, buf, (int)pid, 0, false, true, false,
             f->group ? (int64_t)f->group_sort : 1);
    return uuid;
}

/* The track of a GPU (its streams are children). */
static uint64_t device_uuid(perfetto *f, unsigned d)
{
    unsigned slot = d < CUPSTORE_DEVICE_MAX ? d : CUPSTORE_DEVICE_MAX;
    char buf[200];
    if (f->dev_uuid[slot])
        return f->dev_uuid[slot];
    const model_prov *pv = f->x->sum.prov;
    if (slot < CUPSTORE_DEVICE_MAX && pv && pv->dev[slot].known)
        snprintf(buf, sizeof buf, "GPU %u: %s", slot, pv->dev[slot].name);
    else if (slot < CUPSTORE_DEVICE_MAX)
        snprintf(buf, sizeof buf, "GPU %u", slot);
    else
        snprintf(buf, sizeof buf, "GPU (unknown device)");
    f->dev_uuid[slot] = ++f->next_uuid;
    describe(f, f->dev_uuid[slot], f->group ? process_uuid(f, f->group) : 0, buf, 0, 0, false,
             false, false, 10 + slot);
    return f->dev_uuid[slot];
}

static uint64_t health_uuid(perfetto *f)
{
    if (!f->health_uuid) {
        f->health_uuid = ++f->next_uuid;
        describe(f, f->health_uuid, f->group ? process_uuid(f, f->group) : 0, "cuptop health",
                 0, 0, false, false, false, 0);
    }
    return f->health_uuid;
}

/* ---- Tracks and lanes ---------------------------------------------------------- */

static size_t track_hash(uint64_t pid, uint64_t tid, uint8_t cls, size_t cap)
{
    return (size_t)((pid * 0x9e3779b97f4a7c15ull) ^ (tid * 0xc2b2ae3d27d4eb4full) ^ cls) &
           (cap - 1);
}

static pf_track *track_get(perfetto *f, uint64_t pid, uint64_t tid, uint8_t cls,
                           uint16_t device, uint64_t shown)
{
    if ((f->ntracks + 1) * 2 > f->cap) {
        size_t ncap = f->cap ? f->cap * 2 : 64;
        pf_track *nt = calloc(ncap, sizeof *nt);
        if (!nt)
            return NULL;
        for (size_t i = 0; i < f->cap; i++) {
            if (!f->tracks[i].used)
                continue;
            size_t j = track_hash(f->tracks[i].pid, f->tracks[i].tid, f->tracks[i].cls, ncap);
            while (nt[j].used)
                j = (j + 1) & (ncap - 1);
            nt[j] = f->tracks[i];
        }
        free(f->tracks);
        f->tracks = nt;
        f->cap = ncap;
    }
    size_t i = track_hash(pid, tid, cls, f->cap);
    while (f->tracks[i].used &&
           (f->tracks[i].pid != pid || f->tracks[i].tid != tid || f->tracks[i].cls != cls))
        i = (i + 1) & (f->cap - 1);
    pf_track *t = &f->tracks[i];
    if (!t->used) {
        *t = (pf_track){.pid = pid, .tid = tid, .shown = shown, .cls = cls, .device = device,
                         .used = true};
        f->ntracks++;
    }
    return t;
}

/* Describe lane k of t (its uuid is new). */
static void lane_describe(perfetto *f, const pf_track *t, uint32_t k, pf_lane *l)
{
    char buf[160];
    int n;
    l->uuid = ++f->next_uuid;
    switch (t->cls) {
    case CLS_STREAM:
        n = snprintf(buf, sizeof buf, "stream %llu", (unsigned long long)t->shown);
        break;
    case CLS_KIND:
        n = snprintf(buf, sizeof buf, "%s", cupstore_kind_name((unsigned)t->shown));
        break;
    case CLS_NVTX:
        n = snprintf(buf, sizeof buf, "thread %llu NVTX", (unsigned long long)t->shown);
        break;
    case CLS_LOSS:
        n = snprintf(buf, sizeof buf, "loss: %s", cupstore_loss_name((unsigned)t->shown));
        break;
    default:
        n = snprintf(buf, sizeof buf, "thread %llu", (unsigned long long)t->shown);
        break;
    }
    if (k && n > 0 && (size_t)n < sizeof buf)
        snprintf(buf + n, sizeof buf - (size_t)n, " (overlap %u)", k);
    uint64_t parent;
    if (t->cls == CLS_STREAM || t->cls == CLS_KIND)
        parent = device_uuid(f, t->device);
    else if (t->cls == CLS_LOSS)
        parent = f->loss_uuid;
    else
        parent = process_uuid(f, t->pid);
    bool thread = t->cls == CLS_THREAD && k == 0;
    describe(f, l->uuid, thread ? 0 : parent, buf, (int)t->pid, (int64_t)t->shown, thread, false,
             false, t->cls == CLS_STREAM ? (int64_t)(t->shown & 0x7fffffff) + (int64_t)k : -1);
}

/* The lane of t where [s, e] nests (a new one when none does). */
static pf_lane *track_place(perfetto *f, pf_track *t, uint64_t s, uint64_t e)
{
    for (uint32_t k = 0;; k++) {
        if (k == t->nlanes) {
            pf_lane *nl = realloc(t->lanes, (k + 1) * sizeof *nl);
            if (!nl)
                return NULL;
            t->lanes = nl;
            memset(&nl[k], 0, sizeof nl[k]);
            t->nlanes++;
            lane_describe(f, t, k, &nl[k]);
            if (k)
                f->overflowed++;
        }
        pf_lane *l = &t->lanes[k];
        if (l->seq && s < l->last_start)
            continue; /* a late record: never reorder a lane's past */
        size_t d = l->depth;
        while (d && l->stack[d - 1] <= s)
            d--;
        if (d && e > l->stack[d - 1])
            continue;
        return l;
    }
}

/* A packet on lane l at ts: sequence id and timestamp delta. */
static void lane_packet(perfetto *f, pf_lane *l, uint64_t ts)
{
    packet_begin(f);
    pb_uint(&f->p, F_TP_TIMESTAMP, ts - l->last_ts);
    pb_uint(&f->p, F_TP_SEQ_ID, l->seq);
    l->last_ts = ts;
}

/* End the open slices of l that end at or before ts (all: UINT64_MAX). */
static void lane_pop(perfetto *f, pf_lane *l, uint64_t ts)
{
    while (l->depth && l->stack[l->depth - 1] <= ts) {
        uint64_t e = l->stack[--l->depth];
        lane_packet(f, l, e);
        size_t te = pb_open(&f->p, F_TP_TRACK_EVENT);
        pb_uint(&f->p, F_TE_TYPE, TYPE_SLICE_END);
        pb_close(&f->p, te);
        packet_end(f);
    }
}

/* The iid of a name key on l's sequence; *fresh: first use (the caller
 * interns it in this packet). */
static uint32_t lane_iid(pf_lane *l, uint64_t key, bool *fresh)
{
    *fresh = false;
    if ((l->nn + 1) * 2 > l->ncap) {
        size_t ncap = l->ncap ? l->ncap * 2 : 16;
        iid_ent *ne = calloc(ncap, sizeof *ne);
        if (!ne)
            return 0;
        for (size_t i = 0; i < l->ncap; i++) {
            if (!l->names[i].key)
                continue;
            size_t j = (size_t)(l->names[i].key * 0x9e3779b97f4a7c15ull >> 20) & (ncap - 1);
            while (ne[j].key)
                j = (j + 1) & (ncap - 1);
            ne[j] = l->names[i];
        }
        free(l->names);
        l->names = ne;
        l->ncap = ncap;
    }
    size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull >> 20) & (l->ncap - 1);
    while (l->names[i].key && l->names[i].key != key)
        i = (i + 1) & (l->ncap - 1);
    if (!l->names[i].key) {
        l->names[i].key = key;
        l->names[i].iid = (uint32_t)++l->nn;
        *fresh = true;
    }
    return l->names[i].iid;
}

/* The text of a record's name key into f->namebuf; returns its length. */
static size_t name_text(perfetto *f, const cupstore_record *r, uint64_t key)
{
    const char *raw;
    size_t rl;
    if (key < KEY_KIND && f->x->txn && cupstore_name_get(f->x->txn, r->name_id, &raw, &rl) == 0) {
        size_t dl = 0;
        if (!f->x->names.raw && r->kind == CUPSTORE_KIND_KERNEL)
            dl = export_demangle(raw, rl, f->namebuf, sizeof f->namebuf);
        if (dl)
            return dl;
        if (rl >= sizeof f->namebuf)
            rl = sizeof f->namebuf - 1;
        memcpy(f->namebuf, raw, rl);
        return rl;
    }
    if (key >= KEY_CBID && key < KEY_NVTX)
        return (size_t)snprintf(f->namebuf, sizeof f->namebuf, "cbid %u", r->cbid);
    return (size_t)snprintf(f->namebuf, sizeof f->namebuf, "%s", cupstore_kind_name(r->kind));
}

/* ---- Records ------------------------------------------------------------------- */

static bool is_gpu(unsigned kind)
{
    return kind == CUPSTORE_KIND_KERNEL || kind == CUPSTORE_KIND_MEMCPY ||
           kind == CUPSTORE_KIND_MEMSET;
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

/* Intern what the BEGIN on l needs: returns the open interned_data mark
 * or SIZE_MAX when nothing is new. */
static size_t interned_open(perfetto *f, size_t mark)
{
    return mark != SIZE_MAX ? mark : pb_open(&f->p, F_TP_INTERNED);
}

static void intern_da(perfetto *f, pf_lane *l, unsigned da, size_t *mark)
{
    if (l->das & (1u << da))
        return;
    l->das |= 1u << da;
    *mark = interned_open(f, *mark);
    size_t e = pb_open(&f->p, F_ID_ANNOTATION_NAMES);
    pb_uint(&f->p, F_IID, da);
    pb_str(&f->p, F_INAME, da_names[da]);
    pb_close(&f->p, e);
}

static void annotate_uint(perfetto *f, unsigned da, uint64_t v)
{
    size_t a = pb_open(&f->p, F_TE_ANNOTATIONS);
    pb_uint(&f->p, F_DA_NAME_IID, da);
    pb_uint(&f->p, F_DA_UINT, v);
    pb_close(&f->p, a);
}

static void annotate_bool(perfetto *f, unsigned da)
{
    size_t a = pb_open(&f->p, F_TE_ANNOTATIONS);
    pb_uint(&f->p, F_DA_NAME_IID, da);
    pb_uint(&f->p, F_DA_BOOL, 1);
    pb_close(&f->p, a);
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
    pf_track *t = track_get(f, pid, cls == CLS_THREAD ? tid : tid | (uint64_t)r->device << 40,
                            cls, r->device, tid);
    if (!t)
        return ENOMEM;
    pf_lane *l = track_place(f, t, s, e);
    if (!l)
        return ENOMEM;
    if (!l->seq)
        sequence_start(f, l, s, true);
    lane_pop(f, l, s);
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

    /* the BEGIN packet: interned data first (what this sequence lacks) */
    uint64_t key = r->name_id ? r->name_id
                   : is_api(r->kind) && r->cbid ? KEY_CBID + r->cbid
                                                : KEY_KIND + r->kind;
    if (l->nn >= PF_LANE_NAMES_MAX)
        key = KEY_KIND + r->kind; /* a lane with this many names: kinds only */
    bool fresh;
    uint32_t iid = lane_iid(l, key, &fresh);
    if (!iid)
        return ENOMEM;
    lane_packet(f, l, s);
    pb *p = &f->p;
    size_t im = SIZE_MAX;
    if (fresh) {
        size_t n = name_text(f, r, key);
        im = interned_open(f, im);
        size_t en = pb_open(p, F_ID_NAMES);
        pb_uint(p, F_IID, iid);
        pb_clean_str(f, F_INAME, f->namebuf, n);
        pb_close(p, en);
    }
    if (!(l->cats & (1u << r->kind))) {
        l->cats |= 1u << r->kind;
        im = interned_open(f, im);
        size_t ec = pb_open(p, F_ID_CATEGORIES);
        pb_uint(p, F_IID, r->kind + 1u);
        pb_str(p, F_INAME, cupstore_kind_name(r->kind));
        pb_close(p, ec);
    }
    bool bytes = r->kind == CUPSTORE_KIND_MEMCPY || r->kind == CUPSTORE_KIND_MEMSET;
    if (bytes)
        intern_da(f, l, DA_BYTES, &im);
    if (r->flags & CUPSTORE_RF_TRUNCATED)
        intern_da(f, l, DA_TRUNCATED, &im);
    if (r->end_ns < r->start_ns)
        intern_da(f, l, DA_END_MISSING, &im);
    if (im != SIZE_MAX)
        pb_close(p, im);
    size_t te = pb_open(p, F_TP_TRACK_EVENT);
    pb_uint(p, F_TE_TYPE, TYPE_SLICE_BEGIN);
    pb_uint(p, F_TE_NAME_IID, iid);
    pb_uint(p, F_TE_CATEGORY_IIDS, r->kind + 1u);
    if (bytes)
        annotate_uint(f, DA_BYTES, r->bytes);
    if (r->flags & CUPSTORE_RF_TRUNCATED)
        annotate_bool(f, DA_TRUNCATED);
    if (r->end_ns < r->start_ns)
        annotate_bool(f, DA_END_MISSING);
    if (r->correlation && is_api(r->kind)) {
        pf_flow *fl = flow_set(f, r->correlation);
        *fl = (pf_flow){.corr = r->correlation, .used = true, .ts = s};
        pb_uint(p, F_TE_FLOW_OLD, f->flow_base | r->correlation);
    } else if (r->correlation && is_gpu(r->kind)) {
        pf_flow *fl = flow_find(f, r->correlation);
        if (fl && fl->ts <= s) {
            pb_uint(p, F_TE_TERM_FLOW_OLD, f->flow_base | r->correlation);
            fl->used = false; /* one arrow: launch -> its first GPU record */
            f->flows_out++;
        }
    }
    pb_close(p, te);
    packet_end(f);
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

/* ---- NVTX ranges ----------------------------------------------------------------- */

struct nvtx_ord {
    uint64_t s, e;
    size_t i;
};

static int nvtx_cmp(const void *a, const void *b)
{
    const struct nvtx_ord *x = a, *y = b;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    if (x->e != y->e)
        return x->e > y->e ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* The window's NVTX ranges as slices on a track per thread ("thread T
 * NVTX"), nested as pushed; open ranges end at the window's end (open),
 * marks are instants. */
static int write_nvtx(perfetto *f)
{
    export_ctx *x = f->x;
    cupstore_txn *txn;
    model_ranges *m = NULL;
    int rc = cupstore_txn_begin(x->env, false, &txn);
    if (rc)
        return rc;
    rc = model_ranges_load(txn, NULL, &m);
    cupstore_txn_abort(txn);
    if (rc)
        return rc;
    struct nvtx_ord *ord = calloc(m->ninst ? m->ninst : 1, sizeof *ord);
    size_t n = 0;
    if (!ord) {
        model_ranges_free(m);
        return ENOMEM;
    }
    for (size_t i = 0; i < m->ninst; i++) {
        const model_range_inst *r = &m->inst[i];
        if (r->name == UINT32_MAX || !r->start_ns)
            continue;
        bool open = model_range_open(r), point = r->flags & CUPSTORE_RANGE_POINT;
        uint64_t s = r->start_ns, e = open ? x->to_ns : point ? r->start_ns : r->end_ns;
        if (s > x->to_ns || e < x->from_ns || e < s)
            continue;
        ord[n++] = (struct nvtx_ord){s < x->from_ns ? x->from_ns : s,
                                     e > x->to_ns ? x->to_ns : e, i};
    }
    qsort(ord, n, sizeof *ord, nvtx_cmp);
    for (size_t k = 0; k < n && !rc; k++) {
        const model_range_inst *r = &m->inst[ord[k].i];
        const model_range_name *nm = &m->names[r->name];
        bool open = model_range_open(r), point = r->flags & CUPSTORE_RANGE_POINT;
        uint64_t s = ord[k].s, e = ord[k].e;
        uint64_t pid = f->group ? f->group
                                : r->pid ? r->pid : (uint64_t)(x->sum.pid > 0 ? x->sum.pid : 0);
        pf_track *t = track_get(f, pid, r->tid, CLS_NVTX, CUPSTORE_DEVICE_NONE, r->tid);
        pf_lane *l = t ? track_place(f, t, s, e) : NULL;
        if (!l) {
            rc = ENOMEM;
            break;
        }
        if (!l->seq)
            sequence_start(f, l, s, true);
        lane_pop(f, l, s);
        if (!point) {
            if (l->depth == l->cap) {
                size_t ncap = l->cap ? l->cap * 2 : 4;
                uint64_t *ns = realloc(l->stack, ncap * sizeof *ns);
                if (!ns) {
                    rc = ENOMEM;
                    break;
                }
                l->stack = ns;
                l->cap = ncap;
            }
            l->stack[l->depth++] = e;
        }
        l->last_start = s;
        bool fresh;
        uint32_t iid = lane_iid(l, KEY_NVTX + r->name, &fresh);
        lane_packet(f, l, s);
        pb *p = &f->p;
        size_t im = SIZE_MAX;
        if (fresh) {
            im = interned_open(f, im);
            size_t en = pb_open(p, F_ID_NAMES);
            pb_uint(p, F_IID, iid);
            pb_clean_str(f, F_INAME, nm->name, nm->name_len);
            pb_close(p, en);
        }
        if (!(l->cats & (1u << CUPSTORE_KIND_MARKER))) {
            l->cats |= 1u << CUPSTORE_KIND_MARKER;
            im = interned_open(f, im);
            size_t ec = pb_open(p, F_ID_CATEGORIES);
            pb_uint(p, F_IID, CUPSTORE_KIND_MARKER + 1u);
            pb_str(p, F_INAME, "nvtx");
            pb_close(p, ec);
        }
        if (nm->domain_len)
            intern_da(f, l, DA_DOMAIN, &im);
        if (open)
            intern_da(f, l, DA_OPEN, &im);
        if (im != SIZE_MAX)
            pb_close(p, im);
        size_t te = pb_open(p, F_TP_TRACK_EVENT);
        pb_uint(p, F_TE_TYPE, point ? TYPE_INSTANT : TYPE_SLICE_BEGIN);
        pb_uint(p, F_TE_NAME_IID, iid);
        pb_uint(p, F_TE_CATEGORY_IIDS, CUPSTORE_KIND_MARKER + 1u);
        if (nm->domain_len) {
            size_t a = pb_open(p, F_TE_ANNOTATIONS);
            pb_uint(p, F_DA_NAME_IID, DA_DOMAIN);
            pb_clean_str(f, F_DA_STRING, nm->domain, nm->domain_len);
            pb_close(p, a);
        }
        if (open)
            annotate_bool(f, DA_OPEN);
        pb_close(p, te);
        packet_end(f);
        f->nvtx++;
        rc = p->err ? p->err : f->o->err;
    }
    free(ord);
    model_ranges_free(m);
    return rc;
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
        uint64_t parent = health_uuid(f);
        char buf[96];
        for (unsigned c = 0; c < CT_MAX; c++) {
            bool show = c < CT_LOSS0 ? s->records_by_kind[c - CT_KIND0] > 0
                        : c < CT_POOL ? s->loss[c - CT_LOSS0] > 0
                                      : true;
            if (!show)
                continue;
            hs->uuid[c] = ++f->next_uuid;
            counter_name(c, buf, sizeof buf);
            describe(f, hs->uuid[c], parent, buf, 0, 0, false, false, true, (int64_t)c);
        }
        hs->described = true;
        sequence_start(f, &hs->seq, ns, false);
    }
    loss_second(f, hs->ls, h);
    for (unsigned c = 0; c < CT_MAX; c++) {
        if (!hs->uuid[c])
            continue;
        lane_packet(f, &hs->seq, ns);
        size_t te = pb_open(&f->p, F_TP_TRACK_EVENT);
        pb_uint(&f->p, F_TE_TYPE, TYPE_COUNTER);
        pb_uint(&f->p, F_TE_TRACK_UUID, hs->uuid[c]);
        pb_int(&f->p, F_TE_COUNTER, (int64_t)counter_value(h, c));
        pb_close(&f->p, te);
        packet_end(f);
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

/* Draw the window of class l as one slice on the "loss: CLASS" track. */
static void loss_emit(perfetto *f, unsigned cls, const struct loss_win *w)
{
    char name[96];
    if (!f->loss_uuid) {
        f->loss_uuid = ++f->next_uuid;
        describe(f, f->loss_uuid, health_uuid(f), "loss", 0, 0, false, false, false, -1);
    }
    pf_track *t = track_get(f, f->group, cls, CLS_LOSS, CUPSTORE_DEVICE_NONE, cls);
    uint64_t s = w->from_s * 1000000000ull, e = (w->to_s + 1) * 1000000000ull;
    pf_lane *l = t ? track_place(f, t, s, e) : NULL;
    if (!l) {
        f->p.err = ENOMEM;
        return;
    }
    if (!l->seq)
        sequence_start(f, l, s, true);
    lane_pop(f, l, s);
    l->last_start = s;
    lane_packet(f, l, s);
    pb *p = &f->p;
    size_t im = SIZE_MAX;
    intern_da(f, l, DA_COUNT, &im);
    intern_da(f, l, DA_SECONDS, &im);
    if (im != SIZE_MAX)
        pb_close(p, im);
    size_t te = pb_open(p, F_TP_TRACK_EVENT);
    pb_uint(p, F_TE_TYPE, TYPE_SLICE_BEGIN);
    snprintf(name, sizeof name, "%s: %llu", cupstore_loss_name(cls),
             (unsigned long long)w->count);
    pb_str(p, F_TE_NAME, name);
    annotate_uint(f, DA_COUNT, w->count);
    annotate_uint(f, DA_SECONDS, w->to_s - w->from_s + 1);
    pb_close(p, te);
    packet_end(f);
    lane_packet(f, l, e);
    te = pb_open(p, F_TP_TRACK_EVENT);
    pb_uint(p, F_TE_TYPE, TYPE_SLICE_END);
    pb_close(p, te);
    packet_end(f);
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

/* ---- Metadata -------------------------------------------------------------------- */

static void meta_entry(perfetto *f, pb *p, const char *name, const char *val, size_t len,
                       bool json)
{
    size_t m = pb_open(p, F_CEB_METADATA);
    pb_str(p, F_CM_NAME, name);
    pb_clean_str(f, json ? F_CM_JSON : F_CM_STRING, val, len);
    pb_close(p, m);
}

/* The trace's first packets: the trace clock (CLOCK_REALTIME, which CUPTI
 * timestamps are), then the metadata as a ChromeEventBundle: the chrome
 * export's otherData object (verdict, reasons, losses, versions, devices,
 * epochs; per rank for --job) and its headline values. */
static int write_header(perfetto *f)
{
    export_ctx *x = f->x;
    pb *p = &f->p;
    packet_begin(f);
    pb_uint(p, F_TP_SEQ_ID, 1);
    pb_uint(p, F_TP_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
    size_t cs = pb_open(p, F_TP_CLOCK_SNAPSHOT);
    size_t c = pb_open(p, F_CS_CLOCKS);
    pb_uint(p, F_CLK_ID, CLOCK_REALTIME_ID);
    pb_uint(p, F_CLK_TS, x->base_ns);
    pb_close(p, c);
    pb_uint(p, F_CS_PRIMARY, CLOCK_REALTIME_ID);
    pb_close(p, cs);
    packet_end(f);
    f->next_seq = 1;

    /* the otherData JSON, through a temporary file (xout writes to fds) */
    FILE *tmp = tmpfile();
    if (!tmp)
        return errno;
    xout jo;
    int rc = xout_init(&jo, fileno(tmp));
    if (!rc) {
        xout_putc(&jo, '{');
        rc = export_chrome_metadata(x, &jo);
        xout_putc(&jo, '}');
        int frc = xout_flush(&jo);
        rc = rc ? rc : frc;
        xout_free(&jo);
    }
    long len = rc ? -1 : ftell(tmp);
    char *json = len > 0 ? malloc((size_t)len) : NULL;
    if (!rc && (!json || fseek(tmp, 0, SEEK_SET) != 0 || fread(json, 1, (size_t)len, tmp) !=
                                                            (size_t)len))
        rc = json ? EIO : ENOMEM;
    fclose(tmp);
    if (rc) {
        free(json);
        return rc;
    }
    packet_begin(f);
    pb_uint(p, F_TP_SEQ_ID, 1);
    pb_uint(p, F_TP_TIMESTAMP, x->base_ns);
    pb_uint(p, F_TP_CLOCK_ID, CLOCK_REALTIME_ID);
    size_t ceb = pb_open(p, F_TP_CHROME_EVENTS);
    meta_entry(f, p, "tool", "cuptop", 6, false);
    meta_entry(f, p, "cuptop_version", PACKAGE_VERSION, strlen(PACKAGE_VERSION), false);
    if (x->job) {
        const model_job *j = &x->job->j;
        meta_entry(f, p, "job", j->id, strlen(j->id), false);
        const char *v = j->complete ? "COMPLETE" : "INCOMPLETE";
        meta_entry(f, p, "verdict", v, strlen(v), false);
    } else {
        const model_summary *s = &x->sum;
        const char *v = model_verdict_name(s);
        meta_entry(f, p, "session", s->id, strlen(s->id), false);
        meta_entry(f, p, "verdict", v, strlen(v), false);
    }
    meta_entry(f, p, "otherData", json, (size_t)len, true);
    pb_close(p, ceb);
    packet_end(f);
    free(json);
    return p->err ? p->err : f->o->err;
}

/* ---- Sessions ----------------------------------------------------------------------- */

/* End every open slice (the lanes' stacks) and forget the tracks. */
static void tracks_close(perfetto *f)
{
    for (size_t i = 0; i < f->cap; i++) {
        pf_track *t = &f->tracks[i];
        for (uint32_t k = 0; k < t->nlanes; k++) {
            if (t->used && t->lanes[k].seq)
                lane_pop(f, &t->lanes[k], UINT64_MAX);
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
    if (!rc)
        rc = export_scan(x, on_record, on_slice, f);
    if (!rc)
        rc = write_nvtx(f);
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
    if (!f->flows || export_sort_init(&f->sort) != 0) {
        rc = ENOMEM;
        goto out;
    }
    if ((rc = write_header(f)) != 0)
        goto out;
    if (x->job) {
        for (size_t i = 0; i < x->job->n; i++) {
            export_ctx *m = &x->job->procs[i];
            const model_summary *s = &m->sum;
            f->group = m->group;
            f->group_sort = s->rank >= 0 ? (uint64_t)s->rank : 1000000u + i;
            f->flow_base = (uint64_t)(i + 1) << 32;
            if (s->rank >= 0)
                snprintf(f->group_name, sizeof f->group_name, "rank %d (pid %d)", s->rank,
                         s->pid);
            else
                snprintf(f->group_name, sizeof f->group_name, "no rank (pid %d)", s->pid);
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
    rc = o->err;
out:
    tracks_close(f);
    export_sort_free(&f->sort);
    free(f->flows);
    pb_free(&f->p);
    free(f);
    return rc;
}
