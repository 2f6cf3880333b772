/*
 * export_chrome.c - Chrome Trace Event JSON (Perfetto UI, chrome://tracing).
 *
 * Tracks: GPU work (kernel, memcpy, memset) on pid = DEV_PID + device,
 * tid = stream; runtime/driver API calls on pid = host process, tid =
 * thread; health rows as counters and losses as instants on HEALTH_PID.
 * Timestamps are microseconds from base_ns (the window start rounded down
 * to the second) with three decimals, so nanoseconds survive.
 *
 * Slices on one track must nest.  Records are put in (start asc, end desc,
 * arrival) order through the bounded reorder window of export_sort.c
 * (records of one chunk are not sorted).  Each track then
 * keeps a stack of open slice ends; a slice that would overlap without
 * nesting goes to the first overflow lane of its track where it nests
 * ("stream 7 (overlap 1)").  Memory: the window (bounded), one stack per
 * lane (bounded by the nesting depth), a fixed flow table.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export_int.h"

#define DEV_PID 1000000000ull     /* + device index; Linux pids stay below */
#define HEALTH_PID 999999990ull
#define OVERLAP_STRIDE (1ull << 22) /* lane k of tid t: t + k * stride;
                                       Linux tids and stream ids stay below */
#define KIND_TID 0x3fff00ull      /* + kind: records with no thread/stream */
#define FLOW_SLOTS (1u << 16)
/* export --job: each process is one group (pid); its GPU tracks are
 * threads of it, device d's from GROUP_GPU_TID(d) (device none: slot 16),
 * 16 overlap lanes apart before they meet the next device's. */
#define GROUP_GPU_TID(d) (0x80000000ull + (uint64_t)((d) < CUPSTORE_DEVICE_MAX ? (d) : CUPSTORE_DEVICE_MAX) * 0x4000000ull)
#define GROUP_GPU_MASK 0x3ffffffull

/* A string literal or "key": number, the literal's length known at compile
 * time (strlen on every key was 5% of a chrome export). */
#define XOUT_LIT(o, lit) xout_put((o), "" lit, sizeof(lit) - 1)
#define PUT_KV_U64(o, k, v) (XOUT_LIT(o, k), xout_u64((o), (v)))

typedef struct lane {
    uint64_t last_start;
    uint64_t *stack;          /* ends of the open slices                   */
    size_t depth, cap;
} lane;

typedef struct track {
    uint64_t pid, tid;        /* tid = stream or thread (lane 0)           */
    bool used;
    uint8_t kind_class;       /* 0 stream, 1 thread, 2 kind track          */
    uint32_t nlanes;
    lane *lanes;
} track;

typedef struct flow_slot {
    uint32_t corr;
    bool used;
    uint64_t ts, pid, tid;
} flow_slot;

typedef struct chrome {
    export_ctx *x;
    xout *o;
    bool first;               /* no event written yet (comma handling)     */
    track *tracks;
    size_t ntracks, cap;
    uint64_t pids[64];
    size_t npids;
    export_sort sort;         /* the reorder window (export_sort.c)        */
    flow_slot *flows;
    uint64_t flow_id;
    uint64_t written, zero_ts, overflowed, flows_out;
    bool range_table;         /* NVTX ranges drawn from the range table    */
    uint64_t markers_in_ranges;   /* MARKER records drawn only as ranges   */
    char devnames[CUPSTORE_DEVICE_MAX][160];
    uint64_t group;           /* --job: this process' group pid, else 0    */
    uint64_t group_sort;      /* its sort index (the rank)                 */
    char group_name[96];      /* "rank N (pid P)"                          */
} chrome;

/* The pid of the health counters and loss instants. */
static uint64_t health_pid(const chrome *c)
{
    return c->group ? c->group : HEALTH_PID;
}

/* ---- Small writers ------------------------------------------------------- */

