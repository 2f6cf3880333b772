/*
 * cmd_report.c - `cuptop report SESSION`: a human summary with advice in
 * the terms of the field note (shared/seed): where the pressure is (record
 * generation, the callback, the consumer, the store), which kinds to
 * narrow, whether a bigger pool would help or only hide a consumer that
 * falls behind, the tail (flush/exit ordering), and whether the trace may
 * be used for timing attribution.  One pass over the health rows; memory
 * does not grow with the session beyond one entry per epoch.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cupstore.h"
#include "cuptop.h"
#include "export.h"
#include "model.h"

#define NS UINT64_C(1000000000)

typedef struct epoch_acc {
    cupstore_epoch e;
    bool have;
    uint64_t seconds, records, loss;
} epoch_acc;

typedef struct rep {
    model_summary *s;
    uint64_t rows, first_s, last_s;
    uint64_t peak_kind[CUPSTORE_KIND_MAX];
    uint64_t peak_total, peak_second;
    /* buffers and queue, whole session */
    uint64_t requested, provided, declined, completed, consumed, foreign;
    uint32_t pool_limit, pool_hw, q_cap, q_hw;
    uint64_t buffer_size;   /* from the collection configuration, or 0 */
    uint32_t cmp_p99_max, cmp_max, req_p99_max, commit_p99_max;
    uint64_t store_refused;
    uint64_t overhead[8];
    /* seconds with loss */
    uint64_t loss_seconds;
    uint64_t loss_completed, loss_consumed, loss_declined;
    uint32_t loss_q_hw_max, loss_q_cap, loss_pool_hw_at_limit;
    uint32_t loss_cmp_p99_max;
    /* runs of consecutive loss seconds */
    uint64_t run_start, run_len, run_loss, best_start, best_len, best_loss;
    uint64_t runs, prev_loss_second;
    uint64_t best_class[CUPSTORE_LOSS_MAX], run_class[CUPSTORE_LOSS_MAX];
    epoch_acc *epochs;
    size_t nepochs;
    /* losses by kind and device, from the loss rows */
    uint64_t kind_loss[CUPSTORE_KIND_MAX], kind_loss_est[CUPSTORE_KIND_MAX];
    uint64_t dev_loss[CUPSTORE_DEVICE_MAX];
} rep;

static epoch_acc *epoch_slot(rep *r, uint32_t id)
{
    if (id >= r->nepochs) {
        size_t n = (size_t)id + 1;
        epoch_acc *ne = realloc(r->epochs, n * sizeof *ne);
        if (!ne)
            return NULL;
        memset(ne + r->nepochs, 0, (n - r->nepochs) * sizeof *ne);
        r->epochs = ne;
        r->nepochs = n;
    }
    return &r->epochs[id];
}

static int on_epoch(const cupstore_epoch *e, void *arg)
{
    epoch_acc *a = epoch_slot(arg, e->id);
    if (a) {
        a->e = *e;
        a->have = true;
    }
    return 0;
}

static void run_end(rep *r)
{
    if (r->run_len > r->best_len || (r->run_len == r->best_len && r->run_loss > r->best_loss)) {
        r->best_start = r->run_start;
        r->best_len = r->run_len;
        r->best_loss = r->run_loss;
        memcpy(r->best_class, r->run_class, sizeof r->best_class);
    }
    r->run_len = 0;
    r->run_loss = 0;
    memset(r->run_class, 0, sizeof r->run_class);
}

