/*
 * cmd_sessions.c - `cuptop sessions`: one line per session (or a JSON
 * array) with id, pid, command, start and end, state, records per kind,
 * every loss class and the verdict.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_opts.h"
#include "cupstore.h"
#include "cuptop.h"
#include "export.h"
#include "model.h"

/* ,"NAME":{"CLASS":N,...} with the classes that are not 0; nothing at all
 * when every one is 0, unless always (then {}). */
static void json_loss_map(xout *o, const char *name, const uint64_t *v, bool always)
{
    bool any = false;
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
        any |= v[l] != 0;
    if (!any && !always)
        return;
    xout_printf(o, ",\"%s\":{", name);
    bool first = true;
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
        if (v[l]) {
            xout_printf(o, "%s\"%s\":%" PRIu64, first ? "" : ",", cupstore_loss_name(l), v[l]);
            first = false;
        }
    xout_puts(o, "}");
}

/* sessions' options: parsing and --help (cli_opts.h). */
const cli_cmd cli_cmd_sessions = {
    .name = "sessions",
    .shortopts = "+h",
    .column = 14,
    .opts = (const cli_opt[]){
        {"job", "JOB", 'J',
         "only the sessions of job JOB (the processes of one cuptop run;\n"
         "JOB \"-\" in the listing: the session is a job of its own, its\n"
         "id the session's)\n", NULL},
        {"store", "DIR", 's',
         "the store to list (default $CUPTOP_STORE, then\n"
         "~/.local/state/cuptop); again for more stores, or a\n"
         "directory of stores gathered from many hosts (HOST/ each)\n", NULL},
        {"json", NULL, 'j', NULL, NULL},
        {"help", NULL, 'h', NULL, NULL},
        {NULL, NULL, 0, NULL, NULL},
    },
};

static void usage(FILE *f)
{
    fputs("usage: cuptop sessions [--store DIR]... [--job JOB] [--json]\n\n"
          "List the sessions in a store, oldest first: id, pid, state, start (UTC),\n"
          "duration, records, losses, verdict, job, rank and command.  --json prints a\n"
          "JSON array with records per kind and device, every loss class (also per\n"
          "device), the job and rank, the reasons and the agent's notes.  Several\n"
          "stores (--store again, or a directory of stores) are listed store by store,\n"
          "each session with its store (a STORE column; \"store\" in JSON).\n",
          f);
    cli_opts_help(&cli_cmd_sessions, f);
    fputs("Exit status: 0, or 2 when a store (or a session in one) cannot be read, or\n"
          "no session belongs to JOB.\n",
          f);
}

/* sessions --json (and check --json), records: the kinds enabled, the totals, per kind and per device. */
static void json_records(xout *o, const model_summary *s)
{
    char kinds[160];
    cupstore_kinds_format(s->kinds_enabled, kinds, sizeof kinds);
    xout_printf(o, ",\"kinds_enabled\":\"%s\",\"epoch\":%u,\"records\":%" PRIu64
                   ",\"records_per_s\":%.0f,\"records_per_s_is\":\"%s\",\"records_by_kind\":{",
                kinds, s->epoch, s->records_total, s->records_per_s,
                s->records_per_s_mean ? "mean" : "last_second");
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
        xout_printf(o, "%s\"%s\":%" PRIu64, k ? "," : "", cupstore_kind_name(k),
                    s->records_by_kind[k]);
    xout_puts(o, "},\"records_by_device\":{");
    bool first = true;
    for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX; d++) {
        if (!(s->device_mask & (1u << d)))
            continue;
        xout_printf(o, "%s\"%u\":%" PRIu64, first ? "" : ",", d, s->records_by_device[d]);
        first = false;
    }
}

