/*
 * cmd_check.c - `cuptop check`: the acceptance criteria as an exit status.
 * 0 when every session judged is COMPLETE; 1 when any is INCOMPLETE, each
 * reason listed with its loss class, count and the seconds affected; 2 for
 * usage errors, unknown sessions, empty or inverted windows and stores
 * that cannot be read.  A running session is judged on what has happened
 * so far and is said to be running.
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

#define CHECK_NOTES_MAX 8   /* notes shown under one verdict */

/* check's options: parsing and --help (cli_opts.h). */
const cli_cmd cli_cmd_check = {
    .name = "check",
    .shortopts = "h",
    .column = 17,
    .opts = (const cli_opt[]){
        {"all", NULL, 'a',
         "every session in the store\n", NULL},
        {"from", "T", 'f',
         "judge only this window (T: unix seconds, +N after the\n"
         "start, -N before the end, start, end, YYYY-mm-ddTHH:MM:SSZ)\n",
         "--from T --to T"},
        {"verify", NULL, 'v',
         "also read every stored record back (decoding each chunk)\n"
         "and compare the count with what the agent stored: records\n"
         "missing or unreadable make the session INCOMPLETE\n"
         "(store_damaged); ended sessions only, whole sessions\n", NULL},
        {"job", "JOB", 'J',
         "every process of job JOB (one cuptop run), each verdict\n"
         "listed by rank; the job is COMPLETE only if every process is\n"
         "(a crashed one makes it INCOMPLETE) and no rank below the\n"
         "world size a process named is missing\n", NULL},
        {"json", NULL, 'j',
         "a JSON array of verdicts (--job: one object for the job);\n"
         "each verdict's \"advice\" lists the model's recommendations\n"
         "([] when COMPLETE)\n", NULL},
        {"store", "DIR", 's', NULL, NULL},
        {"to", "T", 't', NULL, NULL},
        {"help", NULL, 'h', NULL, NULL},
        {NULL, NULL, 0, NULL, NULL},
    },
};

static void usage(FILE *f)
{
    fputs("usage: cuptop check [--store DIR] (SESSION... | --all)\n"
          "                    [--from T --to T | --verify] [--json]\n"
          "       cuptop check [--store DIR] --job JOB [--json]\n\n"
          "Judge sessions: COMPLETE only if every buffer CUPTI completed was consumed,\n"
          "every loss counter is zero, the stop protocol ran to the end and the final\n"
          "flush succeeded.  Each reason is listed with its loss class, count and the\n"
          "seconds affected, then the agent's warnings that explain them.  A running\n"
          "session is judged on what has happened so far.\n\n",
          f);
    cli_opts_help(&cli_cmd_check, f);
    fputs("\nA session with no data in the window is listed as NO DATA and not judged.\n\n"
          "Exit status: 0 all judged COMPLETE, 1 any INCOMPLETE, 2 usage error, unknown\n"
          "session, a window with no data in any session, an inverted window, or an\n"
          "unreadable store.\n",
          f);
}

/* Is the note's text already quoted in a reason (the model names the
 * detach reason itself)? */
static bool note_in_reasons(const model_summary *s, const model_note *n)
{
    char esc[4 * sizeof n->text];
    model_escape(esc, sizeof esc, n->text, strlen(n->text));
    for (size_t i = 0; i < s->nreasons; i++)
        if (*esc && strstr(s->reasons[i].text, esc))
            return true;
    return false;
}

/* Warnings and errors the agent noted explain an INCOMPLETE verdict: the
 * conflicting subscriber's name, why the agent stepped aside, a setting it
 * refused.  Info notes and notes already quoted in a reason are left to
 * cuptop report, and so are notes outside the window judged ([from_s,
 * to_s], unix seconds). */
static void print_notes(const model_summary *s, uint64_t from_s, uint64_t to_s)
{
    unsigned shown = 0, more = 0;
    for (size_t i = 0; i < s->nnotes; i++) {
        const model_note *n = &s->notes[i];
        uint64_t at = n->time_ns / 1000000000u;
        if (n->level < 1 || note_in_reasons(s, n) || at < from_s || at > to_s)
            continue;
        if (shown < CHECK_NOTES_MAX) {
            cli_print_note(stdout, "  note: ", n);
            shown++;
        } else {
            more++;
        }
    }
    if (more || s->notes_total > s->nnotes)
        printf("  note: more notes: cuptop report %s\n", s->id);
}

