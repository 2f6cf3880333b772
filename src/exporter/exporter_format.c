/*
 * exporter_format.c - the exposition: sessions' figures to Prometheus text
 * format 0.0.4 or OpenMetrics 1.0.0.  Pure (no I/O, no store), so the
 * tests check it line by line.
 *
 * Every family is written whole (all sessions' samples together) with its
 * HELP and TYPE, as both formats require.  Names follow Prometheus'
 * conventions: one cuptop_ prefix, base units (seconds, bytes), counters
 * end in _total, metadata in an _info family whose value is 1.  The
 * per-session labels are session, pid, host and, when the store knows
 * them, label, cuptop_job and rank.
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter_int.h"

/* ---- Buffer ------------------------------------------------------------ */

static bool buf_reserve(exp_buf *b, size_t more)
{
    if (b->oom)
        return false;
    if (b->len + more + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 16384;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void exp_buf_puts(exp_buf *b, const char *s)
{
    size_t n = strlen(s);
    if (!buf_reserve(b, n))
        return;
    memcpy(b->p + b->len, s, n + 1);
    b->len += n;
}

void exp_buf_printf(exp_buf *b, const char *fmt, ...)
{
    va_list ap;
    char small[256];
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        exp_buf_puts(b, small);
        return;
    }
    if (!buf_reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void exp_buf_free(exp_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ---- Strings ----------------------------------------------------------- */

void exp_label_escape(char *dst, size_t len, const char *src)
{
    size_t o = 0;
    if (!len)
        return;
    for (const unsigned char *s = (const unsigned char *)src; *s; s++) {
        const char *rep = NULL;
        char one[2] = {(char)*s, 0};
        if (*s == '\\')
            rep = "\\\\";
        else if (*s == '"')
            rep = "\\\"";
        else if (*s == '\n')
            rep = "\\n";
        else
            rep = one;
        size_t rl = strlen(rep);
        /* a multi-byte character is copied whole or not at all */
        size_t whole = rl;
        if (*s >= 0xc0)
            for (const unsigned char *t = s + 1; (*t & 0xc0) == 0x80; t++)
                whole++;
        if (o + whole + 1 > len)
            break;
        memcpy(dst + o, rep, rl);
        o += rl;
    }
    dst[o] = '\0';
}

void exp_command_short(char *dst, size_t len, const char *cmdline)
{
    char esc[4 * EXP_COMMAND_MAX];
    const char *prog = cmdline, *end = strchr(cmdline, ' ');
    /* the program's base name: /long/path/to/train.py -> train.py */
    for (const char *p = cmdline; *p && (!end || p < end); p++)
        if (*p == '/')
            prog = p + 1;
    model_escape(esc, sizeof esc, prog, strlen(prog));
    if (strlen(esc) < len) {
        snprintf(dst, len, "%s", esc);
        return;
    }
    /* cut at a character boundary and say so */
    size_t cut = len > 4 ? len - 4 : 0;
    while (cut > 0 && ((unsigned char)esc[cut] & 0xc0) == 0x80)
        cut--;
    memcpy(dst, esc, cut);
    memcpy(dst + cut, "...", len > 4 ? 4 : 0);
    if (len <= 4)
        dst[0] = '\0';
}

/* ---- Writer ------------------------------------------------------------ */

enum mtype { M_GAUGE, M_COUNTER, M_INFO, M_SUMMARY };

typedef struct wctx {
    exp_buf *b;
    bool om;
    const exp_sess *s;
    size_t n;
    char **lab;            /* per session: session="..",pid="..",...     */
    char name[128];        /* sample name of the current family          */
    uint64_t now_ns;       /* the scrape's clock (heartbeat ages)        */
} wctx;

/* HELP and TYPE for a family; sets w->name to its sample name. */
static void family(wctx *w, const char *base, enum mtype t, const char *help)
{
    static const char *const om_type[] = {"gauge", "counter", "info", "summary"};
    static const char *const text_type[] = {"gauge", "counter", "gauge", "summary"};
    const char *suffix = t == M_COUNTER ? "_total" : t == M_INFO ? "_info" : "";
    snprintf(w->name, sizeof w->name, "%s%s", base, suffix);
    const char *head = w->om ? base : w->name;
    exp_buf_printf(w->b, "# HELP %s %s\n# TYPE %s %s\n", head, help, head,
                   w->om ? om_type[t] : text_type[t]);
}

static void fmt_double(char *buf, size_t len, double v)
{
    if (isnan(v))
        snprintf(buf, len, "NaN");
    else if (isinf(v))
        snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
    else if (v == (double)(int64_t)v && fabs(v) < 9e15)
        snprintf(buf, len, "%" PRId64, (int64_t)v);
    else if (fabs(v) >= 1e6)   /* timestamps: keep the milliseconds */
        snprintf(buf, len, "%.3f", v);
    else
        snprintf(buf, len, "%.9g", v);
}

/* One sample: NAME[SUFFIX]{LABELS[,EXTRA]} VALUE */
static void sample_str(wctx *w, const char *suffix, const char *lab, const char *extra,
                       const char *value)
{
    exp_buf_printf(w->b, "%s%s{%s%s%s} %s\n", w->name, suffix ? suffix : "", lab ? lab : "",
                   lab && *lab && extra && *extra ? "," : "", extra ? extra : "", value);
}

static void sample_u64(wctx *w, size_t i, const char *extra, uint64_t v)
{
    char val[32];
    snprintf(val, sizeof val, "%" PRIu64, v);
    sample_str(w, NULL, w->lab[i], extra, val);
}

static void sample_dbl(wctx *w, size_t i, const char *suffix, const char *extra, double v)
{
    char val[40];
    fmt_double(val, sizeof val, v);
    sample_str(w, suffix, w->lab[i], extra, val);
}

static double ns_s(uint64_t ns)
{
    return (double)ns / 1e9;
}

/* A family with one u64 sample per session, read at offset off. */
static void fam_field(wctx *w, const char *base, enum mtype t, const char *help, size_t off,
                      bool needs_last)
{
    family(w, base, t, help);
    for (size_t i = 0; i < w->n; i++) {
        if (needs_last && !w->s[i].have_last)
            continue;
        uint64_t v;
        memcpy(&v, (const char *)&w->s[i] + off, sizeof v);
        sample_u64(w, i, NULL, v);
    }
}

/* A family with one u32 sample from the last health row. */
static void fam_last32(wctx *w, const char *base, const char *help, size_t off)
{
    family(w, base, M_GAUGE, help);
    for (size_t i = 0; i < w->n; i++) {
        if (!w->s[i].have_last)
            continue;
        uint32_t v;
        memcpy(&v, (const char *)&w->s[i].last + off, sizeof v);
        sample_u64(w, i, NULL, v);
    }
}

static void fam_latency(wctx *w, const char *base, const char *help, const char *cb_label,
                        size_t lat_off, size_t count_off, bool first)
{
    if (first)
        family(w, base, M_SUMMARY, help);
    for (size_t i = 0; i < w->n; i++) {
        const exp_sess *s = &w->s[i];
        if (!s->have_last)
            continue;
        cupstore_lat l;
        uint64_t count;
        memcpy(&l, (const char *)s + lat_off, sizeof l);
        memcpy(&count, (const char *)s + count_off, sizeof count);
        static const char *const q[] = {"0.5", "0.99", "1"};
        uint32_t v[] = {l.p50_ns, l.p99_ns, l.max_ns};
        for (unsigned k = 0; k < 3; k++) {
            char extra[64];
            snprintf(extra, sizeof extra, "%s%squantile=\"%s\"", cb_label ? cb_label : "",
                     cb_label ? "," : "", q[k]);
            /* a second with no calls has no quantiles */
            sample_dbl(w, i, NULL, extra, l.count ? ns_s(v[k]) : (double)NAN);
        }
        sample_dbl(w, i, "_count", cb_label, (double)count);
    }
}

/* Room for every label of a session, each value escaped (at most twice
 * its size), with the names, quotes and commas. */
#define EXP_SESSION_LABELS_MAX                                                              \
    (2 * (sizeof((exp_sess *)0)->id + sizeof((exp_sess *)0)->host + EXP_WORKLOAD_LABEL_MAX + \
          2 * EXP_LABEL_MAX) + 128)

static void session_labels(const exp_sess *s, char *out, size_t len)
{
    char id[2 * sizeof s->id], host[2 * sizeof s->host], v[2 * sizeof s->label];
    exp_label_escape(id, sizeof id, s->id);
    exp_label_escape(host, sizeof host, s->host);
    int o = snprintf(out, len, "session=\"%s\",pid=\"%d\",host=\"%s\"", id, s->pid, host);
    /* not "job": Prometheus' own target label (an exposed job label would
     * be renamed exported_job) */
    const char *names[] = {"label", "cuptop_job", "rank"};
    const char *vals[] = {s->label, s->job, s->rank};
    for (unsigned k = 0; k < 3 && o > 0 && (size_t)o < len; k++) {
        if (!vals[k][0])
            continue;
        exp_label_escape(v, sizeof v, vals[k]);
        o += snprintf(out + o, len - (size_t)o, ",%s=\"%s\"", names[k], v);
    }
}

#define SOFF(f) offsetof(exp_sess, f)
#define HOFF(f) offsetof(cupstore_health, f)

static void format_sessions(wctx *w)
{
    char extra[256];

    family(w, "cuptop_session", M_INFO,
           "Session metadata: command (shortened), state and verdict.");
    for (size_t i = 0; i < w->n; i++) {
        const exp_sess *s = &w->s[i];
        char cmd[2 * EXP_COMMAND_MAX + 8];
        exp_label_escape(cmd, sizeof cmd, s->command);
        snprintf(extra, sizeof extra, "command=\"%s\",state=\"%s\",verdict=\"%s\"", cmd,
                 model_state_name(s->state), s->complete ? "COMPLETE" : "INCOMPLETE");
        sample_str(w, NULL, w->lab[i], extra, "1");
    }
    family(w, "cuptop_session_state", M_GAUGE,
           "1 for the session's state (running; ended; crashed: no final status, the "
           "process gone; stopped or not_responding: stale heartbeat, the process still "
           "there or not visible here), 0 for the others.");
    for (size_t i = 0; i < w->n; i++)
        for (unsigned k = 0; k < MODEL_STATE_MAX; k++) {
            snprintf(extra, sizeof extra, "state=\"%s\"", model_state_name((model_state)k));
            sample_u64(w, i, extra, (unsigned)w->s[i].state == k);
        }
    family(w, "cuptop_session_complete", M_GAUGE,
           "1 when the verdict is COMPLETE (so far, while running), 0 when INCOMPLETE.");
    for (size_t i = 0; i < w->n; i++)
        sample_u64(w, i, NULL, w->s[i].complete);
    family(w, "cuptop_session_start_time_seconds", M_GAUGE,
           "Session start, seconds since the Unix epoch.");
    for (size_t i = 0; i < w->n; i++)
        sample_dbl(w, i, NULL, NULL, ns_s(w->s[i].start_ns));
    family(w, "cuptop_session_end_time_seconds", M_GAUGE,
           "Session end (final status written), seconds since the Unix epoch; ended sessions "
           "only.");
    for (size_t i = 0; i < w->n; i++)
        if (w->s[i].state == MODEL_STATE_ENDED)
            sample_dbl(w, i, NULL, NULL, ns_s(w->s[i].end_ns));
    family(w, "cuptop_heartbeat_timestamp_seconds", M_GAUGE,
           "When the agent last wrote a health row, seconds since the Unix epoch.");
    for (size_t i = 0; i < w->n; i++)
        sample_dbl(w, i, NULL, NULL, ns_s(w->s[i].heartbeat_ns));
    family(w, "cuptop_heartbeat_age_seconds", M_GAUGE,
           "Seconds since the last health row (the agent writes one per second while it "
           "runs; a running session whose age grows has crashed).");
    for (size_t i = 0; i < w->n; i++) {
        uint64_t hb = w->s[i].heartbeat_ns;
        sample_dbl(w, i, NULL, NULL, w->now_ns > hb ? ns_s(w->now_ns - hb) : 0.0);
    }
}

/* What is known of a loss beyond its count, per class: estimated, at
 * least, at most (model_summary's loss_estimate, loss_bound,
 * loss_at_most).  A family only where some session has one, a sample only
 * where it is not 0: no sample means nothing beyond cuptop_records_lost. */
enum { BEYOND_ESTIMATE, BEYOND_AT_LEAST, BEYOND_AT_MOST, BEYOND_MAX };

static const uint64_t *beyond_of(const exp_sess *s, unsigned which)
{
    return which == BEYOND_ESTIMATE ? s->loss_estimate
           : which == BEYOND_AT_LEAST ? s->loss_bound
                                      : s->loss_at_most;
}

static void format_beyond(wctx *w)
{
    static const char *const name[BEYOND_MAX] = {
        "cuptop_records_lost_estimate", "cuptop_records_lost_at_least",
        "cuptop_records_lost_at_most"};
    static const char *const help[BEYOND_MAX] = {
        "Records lost beyond cuptop_records_lost, estimated (the shared discard buffer, "
        "never read); only classes with an estimate.",
        "Records lost beyond cuptop_records_lost and the estimate, a lower bound (buffers "
        "handed to CUPTI that never came back); only classes with a bound.",
        "Records that may be lost beyond cuptop_records_lost (the lower bound included), "
        "an upper bound (the capacity of the buffers CUPTI still held when the final flush "
        "gave up); only where the loss's size is unknown."};
    char extra[96];
    for (unsigned b = 0; b < BEYOND_MAX; b++) {
        bool any = false;
        for (size_t i = 0; i < w->n && !any; i++)
            for (unsigned l = 0; l < CUPSTORE_LOSS_MAX && !any; l++)
                any = beyond_of(&w->s[i], b)[l] != 0;
        if (!any)
            continue;
        family(w, name[b], M_GAUGE, help[b]);
        for (size_t i = 0; i < w->n; i++)
            for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++) {
                uint64_t v = beyond_of(&w->s[i], b)[l];
                if (!v)
                    continue;
                snprintf(extra, sizeof extra, "class=\"%s\"", cupstore_loss_name(l));
                sample_u64(w, i, extra, v);
            }
    }
}

/* A counter family by ledger kind from the exp_sess array at `off`. */
static void ledger_by_kind(wctx *w, const char *base, const char *help, size_t off)
{
    char extra[96];
    family(w, base, M_COUNTER, help);
    for (size_t i = 0; i < w->n; i++)
        for (unsigned k = 0; w->s[i].have_ledger && k < MODEL_LEDGER_KINDS; k++) {
            const uint64_t *v = (const uint64_t *)(const void *)((const char *)&w->s[i] + off);
            snprintf(extra, sizeof extra, "kind=\"%s\"", model_ledger_kind_name(k));
            sample_u64(w, i, extra, v[k]);
        }
}

/* The launch ledger (sessions run with --ledger, once ended). */
static void format_ledger(wctx *w)
{
    char extra[96];
    bool any = false;
    for (size_t i = 0; i < w->n; i++)
        any |= w->s[i].have_ledger;
    if (!any)
        return;
    ledger_by_kind(w, "cuptop_ledger_launched",
                   "GPU records the launch ledger expected (kernels launched, copies and sets "
                   "made), by kind.", offsetof(exp_sess, ledger_launched));
    ledger_by_kind(w, "cuptop_ledger_arrived", "GPU records matched to their launch, by kind.",
                   offsetof(exp_sess, ledger_arrived));
    family(w, "cuptop_records_missing", M_COUNTER,
           "GPU records launched that never arrived, by kind and device (\"none\": not known), "
           "whatever the loss class (cuptop report's Launch ledger).");
    for (size_t i = 0; i < w->n; i++)
        for (unsigned d = 0; w->s[i].have_ledger && d <= CUPSTORE_DEVICE_MAX; d++)
            for (unsigned k = 0; k < MODEL_LEDGER_KINDS; k++) {
                uint64_t v = w->s[i].ledger_missing[d][k];
                if (!v && d == CUPSTORE_DEVICE_MAX)
                    continue;   /* "none" only when it holds something */
                if (!v && !(w->s[i].device_mask & (1u << d)))
                    continue;
                if (d == CUPSTORE_DEVICE_MAX)
                    snprintf(extra, sizeof extra, "kind=\"%s\",device=\"none\"",
                             model_ledger_kind_name(k));
                else
                    snprintf(extra, sizeof extra, "kind=\"%s\",device=\"%u\"",
                             model_ledger_kind_name(k), d);
                sample_u64(w, i, extra, v);
            }
}

static void format_counts(wctx *w)
{
    char extra[96];
    family(w, "cuptop_records", M_COUNTER,
           "Activity records parsed, by kind (equal to cuptop sessions --json).");
    for (size_t i = 0; i < w->n; i++)
        for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++) {
            snprintf(extra, sizeof extra, "kind=\"%s\"", cupstore_kind_name(k));
            sample_u64(w, i, extra, w->s[i].records_by_kind[k]);
        }
    family(w, "cuptop_device_records", M_COUNTER, "Activity records parsed, by device index.");
    for (size_t i = 0; i < w->n; i++)
        for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX; d++) {
            if (!(w->s[i].device_mask & (1u << d)))
                continue;
            snprintf(extra, sizeof extra, "device=\"%u\"", d);
            sample_u64(w, i, extra, w->s[i].records_by_device[d]);
        }
    family(w, "cuptop_records_lost", M_COUNTER,
           "Records lost, by loss class (never merged; any increase means a hole in the "
           "trace).");
    for (size_t i = 0; i < w->n; i++)
        for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++) {
            snprintf(extra, sizeof extra, "class=\"%s\"", cupstore_loss_name(l));
            sample_u64(w, i, extra, w->s[i].loss[l]);
        }
    format_beyond(w);
    format_ledger(w);
    family(w, "cuptop_device_records_lost", M_COUNTER,
           "Records lost, by device index (\"none\": not attributable to one) and loss "
           "class, from the exact loss rows (equal to cuptop sessions --json loss_by_device).");
    for (size_t i = 0; i < w->n; i++)
        for (unsigned d = 0; d <= CUPSTORE_DEVICE_MAX; d++) {
            if (!w->s[i].device_listed[d])
                continue;
            for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++) {
                if (d == CUPSTORE_DEVICE_MAX)
                    snprintf(extra, sizeof extra, "device=\"none\",class=\"%s\"",
                             cupstore_loss_name(l));
                else
                    snprintf(extra, sizeof extra, "device=\"%u\",class=\"%s\"", d,
                             cupstore_loss_name(l));
                sample_u64(w, i, extra, w->s[i].loss_by_device[d][l]);
            }
        }
    fam_field(w, "cuptop_records_stored", M_COUNTER, "Records committed to the store.",
              SOFF(records_stored), false);
    fam_field(w, "cuptop_buffers_requested", M_COUNTER, "Buffers CUPTI requested.",
              SOFF(buf_requested), false);
    fam_field(w, "cuptop_buffers_provided", M_COUNTER, "Buffers the agent handed out.",
              SOFF(buf_provided), false);
    fam_field(w, "cuptop_buffers_declined", M_COUNTER,
              "Buffer requests the agent declined (pool exhausted).", SOFF(buf_declined),
              false);
    fam_field(w, "cuptop_buffers_completed", M_COUNTER, "Buffers CUPTI completed.",
              SOFF(buf_completed), false);
    fam_field(w, "cuptop_buffers_consumed", M_COUNTER,
              "Completed buffers the agent's consumer parsed.", SOFF(buf_consumed), false);
    fam_field(w, "cuptop_buffers_foreign", M_COUNTER,
              "Buffers completed that the agent never handed out (another CUPTI client).",
              SOFF(buf_foreign), false);
    fam_field(w, "cuptop_delivered_bytes", M_COUNTER, "Bytes of records CUPTI delivered.",
              SOFF(bytes_delivered), false);
}

