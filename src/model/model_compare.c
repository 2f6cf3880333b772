/*
 * model_compare.c - two windows side by side (model_compare.h): the
 * comparability check, losses, per-name duration histograms and per-stream
 * event order, streamed over the record chunks of each side.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* ---- operands ---------------------------------------------------------------- */

static int op_fail(char **cause, const char *s, const char *why)
{
    char esc[200];
    model_escape(esc, sizeof esc, s, strlen(s));
    if (cause && asprintf(cause, "\"%s\": %s", esc, why) < 0)
        *cause = NULL;
    return CUPSTORE_EINVAL;
}

static bool parse_u32(const char *s, uint32_t *v)
{
    char *end;
    if (*s < '0' || *s > '9')
        return false;
    errno = 0;
    unsigned long x = strtoul(s, &end, 10);
    if (errno || *end || x == 0 || x > UINT32_MAX)
        return false;
    *v = (uint32_t)x;
    return true;
}

int model_operand_parse(const char *s, model_operand *op, char **cause)
{
    memset(op, 0, sizeof *op);
    if (cause)
        *cause = NULL;
    size_t n = strcspn(s, "@:/");
    if (n == 0)
        return op_fail(cause, s, "no session id (SESSION, SESSION@EPOCH, SESSION:MARK)");
    if (n >= sizeof op->session)
        return op_fail(cause, s, "session id too long");
    memcpy(op->session, s, n);
    const char *rest = s + n;
    switch (*rest) {
    case '\0':
        op->kind = MODEL_OP_SESSION;
        return 0;
    case '@':
        op->kind = MODEL_OP_EPOCH;
        if (!parse_u32(rest + 1, &op->epoch))
            return op_fail(cause, s, "an epoch is a number from 1 (SESSION@EPOCH)");
        return 0;
    case ':':
        op->kind = MODEL_OP_MARK;
        if (!rest[1] || strlen(rest + 1) >= sizeof op->name)
            return op_fail(cause, s, "a mark name is 1 to 63 bytes (SESSION:MARK)");
        strcpy(op->name, rest + 1);
        return 0;
    default:
        break;
    }
    /* "/range:NAME#N" or "/range:NAME#slowest" (no "#": the first). */
    if (strncmp(rest, "/range:", 7) != 0 || !rest[7])
        return op_fail(cause, s, "expected SESSION, SESSION@EPOCH, SESSION:MARK or "
                                 "SESSION/range:NAME#N");
    op->kind = MODEL_OP_RANGE;
    const char *name = rest + 7, *hash = strrchr(name, '#');
    size_t len = hash ? (size_t)(hash - name) : strlen(name);
    op->instance = 1;
    if (hash && strcmp(hash + 1, "slowest") == 0) {
        op->slowest = true;
        op->instance = 0;
    } else if (hash && !parse_u32(hash + 1, &op->instance)) {
        len = 0;
    }
    if (!len || len >= sizeof op->name)
        return op_fail(cause, s, "a range operand is SESSION/range:NAME#N (N from 1) or "
                                 "SESSION/range:NAME#slowest");
    memcpy(op->name, name, len);
    return 0;
}

/* ---- histograms: 64 sub-buckets per power of two ------------------------------- */

#define SUB (1u << MODEL_CMP_SUB_BITS)

typedef struct hist {
    uint32_t lo, n;             /* buckets [lo, lo + n)                       */
    uint64_t *c;
    uint64_t count, total, min, max;
} hist;

static uint32_t hist_index(uint64_t d)
{
    if (d < SUB)
        return (uint32_t)d;
    unsigned msb = 63u - (unsigned)__builtin_clzll(d);
    return (msb - MODEL_CMP_SUB_BITS + 1) * SUB +
           (uint32_t)((d >> (msb - MODEL_CMP_SUB_BITS)) & (SUB - 1));
}

/* The middle of bucket i: within 1/128 of every duration in it. */
static uint64_t hist_value(uint32_t i)
{
    if (i < SUB)
        return i;
    unsigned msb = i / SUB + MODEL_CMP_SUB_BITS - 1, shift = msb - MODEL_CMP_SUB_BITS;
    uint64_t lower = (uint64_t)(SUB + i % SUB) << shift;
    return lower + ((1ull << shift) >> 1);
}

static int hist_add(hist *h, uint64_t d)
{
    uint32_t i = hist_index(d);
    if (!h->n || i < h->lo || i >= h->lo + h->n) {
        uint32_t lo = h->n ? (i < h->lo ? i : h->lo) : i;
        uint32_t hi = h->n ? (i >= h->lo + h->n ? i + 1 : h->lo + h->n) : i + 1;
        lo = lo > 8 ? lo - 8 : 0;   /* a little room: fewer moves */
        hi += 8;
        uint64_t *c = calloc(hi - lo, sizeof *c);
        if (!c)
            return ENOMEM;
        if (h->n)
            memcpy(c + (h->lo - lo), h->c, h->n * sizeof *c);
        free(h->c);
        h->c = c;
        h->lo = lo;
        h->n = hi - lo;
    }
    h->c[i - h->lo]++;
    if (!h->count || d < h->min)
        h->min = d;
    if (d > h->max)
        h->max = d;
    h->count++;
    h->total += d;
    return 0;
}

/* Nearest rank: the ceil(p * count)-th duration, as its bucket's middle,
 * kept inside [min, max]. */
