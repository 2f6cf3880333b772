/*
 * model.c - what a session means: its state (running, ended, crashed) and
 * its verdict (COMPLETE or INCOMPLETE with reasons), computed from the
 * store only.  DESIGN invariant 5: COMPLETE only if every completed buffer
 * was consumed, every loss counter is zero, the stop protocol ran to the
 * end and the final flush succeeded.
 *
 * Loss counts per (second, class) follow the one rule of model_seconds.c
 * (the larger of the health row's counter and the second's exact loss
 * rows), so the verdict, the epochs and the monitor count alike.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "model.h"

static const char *const state_names[MODEL_STATE_MAX] = {
    "running", "ended", "crashed", "stopped", "not_responding"};

const char *model_state_name(model_state s)
{
    return (unsigned)s < MODEL_STATE_MAX ? state_names[s] : "?";
}

bool model_state_live(model_state s)
{
    return s == MODEL_STATE_RUNNING || s == MODEL_STATE_STOPPED ||
           s == MODEL_STATE_NOT_RESPONDING;
}

const char *model_reason_name(unsigned reason)
{
    static const char *const extra[] = {"unconsumed", "no_final", "protocol", "flush",
                                        "disabled", "store_damaged", "cupti_start",
                                        "not_responding"};
    if (reason < CUPSTORE_LOSS_MAX)
        return cupstore_loss_name(reason);
    if (reason < MODEL_REASON_MAX)
        return extra[reason - CUPSTORE_LOSS_MAX];
    return "?";
}

const char *model_cupti_advice(int code)
{
    switch (code) {
    case 0:
        return "the CUPTI library could not be loaded: install the CUDA toolkit's CUPTI "
               "(extras/CUPTI/lib64) or point CUPTOP_CUPTI_LIBRARY at a libcupti.so that "
               "matches the driver, then run again";
    case 35:   /* CUPTI_ERROR_INSUFFICIENT_PRIVILEGES */
    case 40:   /* CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES */
        return "GPU profiling is restricted to administrators here: run as root, or ask the "
               "administrator to load the driver with NVreg_RestrictProfilingToAdminUsers=0 "
               "(https://developer.nvidia.com/CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)";
    case 39:   /* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED */
        return "another profiler holds CUPTI in this process (Nsight Systems or Compute, "
               "compute-sanitizer, torch.profiler): run the application without it";
    default:
        return "check that the CUPTI library the agent loaded (cuptop report: CUPTI) comes "
               "with the CUDA version of the driver, and that no other profiler (Nsight, "
               "compute-sanitizer, torch.profiler) runs in the process; then run again";
    }
}

const char *model_verdict_name(const model_summary *s)
{
    return s->skipped[0] ? "SKIPPED" : s->complete ? "COMPLETE" : "INCOMPLETE";
}

void model_scope_text(const model_summary *s, char *buf, size_t len)
{
    char at[64];
    if (!len)
        return;
    buf[0] = '\0';
    if (!s->continued_signal)
        return;
    model_format_second(s->continued_ns / 1000000000u, at, sizeof at);
    if (s->process_exit_ns > s->continued_ns)
        snprintf(buf, len,
                 "scope: the application handled signal %d at %s and carried on for %.1f s "
                 "more: the session ended at the signal, that time is not traced (out of "
                 "scope, not lost)",
                 s->continued_signal, at, (double)(s->process_exit_ns - s->continued_ns) / 1e9);
    else
        snprintf(buf, len,
                 "scope: the application handled signal %d at %s and carried on: the "
                 "session ended at the signal, what followed is not traced (out of scope, "
                 "not lost)",
                 s->continued_signal, at);
}

void model_format_second(uint64_t second, char *buf, size_t len)
{
    time_t t = (time_t)second;
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, len, "%" PRIu64, second);
}

/* ---- Accumulation ------------------------------------------------------ */

typedef struct class_acc {
    uint64_t count, first, last, seconds;
} class_acc;

typedef struct sum_ctx {
    model_summary *out;
    class_acc acc[CUPSTORE_LOSS_MAX];
    class_acc est[CUPSTORE_LOSS_MAX];   /* estimated counts of their own */
    uint64_t rows, last_second, first_second;
    bool any_disabled;
    cupstore_health last;
    uint64_t all_completed, all_consumed;  /* whole session, for the verdict */
    uint64_t all_loss[CUPSTORE_LOSS_MAX];  /* ... and its health rows' losses */
} sum_ctx;

static void acc_add(class_acc *a, uint64_t second, uint64_t count, bool new_second)
{
    if (!count)
        return;
    a->count += count;
    if (new_second) {
        if (!a->seconds || second < a->first)
            a->first = second;
        if (second > a->last)
            a->last = second;
        a->seconds++;
    }
}

/* One second of the window (model_seconds_scan: the verdict's loss rule). */
static int second_row(const model_second *m, void *arg)
{
    sum_ctx *c = arg;
    model_summary *s = c->out;
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++) {
        acc_add(&c->acc[l], m->second, m->loss[l], true);
        acc_add(&c->est[l], m->second, m->estimate[l], true);
        for (unsigned d = 0; d <= MODEL_DEVICE_NONE; d++)
            s->loss_by_device[d][l] += m->loss_by_device[d][l];
    }
    if (!m->have_health)
        return 0;
    const cupstore_health *h = &m->h;
    if (!c->rows)
        c->first_second = h->second;
    c->rows++;
    c->last_second = h->second;
    c->last = *h;
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
        s->records_by_kind[k] += h->records_by_kind[k];
    for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX; d++) {
        s->records_by_device[d] += h->records_by_device[d];
        if (h->records_by_device[d])
            s->device_mask |= 1u << d;
    }
    s->buf_completed += h->buf_completed;
    s->buf_consumed += h->buf_consumed;
    if (h->flags & CUPSTORE_HF_COUNT_ONLY)
        s->count_only = true;
    if (h->flags & CUPSTORE_HF_DISABLED)
        c->any_disabled = true;
    return 0;
}

