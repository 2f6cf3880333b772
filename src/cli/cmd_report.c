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

#include "cli_opts.h"
#include "cupstore.h"
#include "cuptop.h"
#include "export.h"
#include "model.h"
#include "model_ledger.h"

#define NS UINT64_C(1000000000)

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

static void print_safe_str(const char *v)
{
    cli_print_safe(stdout, v, strlen(v));
}

/* A version line: the value, or "unknown (why)". */
static void report_version(const model_prov *p, unsigned i, const char *label, const char *extra)
{
    printf("  %-16s ", label);
    if (p->v[i]) {
        print_safe_str(p->v[i]);
        if (extra)
            print_safe_str(extra);
    } else {
        printf("unknown (");
        print_safe_str(p->why[i] ? p->why[i] : "not recorded");
        putchar(')');
    }
    putchar('\n');
}

/* What the session ran on: the label, the versions, the host and the
 * devices the agent recorded (model_prov), unknowns with their reason. */
static void report_provenance(const model_prov *p, uint32_t device_mask)
{
    char extra[96];
    if (!p)
        return;
    if (p->label) {
        printf("  %-16s ", "label");
        print_safe_str(p->label);
        putchar('\n');
    }
    report_version(p, MODEL_V_DRIVER, "driver", NULL);
    report_version(p, MODEL_V_CUDA_DRIVER, "CUDA driver API", NULL);
    report_version(p, MODEL_V_CUDA_RUNTIME, "CUDA runtime", NULL);
    snprintf(extra, sizeof extra, " (API %s)", p->v[MODEL_V_CUPTI_API] ? p->v[MODEL_V_CUPTI_API] : "?");
    report_version(p, MODEL_V_CUPTI, "CUPTI", p->v[MODEL_V_CUPTI_API] ? extra : NULL);
    if (p->os || p->v[MODEL_V_KERNEL] || p->virt) {
        printf("  %-16s ", "system");
        print_safe_str(p->os ? p->os : "?");
        if (p->v[MODEL_V_KERNEL]) {
            printf(", kernel ");
            print_safe_str(p->v[MODEL_V_KERNEL]);
        }
        if (p->virt) {
            printf(", ");
            print_safe_str(p->virt);
        }
        putchar('\n');
    }
    for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX; d++) {
        const model_device *v = &p->dev[d];
        char label[24];
        if (!v->known && !(device_mask & (1u << d)))
            continue;
        snprintf(label, sizeof label, "device %u", d);
        printf("  %-16s ", label);
        if (!v->known) {
            printf("unknown (no DEVICE record from CUPTI)\n");
            continue;
        }
        print_safe_str(v->name);
        if (v->from_cupti) {
            printf(", ");
            print_safe_str(v->uuid);
            printf(", CC ");
            print_safe_str(v->cc);
            printf(", %u SMs, %.1f GiB, MIG %s", v->sm, (double)v->memory / (1024.0 * 1024 * 1024),
                   v->mig < 0 ? "unknown" : v->mig ? "on" : "off");
        } else {
            printf(" (name only: no DEVICE record)");
        }
        putchar('\n');
    }
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

/* Print text word-wrapped at 79 columns: first after lead, then indented. */
static void print_wrapped(const char *lead, const char *indent, const char *text)
{
    size_t col = strlen(lead), width = 79;
    bool fresh = true;   /* nothing printed on this line yet */
    fputs(lead, stdout);
    while (*text) {
        size_t w = strcspn(text, " ");
        if (!fresh && col + 1 + w > width) {
            printf("\n%s", indent);
            col = strlen(indent);
            fresh = true;
        }
        if (!fresh) {
            putchar(' ');
            col++;
        }
        fwrite(text, 1, w, stdout);
        col += w;
        fresh = false;
        text += w;
        while (*text == ' ')
            text++;
    }
    putchar('\n');
}

/* The model's recommendations, best first, each with the exact setting:
 * "rerun: CUPTOP_X=V" is a stable line for scripts (tests/agent/
 * advice_proof.sh applies it). */
