/*
 * export_run.c - export_run(), the writer behind `cuptop export` and the
 * monitor's export of a marked window.  The output is streamed (records are read in short
 * read transactions, one per second of trace time) into a temporary file in
 * the output's directory, fsync'ed and renamed into place; on failure or
 * cancellation the temporary is removed.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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
    cupstore_scan_memo *memo;
    int rc = cupstore_scan_memo_new(&memo);
    if (rc)
        return rc;
    /* one short read transaction per second; the memo keeps each second
     * from decoding again the chunks that ended before it (a session with
     * a chunk spanning N seconds decoded every chunk about N times) */
    while (!rc && t <= x->to_ns) {
        uint64_t end = (t / NS + 1) * NS - 1;
        if (end > x->to_ns)
            end = x->to_ns;
        if ((rc = cupstore_txn_begin(x->env, false, &x->txn)) != 0)
            break;
        x->slice_end = end;
        rc = cupstore_record_scan_memo(x->txn, t, end, memo, scan_one, &s);
        if (!rc && end_slice)
            rc = end_slice(x, arg);
        cupstore_txn_abort(x->txn);
        x->txn = NULL;
        if (rc)
            break;
        if (x->progress && x->progress(x->done, x->total_hint, x->progress_arg)) {
            x->cancelled = true;
            rc = ECANCELED;
            break;
        }
        if (end == UINT64_MAX)
            break;
        t = end + 1;
    }
    cupstore_scan_memo_free(memo);
    return rc;
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

/* The temporary file being written, for export_fatal_cleanup (a fatal
 * signal or LMDB assertion outside the guard).  Set and cleared around
 * the write by this thread only; read by a signal handler. */
static char *volatile pending_tmp;

void export_fatal_cleanup(void)
{
    char *t = pending_tmp;
    if (t) {
        pending_tmp = NULL;
        unlink(t);
    }
}

/* A writer's reads under the store's read-fault guard: a damaged page
 * ends the export with CUPSTORE_EFAULT (its temp file removed by the
 * caller) instead of a core dump and a temp file left behind. */
struct guarded_write {
    export_ctx *x;
    file_writer w;
    xout *out;
    const char *store_tmp;      /* write_store: the directory to fill    */
};

static int guarded_write_run(void *arg)
{
    struct guarded_write *g = arg;
    return g->store_tmp ? export_store(g->x, g->store_tmp) : g->w(g->x, g->out);
}

static int guarded_write(export_ctx *x, file_writer w, xout *out, const char *store_tmp)
{
    struct guarded_write g = {x, w, out, store_tmp};
    int rc = cupstore_guarded(guarded_write_run, &g);
    if (rc == CUPSTORE_EFAULT)
        x->faulted = true;
    return rc;
}

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
    pending_tmp = tmp;
    mode_t um = umask(0);
    umask(um);
    fchmod(fd, 0666 & ~um);
    if ((rc = xout_init(&out, fd)) == 0) {
        xout_write_behind(&out);
        rc = guarded_write(x, w, &out, NULL);
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
    pending_tmp = NULL;
    free(tmp);
    return rc;
}

/* chrome, perfetto, jsonl, csv to standard output: streamed as written; nothing to
 * rename, and a pipe cannot be fsync'ed (a file or device still is). */
static int write_stdout(export_ctx *x, file_writer w)
{
    xout out;
    int rc = xout_init(&out, STDOUT_FILENO);
    if (rc)
        return rc;
    rc = guarded_write(x, w, &out, NULL);
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
    rc = guarded_write(x, NULL, NULL, tmp);
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
    if (!strcmp(format, "perfetto"))
        return export_perfetto;
    return NULL;
}

bool export_format_known(const char *format)
{
    return format && (writer_for(format) || !strcmp(format, "store"));
}

/* One session's window: open it (unless the caller lent it open), resolve
 * the mark, judge the window, clamp it to the data.  0, or -1 with *cause
 * set. */