static int on_health(const cupstore_health *h, void *arg)
{
    rep *r = arg;
    uint64_t total = 0, loss = 0;
    if (!r->rows)
        r->first_s = h->second;
    r->rows++;
    r->last_s = h->second;
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++) {
        total += h->records_by_kind[k];
        if (h->records_by_kind[k] > r->peak_kind[k])
            r->peak_kind[k] = h->records_by_kind[k];
    }
    if (total > r->peak_total) {
        r->peak_total = total;
        r->peak_second = h->second;
    }
    r->requested += h->buf_requested;
    r->provided += h->buf_provided;
    r->declined += h->buf_declined;
    r->completed += h->buf_completed;
    r->consumed += h->buf_consumed;
    r->foreign += h->buf_foreign;
    if (h->pool_limit > r->pool_limit)
        r->pool_limit = h->pool_limit;
    if (h->pool_high_water > r->pool_hw)
        r->pool_hw = h->pool_high_water;
    if (h->queue_capacity > r->q_cap)
        r->q_cap = h->queue_capacity;
    if (h->queue_high_water > r->q_hw)
        r->q_hw = h->queue_high_water;
    if (h->cmp_lat.p99_ns > r->cmp_p99_max)
        r->cmp_p99_max = h->cmp_lat.p99_ns;
    if (h->cmp_lat.max_ns > r->cmp_max)
        r->cmp_max = h->cmp_lat.max_ns;
    if (h->req_lat.p99_ns > r->req_p99_max)
        r->req_p99_max = h->req_lat.p99_ns;
    if (h->commit_lat.p99_ns > r->commit_p99_max)
        r->commit_p99_max = h->commit_lat.p99_ns;
    r->store_refused += h->store_refused;
    for (unsigned i = 0; i < 8; i++)
        r->overhead[i] += h->overhead_by_type[i];
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
        loss += h->loss[l];
    epoch_acc *e = epoch_slot(r, h->epoch);
    if (e) {
        e->seconds++;
        e->records += total;
        e->loss += loss;
    }
    if (loss) {
        r->loss_seconds++;
        r->loss_completed += h->buf_completed;
        r->loss_consumed += h->buf_consumed;
        r->loss_declined += h->buf_declined;
        if (h->queue_high_water > r->loss_q_hw_max)
            r->loss_q_hw_max = h->queue_high_water;
        if (h->queue_capacity > r->loss_q_cap)
            r->loss_q_cap = h->queue_capacity;
        if (h->pool_limit && h->pool_high_water >= h->pool_limit)
            r->loss_pool_hw_at_limit++;
        if (h->cmp_lat.p99_ns > r->loss_cmp_p99_max)
            r->loss_cmp_p99_max = h->cmp_lat.p99_ns;
        if (r->run_len && h->second != r->prev_loss_second + 1)
            run_end(r);
        if (!r->run_len) {
            r->run_start = h->second;
            r->runs++;
        }
        r->run_len++;
        r->run_loss += loss;
        for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
            r->run_class[l] += h->loss[l];
        r->prev_loss_second = h->second;
    }
    return 0;
}

static int on_loss(const cupstore_loss_row *l, void *arg)
{
    rep *r = arg;
    if (l->kind < CUPSTORE_KIND_MAX) {
        if (l->estimate)
            r->kind_loss_est[l->kind] += l->count;
        else
            r->kind_loss[l->kind] += l->count;
    }
    if (l->device < CUPSTORE_DEVICE_MAX && !l->estimate)
        r->dev_loss[l->device] += l->count;
    return 0;
}

static void print_meta(cupstore_txn *txn, const char *key, const char *label)
{
    char *v = NULL;
    if (cupstore_meta_get(txn, key, &v) == 0 && v && *v) {
        printf("  %-16s ", label);
        cli_print_safe(stdout, v, strlen(v));
        putchar('\n');
    }
    free(v);
}

/* buffer_size=N from the agent's configuration row (0 when absent). */
static uint64_t config_buffer_size(cupstore_txn *txn)
{
    char *v = NULL;
    uint64_t n = 0;
    if (cupstore_meta_get(txn, "config", &v) == 0 && v) {
        const char *p = strstr(v, "buffer_size=");
        if (p && (p == v || p[-1] == '\n'))
            n = strtoull(p + strlen("buffer_size="), NULL, 10);
    }
    free(v);
    return n;
}