static void print_verdict(const model_summary *s, const char *window, uint64_t from_s,
                          uint64_t to_s, const model_advice *first)
{
    const char *v = model_verdict_name(s);
    char id[4 * sizeof s->id];
    model_escape(id, sizeof id, s->id, strlen(s->id));
    if (s->state == MODEL_STATE_RUNNING)
        printf("%s: %s so far (running; judged on what has happened so far)%s\n", id, v,
               window);
    else if (s->state == MODEL_STATE_STOPPED)
        printf("%s: %s so far (stopped: the process is there, not finished)%s\n", id, v,
               window);
    else if (s->state == MODEL_STATE_NOT_RESPONDING)
        printf("%s: %s so far (not responding%s: not finished)%s\n", id, v,
               s->not_visible ? ", process not visible here" : "", window);
    else if (s->state == MODEL_STATE_CRASHED)
        printf("%s: %s (crashed)%s\n", id, v, window);
    else
        printf("%s: %s%s\n", id, v, window);
    cli_print_attached(stdout, s);
    cli_print_scope(stdout, s);
    for (size_t i = 0; i < s->nreasons; i++) {
        fputs("  - ", stdout);
        fputs(s->reasons[i].text, stdout); /* made safe by the model */
        fputc('\n', stdout);
    }
    if (s->cupti_advice)
        printf("  what to do: %s\n", s->cupti_advice);
    if (!s->complete)
        print_notes(s, from_s, to_s);
    /* the model's first recommendation (cuptop report ranks them all) */
    /* the rerun setting once: a brief may already name it (the buffer
     * size's does, for the monitor's line) */
    if (first && first->setting[0] && first->value[0] && !strstr(first->brief, "(rerun: "))
        printf("  advice: %s (rerun: %s=%s)\n", first->brief, first->setting, first->value);
    else if (first)
        printf("  advice: %s\n", first->brief);
}

/* check --json: ,"advice":[...] - the model's recommendations, best first
 * ([] when none; null when they could not be worked out: failed); a field
 * that does not apply is null. */
static void advice_json(xout *o, const model_advice *adv, size_t n, bool failed)
{
    if (failed) {
        xout_puts(o, ",\"advice\":null");
        return;
    }
    xout_puts(o, ",\"advice\":[");
    for (size_t i = 0; i < n; i++) {
        const model_advice *a = &adv[i];
        const struct {
            const char *key, *v;
        } f[] = {
            {"brief", a->brief},       {"text", a->text},
            {"evidence", a->evidence}, {"setting", a->setting},
            {"value", a->value},       {"run_option", a->run_option},
            {"control", a->control},
        };
        xout_printf(o, "%s{\"code\":\"%s\"", i ? "," : "", model_advice_name(a->code));
        for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
            xout_printf(o, ",\"%s\":", f[k].key);
            if (f[k].v[0])
                xout_json_str(o, f[k].v, strlen(f[k].v));
            else
                xout_puts(o, "null");
        }
        xout_putc(o, '}');
    }
    xout_putc(o, ']');
}

/* One session's judgement, kept until everything is judged. */
struct check_item {
    model_summary whole, s;     /* the whole session; the window judged    */
    bool have_whole, have_s, no_data, verified, adv_failed;
    model_advice *adv;          /* the model's recommendations, best first */
    size_t nadv;                /*   (INCOMPLETE only; malloc'ed)          */
    uint64_t f, t;              /* window, unix seconds                    */
    uint64_t read_back;
    char window[128];
};

/* A session with no health row in the window: said so, not judged. */
static void print_no_data(xout *o, const model_summary *whole, const char *window,
                          uint64_t from_s, uint64_t to_s)
{
    char a[32], b[32];
    model_format_second(whole->start_ns / 1000000000u, a, sizeof a);
    model_format_second(whole->end_ns / 1000000000u, b, sizeof b);
    if (o) {
        xout_puts(o, "{\"id\":");
        xout_json_str(o, whole->id, strlen(whole->id));
        xout_printf(o, ",\"state\":\"%s\",\"verdict\":\"NO_DATA\",\"complete\":null,"
                       "\"no_data\":true,\"window_from_s\":%" PRIu64 ",\"window_to_s\":%" PRIu64
                       ",\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64 "}",
                    model_state_name(whole->state), from_s, to_s, whole->start_ns,
                    whole->end_ns);
        return;
    }
    char id[4 * sizeof whole->id];
    model_escape(id, sizeof id, whole->id, strlen(whole->id));
    printf("%s: NO DATA in the window%s (the session runs from %s to %s); not judged\n", id,
           window, a, b);
}

static void job_error(const char *id, int rc, char *cause, void *arg)
{
    cli_model_error(arg, id, rc, cause);
}