static int session_prepare(export_ctx *x, const export_opts *o, const char *dir, char **cause)
{
    int rc;
    if (o->env) {
        x->env = o->env;
        x->env_lent = true;
    } else if ((rc = cupstore_session_open(&x->env, dir, o->session, CUPSTORE_RDONLY)) != 0) {
        set_cause(cause, "session %s in %s: %s", o->session, dir, model_strerror(rc));
        return -1;
    }
    x->from_ns = o->from_ns;
    x->to_ns = o->to_ns;
    if (o->mark) {
        cupstore_txn *txn;
        cupstore_mark m;
        if ((rc = cupstore_txn_begin(x->env, false, &txn)) != 0) {
            set_cause(cause, "session %s: %s", o->session, model_strerror(rc));
            return -1;
        }
        rc = cupstore_mark_get(txn, o->mark, &m);
        cupstore_txn_abort(txn);
        if (rc == CUPSTORE_ENOTFOUND) {
            set_cause(cause, "session %s has no mark named '%s'", cupstore_env_id(x->env),
                      o->mark);
            return -1;
        }
        if (rc) {
            set_cause(cause, "session %s: cannot read the mark '%s': %s",
                      cupstore_env_id(x->env), o->mark, model_strerror(rc));
            return -1;
        }
        x->from_ns = m.from_ns;
        x->to_ns = m.to_ns;
    }
    if (x->from_ns > x->to_ns) {
        set_cause(cause, "the window is inverted (from is after to)");
        return -1;
    }
    if ((rc = model_summarize(x->env, x->from_ns / NS, x->to_ns / NS, &x->sum, cause)) != 0)
        return -1;
    /* Clamp an open-ended window to the data (the scan walks seconds). */
    uint64_t start = x->sum.start_ns, end = x->sum.end_ns;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * NS + (uint64_t)ts.tv_nsec;
    if (x->sum.state == MODEL_STATE_RUNNING && now > end)
        end = now;
    if (start > 60 * NS && x->from_ns < start - 60 * NS)
        x->from_ns = start - 60 * NS;
    if (end && end < UINT64_MAX - 60 * NS && x->to_ns > end + 60 * NS)
        x->to_ns = end + 60 * NS;
    bool any;
    if (x->from_ns > x->to_ns || (rc = window_has_data(x->env, x->from_ns, x->to_ns, &any)) != 0 ||
        !any) {
        if (rc)
            set_cause(cause, "session %s: %s", cupstore_env_id(x->env), model_strerror(rc));
        else {
            char a[32], b[32];
            model_format_second(start / NS, a, sizeof a);
            model_format_second(end / NS, b, sizeof b);
            set_cause(cause, "the window holds no data (session %s runs from %s to %s)",
                      cupstore_env_id(x->env), a, b);
        }
        return -1;
    }
    x->base_ns = x->from_ns / NS * NS;
    {
        struct hint h = {0};
        cupstore_txn *txn;
        if (cupstore_txn_begin(x->env, false, &txn) == 0) {
            cupstore_health_scan(txn, x->from_ns / NS, x->to_ns / NS, hint_row, &h);
            cupstore_txn_abort(txn);
        }
        x->total_hint = h.records;
    }
    return 0;
}

/* Would writing path touch the store dir: is it the store, inside it, or
 * a directory that holds it?  Compared as real paths: the output's
 * directory resolved (the output itself is replaced, never followed) and
 * its last component appended. */
static bool output_in_store(const char *path, const char *dir)
{
    char *store = realpath(dir, NULL);
    if (!store)
        return false; /* no store there: nothing of it to overwrite */
    const char *slash = strrchr(path, '/');
    char *pdir = slash ? strndup(path, (size_t)(slash - path + (slash == path))) : strdup(".");
    char *rp = pdir ? realpath(pdir, NULL) : NULL, *full = NULL;
    const char *base = slash ? slash + 1 : path;
    bool inside = false;
    if (rp && asprintf(&full, "%s%s%s", rp, strcmp(rp, "/") ? "/" : "", base) >= 0) {
        /* "." and ".." as the last component: resolve the whole path */
        if (!strcmp(base, ".") || !strcmp(base, "..") || !*base) {
            free(full);
            full = realpath(path, NULL);
        }
    }
    if (full) {
        size_t ls = strlen(store), lf = strlen(full);
        inside = (lf >= ls && !strncmp(full, store, ls) && (full[ls] == '/' || !full[ls])) ||
                 (ls > lf && !strncmp(store, full, lf) && (store[lf] == '/' || lf == 1));
    }
    free(full);
    free(rp);
    free(pdir);
    free(store);
    return inside;
}

int export_run(const export_opts *o, export_progress_fn progress, void *arg, char **cause)
{
    export_ctx x;
    char *dir = NULL;
    int rc, status = CUPTOP_EXIT_USAGE;

    if (cause)
        *cause = NULL;
    memset(&x, 0, sizeof x);
    if (!o || (!o->session && !o->job) || !o->output || !*o->output || !o->format)
        return set_cause(cause, "export needs a session, a format and an output path"),
               CUPTOP_EXIT_USAGE;
    bool is_store = !strcmp(o->format, "store");
    file_writer w = writer_for(o->format);
    if (!w && !is_store)
        return set_cause(cause, "unknown format '%s' (chrome, perfetto, jsonl, csv or store)", o->format),
               CUPTOP_EXIT_USAGE;
    bool to_stdout = o->allow_stdout && !strcmp(o->output, "-");
    if (to_stdout && is_store)
        return set_cause(cause, "--format store writes a directory: give -o a path, not -"),
               CUPTOP_EXIT_USAGE;
    if ((rc = cupstore_dir_resolve(o->store_dir, &dir)) != 0)
        return set_cause(cause, "cannot find the store: %s", cupstore_strerror(rc)),
               CUPTOP_EXIT_USAGE;
    x.o = o;
    x.names.raw = o->mangled;
    x.store_dir = dir;
    x.progress = progress;
    x.progress_arg = arg;
    if (o->job ? export_job_open(&x, dir, cause) != 0 : session_prepare(&x, o, dir, cause) != 0)
        goto out;
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
        if (output_in_store(o->output, dir)) {
            set_cause(cause, "%s is inside the store %s (or holds it): an export never "
                             "writes into the store it reads; choose another path",
                      o->output, dir);
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
    } else if (x.faulted) {
        set_cause(cause, "%s %s in %s: its data.mdb is damaged: %s while reading it (check "
                         "it with mdb_stat -a); %s", o->job ? "job" : "session",
                  o->job ? o->job : o->session, dir, cupstore_guard_last(),
                  to_stdout ? "the output stream is incomplete" : "nothing was written");
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
    export_job_close(&x);
    model_summary_free(&x.sum);
    name_cache_free(&x.names);
    if (x.env && !x.env_lent)
        cupstore_env_close(x.env);
    free(dir);
    return status;
}