static void ev_begin(chrome *c)
{
    if (c->first)
        XOUT_LIT(c->o, "\n{");
    else
        XOUT_LIT(c->o, ",\n{");
    c->first = false;
}


static void put_ts(chrome *c, uint64_t ns)
{
    XOUT_LIT(c->o, ",\"ts\":");
    xout_us(c->o, ns > c->x->base_ns ? ns - c->x->base_ns : 0);
}

/* ---- Names of processes and lanes ---------------------------------------- */

static void meta_event(chrome *c, const char *what, uint64_t pid, uint64_t tid, bool thread,
                       const char *name, size_t len, bool raw_json)
{
    ev_begin(c);
    XOUT_LIT(c->o, "\"ph\":\"M\",\"name\":\"");
    xout_puts(c->o, what);
    PUT_KV_U64(c->o, "\",\"pid\":", pid);
    if (thread)
        PUT_KV_U64(c->o, ",\"tid\":", tid);
    XOUT_LIT(c->o, ",\"args\":{\"name\":");
    if (raw_json) {
        xout_putc(c->o, '"');
        xout_put(c->o, name, len);
        xout_putc(c->o, '"');
    } else {
        xout_json_str(c->o, name, len);
    }
    XOUT_LIT(c->o, "}}");
}

static void process_seen(chrome *c, uint64_t pid)
{
    char buf[200];
    for (size_t i = 0; i < c->npids; i++)
        if (c->pids[i] == pid)
            return;
    if (c->npids < sizeof c->pids / sizeof c->pids[0])
        c->pids[c->npids++] = pid;
    if (c->group) {
        snprintf(buf, sizeof buf, "%s", c->group_name);
    } else if (pid == HEALTH_PID) {
        snprintf(buf, sizeof buf, "cuptop health");
    } else if (pid >= DEV_PID) {
        uint64_t d = pid - DEV_PID;
        if (d < CUPSTORE_DEVICE_MAX && c->devnames[d][0])
            snprintf(buf, sizeof buf, "GPU %u: %s", (unsigned)d, c->devnames[d]);
        else if (d == CUPSTORE_DEVICE_NONE)
            snprintf(buf, sizeof buf, "GPU (unknown device)");
        else
            snprintf(buf, sizeof buf, "GPU %u", (unsigned)d);
    } else {
        snprintf(buf, sizeof buf, "host process %u", (unsigned)pid);
    }
    meta_event(c, "process_name", pid, 0, false, buf, strlen(buf), false);
    if (pid != HEALTH_PID || c->group) {
        ev_begin(c);
        XOUT_LIT(c->o, "\"ph\":\"M\",\"name\":\"process_sort_index\"");
        PUT_KV_U64(c->o, ",\"pid\":", pid);
        PUT_KV_U64(c->o, ",\"args\":{\"sort_index\":",
                   c->group ? c->group_sort : pid >= DEV_PID ? pid - DEV_PID + 10 : 1);
        XOUT_LIT(c->o, "}}");
    }
    if (c->group) /* the loss and epoch instants' lane */
        meta_event(c, "thread_name", pid, 0, true, "cuptop health", 13, false);
}

static void lane_named(chrome *c, const track *t, uint32_t k)
{
    char buf[96];
    const char *what = t->kind_class == 0 ? "stream" : t->kind_class == 1 ? "thread" : NULL;
    int n;
    if (c->group && t->kind_class != 1) {
        uint64_t d = (t->tid - GROUP_GPU_TID(0)) / 0x4000000ull, low = t->tid & GROUP_GPU_MASK;
        char dev[16];
        if (d < CUPSTORE_DEVICE_MAX)
            snprintf(dev, sizeof dev, "GPU %u", (unsigned)d);
        else
            snprintf(dev, sizeof dev, "GPU ?");
        if (t->kind_class == 0)
            n = snprintf(buf, sizeof buf, "%s stream %llu", dev, (unsigned long long)low);
        else
            n = snprintf(buf, sizeof buf, "%s %s", dev,
                         cupstore_kind_name((unsigned)(low - KIND_TID)));
    } else if (what)
        n = snprintf(buf, sizeof buf, "%s %llu", what, (unsigned long long)t->tid);
    else
        n = snprintf(buf, sizeof buf, "%s", cupstore_kind_name((unsigned)(t->tid - KIND_TID)));
    if (k && n > 0 && (size_t)n < sizeof buf)
        snprintf(buf + n, sizeof buf - (size_t)n, " (overlap %u)", k);
    meta_event(c, "thread_name", t->pid, t->tid + k * OVERLAP_STRIDE, true, buf, strlen(buf),
               false);
}