static int advise(const model_summary *s, const model_facts *f)
{
    model_advice *adv;
    size_t n;
    int rc = model_advise(s, f, &adv, &n);
    if (rc)
        return rc;
    printf("\nAdvice\n");
    if (n && adv[0].code == MODEL_ADVICE_CUPTI_START) {
        /* one line, unwrapped: tests/agent/cupti_start.sh reads it */
        printf("  1. %s\n", adv[0].text);
        free(adv);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        const model_advice *a = &adv[i];
        char lead[32];
        snprintf(lead, sizeof lead, "  %zu. ", i + 1);
        print_wrapped(lead, "     ", a->text);
        print_wrapped("     why: ", "     ", a->evidence);
        if (a->setting[0] && a->value[0]) {
            printf("     rerun: %s=%s", a->setting, a->value);
            if (a->run_option[0])
                printf("   (cuptop run %s -- ...)", a->run_option);
            putchar('\n');
        }
        if (a->control[0] && model_state_live(s->state))
            printf("     now: cuptop control %s %s\n", s->id, a->control);
    }
    if (!n && s->complete && !model_state_live(s->state))
        printf("  Nothing was lost: this session can serve as a zero-loss baseline. Keep its\n"
               "  workload, collection configuration and versions with it, and compare other\n"
               "  runs with it only within the same epoch (same kinds).\n");
    else if (!n && s->complete)
        printf("  Still running: nothing lost so far; judge it again after it ends.\n");
    else if (!n)
        printf("  No setting is known to fix this: see the reasons and the notes above.\n");
    if (!s->complete)
        printf("  Do not use this trace for timing attribution: its holes may be lost\n"
               "  records, not idle time. Keep it with its loss counts, marked incomplete.\n");
    free(adv);
    return 0;
}

/* report's options (cli_opts.h): parsed from this table; --help is written
 * out below as prose. */
const cli_cmd cli_cmd_report = {
    .name = "report",
    .shortopts = "h",
    .opts = (const cli_opt[]){
        {"store", "DIR", 's', NULL, NULL},
        {"json", NULL, 'j', NULL, NULL},
        {"help", NULL, 'h', NULL, NULL},
        {NULL, NULL, 0, NULL, NULL},
    },
};

static void usage(FILE *f)
{
    fputs("usage: cuptop report [--store DIR] [--json] SESSION\n\n"
          "A human summary of a session: epochs, rates and losses per kind and device,\n"
          "CUDA graph launches per graph id (count, p50/p90/p99), buffers and queue,\n"
          "the stop-protocol steps, the longest loss window, the agent's notes\n"
          "(warnings, errors), and advice on where the pressure is.\n"
          "--json: the session's summary (as sessions --json) and its graph launches\n"
          "per graph id, as one JSON object.\n"
          "Exit status: 0 COMPLETE, 1 INCOMPLETE (or crashed), 2 usage error, unknown\n"
          "session or unreadable store.\n",
          f);
}

/* Print the report of s's session; on an error *cause may name it (the
 * caller prints and frees it). */
/* report's sections, in the order printed.  The session: command, pid
 * and host, time, provenance, state and verdict with its reasons. */
static void report_session(cupstore_txn *txn, const model_summary *s)
{
    char a[32], b[32];
    printf("Session %s\n", s->id);
    printf("  %-16s ", "command");
    cli_print_safe(stdout, s->cmdline, strlen(s->cmdline));
    printf("\n  %-16s %d on ", "pid", s->pid);
    cli_print_safe(stdout, s->host, strlen(s->host));
    model_format_second(s->start_ns / NS, a, sizeof a);
    model_format_second(s->end_ns / NS, b, sizeof b);
    printf("\n  %-16s %s .. %s (%" PRIu64 " s)\n", "time", a, b,
           s->end_ns > s->start_ns ? (s->end_ns - s->start_ns) / NS : 0);
    cli_print_attached(stdout, s);
    cli_print_scope(stdout, s);
    print_meta(txn, "agent_version", "agent");
    report_provenance(s->prov, s->device_mask);
    printf("  %-16s %s%s, %s\n", "state", model_state_name(s->state),
           s->count_only ? " (count-only: nothing stored)" : "",
           model_state_live(s->state) ? (s->complete ? "COMPLETE so far" : "INCOMPLETE so far")
                                      : model_verdict_name(s));

    if (s->window) {
        printf("  %-16s a window of session ", "window");
        print_safe_str(s->window_of);
        printf(" (export --format store): judged as a window%s\n",
               s->window_end ? ", with the session's end" : "");
    }
    for (size_t i = 0; i < s->nreasons; i++) {
        fputs("    - ", stdout);
        fputs(s->reasons[i].text, stdout); /* made safe by the model */
        putchar('\n');
    }
}

