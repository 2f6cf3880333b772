/*
 * model_compare_side.c - one side of a comparison: its operand parsed
 * (session, epoch, NVTX range, window), resolved in the store and judged;
 * the facts it was collected under (configuration, versions, devices,
 * kinds); and whether two sides' facts make them comparable.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model_compare_int.h"

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

/* sd->what from fmt, cut at its size on purpose: a long name or id is
 * shortened in the heading, never refused. */
static void what_set(model_cmp_side *sd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void what_set(model_cmp_side *sd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sd->what, sizeof sd->what, fmt, ap);
    va_end(ap);
}

/* The side's name for people: "epoch N of ID", "mark ..." and so on. */
static void side_what(model_cmp_side *sd, uint64_t range_nth, bool range_open)
{
    switch (sd->op.kind) {
    case MODEL_OP_EPOCH:
        what_set(sd, "epoch %" PRIu32 " of %s", sd->op.epoch, sd->id);
        break;
    case MODEL_OP_MARK: {
        char esc[100];
        model_escape(esc, sizeof esc, sd->op.name, strlen(sd->op.name));
        what_set(sd, "mark \"%s\" of %s", esc, sd->id);
        break;
    }
    case MODEL_OP_RANGE: {
        char esc[100];
        model_escape(esc, sizeof esc, sd->op.name, strlen(sd->op.name));
        what_set(sd, "range \"%s\" #%" PRIu64 "%s of %s%s", esc,
                 range_nth, sd->op.slowest ? " (slowest)" : "", sd->id,
                 range_open ? " (open: to the session's last time)" : "");
        break;
    }
    default:
        what_set(sd, "session %s", sd->id);
    }
}

static int on_lost(const cupstore_lost *l, void *arg)
{
    model_cmp_side *sd = arg;
    for (unsigned k = 0; k < CUPSTORE_LEDGER_KINDS; k++)
        sd->ledger_missing[k] += l->missing[k];
    return 0;
}

/* The ledger's missing records launched in the side's window (nothing
 * when the session ran without it). */
static int side_ledger(cupstore_txn *txn, model_cmp_side *sd)
{
    char *v = NULL;
    int rc = cupstore_meta_get(txn, "ledger", &v);
    if (rc == CUPSTORE_ENOTFOUND)
        return 0;
    if (rc)
        return rc;
    sd->ledger = true;
    const char *u = strstr(v, " lost_unkept=");
    sd->ledger_capped = u && strtoull(u + 13, NULL, 10) > 0;
    free(v);
    memset(sd->ledger_missing, 0, sizeof sd->ledger_missing);
    return cupstore_lost_scan(txn, sd->from_ns, sd->to_ns, on_lost, sd);
}

/* The side's verdict and losses, from its window's summary. */
static void side_verdict(model_cmp_side *sd, const model_summary *sum)
{
    sd->lossy = !sum->complete && !sum->skipped[0];
    sd->running = model_state_live(sum->state);   /* stopped: still live */
    snprintf(sd->verdict, sizeof sd->verdict, "%s", model_verdict_name(sum));
    memcpy(sd->loss, sum->loss, sizeof sd->loss);
    sd->loss_total = sum->loss_total;
    if (sum->nreasons)
        snprintf(sd->reason, sizeof sd->reason, "%s", sum->reasons[0].text);
}

int model_cmp_side_open(const char *dir, const char *arg, model_cmp_side *sd,
                        model_summary *sum, cupstore_env **envp, char **cause)
{
    int rc = model_operand_parse(arg, &sd->op, cause);
    if (rc)
        return rc;
    rc = cupstore_session_open(envp, dir, sd->op.session, CUPSTORE_RDONLY);
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
    if (rc == 0)
        rc = side_ledger(txn, sd);
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
    side_what(sd, range_nth, range_open);
    side_verdict(sd, sum);
    return 0;
}

/* ---- comparability ------------------------------------------------------------------ */

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

void model_cmp_facts_free(kv_list *l)
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
int model_cmp_facts_read(cupstore_env *env, const model_summary *s, uint32_t kinds, kv_list *l)
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

int model_cmp_comparable(model_compare *c, const kv_list l[2])
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