/* ---- Tracks ---------------------------------------------------------------- */

static size_t track_hash(uint64_t pid, uint64_t tid, size_t cap)
{
    return (size_t)((pid * 0x9e3779b97f4a7c15ull) ^ (tid * 0xc2b2ae3d27d4eb4full)) & (cap - 1);
}

static track *track_get(chrome *c, uint64_t pid, uint64_t tid, uint8_t cls)
{
    if ((c->ntracks + 1) * 2 > c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 64;
        track *nt = calloc(ncap, sizeof *nt);
        if (!nt)
            return NULL;
        for (size_t i = 0; i < c->cap; i++) {
            if (!c->tracks[i].used)
                continue;
            size_t j = track_hash(c->tracks[i].pid, c->tracks[i].tid, ncap);
            while (nt[j].used)
                j = (j + 1) & (ncap - 1);
            nt[j] = c->tracks[i];
        }
        free(c->tracks);
        c->tracks = nt;
        c->cap = ncap;
    }
    size_t i = track_hash(pid, tid, c->cap);
    while (c->tracks[i].used && (c->tracks[i].pid != pid || c->tracks[i].tid != tid))
        i = (i + 1) & (c->cap - 1);
    track *t = &c->tracks[i];
    if (!t->used) {
        t->used = true;
        t->pid = pid;
        t->tid = tid;
        t->kind_class = cls;
        c->ntracks++;
        process_seen(c, pid);
    }
    return t;
}

/* Put [s, e] on the first lane of t where it nests; returns the lane's tid
 * (UINT64_MAX on ENOMEM). */
static uint64_t track_place(chrome *c, track *t, uint64_t s, uint64_t e)
{
    for (uint32_t k = 0;; k++) {
        if (k == t->nlanes) {
            lane *nl = realloc(t->lanes, (k + 1) * sizeof *nl);
            if (!nl)
                return UINT64_MAX;
            t->lanes = nl;
            memset(&nl[k], 0, sizeof nl[k]);
            t->nlanes++;
            lane_named(c, t, k);
            if (k)
                c->overflowed++;
        }
        lane *l = &t->lanes[k];
        if (s < l->last_start)
            continue; /* a late record: never reorder a lane's past */
        size_t d = l->depth;
        while (d && l->stack[d - 1] <= s)
            d--;
        if (d && e > l->stack[d - 1])
            continue;
        if (d == l->cap) {
            size_t ncap = l->cap ? l->cap * 2 : 4;
            uint64_t *ns = realloc(l->stack, ncap * sizeof *ns);
            if (!ns)
                return UINT64_MAX;
            l->stack = ns;
            l->cap = ncap;
        }
        l->stack[d] = e;
        l->depth = d + 1;
        l->last_start = s;
        return t->tid + k * OVERLAP_STRIDE;
    }
}

/* ---- Events ---------------------------------------------------------------- */

static bool is_gpu(unsigned kind)
{
    return kind == CUPSTORE_KIND_KERNEL || kind == CUPSTORE_KIND_MEMCPY ||
           kind == CUPSTORE_KIND_MEMSET;
}

static bool is_api(unsigned kind)
{
    return kind == CUPSTORE_KIND_RUNTIME || kind == CUPSTORE_KIND_DRIVER;
}