/* Epochs: one line each (the baseline marked), then each one's scope. */
static void report_epochs(const model_summary *s, const model_facts *r)
{
    char a[32], kinds[160];
    printf("\nEpochs (figures compare only within an epoch; the second of a change is split\n"
           "at the acknowledged change time)\n");
    printf("  %5s %-20s %8s %12s %10s %5s  %s\n", "EPOCH", "START (UTC)", "SECONDS", "RECORDS/S",
           "LOST", "POOL", "KINDS");
    int base = model_session_baseline(s, r);
    for (size_t i = 0; i < r->nepochs; i++) {
        const model_epoch_stat *e = &r->epochs[i];
        if (!e->known && !(e->seconds > 0))
            continue;
        model_format_second(e->known ? e->start_ns / NS : 0, a, sizeof a);
        cupstore_kinds_format(e->kinds, kinds, sizeof kinds);
        char secs[24];
        if (e->seconds == (double)(uint64_t)e->seconds)
            snprintf(secs, sizeof secs, "%.0f", e->seconds);
        else if (e->seconds < 0.1)   /* a capture range shorter than a second */
            snprintf(secs, sizeof secs, "%.3f", e->seconds);
        else
            snprintf(secs, sizeof secs, "%.1f", e->seconds);
        printf("  %5u %-20s %8s %12.0f %10" PRIu64 " %5u  %s%s\n", e->id, e->known ? a : "?",
               secs, e->seconds > 0 ? (double)e->records / e->seconds : 0.0, e->losses,
               e->pool_limit, e->known ? (e->kinds ? kinds : "none (dormant)") : "?",
               (int)i == base ? "  (baseline)" : "");
    }
    model_windows w;
    if (model_windows_judge(r, &w)) {   /* periodic windows: the model's sentence */
        char line[400];
        model_windows_line(&w, line, sizeof line);
        printf("  windows: ");
        print_safe_str(line);
        putchar('\n');
        char lossy[8][200];   /* the windows that lost records: as check says */
        size_t more, n = model_windows_lossy_lines(r, lossy, 8, &more);
        for (size_t i = 0; i < n; i++)
            printf("  %s\n", lossy[i]);
        if (more)
            printf("  ... %zu more windows with a loss\n", more);
    }
    /* what each epoch's scope was (lazy attach, device scope): the model's words */
    for (size_t i = 0; i < r->nepochs; i++) {
        char lines[8][200];
        if (!r->epochs[i].known)
            continue;
        size_t n = model_scope_lines(&r->epochs[i].row, s->capture, lines, 8);
        for (size_t j = 0; j < n; j++) {
            printf("  epoch %u: ", r->epochs[i].id);
            print_safe_str(lines[j]);
            putchar('\n');
        }
    }
}

