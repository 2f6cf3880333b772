/*
 * cmd_export.c - `cuptop export`: options, the window from --from/--to,
 * progress on a terminal and Ctrl-C; the writing is export_run() (src/export).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_opts.h"
#include "cupstore.h"
#include "cuptop.h"
#include "export.h"
#include "model.h"

#define NS UINT64_C(1000000000)

/* ---- The subcommand ------------------------------------------------------- */

static volatile sig_atomic_t export_interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    export_interrupted = 1;
}

static int show_progress(uint64_t done, uint64_t total, void *arg)
{
    (void)arg;
    if (total && done <= total)
        fprintf(stderr, "\rcuptop export: %" PRIu64 " of about %" PRIu64 " records (%u%%)   ",
                done, total, (unsigned)(done * 100 / total));
    else
        fprintf(stderr, "\rcuptop export: %" PRIu64 " records   ", done);
    return export_interrupted;
}

static int quiet_progress(uint64_t done, uint64_t total, void *arg)
{
    (void)done, (void)total, (void)arg;
    return export_interrupted;
}

/* export's options (cli_opts.h): parsed from this table; --help is written
 * out below as prose. */
const cli_cmd cli_cmd_export = {
    .name = "export",
    .shortopts = "o:h",
    .opts = (const cli_opt[]){
        {"store", "DIR", 's', NULL, NULL},
        {"from", "T", 'f', NULL, NULL},
        {"to", "T", 't', NULL, NULL},
        {"mark", "NAME", 'm', NULL, NULL},
        {"format", "FORMAT", 'F', NULL, NULL},
        {"output", "PATH", 'o', NULL, NULL},
        {"force", NULL, 'x', NULL, NULL},
        {"mangled", NULL, 'M', NULL, NULL},
        {"uncompressed", NULL, 'U', NULL, NULL},
        {"job", "JOB", 'J', NULL, NULL},
        {"range", "NAME", 'r', NULL, NULL},
        {"slowest", NULL, 'S', NULL, NULL},
        {"nth", "N", 'n', NULL, NULL},
        {"all", NULL, 'A', NULL, NULL},
        {"help", NULL, 'h', NULL, NULL},
        {NULL, NULL, 0, NULL, NULL},
    },
};

static void usage(FILE *f)
{
    fputs("usage: cuptop export [--store DIR]... SESSION (--from T --to T | --mark NAME |\n"
          "                     --range NAME (--slowest | --nth N | --all))\n"
          "                     --format chrome|perfetto|jsonl|csv|store -o PATH [--force]\n"
          "                     [--mangled] [--uncompressed]\n"
          "       cuptop export [--store DIR]... --job JOB [--from T --to T]\n"
          "                     --format chrome|perfetto\n"
          "                     -o PATH [--force] [--mangled] [--uncompressed]\n\n"
          "Write a window of a session:\n"
          "  chrome  Trace Event JSON for Perfetto UI / chrome://tracing\n"
          "  perfetto  Perfetto's protobuf trace (.pftrace): interned names, counter\n"
          "          tracks for the health series, a loss track; packets deflated as\n"
          "          Perfetto's own compressed_packets (--uncompressed: as they are)\n"
          "  jsonl   one JSON object per record per line\n"
          "  csv     the per-second health rows, with a header line\n"
          "  store   a standalone store holding just the window (cuptop --store PATH)\n\n"
          "--range NAME: the window of one instance of the NVTX range NAME (any domain):\n"
          "   --slowest the longest one, --nth N the N-th in time order (1-based); --all\n"
          "   every instance, one file each, into the directory -o DIR/ (NAME-N.EXT).  The\n"
          "   range's name, domain, id and position are in the file's metadata; a range\n"
          "   still open ends at the end of the data.  (cuptop ranges lists them.)\n"
          "T: unix seconds, +N (after the start), -N (before the end), start, end,\n"
          "   or YYYY-mm-ddTHH:MM:SSZ.  Both ends are inclusive.\n"
          "The output (-o PATH, or --output PATH) is written to a temporary file and\n"
          "renamed into place; an\n"
          "existing PATH is only replaced with --force.  -o - writes chrome, perfetto, jsonl\n"
          "or csv to standard output (e.g. | gzip > trace.json.gz).\n"
          "--job JOB writes every process of the job (one cuptop run) into one chrome or perfetto\n"
          "trace: one process group per rank, \"rank N (pid P)\", holding its GPU\n"
          "streams, threads and health counters, on one clock (CUPTI timestamps are\n"
          "wall-clock ns); the job's verdict and losses, and each rank's, are in\n"
          "otherData.  Without --from/--to the whole job; T relative to its first\n"
          "start and last end.  --store again, or a directory of stores gathered\n"
          "from many hosts: the job's processes in all of them, one group per host and\n"
          "rank, \"rank N on HOST (pid P)\"; a store that cannot be read writes no trace.\n"
          "With several stores SESSION is looked up in each (it must be in one).\n"
          "C++ kernel names are demangled (the raw name stays beside: jsonl \"mangled\",\n"
          "chrome args.mangled); --mangled keeps them as CUPTI gave them.\n"
          "Exit status: 0 written, 1 writing failed or cancelled, 2 usage error,\n"
          "unknown session or mark, empty or inverted window, unreadable store.\n",
          f);
}