/* sessions --json (and check --json), losses: per class, the total, estimates and bounds. */
static void json_losses(xout *o, const model_summary *s)
{
    xout_puts(o, "},\"loss\":{");
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
        xout_printf(o, "%s\"%s\":%" PRIu64, l ? "," : "", cupstore_loss_name(l), s->loss[l]);
    xout_printf(o, "},\"loss_total\":%" PRIu64, s->loss_total);
    /* beyond the counts: estimated (the shared discard buffer); where
     * buffers never came back (invariant 12), a lower bound and, for a
     * loss known to exist but not its size, an upper bound (27.2) */
    json_loss_map(o, "loss_estimate", s->loss_estimate, false);
    if (s->buffers_unreturned) {
        json_loss_map(o, "loss_bound", s->loss_bound, true);
        json_loss_map(o, "loss_at_most", s->loss_at_most, true);
        xout_printf(o, ",\"buffers_unreturned\":%" PRIu64, s->buffers_unreturned);
    }
    if (s->final_aside)
        xout_puts(o, ",\"final_aside\":true");
}

/* sessions --json (and check --json), the verdict's reasons and the agent's notes. */
static void json_reasons(xout *o, const model_summary *s)
{
    xout_printf(o, ",\"buffers_completed\":%" PRIu64 ",\"buffers_consumed\":%" PRIu64
                   ",\"reasons\":[", s->buf_completed, s->buf_consumed);
    for (size_t i = 0; i < s->nreasons; i++) {
        const model_reason *r = &s->reasons[i];
        xout_printf(o, "%s{\"class\":\"%s\",\"count\":%" PRIu64 ",\"first_second\":%" PRIu64
                       ",\"last_second\":%" PRIu64 ",\"seconds_affected\":%" PRIu64 ",\"text\":",
                    i ? "," : "", model_reason_name(r->reason), r->count, r->first_second,
                    r->last_second, r->seconds_affected);
        xout_json_str(o, r->text, strlen(r->text));
        xout_putc(o, '}');
    }
    /* The agent's notes: raw text, JSON-escaped (any bytes are safe). */
    xout_puts(o, "],\"notes\":[");
    for (size_t i = 0; i < s->nnotes; i++) {
        const model_note *n = &s->notes[i];
        xout_printf(o, "%s{\"level\":\"%s\",\"time_ns\":%" PRIu64 ",\"text\":", i ? "," : "",
                    model_note_level_name(n->level), n->time_ns);
        xout_json_str(o, n->text, strlen(n->text));
        xout_putc(o, '}');
    }
    xout_printf(o, "],\"notes_total\":%" PRIu64, s->notes_total);
}

/* sessions --json (and check --json), the job, rank and world size. */
static void json_job(xout *o, const model_summary *s)
{
    xout_puts(o, ",\"job\":");
    xout_json_str(o, s->job, strlen(s->job));
    xout_printf(o, ",\"job_own\":%s,\"rank\":", s->job_own ? "true" : "false");
    if (s->rank >= 0) {
        xout_printf(o, "%d,\"rank_source\":", s->rank);
        xout_json_str(o, s->rank_source, strlen(s->rank_source));
    } else {
        xout_puts(o, "null,\"rank_source\":null");
    }
    if (s->world_size > 0)
        xout_printf(o, ",\"world_size\":%d", s->world_size);
    else
        xout_puts(o, ",\"world_size\":null");
}

/* sessions --json (and check --json), losses per device (and of no device). */
static void json_loss_by_device(xout *o, const model_summary *s)
{
    xout_puts(o, ",\"loss_by_device\":{");
    bool first = true;
    for (unsigned d = 0; d <= MODEL_DEVICE_NONE; d++) {
        if (!model_device_listed(s, d))
            continue;
        if (d == MODEL_DEVICE_NONE)
            xout_printf(o, "%s\"none\":{", first ? "" : ",");
        else
            xout_printf(o, "%s\"%u\":{", first ? "" : ",", d);
        for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
            xout_printf(o, "%s\"%s\":%" PRIu64, l ? "," : "", cupstore_loss_name(l),
                        s->loss_by_device[d][l]);
        xout_putc(o, '}');
        first = false;
    }
    xout_putc(o, '}');
}