static int on_step(const cupstore_step *st, void *arg)
{
    (void)arg;
    double ms = st->end_mono_ns >= st->start_mono_ns
                    ? (double)(st->end_mono_ns - st->start_mono_ns) / 1e6 : 0;
    printf("  %-8s %9.3f ms  rc %-4d %-10s %" PRIu64 " buffers left\n",
           cupstore_step_name(st->step), ms, (int)st->rc, st->timed_out ? "TIMED OUT" : "",
           st->queue_remaining);
    return 0;
}

static double rate(uint64_t n, uint64_t seconds)
{
    return seconds ? (double)n / (double)seconds : 0;
}

static void advise(const rep *r, const model_summary *s, bool have_final,
                   const cupstore_final *f)
{
    const uint64_t *L = s->loss;
    unsigned n = 0;
    printf("\nAdvice\n");
    if (s->cupti_advice) {
        /* nothing was traced: the rest of the advice would be about nothing */
        printf("  %u. CUPTI could not start, so nothing was traced. What to do: %s.\n", ++n,
               s->cupti_advice);
        return;
    }
    if (s->complete && s->state != MODEL_STATE_RUNNING) {
        printf("  %u. Nothing was lost: this session can serve as a zero-loss baseline. Keep its\n"
               "     workload, collection configuration and versions with it, and compare other\n"
               "     runs with it only within the same epoch (same kinds).\n", ++n);
    }
    /* Pressure at the source: CUPTI drops and declined buffer requests. */
    if (L[CUPSTORE_LOSS_CUPTI_DROPPED] || L[CUPSTORE_LOSS_DECLINED]) {
        bool queue_full = r->loss_q_cap && r->loss_q_hw_max >= r->loss_q_cap;
        bool behind = r->loss_completed > r->loss_consumed + r->loss_consumed / 10 + 1 ||
                      L[CUPSTORE_LOSS_QUEUE_OVERFLOW] > 0;
        bool bursty = r->best_len <= 3 && r->loss_seconds <= 5;
        bool pool_short = r->loss_declined || r->loss_pool_hw_at_limit;
        printf("  %u. Pressure in record generation / buffer supply:\n"
               "     CUPTI dropped %" PRIu64 " records; %" PRIu64 " buffer requests were declined"
               " (%" PRIu64 " records).\n     Pool limit %u, high-water %u, at the limit in %u"
               " of %" PRIu64 " lossy seconds.\n", ++n, L[CUPSTORE_LOSS_CUPTI_DROPPED],
               r->declined, L[CUPSTORE_LOSS_DECLINED], r->pool_limit, r->pool_hw,
               r->loss_pool_hw_at_limit, r->loss_seconds);
        if (r->buffer_size && r->buffer_size < (1u << 20))
            printf("     The buffers are small (%" PRIu64 " KiB): CUPTI's cost per buffer dominates.\n"
                   "     On an H200 (CUPTI 13), 64 KiB buffers lost records at ~200k launches/s\n"
                   "     with any pool and even with nothing stored; 1 MiB buffers lost none.\n"
                   "     Raise CUPTOP_BUFFER_SIZE (default 4M) before anything else.\n",
                   r->buffer_size >> 10);
        else if (queue_full || behind)
            printf("     A bigger pool would only hide a consumer that falls behind: in the\n"
                   "     lossy seconds the queue reached %u of %u and %" PRIu64 " buffers\n"
                   "     completed against %" PRIu64 " consumed. Lighten the consumer, consume\n"
                   "     in batches, or narrow the kinds collected.\n",
                   r->loss_q_hw_max, r->loss_q_cap, r->loss_completed, r->loss_consumed);
        else if (pool_short && bursty)
            printf("     The losses are short bursts (longest %" PRIu64 " s) with declined\n"
                   "     requests while the queue and the consumer kept up: a bigger pool (or\n"
                   "     larger buffers) would likely absorb them, at the cost of memory and a\n"
                   "     longer drain at stop.\n", r->best_len);
        else if (pool_short)
            printf("     The loss is sustained (%" PRIu64 " seconds with loss, longest run %" PRIu64
                   " s):\n     a bigger pool lowers the odds of short peaks but cannot carry a\n"
                   "     sustained rate; narrow the kinds collected.\n", r->loss_seconds,
                   r->best_len);
        else
            printf("     The pool was never exhausted, so a bigger pool would not help: CUPTI\n"
                   "     produced records faster than its buffers came back. Check the request\n"
                   "     callback latency (p99 %.1f us), raise the buffer size, or narrow the\n"
                   "     kinds collected.\n", r->req_p99_max / 1e3);
    }
    if (L[CUPSTORE_LOSS_QUEUE_OVERFLOW])
        printf("  %u. Pressure in the consumer: %" PRIu64 " records were lost because completed\n"
               "     buffers did not fit the queue (high-water %u of %u). The consumer falls\n"
               "     behind; a bigger queue only moves the loss into process memory.\n", ++n,
               L[CUPSTORE_LOSS_QUEUE_OVERFLOW], r->q_hw, r->q_cap);
    if (r->cmp_p99_max > 10000 && s->loss_total)
        printf("  %u. Pressure in the callback: the completion callback's p99 reached %.1f us\n"
               "     (max %.1f us). It must only bounds-check, count and enqueue.\n", ++n,
               r->cmp_p99_max / 1e3, r->cmp_max / 1e3);
    if (L[CUPSTORE_LOSS_STORE_REFUSED] || r->store_refused)
        printf("  %u. Pressure in the store: %" PRIu64 " records refused (%" PRIu64
               " write transactions), commit p99 up to %.1f ms. Check the disk and filesystem\n"
               "     (remote filesystems, quotas); stage locally, write in batches, or cap\n"
               "     the map higher.\n", ++n, L[CUPSTORE_LOSS_STORE_REFUSED], r->store_refused,
               r->commit_p99_max / 1e6);
    if (L[CUPSTORE_LOSS_ZERO_TS])
        printf("  %u. %" PRIu64 " records came with zero timestamps: CUPTI's device-side buffers\n"
               "     ran out. Raise the device buffer size/count attributes or narrow the kinds.\n",
               ++n, L[CUPSTORE_LOSS_ZERO_TS]);
    if (L[CUPSTORE_LOSS_PARSE_ERROR])
        printf("  %u. %" PRIu64 " records could not be parsed: check the CUPTI version the\n"
               "     agent was built for against the one loaded.\n", ++n,
               L[CUPSTORE_LOSS_PARSE_ERROR]);
    if (L[CUPSTORE_LOSS_CONFLICT] || r->foreign)
        printf("  %u. Another CUPTI client in the process took buffers (%" PRIu64 " foreign\n"
               "     buffers, %" PRIu64 " records lost). Run torch.profiler, Nsight or\n"
               "     compute-sanitizer separately from cuptop.\n", ++n, r->foreign,
               L[CUPSTORE_LOSS_CONFLICT]);
    bool tail = L[CUPSTORE_LOSS_TAIL] || s->state == MODEL_STATE_CRASHED ||
                (have_final && (!f->protocol_complete || !f->flush_ok));
    if (tail)
        printf("  %u. The end of the trace is missing or unverified (tail):\n     %s.\n"
               "     Check the flush status, the exit order and the queue drain; run stop ->\n"
               "     flush -> drain -> close on every exit path, and flush before CUDA tears\n"
               "     its contexts down.\n", ++n,
               s->state == MODEL_STATE_CRASHED ? "the process died without a stop protocol"
               : L[CUPSTORE_LOSS_TAIL] ? "records were lost at stop"
               : "the stop protocol did not complete");
    /* Which kinds to narrow: the largest shares of the record rate. */
    if (s->loss_total && s->records_total) {
        unsigned a = CUPSTORE_KIND_MAX, b = CUPSTORE_KIND_MAX;
        for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++) {
            if (!s->records_by_kind[k])
                continue;
            if (a == CUPSTORE_KIND_MAX || s->records_by_kind[k] > s->records_by_kind[a]) {
                b = a;
                a = k;
            } else if (b == CUPSTORE_KIND_MAX || s->records_by_kind[k] > s->records_by_kind[b]) {
                b = k;
            }
        }
        if (a < CUPSTORE_KIND_MAX) {
            printf("  %u. Narrow what you collect to what the question needs. The largest record\n"
                   "     rates: %s %.0f%% (peak %" PRIu64 "/s)", ++n, cupstore_kind_name(a),
                   100.0 * (double)s->records_by_kind[a] / (double)s->records_total,
                   r->peak_kind[a]);
            if (b < CUPSTORE_KIND_MAX)
                printf(", %s %.0f%% (peak %" PRIu64 "/s)", cupstore_kind_name(b),
                       100.0 * (double)s->records_by_kind[b] / (double)s->records_total,
                       r->peak_kind[b]);
            printf(".\n     Turn off the ones you do not need first (runtime/driver API records\n"
                   "     when the question is GPU timing). A zero-loss run after narrowing shows\n"
                   "     the chain copes with less load, not that this trace was right.\n");
        }
    }
    if (!s->complete)
        printf("  %u. Do not use this trace for timing attribution: its holes may be lost\n"
               "     records, not idle time. Keep it with its loss counts, marked incomplete.\n",
               ++n);
    else if (s->state == MODEL_STATE_RUNNING)
        printf("  %u. Still running: nothing lost so far; judge it again after it ends.\n", ++n);
}