static uint64_t hist_pct(const hist *h, double p)
{
    if (!h->count)
        return 0;
    uint64_t rank = (uint64_t)(p * (double)h->count);
    if ((double)rank < p * (double)h->count)
        rank++;
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (uint32_t k = 0; k < h->n; k++) {
        seen += h->c[k];
        if (seen >= rank) {
            uint64_t v = hist_value(h->lo + k);
            return v < h->min ? h->min : v > h->max ? h->max : v;
        }
    }
    return h->max;
}

/* ---- the scan state -------------------------------------------------------------- */

typedef struct item {
    uint64_t start;
    uint32_t group;
} item;

typedef struct stream_side {
    uint64_t n;
    item *heap;                 /* max-heap by start: the earliest kept      */
    size_t len, cap;
} stream_side;

typedef struct stream_ent {
    uint16_t device;
    uint32_t stream;
    stream_side s[2];
} stream_ent;

typedef struct group_ent {
    model_cmp_gkind kind;
    char *name;
    size_t len;
    hist h[2];
} group_ent;

typedef struct cmp_ctx {
    const model_compare_opts *o;
    uint32_t window, cap;
    group_ent *g;
    size_t ng, gcap;
    uint32_t *ghash;            /* open addressing: group + 1, 0 empty       */
    size_t ghash_cap;
    stream_ent *st;
    size_t nst;
    uint64_t untracked;
    /* per side while scanning */
    int side;
    cupstore_txn *txn;
    model_cmp_side *sd;
    uint32_t *name_map;         /* name id -> group + 1                      */
    size_t name_map_cap;
    uint32_t memcpy_group[16];  /* copy kind -> group + 1 (per comparison)   */
    uint64_t from_ns, to_ns;
    size_t last_stream;
    int err;
    char *buf;                  /* name_fn output                            */
} cmp_ctx;

#define NAME_BUF (16384u + 64u)

