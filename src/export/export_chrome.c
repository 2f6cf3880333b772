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
#include "export_chrome_int.h"

/* ---- Small writers ------------------------------------------------------- */

void chrome_ev_begin(chrome *c)
{
    if (c->first)
        XOUT_LIT(c->o, "\n{");
    else
        XOUT_LIT(c->o, ",\n{");
    c->first = false;
}


void chrome_put_ts(chrome *c, uint64_t ns)
{
    XOUT_LIT(c->o, ",\"ts\":");
    xout_us(c->o, ns > c->x->base_ns ? ns - c->x->base_ns : 0);
}

/* ---- Names of processes and lanes ---------------------------------------- */

static void meta_event(chrome *c, const char *what, uint64_t pid, uint64_t tid, bool thread,
                       const char *name, size_t len, bool raw_json)
{
    chrome_ev_begin(c);
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

void chrome_process_seen(chrome *c, uint64_t pid)
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
        chrome_ev_begin(c);
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
        chrome_process_seen(c, pid);
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
 * demangled (for args), else NULL.  nv: a graph launch's NVTX range. */
static void put_name(chrome *c, const cupstore_record *r, const export_gnvtx_hit *nv,
                     const char **mangled, size_t *mlen)
{
    size_t len;
    const char *n = name_cache_get_full(&c->x->names, c->x->txn, r->name_id, &len, mangled, mlen);
    XOUT_LIT(c->o, ",\"name\":\"");
    if (!n && (r->kind == CUPSTORE_KIND_MEMCPY || r->kind == CUPSTORE_KIND_MEMSET)) {
        /* Kineto's name; the last one per kind kept (copies come in runs) */
        uint32_t key = r->kind == CUPSTORE_KIND_MEMCPY ? r->aux : CUPSTORE_RF_MEMKIND(r->flags);
        unsigned k = r->kind == CUPSTORE_KIND_MEMSET;
        if (!c->gpu_name_len[k] || c->gpu_name_key[k] != key) {
            c->gpu_name_key[k] = key;
            c->gpu_name_len[k] = export_gpu_name(r, c->gpu_name[k], sizeof c->gpu_name[k]);
        }
        xout_put(c->o, c->gpu_name[k], c->gpu_name_len[k]);
    } else if (n) {
        xout_put(c->o, n, len);
    } else if (is_api(r->kind) && r->cbid) {
        XOUT_LIT(c->o, "cbid ");
        xout_u64(c->o, r->cbid);
    } else if (r->kind == CUPSTORE_KIND_GRAPH) {   /* one slice per graph launch */
        XOUT_LIT(c->o, "graph ");
        xout_u64(c->o, r->aux);
        if (nv->name) {   /* and the NVTX range around its launch */
            XOUT_LIT(c->o, " (NVTX: ");
            xout_put(c->o, nv->json, nv->json_len);
            xout_putc(c->o, ')');
        }
    } else {
        xout_puts(c->o, cupstore_kind_name(r->kind));
    }
    xout_putc(c->o, '"');
}

/* Kineto's "memory bandwidth (GB/s)": bytes per nanosecond, three
 * decimals (cut, not rounded), none for a zero duration.  Integer digits:
 * printf's %g was 8% of a chrome export's instructions. */
static void put_bandwidth(xout *o, uint64_t bytes, uint64_t dur_ns)
{
    if (!dur_ns)
        return;
    XOUT_LIT(o, ",\"memory bandwidth (GB/s)\":");
    xout_us(o, bytes <= UINT64_MAX / 1000 ? bytes * 1000 / dur_ns : bytes / dur_ns * 1000);
}

static void emit_flow(chrome *c, const flow_slot *f, uint64_t gpu_pid, uint64_t gpu_tid,
                      uint64_t gpu_ts, uint32_t corr)
{
    uint64_t id = ++c->flow_id;
    chrome_ev_begin(c);
    XOUT_LIT(c->o, "\"ph\":\"s\",\"cat\":\"launch\",\"name\":\"launch\"");
    PUT_KV_U64(c->o, ",\"id\":", id);
    PUT_KV_U64(c->o, ",\"pid\":", f->pid);
    PUT_KV_U64(c->o, ",\"tid\":", f->tid);
    chrome_put_ts(c, f->ts);
    PUT_KV_U64(c->o, ",\"args\":{\"correlation\":", corr);
    XOUT_LIT(c->o, "}}");
    chrome_ev_begin(c);
    XOUT_LIT(c->o, "\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"launch\",\"name\":\"launch\"");
    PUT_KV_U64(c->o, ",\"id\":", id);
    PUT_KV_U64(c->o, ",\"pid\":", gpu_pid);
    PUT_KV_U64(c->o, ",\"tid\":", gpu_tid);
    chrome_put_ts(c, gpu_ts);
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

/* ---- The launch ledger's holes -------------------------------------------
 * A launch whose records never arrived (the store's `lost` rows, written
 * with --ledger) is drawn where it belongs (export_lost.c): a "lost: NAME"
 * slice on its stream's track between the records that ran before and
 * after it (an instant after the last one when none came after it), and
 * an instant on the launching thread at its launch, so a gap in the
 * timeline reads as a loss, not as idle GPU.  NAME: the kernel's name
 * when the ledger knew it, else the kinds missing. */

static void lost_put_name(chrome *c, const cupstore_lost *l, const char *suffix)
{
    xout *o = c->o;
    size_t len = 0;
    const char *n = l->name_id ? name_cache_get(&c->x->names, c->lost_txn ? c->lost_txn : c->x->txn,
                                                l->name_id, &len)
                               : NULL;
    XOUT_LIT(o, ",\"name\":\"lost: ");
    if (n) {
        xout_put(o, n, len);
    } else {
        char kinds[64];
        xout_put(o, kinds, export_lost_kinds(l, kinds, sizeof kinds));
    }
    xout_puts(o, suffix);
    xout_putc(o, '"');
}

static void lost_put_args(chrome *c, const cupstore_lost *l)
{
    xout *o = c->o;
    PUT_KV_U64(o, ",\"args\":{\"correlation\":", l->corr);
    for (unsigned k = 0; k < CUPSTORE_LEDGER_KINDS; k++)
        if (l->missing[k]) {
            XOUT_LIT(o, ",\"");
            xout_puts(o, export_lost_kind(k));
            XOUT_LIT(o, " records missing\":");
            xout_u64(o, l->missing[k]);
        }
    PUT_KV_U64(o, ",\"device\":", l->device);
    PUT_KV_U64(o, ",\"stream\":", l->stream);
    PUT_KV_U64(o, ",\"launching thread\":", l->tid);
    XOUT_LIT(o, ",\"why\":\"launched, its record never arrived (launch ledger)\"}}");
}

/* The stream's side: between its neighbours (from < to), or a point. */
static int chrome_lost_on_stream(const cupstore_lost *l, uint64_t from_ns, uint64_t to_ns, void *arg)
{
    chrome *c = arg;
    xout *o = c->o;
    unsigned dev = l->device < CUPSTORE_DEVICE_MAX ? l->device : CUPSTORE_DEVICE_MAX;
    uint64_t pid = DEV_PID + dev, tid = l->stream;
    if (c->group) {
        tid = GROUP_GPU_TID(dev) + (tid & GROUP_GPU_MASK);
        pid = c->group;
    }
    track *t = track_get(c, pid, tid, 0);
    if (!t)
        return ENOMEM;
    bool span = to_ns > from_ns;
    uint64_t lt = span ? track_place(c, t, from_ns, to_ns) : tid;
    if (lt == UINT64_MAX)
        return ENOMEM;
    chrome_ev_begin(c);
    if (span)
        XOUT_LIT(o, "\"ph\":\"X\",\"cat\":\"lost\"");
    else
        XOUT_LIT(o, "\"ph\":\"i\",\"s\":\"t\",\"cat\":\"lost\"");
    lost_put_name(c, l, "");
    PUT_KV_U64(o, ",\"pid\":", pid);
    PUT_KV_U64(o, ",\"tid\":", lt);
    chrome_put_ts(c, from_ns);
    if (span) {
        XOUT_LIT(o, ",\"dur\":");
        xout_us(o, to_ns - from_ns);
    }
    lost_put_args(c, l);
    c->lost_out++;
    return o->err;
}

/* The launching thread's side, at the launch. */
static int chrome_lost_on_thread(chrome *c, const cupstore_lost *l)
{
    xout *o = c->o;
    uint64_t pid = (uint64_t)(c->x->sum.pid > 0 ? c->x->sum.pid : 0), tid = l->tid;
    if (c->group)
        pid = c->group;
    if (!track_get(c, pid, tid, 1))
        return ENOMEM;
    chrome_ev_begin(c);
    XOUT_LIT(o, "\"ph\":\"i\",\"s\":\"t\",\"cat\":\"lost\"");
    lost_put_name(c, l, " (launched here)");
    PUT_KV_U64(o, ",\"pid\":", pid);
    PUT_KV_U64(o, ",\"tid\":", tid);
    chrome_put_ts(c, l->launch_ns);
    lost_put_args(c, l);
    return o->err;
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
    if (cls == 0 && c->lost.n) {   /* the stream's lost records before it */
        int rc = export_lost_before(&c->lost, r->device, r->stream, r->correlation, s, e,
                                    chrome_lost_on_stream, c);
        if (rc)
            return rc;
    }
    track *t = track_get(c, pid, tid, cls);
    if (!t)
        return ENOMEM;
    uint64_t lt = track_place(c, t, s, e);
    if (lt == UINT64_MAX)
        return ENOMEM;

    export_gnvtx_hit nv = {0};
    if (r->kind == CUPSTORE_KIND_GRAPH) {
        bool known;
        int rc = export_gnvtx_find(c->gnvtx, r, &nv, &known);
        if (rc)
            return rc;
        c->graphs_in_ranges += nv.name != NULL;
    } else if (is_api(r->kind)) {
        export_gnvtx_api(c->gnvtx, r);
    }

    xout *o = c->o;
    chrome_ev_begin(c);
    XOUT_LIT(o, "\"ph\":\"X\",\"cat\":\"");
    xout_puts(o, export_kineto_cat(r->kind));
    xout_putc(o, '"');
    const char *mangled;
    size_t mlen = 0;
    put_name(c, r, &nv, &mangled, &mlen);
    PUT_KV_U64(o, ",\"pid\":", pid);
    PUT_KV_U64(o, ",\"tid\":", lt);
    chrome_put_ts(c, s);
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
        PUT_KV_U64(o, ",\"registers per thread\":", r->aux);
        PUT_KV_U64(o, ",\"shared memory\":", r->bytes);
        break;
    case CUPSTORE_KIND_MEMCPY:
        PUT_KV_U64(o, ",\"bytes\":", r->bytes);
        put_bandwidth(o, r->bytes, e - s);
        PUT_KV_U64(o, ",\"copy_kind\":", CUPSTORE_COPY_KIND(r->aux));
        break;
    case CUPSTORE_KIND_MEMSET:
        PUT_KV_U64(o, ",\"bytes\":", r->bytes);
        put_bandwidth(o, r->bytes, e - s);
        break;
    case CUPSTORE_KIND_RUNTIME:
    case CUPSTORE_KIND_DRIVER:
        PUT_KV_U64(o, ",\"cbid\":", r->cbid);
        break;
    case CUPSTORE_KIND_GRAPH:
        PUT_KV_U64(o, ",\"graph id\":", r->aux);
        if (nv.name) {
            XOUT_LIT(o, ",\"nvtx_range\":\"");
            xout_put(o, nv.json, nv.json_len);
            xout_putc(o, '"');
        }
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

/* One process' events: its health rows, losses and epochs, then its
 * records through the reorder window, then the export's own instant. */
/* After the scan: the rows no record came after, and every row's launch. */
static int chrome_write_lost(chrome *c, export_ctx *x)
{
    if (!c->lost.n)
        return 0;
    int rc = cupstore_txn_begin(x->env, false, &c->lost_txn);
    if (rc)
        return rc;
    rc = export_lost_rest(&c->lost, chrome_lost_on_stream, c);
    for (size_t i = 0; rc == 0 && i < c->lost.n; i++)
        rc = chrome_lost_on_thread(c, &c->lost.v[i]);
    cupstore_txn_abort(c->lost_txn);
    c->lost_txn = NULL;
    return rc;
}

static int chrome_session(chrome *c, export_ctx *x)
{
    cupstore_txn *txn;
    xout *o = c->o;
    int rc;
    c->x = x;
    memset(c->devnames, 0, sizeof c->devnames);
    chrome_load_devices(c);
    /* Health rows, losses and epochs: one short read txn. */
    if ((rc = cupstore_txn_begin(x->env, false, &txn)) != 0)
        return rc;
    rc = cupstore_health_scan(txn, x->from_ns / 1000000000ull, x->to_ns / 1000000000ull,
                              chrome_on_health, c);
    if (!rc)
        rc = cupstore_loss_scan(txn, x->from_ns / 1000000000ull, x->to_ns / 1000000000ull,
                                chrome_on_loss, c);
    struct epochs_arg ea = {.c = c, .events = true};
    if (!rc)
        rc = cupstore_epoch_scan(txn, chrome_on_epoch, &ea);
    cupstore_txn_abort(txn);
    c->range_table = !rc && chrome_has_range_table(x);
    if (!rc && c->range_table)
        rc = export_gnvtx_open(x, &c->gnvtx);
    if (!rc)
        rc = export_lost_load(&c->lost, x);
    if (!rc)
        rc = export_scan(x, on_record, on_slice, c);
    export_gnvtx_close(c->gnvtx);
    c->gnvtx = NULL;
    if (rc || (rc = chrome_write_nvtx(c)) != 0 || (rc = chrome_write_lost(c, x)) != 0)
        return rc;
    chrome_process_seen(c, chrome_health_pid(c));
    chrome_ev_begin(c);
    xout_printf(o, "\"ph\":\"i\",\"s\":\"%s\",\"cat\":\"export\",\"name\":\"cuptop export\","
                   "\"pid\":%llu,\"tid\":0,\"ts\":0.000,\"args\":{\"records_written\":%llu,"
                   "\"zero_ts_skipped\":%llu,\"overlap_lanes\":%llu,\"flows\":%llu",
                c->group ? "p" : "g", (unsigned long long)chrome_health_pid(c),
                (unsigned long long)c->written, (unsigned long long)c->zero_ts,
                (unsigned long long)c->overflowed, (unsigned long long)c->flows_out);
    if (c->markers_in_ranges)
        PUT_KV_U64(o, ",\"nvtx_markers_as_ranges\":", c->markers_in_ranges);
    if (c->lost_out)
        PUT_KV_U64(o, ",\"lost_marked\":", c->lost_out);
    if (c->graphs_in_ranges)
        PUT_KV_U64(o, ",\"graphs_named_by_nvtx\":", c->graphs_in_ranges);
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
    c->lost_out = c->graphs_in_ranges = 0;
    export_lost_free(&c->lost);
}

int export_chrome_metadata(export_ctx *x, xout *o)
{
    chrome c = {.x = x, .o = o, .first = true};
    cupstore_txn *txn;
    int rc;
    if (x->job) {
        chrome_write_job_metadata(&c, x->job);
        return o->err;
    }
    if ((rc = cupstore_txn_begin(x->env, false, &txn)) != 0)
        return rc;
    rc = chrome_write_metadata(&c, txn);
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
        chrome_write_job_metadata(c, x->job);
        if (x->job->n) {   /* Kineto's deviceProperties: the first rank's */
            XOUT_LIT(o, ",\"deviceProperties\":");
            c->x = &x->job->procs[0];
            chrome_write_device_props(c);
            c->x = x;
        }
    } else {
        if ((rc = cupstore_txn_begin(x->env, false, &txn)) != 0)
            goto out;
        rc = chrome_write_metadata(c, txn);
        cupstore_txn_abort(txn);
        txn = NULL;
        if (rc)
            goto out;
        /* Kineto's place for them: top level (also in otherData, as before) */
        XOUT_LIT(o, ",\"deviceProperties\":");
        chrome_write_device_props(c);
    }
    XOUT_LIT(o, ",\"traceEvents\":[");
    if (x->job) {
        for (size_t i = 0; i < x->job->n; i++) {
            export_ctx *m = &x->job->procs[i];
            const model_summary *s = &m->sum;
            c->group = m->group;
            c->group_sort = s->rank >= 0 ? (uint64_t)s->rank : 1000000u + i;
            export_job_group_name(x->job, i, c->group_name, sizeof c->group_name);
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