/* Records and losses per kind, then per device. */
static void report_kinds(const model_summary *s, const model_facts *r)
{
    printf("\nRecords and losses per kind (%" PRIu64 " s of health rows)\n", r->rows);
    printf("  %-9s %14s %12s %12s %12s\n", "KIND", "RECORDS", "AVG/S", "PEAK/S", "LOST");
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++) {
        if (!s->records_by_kind[k] && !r->kind_loss[k] && !r->kind_loss_est[k])
            continue;
        printf("  %-9s %14" PRIu64 " %12.0f %12" PRIu64, cupstore_kind_name(k),
               s->records_by_kind[k], rate(s->records_by_kind[k], r->rows), r->peak_kind[k]);
        if (r->kind_loss[k] && r->kind_loss_est[k])
            /* an exact class (zero_ts, queue_overflow) and a share of the
             * CUPTI drops: both, or the rows would not add up to "all" */
            printf(" %11" PRIu64 "~ (%" PRIu64 " exact + %" PRIu64 " estimate)\n",
                   r->kind_loss[k] + r->kind_loss_est[k], r->kind_loss[k], r->kind_loss_est[k]);
        else if (r->kind_loss[k])
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
}

/* CUDA graph launches per graph id (the graph kind's records): count and
 * durations.  Nothing when the session has no graph record. */
static void report_graphs(const model_graphs *g)
{
    if (!g->n)
        return;
    printf("\nGraph launches per graph id (%" PRIu64 " launches; durations in us, "
           "percentiles within 1/128)\n", g->launches);
    printf("  %10s %10s %12s %10s %10s %10s %10s\n", "GRAPH", "LAUNCHES", "TOTAL MS", "P50",
           "P90", "P99", "MAX");
    for (size_t i = 0; i < g->n; i++) {
        const model_graph_stat *x = &g->g[i];
        printf("  %10" PRIu32 " %10" PRIu64 " %12.3f %10.1f %10.1f %10.1f %10.1f", x->graph_id,
               x->count, (double)x->total_ns / 1e6, (double)x->p50_ns / 1e3,
               (double)x->p90_ns / 1e3, (double)x->p99_ns / 1e3, (double)x->max_ns / 1e3);
        if (x->timed < x->count)
            printf("  (%" PRIu64 " without times)", x->count - x->timed);
        putchar('\n');
    }
}

/* The graph launches of the session's records, read only when the
 * summary counted graph records (the scan reads every record). */
static int read_graphs(cupstore_txn *txn, const model_summary *s, model_graphs *g)
{
    memset(g, 0, sizeof *g);
    if (!s->records_by_kind[CUPSTORE_KIND_GRAPH])
        return 0;
    return model_graphs_read(txn, 0, UINT64_MAX, g);
}

/* Losses by class, with the estimates and the bounds beside. */
static void report_losses(const model_summary *s)
{
    printf("\nLosses by class\n");
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++) {
        printf("  %-15s %12" PRIu64 "  %s\n", cupstore_loss_name(l), s->loss[l],
               cupstore_loss_describe(l));
        if (s->loss_estimate[l])
            printf("  %-15s %11" PRIu64 "~  more, estimated (the shared discard buffer, "
                   "never read)\n", "", s->loss_estimate[l]);
        if (s->loss_bound[l])
            printf("  %-15s %11" PRIu64 "+  more at least, a lower bound (%" PRIu64 " buffers "
                   "%s)\n", "", s->loss_bound[l], s->buffers_unreturned,
                   l == CUPSTORE_LOSS_TAIL ? "CUPTI still held when the final flush gave up"
                                           : "handed to CUPTI never came back");
        if (s->loss_at_most[l])
            printf("  %-15s %11s?  more, an unknown number up to %" PRIu64 " (the capacity of "
                   "the %" PRIu64 " buffers CUPTI still held when the final flush gave up)\n",
                   "", "", s->loss_at_most[l] - s->loss_bound[l], s->buffers_unreturned);
    }
}