static uint64_t fnv(unsigned kind, const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull ^ kind;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* The group of (kind, name), created on first sight: -1 on ENOMEM. */
static long group_get(cmp_ctx *c, model_cmp_gkind kind, const char *s, size_t n)
{
    if (c->ng * 2 >= c->ghash_cap) {
        size_t cap = c->ghash_cap ? c->ghash_cap * 2 : 256;
        uint32_t *t = calloc(cap, sizeof *t);
        if (!t)
            return -1;
        for (size_t i = 0; i < c->ng; i++) {
            size_t j = fnv(c->g[i].kind, c->g[i].name, c->g[i].len) & (cap - 1);
            while (t[j])
                j = (j + 1) & (cap - 1);
            t[j] = (uint32_t)i + 1;
        }
        free(c->ghash);
        c->ghash = t;
        c->ghash_cap = cap;
    }
    size_t j = fnv(kind, s, n) & (c->ghash_cap - 1);
    while (c->ghash[j]) {
        group_ent *e = &c->g[c->ghash[j] - 1];
        if (e->kind == kind && e->len == n && memcmp(e->name, s, n) == 0)
            return (long)c->ghash[j] - 1;
        j = (j + 1) & (c->ghash_cap - 1);
    }
    if (c->ng == c->gcap) {
        size_t cap = c->gcap ? c->gcap * 2 : 64;
        group_ent *g = realloc(c->g, cap * sizeof *g);
        if (!g)
            return -1;
        c->g = g;
        c->gcap = cap;
    }
    group_ent *e = &c->g[c->ng];
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->len = n;
    if (!(e->name = malloc(n + 1)))
        return -1;
    memcpy(e->name, s, n);
    e->name[n] = '\0';
    c->ghash[j] = (uint32_t)c->ng + 1;
    return (long)c->ng++;
}

static long kernel_group(cmp_ctx *c, uint32_t name_id)
{
    if (name_id < c->name_map_cap && c->name_map[name_id])
        return (long)c->name_map[name_id] - 1;
    if (name_id >= c->name_map_cap) {
        size_t cap = c->name_map_cap ? c->name_map_cap : 256;
        while (cap <= name_id)
            cap *= 2;
        uint32_t *m = realloc(c->name_map, cap * sizeof *m);
        if (!m)
            return -1;
        memset(m + c->name_map_cap, 0, (cap - c->name_map_cap) * sizeof *m);
        c->name_map = m;
        c->name_map_cap = cap;
    }
    const char *s = "(no name)";
    size_t n = strlen(s);
    if (name_id && cupstore_name_get(c->txn, name_id, &s, &n) != 0) {
        s = "(unknown name)";
        n = strlen(s);
    }
    if (c->o->name_fn && n) {
        size_t d = c->o->name_fn(s, n, c->buf, NAME_BUF);
        if (d) {
            s = c->buf;
            n = d;
        }
    }
    long g = group_get(c, MODEL_CMP_KERNEL, s, n);
    if (g >= 0)
        c->name_map[name_id] = (uint32_t)g + 1;
    return g;
}

const char *model_memcpy_kind_name(uint32_t kind, char *buf, size_t len)
{
    static const char *const names[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                        "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
    if (kind < sizeof names / sizeof *names)
        return names[kind];
    snprintf(buf, len, "kind %" PRIu32, kind);
    return buf;
}

static long memcpy_group(cmp_ctx *c, uint32_t kind)
{
    if (kind < 16 && c->memcpy_group[kind])
        return (long)c->memcpy_group[kind] - 1;
    char tmp[32], name[48];
    snprintf(name, sizeof name, "memcpy %s", model_memcpy_kind_name(kind, tmp, sizeof tmp));
    long g = group_get(c, MODEL_CMP_MEMCPY, name, strlen(name));
    if (g >= 0 && kind < 16)
        c->memcpy_group[kind] = (uint32_t)g + 1;
    return g;
}

static stream_ent *stream_get(cmp_ctx *c, uint16_t device, uint32_t stream)
{
    if (c->last_stream < c->nst && c->st[c->last_stream].device == device &&
        c->st[c->last_stream].stream == stream)
        return &c->st[c->last_stream];
    for (size_t i = 0; i < c->nst; i++)
        if (c->st[i].device == device && c->st[i].stream == stream) {
            c->last_stream = i;
            return &c->st[i];
        }
    if (c->nst == MODEL_CMP_STREAMS)
        return NULL;
    stream_ent *e = &c->st[c->nst];
    memset(e, 0, sizeof *e);
    e->device = device;
    e->stream = stream;
    c->last_stream = c->nst++;
    return e;
}

static void heap_down(item *h, size_t len, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < len && h[l].start > h[m].start)
            m = l;
        if (r < len && h[r].start > h[m].start)
            m = r;
        if (m == i)
            return;
        item t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* Keep the `window` earliest kernels of the stream. */
static int order_add(cmp_ctx *c, stream_side *s, uint64_t start, uint32_t group)
{
    s->n++;
    if (s->len == c->window) {
        if (start >= s->heap[0].start)
            return 0;
        s->heap[0] = (item){start, group};
        heap_down(s->heap, s->len, 0);
        return 0;
    }
    if (s->len == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        if (cap > c->window)
            cap = c->window;
        item *h = realloc(s->heap, cap * sizeof *h);
        if (!h)
            return ENOMEM;
        s->heap = h;
        s->cap = cap;
    }
    size_t i = s->len++;
    s->heap[i] = (item){start, group};
    while (i) {
        size_t p = (i - 1) / 2;
        if (s->heap[p].start >= s->heap[i].start)
            break;
        item t = s->heap[p];
        s->heap[p] = s->heap[i];
        s->heap[i] = t;
        i = p;
    }
    return 0;
}

static int on_record(const cupstore_record *r, void *arg)
{
    cmp_ctx *c = arg;
    model_cmp_side *sd = c->sd;
    long g;
    sd->records++;
    if (r->kind == CUPSTORE_KIND_KERNEL) {
        sd->kernels++;
        g = kernel_group(c, r->name_id);
    } else if (r->kind == CUPSTORE_KIND_MEMCPY) {
        sd->memcpys++;
        g = memcpy_group(c, r->aux);
    } else {
        return 0;
    }
    if (g < 0)
        return c->err = ENOMEM;
    if ((r->flags & CUPSTORE_RF_ZERO_TS) || !r->start_ns || r->end_ns < r->start_ns) {
        sd->no_duration++;
        return 0;
    }
    if ((c->err = hist_add(&c->g[g].h[c->side], r->end_ns - r->start_ns)) != 0)
        return c->err;
    if (r->kind != CUPSTORE_KIND_KERNEL)
        return 0;
    stream_ent *e = stream_get(c, r->device, r->stream);
    if (!e) {
        c->untracked++;
        return 0;
    }
    return c->err = order_add(c, &e->s[c->side], r->start_ns, (uint32_t)g);
}

/* ---- one side: resolve the operand, judge, read ------------------------------------ */

typedef struct kinds_ctx {
    uint64_t from, to;
    uint32_t kinds, first;
    bool mixed, any;
    uint32_t want;              /* epoch operand: its id                     */
    cupstore_epoch found;
    bool have;
    uint32_t max_id;
} kinds_ctx;

static int on_epoch(const cupstore_epoch *e, void *arg)
{
    kinds_ctx *k = arg;
    if (e->id > k->max_id)
        k->max_id = e->id;
    if (k->want && e->id == k->want) {
        k->found = *e;
        k->have = true;
    }
    if (!e->kinds || e->start_ns > k->to || (e->end_ns && e->end_ns < k->from))
        return 0;
    if (e->end_ns && e->end_ns == k->from)
        return 0;   /* ended exactly where the window starts */
    if (k->any && e->kinds != k->first)
        k->mixed = true;
    if (!k->any)
        k->first = e->kinds;
    k->any = true;
    k->kinds |= e->kinds;
    return 0;
}

static int side_fail(char **cause, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int side_fail(char **cause, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (cause && vasprintf(cause, fmt, ap) < 0)
        *cause = NULL;
    va_end(ap);
    return rc;
}

/* Open side i, find its window and judge it; the records are read by the
 * caller.  *envp stays open for the scan. */
/* The window of an NVTX range instance: [start, end], an open one to the
 * session's last time (to_ns UINT64_MAX, as `cuptop export --range`). */
static int range_window(cupstore_txn *txn, model_cmp_side *sd, bool *open, uint64_t *nth,
                        char **cause)
{
    model_ranges *m = NULL;
    int rc = model_ranges_load(txn, NULL, &m);
    if (rc)
        return side_fail(cause, rc, "session %s: reading its NVTX ranges: %s", sd->id,
                         model_strerror(rc));
    char esc[160];
    model_escape(esc, sizeof esc, sd->op.name, strlen(sd->op.name));
    long k = model_ranges_find(m, sd->op.name, NULL);
    long idx = -1;
    if (k < 0) {
        rc = side_fail(cause, CUPSTORE_EINVAL, "session %s has no NVTX range named \"%s\" "
                       "(%zu range names; cuptop ranges lists them)", sd->id, esc, m->nnames);
    } else if (sd->op.slowest) {
        const model_range_name *n = &m->names[k];
        if (!n->count)
            rc = side_fail(cause, CUPSTORE_EINVAL, "the range \"%s\" of session %s has no "
                           "closed instance (%" PRIu64 " open)", esc, sd->id, n->open);
        else
            idx = (long)n->by_dur[0];
        for (size_t t = 0; idx >= 0 && t < n->ntime; t++)
            if (n->by_time[t] == (size_t)idx)
                *nth = t + 1;
    } else if ((idx = model_ranges_nth(m, (size_t)k, sd->op.instance)) < 0) {
        rc = side_fail(cause, CUPSTORE_EINVAL, "the range \"%s\" of session %s has %zu "
                       "instance(s), not %" PRIu32, esc, sd->id, m->names[k].ntime,
                       sd->op.instance);
    } else {
        *nth = sd->op.instance;
    }
    if (!rc && (m->inst[idx].flags & CUPSTORE_RANGE_POINT))
        rc = side_fail(cause, CUPSTORE_EINVAL, "instance %" PRIu64 " of the range \"%s\" "
                       "of session %s is a point mark: it has no window", *nth, esc, sd->id);
    if (!rc) {
        const model_range_inst *r = &m->inst[idx];
        *open = model_range_open(r);
        sd->from_ns = r->start_ns;
        sd->to_ns = *open ? UINT64_MAX : r->end_ns;
    }
    model_ranges_free(m);
    return rc;
}

static int side_open(const model_compare_opts *o, const char *arg, model_cmp_side *sd,
                     model_summary *sum, cupstore_env **envp, char **cause)
{
    int rc = model_operand_parse(arg, &sd->op, cause);
    if (rc)
        return rc;
    rc = cupstore_session_open(envp, o->store_dir, sd->op.session, CUPSTORE_RDONLY);
    if (rc)
        return side_fail(cause, rc, "session %s: %s", sd->op.session, model_strerror(rc));
    snprintf(sd->id, sizeof sd->id, "%s", cupstore_env_id(*envp));
    cupstore_txn *txn;
    if ((rc = cupstore_txn_begin(*envp, false, &txn)) != 0)
        return side_fail(cause, rc, "session %s: %s", sd->id, model_strerror(rc));
    kinds_ctx k = {.from = 0, .to = UINT64_MAX, .want = sd->op.epoch};
    sd->from_ns = 0;
    sd->to_ns = UINT64_MAX;
    if (sd->op.kind == MODEL_OP_MARK) {
        cupstore_mark m;
        rc = cupstore_mark_get(txn, sd->op.name, &m);
        if (rc) {
            cupstore_txn_abort(txn);
            char esc[160];
            model_escape(esc, sizeof esc, sd->op.name, strlen(sd->op.name));
            return side_fail(cause, rc == CUPSTORE_ENOTFOUND ? CUPSTORE_EINVAL : rc,
                             "session %s has no mark \"%s\"", sd->id, esc);
        }
        sd->from_ns = m.from_ns;
        sd->to_ns = m.to_ns;
    }
    bool range_open = false;
    uint64_t range_nth = 0;
    if (sd->op.kind == MODEL_OP_RANGE &&
        (rc = range_window(txn, sd, &range_open, &range_nth, cause)) != 0) {
        cupstore_txn_abort(txn);
        return rc;
    }
    k.from = sd->from_ns;
    k.to = sd->to_ns;
    rc = cupstore_epoch_scan(txn, on_epoch, &k);
    if (rc == 0 && sd->op.kind == MODEL_OP_EPOCH) {
        if (!k.have) {
            cupstore_txn_abort(txn);
            return side_fail(cause, CUPSTORE_EINVAL, "session %s has no epoch %" PRIu32
                             " (it has 1 to %" PRIu32 ")", sd->id, sd->op.epoch, k.max_id);
        }
        sd->from_ns = k.found.start_ns;
        sd->to_ns = k.found.end_ns ? k.found.end_ns : UINT64_MAX;
        kinds_ctx k2 = {.from = sd->from_ns, .to = sd->to_ns};
        k2.kinds = k.found.kinds;
        k2.any = k.found.kinds != 0;
        k = k2;
    }
    cupstore_txn_abort(txn);
    if (rc)
        return side_fail(cause, rc, "session %s: %s", sd->id, model_strerror(rc));
    sd->kinds = k.kinds;
    sd->kinds_mixed = k.mixed;
    uint64_t from_s = sd->from_ns / 1000000000u;
    uint64_t to_s = sd->to_ns == UINT64_MAX ? UINT64_MAX : sd->to_ns / 1000000000u;
    /* an epoch is judged by the model's per-epoch rule (its change seconds
     * split, as report and the monitor count them), any other window by
     * its seconds */
    rc = sd->op.kind == MODEL_OP_EPOCH
             ? model_summarize_epoch(*envp, sd->op.epoch, sum, NULL, cause)
             : model_summarize(*envp, from_s, to_s, sum, cause);
    if (rc)
        return rc;
    if (!k.any)
        sd->kinds = sum->kinds_enabled;
    sd->open = range_open;
    /* to the end (an open range, a whole session, an epoch still open):
     * the session's last time, its end or its last heartbeat */
    sd->end_ns = (range_open || sd->to_ns == UINT64_MAX) && sum->end_ns ? sum->end_ns : sd->to_ns;
    switch (sd->op.kind) {
    case MODEL_OP_EPOCH:
        snprintf(sd->what, sizeof sd->what, "epoch %" PRIu32 " of %s", sd->op.epoch, sd->id);
        break;
    case MODEL_OP_MARK: {
        char esc[100];
        model_escape(esc, sizeof esc, sd->op.name, strlen(sd->op.name));
        snprintf(sd->what, sizeof sd->what, "mark \"%s\" of %s", esc, sd->id);
        break;
    }
    case MODEL_OP_RANGE: {
        char esc[100];
        model_escape(esc, sizeof esc, sd->op.name, strlen(sd->op.name));
        snprintf(sd->what, sizeof sd->what, "range \"%s\" #%" PRIu64 "%s of %s%s", esc,
                 range_nth, sd->op.slowest ? " (slowest)" : "", sd->id,
                 range_open ? " (open: to the session's last time)" : "");
        break;
    }
    default:
        snprintf(sd->what, sizeof sd->what, "session %s", sd->id);
    }
    sd->lossy = !sum->complete && !sum->skipped[0];
    sd->running = model_state_live(sum->state);   /* stopped: still live */
    snprintf(sd->verdict, sizeof sd->verdict, "%s", model_verdict_name(sum));
    memcpy(sd->loss, sum->loss, sizeof sd->loss);
    sd->loss_total = sum->loss_total;
    if (sum->nreasons)
        snprintf(sd->reason, sizeof sd->reason, "%s", sum->reasons[0].text);
    return 0;
}

/* ---- comparability ------------------------------------------------------------------ */

typedef struct kv {
    char *key, *val;
} kv;

typedef struct kv_list {
    kv *v;
    size_t n, cap;
} kv_list;

static int kv_push(kv_list *l, const char *k, const char *v)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 32;
        kv *n = realloc(l->v, cap * sizeof *n);
        if (!n)
            return ENOMEM;
        l->v = n;
        l->cap = cap;
    }
    l->v[l->n].key = strdup(k);
    l->v[l->n].val = strdup(v ? v : "");
    if (!l->v[l->n].key || !l->v[l->n].val)
        return ENOMEM;
    l->n++;
    return 0;
}

static void kv_free(kv_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].key);
        free(l->v[i].val);
    }
    free(l->v);
}

