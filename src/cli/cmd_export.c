/*
 * cmd_export.c - `cuptop export` and export_run(), the writer the TUI calls
 * for a marked window.  The output is streamed (records are read in short
 * read transactions, one per second of trace time) into a temporary file in
 * the output's directory, fsync'ed and renamed into place; on failure or
 * cancellation the temporary is removed.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "export_int.h"

#define NS UINT64_C(1000000000)

static int set_cause(char **cause, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int set_cause(char **cause, const char *fmt, ...)
{
    va_list ap;
    if (!cause)
        return 0;
    free(*cause);
    va_start(ap, fmt);
    if (vasprintf(cause, fmt, ap) < 0)
        *cause = NULL;
    va_end(ap);
    return 0;
}

/* ---- The window scan ------------------------------------------------------ */

struct scan_arg {
    export_ctx *x;
    cupstore_record_fn fn;
    void *arg;
};

static int scan_one(const cupstore_record *r, void *arg)
{
    struct scan_arg *s = arg;
    int rc = s->fn(r, s->arg);
    if (rc)
        return rc;
    if ((++s->x->done & 0xffff) == 0 && s->x->progress &&
        s->x->progress(s->x->done, s->x->total_hint, s->x->progress_arg)) {
        s->x->cancelled = true;
        return ECANCELED;
    }
    return 0;
}

int export_scan(export_ctx *x, cupstore_record_fn fn, export_slice_fn end_slice, void *arg)
{
    struct scan_arg s = {.x = x, .fn = fn, .arg = arg};
    uint64_t t = x->from_ns;
    int rc = 0;
    while (t <= x->to_ns) {
        uint64_t end = (t / NS + 1) * NS - 1;
        if (end > x->to_ns)
            end = x->to_ns;
        if ((rc = cupstore_txn_begin(x->env, false, &x->txn)) != 0)
            return rc;
        rc = cupstore_record_scan(x->txn, t, end, scan_one, &s);
        if (!rc && end_slice)
            rc = end_slice(x, arg);
        cupstore_txn_abort(x->txn);
        x->txn = NULL;
        if (rc)
            return rc;
        if (x->progress && x->progress(x->done, x->total_hint, x->progress_arg)) {
            x->cancelled = true;
            return ECANCELED;
        }
        if (end == UINT64_MAX)
            break;
        t = end + 1;
    }
    return 0;
}

/* ---- Window checks ---------------------------------------------------------- */

static int stop_first(const void *row, void *arg)
{
    (void)row;
    *(bool *)arg = true;
    return 1;
}

static int health_any(const cupstore_health *h, void *arg)
{
    return stop_first(h, arg);
}

static int record_any(const cupstore_record *r, void *arg)
{
    return stop_first(r, arg);
}

static int window_has_data(cupstore_env *env, uint64_t from_ns, uint64_t to_ns, bool *any)
{
    cupstore_txn *txn;
    int rc = cupstore_txn_begin(env, false, &txn);
    *any = false;
    if (rc)
        return rc;
    rc = cupstore_health_scan(txn, from_ns / NS, to_ns / NS, health_any, any);
    if (rc == 1)
        rc = 0;
    if (!rc && !*any) {
        rc = cupstore_record_scan(txn, from_ns, to_ns, record_any, any);
        if (rc == 1)
            rc = 0;
    }
    cupstore_txn_abort(txn);
    return rc;
}

struct hint {
    uint64_t records;
};

static int hint_row(const cupstore_health *h, void *arg)
{
    struct hint *p = arg;
    p->records += h->records_stored ? h->records_stored : h->records_parsed;
    return 0;
}

/* ---- Atomic files -------------------------------------------------------- */

static char *temp_name(const char *path, const char *suffix)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    int dl = slash ? (int)(slash - path + 1) : 0;
    char *t = NULL;
    if (asprintf(&t, "%.*s.%s.%s", dl, path, base, suffix) < 0)
        return NULL;
    return t;
}

static void sync_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, (size_t)(slash - path + (slash == path))) : strdup(".");
    if (!dir)
        return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}

/* Remove a directory tree written by export --format store: at most two
 * levels, only LMDB files.  Anything else: ENOTEMPTY, nothing removed
 * beyond what was checked. */