/* check --job: each process' verdict by rank, then the job's. */
static int check_job(const char *cmd, const char *dir, const char *jobid, bool json)
{
    model_job j;
    size_t unreadable = 0;
    int rc = model_job_read(dir, jobid, 0, UINT64_MAX, &j, &unreadable, job_error, (void *)cmd);
    if (rc == CUPSTORE_ENOTFOUND) {
        cli_error(cmd, "no session of job %s in %s", jobid, dir);
        return CUPTOP_EXIT_USAGE;
    }
    if (rc)
        return cli_store_error(cmd, dir, rc);
    int status = CUPTOP_EXIT_OK;
    if (json) {
        xout o;
        if (cli_xout_begin(cmd, &o) != 0) {
            model_job_free(&j);
            return CUPTOP_EXIT_USAGE;
        }
        xout_puts(&o, "{\"job\":");
        xout_json_str(&o, j.id, strlen(j.id));
        xout_printf(&o, ",\"state\":\"%s\",\"verdict\":\"%s\",\"complete\":%s,"
                        "\"processes\":%zu,\"incomplete\":%zu,\"crashed\":%zu,"
                        "\"running\":%zu,\"stalled\":%zu,\"skipped\":%zu,\"launchers\":%zu,"
                        "\"unreadable_sessions\":%zu,\"world_size\":",
                    model_state_name(j.state), j.complete ? "COMPLETE" : "INCOMPLETE",
                    j.complete ? "true" : "false", j.n, j.incomplete, j.crashed, j.running,
                    j.stalled, j.skipped, j.launchers, unreadable);
        if (j.world_size)
            xout_printf(&o, "%d", j.world_size);
        else
            xout_puts(&o, "null");
        xout_printf(&o, ",\"missing_ranks\":%zu,\"duplicate_rank\":%s,\"loss\":{", j.missing,
                    j.duplicate_rank ? "true" : "false");
        for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
            xout_printf(&o, "%s\"%s\":%" PRIu64, l ? "," : "", cupstore_loss_name(l), j.loss[l]);
        xout_printf(&o, "},\"loss_total\":%" PRIu64 ",\"records\":%" PRIu64 ",\"sessions\":[",
                    j.loss_total, j.records_total);
        for (size_t i = 0; i < j.n; i++) {
            xout_puts(&o, i ? ",\n" : "\n");
            sessions_json(&o, &j.procs[i]);
        }
        xout_puts(&o, "\n]}\n");
        if (cli_xout_end(&o) != 0)
            status = CUPTOP_EXIT_USAGE;
    } else {
        char id[4 * sizeof j.id];
        model_escape(id, sizeof id, j.id, strlen(j.id));
        printf("job %s: %zu process%s\n", id, j.n, j.n == 1 ? "" : "es");
        for (size_t i = 0; i < j.n; i++) {
            const model_summary *s = &j.procs[i];
            if (s->rank >= 0)
                printf("rank %d (pid %d) ", s->rank, s->pid);
            else if (s->job_launcher)
                printf("launcher (pid %d) ", s->pid);
            else
                printf("no rank (pid %d) ", s->pid);
            print_verdict(s, "", 0, UINT64_MAX, NULL);
        }
        printf("job %s: %s", id, j.complete ? "COMPLETE" : "INCOMPLETE");
        if (j.state == MODEL_STATE_RUNNING && j.stalled)
            printf(" so far (%zu running, %zu of them stopped or not responding)", j.running,
                   j.stalled);
        else if (j.state == MODEL_STATE_RUNNING)
            printf(" so far (%zu running)", j.running);
        printf(" (%zu process%s", j.n, j.n == 1 ? "" : "es");
        if (j.incomplete)
            printf(", %zu INCOMPLETE", j.incomplete);
        if (j.crashed)
            printf(", %zu crashed", j.crashed);
        if (j.skipped)
            printf(", %zu skipped", j.skipped);
        if (j.launchers)
            printf(", %zu launcher%s", j.launchers, j.launchers == 1 ? "" : "s");
        printf(", %" PRIu64 " records lost)\n", j.loss_total);
        if (j.missing)
            printf("  - %zu of %d ranks have no session (the first: rank %d): a process that "
                   "never started tracing, or whose session is gone\n",
                   j.missing, j.world_size, j.first_missing);
        if (j.duplicate_rank)
            printf("  note: two processes name the same rank (several launches in one job?)\n");
        if (unreadable)
            printf("  note: %zu session%s of the store could not be read and may belong to "
                   "the job\n", unreadable, unreadable == 1 ? "" : "s");
    }
    if (status == CUPTOP_EXIT_OK)
        status = unreadable ? CUPTOP_EXIT_USAGE : j.complete ? CUPTOP_EXIT_OK : CUPTOP_EXIT_NO;
    model_job_free(&j);
    return status;
}