/* Run the export with the progress and Ctrl-C handling of a terminal. */
static int run_export(const char *cmd, const export_opts *o)
{
    char *cause = NULL;
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    bool tty = isatty(STDERR_FILENO);
    int status = export_run(o, tty ? show_progress : quiet_progress, NULL, &cause);
    if (tty)
        fputs("\r\033[K", stderr);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (status != CUPTOP_EXIT_OK)
        cli_error(cmd, "%s", cause ? cause : "export failed");
    else if (cause)
        cli_error(cmd, "note: %s", cause);
    free(cause);
    return status;
}

/* A file name from a range name: bytes outside [A-Za-z0-9._-] become '_',
 * at most 64 of them (hostile names make safe paths); the extension is the
 * format's (.json for chrome, which Perfetto and chrome://tracing open;
 * none for a store directory). */
static void range_file(char *buf, size_t len, const char *dir, const model_range_name *n,
                       uint64_t nth, const char *format)
{
    char safe[65];
    size_t k = 0;
    for (size_t i = 0; i < n->name_len && k < 64; i++) {
        unsigned char ch = (unsigned char)n->name[i];
        safe[k++] = isalnum(ch) || ch == '.' || ch == '_' || ch == '-' ? (char)ch : '_';
    }
    if (k == 0 || safe[0] == '.')
        safe[k ? 0 : k++] = '_';
    safe[k] = '\0';
    size_t dl = strlen(dir);
    const char *ext = !strcmp(format, "store") ? "" : !strcmp(format, "chrome") ? ".json"
                      : !strcmp(format, "perfetto") ? ".pftrace"
                      : NULL;
    snprintf(buf, len, "%s%s%s-%" PRIu64 "%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", safe,
             nth, ext ? ext : ".", ext ? "" : format);
}

/* export's command line. */
struct export_args {
    const char *cmd, *from, *to, *nth, *range;
    cli_stores stores;
    bool slowest, all;
    uint64_t nth_n;             /* --nth N                                  */
    export_opts o;
};

/* --range NAME on the session open in env: the window of one instance (or
 * of each): its start to its end (an open range to the end of the data). */