static int remove_store_tree(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int rc = 0;
    if (!d)
        return errno;
    while (!rc && (de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char *p = NULL;
        struct stat st;
        if (asprintf(&p, "%s/%s", dir, de->d_name) < 0) {
            rc = ENOMEM;
            break;
        }
        if (lstat(p, &st) != 0)
            rc = errno;
        else if (S_ISDIR(st.st_mode) && depth == 0)
            rc = remove_store_tree(p, 1);
        else if (S_ISREG(st.st_mode) && depth == 1 &&
                 (!strcmp(de->d_name, "data.mdb") || !strcmp(de->d_name, "lock.mdb")))
            rc = unlink(p) ? errno : 0;
        else
            rc = ENOTEMPTY;
        free(p);
    }
    closedir(d);
    if (!rc && rmdir(dir) != 0)
        rc = errno;
    return rc;
}

typedef int (*file_writer)(export_ctx *x, xout *o);

static int write_file(export_ctx *x, file_writer w, char **cause)
{
    const export_opts *o = x->o;
    char *tmp = temp_name(o->output, "XXXXXX");
    xout out;
    int rc, fd;
    if (!tmp)
        return ENOMEM;
    if ((fd = mkstemp(tmp)) < 0) {
        rc = errno;
        set_cause(cause, "cannot create a file beside %s: %s", o->output, strerror(rc));
        free(tmp);
        return rc;
    }
    mode_t um = umask(0);
    umask(um);
    fchmod(fd, 0666 & ~um);
    if ((rc = xout_init(&out, fd)) == 0) {
        xout_write_behind(&out);
        rc = w(x, &out);
        int frc = xout_flush(&out);
        if (!rc)
            rc = frc;
        xout_free(&out);
    }
    if (!rc && fsync(fd) != 0)
        rc = errno;
    if (close(fd) != 0 && !rc)
        rc = errno;
    if (!rc) {
        if (o->force) {
            if (rename(tmp, o->output) != 0)
                rc = errno;
        } else if (link(tmp, o->output) != 0) { /* never replaces */
            rc = errno;
        } else {
            unlink(tmp);
        }
        if (rc == EEXIST) {
            set_cause(cause, "%s exists (use --force to replace it)", o->output);
            unlink(tmp);
            free(tmp);
            return -EEXIST;
        }
    }
    if (rc)
        unlink(tmp);
    else
        sync_parent(o->output);
    free(tmp);
    return rc;
}

/* chrome, jsonl, csv to standard output: streamed as written; nothing to
 * rename, and a pipe cannot be fsync'ed (a file or device still is). */
static int write_stdout(export_ctx *x, file_writer w)
{
    xout out;
    int rc = xout_init(&out, STDOUT_FILENO);
    if (rc)
        return rc;
    rc = w(x, &out);
    int frc = xout_flush(&out);
    if (!rc)
        rc = frc;
    xout_free(&out);
    struct stat st;
    if (!rc && fstat(STDOUT_FILENO, &st) == 0 && S_ISREG(st.st_mode) &&
        fsync(STDOUT_FILENO) != 0)
        rc = errno;
    return rc;
}

static int write_store(export_ctx *x, char **cause)
{
    const export_opts *o = x->o;
    char *tmp = temp_name(o->output, "XXXXXX"), *old = NULL;
    int rc;
    if (!tmp)
        return ENOMEM;
    if (!mkdtemp(tmp)) {
        rc = errno;
        set_cause(cause, "cannot create a directory beside %s: %s", o->output, strerror(rc));
        free(tmp);
        return rc;
    }
    rc = export_store(x, tmp);
    if (!rc) {
        struct stat st;
        if (lstat(o->output, &st) == 0) {
            if (!o->force) {
                set_cause(cause, "%s exists (use --force to replace it)", o->output);
                rc = -EEXIST;
            } else if (!(old = temp_name(o->output, "old.XXXXXX"))) {
                rc = ENOMEM;
            } else {
                /* A fresh name of the same type, so the rename replaces
                 * our own placeholder and never someone else's leftover
                 * (a .PATH.old from an earlier kept export). */
                int fd = -1;
                if (S_ISDIR(st.st_mode) ? !mkdtemp(old) : (fd = mkstemp(old)) < 0)
                    rc = errno;
                else if (fd >= 0)
                    close(fd);
                if (!rc && rename(o->output, old) != 0) {
                    rc = errno;
                    if (S_ISDIR(st.st_mode))
                        rmdir(old);
                    else
                        unlink(old);
                }
                if (rc) {
                    set_cause(cause, "cannot move the previous %s aside: %s", o->output,
                              strerror(rc));
                    free(old);
                    old = NULL;
                }
            }
        }
        if (!rc && rename(tmp, o->output) != 0) {
            rc = errno;
            if (old)
                rename(old, o->output);
        }
        if (!rc && old) {
            /* The old output: a store tree we remove, or a plain file. */
            if (lstat(old, &st) == 0 && !S_ISDIR(st.st_mode))
                unlink(old);
            else if (remove_store_tree(old, 0) != 0)
                fprintf(stderr, "cuptop export: the previous %s was kept as %s (not a "
                                "cuptop store export)\n", o->output, old);
        }
    }
    if (rc)
        remove_store_tree(tmp, 0);
    else
        sync_parent(o->output);
    free(tmp);
    free(old);
    return rc;
}

/* ---- export_run ---------------------------------------------------------- */

static file_writer writer_for(const char *format)
{
    if (!strcmp(format, "chrome"))
        return export_chrome;
    if (!strcmp(format, "jsonl"))
        return export_jsonl;
    if (!strcmp(format, "csv"))
        return export_csv;
    return NULL;
}

int export_run(const export_opts *o, export_progress_fn progress, void *arg, char **cause)
{
    export_ctx x;
    char *dir = NULL;
    int rc, status = CUPTOP_EXIT_USAGE;

    if (cause)
        *cause = NULL;
    memset(&x, 0, sizeof x);
    if (!o || !o->session || !o->output || !*o->output || !o->format)
        return set_cause(cause, "export needs a session, a format and an output path"),
               CUPTOP_EXIT_USAGE;
    bool is_store = !strcmp(o->format, "store");
    file_writer w = writer_for(o->format);
    if (!w && !is_store)
        return set_cause(cause, "unknown format '%s' (chrome, jsonl, csv or store)", o->format),
               CUPTOP_EXIT_USAGE;
    bool to_stdout = o->allow_stdout && !strcmp(o->output, "-");
    if (to_stdout && is_store)
        return set_cause(cause, "--format store writes a directory: give -o a path, not -"),
               CUPTOP_EXIT_USAGE;
    if ((rc = cupstore_dir_resolve(o->store_dir, &dir)) != 0)
        return set_cause(cause, "cannot find the store: %s", cupstore_strerror(rc)),
               CUPTOP_EXIT_USAGE;
    x.o = o;
    x.store_dir = dir;
    x.progress = progress;
    x.progress_arg = arg;
    if ((rc = cupstore_session_open(&x.env, dir, o->session, CUPSTORE_RDONLY)) != 0) {
        set_cause(cause, "session %s in %s: %s", o->session, dir, cli_open_error(rc));
        goto out;
    }
    x.from_ns = o->from_ns;
    x.to_ns = o->to_ns;
    if (o->mark) {
        cupstore_txn *txn;
        cupstore_mark m;
        if ((rc = cupstore_txn_begin(x.env, false, &txn)) != 0) {
            set_cause(cause, "session %s: %s", o->session, cli_open_error(rc));
            goto out;
        }
        rc = cupstore_mark_get(txn, o->mark, &m);
        cupstore_txn_abort(txn);
        if (rc) {
            set_cause(cause, "session %s has no mark named '%s'", cupstore_env_id(x.env),
                      o->mark);
            goto out;
        }
        x.from_ns = m.from_ns;
        x.to_ns = m.to_ns;
    }
    if (x.from_ns > x.to_ns) {
        set_cause(cause, "the window is inverted (from is after to)");
        goto out;
    }
    if ((rc = model_summarize(x.env, x.from_ns / NS, x.to_ns / NS, &x.sum, NULL)) != 0) {
        set_cause(cause, "session %s: %s", cupstore_env_id(x.env), cli_open_error(rc));
        goto out;
    }
    /* Clamp an open-ended window to the data (the scan walks seconds). */
    uint64_t start = x.sum.start_ns, end = x.sum.end_ns;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * NS + (uint64_t)ts.tv_nsec;
    if (x.sum.state == MODEL_STATE_RUNNING && now > end)
        end = now;
    if (start > 60 * NS && x.from_ns < start - 60 * NS)
        x.from_ns = start - 60 * NS;
    if (end && end < UINT64_MAX - 60 * NS && x.to_ns > end + 60 * NS)
        x.to_ns = end + 60 * NS;
    bool any;
    if (x.from_ns > x.to_ns || (rc = window_has_data(x.env, x.from_ns, x.to_ns, &any)) != 0 ||
        !any) {
        if (rc)
            set_cause(cause, "session %s: %s", cupstore_env_id(x.env), cli_open_error(rc));
        else {
            char a[32], b[32];
            model_format_second(start / NS, a, sizeof a);
            model_format_second(end / NS, b, sizeof b);
            set_cause(cause, "the window holds no data (session %s runs from %s to %s)",
                      cupstore_env_id(x.env), a, b);
        }
        goto out;
    }
    x.base_ns = x.from_ns / NS * NS;
    {
        struct hint h = {0};
        cupstore_txn *txn;
        if (cupstore_txn_begin(x.env, false, &txn) == 0) {
            cupstore_health_scan(txn, x.from_ns / NS, x.to_ns / NS, hint_row, &h);
            cupstore_txn_abort(txn);
        }
        x.total_hint = h.records;
    }
    if (!to_stdout) {
        struct stat st;
        char *pdir = strdup(o->output), *slash = pdir ? strrchr(pdir, '/') : NULL;
        bool dir_ok = true;
        if (slash) {
            *(slash == pdir ? slash + 1 : slash) = '\0';
            dir_ok = stat(pdir, &st) == 0 && S_ISDIR(st.st_mode);
        }
        free(pdir);
        if (!dir_ok) {
            set_cause(cause, "no directory to write %s into", o->output);
            goto out;
        }
        if (lstat(o->output, &st) == 0) {
            if (!o->force) {
                set_cause(cause, "%s exists (use --force to replace it)", o->output);
                goto out;
            }
            if (is_store ? !S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode) : !S_ISREG(st.st_mode)) {
                set_cause(cause, "%s is not a %s; not replacing it", o->output,
                          is_store ? "directory or regular file" : "regular file");
                goto out;
            }
        }
    }

    rc = to_stdout ? write_stdout(&x, w)
         : is_store ? write_store(&x, cause)
                    : write_file(&x, w, cause);
    if (rc == -EEXIST) {
        status = CUPTOP_EXIT_USAGE;
    } else if (rc == ECANCELED || x.cancelled) {
        set_cause(cause, to_stdout ? "cancelled; the output stream is incomplete"
                                   : "cancelled; nothing was written");
        status = CUPTOP_EXIT_NO;
    } else if (rc) {
        if (!cause || !*cause)
            set_cause(cause, "writing %s failed: %s", to_stdout ? "standard output" : o->output,
                      rc > 0 ? strerror(rc) : cupstore_strerror(rc));
        status = CUPTOP_EXIT_NO;
    } else {
        status = CUPTOP_EXIT_OK;
        /* Not a failure, but an empty trace must not pass for a quiet one. */
        if (x.sum.count_only && cause)
            set_cause(cause, "session %s is count-only (CUPTOP_SINK=null): the agent counted "
                             "every record but stored none, by design, so this export holds "
                             "%s", cupstore_env_id(x.env),
                      !strcmp(o->format, "csv") ? "its per-second counts and no record"
                                                : "no record");
    }
out:
    model_summary_free(&x.sum);
    name_cache_free(&x.names);
    if (x.env)
        cupstore_env_close(x.env);
    free(dir);
    return status;
}

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