/* The event's name; *mangled: the raw name when the shown one was
 * demangled (for args), else NULL. */
static void put_name(chrome *c, const cupstore_record *r, const char **mangled, size_t *mlen)
{
    size_t len;
    const char *n = name_cache_get_full(&c->x->names, c->x->txn, r->name_id, &len, mangled, mlen);
    XOUT_LIT(c->o, ",\"name\":\"");
    if (n) {
        xout_put(c->o, n, len);
    } else if (is_api(r->kind) && r->cbid) {
        XOUT_LIT(c->o, "cbid ");
        xout_u64(c->o, r->cbid);
    } else {
        xout_puts(c->o, cupstore_kind_name(r->kind));
    }
    xout_putc(c->o, '"');
}

static void emit_flow(chrome *c, const flow_slot *f, uint64_t gpu_pid, uint64_t gpu_tid,
                      uint64_t gpu_ts, uint32_t corr)
{
    uint64_t id = ++c->flow_id;
    ev_begin(c);
    XOUT_LIT(c->o, "\"ph\":\"s\",\"cat\":\"launch\",\"name\":\"launch\"");
    PUT_KV_U64(c->o, ",\"id\":", id);
    PUT_KV_U64(c->o, ",\"pid\":", f->pid);
    PUT_KV_U64(c->o, ",\"tid\":", f->tid);
    put_ts(c, f->ts);
    PUT_KV_U64(c->o, ",\"args\":{\"correlation\":", corr);
    XOUT_LIT(c->o, "}}");
    ev_begin(c);
    XOUT_LIT(c->o, "\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"launch\",\"name\":\"launch\"");
    PUT_KV_U64(c->o, ",\"id\":", id);
    PUT_KV_U64(c->o, ",\"pid\":", gpu_pid);
    PUT_KV_U64(c->o, ",\"tid\":", gpu_tid);
    put_ts(c, gpu_ts);
    PUT_KV_U64(c->o, ",\"args\":{\"correlation\":", corr);
    XOUT_LIT(c->o, "}}");
    c->flows_out++;
}

/* Launch API records by correlation id: 4-way sets, oldest replaced.  A
 * launch whose GPU record comes more than FLOW_SLOTS launches later loses
 * its arrow (never a wrong one). */
static flow_slot *flow_bucket(chrome *c, uint32_t corr)
{
    /* Consecutive ids in consecutive sets: launches and their GPU records
     * come roughly in id order, so the table is walked, not hit at random
     * (a hashed index cost a cache miss per record, 20% of the export). */
    return &c->flows[(corr * 4u) & (FLOW_SLOTS - 4)];
}

static flow_slot *flow_set(chrome *c, uint32_t corr)
{
    flow_slot *b = flow_bucket(c, corr), *victim = &b[0];
    for (int i = 0; i < 4; i++) {
        if (!b[i].used || b[i].corr == corr)
            return &b[i];
        if (b[i].ts < victim->ts)
            victim = &b[i];
    }
    return victim;
}

static const flow_slot *flow_find(chrome *c, uint32_t corr)
{
    flow_slot *b = flow_bucket(c, corr);
    for (int i = 0; i < 4; i++)
        if (b[i].used && b[i].corr == corr)
            return &b[i];
    return NULL;
}