/* What check reads of one session, opened once (model_session_read). */
struct check_read {
    struct check_item *it;
    const char *from, *to;      /* --from/--to, or NULL                    */
    bool verify;
    const char *bad_time;       /* out: the time that does not parse       */
    bool inverted;              /* out: --from is after --to               */
    int adv_rc;                 /* out: the advice could not be read       */
    char *adv_why;              /* out: and why (the caller prints, frees) */
};

/* The whole session (for its span), the window's judgement (or the whole
 * session read back with --verify) and, when INCOMPLETE, the advice.  A
 * window with no data keeps the whole session's summary only. */
static int check_read(cupstore_env *env, void *arg, char **cause)
{
    struct check_read *r = arg;
    struct check_item *it = r->it;
    int rc = model_summarize(env, 0, UINT64_MAX, &it->whole, cause);
    if (rc)
        return rc;
    it->have_whole = true;
    if (r->from) {
        uint64_t ss = it->whole.start_ns / 1000000000u, es = it->whole.end_ns / 1000000000u;
        if (model_parse_time(r->from, ss, es, &it->f) != 0 ||
            model_parse_time(r->to, ss, es, &it->t) != 0) {
            r->bad_time = model_parse_time(r->from, ss, es, &it->f) ? r->from : r->to;
            return 0;
        }
        if (it->f > it->t) {
            r->inverted = true;
            return 0;
        }
        char a[32], b[32];
        model_format_second(it->f, a, sizeof a);
        model_format_second(it->t, b, sizeof b);
        snprintf(it->window, sizeof it->window, " [window %s .. %s]", a, b);
    }
    rc = r->verify ? model_verify_whole(env, &it->s, &it->verified, &it->read_back, cause)
                   : model_summarize(env, it->f, it->t, &it->s, cause);
    if (rc)
        return rc;
    it->have_s = true;
    /* Nothing to judge in the window: said so, and the other sessions'
     * verdicts stand.  Keep only what will be printed: the window's
     * judgement, or the whole session's span for a window without data. */
    it->no_data = r->from && !it->s.seconds;
    if (it->no_data) {
        model_summary_free(&it->s);
        return 0;
    }
    model_summary_free(&it->whole);
    it->have_whole = false;
    if (!it->s.complete &&
        (r->adv_rc = model_advise_read(env, it->f, it->t, &it->s, &it->adv, &it->nadv,
                                       &r->adv_why)) != 0) {
        free(it->adv);   /* the facts could not be read: JSON says null, stderr why */
        it->adv = NULL;
        it->nadv = 0;
        it->adv_failed = true;
    }
    return 0;
}