static int on_config(const char *key, const char *value, void *arg)
{
    return kv_push(arg, key, value);
}

/* The facts compared, one list per side, in key order within each part. */
static int facts_read(cupstore_env *env, const model_summary *s, uint32_t kinds, kv_list *l)
{
    cupstore_txn *txn;
    int rc = cupstore_txn_begin(env, false, &txn);
    if (rc)
        return rc;
    char buf[512];
    const model_prov *p = s->prov;
    /* the workload first: label, else the command */
    rc = kv_push(l, "label", p && p->label ? p->label : "(none)");
    if (!rc)
        rc = kv_push(l, "command", s->cmdline);
    cupstore_kinds_format(kinds, buf, sizeof buf);
    if (!rc)
        rc = kv_push(l, "kinds", buf);
    if (!rc)
        rc = cupstore_meta_scan(txn, CUPSTORE_META_CONFIG, on_config, l);
    char *sink = NULL;
    (void)cupstore_meta_get(txn, "sink", &sink);
    if (!rc)
        rc = kv_push(l, "sink", sink ? sink : "store");
    free(sink);
    cupstore_txn_abort(txn);
    for (unsigned i = 0; !rc && p && i < MODEL_V_MAX; i++)
        rc = kv_push(l, model_prov_vname(i), p->v[i] ? p->v[i] : "(unknown)");
    if (!rc && p) {
        rc = kv_push(l, "host", s->host);
        if (!rc)
            rc = kv_push(l, "os", p->os ? p->os : "(unknown)");
        if (!rc)
            rc = kv_push(l, "virt", p->virt ? p->virt : "(unknown)");
        if (!rc)
            rc = kv_push(l, "simulated", p->simulated ? "yes" : "no");
    }
    for (unsigned d = 0; !rc && p && d < CUPSTORE_DEVICE_MAX; d++) {
        if (!(s->device_mask & (1u << d)))
            continue;
        const model_device *v = &p->dev[d];
        char key[32];
        snprintf(key, sizeof key, "device %u", d);
        snprintf(buf, sizeof buf, "%s, cc %s, %" PRIu32 " SMs, %" PRIu64 " MiB, MIG %s",
                 v->known ? v->name : "unknown", v->cc[0] ? v->cc : "?", v->sm,
                 v->memory >> 20, v->mig < 0 ? "?" : v->mig ? "on" : "off");
        rc = kv_push(l, key, buf);
        snprintf(key, sizeof key, "device %u uuid", d);
        if (!rc)
            rc = kv_push(l, key, v->uuid[0] ? v->uuid : "(unknown)");
    }
    return rc;
}

