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
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "model.h"
#include "model_int.h"

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

/* ---- A session without a final status: records after its last row ------- */

static int add_stored(const cupstore_health *h, void *arg)
{
    *(uint64_t *)arg += h->records_stored;
    return 0;
}

typedef struct after_rows {
    uint64_t n, by_kind[CUPSTORE_KIND_MAX], by_device[CUPSTORE_DEVICE_MAX];
} after_rows;

static int after_row_record(const cupstore_record *r, void *arg)
{
    after_rows *a = arg;
    a->n++;
    if (r->kind < CUPSTORE_KIND_MAX)
        a->by_kind[r->kind]++;
    if (r->device < CUPSTORE_DEVICE_MAX)
        a->by_device[r->device]++;
    return 0;
}

/* The agent counts a batch into the next health row once its commit is
 * done, so a session that died (kill -9, _exit, a crash) has in the store
 * the records of every row plus those committed after its last row, in no
 * row: all of them when it died before its first row.  Those are the
 * chunks past the rows' records_stored in commit order; count them by
 * kind and device (a decode of those chunks only; the store's own total,
 * read without decoding, says first whether there are any).  A damaged
 * chunk adds nothing here (check --verify reports the damage).
 *
 * With a final status (fin) the rows are the count, but for one the store
 * refused (read aside): a full map that refused it refused the last health
 * row too, leaving the rows short (the truth matrix, seed 1617004884: rows
 * 2,808, final 7,734, all stored); then the records after the rows count,
 * up to the final status's figure.  Records a consumer committed after a
 * final status are the tail's, counted lost there, not stored. */
static int records_after_rows(cupstore_txn *txn, model_summary *out, const cupstore_final *fin)
{
    uint64_t stored = 0, rows = 0;
    after_rows a;
    int rc = cupstore_record_stats(txn, NULL, &stored, NULL);
    if (rc == 0)
        rc = cupstore_health_scan(txn, 0, UINT64_MAX, add_stored, &rows);
    if (rc || stored <= rows || (fin && (!fin->aside || fin->records_stored <= rows)))
        return rc;
    memset(&a, 0, sizeof a);
    /* the first ones committed: those after the final status are the tail's */
    rc = cupstore_record_scan_after(txn, rows, fin ? fin->records_stored - rows : UINT64_MAX,
                                    after_row_record, &a);
    if (rc)
        return rc == CUPSTORE_ECORRUPT ? 0 : rc;
    out->records_after_rows = a.n;
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
        out->records_by_kind[k] += a.by_kind[k];
    for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX; d++) {
        out->records_by_device[d] += a.by_device[d];
        if (a.by_device[d])
            out->device_mask |= 1u << d;
    }
    return 0;
}

/* ---- Reasons ------------------------------------------------------------- */