/* The launch ledger's pending records (--ledger): the last health row's,
 * live; 0 once the session is judged (pending became arrived or lost).
 * The health row counts per kind only, so device is "all". */
static void format_pending(wctx *w)
{
    char extra[96];
    bool fam = false;
    for (size_t i = 0; i < w->n; i++) {
        const cupstore_health *h = &w->s[i].last;
        uint64_t on = 0;
        for (unsigned k = 0; k < CUPSTORE_LEDGER_KINDS; k++)
            on |= h->ledger_expected[k];
        if (!w->s[i].have_last || !on)
            continue;   /* no ledger in the session's last row */
        if (!fam)
            family(w, "cuptop_ledger_pending", M_GAUGE,
                   "GPU records launched over 2 s ago that have not arrived yet, by kind "
                   "(--ledger, the last second; 0 once the session ended).");
        fam = true;
        for (unsigned k = 0; k < CUPSTORE_LEDGER_KINDS; k++) {
            snprintf(extra, sizeof extra, "kind=\"%s\",device=\"all\"",
                     model_ledger_kind_name(k));
            sample_u64(w, i, extra, w->s[i].have_ledger ? 0 : h->ledger_pending[k]);
        }
    }
}

static void format_last(wctx *w)
{
    char extra[96];
    format_pending(w);
    fam_last32(w, "cuptop_buffers_outstanding", "Buffers handed to CUPTI and not yet back.",
               HOFF(buf_outstanding));
    fam_last32(w, "cuptop_buffer_pool_limit", "The buffer pool's limit (buffers).",
               HOFF(pool_limit));
    fam_last32(w, "cuptop_buffer_pool_high_water", "Most buffers outstanding at once.",
               HOFF(pool_high_water));
    fam_last32(w, "cuptop_queue_depth", "Completed buffers waiting for the consumer.",
               HOFF(queue_depth));
    fam_last32(w, "cuptop_queue_high_water", "Deepest the completed-buffer queue has been.",
               HOFF(queue_high_water));
    fam_last32(w, "cuptop_queue_capacity", "Capacity of the completed-buffer queue.",
               HOFF(queue_capacity));
    fam_latency(w, "cuptop_callback_latency_seconds",
                "CUPTI buffer callback latency in the last second (quantile 1 is the "
                "maximum); _count counts every call.",
                "callback=\"request\"", SOFF(last) + HOFF(req_lat), SOFF(req_lat_count), true);
    fam_latency(w, "cuptop_callback_latency_seconds", NULL, "callback=\"complete\"",
                SOFF(last) + HOFF(cmp_lat), SOFF(cmp_lat_count), false);
    fam_latency(w, "cuptop_commit_latency_seconds",
                "Store commit latency in the last second (quantile 1 is the maximum); "
                "_count counts every commit.",
                NULL, SOFF(last) + HOFF(commit_lat), SOFF(commit_lat_count), true);
    fam_last32(w, "cuptop_epoch", "Current epoch (a new one starts at each change of kinds).",
               HOFF(epoch));
    family(w, "cuptop_kind_enabled", M_GAUGE, "1 when the activity kind is being collected.");
    for (size_t i = 0; i < w->n; i++) {
        if (!w->s[i].have_last)
            continue;
        for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++) {
            snprintf(extra, sizeof extra, "kind=\"%s\"", cupstore_kind_name(k));
            sample_u64(w, i, extra, (w->s[i].last.kinds_enabled >> k) & 1u);
        }
    }
    family(w, "cuptop_control_generation_applied", M_GAUGE,
           "Last control request generation the agent applied.");
    for (size_t i = 0; i < w->n; i++)
        if (w->s[i].have_last)
            sample_u64(w, i, NULL, w->s[i].last.ctl_gen_applied);
    family(w, "cuptop_control_generation_seen", M_GAUGE,
           "Last control request generation the agent read.");
    for (size_t i = 0; i < w->n; i++)
        if (w->s[i].have_last)
            sample_u64(w, i, NULL, w->s[i].last.ctl_gen_seen);
    family(w, "cuptop_stop_duration_seconds", M_GAUGE,
           "The stop protocol's duration, first step's start to last step's end; ended "
           "sessions only.");
    for (size_t i = 0; i < w->n; i++)
        if (w->s[i].have_stop)
            sample_dbl(w, i, NULL, NULL, w->s[i].stop_s);
    family(w, "cuptop_stop_step_duration_seconds", M_GAUGE,
           "Duration of each stop step (disable, flush, drain, commit, close).");
    for (size_t i = 0; i < w->n; i++)
        for (unsigned k = 0; k < CUPSTORE_STEP_MAX; k++) {
            if (!w->s[i].have_stop || !w->s[i].step_seen[k])
                continue;
            snprintf(extra, sizeof extra, "step=\"%s\"", cupstore_step_name(k));
            sample_dbl(w, i, NULL, extra, w->s[i].step_s[k]);
        }
}