static int emit_record(chrome *c, const cupstore_record *r)
{
    uint64_t pid, tid;
    uint8_t cls;
    if (r->kind == CUPSTORE_KIND_MARKER && r->start_ns == 0 && !(r->flags & CUPSTORE_RF_ZERO_TS))
        return 0;   /* MARKER_DATA: no time of its own; drawn with its range (args.color) */
    if (r->kind == CUPSTORE_KIND_MARKER && c->range_table) {
        /* a push, pop, start, end or mark: the range it belongs to is drawn
         * from the range table (write_nvtx), so not a second time as a
         * zero-length "marker" slice */
        c->markers_in_ranges++;
        return 0;
    }
    if (r->start_ns == 0 || (r->flags & CUPSTORE_RF_ZERO_TS)) {
        c->zero_ts++; /* counted as a loss (zero_ts) by the agent */
        return 0;
    }
    uint64_t s = r->start_ns, e = r->end_ns >= r->start_ns ? r->end_ns : r->start_ns;
    if (is_gpu(r->kind)) {
        pid = DEV_PID + r->device;
        tid = r->stream;
        cls = 0;
    } else if (r->tid || is_api(r->kind)) {
        pid = r->pid ? r->pid : (uint64_t)(c->x->sum.pid > 0 ? c->x->sum.pid : 0);
        tid = r->tid;
        cls = 1;
    } else {
        pid = DEV_PID + r->device;
        tid = KIND_TID + r->kind;
        cls = 2;
    }
    if (c->group) {   /* --job: everything of the process in its group */
        if (cls != 1)
            tid = GROUP_GPU_TID(r->device) + (tid & GROUP_GPU_MASK);
        pid = c->group;
    }
    track *t = track_get(c, pid, tid, cls);
    if (!t)
        return ENOMEM;
    uint64_t lt = track_place(c, t, s, e);
    if (lt == UINT64_MAX)
        return ENOMEM;

    xout *o = c->o;
    ev_begin(c);
    XOUT_LIT(o, "\"ph\":\"X\",\"cat\":\"");
    xout_puts(o, cupstore_kind_name(r->kind));
    xout_putc(o, '"');
    const char *mangled;
    size_t mlen = 0;
    put_name(c, r, &mangled, &mlen);
    PUT_KV_U64(o, ",\"pid\":", pid);
    PUT_KV_U64(o, ",\"tid\":", lt);
    put_ts(c, s);
    XOUT_LIT(o, ",\"dur\":");
    xout_us(o, e - s);
    PUT_KV_U64(o, ",\"args\":{\"correlation\":", r->correlation);
    if (mangled) {
        XOUT_LIT(o, ",\"mangled\":\"");
        xout_put(o, mangled, mlen);
        xout_putc(o, '"');
    }
    if (is_gpu(r->kind)) {
        PUT_KV_U64(o, ",\"device\":", r->device);
        PUT_KV_U64(o, ",\"context\":", r->context);
        PUT_KV_U64(o, ",\"stream\":", r->stream);
    }
    switch (r->kind) {
    case CUPSTORE_KIND_KERNEL:
        XOUT_LIT(o, ",\"grid\":[");
        for (int i = 0; i < 3; i++) {
            xout_u64(o, r->grid[i]);
            xout_putc(o, i < 2 ? ',' : ']');
        }
        XOUT_LIT(o, ",\"block\":[");
        for (int i = 0; i < 3; i++) {
            xout_u64(o, r->block[i]);
            xout_putc(o, i < 2 ? ',' : ']');
        }
        PUT_KV_U64(o, ",\"registers\":", r->aux);
        PUT_KV_U64(o, ",\"shared_mem\":", r->bytes);
        break;
    case CUPSTORE_KIND_MEMCPY:
        PUT_KV_U64(o, ",\"bytes\":", r->bytes);
        PUT_KV_U64(o, ",\"copy_kind\":", r->aux);
        break;
    case CUPSTORE_KIND_MEMSET:
        PUT_KV_U64(o, ",\"bytes\":", r->bytes);
        break;
    case CUPSTORE_KIND_RUNTIME:
    case CUPSTORE_KIND_DRIVER:
        PUT_KV_U64(o, ",\"cbid\":", r->cbid);
        break;
    default:
        PUT_KV_U64(o, ",\"aux\":", r->aux);
        break;
    }
    if (r->flags & CUPSTORE_RF_TRUNCATED)
        XOUT_LIT(o, ",\"truncated\":true");
    if (r->end_ns < r->start_ns)
        XOUT_LIT(o, ",\"end_missing\":true");
    XOUT_LIT(o, "}}");
    c->written++;

    if (is_api(r->kind) && r->correlation) {
        flow_slot *f = flow_set(c, r->correlation);
        f->used = true;
        f->corr = r->correlation;
        f->ts = s;
        f->pid = pid;
        f->tid = lt;
    } else if (is_gpu(r->kind) && r->correlation) {
        const flow_slot *f = flow_find(c, r->correlation);
        if (f && f->ts <= s)
            emit_flow(c, f, pid, lt, s, r->correlation);
    }
    return 0;
}