static int health_all(const cupstore_health *h, void *arg)
{
    sum_ctx *c = arg;
    c->all_completed += h->buf_completed;
    c->all_consumed += h->buf_consumed;
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
        c->all_loss[l] += h->loss[l];
    return 0;
}

/* ---- Reasons ------------------------------------------------------------- */

static int reason_add(model_summary *s, unsigned reason, uint64_t count, uint64_t first,
                      uint64_t last, uint64_t seconds, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

static int reason_add(model_summary *s, unsigned reason, uint64_t count, uint64_t first,
                      uint64_t last, uint64_t seconds, const char *fmt, ...)
{
    model_reason *r = realloc(s->reasons, (s->nreasons + 1) * sizeof *r);
    va_list ap;
    if (!r)
        return ENOMEM;
    s->reasons = r;
    r += s->nreasons++;
    memset(r, 0, sizeof *r);
    r->reason = reason;
    r->count = count;
    r->first_second = first;
    r->last_second = last;
    r->seconds_affected = seconds;
    va_start(ap, fmt);
    vsnprintf(r->text, sizeof r->text, fmt, ap);
    va_end(ap);
    return 0;
}

static void window_text(char *buf, size_t len, uint64_t first, uint64_t last, uint64_t seconds)
{
    char a[32], b[32];
    model_format_second(first, a, sizeof a);
    model_format_second(last, b, sizeof b);
    if (first == last)
        snprintf(buf, len, "in 1 s at %s", a);
    else
        snprintf(buf, len, "in %" PRIu64 " s between %s and %s", seconds, a, b);
}

struct step_ctx {
    char text[200];
    size_t len;
    unsigned failed;
    uint32_t seen;
    uint64_t unreturned;    /* buffers CUPTI never gave back (final)      */
};

static int step_row(const cupstore_step *st, void *arg)
{
    struct step_ctx *c = arg;
    if (st->step < 32)
        c->seen |= 1u << st->step;
    /* Buffers still queued after disable or flush are expected (the drain
     * step consumes them); from the drain on, the queue must be empty. */
    bool must_be_empty = st->step >= CUPSTORE_STEP_DRAIN;
    if (st->rc == 0 && !st->timed_out && (!must_be_empty || st->queue_remaining == 0))
        return 0;
    c->failed++;
    if (c->len < sizeof c->text) {
        char held[64] = "";
        /* the queue's count says nothing of what CUPTI kept: say that too */
        if (st->step == CUPSTORE_STEP_FLUSH && c->unreturned)
            snprintf(held, sizeof held, ", %" PRIu64 " still held by CUPTI", c->unreturned);
        int n = snprintf(c->text + c->len, sizeof c->text - c->len, "%s%s %s (rc %d, %" PRIu64
                         " buffers left%s)", c->len ? "; " : "", cupstore_step_name(st->step),
                         st->timed_out ? "timed out" : st->rc ? "failed" : "left buffers",
                         (int)st->rc, st->queue_remaining, held);
        c->len += n > 0 ? (size_t)n : 0;
    }
    return 0;
}

struct note_ctx {
    cupstore_note last;
    bool have;
};

static int note_row(const cupstore_note *n, void *arg)
{
    struct note_ctx *c = arg;
    if (n->level >= 1) {
        c->last = *n;
        c->have = true;
    }
    return 0;
}

const char *model_note_level_name(uint32_t level)
{
    static const char *const names[] = {"info", "warning", "error"};
    return level < 3 ? names[level] : "unknown";
}

/* Keep the first MODEL_NOTES_MAX notes; count them all. */
static int note_keep(const cupstore_note *n, void *arg)
{
    model_summary *s = arg;
    s->notes_total++;
    if (s->nnotes >= MODEL_NOTES_MAX)
        return 0;
    if (!s->notes && !(s->notes = calloc(MODEL_NOTES_MAX, sizeof *s->notes)))
        return ENOMEM;
    model_note *m = &s->notes[s->nnotes++];
    size_t len = strnlen(n->text, sizeof n->text);
    m->time_ns = n->time_ns;
    m->level = n->level;
    memcpy(m->text, n->text, len);
    m->text[len] = '\0';
    return 0;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void meta_copy(cupstore_txn *txn, const char *key, char *dst, size_t len)
{
    char *v = NULL;
    if (cupstore_meta_get(txn, key, &v) == 0 && v)
        snprintf(dst, len, "%s", v);
    free(v);
}

static uint64_t meta_u64(cupstore_txn *txn, const char *key)
{
    char *v = NULL;
    uint64_t x = 0;
    if (cupstore_meta_get(txn, key, &v) == 0 && v)
        x = strtoull(v, NULL, 10);
    free(v);
    return x;
}

/* The process's identity (model_proc_find); have_identity stays false
 * for stores written before the agent recorded it ("unknown": the agent
 * could not read it). */
static void identity_meta(cupstore_txn *txn, model_summary *out)
{
    char *v = NULL;
    if (cupstore_meta_get(txn, "boot_id", &v) != 0 || !v) {
        free(v);
        return;
    }
    out->have_identity = true;
    if (strcmp(v, "unknown") != 0)
        snprintf(out->boot_id, sizeof out->boot_id, "%s", v);
    free(v);
    out->start_ticks = meta_u64(txn, "start_time");
    out->pid_ns = meta_u64(txn, "pid_ns");
}

/* The cause of a failure on an open session: "session ID: words". */
static int fail(char **cause, int rc, const char *id)
{
    if (cause && asprintf(cause, "session %s: %s", id, model_strerror(rc)) < 0)
        *cause = NULL;
    return rc;
}

/* The cause of a failure to open session id in dir. */
static int fail_open(char **cause, int rc, const char *dir, const char *id)
{
    if (cause && asprintf(cause, "session %s in %s: %s", id, dir, model_strerror(rc)) < 0)
        *cause = NULL;
    return rc;
}

/* The stop protocol's steps and the final flush. */
static int judge_stop(cupstore_txn *txn, model_summary *s, const cupstore_final *f,
                      uint64_t end_s)
{
    int rc;
    struct step_ctx st = {.len = 0, .unreturned = f->buffers_outstanding};
    if ((rc = cupstore_step_scan(txn, step_row, &st)) != 0)
        return rc;
    uint32_t all = (1u << CUPSTORE_STEP_MAX) - 1;
    if (f->aside) {
        /* the steps went in the refused transaction with the final status */
        if ((rc = reason_add(s, MODEL_REASON_PROTOCOL, 1, end_s, end_s, 0,
                             "stop protocol: the store refused the final status (%" PRIu64
                             " write transactions refused in the session); it was read from "
                             "the session's final.aside (exit path %s)", f->store_refused,
                             cupstore_exit_name(f->exit_path))) != 0)
            return rc;
    } else if (st.failed) {
        if ((rc = reason_add(s, MODEL_REASON_PROTOCOL, st.failed, end_s, end_s, 0,
                             "stop protocol: %s", st.text)) != 0)
            return rc;
    } else if (!f->protocol_complete || (st.seen & all) != all) {
        char missing[128] = "";
        size_t ml = 0;
        for (unsigned i = 0; i < CUPSTORE_STEP_MAX; i++)
            if (!(st.seen & (1u << i)) && ml < sizeof missing)
                ml += (size_t)snprintf(missing + ml, sizeof missing - ml, "%s%s",
                                       ml ? ", " : "", cupstore_step_name(i));
        if ((rc = reason_add(s, MODEL_REASON_PROTOCOL, 1, end_s, end_s, 0,
                             "stop protocol did not run to the end (exit path %s%s%s)",
                             cupstore_exit_name(f->exit_path), ml ? "; steps missing: " : "",
                             missing)) != 0)
            return rc;
    }
    if (!f->flush_ok &&
        (rc = reason_add(s, MODEL_REASON_FLUSH, 1, end_s, end_s, 0,
                         "flush: the final forced flush did not succeed%s", f->buffers_outstanding
                             ? ": CUPTI still held buffers, their records are tail loss"
                             : "")) != 0)
        return rc;
    return 0;
}

/* The verdict part that needs the final status, steps and notes. */
static int judge_end(cupstore_txn *txn, sum_ctx *c, bool covers_end, bool have_final,
                     const cupstore_final *f)
{
    model_summary *s = c->out;
    int rc;

    if (!covers_end)
        return 0;
    if (s->state == MODEL_STATE_CRASHED && !s->heartbeat_ns) {
        uint64_t sec = s->start_ns / 1000000000u;
        return reason_add(s, MODEL_REASON_NO_FINAL, 1, sec, sec, 0,
                          "crashed: no final status and no heartbeat (the process died "
                          "before its first health row); the stop protocol never ran, so "
                          "the tail of the trace is missing");
    }
    if (s->state == MODEL_STATE_CRASHED) {
        char hb[32];
        model_format_second(s->heartbeat_ns / 1000000000u, hb, sizeof hb);
        uint64_t sec = s->heartbeat_ns / 1000000000u;
        return reason_add(s, MODEL_REASON_NO_FINAL, 1, sec, sec, 0,
                          "crashed: no final status, last heartbeat %s; the stop protocol "
                          "never ran, so the tail of the trace is missing", hb);
    }
    if (s->state == MODEL_STATE_STOPPED || s->state == MODEL_STATE_NOT_RESPONDING) {
        char why[200];
        uint64_t sec = s->heartbeat_ns / 1000000000u;
        model_liveness_text(s, why, sizeof why);
        return reason_add(s, MODEL_REASON_NOT_RESPONDING, 1, sec, sec, 0, "%s", why);
    }
    if (!have_final)
        return 0; /* running: judged on what has happened so far */

    uint64_t end_s = f->end_ns / 1000000000u;
    /* Without the agent's totals, sum the whole session's rows (only here,
     * so a summary of a short window costs only the window's rows). */
    if (!f->buffers_completed &&
        (rc = cupstore_health_scan(txn, 0, UINT64_MAX, health_all, c)) != 0)
        return rc;
    uint64_t completed = f->buffers_completed ? f->buffers_completed : c->all_completed;
    uint64_t consumed = f->buffers_completed ? f->buffers_consumed : c->all_consumed;
    if (completed > consumed &&
        (rc = reason_add(s, MODEL_REASON_UNCONSUMED, completed - consumed, end_s, end_s, 0,
                         "unconsumed: %" PRIu64 " of %" PRIu64 " completed buffers were "
                         "never consumed", completed - consumed, completed)) != 0)
        return rc;

    if (s->cupti_failed && f->exit_path == CUPSTORE_EXIT_DETACH)
        return 0;   /* nothing started, nothing to stop or flush: said first */
    /* --only-if: stepped aside before CUPTI, nothing to stop or flush */
    if (!s->skipped[0] && (rc = judge_stop(txn, s, f, end_s)) != 0)
        return rc;
    if ((f->exit_path == CUPSTORE_EXIT_DETACH || c->any_disabled) && !s->cupti_failed) {
        struct note_ctx nc = {.have = false};
        char why[256];
        if ((rc = cupstore_note_scan(txn, note_row, &nc)) != 0)
            return rc;
        if (nc.have)
            model_escape(why, sizeof why, nc.last.text, strnlen(nc.last.text, sizeof nc.last.text));
        else
            snprintf(why, sizeof why, "no reason recorded");
        if ((rc = reason_add(s, MODEL_REASON_DISABLED, 1, end_s, end_s, 0,
                             "disabled: the agent stepped aside: %s", why)) != 0)
            return rc;
    }
    return 0;
}

bool model_device_listed(const model_summary *s, unsigned d)
{
    if (d < CUPSTORE_DEVICE_MAX && (s->device_mask & (1u << d)))
        return true;
    for (unsigned l = 0; d <= MODEL_DEVICE_NONE && l < CUPSTORE_LOSS_MAX; l++)
        if (s->loss_by_device[d][l])
            return true;
    return false;
}

/* The job and rank keys (doc/store-format.md, "Jobs"). */
static int job_meta(cupstore_txn *txn, model_summary *out)
{
    char *v = NULL;
    int rc = cupstore_meta_get(txn, "job", &v);
    if (rc && rc != CUPSTORE_ENOTFOUND)
        return rc;
    if (rc == 0 && v && cupstore_job_valid(v)) {
        snprintf(out->job, sizeof out->job, "%s", v);
        free(v);
        v = NULL;
        if (cupstore_meta_get(txn, "job_source", &v) == 0 && v && !strcmp(v, "session"))
            out->job_own = true;
    } else {
        snprintf(out->job, sizeof out->job, "%s", out->id);   /* a job of its own */
        out->job_own = true;
    }
    free(v);
    v = NULL;
    out->rank = -1;
    if (cupstore_meta_get(txn, "rank", &v) == 0 && v && *v >= '0' && *v <= '9' &&
        strlen(v) <= 10) {
        char *end;
        unsigned long long r = strtoull(v, &end, 10);
        if (!*end && r <= 0x7fffffffu) {
            out->rank = (int)r;
            meta_copy(txn, "rank_source", out->rank_source, sizeof out->rank_source);
            uint64_t w = meta_u64(txn, "world_size");
            out->world_size = w <= 0x7fffffffu ? (int)w : 0;
        }
    }
    free(v);
    return 0;
}

/* The capture range from the agent's configuration text (capture_range=). */
static void capture_meta(cupstore_txn *txn, model_summary *out)
{
    char *v = NULL;
    if (cupstore_meta_get(txn, "config", &v) == 0 && v) {
        for (const char *p = v; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
            if (!strncmp(p, "capture_range=", 14)) {
                size_t n = strcspn(p + 14, "\n");
                if (n && strncmp(p + 14, "none", n) != 0)
                    snprintf(out->capture, sizeof out->capture, "%.*s", (int)n, p + 14);
                break;
            }
    }
    free(v);
}

/* A window export's keys (export_store.c): export_of, export_window
 * "FROM TO" (ns), export_session_span "START END" (ns) and export_state,
 * the session's state when it was exported.  The window holds the
 * session's end when the session had ended or crashed and the window
 * reaches its end (an export without export_state: when a final status
 * was copied and the window reaches its end). */
static void window_meta(cupstore_txn *txn, model_summary *out)
{
    char *w = NULL, *span = NULL, *state = NULL;
    unsigned long long wfrom, wto, sstart, send = 0;
    if (cupstore_meta_get(txn, "export_window", &w) == 0 && w &&
        sscanf(w, "%llu %llu", &wfrom, &wto) == 2) {
        out->window = true;
        meta_copy(txn, "export_of", out->window_of, sizeof out->window_of);
        if (cupstore_meta_get(txn, "export_session_span", &span) == 0 && span &&
            sscanf(span, "%llu %llu", &sstart, &send) != 2)
            send = 0;
        bool reaches = wto == UINT64_MAX || (send && wto + 1 >= send);
        if (cupstore_meta_get(txn, "export_state", &state) == 0 && state)
            out->window_end = reaches && strcmp(state, "running") != 0 &&
                              strcmp(state, "stopped") != 0 &&
                              strcmp(state, "not_responding") != 0;   /* live ones */
        else
            out->window_end = reaches && cupstore_final_get(txn, &(cupstore_final){0}) == 0;
    }
    free(w);
    free(span);
    free(state);
}

int model_summarize(cupstore_env *env, uint64_t from_s, uint64_t to_s, model_summary *out,
                    char **cause)
{
    cupstore_txn *txn = NULL;
    cupstore_final f;
    sum_ctx *c;
    int rc;

    if (cause)
        *cause = NULL;
    if (!out)
        return CUPSTORE_EINVAL;
    memset(out, 0, sizeof *out);
    if (!env)
        return CUPSTORE_EINVAL;
    if (!(c = calloc(1, sizeof *c)))
        return ENOMEM;
    c->out = out;
    snprintf(out->id, sizeof out->id, "%s", cupstore_env_id(env));
    if ((rc = cupstore_txn_begin(env, false, &txn)) != 0) {
        free(c);
        return fail(cause, rc, out->id);
    }
    out->pid = (int)meta_u64(txn, "pid");
    meta_copy(txn, "host", out->host, sizeof out->host);
    identity_meta(txn, out);
    meta_copy(txn, "cmdline", out->cmdline, sizeof out->cmdline);
    meta_copy(txn, "skipped", out->skipped, sizeof out->skipped);
    {
        /* "SIG NS": the agent stopped at SIG, the process carried on */
        char cont[64] = "";
        unsigned long long at = 0;
        int sig = 0;
        meta_copy(txn, "continued_after_signal", cont, sizeof cont);
        if (cont[0] && sscanf(cont, "%d %llu", &sig, &at) == 2 && sig > 0 && sig < 65) {
            out->continued_signal = sig;
            out->continued_ns = at;
            out->process_exit_ns = meta_u64(txn, "process_exit_ns");
        }
    }
    out->start_ns = meta_u64(txn, "start_ns");
    if ((rc = job_meta(txn, out)) != 0)
        goto out;
    window_meta(txn, out);
    capture_meta(txn, out);
    out->attached_ns = meta_u64(txn, "attached_ns");   /* cuptop attach */
    meta_copy(txn, "attached_uid", out->attached_uid, sizeof out->attached_uid);
    if ((out->prov = malloc(sizeof *out->prov)) != NULL && model_prov_read(txn, out->prov)) {
        free(out->prov);
        out->prov = NULL;
    }
    {
        char *e = NULL;
        if (cupstore_meta_get(txn, "cupti_error", &e) == 0 && e) {
            out->cupti_failed = true;
            snprintf(out->cupti_error, sizeof out->cupti_error, "%s", e);
            out->cupti_error_code = (int)meta_u64(txn, "cupti_error_code");
            out->cupti_advice = model_cupti_advice(out->cupti_error_code);
        }
        free(e);
    }
    {
        char *sink = NULL;
        if (cupstore_meta_get(txn, "sink", &sink) == 0 && sink && strcmp(sink, "null") == 0)
            out->count_only = true;
        free(sink);
    }

    if ((rc = model_seconds_scan(txn, from_s, to_s, second_row, c)) != 0)
        goto out;

    cupstore_health last;
    bool have_last = false;
    rc = cupstore_health_last(txn, &last);
    if (rc == 0)
        have_last = true;
    else if (rc != CUPSTORE_ENOTFOUND)
        goto out;
    if (!out->start_ns && c->rows)
        out->start_ns = c->first_second * 1000000000u;
    out->heartbeat_ns = have_last ? last.heartbeat_ns : out->start_ns;
    if (have_last && !out->heartbeat_ns)
        out->heartbeat_ns = last.second * 1000000000u;
    if (have_last && (last.flags & CUPSTORE_HF_COUNT_ONLY))
        out->count_only = true;
    if (c->rows) {
        out->kinds_enabled = c->last.kinds_enabled;
        out->epoch = c->last.epoch;
    } else if (have_last) {
        out->kinds_enabled = last.kinds_enabled;
        out->epoch = last.epoch;
    }
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
        out->records_total += out->records_by_kind[k];

    bool have_final = false;
    rc = cupstore_final_get(txn, &f);   /* or the one written aside */
    if (rc == 0)
        have_final = true;
    else if (rc != CUPSTORE_ENOTFOUND)
        goto out;
    if (out->window && !out->window_end) {
        /* a window that does not hold the session's end: nothing to judge
         * beyond its seconds (its final status, if copied, is clipped) */
        out->state = MODEL_STATE_ENDED;
        out->end_ns = have_final ? f.end_ns : out->heartbeat_ns;
    } else if (out->window && !have_final) {
        out->state = MODEL_STATE_CRASHED;   /* the session had crashed */
        out->end_ns = out->heartbeat_ns;
    } else if (have_final) {
        out->state = MODEL_STATE_ENDED;
        out->end_ns = f.end_ns;
        out->final_aside = f.aside != 0;
        /* Tail loss the final status knows of but no row recorded. */
        uint64_t end_s = f.end_ns / 1000000000u;
        if (end_s >= from_s && end_s <= to_s && f.tail_lost > c->acc[CUPSTORE_LOSS_TAIL].count)
            acc_add(&c->acc[CUPSTORE_LOSS_TAIL], end_s,
                    f.tail_lost - c->acc[CUPSTORE_LOSS_TAIL].count,
                    c->acc[CUPSTORE_LOSS_TAIL].seconds == 0);
        if (end_s >= from_s && end_s <= to_s) {
            /* The store refused the final status (and the rows before it):
             * the losses the agent counted beyond the rows' sum, credited
             * to the end, on device "none" (no row says which). */
            bool any = false;
            for (unsigned l = 0; f.aside && l < CUPSTORE_LOSS_MAX; l++)
                any |= f.loss_total[l] != 0;
            if (any && (rc = cupstore_health_scan(txn, 0, UINT64_MAX, health_all, c)) != 0)
                goto out;
            for (unsigned l = 0; any && l < CUPSTORE_LOSS_MAX; l++) {
                uint64_t rows = c->all_loss[l];
                if (l == CUPSTORE_LOSS_TAIL && f.tail_lost > rows)
                    rows = f.tail_lost;   /* added just above */
                if (f.loss_total[l] > rows) {
                    acc_add(&c->acc[l], end_s, f.loss_total[l] - rows, c->acc[l].seconds == 0);
                    out->loss_by_device[MODEL_DEVICE_NONE][l] += f.loss_total[l] - rows;
                }
            }
            c->all_completed = c->all_consumed = 0;   /* judge_end sums them afresh */
            memset(c->all_loss, 0, sizeof c->all_loss);
            out->loss_bound[CUPSTORE_LOSS_TAIL] = f.tail_bound;
            out->loss_bound[CUPSTORE_LOSS_CONFLICT] = f.conflict_bound;
            out->buffers_unreturned = f.buffers_outstanding;
        }
    } else {
        uint64_t now = now_ns();
        out->end_ns = out->heartbeat_ns;
        bool stale = out->heartbeat_ns + (uint64_t)MODEL_STALE_SECONDS * 1000000000u < now;
        model_proc p;
        model_proc_find(out, &p);
        out->state = model_liveness(!stale, &p);
        out->proc_state = p.presence == MODEL_PROC_HERE ? p.state : '\0';
        out->pid_here = p.presence == MODEL_PROC_HERE ? p.pid_here : 0;
        out->not_visible = p.presence == MODEL_PROC_HIDDEN;
    }

    /* Records per second: an ended (or dead) session's mean over its
     * rows, since its last row is a partial second; a running session's
     * last row, which is a whole second (the agent writes it after). */
    if (c->rows && out->state == MODEL_STATE_RUNNING) {
        for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
            out->records_per_s += (double)c->last.records_by_kind[k];
    } else if (c->rows) {
        out->records_per_s = (double)out->records_total / (double)c->rows;
        out->records_per_s_mean = true;
    }

    /* Loss classes, in class order. */
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++) {
        class_acc *a = &c->acc[l], *e = &c->est[l];
        char win[128], more[320] = "";
        out->loss[l] = a->count;
        out->loss_total += a->count;
        out->loss_estimate[l] = e->count;
        uint64_t bound = out->loss_bound[l];
        if (!a->count && !e->count && !bound)
            continue;
        /* an estimate says so, before the window (the text may be cut) */
        if (e->count)
            snprintf(more, sizeof more, "%sabout %" PRIu64 "%s (estimated: the shared "
                     "discard buffer is never read)", a->count ? ", and " : "", e->count,
                     a->count ? " more" : " records lost");
        /* so does a bound: "at least", and why it is only one */
        if (bound) {
            size_t ml = strlen(more);
            snprintf(more + ml, sizeof more - ml, "%sat least %" PRIu64 "%s (a lower bound: "
                     "%" PRIu64 " buffers %s)", a->count || e->count ? ", and " : "", bound,
                     a->count || e->count ? " more" : " records lost", out->buffers_unreturned,
                     l == CUPSTORE_LOSS_TAIL ? "CUPTI still held when the final flush gave up"
                                             : "handed to CUPTI never came back");
        }
        if (!a->count && !e->count) {
            uint64_t sec = out->end_ns / 1000000000u;
            window_text(win, sizeof win, sec, sec, 1);
            rc = reason_add(out, l, 0, sec, sec, 1, "%s: %s %s (%s)", cupstore_loss_name(l),
                            more, win, cupstore_loss_describe(l));
        } else if (!a->count) {
            window_text(win, sizeof win, e->first, e->last, e->seconds);
            rc = reason_add(out, l, 0, e->first, e->last, e->seconds, "%s: %s %s (%s)",
                            cupstore_loss_name(l), more, win, cupstore_loss_describe(l));
        } else {
            window_text(win, sizeof win, a->first, a->last, a->seconds);
            rc = reason_add(out, l, a->count, a->first, a->last, a->seconds,
                            "%s: %" PRIu64 " records lost%s %s (%s)", cupstore_loss_name(l),
                            a->count, more, win, cupstore_loss_describe(l));
        }
        if (rc)
            goto out;
    }
    /* Final-status reasons apply when the window reaches the session end. */
    uint64_t end_s = out->end_ns / 1000000000u;
    bool covers_end = to_s >= end_s || (c->rows && c->last_second >= end_s) || to_s == UINT64_MAX;
    if (out->window && !out->window_end)
        covers_end = false;
    rc = 0;
    if (model_state_live(out->state) && c->any_disabled)
        rc = reason_add(out, MODEL_REASON_DISABLED, 1, c->last_second, c->last_second, 0,
                        "disabled: the agent stepped aside (see its notes)");
    if (rc == 0)
        rc = judge_end(txn, c, covers_end, have_final, &f);
    if (rc || (rc = cupstore_note_scan(txn, note_keep, out)) != 0)
        goto out;
    if (out->cupti_failed) {
        /* said first: nothing else matters much when nothing was traced */
        char why[200];
        uint64_t sec = out->start_ns / 1000000000u;
        model_escape(why, sizeof why, out->cupti_error, strlen(out->cupti_error));
        if ((rc = reason_add(out, MODEL_REASON_CUPTI_START, 1, sec, sec, 0,
                             "CUPTI could not start: %s; nothing was traced", why)) != 0)
            goto out;
        model_reason first = out->reasons[out->nreasons - 1];
        memmove(out->reasons + 1, out->reasons, (out->nreasons - 1) * sizeof *out->reasons);
        out->reasons[0] = first;
    }
    out->complete = out->nreasons == 0;
    out->seconds = c->rows;
out:
    cupstore_txn_abort(txn);
    free(c);
    if (rc) {
        if (cause && !*cause)
            fail(cause, rc, out->id);
        model_summary_free(out);
    }
    return rc;
}

void model_summary_free(model_summary *s)
{
    if (!s)
        return;
    free(s->reasons);
    s->reasons = NULL;
    s->nreasons = 0;
    free(s->notes);
    s->notes = NULL;
    s->nnotes = 0;
    s->notes_total = 0;
    model_prov_free(s->prov);
    free(s->prov);
    s->prov = NULL;
}

/* One session's reads under the store's read-fault guard (DESIGN
 * invariant 11): what model_summarize_id and model_verify_id do. */
struct by_id {
    const char *dir, *id;
    uint64_t from_s, to_s;
    model_summary *out;
    char **cause;
    bool verify, *verified;
    uint64_t *records_read;
};

static int by_id_read(void *arg)
{
    struct by_id *a = arg;
    cupstore_env *env;
    int rc = cupstore_session_open(&env, a->dir, a->id, CUPSTORE_RDONLY);
    if (rc)
        return fail_open(a->cause, rc, a->dir, a->id);
    rc = model_summarize(env, a->from_s, a->to_s, a->out, a->cause);
    if (rc == 0 && a->verify &&
        (rc = model_verify(env, a->out, a->verified, a->records_read)) != 0) {
        if (a->cause && asprintf(a->cause, "session %s: reading the records back: %s",
                                 a->out->id, model_strerror(rc)) < 0)
            *a->cause = NULL;
        model_summary_free(a->out);
    }
    cupstore_env_close(env);
    return rc;
}

/* Run by_id_read guarded; after a fault, what it had allocated is left
 * (the guard cannot know it) and the session is named as damaged. */
static int by_id_guarded(struct by_id *a)
{
    int rc = cupstore_guarded(by_id_read, a);
    if (rc == CUPSTORE_EFAULT) {
        memset(a->out, 0, sizeof *a->out);
        if (a->cause) {
            *a->cause = NULL;
            if (asprintf(a->cause, "session %s in %s: %s", a->id, a->dir,
                         model_fault_text()) < 0)
                *a->cause = NULL;
        }
    }
    return rc;
}

int model_summarize_id(const char *dir, const char *id, uint64_t from_s, uint64_t to_s,
                       model_summary *out, char **cause)
{
    if (cause)
        *cause = NULL;
    if (!out)
        return CUPSTORE_EINVAL;
    memset(out, 0, sizeof *out);
    struct by_id a = {.dir = dir, .id = id, .from_s = from_s, .to_s = to_s, .out = out,
                      .cause = cause};
    return by_id_guarded(&a);
}

/* ---- One epoch, by the per-epoch rule ------------------------------------- */

static bool epoch_collects(const model_epoch_stat *e)
{
    return e->kinds && !(e->known && (e->row.flags & CUPSTORE_EPOCH_OUT_OF_SCOPE));
}

/* Reasons that judge the end of the session (its tail). */
static bool reason_at_end(unsigned r)
{
    return r == MODEL_REASON_UNCONSUMED || r == MODEL_REASON_NO_FINAL ||
           r == MODEL_REASON_PROTOCOL || r == MODEL_REASON_FLUSH;
}

int model_summarize_epoch(cupstore_env *env, uint32_t epoch, model_summary *out,
                          model_epoch_stat *stat, char **cause)
{
    model_facts f;
    if (cause)
        *cause = NULL;
    memset(out, 0, sizeof *out);
    int rc = model_facts_read(env, 0, UINT64_MAX, &f, cause);
    if (rc)
        return rc;
    const model_epoch_stat *e = NULL;
    bool last = true;
    for (size_t i = 0; i < f.nepochs; i++) {
        if (f.epochs[i].id == epoch && f.epochs[i].known)
            e = &f.epochs[i];
    }
    for (size_t i = 0; e && i < f.nepochs; i++)
        if (f.epochs[i].known && f.epochs[i].start_ns > e->start_ns)
            last = false;
    if (!e) {
        model_facts_free(&f);
        if (cause && asprintf(cause, "session %s has no epoch %" PRIu32, cupstore_env_id(env),
                              epoch) < 0)
            *cause = NULL;
        return CUPSTORE_ENOTFOUND;
    }
    model_epoch_stat st = *e;
    model_facts_free(&f);
    uint64_t from_s = st.start_ns / 1000000000u;
    uint64_t to_s = last || !st.end_ns ? UINT64_MAX : (st.end_ns - 1) / 1000000000u;
    if ((rc = model_summarize(env, from_s, to_s, out, cause)) != 0)
        return rc;
    /* the reasons: the epoch's own losses, then what still applies */
    model_reason *old = out->reasons;
    size_t nold = out->nreasons;
    bool collects = epoch_collects(&st);
    out->reasons = NULL;
    out->nreasons = 0;
    out->loss_total = 0;
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++) {
        out->loss[l] = st.loss[l];
        out->loss_total += st.loss[l];
        if (!collects)
            out->loss_estimate[l] = 0;
        if (st.loss[l] &&
            (rc = reason_add(out, l, st.loss[l], from_s, to_s == UINT64_MAX ? out->end_ns /
                             1000000000u : to_s, 0, "%s: %" PRIu64 " records lost in epoch %"
                             PRIu32 " (%s)", cupstore_loss_name(l), st.loss[l], epoch,
                             cupstore_loss_describe(l))) != 0)
            break;
    }
    for (size_t i = 0; !rc && i < nold; i++) {
        unsigned r = old[i].reason;
        if (r < CUPSTORE_LOSS_MAX || (reason_at_end(r) && !(last && collects)))
            continue;
        model_reason *n = realloc(out->reasons, (out->nreasons + 1) * sizeof *n);
        if (!n) {
            rc = ENOMEM;
            break;
        }
        out->reasons = n;
        n[out->nreasons++] = old[i];
    }
    free(old);
    out->records_total = st.records;
    out->seconds = (uint64_t)(st.seconds + 0.5);
    out->complete = out->nreasons == 0;
    if (stat)
        *stat = st;
    if (rc) {
        model_summary_free(out);
        if (cause && !*cause)
            fail(cause, rc, cupstore_env_id(env));
    }
    return rc;
}

int model_session_baseline(const model_summary *s, const model_facts *f)
{
    int base = model_epoch_baseline(f->epochs, f->nepochs);
    if (base < 0)
        return base;
    bool end_judged = false;   /* the tail is missing or unjudged */
    for (size_t i = 0; i < s->nreasons; i++)
        end_judged |= reason_at_end(s->reasons[i].reason);
    if (!end_judged)
        return base;
    /* the epoch open at the end shares the session's end: never a baseline */
    const model_epoch_stat *b = &f->epochs[base];
    for (size_t i = 0; i < f->nepochs; i++)
        if (f->epochs[i].known && f->epochs[i].start_ns > b->start_ns)
            return base;
    model_epoch_stat *copy = malloc(f->nepochs * sizeof *copy);
    if (!copy)
        return -1;
    memcpy(copy, f->epochs, f->nepochs * sizeof *copy);
    copy[base].losses = 1;   /* judged lossy: take the next best */
    int next = model_epoch_baseline(copy, f->nepochs);
    free(copy);
    return next;
}

/* ---- Verify: read the stored records back ---------------------------------- */

static int count_record(const cupstore_record *r, void *arg)
{
    (void)r;
    ++*(uint64_t *)arg;
    return 0;
}

static int sum_stored(const cupstore_health *h, void *arg)
{
    *(uint64_t *)arg += h->records_stored;
    return 0;
}

static int count_range(const cupstore_range *r, void *arg)
{
    (void)r;
    ++*(uint64_t *)arg;
    return 0;
}

/* One table read back in a read txn of its own, under a nested guard so
 * that a page that faults (or trips LMDB's assertions) is a damaged
 * table, not an unreadable session. */
struct readback {
    cupstore_env *env;
    bool ranges;                /* the NVTX range rows, else the records */
    uint64_t n;                 /* rows decoded                          */
    uint64_t rows;              /* ranges: rows LMDB counts              */
};

static int readback_run(void *arg)
{
    struct readback *b = arg;
    cupstore_txn *txn;
    int rc = cupstore_txn_begin(b->env, false, &txn);
    if (rc)
        return rc;
    if (b->ranges) {
        rc = cupstore_range_count(txn, &b->rows);
        if (rc == 0)
            rc = cupstore_range_scan(txn, count_range, &b->n);
    } else {
        rc = cupstore_record_scan(txn, 0, UINT64_MAX, count_record, &b->n);
    }
    cupstore_txn_abort(txn);
    return rc;
}

int model_verify(cupstore_env *env, model_summary *s, bool *verified, uint64_t *records_read)
{
    cupstore_txn *txn;
    cupstore_final f;
    uint64_t want = 0;
    char *exported = NULL;
    *verified = false;
    *records_read = 0;
    if (model_state_live(s->state) || s->count_only)
        return 0;
    int rc = cupstore_txn_begin(env, false, &txn);
    if (rc)
        return rc;
    /* what the agent stored: its final count, else (crashed) the health
     * rows' sum, a lower bound */
    if (cupstore_final_get(txn, &f) == 0)
        want = f.records_stored;
    else
        rc = cupstore_health_scan(txn, 0, UINT64_MAX, sum_stored, &want);
    (void)cupstore_meta_get(txn, "export_of", &exported);
    cupstore_txn_abort(txn);
    bool is_export = exported != NULL;
    free(exported);
    if (rc)
        return rc;
    struct readback rec = {.env = env}, rng = {.env = env, .ranges = true};
    int scan = cupstore_guarded(readback_run, &rec);
    int rscan = cupstore_guarded(readback_run, &rng);
    uint64_t n = rec.n;
    *records_read = n;
    *verified = true;
    uint64_t end_s = s->end_ns / 1000000000u;
    if (rscan == 0 && rng.n != rng.rows)
        rscan = CUPSTORE_ECORRUPT;
    if (rscan && rscan != CUPSTORE_ENOTFOUND) {
        s->complete = false;
        if ((rc = reason_add(s, MODEL_REASON_STORE_DAMAGED, 1, end_s, end_s, 0,
                             "store damaged: reading the NVTX ranges back failed after %" PRIu64
                             " of %" PRIu64 " rows (%s%s%s)", rng.n, rng.rows,
                             cupstore_strerror(rscan), rscan == CUPSTORE_EFAULT ? ": " : "",
                             rscan == CUPSTORE_EFAULT ? cupstore_guard_last() : "")) != 0)
            return rc;
    }
    if (scan) {
        s->complete = false;
        return reason_add(s, MODEL_REASON_STORE_DAMAGED, 1, end_s, end_s, 0,
                          "store damaged: reading the records back failed after %" PRIu64
                          " records (%s%s%s); the rest of the trace is unreadable",
                          n, cupstore_strerror(scan), scan == CUPSTORE_EFAULT ? ": " : "",
                          scan == CUPSTORE_EFAULT ? cupstore_guard_last() : "");
    }
    if (is_export)
        return 0; /* a window: its counts are not the session's */
    if (n >= want)
        return 0;
    s->complete = false;
    return reason_add(s, MODEL_REASON_STORE_DAMAGED, want - n, end_s, end_s, 0,
                      "store damaged: %" PRIu64 " records stored by the agent are missing "
                      "(%" PRIu64 " read back of %" PRIu64 ")", want - n, n, want);
}

int model_verify_id(const char *dir, const char *id, model_summary *out, bool *verified,
                    uint64_t *records_read, char **cause)
{
    if (cause)
        *cause = NULL;
    memset(out, 0, sizeof *out);
    *verified = false;
    *records_read = 0;
    struct by_id a = {.dir = dir, .id = id, .from_s = 0, .to_s = UINT64_MAX, .out = out,
                      .cause = cause, .verify = true, .verified = verified,
                      .records_read = records_read};
    return by_id_guarded(&a);
}

/* ---- Times --------------------------------------------------------------- */

static bool parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!*s)
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return true;
}