/* The launch ledger (--ledger): every launch matched to its records. */
static void report_ledger(cupstore_txn *txn)
{
    model_ledger l;
    if (model_ledger_read(txn, &l) != 0 || !l.present)
        return;
    printf("\nLaunch ledger (every kernel, copy, set and graph launched, matched to its record)\n");
    for (unsigned k = 0; k < MODEL_LEDGER_KINDS; k++)
        if (k != 3 || l.expected[k] || l.matched[k] || l.orphan[k])   /* graph: when traced */
            printf("  %s: %" PRIu64 " launched, %" PRIu64 " arrived, %" PRIu64 " missing (%" PRIu64
                   " unrecorded), %" PRIu64 " orphans\n", model_ledger_kind_name(k),
                   l.expected[k], l.matched[k], l.missing[k], l.unrecorded[k], l.orphan[k]);
    for (unsigned i = 0; i < l.nstreams; i++) {
        char line[400];
        model_ledger_hole_text(&l.stream[i], line, sizeof line);
        printf("  %s\n", line);
    }
    for (unsigned i = 0; i < l.nseconds; i++) {
        char t[40], what[160] = "";
        size_t n = 0;
        for (unsigned k = 0; k < MODEL_LEDGER_KINDS; k++)
            if (l.second[i].missing[k] && n < sizeof what)
                n += (size_t)snprintf(what + n, sizeof what - n, "%s%" PRIu64 " %s", n ? ", " : "",
                                      l.second[i].missing[k], model_ledger_kind_name(k));
        model_format_second(l.second[i].second, t, sizeof t);
        printf("  launched in %s: %s records missing\n", t, what);
    }
    if (l.seconds_more)
        printf("  launched in %" PRIu64 " more seconds: records missing (cuptop export marks "
               "each)\n", l.seconds_more);
    if (l.ambiguous || l.capturing || l.overrun)
        printf("  not judged: %" PRIu64 " launches a kind switch overlapped, %" PRIu64
               " into capturing streams; %" PRIu64 " launches overwritten in the window\n",
               l.ambiguous, l.capturing, l.overrun);
    if (l.unknowable)
        printf("  not judged: %" PRIu64 " graph launches whose nodes were not counted (graphs "
               "instantiated before the agent attached, or with conditional nodes): their records "
               "are matched, never called missing\n", l.unknowable);
    uint64_t orphans = l.orphan[0] + l.orphan[1] + l.orphan[2];
    if (orphans)
        printf("  orphans: records of launches the ledger does not cover (made before it "
               "began, or overwritten in its window)\n");
    if (l.partial) {
        char line[320];
        model_ledger_partial_text(&l, line, sizeof line);
        printf("  %s\n", line);
    } else if (!l.exact && (l.unrecorded[0] || l.unrecorded[1] || l.unrecorded[2])) {
        printf("  unrecorded is a lower bound here: other loss classes counted records too\n");
    }
}

/* Buffers, pool, queue, latencies and CUPTI's overhead records. */
static void report_buffers(const model_facts *r)
{
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
    for (unsigned i = 0; i < MODEL_OVERHEAD_TYPES; i++)
        any_oh |= r->overhead[i] != 0;
    if (any_oh) {
        printf("  overhead ");
        for (unsigned i = 0; i < MODEL_OVERHEAD_TYPES; i++)
            if (r->overhead[i])
                printf(" %s %" PRIu64, cupstore_overhead_name(i), r->overhead[i]);
        putchar('\n');
    }
}

/* The longest loss window. */
static void report_longest(const model_facts *r)
{
    char a[32], b[32];
    printf("\nLongest loss window\n");
    if (!r->longest.seconds) {
        printf("  none: no second with a loss\n");
    } else {
        model_format_second(r->longest.first_s, a, sizeof a);
        model_format_second(r->longest.first_s + r->longest.seconds - 1, b, sizeof b);
        printf("  %" PRIu64 " s from %s to %s, %" PRIu64 " records lost (", r->longest.seconds,
               a, b, r->longest.lost);
        bool first = true;
        for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
            if (r->longest.by_class[l]) {
                printf("%s%s %" PRIu64, first ? "" : ", ", cupstore_loss_name(l),
                       r->longest.by_class[l]);
                first = false;
            }
        printf("); %" PRIu64 " loss windows, %" PRIu64 " seconds with loss in all\n",
               r->windows, r->loss_seconds);
    }
}

/* The stop protocol: the final status (f; NULL when there is none) and
 * its steps, or why there is none yet.  0 or a store error code. */