static void usage(FILE *f)
{
    fputs("usage: cuptop report [--store DIR] SESSION\n\n"
          "A human summary of a session: epochs, rates and losses per kind and device,\n"
          "buffers and queue, the stop-protocol steps, the longest loss window, the\n"
          "agent's notes (warnings, errors), and advice on where the pressure is.\n"
          "Exit status: 0 COMPLETE, 1 INCOMPLETE (or crashed), 2 usage error, unknown\n"
          "session or unreadable store.\n",
          f);
}

static int report(cupstore_env *env, model_summary *s)
{
    rep *r = calloc(1, sizeof *r);
    cupstore_txn *txn;
    cupstore_final f;
    char a[32], b[32], kinds[160];
    int rc;
    if (!r)
        return ENOMEM;
    r->s = s;
    if ((rc = cupstore_txn_begin(env, false, &txn)) != 0) {
        free(r);
        return rc;
    }
    /* Session, state and verdict. */
    printf("Session %s\n", s->id);
    printf("  %-16s ", "command");
    cli_print_safe(stdout, s->cmdline, strlen(s->cmdline));
    printf("\n  %-16s %d on ", "pid", s->pid);
    cli_print_safe(stdout, s->host, strlen(s->host));
    model_format_second(s->start_ns / NS, a, sizeof a);
    model_format_second(s->end_ns / NS, b, sizeof b);
    printf("\n  %-16s %s .. %s (%" PRIu64 " s)\n", "time", a, b,
           s->end_ns > s->start_ns ? (s->end_ns - s->start_ns) / NS : 0);
    print_meta(txn, "agent_version", "agent");
    print_meta(txn, "cuda_version", "CUDA");
    print_meta(txn, "cupti_version", "CUPTI");
    print_meta(txn, "driver_version", "driver");
    r->buffer_size = config_buffer_size(txn);
    bool have_final = cupstore_final_get(txn, &f) == 0;
    printf("  %-16s %s%s, %s\n", "state", model_state_name(s->state),
           s->count_only ? " (count-only: nothing stored)" : "",
           s->state == MODEL_STATE_RUNNING ? (s->complete ? "COMPLETE so far" : "INCOMPLETE so far")
                                           : model_verdict_name(s));
    for (size_t i = 0; i < s->nreasons; i++) {
        fputs("    - ", stdout);
        fputs(s->reasons[i].text, stdout); /* made safe by the model */
        putchar('\n');
    }

    if ((rc = cupstore_epoch_scan(txn, on_epoch, r)) != 0 ||
        (rc = cupstore_health_scan(txn, 0, UINT64_MAX, on_health, r)) != 0 ||
        (rc = cupstore_loss_scan(txn, 0, UINT64_MAX, on_loss, r)) != 0)
        goto out;
    if (r->run_len)
        run_end(r);

    printf("\nEpochs (figures compare only within an epoch)\n");
    printf("  %5s %-20s %8s %12s %10s  %s\n", "EPOCH", "START (UTC)", "SECONDS", "RECORDS/S",
           "LOST", "KINDS");
    for (size_t i = 0; i < r->nepochs; i++) {
        epoch_acc *e = &r->epochs[i];
        if (!e->have && !e->seconds)
            continue;
        model_format_second(e->have ? e->e.start_ns / NS : 0, a, sizeof a);
        cupstore_kinds_format(e->e.kinds, kinds, sizeof kinds);
        printf("  %5zu %-20s %8" PRIu64 " %12.0f %10" PRIu64 "  %s\n", i, e->have ? a : "?",
               e->seconds, rate(e->records, e->seconds), e->loss, e->have ? kinds : "?");
    }

    printf("\nRecords and losses per kind (%" PRIu64 " s of health rows)\n", r->rows);
    printf("  %-9s %14s %12s %12s %12s\n", "KIND", "RECORDS", "AVG/S", "PEAK/S", "LOST");
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++) {
        if (!s->records_by_kind[k] && !r->kind_loss[k] && !r->kind_loss_est[k])
            continue;
        printf("  %-9s %14" PRIu64 " %12.0f %12" PRIu64, cupstore_kind_name(k),
               s->records_by_kind[k], rate(s->records_by_kind[k], r->rows), r->peak_kind[k]);
        if (r->kind_loss[k])
            printf(" %12" PRIu64 "\n", r->kind_loss[k]);
        else if (r->kind_loss_est[k])
            printf(" %11" PRIu64 "~ (estimate)\n", r->kind_loss_est[k]);
        else
            printf(" %12d\n", 0);
    }
    printf("  %-9s %14" PRIu64 " %12.0f %12" PRIu64 " %12" PRIu64 "\n", "all", s->records_total,
           rate(s->records_total, r->rows), r->peak_total, s->loss_total);
    printf("\nPer device\n  %-7s %14s %12s\n", "DEVICE", "RECORDS", "LOST");
    for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX; d++)
        if (s->records_by_device[d] || r->dev_loss[d])
            printf("  %-7u %14" PRIu64 " %12" PRIu64 "\n", d, s->records_by_device[d],
                   r->dev_loss[d]);

    printf("\nLosses by class\n");
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++) {
        printf("  %-15s %12" PRIu64 "  %s\n", cupstore_loss_name(l), s->loss[l],
               cupstore_loss_describe(l));
        if (s->loss_estimate[l])
            printf("  %-15s %11" PRIu64 "~  more, estimated (the shared discard buffer, "
                   "never read)\n", "", s->loss_estimate[l]);
    }

    printf("\nBuffers and queue\n");
    printf("  buffers   requested %" PRIu64 ", provided %" PRIu64 ", declined %" PRIu64
           ", completed %" PRIu64 ", consumed %" PRIu64 ", foreign %" PRIu64 "\n",
           r->requested, r->provided, r->declined, r->completed, r->consumed, r->foreign);
    printf("  pool      limit %u, high-water %u\n", r->pool_limit, r->pool_hw);
    printf("  queue     capacity %u, high-water %u\n", r->q_cap, r->q_hw);
    printf("  latency   request p99 %.1f us, completion p99 %.1f us (max %.1f us), "
           "commit p99 %.2f ms\n", r->req_p99_max / 1e3, r->cmp_p99_max / 1e3, r->cmp_max / 1e3,
           r->commit_p99_max / 1e6);
    bool any_oh = false;
    for (unsigned i = 0; i < 8; i++)
        any_oh |= r->overhead[i] != 0;
    if (any_oh) {
        printf("  overhead ");
        for (unsigned i = 0; i < 8; i++)
            if (r->overhead[i])
                printf(" %s %" PRIu64, cupstore_overhead_name(i), r->overhead[i]);
        putchar('\n');
    }

    printf("\nLongest loss window\n");
    if (!r->best_len) {
        printf("  none: no second with a loss\n");
    } else {
        model_format_second(r->best_start, a, sizeof a);
        model_format_second(r->best_start + r->best_len - 1, b, sizeof b);
        printf("  %" PRIu64 " s from %s to %s, %" PRIu64 " records lost (", r->best_len, a, b,
               r->best_loss);
        bool first = true;
        for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
            if (r->best_class[l]) {
                printf("%s%s %" PRIu64, first ? "" : ", ", cupstore_loss_name(l),
                       r->best_class[l]);
                first = false;
            }
        printf("); %" PRIu64 " loss windows, %" PRIu64 " seconds with loss in all\n", r->runs,
               r->loss_seconds);
    }

    printf("\nStop protocol\n");
    if (have_final) {
        printf("  exit path %s (detail %d), protocol %s, final flush %s, tail lost %" PRIu64 "\n",
               cupstore_exit_name(f.exit_path), (int)f.exit_detail,
               f.protocol_complete ? "complete" : "INCOMPLETE", f.flush_ok ? "ok" : "FAILED",
               f.tail_lost);
        if ((rc = cupstore_step_scan(txn, on_step, NULL)) != 0)
            goto out;
    } else if (s->state == MODEL_STATE_CRASHED) {
        printf("  never ran: the process died (no final status, stale heartbeat)\n");
    } else {
        printf("  not yet: the session is running\n");
    }
    printf("\nNotes (from the agent)\n");
    if (!s->notes_total)
        printf("  none\n");
    for (size_t i = 0; i < s->nnotes; i++)
        cli_print_note(stdout, "  ", &s->notes[i]);
    if (s->notes_total > s->nnotes)
        printf("  ... and %" PRIu64 " more (only the first %d are shown)\n",
               s->notes_total - s->nnotes, MODEL_NOTES_MAX);
    advise(r, s, have_final, &f);