/* Settings that say where or how the agent logged, not what it collected. */
static bool key_is_note(const char *k)
{
    static const char *const notes[] = {"host", "config.store", "config.log",
                                        "config.config_file", "config.dormant",
                                        "config.on_detach"};
    for (size_t i = 0; i < sizeof notes / sizeof *notes; i++)
        if (!strcmp(k, notes[i]))
            return true;
    size_t n = strlen(k);
    return n > 5 && !strcmp(k + n - 5, " uuid");
}

static int diff_add(model_compare *c, const char *what, const char *a, const char *b,
                    bool fatal)
{
    model_cmp_diff *d = realloc(c->diffs, (c->ndiffs + 1) * sizeof *d);
    if (!d)
        return ENOMEM;
    c->diffs = d;
    d = &c->diffs[c->ndiffs++];
    snprintf(d->what, sizeof d->what, "%s", what);
    snprintf(d->a, sizeof d->a, "%s", a ? a : "(none)");
    snprintf(d->b, sizeof d->b, "%s", b ? b : "(none)");
    d->fatal = fatal;
    return 0;
}

static const char *kv_find(const kv_list *l, const char *k)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].key, k))
            return l->v[i].val;
    return NULL;
}

static int comparability(model_compare *c, const kv_list l[2])
{
    int rc = 0;
    bool same_label = strcmp(kv_find(&l[0], "label"), "(none)") != 0 &&
                      !strcmp(kv_find(&l[0], "label"), kv_find(&l[1], "label"));
    /* every key of A, then B's keys A lacks */
    for (int s = 0; s < 2 && !rc; s++)
        for (size_t i = 0; i < l[s].n && !rc; i++) {
            const char *k = l[s].v[i].key;
            const char *va = kv_find(&l[0], k), *vb = kv_find(&l[1], k);
            if (s == 1 && va)
                continue;
            if (!strcmp(k, "config.kinds"))
                continue;   /* the kinds collected in the window are compared */
            if (va && vb && !strcmp(va, vb))
                continue;
            /* one workload label: the command may differ (an A/B change) */
            bool fatal = !key_is_note(k) && !(same_label && !strcmp(k, "command"));
            rc = diff_add(c, k, va, vb, fatal);
            if (fatal && (!strcmp(k, "kinds") || !strncmp(k, "config.", 7)))
                c->config_differs = true;
        }
    if (rc)
        return rc;
    for (int s = 0; s < 2 && !rc; s++)
        if (c->side[s].kinds_mixed)
            rc = diff_add(c, s ? "kinds within B" : "kinds within A", "several epochs",
                          "of different kinds", true);
    c->comparable = true;
    size_t len = 0;
    for (size_t i = 0; i < c->ndiffs; i++) {
        if (!c->diffs[i].fatal)
            continue;
        if (c->comparable)
            len = (size_t)snprintf(c->verdict, sizeof c->verdict, "not comparable: %s",
                                   c->diffs[i].what);
        else if (len < sizeof c->verdict)
            len += (size_t)snprintf(c->verdict + len, sizeof c->verdict - len, ", %s",
                                    c->diffs[i].what);
        c->comparable = false;
    }
    if (c->comparable)
        snprintf(c->verdict, sizeof c->verdict, "comparable");
    else if (len < sizeof c->verdict)
        snprintf(c->verdict + len, sizeof c->verdict - len, " differ%s",
                 c->config_differs ? "; absolute times are not comparable; only order and "
                                     "relative durations are"
                                   : "");
    return rc;
}