static int report_stop(cupstore_txn *txn, const model_summary *s, cupstore_final *f)
{
    printf("\nStop protocol\n");
    if (f) {
        printf("  exit path %s (detail %d), protocol %s, final flush %s, tail lost ",
               cupstore_exit_name(f->exit_path), (int)f->exit_detail,
               f->protocol_complete ? "complete" : "INCOMPLETE", f->flush_ok ? "ok" : "FAILED");
        /* the tail the final status counted, or more: records the
         * consumer counted as tail after the final status was written
         * (its drain ran past the stop's) are in the loss rows, which the
         * model sums, so the line agrees with the class table */
        if (s->loss[CUPSTORE_LOSS_TAIL] > f->tail_lost)
            f->tail_lost = s->loss[CUPSTORE_LOSS_TAIL];
        /* a flush that did not finish never reads as "tail lost 0" */
        if (f->tail_bound)
            printf("at least %" PRIu64 " (a lower bound: %" PRIu64 " counted, %" PRIu64
                   " more in the buffers CUPTI still held)\n", f->tail_lost + f->tail_bound,
                   f->tail_lost, f->tail_bound);
        else if (!f->flush_ok && f->buffers_outstanding && s->loss_at_most[CUPSTORE_LOSS_TAIL])
            printf("%" PRIu64 " counted, and an unknown number (up to %" PRIu64 ") in the "
                   "buffers CUPTI still held\n", f->tail_lost,
                   s->loss_at_most[CUPSTORE_LOSS_TAIL]);
        else if (!f->flush_ok && f->buffers_outstanding)
            printf("%" PRIu64 " counted, and an unknown number in the buffers CUPTI still "
                   "held\n", f->tail_lost);
        else
            printf("%" PRIu64 "\n", f->tail_lost);
        if (f->buffers_outstanding)
            printf("  %" PRIu64 " buffers handed to CUPTI never came back (%s)\n",
                   f->buffers_outstanding, f->flush_ok ? "another CUPTI client took them"
                                                     : "held when the final flush gave up");
        if (f->aside)
            printf("  the store refused the final status (%" PRIu64 " write transactions "
                   "refused): read from the session's final.aside\n", f->store_refused);
        return cupstore_step_scan(txn, on_step, NULL);
    } else if (s->state == MODEL_STATE_CRASHED) {
        printf("  never ran: the process died (no final status, stale heartbeat)\n");
    } else if (s->state == MODEL_STATE_STOPPED || s->state == MODEL_STATE_NOT_RESPONDING) {
        printf("  not yet: the session has not ended (%s)\n",
               s->state == MODEL_STATE_STOPPED ? "its process is stopped" : "not responding");
    } else {
        printf("  not yet: the session is running\n");
    }
    return 0;
}

/* The agent's notes. */
static void report_notes(const model_summary *s)
{
    printf("\nNotes (from the agent)\n");
    if (!s->notes_total)
        printf("  none\n");
    for (size_t i = 0; i < s->nnotes; i++)
        cli_print_note(stdout, "  ", &s->notes[i]);
    if (s->notes_total > s->nnotes)
        printf("  ... and %" PRIu64 " more (only the first %d are shown)\n",
               s->notes_total - s->nnotes, MODEL_NOTES_MAX);
}

static int report(cupstore_env *env, model_summary *s, char **cause)
{
    model_facts facts, *r = &facts;
    cupstore_txn *txn;
    cupstore_final f;
    int rc;
    if ((rc = model_facts_read(env, 0, UINT64_MAX, r, cause)) != 0)
        return rc;
    if ((rc = cupstore_txn_begin(env, false, &txn)) != 0) {
        model_facts_free(r);
        return rc;
    }
    model_graphs graphs;
    if ((rc = read_graphs(txn, s, &graphs)) != 0) {
        cupstore_txn_abort(txn);
        model_facts_free(r);
        if (asprintf(cause, "%s: reading its graph records: %s", s->id, model_strerror(rc)) < 0)
            *cause = NULL;
        return rc;
    }
    bool have_final = cupstore_final_get(txn, &f) == 0;
    report_session(txn, s);
    report_epochs(s, r);
    report_kinds(s, r);
    report_graphs(&graphs);
    model_graphs_free(&graphs);
    report_losses(s);
    report_ledger(txn);
    report_buffers(r);
    report_longest(r);
    rc = report_stop(txn, s, have_final ? &f : NULL);
    if (rc == 0)
        report_notes(s);
    cupstore_txn_abort(txn);
    if (rc == 0)
        rc = advise(s, r);
    model_facts_free(r);
    return rc;
}