static int export_ranges(const struct export_args *a, cupstore_env *env, const char *dir)
{
    const char *cmd = a->cmd, *name = a->range;
    const export_opts *o = &a->o;
    bool slowest = a->slowest, all = a->all;
    uint64_t nth = a->nth_n;
    cupstore_txn *txn;
    model_ranges *m = NULL;
    int rc;
    if ((rc = cupstore_txn_begin(env, false, &txn)) == 0) {
        rc = model_ranges_load(txn, NULL, &m);
        cupstore_txn_abort(txn);
    }
    if (rc) {
        cli_error(cmd, "session %s: %s", o->session, cli_open_error(rc));
        return CUPTOP_EXIT_USAGE;
    }
    long k = model_ranges_find(m, name, NULL);
    int status = CUPTOP_EXIT_OK;
    if (k < 0) {
        cli_error(cmd, "session %s has no NVTX range named '%s' (cuptop ranges lists them)",
                  o->session, name);
        model_ranges_free(m);
        return CUPTOP_EXIT_USAGE;
    }
    const model_range_name *n = &m->names[k];
    if (slowest && n->count == 0) {
        cli_error(cmd, "the range '%s' has no closed instance (%" PRIu64 " open)", name, n->open);
        model_ranges_free(m);
        return CUPTOP_EXIT_USAGE;
    }
    if (nth && nth > n->ntime) {
        cli_error(cmd, "the range '%s' has %zu instance(s), not %" PRIu64, name, n->ntime, nth);
        model_ranges_free(m);
        return CUPTOP_EXIT_USAGE;
    }
    if (all && mkdir(o->output, 0777) != 0 && errno != EEXIST) {
        cli_error(cmd, "cannot create the directory %s: %s", o->output, strerror(errno));
        model_ranges_free(m);
        return CUPTOP_EXIT_USAGE;
    }
    const char *outdir = o->output;
    for (size_t t = 0; t < n->ntime; t++) {
        size_t idx = n->by_time[t];
        if (slowest && idx != n->by_dur[0])
            continue;
        if (nth && t + 1 != nth)
            continue;
        const model_range_inst *r = &m->inst[idx];
        if (r->flags & CUPSTORE_RANGE_POINT)
            continue;   /* a mark has no window */
        char path[4096];
        export_opts io = *o;
        io.store_dir = dir;
        io.env = env;
        io.from_ns = r->start_ns;
        io.to_ns = model_range_open(r) ? UINT64_MAX : r->end_ns;
        io.range_name = n->name;
        io.range_name_len = n->name_len;
        io.range_domain = n->domain;
        io.range_id = r->id;
        io.range_nth = t + 1;
        io.range_open = model_range_open(r);
        if (all) {
            range_file(path, sizeof path, outdir, n, t + 1, o->format);
            io.output = path;
        }
        int st = run_export(cmd, &io);
        if (st != CUPTOP_EXIT_OK && status == CUPTOP_EXIT_OK)
            status = st;
        if (export_interrupted)
            break;
    }
    model_ranges_free(m);
    return status;
}

/* Session start/end seconds, for relative --from/--to: the session's
 * bounds reaching its data (export_session_bounds). */
static int session_bounds(cupstore_env *env, uint64_t *start_s, uint64_t *end_s, char **cause)
{
    uint64_t first, last;
    int rc = export_session_bounds(env, &first, &last, cause);
    if (rc == 0) {
        *start_s = first / NS;
        *end_s = last / NS;
    }
    return rc;
}

/* Parse and check the options: -1 to go on, else the exit status (the
 * misuse said on stderr, or --help printed). */