static void usage(FILE *f)
{
    fputs("usage: cuptop export [--store DIR] SESSION (--from T --to T | --mark NAME)\n"
          "                     --format chrome|jsonl|csv|store -o PATH [--force]\n\n"
          "Write a window of a session:\n"
          "  chrome  Trace Event JSON for Perfetto UI / chrome://tracing\n"
          "  jsonl   one JSON object per record per line\n"
          "  csv     the per-second health rows, with a header line\n"
          "  store   a standalone store holding just the window (cuptop --store PATH)\n\n"
          "T: unix seconds, +N (after the start), -N (before the end), start, end,\n"
          "   or YYYY-mm-ddTHH:MM:SSZ.  Both ends are inclusive.\n"
          "The output is written to a temporary file and renamed into place; an\n"
          "existing PATH is only replaced with --force.  -o - writes chrome, jsonl\n"
          "or csv to standard output (e.g. | gzip > trace.json.gz).\n"
          "Exit status: 0 written, 1 writing failed or cancelled, 2 usage error,\n"
          "unknown session or mark, empty or inverted window, unreadable store.\n",
          f);
}

/* Session start/end seconds, for relative --from/--to. */
static int session_bounds(const char *dir, const char *id, uint64_t *start_s, uint64_t *end_s,
                          char **cause)
{
    model_summary s;
    int rc = model_summarize_id(dir, id, 0, UINT64_MAX, &s, NULL);
    if (rc) {
        if (asprintf(cause, "session %s in %s: %s", id, dir, cli_open_error(rc)) < 0)
            *cause = NULL;
        return rc;
    }
    *start_s = s.start_ns / NS;
    *end_s = s.end_ns / NS;
    model_summary_free(&s);
    return 0;
}