/* report --json: the summary's members (sessions --json) and "graphs". */
static int report_json(const char *cmd, cupstore_env *env, const model_summary *s, char **cause)
{
    cupstore_txn *txn;
    model_graphs g;
    xout o;
    int rc = cupstore_txn_begin(env, false, &txn);
    if (rc)
        return rc;
    rc = read_graphs(txn, s, &g);
    cupstore_txn_abort(txn);
    if (rc) {
        if (asprintf(cause, "%s: reading its graph records: %s", s->id, model_strerror(rc)) < 0)
            *cause = NULL;
        return rc;
    }
    if ((rc = cli_xout_begin(cmd, &o)) != 0) {
        model_graphs_free(&g);
        return rc;
    }
    sessions_json_fields(&o, s);
    xout_printf(&o, ",\"graphs\":{\"launches\":%" PRIu64 ",\"percentile_relative_error\":%.6g"
                    ",\"by_id\":[", g.launches, MODEL_CMP_REL_ERROR);
    for (size_t i = 0; i < g.n; i++) {
        const model_graph_stat *x = &g.g[i];
        xout_printf(&o, "%s{\"graph_id\":%" PRIu32 ",\"count\":%" PRIu64 ",\"timed\":%" PRIu64
                        ",\"total_ns\":%" PRIu64 ",\"min_ns\":%" PRIu64 ",\"p50_ns\":%" PRIu64
                        ",\"p90_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64 "}",
                    i ? "," : "", x->graph_id, x->count, x->timed, x->total_ns, x->min_ns,
                    x->p50_ns, x->p90_ns, x->p99_ns, x->max_ns);
    }
    xout_puts(&o, "]}}\n");
    model_graphs_free(&g);
    return cli_xout_end(&o);
}

int cmd_report(int argc, char **argv)
{
    struct option longopts[CLI_OPTS_MAX];
    const char *cmd = argv[0], *store = NULL;
    bool json = false;
    int c;
    cli_opts_begin(&cli_cmd_report, longopts);
    while ((c = getopt_long(argc, argv, cli_cmd_report.shortopts, longopts, NULL)) != -1) {
        switch (c) {
        case 's': store = optarg; break;
        case 'j': json = true; break;
        case 'h': usage(stdout); return CUPTOP_EXIT_OK;
        default:
            return cli_bad_option(cmd, argv);
        }
    }
    if (optind + 1 != argc)
        return cli_one_session(cmd, argc, argv);

    cupstore_env *env;
    model_summary s;
    int rc = cli_store_session_open(cmd, store, argv[optind], CUPSTORE_RDONLY, &env);
    if (rc)
        return rc;
    char *cause = NULL;
    if ((rc = model_summarize(env, 0, UINT64_MAX, &s, &cause)) != 0) {
        cli_model_error(cmd, argv[optind], rc, cause);
    } else if ((rc = json ? report_json(cmd, env, &s, &cause) : report(env, &s, &cause)) != 0) {
        fflush(stdout);
        if (cause)   /* "ID: what failed" */
            cli_error(cmd, "%s", cause);
        else
            cli_error(cmd, "session %s: %s", argv[optind], cli_open_error(rc));
        free(cause);
    } else {
        fflush(stdout);
    }
    int status = rc ? CUPTOP_EXIT_USAGE : s.complete ? CUPTOP_EXIT_OK : CUPTOP_EXIT_NO;
    model_summary_free(&s);
    cupstore_env_close(env);
    return status;
}