/* ---- order: Myers' difference with a cap ------------------------------------------- */

static int item_cmp(const void *x, const void *y)
{
    const item *a = x, *b = y;
    return a->start < b->start ? -1 : a->start > b->start ? 1 : (a->group > b->group) - (a->group < b->group);
}

/* D, the fewest insertions and deletions turning a into b, if <= cap;
 * -1 beyond the cap, -2 out of memory. */
static long myers(const item *a, long n, const item *b, long m, long cap)
{
    long max = n + m < cap ? n + m : cap;
    long *v = malloc((size_t)(2 * max + 3) * sizeof *v);
    if (!v)
        return -2;
    long off = max + 1;
    for (long i = 0; i < 2 * max + 3; i++)
        v[i] = -1;
    for (long d = 0; d <= max; d++) {
        long kmin = -d, kmax = d;
        while (kmin < -m)
            kmin += 2;
        while (kmax > n)
            kmax -= 2;
        for (long k = kmin; k <= kmax; k += 2) {
            long x;
            if (d == 0) {
                x = 0;
            } else {
                long down = v[off + k + 1], right = v[off + k - 1];
                long xd = down >= 0 && down - k <= m ? down : -1;
                long xr = right >= 0 && right + 1 <= n ? right + 1 : -1;
                x = xd > xr ? xd : xr;
                if (x < 0) {
                    v[off + k] = -1;
                    continue;
                }
            }
            long y = x - k;
            while (x < n && y < m && a[x].group == b[y].group)
                x++, y++;
            v[off + k] = x;
            if (x >= n && y >= m) {
                free(v);
                return d;
            }
        }
    }
    free(v);
    return -1;
}

static int by_stream(const void *x, const void *y)
{
    const stream_ent *a = x, *b = y;
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    return (a->stream > b->stream) - (a->stream < b->stream);
}