int cmd_check(int argc, char **argv)
{
    struct option longopts[CLI_OPTS_MAX];
    const char *cmd = argv[0], *store = NULL, *from = NULL, *to = NULL, *job = NULL;
    bool all = false, json = false, verify = false;
    int c;

    cli_opts_begin(&cli_cmd_check, longopts);
    while ((c = getopt_long(argc, argv, cli_cmd_check.shortopts, longopts, NULL)) != -1) {
        switch (c) {
        case 's': store = optarg; break;
        case 'a': all = true; break;
        case 'f': from = optarg; break;
        case 't': to = optarg; break;
        case 'j': json = true; break;
        case 'v': verify = true; break;
        case 'J': job = optarg; break;
        case 'h': usage(stdout); return CUPTOP_EXIT_OK;
        default:
            return cli_bad_option(cmd, argv);
        }
    }
    if (job) {
        if (all || optind < argc)
            return cli_usage_error(cmd, "give --job, sessions or --all, not several");
        if (from || to || verify)
            return cli_usage_error(cmd, "--job judges whole sessions: not with --from/--to "
                                        "or --verify");
        if (!cupstore_job_valid(job))
            return cli_usage_error(cmd, "--job: '%s' is not a job id", job);
        char *jdir = cli_store_dir(cmd, store);
        if (!jdir)
            return CUPTOP_EXIT_USAGE;
        int st = check_job(cmd, jdir, job, json);
        free(jdir);
        return st;
    }
    if (all && optind < argc)
        return cli_usage_error(cmd, "give sessions or --all, not both");
    if (!all && optind >= argc)
        return cli_usage_error(cmd, "no session given (name sessions, or use --all)");
    if (!from != !to)
        return cli_usage_error(cmd, "--from and --to go together");
    if (verify && from)
        return cli_usage_error(cmd, "--verify reads whole sessions back: not with --from/--to");

    char *dir = cli_store_dir(cmd, store);
    char **ids = NULL;
    size_t n = 0;
    if (!dir)
        return CUPTOP_EXIT_USAGE;
    if (all) {
        int rc = cupstore_dir_sessions(dir, &ids, &n);
        if (rc) {
            rc = cli_store_error(cmd, dir, rc);
            free(dir);
            return rc;
        }
        if (!n) {
            cli_error(cmd, "no sessions in %s", dir);
            free(dir);
            return CUPTOP_EXIT_USAGE;
        }
    } else {
        n = (size_t)(argc - optind);
        ids = calloc(n, sizeof *ids);
        for (size_t i = 0; ids && i < n; i++)
            ids[i] = strdup(argv[optind + (int)i]);
    }

    /* Judge every session first, print after: when the window holds no data
     * in any of them, that is one usage error and nothing on stdout. */
    struct check_item *items = ids ? calloc(n ? n : 1, sizeof *items) : NULL;
    int status = CUPTOP_EXIT_OK;
    bool any_incomplete = false, any_error = !items;
    size_t judged = 0;
    for (size_t i = 0; items && i < n; i++) {
        struct check_item *it = &items[i];
        struct check_read r = {.it = it, .from = from, .to = to, .verify = verify};
        char *cause = NULL;
        it->t = UINT64_MAX;
        int rc = model_session_read(dir, ids[i], check_read, &r, &cause);
        if (rc == CUPSTORE_EFAULT)   /* what the read had allocated is lost */
            memset(it, 0, sizeof *it);
        if (rc) {
            cli_model_error(cmd, ids[i], rc, cause);
            any_error = true;
            continue;
        }
        if (r.bad_time) {
            status = cli_usage_error(cmd, "bad time '%s'", r.bad_time);
            goto out;
        }
        if (r.inverted) {
            status = cli_usage_error(cmd, "the window is inverted (--from %s is after "
                                          "--to %s)", from, to);
            goto out;
        }
        if (r.adv_rc) {   /* the verdict stands, without advice */
            if (r.adv_why)   /* "ID: what failed" */
                cli_error(cmd, "no advice: %s", r.adv_why);
            else
                cli_error(cmd, "no advice for %s: %s", ids[i], model_strerror(r.adv_rc));
            free(r.adv_why);
        }
        if (it->no_data)
            continue;
        judged++;
        if (!it->s.complete && !it->s.skipped[0])   /* skipped by --only-if: by design */
            any_incomplete = true;
    }
    if (!any_error && !judged) {
        cli_error(cmd, "the window holds no data in %s",
                  all ? "any session of the store" : n == 1 ? "the session" : "any session named");
        status = CUPTOP_EXIT_USAGE;
        goto out;
    }

    xout o;
    bool have_o = false;
    size_t written = 0;
    if (json) {
        fflush(stdout);
        have_o = xout_init(&o, STDOUT_FILENO) == 0;
        if (have_o)
            xout_putc(&o, '[');
    }
    for (size_t i = 0; items && i < n; i++) {
        struct check_item *it = &items[i];
        if (!it->have_s)
            continue; /* could not be read: said on stderr already */
        if (json && !have_o)
            break;
        if (json)
            xout_puts(&o, written++ ? ",\n" : "\n");
        if (it->no_data) {
            print_no_data(json ? &o : NULL, &it->whole, it->window, it->f, it->t);
        } else if (json) {
            sessions_json_fields(&o, &it->s);
            advice_json(&o, it->adv, it->nadv, it->adv_failed);
            xout_putc(&o, '}');
        } else {
            /* text: the first recommendation, unless "what to do" said it */
            print_verdict(&it->s, it->window, it->f, it->t,
                          it->nadv && !it->s.cupti_advice ? &it->adv[0] : NULL);
            if (verify && it->verified)
                printf("  verified: %" PRIu64 " records read back\n", it->read_back);
            else if (verify)
                printf("  not verified: %s\n", model_state_live(it->s.state)
                                                    ? "not finished (no final status yet)"
                                                    : "count-only session (nothing stored)");
        }
    }
    if (have_o) {
        xout_puts(&o, "\n]\n");
        if (cli_xout_end(&o) != 0)
            any_error = true;
    }
    status = any_error ? CUPTOP_EXIT_USAGE : any_incomplete ? CUPTOP_EXIT_NO : CUPTOP_EXIT_OK;
out:
    for (size_t i = 0; items && i < n; i++) {
        if (items[i].have_whole)
            model_summary_free(&items[i].whole);
        if (items[i].have_s)
            model_summary_free(&items[i].s);
        free(items[i].adv);
    }
    free(items);
    cupstore_ids_free(ids, n);
    free(dir);
    return status;
}