/* sessions --json (and check --json), a stop signal the application survived. */
static void json_continued(xout *o, const model_summary *s)
{
    /* a stop signal the application survived: the session covers the run
     * up to it (model_scope_text) */
    if (s->continued_signal) {
        char line[400];
        model_scope_text(s, line, sizeof line);
        xout_printf(o, ",\"continued_after_signal\":{\"signal\":%d,\"at_ns\":%" PRIu64
                       ",\"process_exit_ns\":",
                    s->continued_signal, s->continued_ns);
        if (s->process_exit_ns)
            xout_printf(o, "%" PRIu64, s->process_exit_ns);
        else
            xout_puts(o, "null");
        xout_puts(o, ",\"text\":");
        xout_json_str(o, line, strlen(line));
        xout_putc(o, '}');
    }   /* (absent otherwise: the common case keeps its shape) */
}

void sessions_json_fields(xout *o, const model_summary *s)
{
    xout_puts(o, "{\"id\":");
    xout_json_str(o, s->id, strlen(s->id));
    if (s->store) {   /* several stores: ids are unique within one only */
        xout_puts(o, ",\"store\":");
        xout_json_str(o, s->store, strlen(s->store));
    }
    xout_printf(o, ",\"pid\":%d,\"host\":", s->pid);
    xout_json_str(o, s->host, strlen(s->host));
    xout_puts(o, ",\"command\":");
    xout_json_str(o, s->cmdline, strlen(s->cmdline));
    xout_printf(o, ",\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64 ",\"heartbeat_ns\":%" PRIu64,
                s->start_ns, s->end_ns, s->heartbeat_ns);
    xout_printf(o, ",\"state\":\"%s\",\"verdict\":\"%s\",\"complete\":%s,\"count_only\":%s",
                model_state_name(s->state), model_verdict_name(s),
                s->complete ? "true" : "false", s->count_only ? "true" : "false");
    if (s->state == MODEL_STATE_STOPPED || s->state == MODEL_STATE_NOT_RESPONDING) {
        /* what the lookup found of a process that writes no heartbeat */
        if (s->not_visible || !s->proc_state)
            xout_puts(o, ",\"process\":{\"visible\":false}");
        else
            xout_printf(o, ",\"process\":{\"visible\":true,\"state\":\"%c\",\"pid_here\":%d}",
                        s->proc_state > ' ' && s->proc_state < 127 && s->proc_state != '"' &&
                                s->proc_state != '\\'
                            ? s->proc_state
                            : '?',
                        s->pid_here);
    }
    json_records(o, s);
    json_losses(o, s);
    json_reasons(o, s);
    json_job(o, s);
    json_loss_by_device(o, s);
    json_continued(o, s);
    prov_json(o, s->prov, s->device_mask);
}

void sessions_json(xout *o, const model_summary *s)
{
    sessions_json_fields(o, s);
    xout_putc(o, '}');
}

static void fmt_duration(uint64_t ns, char *buf, size_t len)
{
    uint64_t s = ns / 1000000000u;
    if (s >= 3600)
        snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s / 60 % 60);
    else if (s >= 60)
        snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
    else
        snprintf(buf, len, "%" PRIu64 "s", s);
}

static void fmt_count(uint64_t v, char *buf, size_t len)
{
    if (v >= 10000000000ull)
        snprintf(buf, len, "%" PRIu64 "G", v / UINT64_C(1000000000));
    else if (v >= 10000000)
        snprintf(buf, len, "%" PRIu64 "M", v / 1000000);
    else if (v >= 100000)
        snprintf(buf, len, "%" PRIu64 "k", v / 1000);
    else
        snprintf(buf, len, "%" PRIu64, v);
}

