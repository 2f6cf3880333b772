/*
 * export_job.c - export --job: every process of a job (the sessions of one
 * `cuptop run`, model_job) into one chrome trace.  Each process keeps its
 * own export context (env, names, window summary); they share the window
 * and base_ns, which is right because CUPTI timestamps are wall-clock
 * nanoseconds in every process.  The chrome writer gives each process one
 * group (export_chrome.c).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export_int.h"

#define NS UINT64_C(1000000000)

static void job_cause(char **cause, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void job_cause(char **cause, const char *fmt, ...)
{
    va_list ap;
    if (!cause || *cause)
        return;
    va_start(ap, fmt);
    if (vasprintf(cause, fmt, ap) < 0)
        *cause = NULL;
    va_end(ap);
}

/* An unreadable session may be one of the job's processes: the export
 * refuses rather than write a trace with a process missing. */
static void job_unreadable(const char *id, int rc, char *why, void *arg)
{
    char **cause = arg;
    (void)rc;
    job_cause(cause, "%s; it may be a process of the job, so no trace was written", why ? why : id);
    free(why);
}

void export_job_close(export_ctx *x)
{
    export_job *jb = x->job;
    if (!jb)
        return;
    for (size_t i = 0; i < jb->n; i++)
        name_cache_free(&jb->procs[i].names);
    free(jb->procs);
    /* owns the summaries the contexts point at, and their open sessions */
    model_job_free(&jb->j);
    free(jb);
    x->job = NULL;
}

/* What --job refuses whatever the store holds. */
static int job_refused(const export_opts *o, char **cause)
{
    if (strcmp(o->format, "chrome") != 0 && strcmp(o->format, "perfetto") != 0) {
        job_cause(cause, "--job writes one trace: use --format chrome or perfetto");
        return -1;
    }
    if (o->mark) {
        job_cause(cause, "--job exports whole processes or a --from/--to window, not a mark");
        return -1;
    }
    return 0;
}

void export_job_group_name(const export_job *jb, size_t i, char *buf, size_t len)
{
    const model_summary *s = &jb->procs[i].sum;
    char host[80] = "";
    if (jb->j.nstores > 1)   /* the stores of several hosts: say which */
        snprintf(host, sizeof host, " on %.60s", s->host[0] ? s->host : "?");
    if (s->rank >= 0)
        snprintf(buf, len, "rank %d%s (pid %d)", s->rank, host, s->pid);
    else if (s->job_launcher)   /* model_job_judge: the job's launcher */
        snprintf(buf, len, "launcher%s (pid %d)", host, s->pid);
    else
        snprintf(buf, len, "no rank%s (pid %d)", host, s->pid);
}

static int latest_start(const cupstore_record *r, void *arg)
{
    uint64_t *last = arg;
    if (r->start_ns > *last)
        *last = r->start_ns;
    return 0;
}

static int earliest_start(const cupstore_record *r, void *arg)
{
    uint64_t *first = arg;
    if (r->start_ns && r->start_ns < *first)
        *first = r->start_ns;
    return 0;
}

#define EARLIEST_FOUND INT_MAX   /* the lost scan stops: no errno or store code */

static int earliest_lost(const cupstore_lost *l, void *arg)
{
    uint64_t *first = arg;
    if (!l->launch_ns)
        return 0;
    if (l->launch_ns < *first)
        *first = l->launch_ns;
    return EARLIEST_FOUND;   /* rows come in launch order: the first is the earliest */
}

/* The end reaches the last record stored: a GPU timestamp may lie past
 * the session's end (work queued ahead of the host's clock, a skew between
 * the clocks), and "--to end" means the whole session, never fewer records
 * than it holds.  The start reaches back to the first record and the first
 * lost launch: the session's start is stamped when its store is made,
 * after CUPTI was attached, and what was launched in between belongs to it
 * (the truth matrix found the lost rows of a forked session's first
 * millisecond cut off by "--from start" when that millisecond fell in the
 * second before).  Only the records before the start and after the end are
 * read. */
/* The bounds *first_ns, *last_ns of a session summarized over all of it
 * (model_summarize from 0 to the end), reaching its data. */
static int bounds_reach(cupstore_env *env, uint64_t *first_ns, uint64_t *last_ns)
{
    cupstore_txn *txn = NULL;
    uint64_t first = *first_ns, last = *last_ns;
    int rc = cupstore_txn_begin(env, false, &txn);
    if (rc)
        return rc;
    rc = cupstore_record_scan(txn, last, UINT64_MAX, latest_start, &last);
    if (!rc && first)
        rc = cupstore_record_scan(txn, 0, first, earliest_start, &first);
    if (!rc && first && (rc = cupstore_lost_scan(txn, 0, first, earliest_lost, &first)) ==
                            EARLIEST_FOUND)
        rc = 0;
    cupstore_txn_abort(txn);
    if (rc == 0) {
        *first_ns = first;
        *last_ns = last;
    }
    return rc;
}

int export_session_bounds(cupstore_env *env, uint64_t *first_ns, uint64_t *last_ns,
                          char **cause)
{
    model_summary s;
    int rc = model_summarize(env, 0, UINT64_MAX, &s, cause);
    if (rc)
        return rc;
    uint64_t first = s.start_ns, last = s.end_ns;
    model_summary_free(&s);
    if ((rc = bounds_reach(env, &first, &last)) != 0) {
        if (cause && asprintf(cause, "%s", model_strerror(rc)) < 0)
            *cause = NULL;
        return rc;
    }
    *first_ns = first;
    *last_ns = last;
    return 0;
}