out:
    cupstore_txn_abort(txn);
    free(r->epochs);
    free(r);
    return rc;
}

int cmd_report(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"store", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *cmd = argv[0], *store = NULL;
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 's': store = optarg; break;
        case 'h': usage(stdout); return CUPTOP_EXIT_OK;
        default:
            return cli_bad_option(cmd, argv);
        }
    }
    if (optind + 1 != argc)
        return cli_one_session(cmd, argc, argv);

    char *dir = cli_store_dir(cmd, store);
    cupstore_env *env;
    model_summary s;
    if (!dir)
        return CUPTOP_EXIT_USAGE;
    int rc = cupstore_session_open(&env, dir, argv[optind], CUPSTORE_RDONLY);
    if (rc) {
        cli_error(cmd, "session %s in %s: %s", argv[optind], dir, cli_open_error(rc));
        free(dir);
        return CUPTOP_EXIT_USAGE;
    }
    if ((rc = model_summarize(env, 0, UINT64_MAX, &s, NULL)) == 0) {
        rc = report(env, &s);
        fflush(stdout);
    }
    int status = rc ? CUPTOP_EXIT_USAGE : s.complete ? CUPTOP_EXIT_OK : CUPTOP_EXIT_NO;
    if (rc)
        cli_error(cmd, "session %s: %s", argv[optind], cli_open_error(rc));
    model_summary_free(&s);
    cupstore_env_close(env);
    free(dir);
    return status;
}
