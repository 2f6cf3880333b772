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

#include "cupstore.h"
#include "cuptop.h"
#include "export.h"
#include "model.h"

#define CHECK_NOTES_MAX 8   /* notes shown under one verdict */

static void usage(FILE *f)
{
    fputs("usage: cuptop check [--store DIR] (SESSION... | --all)\n"
          "                    [--from T --to T | --verify] [--json]\n\n"
          "Judge sessions: COMPLETE only if every buffer CUPTI completed was consumed,\n"
          "every loss counter is zero, the stop protocol ran to the end and the final\n"
          "flush succeeded.  Each reason is listed with its loss class, count and the\n"
          "seconds affected, then the agent's warnings that explain them.  A running\n"
          "session is judged on what has happened so far.\n\n"
          "  --all          every session in the store\n"
          "  --from T --to T  judge only this window (T: unix seconds, +N after the\n"
          "                 start, -N before the end, start, end, YYYY-mm-ddTHH:MM:SSZ)\n"
          "  --verify       also read every stored record back (decoding each chunk)\n"
          "                 and compare the count with what the agent stored: records\n"
          "                 missing or unreadable make the session INCOMPLETE\n"
          "                 (store_damaged); ended sessions only, whole sessions\n"
          "  --json         a JSON array of verdicts\n\n"
          "Exit status: 0 all COMPLETE, 1 any INCOMPLETE, 2 usage error, unknown\n"
          "session, empty or inverted window, or unreadable store.\n",
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
 * cuptop report. */
static void print_notes(const model_summary *s)
{
    unsigned shown = 0, more = 0;
    for (size_t i = 0; i < s->nnotes; i++) {
        const model_note *n = &s->notes[i];
        if (n->level < 1 || note_in_reasons(s, n))
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

static void print_verdict(const model_summary *s, const char *window)
{
    const char *v = model_verdict_name(s);
    if (s->state == MODEL_STATE_RUNNING)
        printf("%s: %s so far (running; judged on what has happened so far)%s\n", s->id, v,
               window);
    else if (s->state == MODEL_STATE_CRASHED)
        printf("%s: %s (crashed)%s\n", s->id, v, window);
    else
        printf("%s: %s%s\n", s->id, v, window);
    for (size_t i = 0; i < s->nreasons; i++) {
        fputs("  - ", stdout);
        fputs(s->reasons[i].text, stdout); /* made safe by the model */
        fputc('\n', stdout);
    }
    if (!s->complete)
        print_notes(s);
}

int cmd_check(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"store", required_argument, NULL, 's'}, {"all", no_argument, NULL, 'a'},
        {"from", required_argument, NULL, 'f'},  {"to", required_argument, NULL, 't'},
        {"json", no_argument, NULL, 'j'},        {"help", no_argument, NULL, 'h'},
        {"verify", no_argument, NULL, 'v'},      {NULL, 0, NULL, 0},
    };
    const char *cmd = argv[0], *store = NULL, *from = NULL, *to = NULL;
    bool all = false, json = false, verify = false;
    int c;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 's': store = optarg; break;
        case 'a': all = true; break;
        case 'f': from = optarg; break;
        case 't': to = optarg; break;
        case 'j': json = true; break;
        case 'v': verify = true; break;
        case 'h': usage(stdout); return CUPTOP_EXIT_OK;
        default:
            return cli_bad_option(cmd, argv);
        }
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
            cli_error(cmd, "cannot read the store %s: %s", dir,
                      rc == ENOENT ? "no such directory" : cupstore_strerror(rc));
            free(dir);
            return CUPTOP_EXIT_USAGE;
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

    int status = CUPTOP_EXIT_OK;
    bool any_incomplete = false, any_error = false;
    xout o;
    bool have_o = false;
    size_t written = 0;
    if (json) {
        fflush(stdout);
        have_o = xout_init(&o, STDOUT_FILENO) == 0;
        if (have_o)
            xout_putc(&o, '[');
    }
    for (size_t i = 0; ids && i < n; i++) {
        model_summary whole, s;
        char *cause = NULL, window[128] = "";
        uint64_t f = 0, t = UINT64_MAX;
        int rc = model_summarize_id(dir, ids[i], 0, UINT64_MAX, &whole, &cause);
        free(cause);
        if (rc) {
            cli_error(cmd, "session %s in %s: %s", ids[i], dir, cli_open_error(rc));
            any_error = true;
            continue;
        }
        if (from) {
            uint64_t ss = whole.start_ns / 1000000000u, es = whole.end_ns / 1000000000u;
            if (model_parse_time(from, ss, es, &f) != 0 || model_parse_time(to, ss, es, &t) != 0) {
                model_summary_free(&whole);
                status = cli_usage_error(cmd, "bad time '%s'",
                                         model_parse_time(from, ss, es, &f) ? from : to);
                goto out;
            }
            if (f > t) {
                model_summary_free(&whole);
                status = cli_usage_error(cmd, "the window is inverted (--from %s is after "
                                              "--to %s)", from, to);
                goto out;
            }
            char a[32], b[32];
            model_format_second(f, a, sizeof a);
            model_format_second(t, b, sizeof b);
            snprintf(window, sizeof window, " [window %s .. %s]", a, b);
        }
        model_summary_free(&whole);
        bool verified = false;
        uint64_t read_back = 0;
        rc = verify ? model_verify_id(dir, ids[i], &s, &verified, &read_back, &cause)
                    : model_summarize_id(dir, ids[i], f, t, &s, &cause);
        if (rc != 0) {
            cli_error(cmd, "session %s: %s", ids[i], cli_open_error(rc));
            free(cause);
            any_error = true;
            continue;
        }
        if (from && !s.seconds) {
            cli_error(cmd, "session %s: the window%s holds no data", s.id, window);
            model_summary_free(&s);
            any_error = true;
            continue;
        }
        if (!s.complete)
            any_incomplete = true;
        if (json && have_o) {
            xout_puts(&o, written ? ",\n" : "\n");
            sessions_json(&o, &s);
        } else if (!json) {
            print_verdict(&s, window);
            if (verify && verified)
                printf("  verified: %" PRIu64 " records read back\n", read_back);
            else if (verify)
                printf("  not verified: %s\n", s.state == MODEL_STATE_RUNNING
                                                    ? "still running"
                                                    : "count-only session (nothing stored)");
        }
        written++;
        model_summary_free(&s);
    }
    if (!ids)
        any_error = true;
    status = any_error ? CUPTOP_EXIT_USAGE : any_incomplete ? CUPTOP_EXIT_NO : CUPTOP_EXIT_OK;
out:
    if (have_o) {
        xout_puts(&o, "\n]\n");
        xout_flush(&o);
        xout_free(&o);
    }
    cupstore_ids_free(ids, n);
    free(dir);
    return status;
}