static void format_self(wctx *w, const exp_self *x)
{
    char lab[96];
    snprintf(lab, sizeof lab, "version=\"%s\"", x->version ? x->version : "unknown");
    w->n = 0;
    family(w, "cuptop_exporter_build", M_INFO, "The exporter's version.");
    sample_str(w, NULL, lab, NULL, "1");
#define SELF(base, t, help, v)                                                  \
    do {                                                                        \
        char val_[40];                                                          \
        family(w, base, t, help);                                               \
        fmt_double(val_, sizeof val_, (double)(v));                             \
        exp_buf_printf(w->b, "%s %s\n", w->name, val_);                         \
    } while (0)
    SELF("cuptop_exporter_scrapes", M_COUNTER, "Scrapes served (HTTP) or files written.",
         x->scrapes_total);
    SELF("cuptop_exporter_read_errors", M_COUNTER,
         "Stores or sessions that could not be read, summed over scrapes.",
         x->read_errors_total);
    SELF("cuptop_exporter_sessions_unreadable", M_GAUGE,
         "Sessions that could not be read in this scrape (damaged, newer schema, not a "
         "session).", x->unreadable);
    SELF("cuptop_exporter_stores_unreadable", M_GAUGE,
         "Stores that could not be listed in this scrape.", x->stores_unreadable);
    SELF("cuptop_exporter_sessions_exported", M_GAUGE, "Sessions in this exposition.",
         x->exported);
    SELF("cuptop_exporter_sessions_omitted", M_GAUGE,
         "Sessions left out of this exposition by the cap (--max-sessions).", x->omitted);
    SELF("cuptop_exporter_sessions_expired", M_GAUGE,
         "Ended or crashed sessions no longer exported (past --retention).", x->expired);
    SELF("cuptop_exporter_max_sessions", M_GAUGE, "The per-scrape session cap.",
         x->max_sessions);
    SELF("cuptop_exporter_retention_seconds", M_GAUGE,
         "How long ended and crashed sessions are exported.", x->retention_s);
    SELF("cuptop_exporter_read_duration_seconds", M_GAUGE,
         "Time this scrape spent reading the stores.", x->read_seconds);
#undef SELF
}

void exp_format(exp_buf *b, const exp_sess *s, size_t n, const exp_self *self,
                bool openmetrics)
{
    wctx w = {.b = b, .om = openmetrics, .s = s, .n = n, .now_ns = self->now_ns};
    w.lab = calloc(n ? n : 1, sizeof *w.lab);
    if (!w.lab) {
        b->oom = true;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (!(w.lab[i] = malloc(EXP_SESSION_LABELS_MAX))) {
            b->oom = true;
            goto out;
        }
        session_labels(&s[i], w.lab[i], EXP_SESSION_LABELS_MAX);
    }
    format_sessions(&w);
    format_counts(&w);
    format_last(&w);
    format_self(&w, self);
    if (openmetrics)
        exp_buf_puts(b, "# EOF\n");
out:
    for (size_t i = 0; i < n; i++)
        free(w.lab[i]);
    free(w.lab);
}