void export_job_bounds(const model_job *j, uint64_t *start_ns, uint64_t *end_ns)
{
    *start_ns = j->start_ns;
    *end_ns = j->end_ns;
    for (size_t i = 0; i < j->n; i++) {
        cupstore_env *env = model_job_env(j, &j->procs[i]);
        uint64_t first = j->procs[i].start_ns, last = j->procs[i].end_ns;
        if (!env || bounds_reach(env, &first, &last) != 0)
            continue;   /* read with the job: its summary's bounds stand */
        if (first && (!*start_ns || first < *start_ns))
            *start_ns = first;
        if (last > *end_ns)
            *end_ns = last;
    }
}

int export_job_read(const char *dir, const export_opts *o, model_job *out, char **cause)
{
    size_t unreadable = 0;
    memset(out, 0, sizeof *out);
    if (job_refused(o, cause))
        return -1;
    int rc = o->stores ? model_job_read_stores(o->stores, o->job, 0, UINT64_MAX, true, out,
                                               &unreadable, job_unreadable, cause)
                       : model_job_read_open(dir, o->job, 0, UINT64_MAX, out, &unreadable,
                                             job_unreadable, cause);
    if (rc == CUPSTORE_ENOTFOUND && !unreadable && o->stores) {
        job_cause(cause, "no session of job %s in any of the %zu stores", o->job,
                  o->stores->n);
        return -1;
    }
    if (rc == CUPSTORE_ENOTFOUND && !unreadable) {
        job_cause(cause, "no session of job %s in %s", o->job, dir);
        return -1;
    }
    if (rc || unreadable) {
        job_cause(cause, "cannot read the store %s: %s", dir, model_strerror(rc));
        model_job_free(out);
        return -1;
    }
    return 0;
}

int export_job_open(export_ctx *x, const char *dir, char **cause)
{
    const export_opts *o = x->o;
    if (job_refused(o, cause))
        return -1;
    if (!(x->job = calloc(1, sizeof *x->job)))
        return job_cause(cause, "out of memory"), -1;
    export_job *jb = x->job;
    uint64_t from_s = o->from_ns / NS, to_s = o->to_ns / NS;
    int rc;
    if (o->job_read) {   /* read by the caller, sessions open: taken over */
        jb->j = *o->job_read;
        memset(o->job_read, 0, sizeof *o->job_read);
    } else if (export_job_read(dir, o, &jb->j, cause) != 0) {
        return -1;
    }
    /* the job's bounds, on its sessions summarized over all of them */
    uint64_t start, end;
    export_job_bounds(&jb->j, &start, &end);
    /* the processes over the window, on the sessions read once */
    if ((o->from_ns || o->to_ns != UINT64_MAX) &&
        (rc = model_job_resummarize(&jb->j, from_s, to_s, cause)) != 0) {
        job_cause(cause, "cannot read the store %s: %s", dir, model_strerror(rc));
        return -1;
    }
    model_job *j = &jb->j;
    uint64_t seconds = 0;
    for (size_t i = 0; i < j->n; i++)
        seconds += j->procs[i].seconds;
    if (!seconds) {
        char a[32], b[32];
        model_format_second(j->start_ns / NS, a, sizeof a);
        model_format_second(j->end_ns / NS, b, sizeof b);
        job_cause(cause, "the window holds no data (job %s runs from %s to %s)", o->job, a, b);
        return -1;
    }
    /* the window, clamped to the job's data as export_run does for one */
    x->from_ns = o->from_ns;
    x->to_ns = o->to_ns;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * NS + (uint64_t)ts.tv_nsec;
    if (j->state == MODEL_STATE_RUNNING && now > end)
        end = now;
    /* the job's own seconds, not a margin around them: the trace's clock
     * starts at the second the first process started (issue 27: a 60 s
     * pad put every timestamp near 60,000,000 us) */
    if (start && x->from_ns < start / NS * NS)
        x->from_ns = start / NS * NS;
    if (end && end < UINT64_MAX - NS && x->to_ns > (end / NS + 1) * NS)
        x->to_ns = (end / NS + 1) * NS;
    x->base_ns = x->from_ns / NS * NS;
    if (!(jb->procs = calloc(j->n, sizeof *jb->procs)))
        return job_cause(cause, "out of memory"), -1;
    jb->n = j->n;
    for (size_t i = 0; i < j->n; i++) {
        export_ctx *m = &jb->procs[i];
        const model_summary *s = &j->procs[i];
        m->o = o;
        m->store_dir = x->store_dir;
        m->from_ns = x->from_ns;
        m->to_ns = x->to_ns;
        m->base_ns = x->base_ns;
        m->sum = *s;   /* shallow: j owns it */
        m->names.raw = o->mangled;
        m->progress = x->progress;
        m->progress_arg = x->progress_arg;
        for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
            x->total_hint += s->records_by_kind[k];
        /* the group pid: the process' own, unless two processes share it
         * (several hosts) */
        m->group = s->pid > 0 ? (uint64_t)s->pid : 2000000000u + i;
        for (size_t k = 0; k < i; k++)
            if (jb->procs[k].group == m->group)
                m->group = 2000000000u + i;
        if (!(m->env = model_job_env(j, s))) {   /* borrowed: j closes it */
            job_cause(cause, "session %s in %s: %s", s->id, s->store ? s->store : dir,
                      model_strerror(CUPSTORE_ENOTFOUND));
            return -1;
        }
    }
    return 0;
}