/* The reorder window's output: one record in order. */
static int emit_sorted(const cupstore_record *r, void *arg)
{
    return emit_record(arg, r);
}

static int on_record(const cupstore_record *r, void *arg)
{
    chrome *c = arg;
    int rc = export_sort_add(&c->sort, r, emit_sorted, c);
    return rc ? rc : c->o->err;
}

/* End of a one-second slice: later slices start later, so drain. */
static int on_slice(export_ctx *x, void *arg)
{
    chrome *c = arg;
    (void)x;
    int rc = export_sort_flush(&c->sort, emit_sorted, c);
    return rc ? rc : c->o->err;
}

/* ---- Health, losses, epochs, metadata ------------------------------------- */

static int on_health(const cupstore_health *h, void *arg)
{
    chrome *c = arg;
    xout *o = c->o;
    uint64_t ns = h->second * 1000000000ull;
    if (ns < c->x->base_ns)
        return 0;
    uint64_t hp = health_pid(c);
    process_seen(c, hp);
    ev_begin(c);
    XOUT_LIT(o, "\"ph\":\"C\",\"name\":\"records/s\"");
    PUT_KV_U64(o, ",\"pid\":", hp);
    put_ts(c, ns);
    XOUT_LIT(o, ",\"args\":{");
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
        xout_printf(o, "%s\"%s\":%llu", k ? "," : "", cupstore_kind_name(k),
                    (unsigned long long)h->records_by_kind[k]);
    XOUT_LIT(o, "}}");
    ev_begin(c);
    XOUT_LIT(o, "\"ph\":\"C\",\"name\":\"losses/s\"");
    PUT_KV_U64(o, ",\"pid\":", hp);
    put_ts(c, ns);
    XOUT_LIT(o, ",\"args\":{");
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
        xout_printf(o, "%s\"%s\":%llu", l ? "," : "", cupstore_loss_name(l),
                    (unsigned long long)h->loss[l]);
    XOUT_LIT(o, "}}");
    ev_begin(c);
    xout_printf(o, "\"ph\":\"C\",\"name\":\"buffers\",\"pid\":%llu", (unsigned long long)hp);
    put_ts(c, ns);
    xout_printf(o, ",\"args\":{\"requested\":%llu,\"declined\":%llu,\"completed\":%llu,"
                   "\"consumed\":%llu,\"outstanding\":%u,\"pool_limit\":%u}}",
                (unsigned long long)h->buf_requested, (unsigned long long)h->buf_declined,
                (unsigned long long)h->buf_completed, (unsigned long long)h->buf_consumed,
                h->buf_outstanding, h->pool_limit);
    ev_begin(c);
    xout_printf(o, "\"ph\":\"C\",\"name\":\"queue\",\"pid\":%llu", (unsigned long long)hp);
    put_ts(c, ns);
    xout_printf(o, ",\"args\":{\"depth\":%u,\"high_water\":%u,\"capacity\":%u}}",
                h->queue_depth, h->queue_high_water, h->queue_capacity);
    ev_begin(c);
    xout_printf(o, "\"ph\":\"C\",\"name\":\"completion callback (ns)\",\"pid\":%llu",
                (unsigned long long)hp);
    put_ts(c, ns);
    xout_printf(o, ",\"args\":{\"p50\":%u,\"p99\":%u,\"max\":%u}}", h->cmp_lat.p50_ns,
                h->cmp_lat.p99_ns, h->cmp_lat.max_ns);
    return o->err;
}