int cmd_export(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"store", required_argument, NULL, 's'}, {"from", required_argument, NULL, 'f'},
        {"to", required_argument, NULL, 't'},    {"mark", required_argument, NULL, 'm'},
        {"format", required_argument, NULL, 'F'}, {"output", required_argument, NULL, 'o'},
        {"force", no_argument, NULL, 'x'},       {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *cmd = argv[0], *store = NULL, *from = NULL, *to = NULL;
    export_opts o;
    int c;

    memset(&o, 0, sizeof o);
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 's': store = optarg; break;
        case 'f': from = optarg; break;
        case 't': to = optarg; break;
        case 'm': o.mark = optarg; break;
        case 'F': o.format = optarg; break;
        case 'o': o.output = optarg; break;
        case 'x': o.force = true; break;
        case 'h': usage(stdout); return CUPTOP_EXIT_OK;
        default:
            return cli_bad_option(cmd, argv);
        }
    }
    if (optind + 1 != argc)
        return cli_one_session(cmd, argc, argv);
    o.session = argv[optind];
    if (!o.format)
        return cli_usage_error(cmd, "--format is required (chrome, jsonl, csv or store)");
    if (!writer_for(o.format) && strcmp(o.format, "store") != 0)
        return cli_usage_error(cmd, "unknown format '%s' (chrome, jsonl, csv or store)",
                               o.format);
    if (!o.output || !*o.output)
        return cli_usage_error(cmd, "-o PATH is required (- for standard output)");
    o.allow_stdout = true;
    if (!strcmp(o.output, "-") && !strcmp(o.format, "store"))
        return cli_usage_error(cmd, "--format store writes a directory: give -o a path, not -");
    if (o.mark && (from || to))
        return cli_usage_error(cmd, "give either --mark or --from/--to, not both");
    if (!o.mark && (!from || !to))
        return cli_usage_error(cmd, "give a window: --from T --to T, or --mark NAME");

    char *dir = cli_store_dir(cmd, store), *cause = NULL;
    if (!dir)
        return CUPTOP_EXIT_USAGE;
    o.store_dir = dir;
    if (!o.mark) {
        uint64_t start_s, end_s, f, t;
        if (session_bounds(dir, o.session, &start_s, &end_s, &cause) != 0) {
            cli_error(cmd, "%s", cause ? cause : "cannot open the session");
            free(cause);
            free(dir);
            return CUPTOP_EXIT_USAGE;
        }
        if (model_parse_time(from, start_s, end_s, &f) != 0 ||
            model_parse_time(to, start_s, end_s, &t) != 0) {
            free(dir);
            return cli_usage_error(cmd, "bad time '%s'",
                                   model_parse_time(from, start_s, end_s, &f) ? from : to);
        }
        if (f > t) {
            free(dir);
            return cli_usage_error(cmd, "the window is inverted (--from %s is after --to %s)",
                                   from, to);
        }
        o.from_ns = f * NS;
        o.to_ns = t > UINT64_MAX / NS - 1 ? UINT64_MAX : t * NS + NS - 1;
    }

    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    bool tty = isatty(STDERR_FILENO);
    int status = export_run(&o, tty ? show_progress : quiet_progress, NULL, &cause);
    if (tty)
        fputs("\r\033[K", stderr);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (status != CUPTOP_EXIT_OK)
        cli_error(cmd, "%s", cause ? cause : "export failed");
    else if (cause)
        cli_error(cmd, "note: %s", cause);
    free(cause);
    free(dir);
    return status;
}