int model_parse_time(const char *s, uint64_t session_start_s, uint64_t session_end_s,
                     uint64_t *out_s)
{
    uint64_t v;
    if (!s || !out_s || !*s)
        return CUPSTORE_EINVAL;
    if (strcmp(s, "start") == 0) {
        *out_s = session_start_s;
        return 0;
    }
    if (strcmp(s, "end") == 0) {
        *out_s = session_end_s;
        return 0;
    }
    if (s[0] == '+' && parse_u64(s + 1, &v)) {
        if (v > UINT64_MAX - session_start_s)
            return CUPSTORE_EINVAL;
        *out_s = session_start_s + v;
        return 0;
    }
    if (s[0] == '-' && parse_u64(s + 1, &v)) {
        if (v > session_end_s)
            return CUPSTORE_EINVAL;
        *out_s = session_end_s - v;
        return 0;
    }
    if (parse_u64(s, &v)) {
        *out_s = v;
        return 0;
    }
    /* RFC 3339 in UTC: YYYY-mm-ddTHH:MM:SS[Z] (also 't' or ' ' between). */
    struct tm tm;
    int n = 0;
    char sep;
    memset(&tm, 0, sizeof tm);
    if (sscanf(s, "%4d-%2d-%2d%c%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &sep,
               &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 7 ||
        (sep != 'T' && sep != 't' && sep != ' '))
        return CUPSTORE_EINVAL;
    const char *rest = s + n;
    if (strcmp(rest, "") != 0 && strcmp(rest, "Z") != 0 && strcmp(rest, "z") != 0 &&
        strcmp(rest, "+00:00") != 0)
        return CUPSTORE_EINVAL;
    if (tm.tm_year < 1970 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
        tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
        return CUPSTORE_EINVAL;
    /* A day the month does not have (2026-02-30) is refused, not carried
     * into the next month by timegm. */
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y = tm.tm_year;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (tm.tm_mday > mdays[tm.tm_mon - 1] + (tm.tm_mon == 2 && leap))
        return CUPSTORE_EINVAL;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    time_t t = timegm(&tm);
    if (t < 0)
        return CUPSTORE_EINVAL;
    *out_s = (uint64_t)t;
    return 0;
}

const char *model_fault_text(void)
{
    static _Thread_local char text[320];
    snprintf(text, sizeof text, "its data.mdb is damaged: %s while reading it; left out "
             "(check it with mdb_stat -a)", cupstore_guard_last());
    return text;
}

const char *model_strerror(int rc)
{
    switch (rc) {
    case CUPSTORE_ENOTFOUND:
        return "no such session in the store";
    case CUPSTORE_EINVAL:
        return "ambiguous or invalid session id (give more of it)";
    case CUPSTORE_ENOTSTORE:
        return "not a cuptop session (foreign or damaged files)";
    case CUPSTORE_ENEWER:
        return "written by a newer cuptop (schema version too new); upgrade cuptop";
    case CUPSTORE_ELMDBNEWER:
        return "its data file is in a newer LMDB format than this cuptop's liblmdb reads "
               "(not a newer cuptop schema); read it with a cuptop built on that LMDB";
    case CUPSTORE_ECORRUPT:
        return "the session's store is damaged";
    case CUPSTORE_EFAULT:
        return "its data.mdb is damaged: reading it faulted; left out (check it with "
               "mdb_stat -a)";
    default:
        return cupstore_strerror(rc);
    }
}