static void print_line(const model_summary *s, int store_w)
{
    if (s->store) {
        char st[128];
        model_escape(st, sizeof st, s->store, strlen(s->store));
        printf("%-*s ", store_w, st);
    }
    char start[32], dur[24], rec[24], loss[24], cmd[120];
    model_format_second(s->start_ns / 1000000000u, start, sizeof start);
    fmt_duration(s->end_ns > s->start_ns ? s->end_ns - s->start_ns : 0, dur, sizeof dur);
    fmt_count(s->records_total, rec, sizeof rec);
    fmt_count(s->loss_total, loss, sizeof loss);
    model_escape(cmd, sizeof cmd, s->cmdline, strlen(s->cmdline));
    char sid[40], rank[16] = "-";
    model_escape(sid, sizeof sid, s->id, strlen(s->id));
    if (s->rank >= 0)
        snprintf(rank, sizeof rank, "%d", s->rank);
    printf("%-24s %7d %-8s %-20s %7s %8s %8s %-10s %-25s %4s %s\n", sid, s->pid,
           model_state_name(s->state), start, dur, rec, loss,
           s->state == MODEL_STATE_RUNNING && s->complete ? "ok so far" : model_verdict_name(s),
           s->job_own ? "-" : s->job, rank, cmd);
}

/* sessions' command line. */
struct sessions_args {
    const char *cmd, *job;
    cli_stores stores;
    bool json;
    int store_w;                /* several stores: the STORE column's width */
};

/* Parse and check the options: -1 to go on, else the exit status (the
 * misuse said on stderr, or --help printed). */