static int export_parse(int argc, char **argv, struct export_args *a)
{
    struct option longopts[CLI_OPTS_MAX];
    int c;

    memset(a, 0, sizeof *a);
    a->cmd = argv[0];
    cli_opts_begin(&cli_cmd_export, longopts);
    while ((c = getopt_long(argc, argv, cli_cmd_export.shortopts, longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (cli_stores_arg(a->cmd, &a->stores, optarg) >= 0)
                return CUPTOP_EXIT_USAGE;
            break;
        case 'f': a->from = optarg; break;
        case 't': a->to = optarg; break;
        case 'm': a->o.mark = optarg; break;
        case 'F': a->o.format = optarg; break;
        case 'o': a->o.output = optarg; break;
        case 'x': a->o.force = true; break;
        case 'M': a->o.mangled = true; break;
        case 'U': a->o.uncompressed = true; break;
        case 'r': a->range = optarg; break;
        case 'S': a->slowest = true; break;
        case 'n': a->nth = optarg; break;
        case 'A': a->all = true; break;
        case 'J': a->o.job = optarg; break;
        case 'h': usage(stdout); return CUPTOP_EXIT_OK;
        default:
            return cli_bad_option(a->cmd, argv);
        }
    }
    if (a->o.job) {
        if (optind < argc)
            return cli_usage_error(a->cmd, "give --job or a session, not both");
        if (!cupstore_job_valid(a->o.job))
            return cli_usage_error(a->cmd, "--job: '%s' is not a job id", a->o.job);
        if (a->o.mark)
            return cli_usage_error(a->cmd, "--job exports whole processes or --from/--to, not a "
                                   "mark");
        if (a->o.format && strcmp(a->o.format, "chrome") != 0 && strcmp(a->o.format, "perfetto") != 0)
            return cli_usage_error(a->cmd, "--job writes one trace: use --format chrome or perfetto");
    } else if (optind + 1 != argc) {
        return cli_one_session(a->cmd, argc, argv);
    } else {
        a->o.session = argv[optind];
    }
    if (!a->o.format)
        return cli_usage_error(a->cmd, "--format is required (chrome, perfetto, jsonl, csv or store)");
    if (!export_format_known(a->o.format))
        return cli_usage_error(a->cmd, "unknown format '%s' (chrome, perfetto, jsonl, csv or store)",
                               a->o.format);
    if (a->o.uncompressed && strcmp(a->o.format, "perfetto") != 0)
        return cli_usage_error(a->cmd, "--uncompressed is for --format perfetto");
    if (!a->o.output || !*a->o.output)
        return cli_usage_error(a->cmd, "-o PATH is required (- for standard output)");
    a->o.allow_stdout = true;
    if (!strcmp(a->o.output, "-") && !strcmp(a->o.format, "store"))
        return cli_usage_error(a->cmd, "--format store writes a directory: give -o a path, not -");
    if ((a->slowest || a->nth || a->all) && !a->range)
        return cli_usage_error(a->cmd, "--slowest, --nth and --all choose an instance of --range NAME");
    if (a->range && (a->o.mark || a->from || a->to))
        return cli_usage_error(a->cmd, "give one window: --range, --mark or --from/--to");
    if (a->range && (a->slowest + !!a->nth + a->all) != 1)
        return cli_usage_error(a->cmd, "--range NAME wants one of --slowest, --nth N or --all");
    if (a->o.mark && (a->from || a->to))
        return cli_usage_error(a->cmd, "give either --mark or --from/--to, not both");
    if (a->o.job && a->range)
        return cli_usage_error(a->cmd, "--job exports a time window of every process: --range is per session");
    if (a->o.job && !a->from != !a->to)
        return cli_usage_error(a->cmd, "--from and --to go together");
    if (!a->o.job && !a->o.mark && !a->range && (!a->from || !a->to))
        return cli_usage_error(a->cmd, "give a window: --from T --to T, --mark NAME or --range NAME");
    if (a->nth) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(a->nth, &end, 10);
        if (errno || end == a->nth || *end || v == 0 || a->nth[0] == '-')
            return cli_usage_error(a->cmd, "--nth wants a position from 1, not '%s'", a->nth);
        a->nth_n = v;
    }
    if (a->all && !strcmp(a->o.output, "-"))
        return cli_usage_error(a->cmd, "--all writes one file per instance: give -o a directory");
    return -1;
}

/* The window of --from/--to in o (unix seconds, relative to the bounds of
 * the session open in env, or of the job read in o->job_read); 0, or the
 * exit status of a usage error (said). */
static int export_window(const struct export_args *a, cupstore_env *env, export_opts *o)
{
    char *cause = NULL;
    if (o->job && !a->from) {
        o->from_ns = 0;
        o->to_ns = UINT64_MAX;
        return 0;
    }
    if (o->mark)
        return 0;
    uint64_t start_s, end_s, f, t;
    if (o->job_read) {   /* the job's first start and last end, reaching its data */
        export_job_bounds(o->job_read, &start_s, &end_s);
        start_s /= NS;
        end_s /= NS;
    } else if (session_bounds(env, &start_s, &end_s, &cause) != 0) {
        cli_error(a->cmd, "%s", cause ? cause : "cannot open the session");
        free(cause);
        return CUPTOP_EXIT_USAGE;
    }
    if (model_parse_time(a->from, start_s, end_s, &f) != 0 ||
        model_parse_time(a->to, start_s, end_s, &t) != 0)
        return cli_usage_error(a->cmd, "bad time '%s'",
                               model_parse_time(a->from, start_s, end_s, &f) ? a->from : a->to);
    if (f > t)
        return cli_usage_error(a->cmd, "the window is inverted (--from %s is after --to %s)",
                               a->from, a->to);
    o->from_ns = f * NS;
    o->to_ns = t > UINT64_MAX / NS - 1 ? UINT64_MAX : t * NS + NS - 1;
    return 0;
}