static int order_finish(cmp_ctx *c, model_compare *out)
{
    if (!c->nst)
        return 0;
    qsort(c->st, c->nst, sizeof *c->st, by_stream);
    out->streams = calloc(c->nst, sizeof *out->streams);
    if (!out->streams)
        return ENOMEM;
    out->nstreams = c->nst;
    for (size_t i = 0; i < c->nst; i++) {
        stream_ent *e = &c->st[i];
        model_cmp_stream *o = &out->streams[i];
        o->device = e->device;
        o->stream = e->stream;
        for (int s = 0; s < 2; s++) {
            if (e->s[s].len)   /* no kernel on this side: heap is NULL */
                qsort(e->s[s].heap, e->s[s].len, sizeof *e->s[s].heap, item_cmp);
            o->kernels[s] = e->s[s].n;
            o->compared[s] = e->s[s].len;
        }
        const item *a = e->s[0].heap, *b = e->s[1].heap;
        size_t na = e->s[0].len, nb = e->s[1].len, shorter = na < nb ? na : nb, j = 0;
        while (j < shorter && a[j].group == b[j].group)
            j++;
        o->diverged = j < na || j < nb;
        o->diverge_index = j;
        o->diverge_group[0] = o->diverge_group[1] = -1;
        if (o->diverged) {
            if (j < na) {
                o->diverge_ns[0] = a[j].start;
                o->diverge_group[0] = a[j].group;
            }
            if (j < nb) {
                o->diverge_ns[1] = b[j].start;
                o->diverge_group[1] = b[j].group;
            }
        }
        /* the common prefix is part of every longest common subsequence */
        long d = myers(a + j, (long)(na - j), b + j, (long)(nb - j), (long)c->cap);
        if (d == -2)
            return ENOMEM;
        if (d >= 0) {
            o->lcs = (uint64_t)j + (uint64_t)(((long)(na - j) + (long)(nb - j) - d) / 2);
        } else {
            o->lcs_bound = true;   /* D > cap: LCS < (n + m - cap) / 2 */
            long rest = ((long)(na - j) + (long)(nb - j) - (long)c->cap) / 2;
            long most = (long)(shorter - j);
            o->lcs = (uint64_t)j + (uint64_t)(rest < most ? (rest < 0 ? 0 : rest) : most);
        }
        o->agreement = shorter ? (double)o->lcs / (double)shorter : (na == nb ? 1.0 : 0.0);
    }
    return 0;
}

/* ---- the whole comparison ---------------------------------------------------------------- */

static int by_change(const void *x, const void *y)
{
    const model_cmp_group *a = x, *b = y;
    if (a->change_ns != b->change_ns)
        return a->change_ns < b->change_ns ? 1 : -1;
    uint64_t ta = a->s[0].total_ns > a->s[1].total_ns ? a->s[0].total_ns : a->s[1].total_ns;
    uint64_t tb = b->s[0].total_ns > b->s[1].total_ns ? b->s[0].total_ns : b->s[1].total_ns;
    if (ta != tb)
        return ta < tb ? 1 : -1;
    if (a->kind != b->kind)
        return (int)a->kind - (int)b->kind;
    return strcmp(a->name, b->name);
}

static void ctx_free(cmp_ctx *c)
{
    for (size_t i = 0; i < c->ng; i++) {
        free(c->g[i].name);
        free(c->g[i].h[0].c);
        free(c->g[i].h[1].c);
    }
    free(c->g);
    free(c->ghash);
    for (size_t i = 0; i < c->nst; i++) {
        free(c->st[i].s[0].heap);
        free(c->st[i].s[1].heap);
    }
    free(c->st);
    free(c->name_map);
    free(c->buf);
}

int model_compare_run(const model_compare_opts *o, const char *a, const char *b,
                      model_compare *out, char **cause)
{
    const char *args[2] = {a, b};
    cupstore_env *env[2] = {NULL, NULL};
    model_summary sum[2];
    kv_list facts[2] = {{0}, {0}};
    cmp_ctx c = {.o = o};
    int rc = 0;

    memset(out, 0, sizeof *out);
    memset(sum, 0, sizeof sum);
    if (cause)
        *cause = NULL;
    c.window = o->order_window ? o->order_window : MODEL_CMP_ORDER_WINDOW;
    c.cap = o->edit_cap ? o->edit_cap : MODEL_CMP_EDIT_CAP;
    out->order_window = c.window;
    out->edit_cap = c.cap;
    c.st = calloc(MODEL_CMP_STREAMS, sizeof *c.st);
    c.buf = malloc(NAME_BUF);
    if (!c.st || !c.buf) {
        rc = ENOMEM;
        goto done;
    }
    for (int s = 0; s < 2 && !rc; s++) {
        rc = side_open(o, args[s], &out->side[s], &sum[s], &env[s], cause);
        if (!rc)
            rc = facts_read(env[s], &sum[s], out->side[s].kinds, &facts[s]);
    }
    if (rc)
        goto done;
    if ((rc = comparability(out, facts)) != 0)
        goto done;
    for (int s = 0; s < 2 && !rc; s++) {
        c.side = s;
        c.sd = &out->side[s];
        memset(c.memcpy_group, 0, sizeof c.memcpy_group);
        c.name_map_cap = 0;
        free(c.name_map);
        c.name_map = NULL;
        if ((rc = cupstore_txn_begin(env[s], false, &c.txn)) != 0)
            break;
        rc = cupstore_record_scan(c.txn, out->side[s].from_ns, out->side[s].to_ns, on_record, &c);
        cupstore_txn_abort(c.txn);
        if (c.err)
            rc = c.err;
        if (rc && cause && !*cause && asprintf(cause, "session %s: reading its records: %s",
                                               out->side[s].id, model_strerror(rc)) < 0)
            *cause = NULL;
    }
    if (rc)
        goto done;
    out->groups = calloc(c.ng ? c.ng : 1, sizeof *out->groups);
    if (!out->groups) {
        rc = ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < c.ng; i++) {
        model_cmp_group *g = &out->groups[i];
        g->kind = c.g[i].kind;
        g->name = c.g[i].name;
        g->name_len = c.g[i].len;
        g->id = (uint32_t)i;
        c.g[i].name = NULL;
        for (int s = 0; s < 2; s++) {
            const hist *h = &c.g[i].h[s];
            g->s[s] = (model_cmp_stat){.count = h->count, .total_ns = h->total,
                                       .p50_ns = hist_pct(h, 0.50), .p90_ns = hist_pct(h, 0.90),
                                       .p99_ns = hist_pct(h, 0.99), .min_ns = h->min,
                                       .max_ns = h->max};
        }
        g->change_ns = g->s[1].total_ns > g->s[0].total_ns ? g->s[1].total_ns - g->s[0].total_ns
                                                           : g->s[0].total_ns - g->s[1].total_ns;
    }
    out->ngroups = c.ng;
    out->streams_untracked = c.untracked;
    if ((rc = order_finish(&c, out)) != 0)
        goto done;
    if (out->ngroups)
        qsort(out->groups, out->ngroups, sizeof *out->groups, by_change);
    /* the streams name groups by their index before sorting */
    uint32_t *inv = malloc((c.ng ? c.ng : 1) * sizeof *inv);
    if (!inv) {
        rc = ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < c.ng; i++)
        inv[out->groups[i].id] = (uint32_t)i;
    for (size_t i = 0; i < out->nstreams; i++)
        for (int s = 0; s < 2; s++)
            if (out->streams[i].diverge_group[s] >= 0)
                out->streams[i].diverge_group[s] = inv[out->streams[i].diverge_group[s]];
    free(inv);
    out->exit_status = out->comparable && !out->side[0].lossy && !out->side[1].lossy
                           ? CUPTOP_EXIT_OK
                           : CUPTOP_EXIT_NO;
done:
    if (rc == ENOMEM && cause && !*cause)
        *cause = strdup("out of memory");
    for (int s = 0; s < 2; s++) {
        model_summary_free(&sum[s]);
        kv_free(&facts[s]);
        if (env[s])
            cupstore_env_close(env[s]);
    }
    ctx_free(&c);
    if (rc)
        model_compare_free(out);
    return rc;
}