static int on_loss(const cupstore_loss_row *r, void *arg)
{
    chrome *c = arg;
    xout *o = c->o;
    uint64_t ns = r->second * 1000000000ull;
    if (ns < c->x->base_ns || !r->count)
        return 0;
    process_seen(c, health_pid(c));
    ev_begin(c);
    xout_printf(o, "\"ph\":\"i\",\"s\":\"p\",\"cat\":\"loss\",\"name\":\"loss: %s\",\"pid\":%llu,"
                   "\"tid\":0",
                cupstore_loss_name(r->loss), (unsigned long long)health_pid(c));
    put_ts(c, ns);
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

struct epochs_arg {
    chrome *c;
    bool first;
    bool events;   /* write instant events rather than metadata entries */
};

static int on_epoch(const cupstore_epoch *e, void *arg)
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
        process_seen(a->c, health_pid(a->c));
        ev_begin(a->c);
        xout_printf(o, "\"ph\":\"i\",\"s\":\"%s\",\"cat\":\"epoch\",\"name\":\"epoch %u: %s\","
                       "\"pid\":%llu,\"tid\":0",
                    a->c->group ? "p" : "g", e->id, kinds,
                    (unsigned long long)health_pid(a->c));
        put_ts(a->c, e->start_ns);
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
static void load_devices(chrome *c)
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
    XOUT_LIT(o, ",\"deviceProperties\":[");
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

static int write_metadata(chrome *c, cupstore_txn *txn)
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
    int rc = cupstore_epoch_scan(txn, on_epoch, &ea);
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
static bool has_range_table(export_ctx *x)
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
static int write_nvtx(chrome *c)
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
        process_seen(c, pid);
        ev_begin(c);
        if (point)
            XOUT_LIT(o, "\"ph\":\"i\",\"s\":\"t\",\"cat\":\"nvtx\",\"name\":");
        else
            XOUT_LIT(o, "\"ph\":\"X\",\"cat\":\"nvtx\",\"name\":");
        xout_json_str(o, n->name, n->name_len);
        PUT_KV_U64(o, ",\"pid\":", pid);
        PUT_KV_U64(o, ",\"tid\":", r->tid);
        put_ts(c, s);
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
static void write_job_metadata(chrome *c, const export_job *jb)
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

/* One process' events: its health rows, losses and epochs, then its
 * records through the reorder window, then the export's own instant. */
static int chrome_session(chrome *c, export_ctx *x)
{
    cupstore_txn *txn;
    xout *o = c->o;
    int rc;
    c->x = x;
    memset(c->devnames, 0, sizeof c->devnames);
    load_devices(c);
    /* Health rows, losses and epochs: one short read txn. */
    if ((rc = cupstore_txn_begin(x->env, false, &txn)) != 0)
        return rc;
    rc = cupstore_health_scan(txn, x->from_ns / 1000000000ull, x->to_ns / 1000000000ull,
                              on_health, c);
    if (!rc)
        rc = cupstore_loss_scan(txn, x->from_ns / 1000000000ull, x->to_ns / 1000000000ull,
                                on_loss, c);
    struct epochs_arg ea = {.c = c, .events = true};
    if (!rc)
        rc = cupstore_epoch_scan(txn, on_epoch, &ea);
    cupstore_txn_abort(txn);
    c->range_table = !rc && has_range_table(x);
    if (rc || (rc = export_scan(x, on_record, on_slice, c)) != 0 || (rc = write_nvtx(c)) != 0)
        return rc;
    process_seen(c, health_pid(c));
    ev_begin(c);
    xout_printf(o, "\"ph\":\"i\",\"s\":\"%s\",\"cat\":\"export\",\"name\":\"cuptop export\","
                   "\"pid\":%llu,\"tid\":0,\"ts\":0.000,\"args\":{\"records_written\":%llu,"
                   "\"zero_ts_skipped\":%llu,\"overlap_lanes\":%llu,\"flows\":%llu",
                c->group ? "p" : "g", (unsigned long long)health_pid(c),
                (unsigned long long)c->written, (unsigned long long)c->zero_ts,
                (unsigned long long)c->overflowed, (unsigned long long)c->flows_out);
    if (c->markers_in_ranges)
        PUT_KV_U64(o, ",\"nvtx_markers_as_ranges\":", c->markers_in_ranges);
    if (c->group) {
        XOUT_LIT(o, ",\"session\":");
        xout_json_str(o, x->sum.id, strlen(x->sum.id));
    }
    XOUT_LIT(o, "}}");
    return o->err;
}

/* Forget one process' tracks, flows and counts (the next group starts
 * fresh; its correlation ids are its own). */
static void chrome_reset(chrome *c)
{
    for (size_t i = 0; i < c->cap; i++) {
        for (uint32_t k = 0; k < c->tracks[i].nlanes; k++)
            free(c->tracks[i].lanes[k].stack);
        free(c->tracks[i].lanes);
    }
    free(c->tracks);
    c->tracks = NULL;
    c->ntracks = c->cap = 0;
    c->npids = 0;
    if (c->flows)
        memset(c->flows, 0, FLOW_SLOTS * sizeof *c->flows);
    c->written = c->zero_ts = c->overflowed = c->flows_out = c->markers_in_ranges = 0;
}

int export_chrome_metadata(export_ctx *x, xout *o)
{
    chrome c = {.x = x, .o = o, .first = true};
    cupstore_txn *txn;
    int rc;
    if (x->job) {
        write_job_metadata(&c, x->job);
        return o->err;
    }
    if ((rc = cupstore_txn_begin(x->env, false, &txn)) != 0)
        return rc;
    rc = write_metadata(&c, txn);
    cupstore_txn_abort(txn);
    return rc ? rc : o->err;
}

int export_chrome(export_ctx *x, xout *o)
{
    chrome *c = calloc(1, sizeof *c);
    cupstore_txn *txn = NULL;
    int rc;
    if (!c)
        return ENOMEM;
    c->x = x;
    c->o = o;
    c->first = true;
    c->flows = calloc(FLOW_SLOTS, sizeof *c->flows);
    if (!c->flows || export_sort_init(&c->sort) != 0) {
        rc = ENOMEM;
        goto out;
    }
    XOUT_LIT(o, "{\"displayTimeUnit\":\"ns\",");
    if (x->job) {
        write_job_metadata(c, x->job);
    } else {
        if ((rc = cupstore_txn_begin(x->env, false, &txn)) != 0)
            goto out;
        rc = write_metadata(c, txn);
        cupstore_txn_abort(txn);
        txn = NULL;
        if (rc)
            goto out;
    }
    XOUT_LIT(o, ",\"traceEvents\":[");
    if (x->job) {
        for (size_t i = 0; i < x->job->n; i++) {
            export_ctx *m = &x->job->procs[i];
            const model_summary *s = &m->sum;
            c->group = m->group;
            c->group_sort = s->rank >= 0 ? (uint64_t)s->rank : 1000000u + i;
            if (s->rank >= 0)
                snprintf(c->group_name, sizeof c->group_name, "rank %d (pid %d)", s->rank,
                         s->pid);
            else
                snprintf(c->group_name, sizeof c->group_name, "no rank (pid %d)", s->pid);
            rc = chrome_session(c, m);
            if (m->cancelled)
                x->cancelled = true;
            x->done += m->done;
            if (rc)
                goto out;
            chrome_reset(c);
        }
    } else if ((rc = chrome_session(c, x)) != 0) {
        goto out;
    }
    XOUT_LIT(o, "\n]}\n");
    rc = o->err;
out:
    if (txn)
        cupstore_txn_abort(txn);
    chrome_reset(c);
    export_sort_free(&c->sort);
    free(c->flows);
    free(c);
    return rc;
}