/* One session's export, on the session opened once (model_session_read,
 * under the store's read-fault guard): the window, then the export(s). */
struct export_on {
    struct export_args *a;
    const char *dir;
    int status;   /* the exit status (a failure said on stderr) */
};

static int export_on_session(cupstore_env *env, void *arg, char **cause)
{
    struct export_on *e = arg;
    struct export_args *a = e->a;
    (void)cause;
    if (a->range) {
        e->status = export_ranges(a, env, e->dir);
        return 0;
    }
    a->o.env = env;
    if ((e->status = export_window(a, env, &a->o)) == 0)
        e->status = run_export(a->cmd, &a->o);
    return 0;
}

/* export --job: the job read once, its sessions open: its bounds for the
 * window, then the export takes it over. */
static int export_job_cmd(struct export_args *a)
{
    model_job j;
    char *cause = NULL;
    int status;
    if (export_job_read(a->o.store_dir, &a->o, &j, &cause) != 0) {
        cli_error(a->cmd, "%s", cause ? cause : "cannot read the job");
        status = CUPTOP_EXIT_USAGE;
    } else {
        a->o.job_read = &j;
        if ((status = export_window(a, NULL, &a->o)) == 0)
            status = run_export(a->cmd, &a->o);
        model_job_free(&j);
    }
    free(cause);
    return status;
}

/* export SESSION of store dir, opened once. */
static int export_session_cmd(struct export_args *a, const char *dir)
{
    struct export_on e = {.a = a, .dir = dir};
    char *cause = NULL;
    if (model_session_read(dir, a->o.session, export_on_session, &e, &cause) != 0) {
        cli_error(a->cmd, "%s", cause ? cause : "cannot open the session");
        e.status = CUPTOP_EXIT_USAGE;
    }
    free(cause);
    return e.status;
}

/* The export over the stores: a job over all of them (a store that cannot
 * be read may hold a rank: no trace), a session from the one holding it. */
static int export_stores(struct export_args *a, const model_stores *ss, size_t bad)
{
    a->o.store_dir = ss->v[0].dir;
    if (a->o.job && bad) {
        cli_error(a->cmd, "%zu store%s could not be read and may hold processes of the job, "
                          "so no trace was written", bad, bad == 1 ? "" : "s");
        return CUPTOP_EXIT_USAGE;
    }
    if (a->o.job) {
        a->o.stores = ss->several ? ss : NULL;
        return export_job_cmd(a);
    }
    if (!ss->several)
        return export_session_cmd(a, ss->v[0].dir);
    size_t ix = 0, found = 0;
    int rc = model_stores_find(ss, a->o.session, &ix, &found);
    if (found > 1)
        return cli_usage_error(a->cmd, "session %s is in %zu of the stores: name one store "
                                       "with --store", a->o.session, found);
    if (rc == CUPSTORE_ENOTFOUND) {
        cli_error(a->cmd, "session %s: in none of the %zu stores", a->o.session, ss->n);
        return CUPTOP_EXIT_USAGE;
    }
    if (rc) {
        cli_error(a->cmd, "session %s: %s", a->o.session, model_strerror(rc));
        return CUPTOP_EXIT_USAGE;
    }
    a->o.store_dir = ss->v[ix].dir;
    return export_session_cmd(a, ss->v[ix].dir);
}

int cmd_export(int argc, char **argv)
{
    struct export_args a;
    model_stores ss;
    size_t bad;
    int status = export_parse(argc, argv, &a);
    if (status < 0 && (status = cli_stores_open(a.cmd, &a.stores, &ss, &bad)) == 0) {
        status = export_stores(&a, &ss, bad);
        model_stores_free(&ss);
    }
    cli_stores_free(&a.stores);
    return status;
}