int model_reason_add(model_summary *s, unsigned reason, uint64_t count, uint64_t first,
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

/* The cause of a failure on an open session: "session ID: words". */
int model_fail(char **cause, int rc, const char *id)
{
    if (cause && asprintf(cause, "session %s: %s", id, model_strerror(rc)) < 0)
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
        if ((rc = model_reason_add(s, MODEL_REASON_PROTOCOL, 1, end_s, end_s, 0,
                             "stop protocol: the store refused the final status (%" PRIu64
                             " write transactions refused in the session); it was read from "
                             "the session's final.aside (exit path %s)", f->store_refused,
                             cupstore_exit_name(f->exit_path))) != 0)
            return rc;
    } else if (st.failed) {
        if ((rc = model_reason_add(s, MODEL_REASON_PROTOCOL, st.failed, end_s, end_s, 0,
                             "stop protocol: %s", st.text)) != 0)
            return rc;
    } else if (!f->protocol_complete || (st.seen & all) != all) {
        char missing[128] = "";
        size_t ml = 0;
        for (unsigned i = 0; i < CUPSTORE_STEP_MAX; i++)
            if (!(st.seen & (1u << i)) && ml < sizeof missing)
                ml += (size_t)snprintf(missing + ml, sizeof missing - ml, "%s%s",
                                       ml ? ", " : "", cupstore_step_name(i));
        if ((rc = model_reason_add(s, MODEL_REASON_PROTOCOL, 1, end_s, end_s, 0,
                             "stop protocol did not run to the end (exit path %s%s%s)",
                             cupstore_exit_name(f->exit_path), ml ? "; steps missing: " : "",
                             missing)) != 0)
            return rc;
    }
    if (!f->flush_ok &&
        (rc = model_reason_add(s, MODEL_REASON_FLUSH, 1, end_s, end_s, 0,
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
        return model_reason_add(s, MODEL_REASON_NO_FINAL, 1, sec, sec, 0,
                          "crashed: no final status and no heartbeat (the process died "
                          "before its first health row); the stop protocol never ran, so "
                          "the tail of the trace is missing");
    }
    if (s->state == MODEL_STATE_CRASHED) {
        char hb[32];
        model_format_second(s->heartbeat_ns / 1000000000u, hb, sizeof hb);
        uint64_t sec = s->heartbeat_ns / 1000000000u;
        return model_reason_add(s, MODEL_REASON_NO_FINAL, 1, sec, sec, 0,
                          "crashed: no final status, last heartbeat %s; the stop protocol "
                          "never ran, so the tail of the trace is missing", hb);
    }
    if (s->state == MODEL_STATE_STOPPED || s->state == MODEL_STATE_NOT_RESPONDING) {
        char why[200];
        uint64_t sec = s->heartbeat_ns / 1000000000u;
        model_liveness_text(s, why, sizeof why);
        return model_reason_add(s, MODEL_REASON_NOT_RESPONDING, 1, sec, sec, 0, "%s", why);
    }
    if (!have_final && s->pid <= 0) {
        /* health rows but no process written down (the agent writes its
         * pid and identity after its threads start): killed while it was
         * starting, or starting now; its liveness cannot be checked, so
         * never COMPLETE (found by the truth matrix: kill -9 in that
         * window, seed 9101030705) */
        uint64_t sec = s->heartbeat_ns / 1000000000u;
        return model_reason_add(s, MODEL_REASON_NO_FINAL, 1, sec, sec, 0,
                          "no final status and no process recorded: the process died "
                          "while the agent was starting (or is starting now); whether "
                          "it is alive cannot be checked");
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
        (rc = model_reason_add(s, MODEL_REASON_UNCONSUMED, completed - consumed, end_s, end_s, 0,
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
        if ((rc = model_reason_add(s, MODEL_REASON_DISABLED, 1, end_s, end_s, 0,
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

/* The session's own facts from its meta table: identity, job, window,
 * capture range, attach, provenance, CUPTI's start error, the sink. */
static int sum_meta(cupstore_txn *txn, model_summary *out)
{
    int rc;
    out->pid = (int)model_meta_u64(txn, "pid");
    model_meta_copy(txn, "host", out->host, sizeof out->host);
    model_meta_identity(txn, out);
    model_meta_copy(txn, "cmdline", out->cmdline, sizeof out->cmdline);
    model_meta_copy(txn, "skipped", out->skipped, sizeof out->skipped);
    {
        /* "SIG NS": the agent stopped at SIG, the process carried on */
        char cont[64] = "";
        unsigned long long at = 0;
        int sig = 0;
        model_meta_copy(txn, "continued_after_signal", cont, sizeof cont);
        if (cont[0] && sscanf(cont, "%d %llu", &sig, &at) == 2 && sig > 0 && sig < 65) {
            out->continued_signal = sig;
            out->continued_ns = at;
            out->process_exit_ns = model_meta_u64(txn, "process_exit_ns");
        }
    }
    out->start_ns = model_meta_u64(txn, "start_ns");
    if ((rc = model_meta_job(txn, out)) != 0)
        return rc;
    model_meta_window(txn, out);
    model_meta_capture(txn, out);
    out->attached_ns = model_meta_u64(txn, "attached_ns");   /* cuptop attach */
    model_meta_copy(txn, "attached_uid", out->attached_uid, sizeof out->attached_uid);
    if ((out->prov = malloc(sizeof *out->prov)) != NULL && model_prov_read(txn, out->prov)) {
        free(out->prov);
        out->prov = NULL;
    }
    {
        char *e = NULL;
        if (cupstore_meta_get(txn, "cupti_error", &e) == 0 && e) {
            out->cupti_failed = true;
            snprintf(out->cupti_error, sizeof out->cupti_error, "%s", e);
            out->cupti_error_code = (int)model_meta_u64(txn, "cupti_error_code");
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
    return 0;
}

static int loss_row_all(const cupstore_loss_row *r, void *arg)
{
    model_loss_rows *m = arg;
    if (r->loss >= CUPSTORE_LOSS_MAX)
        return 0;
    if (r->estimate) {
        if (r->loss == CUPSTORE_LOSS_CUPTI_DROPPED && r->kind < CUPSTORE_KIND_MAX)
            m->dropped_est[r->kind] += r->count;
        return 0;
    }
    if (r->kind < CUPSTORE_KIND_MAX)
        m->kind[r->loss][r->kind] += r->count;
    m->device[r->loss][r->device < CUPSTORE_DEVICE_MAX ? r->device : CUPSTORE_DEVICE_MAX] +=
        r->count;
    return 0;
}

int model_loss_rows_read(cupstore_txn *txn, model_loss_rows *out)
{
    memset(out, 0, sizeof *out);
    return cupstore_loss_scan(txn, 0, UINT64_MAX, loss_row_all, out);
}

void model_final_kind_extra(const cupstore_final *f, const model_loss_rows *r,
                            uint64_t add[CUPSTORE_KIND_MAX], uint64_t est[CUPSTORE_KIND_MAX])
{
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++) {
        for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
            if (f->loss_kind[l][k] > r->kind[l][k])
                add[k] += f->loss_kind[l][k] - r->kind[l][k];
        if (f->dropped_kind_est[k] > r->dropped_est[k])
            est[k] += f->dropped_kind_est[k] - r->dropped_est[k];
    }
}

/* n records of class l that the final status f counts and no loss row
 * has: on the devices f says lack them, the rest on device "none". */
static void final_devices(model_summary *out, const cupstore_final *f, const model_loss_rows *r,
                          unsigned l, uint64_t n)
{
    for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX && n; d++) {
        uint64_t x = f->loss_device[l][d] > r->device[l][d] ? f->loss_device[l][d] - r->device[l][d]
                                                            : 0;
        x = x < n ? x : n;
        out->loss_by_device[d][l] += x;
        n -= x;
    }
    out->loss_by_device[MODEL_DEVICE_NONE][l] += n;
}

/* An ended session's final status: its end, the tail loss it knows of
 * beyond the rows, and (written aside, the store having refused it) the
 * losses the agent counted beyond the rows' sum; bounds where the count is
 * not known. */
static int sum_final(cupstore_txn *txn, sum_ctx *c, const cupstore_final *f, uint64_t from_s,
                     uint64_t to_s)
{
    model_summary *out = c->out;
    int rc;
    out->state = MODEL_STATE_ENDED;
    out->end_ns = f->end_ns;
    out->final_aside = f->aside != 0;
    /* Tail loss the final status knows of but no row recorded. */
    uint64_t end_s = f->end_ns / 1000000000u;
    if (end_s >= from_s && end_s <= to_s) {
        /* Losses the final status counts beyond the rows, credited to the
         * end, on the devices it names: the tail beyond the tail rows,
         * and, the store having refused it (and the rows before it), what
         * the agent counted beyond the rows' sum. */
        uint64_t extra[CUPSTORE_LOSS_MAX] = {0};
        bool any = false;
        if (f->tail_lost > c->acc[CUPSTORE_LOSS_TAIL].count)
            extra[CUPSTORE_LOSS_TAIL] = f->tail_lost - c->acc[CUPSTORE_LOSS_TAIL].count;
        for (unsigned l = 0; f->aside && l < CUPSTORE_LOSS_MAX; l++)
            any |= f->loss_total[l] != 0;
        if (any && (rc = cupstore_health_scan(txn, 0, UINT64_MAX, health_all, c)) != 0)
            return rc;
        for (unsigned l = 0; any && l < CUPSTORE_LOSS_MAX; l++) {
            uint64_t rows = c->all_loss[l] + extra[l];   /* the tail's: at least tail_lost */
            if (f->loss_total[l] > rows)
                extra[l] += f->loss_total[l] - rows;
        }
        model_loss_rows lr;
        bool rows_read = false;
        for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++) {
            if (!extra[l])
                continue;
            if (!rows_read && (rc = model_loss_rows_read(txn, &lr)) != 0)
                return rc;
            rows_read = true;
            acc_add(&c->acc[l], end_s, extra[l], c->acc[l].seconds == 0);
            final_devices(out, f, &lr, l, extra[l]);
        }
        c->all_completed = c->all_consumed = 0;   /* judge_end sums them afresh */
        memset(c->all_loss, 0, sizeof c->all_loss);
        out->loss_bound[CUPSTORE_LOSS_TAIL] = f->tail_bound;
        out->loss_bound[CUPSTORE_LOSS_CONFLICT] = f->conflict_bound;
        out->buffers_unreturned = f->buffers_outstanding;
        if (!f->flush_ok && f->buffers_outstanding) {
            /* how full the held buffers were is not known (a buffer
             * CUPTI completed after the stop gave up is among them):
             * at most their capacity, in the smallest records */
            uint64_t size = model_config_u64(txn, "buffer_size");
            if (size && size < MODEL_DISCARD_BYTES)
                size = MODEL_DISCARD_BYTES;
            uint64_t most = f->buffers_outstanding * (size / MODEL_RECORD_MIN_BYTES);
            if (most && most < f->tail_bound)
                most = f->tail_bound;
            out->loss_at_most[CUPSTORE_LOSS_TAIL] = most;
        }
    }
    return 0;
}

/* One reason per loss class with a loss, in class order: the count (or
 * that it is an estimate, a lower bound, or known only to exist: never
 * "0 lost") and the seconds it fell in. */
static int sum_loss_reasons(sum_ctx *c)
{
    model_summary *out = c->out;
    int rc;
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++) {
        class_acc *a = &c->acc[l], *e = &c->est[l];
        char win[128], more[512] = "";
        out->loss[l] = a->count;
        out->loss_total += a->count;
        out->loss_estimate[l] = e->count;
        uint64_t bound = out->loss_bound[l], most = out->loss_at_most[l];
        if (!a->count && !e->count && !bound && !most)
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
        /* and a loss known only to exist: never "0 lost" */
        if (most) {
            size_t ml = strlen(more);
            snprintf(more + ml, sizeof more - ml, "%san unknown number%s, up to %" PRIu64
                     " (the capacity of the %" PRIu64 " buffers CUPTI still held when the "
                     "final flush gave up)", a->count || e->count || bound ? ", and " : "",
                     a->count || e->count || bound ? " more" : " of records lost",
                     most - bound, out->buffers_unreturned);
        }
        if (!a->count && !e->count) {
            uint64_t sec = out->end_ns / 1000000000u;
            window_text(win, sizeof win, sec, sec, 1);
            rc = model_reason_add(out, l, 0, sec, sec, 1, "%s: %s %s (%s)", cupstore_loss_name(l),
                            more, win, cupstore_loss_describe(l));
        } else if (!a->count) {
            window_text(win, sizeof win, e->first, e->last, e->seconds);
            rc = model_reason_add(out, l, 0, e->first, e->last, e->seconds, "%s: %s %s (%s)",
                            cupstore_loss_name(l), more, win, cupstore_loss_describe(l));
        } else {
            window_text(win, sizeof win, a->first, a->last, a->seconds);
            rc = model_reason_add(out, l, a->count, a->first, a->last, a->seconds,
                            "%s: %" PRIu64 " records lost%s %s (%s)", cupstore_loss_name(l),
                            a->count, more, win, cupstore_loss_describe(l));
        }
        if (rc)
            return rc;
    }
    return 0;
}

/* From the last health row (last: NULL when there is none) and the
 * window's rows: the start when the meta has none, the heartbeat, the
 * kinds and epoch now, the records in all. */
static void sum_last_row(sum_ctx *c, const cupstore_health *last)
{
    model_summary *out = c->out;
    if (!out->start_ns && c->rows)
        out->start_ns = c->first_second * 1000000000u;
    out->heartbeat_ns = last ? last->heartbeat_ns : out->start_ns;
    if (last && !out->heartbeat_ns)
        out->heartbeat_ns = last->second * 1000000000u;
    if (last && (last->flags & CUPSTORE_HF_COUNT_ONLY))
        out->count_only = true;
    if (c->rows) {
        out->kinds_enabled = c->last.kinds_enabled;
        out->epoch = c->last.epoch;
    } else if (last) {
        out->kinds_enabled = last->kinds_enabled;
        out->epoch = last->epoch;
    }
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
        out->records_total += out->records_by_kind[k];
}

/* No final status, not a window: running, or dead (a stale heartbeat, the
 * process gone or not what it was), from the heartbeat and /proc. */
static void sum_alive(model_summary *out)
{
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

/* The session's state and end, from its final status (f; NULL: none) or
 * its heartbeat. */
static int sum_state(cupstore_txn *txn, sum_ctx *c, const cupstore_final *f, uint64_t from_s,
                     uint64_t to_s)
{
    model_summary *out = c->out;
    if (out->window && !out->window_end) {
        /* a window that does not hold the session's end: nothing to judge
         * beyond its seconds (its final status, if copied, is clipped) */
        out->state = MODEL_STATE_ENDED;
        out->end_ns = f ? f->end_ns : out->heartbeat_ns;
    } else if (out->window && !f) {
        out->state = MODEL_STATE_CRASHED;   /* the session had crashed */
        out->end_ns = out->heartbeat_ns;
    } else if (f) {
        return sum_final(txn, c, f, from_s, to_s);
    } else {
        sum_alive(out);
    }
    return 0;
}

/* Records per second: an ended (or dead) session's mean over its rows,
 * since its last row is a partial second; a running session's last row,
 * which is a whole second (the agent writes it after). */
static void sum_rate(sum_ctx *c)
{
    model_summary *out = c->out;
    if (c->rows && out->state == MODEL_STATE_RUNNING) {
        for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
            out->records_per_s += (double)c->last.records_by_kind[k];
    } else if (c->rows) {
        out->records_per_s = (double)out->records_total / (double)c->rows;
        out->records_per_s_mean = true;
    }
}

/* The reasons after the loss classes: the agent stepped aside, the
 * end's (when the window reaches the session's end; f: the final status,
 * NULL when none), the notes kept; CUPTI's failure to start said first. */
static int sum_end_reasons(cupstore_txn *txn, sum_ctx *c, uint64_t to_s, const cupstore_final *f)
{
    model_summary *out = c->out;
    uint64_t end_s = out->end_ns / 1000000000u;
    bool covers_end = to_s >= end_s || (c->rows && c->last_second >= end_s) || to_s == UINT64_MAX;
    if (out->window && !out->window_end)
        covers_end = false;
    int rc = 0;
    if (model_state_live(out->state) && c->any_disabled)
        rc = model_reason_add(out, MODEL_REASON_DISABLED, 1, c->last_second, c->last_second, 0,
                        "disabled: the agent stepped aside (see its notes)");
    if (rc == 0)
        rc = judge_end(txn, c, covers_end, f != NULL, f);
    if (rc || (rc = cupstore_note_scan(txn, note_keep, out)) != 0)
        return rc;
    if (out->cupti_failed) {
        /* said first: nothing else matters much when nothing was traced */
        char why[200];
        uint64_t sec = out->start_ns / 1000000000u;
        model_escape(why, sizeof why, out->cupti_error, strlen(out->cupti_error));
        if ((rc = model_reason_add(out, MODEL_REASON_CUPTI_START, 1, sec, sec, 0,
                             "CUPTI could not start: %s; nothing was traced", why)) != 0)
            return rc;
        model_reason first = out->reasons[out->nreasons - 1];
        memmove(out->reasons + 1, out->reasons, (out->nreasons - 1) * sizeof *out->reasons);
        out->reasons[0] = first;
    }
    return 0;
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
        return model_fail(cause, rc, out->id);
    }
    if ((rc = sum_meta(txn, out)) != 0)
        goto out;

    if ((rc = model_seconds_scan(txn, from_s, to_s, second_row, c)) != 0)
        goto out;

    cupstore_health last;
    bool have_last = false;
    rc = cupstore_health_last(txn, &last);
    if (rc == 0)
        have_last = true;
    else if (rc != CUPSTORE_ENOTFOUND)
        goto out;
    sum_last_row(c, have_last ? &last : NULL);

    bool have_final = false;
    rc = cupstore_final_get(txn, &f);   /* or the one written aside */
    if (rc == 0)
        have_final = true;
    else if (rc != CUPSTORE_ENOTFOUND)
        goto out;
    if ((rc = sum_state(txn, c, have_final ? &f : NULL, from_s, to_s)) != 0)
        goto out;

    /* Not running: count what it stored after its last row, when the
     * window reaches past that row: without a final status (it died), or
     * up to the final status's count (records_after_rows). */
    if (!out->window && out->state != MODEL_STATE_RUNNING &&
        (!have_last || to_s > last.second)) {
        if ((rc = records_after_rows(txn, out, have_final ? &f : NULL)) != 0)
            goto out;
        out->records_total += out->records_after_rows;
    }

    sum_rate(c);
    /* Loss classes, in class order. */
    if ((rc = sum_loss_reasons(c)) != 0)
        goto out;
    if ((rc = sum_end_reasons(txn, c, to_s, have_final ? &f : NULL)) != 0)
        goto out;
    out->complete = out->nreasons == 0;
    out->seconds = c->rows;
out:
    cupstore_txn_abort(txn);
    free(c);
    if (rc) {
        if (cause && !*cause)
            model_fail(cause, rc, out->id);
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