void model_compare_free(model_compare *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->ngroups; i++)
        free(c->groups[i].name);
    free(c->groups);
    free(c->diffs);
    free(c->streams);
    c->groups = NULL;
    c->diffs = NULL;
    c->streams = NULL;
    c->ngroups = c->ndiffs = c->nstreams = 0;
}

const char *model_cmp_gkind_name(model_cmp_gkind k)
{
    return k == MODEL_CMP_MEMCPY ? "memcpy" : "kernel";
}

/* ---- baseline: the seed's two control runs ------------------------------------------------- */

static int dbl_cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

void model_bl_walls(model_bl_config *c, const double *wall_s, size_t n)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    c->wall_median_s = c->wall_min_s = c->wall_max_s = c->spread = 0;
    if (!v || !n) {
        free(v);
        return;
    }
    memcpy(v, wall_s, n * sizeof *v);
    qsort(v, n, sizeof *v, dbl_cmp);
    c->wall_median_s = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    c->wall_min_s = v[0];
    c->wall_max_s = v[n - 1];
    c->spread = c->wall_median_s > 0 ? (v[n - 1] - v[0]) / c->wall_median_s : 0;
    free(v);
}

const char *model_bl_name(model_bl_conclusion c)
{
    static const char *const names[] = {"usable_baseline", "record_pressure", "buffer_supply",
                                        "narrowed_only",   "untraced",        "command_failed"};
    return (unsigned)c < sizeof names / sizeof *names ? names[c] : "?";
}

model_bl_conclusion model_bl_conclude(model_bl_config cfg[MODEL_BL_CONFIGS], char *text,
                                      size_t len)
{
    const model_bl_config *n = &cfg[MODEL_BL_NARROW], *f = &cfg[MODEL_BL_FULL];
    for (int i = 0; i < MODEL_BL_CONFIGS; i++)
        if (cfg[i].failed) {
            snprintf(text, len, "the command failed in %zu of %zu runs (%s): fix the "
                     "workload first; nothing is concluded", cfg[i].failed, cfg[i].runs,
                     i == MODEL_BL_OFF ? "collection off" : i == MODEL_BL_NARROW ? "narrowed"
                                                                                  : "full");
            return MODEL_BL_FAILED;
        }
    if (n->sessions < n->runs || f->sessions < f->runs) {
        snprintf(text, len, "%zu traced runs left no session (the agent was not loaded or "
                 "could not open the store): nothing is concluded",
                 (n->runs - n->sessions) + (f->runs - f->sessions));
        return MODEL_BL_UNTRACED;
    }
    if (!n->lossy && !f->lossy) {
        snprintf(text, len, "no loss anywhere: the full run is a usable baseline (compare "
                 "later runs against it with cuptop compare)");
        return MODEL_BL_USABLE;
    }
    if (!n->lossy) {
        snprintf(text, len, "loss only at full collection and none narrowed: the loss is "
                 "caused by record pressure; narrowing clears it, but that does not make the "
                 "full trace right: do not use the full runs for timing attribution");
        return MODEL_BL_PRESSURE;
    }
    if (f->lossy) {
        snprintf(text, len, "loss both narrowed and at full collection: not record pressure "
                 "alone; look at the buffer supply (pool, buffer size) or the store "
                 "(cuptop report on a lossy session)");
        return MODEL_BL_SUPPLY;
    }
    snprintf(text, len, "loss narrowed but none at full collection: not caused by record "
             "pressure and not reproducible here; look at the buffer supply or the store and "
             "run more runs");
    return MODEL_BL_NARROW_ONLY;
}
