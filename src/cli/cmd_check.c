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
#include "model_ledger.h"

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
        {"store", "DIR", 's',
         "the store (default $CUPTOP_STORE); again for more stores,\n"
         "or a directory of stores gathered from many hosts: a job\n"
         "spread over them is judged as one\n", NULL},
        {"to", "T", 't', NULL, NULL},
        {"help", NULL, 'h', NULL, NULL},
        {NULL, NULL, 0, NULL, NULL},
    },
};

static void usage(FILE *f)
{
    fputs("usage: cuptop check [--store DIR]... (SESSION... | --all)\n"
          "                    [--from T --to T | --verify] [--json]\n"
          "       cuptop check [--store DIR]... --job JOB [--json]\n\n"
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
                          uint64_t to_s, const model_advice *first, const check_win *win)
{
    const char *v = model_verdict_name(s);
    char id[4 * sizeof s->id + 200];
    model_escape(id, sizeof id, s->id, strlen(s->id));
    size_t n = strlen(id);
    if (s->store && n < sizeof id - 4) {   /* several stores: ids are unique within one */
        memcpy(id + n, " in ", 5);
        model_escape(id + n + 4, sizeof id - n - 4, s->store, strlen(s->store));
    }
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
    if (win)   /* periodic windows: what the verdict covers, first */
        check_win_print(stdout, win);
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
    model_ledger ledger;        /* the launch ledger's holes (INCOMPLETE)  */
    check_win win;              /* periodic windows judged (win.w.n 0: none) */
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

/* check --job --json: one object for the job, its sessions inside. */
static int check_job_json(const char *cmd, const model_job *j, const model_job_windows *w,
                          size_t unreadable)
{
    xout o;
    if (cli_xout_begin(cmd, &o) != 0)
        return CUPTOP_EXIT_USAGE;
    xout_puts(&o, "{\"job\":");
    xout_json_str(&o, j->id, strlen(j->id));
    xout_printf(&o, ",\"state\":\"%s\",\"verdict\":\"%s\",\"complete\":%s,"
                    "\"processes\":%zu,\"incomplete\":%zu,\"crashed\":%zu,"
                    "\"running\":%zu,\"stalled\":%zu,\"skipped\":%zu,\"launchers\":%zu,"
                    "\"unreadable_sessions\":%zu,\"stores\":%zu,\"world_size\":",
                model_state_name(j->state), j->complete ? "COMPLETE" : "INCOMPLETE",
                j->complete ? "true" : "false", j->n, j->incomplete, j->crashed, j->running,
                j->stalled, j->skipped, j->launchers, unreadable, j->nstores);
    if (j->world_size)
        xout_printf(&o, "%d", j->world_size);
    else
        xout_puts(&o, "null");
    xout_printf(&o, ",\"missing_ranks\":%zu,\"duplicate_rank\":%s,\"loss\":{", j->missing,
                j->duplicate_rank ? "true" : "false");
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
        xout_printf(&o, "%s\"%s\":%" PRIu64, l ? "," : "", cupstore_loss_name(l), j->loss[l]);
    xout_printf(&o, "},\"loss_total\":%" PRIu64 ",\"records\":%" PRIu64, j->loss_total,
                j->records_total);
    if (w->procs)
        xout_printf(&o, ",\"windows\":{\"processes\":%zu,\"boundaries\":%" PRIu32
                    ",\"in_all\":%" PRIu32 ",\"open_spread_ms\":%.3f}", w->procs,
                    w->boundaries, w->in_all, (double)w->spread_ns / 1e6);
    else
        xout_puts(&o, ",\"windows\":null");
    xout_puts(&o, ",\"sessions\":[");
    for (size_t i = 0; i < j->n; i++) {
        xout_puts(&o, i ? ",\n" : "\n");
        sessions_json(&o, &j->procs[i]);
    }
    xout_puts(&o, "\n]}\n");
    if (cli_xout_end(&o) != 0)
        return CUPTOP_EXIT_USAGE;
    return CUPTOP_EXIT_OK;
}

/* The stores of several that hold no process of job j (gathered from
 * hosts the job did not run on, or the wrong stores): one note. */
static void check_job_idle_stores(const model_job *j, const model_stores *ss)
{
    size_t idle = 0;
    for (size_t i = 0; ss->several && i < ss->n; i++) {
        size_t k = 0;
        while (k < j->n && j->procs[k].store != ss->v[i].label)
            k++;
        if (k < j->n)
            continue;
        char st[256];
        model_escape(st, sizeof st, ss->v[i].label, strlen(ss->v[i].label));
        if (idle++ < 4)
            printf("  note: the store %s holds no session of the job\n", st);
    }
    if (idle > 4)
        printf("  note: %zu more stores hold no session of the job\n", idle - 4);
}

/* check --job as text: each process' verdict by rank, then the job's. */
/* The job's periodic windows: how far apart its processes opened the
 * window of one boundary, by their own clocks. */
static void check_job_windows_text(const model_job_windows *w)
{
    char at[32] = "";
    if (!w->procs)
        return;
    if (w->spread_sched_ns)
        model_format_second(w->spread_sched_ns / 1000000000u, at, sizeof at);
    printf("  windows: %zu process%s opened windows at %" PRIu32 " boundar%s, %" PRIu32
           " of them in every such process", w->procs, w->procs == 1 ? "" : "es", w->boundaries,
           w->boundaries == 1 ? "y" : "ies", w->in_all);
    if (w->procs > 1)
        printf("; the opens of one boundary at most %.1f ms apart%s%s (each process' own "
               "clock: an offset between the hosts' clocks does not show here)",
               (double)w->spread_ns / 1e6, *at ? ", at " : "", at);
    printf("\n");
}

static void check_job_text(const model_job *j, const model_job_windows *w,
                           const model_stores *ss, size_t unreadable)
{
    char id[4 * sizeof j->id];
    model_escape(id, sizeof id, j->id, strlen(j->id));
    printf("job %s: %zu process%s\n", id, j->n, j->n == 1 ? "" : "es");
    for (size_t i = 0; i < j->n; i++) {
        const model_summary *s = &j->procs[i];
        char where[sizeof s->host * 4 + 4] = "";
        if (s->store) {   /* several stores: the host of each (its store: below) */
            memcpy(where, " on ", 5);
            model_escape(where + 4, sizeof where - 4, s->host, strlen(s->host));
        }
        if (s->rank >= 0)
            printf("rank %d (pid %d%s) ", s->rank, s->pid, where);
        else if (s->job_launcher)
            printf("launcher (pid %d%s) ", s->pid, where);
        else
            printf("no rank (pid %d%s) ", s->pid, where);
        print_verdict(s, "", 0, UINT64_MAX, NULL, NULL);
    }
    printf("job %s: %s", id, j->complete ? "COMPLETE" : "INCOMPLETE");
    if (j->state == MODEL_STATE_RUNNING && j->stalled)
        printf(" so far (%zu running, %zu of them stopped or not responding)", j->running,
               j->stalled);
    else if (j->state == MODEL_STATE_RUNNING)
        printf(" so far (%zu running)", j->running);
    printf(" (%zu process%s", j->n, j->n == 1 ? "" : "es");
    if (j->incomplete)
        printf(", %zu INCOMPLETE", j->incomplete);
    if (j->crashed)
        printf(", %zu crashed", j->crashed);
    if (j->skipped)
        printf(", %zu skipped", j->skipped);
    if (j->launchers)
        printf(", %zu launcher%s", j->launchers, j->launchers == 1 ? "" : "s");
    printf(", %" PRIu64 " records lost)\n", j->loss_total);
    if (j->missing)
        printf("  - %zu of %d ranks have no session (the first: rank %d): a process that "
               "never started tracing, or whose session is gone\n",
               j->missing, j->world_size, j->first_missing);
    check_job_windows_text(w);
    if (j->duplicate_rank)
        printf("  note: two processes name the same rank (several launches in one job?)\n");
    if (unreadable && ss->several)
        printf("  note: %zu store%s or session%s could not be read and may hold processes "
               "of the job\n", unreadable, unreadable == 1 ? "" : "s",
               unreadable == 1 ? "" : "s");
    else if (unreadable)
        printf("  note: %zu session%s of the store could not be read and may belong to "
               "the job\n", unreadable, unreadable == 1 ? "" : "s");
    check_job_idle_stores(j, ss);
}

/* check --job: each process' verdict by rank, then the job's, over one
 * store or several (bad: stores of several already named and left out). */
static int check_job(const char *cmd, const model_stores *ss, size_t bad, const char *jobid,
                     bool json)
{
    model_job j;
    size_t unreadable = 0;
    const char *dir = ss->v[0].dir;
    int rc = ss->several ? model_job_read_stores(ss, jobid, 0, UINT64_MAX, true, &j,
                                                 &unreadable, job_error, (void *)cmd)
                         : model_job_read_open(dir, jobid, 0, UINT64_MAX, &j, &unreadable,
                                               job_error, (void *)cmd);
    unreadable += bad;
    if (rc == CUPSTORE_ENOTFOUND && ss->several) {
        cli_error(cmd, "no session of job %s in any of the %zu stores", jobid, ss->n);
        return CUPTOP_EXIT_USAGE;
    }
    if (rc == CUPSTORE_ENOTFOUND) {
        cli_error(cmd, "no session of job %s in %s", jobid, dir);
        return CUPTOP_EXIT_USAGE;
    }
    if (rc)
        return cli_store_error(cmd, dir, rc);
    model_job_windows w;
    if (model_job_windows_read(&j, &w) != 0)
        memset(&w, 0, sizeof w);   /* a session that faults here was judged above */
    int status = json ? check_job_json(cmd, &j, &w, unreadable) : CUPTOP_EXIT_OK;
    if (!json)
        check_job_text(&j, &w, ss, unreadable);
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
    check_win_read(env, it->f, it->t, &it->win);
    cupstore_txn *txn;
    /* the holes of an INCOMPLETE session; for any session, whether the
     * ledger covered only part of it (a COMPLETE verdict says so then) */
    if (cupstore_txn_begin(env, false, &txn) == 0) {
        if (model_ledger_read(txn, &it->ledger) != 0)
            it->ledger.present = false;   /* the verdict stands without it */
        cupstore_txn_abort(txn);
    }
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

/* check's command line. */
struct check_args {
    const char *cmd, *from, *to, *job;
    cli_stores stores;
    bool all, json, verify;
};

/* The sessions check judges: each id with its store (borrowed from the
 * command's model_stores; label NULL when one store is read, dir NULL
 * when the id could not be placed: said already). */
struct check_targets {
    char **ids;
    const char **dirs, **labels;
    size_t n;
};

/* Parse and check the options: -1 to go on, else the exit status (the
 * misuse said on stderr, or --help printed). */
static int check_parse(int argc, char **argv, struct check_args *a)
{
    struct option longopts[CLI_OPTS_MAX];
    int c;

    memset(a, 0, sizeof *a);
    a->cmd = argv[0];
    cli_opts_begin(&cli_cmd_check, longopts);
    while ((c = getopt_long(argc, argv, cli_cmd_check.shortopts, longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (cli_stores_arg(a->cmd, &a->stores, optarg) >= 0)
                return CUPTOP_EXIT_USAGE;
            break;
        case 'a': a->all = true; break;
        case 'f': a->from = optarg; break;
        case 't': a->to = optarg; break;
        case 'j': a->json = true; break;
        case 'v': a->verify = true; break;
        case 'J': a->job = optarg; break;
        case 'h': usage(stdout); return CUPTOP_EXIT_OK;
        default:
            return cli_bad_option(a->cmd, argv);
        }
    }
    if (a->job) {
        if (a->all || optind < argc)
            return cli_usage_error(a->cmd, "give --job, sessions or --all, not several");
        if (a->from || a->to || a->verify)
            return cli_usage_error(a->cmd, "--job judges whole sessions: not with --from/--to "
                                           "or --verify");
        if (!cupstore_job_valid(a->job))
            return cli_usage_error(a->cmd, "--job: '%s' is not a job id", a->job);
        return -1;
    }
    if (a->all && optind < argc)
        return cli_usage_error(a->cmd, "give sessions or --all, not both");
    if (!a->all && optind >= argc)
        return cli_usage_error(a->cmd, "no session given (name sessions, or use --all)");
    if (!a->from != !a->to)
        return cli_usage_error(a->cmd, "--from and --to go together");
    if (a->verify && a->from)
        return cli_usage_error(a->cmd, "--verify reads whole sessions back: not with --from/--to");
    return -1;
}

/* Room for n more targets in t.  0 or ENOMEM. */
static int targets_grow(struct check_targets *t, size_t n)
{
    char **ids = realloc(t->ids, (t->n + n + 1) * sizeof *ids);
    if (ids)
        t->ids = ids;
    const char **d = ids ? realloc(t->dirs, (t->n + n + 1) * sizeof *d) : NULL;
    if (d)
        t->dirs = d;
    const char **l = d ? realloc(t->labels, (t->n + n + 1) * sizeof *l) : NULL;
    if (l)
        t->labels = l;
    return l ? 0 : ENOMEM;
}

static void targets_free(struct check_targets *t)
{
    cupstore_ids_free(t->ids, t->n);
    free(t->dirs);
    free(t->labels);
    memset(t, 0, sizeof *t);
}

/* Every session of every store (--all); a store that cannot be listed is
 * named (*any_error) and the others judged.  -1 to go on, else the exit
 * status. */
static int check_all(const struct check_args *a, const model_stores *ss,
                     struct check_targets *t, bool *any_error)
{
    for (size_t i = 0; i < ss->n; i++) {
        char **ids = NULL;
        size_t n = 0;
        int rc = cupstore_dir_sessions(ss->v[i].dir, &ids, &n);
        if (rc && !ss->several)
            return cli_store_error(a->cmd, ss->v[i].dir, rc);
        if (rc) {
            cli_store_error(a->cmd, ss->v[i].dir, rc);
            *any_error = true;
            continue;
        }
        if (targets_grow(t, n) != 0) {
            cupstore_ids_free(ids, n);
            cli_error(a->cmd, "out of memory");
            return CUPTOP_EXIT_USAGE;
        }
        for (size_t k = 0; k < n; k++, t->n++) {
            t->ids[t->n] = ids[k];
            t->dirs[t->n] = ss->v[i].dir;
            t->labels[t->n] = ss->several ? ss->v[i].label : NULL;
        }
        free(ids);   /* the strings are t's now */
    }
    if (!t->n && !*any_error) {
        cli_error(a->cmd, "no sessions in %s", ss->several ? "any of the stores" : ss->v[0].dir);
        return CUPTOP_EXIT_USAGE;
    }
    return -1;
}

/* The store of session id among several: the one that holds it; NULL
 * (said, *any_error) when none or more than one does. */
static const model_store *check_place(const char *cmd, const model_stores *ss, const char *id,
                                      bool *any_error)
{
    size_t ix = 0, found = 0;
    int rc = model_stores_find(ss, id, &ix, &found);
    if (rc == 0)
        return &ss->v[ix];
    if (found > 1)
        cli_error(cmd, "session %s is in %zu of the stores: name one store with --store", id,
                  found);
    else if (rc == CUPSTORE_ENOTFOUND)
        cli_error(cmd, "session %s: in none of the %zu stores", id, ss->n);
    else
        cli_error(cmd, "session %s: %s", id, model_strerror(rc));
    *any_error = true;
    return NULL;
}

/* The sessions to judge: those named after the options, or every one of
 * the stores (--all).  -1 to go on (t: caller frees), else the exit
 * status. */
static int check_ids(const struct check_args *a, const model_stores *ss, int argc,
                     char **argv, struct check_targets *t, bool *any_error)
{
    if (a->all)
        return check_all(a, ss, t, any_error);
    size_t n = (size_t)(argc - optind);
    if (targets_grow(t, n) != 0) {
        cli_error(a->cmd, "out of memory");
        return CUPTOP_EXIT_USAGE;
    }
    for (size_t i = 0; i < n; i++) {
        const char *id = argv[optind + (int)i];
        const model_store *st = ss->several ? check_place(a->cmd, ss, id, any_error)
                                            : &ss->v[0];
        if (!(t->ids[t->n] = strdup(id))) {
            cli_error(a->cmd, "out of memory");
            return CUPTOP_EXIT_USAGE;
        }
        t->dirs[t->n] = st ? st->dir : NULL;
        t->labels[t->n++] = st && ss->several ? st->label : NULL;
    }
    return -1;
}

/* What judging every session found. */
struct check_outcome {
    bool any_incomplete, any_error;
    size_t judged;
};

/* Judge every session into items (each opened once): -1 to go on, else
 * the exit status of a usage error (a bad or inverted window). */
static int check_judge(const struct check_args *a, const struct check_targets *t,
                       struct check_item *items, struct check_outcome *out)
{
    for (size_t i = 0; i < t->n; i++) {
        struct check_item *it = &items[i];
        struct check_read r = {.it = it, .from = a->from, .to = a->to, .verify = a->verify};
        char *cause = NULL;
        it->t = UINT64_MAX;
        if (!t->dirs[i])   /* in no store, or in several: said */
            continue;
        int rc = model_session_read(t->dirs[i], t->ids[i], check_read, &r, &cause);
        if (rc == CUPSTORE_EFAULT)   /* what the read had allocated is lost */
            memset(it, 0, sizeof *it);
        if (rc) {
            cli_model_error(a->cmd, t->ids[i], rc, cause);
            out->any_error = true;
            continue;
        }
        it->s.store = it->whole.store = t->labels[i];
        if (r.bad_time)
            return cli_usage_error(a->cmd, "bad time '%s'", r.bad_time);
        if (r.inverted)
            return cli_usage_error(a->cmd, "the window is inverted (--from %s is after "
                                           "--to %s)", a->from, a->to);
        if (r.adv_rc) {   /* the verdict stands, without advice */
            if (r.adv_why)   /* "ID: what failed" */
                cli_error(a->cmd, "no advice: %s", r.adv_why);
            else
                cli_error(a->cmd, "no advice for %s: %s", t->ids[i], model_strerror(r.adv_rc));
            free(r.adv_why);
        }
        if (it->no_data)
            continue;
        out->judged++;
        if (!it->s.complete && !it->s.skipped[0])   /* skipped by --only-if: by design */
            out->any_incomplete = true;
    }
    return -1;
}

/* One session's verdict as text: the first recommendation, unless "what
 * to do" said it, and what --verify read back. */
static void print_item(const struct check_item *it, bool verify)
{
    print_verdict(&it->s, it->window, it->f, it->t,
                  it->nadv && !it->s.cupti_advice ? &it->adv[0] : NULL, &it->win);
    /* where the launch ledger found the holes: the first streams */
    for (unsigned i = 0; it->ledger.present && i < it->ledger.nstreams && i < 8; i++) {
        char line[400];
        model_ledger_hole_text(&it->ledger.stream[i], line, sizeof line);
        printf("  missing: %s\n", line);
    }
    if (it->ledger.nstreams > 8)
        printf("  missing: ... %u more streams (cuptop report)\n", it->ledger.nstreams - 8);
    if (it->ledger.present && it->ledger.partial) {
        char line[320];
        model_ledger_partial_text(&it->ledger, line, sizeof line);
        printf("  %s\n", line);
    }
    if (verify && it->verified)
        printf("  verified: %" PRIu64 " records read back\n", it->read_back);
    else if (verify)
        printf("  not verified: %s\n", model_state_live(it->s.state)
                                            ? "not finished (no final status yet)"
                                            : "count-only session (nothing stored)");
}

/* Print every verdict judged (text, or one JSON array); false when the
 * JSON output could not be written. */
static bool check_print(const struct check_args *a, const struct check_item *items, size_t n)
{
    xout o;
    bool have_o = false, ok = true;
    size_t written = 0;
    if (a->json) {
        fflush(stdout);
        have_o = xout_init(&o, STDOUT_FILENO) == 0;
        if (have_o)
            xout_putc(&o, '[');
    }
    for (size_t i = 0; i < n; i++) {
        const struct check_item *it = &items[i];
        if (!it->have_s)
            continue; /* could not be read: said on stderr already */
        if (a->json && !have_o)
            break;
        if (a->json)
            xout_puts(&o, written++ ? ",\n" : "\n");
        if (it->no_data) {
            print_no_data(a->json ? &o : NULL, &it->whole, it->window, it->f, it->t);
        } else if (a->json) {
            sessions_json_fields(&o, &it->s);
            advice_json(&o, it->adv, it->nadv, it->adv_failed);
            check_win_json(&o, &it->win);
            xout_putc(&o, '}');
        } else {
            print_item(it, a->verify);
        }
    }
    if (have_o) {
        xout_puts(&o, "\n]\n");
        if (cli_xout_end(&o) != 0)
            ok = false;
    }
    return ok;
}

static void check_items_free(struct check_item *items, size_t n)
{
    for (size_t i = 0; items && i < n; i++) {
        if (items[i].have_whole)
            model_summary_free(&items[i].whole);
        if (items[i].have_s)
            model_summary_free(&items[i].s);
        free(items[i].adv);
    }
    free(items);
}

/* Sessions (or --all) over the stores: judge every one first, print
 * after: when the window holds no data in any of them, that is one usage
 * error and nothing on stdout. */
static int check_sessions(const struct check_args *a, const model_stores *ss, size_t bad,
                          int argc, char **argv)
{
    struct check_targets t = {0};
    struct check_item *items = NULL;
    struct check_outcome out = {.any_error = bad > 0};
    int status;
    if ((status = check_ids(a, ss, argc, argv, &t, &out.any_error)) >= 0)
        goto done;
    items = calloc(t.n ? t.n : 1, sizeof *items);
    out.any_error |= !items;
    if (items && (status = check_judge(a, &t, items, &out)) >= 0)
        goto done;
    if (!out.any_error && !out.judged) {
        cli_error(a->cmd, "the window holds no data in %s",
                  a->all ? "any session of the store"
                         : t.n == 1 ? "the session" : "any session named");
        status = CUPTOP_EXIT_USAGE;
        goto done;
    }
    if (items && !check_print(a, items, t.n))
        out.any_error = true;
    status = out.any_error        ? CUPTOP_EXIT_USAGE
             : out.any_incomplete ? CUPTOP_EXIT_NO
                                  : CUPTOP_EXIT_OK;
done:
    check_items_free(items, t.n);
    targets_free(&t);
    return status;
}

int cmd_check(int argc, char **argv)
{
    struct check_args a;
    model_stores ss;
    size_t bad;
    int status = check_parse(argc, argv, &a);
    if (status < 0 && (status = cli_stores_open(a.cmd, &a.stores, &ss, &bad)) == 0) {
        status = a.job ? check_job(a.cmd, &ss, bad, a.job, a.json)
                       : check_sessions(&a, &ss, bad, argc, argv);
        model_stores_free(&ss);
    }
    cli_stores_free(&a.stores);
    return status;
}