static int sessions_parse(int argc, char **argv, struct sessions_args *a)
{
    struct option longopts[CLI_OPTS_MAX];
    int c;

    memset(a, 0, sizeof *a);
    a->cmd = argv[0];
    cli_opts_begin(&cli_cmd_sessions, longopts);
    while ((c = getopt_long(argc, argv, cli_cmd_sessions.shortopts, longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (cli_stores_arg(a->cmd, &a->stores, optarg) >= 0)
                return CUPTOP_EXIT_USAGE;
            break;
        case 'j': a->json = true; break;
        case 'J': a->job = optarg; break;
        case 'h': usage(stdout); return CUPTOP_EXIT_OK;
        default:
            return cli_bad_option(a->cmd, argv);
        }
    }
    if (optind < argc)
        return cli_usage_error(a->cmd, "unexpected argument '%s'", argv[optind]);
    if (a->job && !cupstore_job_valid(a->job))
        return cli_usage_error(a->cmd, "--job: '%s' is not a job id", a->job);
    return -1;
}

/* One line (or JSON object) per session of ids (those of --job only), o
 * with --json; *written counts them.  The exit status so far. */
static int sessions_list(const struct sessions_args *a, const char *dir, const char *store,
                         char **ids, size_t n, xout *o, size_t *written)
{
    int status = CUPTOP_EXIT_OK;
    for (size_t i = 0; i < n; i++) {
        model_summary s;
        char *cause = NULL;
        int rc = model_summarize_id(dir, ids[i], 0, UINT64_MAX, &s, &cause);
        if (rc) {
            if (store && cause)   /* "session ID in DIR: ..." names the store */
                cli_error(a->cmd, "%s", cause);
            else
                cli_model_error(a->cmd, ids[i], rc, cause);
            if (store)
                free(cause);
            status = CUPTOP_EXIT_USAGE;
            continue;
        }
        if (a->job && strcmp(s.job, a->job) != 0) {
            model_summary_free(&s);
            continue;
        }
        s.store = store;
        if (a->json) {
            xout_puts(o, *written ? ",\n" : "\n");
            sessions_json(o, &s);
        } else {
            if (!*written && store)
                printf("%-*s ", a->store_w, "STORE");
            if (!*written)
                printf("%-24s %7s %-8s %-20s %7s %8s %8s %-10s %-25s %4s %s\n", "SESSION",
                       "PID", "STATE", "START (UTC)", "LENGTH", "RECORDS", "LOST", "VERDICT",
                       "JOB", "RANK", "COMMAND");
            print_line(&s, a->store_w);
        }
        ++*written;
        model_summary_free(&s);
    }
    return status;
}

/* The sessions of one store, as ever: the store named in its errors. */
static int sessions_one(const struct sessions_args *a, const char *dir)
{
    char **ids = NULL;
    size_t n = 0;
    int rc = cupstore_dir_sessions(dir, &ids, &n);
    if (rc)
        return cli_store_error(a->cmd, dir, rc);
    xout o;
    if (a->json) {
        if (cli_xout_begin(a->cmd, &o) != 0) {
            cupstore_ids_free(ids, n);
            return CUPTOP_EXIT_USAGE;
        }
        xout_putc(&o, '[');
    } else if (!n && !a->job) {
        printf("no sessions in %s\n", dir);
    }
    size_t written = 0;
    int status = sessions_list(a, dir, NULL, ids, n, a->json ? &o : NULL, &written);
    if (a->json) {
        xout_puts(&o, "\n]\n");
        if (cli_xout_end(&o) != 0)
            status = CUPTOP_EXIT_USAGE;
    }
    if (!a->json && !a->job)
        (void)cli_pending_print(dir);   /* attached, waiting for CUDA: no session yet */
    if (a->job && !written && status == CUPTOP_EXIT_OK) {
        cli_error(a->cmd, "no session of job %s in %s", a->job, dir);
        status = CUPTOP_EXIT_USAGE;
    }
    cupstore_ids_free(ids, n);
    return status;
}

/* The sessions of several stores, store by store, each with its store; a
 * store that cannot be listed is named and the others are listed (bad:
 * those cli_stores_open left out). */
static int sessions_several(struct sessions_args *a, const model_stores *ss, size_t bad)
{
    int status = bad ? CUPTOP_EXIT_USAGE : CUPTOP_EXIT_OK;
    size_t written = 0;
    xout o;
    a->store_w = 5;
    for (size_t i = 0; i < ss->n; i++) {
        int w = (int)strlen(ss->v[i].label);
        if (w > a->store_w)
            a->store_w = w < 40 ? w : 40;
    }
    if (a->json) {
        if (cli_xout_begin(a->cmd, &o) != 0)
            return CUPTOP_EXIT_USAGE;
        xout_putc(&o, '[');
    }
    for (size_t i = 0; i < ss->n; i++) {
        char **ids = NULL;
        size_t n = 0;
        int rc = cupstore_dir_sessions(ss->v[i].dir, &ids, &n);
        if (rc) {
            status = cli_store_error(a->cmd, ss->v[i].dir, rc);
            continue;
        }
        rc = sessions_list(a, ss->v[i].dir, ss->v[i].label, ids, n, a->json ? &o : NULL,
                           &written);
        if (rc != CUPTOP_EXIT_OK)
            status = rc;
        cupstore_ids_free(ids, n);
    }
    if (a->json) {
        xout_puts(&o, "\n]\n");
        if (cli_xout_end(&o) != 0)
            status = CUPTOP_EXIT_USAGE;
    }
    if (a->job && !written && status == CUPTOP_EXIT_OK) {
        cli_error(a->cmd, "no session of job %s in any of the %zu stores", a->job, ss->n);
        status = CUPTOP_EXIT_USAGE;
    }
    return status;
}

int cmd_sessions(int argc, char **argv)
{
    struct sessions_args a;
    model_stores ss;
    size_t bad;
    int status = sessions_parse(argc, argv, &a);
    if (status < 0 && (status = cli_stores_open(a.cmd, &a.stores, &ss, &bad)) == 0) {
        status = ss.several ? sessions_several(&a, &ss, bad) : sessions_one(&a, ss.v[0].dir);
        model_stores_free(&ss);
    }
    cli_stores_free(&a.stores);
    return status;
}
