/*
 * model_job.c - a job: the sessions of one `cuptop run` (a launcher such as
 * torchrun, or a shell starting several CUDA processes), which share the
 * meta key "job", judged together.  The verdict is the conjunction of the
 * processes' verdicts: one crashed or lossy process makes the whole job
 * INCOMPLETE, and so does a rank below a world size some process named
 * that has no session at all (a process that died before CUDA started, or
 * whose session is gone).  A launcher that started CUDA (torchrun asking
 * for the device count) has a session of its own with no CUDA work in it:
 * in a job with ranks it is marked the job's launcher.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* By rank (no rank last), then start, then id. */
static int proc_cmp(const void *a, const void *b)
{
    const model_summary *x = a, *y = b;
    unsigned rx = x->rank < 0 ? UINT32_MAX : (unsigned)x->rank;
    unsigned ry = y->rank < 0 ? UINT32_MAX : (unsigned)y->rank;
    if (rx != ry)
        return rx < ry ? -1 : 1;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    return strcmp(x->id, y->id);
}

bool model_job_launcher_like(const model_summary *s)
{
    static const unsigned work[] = {CUPSTORE_KIND_KERNEL, CUPSTORE_KIND_MEMCPY,
                                    CUPSTORE_KIND_MEMSET, CUPSTORE_KIND_SYNC,
                                    CUPSTORE_KIND_RUNTIME, CUPSTORE_KIND_DRIVER,
                                    CUPSTORE_KIND_MARKER};
    if (s->rank >= 0 || s->skipped[0] || s->state == MODEL_STATE_CRASHED)
        return false;
    for (size_t i = 0; i < sizeof work / sizeof work[0]; i++)
        if (s->records_by_kind[work[i]])
            return false;
    return true;
}

void model_job_judge(model_job *j)
{
    if (j->n > 1)
        qsort(j->procs, j->n, sizeof *j->procs, proc_cmp);
    j->incomplete = j->crashed = j->running = j->skipped = j->stalled = 0;
    j->world_size = 0;
    j->missing = 0;
    j->first_missing = -1;
    j->duplicate_rank = false;
    j->loss_total = j->records_total = 0;
    memset(j->loss, 0, sizeof j->loss);
    j->start_ns = j->end_ns = 0;
    j->launchers = 0;
    bool ranked = false;
    for (size_t i = 0; i < j->n; i++)
        ranked |= j->procs[i].rank >= 0;
    for (size_t i = 0; i < j->n; i++) {
        j->procs[i].job_launcher = ranked && model_job_launcher_like(&j->procs[i]);
        j->launchers += j->procs[i].job_launcher;
    }
    for (size_t i = 0; i < j->n; i++) {
        const model_summary *s = &j->procs[i];
        if (s->skipped[0])
            j->skipped++;
        else if (!s->complete)
            j->incomplete++;
        if (s->state == MODEL_STATE_CRASHED)
            j->crashed++;
        else if (model_state_live(s->state))
            j->running++;
        if (s->state == MODEL_STATE_STOPPED || s->state == MODEL_STATE_NOT_RESPONDING)
            j->stalled++;
        if (s->world_size > j->world_size)
            j->world_size = s->world_size;
        if (i && s->rank >= 0 && s->rank == j->procs[i - 1].rank)
            j->duplicate_rank = true;
        for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
            j->loss[l] += s->loss[l];
        j->loss_total += s->loss_total;
        j->records_total += s->records_total;
        if (!j->start_ns || (s->start_ns && s->start_ns < j->start_ns))
            j->start_ns = s->start_ns;
        if (s->end_ns > j->end_ns)
            j->end_ns = s->end_ns;
    }
    /* ranks 0..world_size-1 without a session (procs are sorted by rank) */
    size_t k = 0;
    for (int r = 0; r < j->world_size; r++) {
        while (k < j->n && j->procs[k].rank >= 0 && j->procs[k].rank < r)
            k++;
        if (k < j->n && j->procs[k].rank == r)
            continue;
        if (j->first_missing < 0)
            j->first_missing = r;
        j->missing++;
    }
    j->state = j->running ? MODEL_STATE_RUNNING
               : j->crashed ? MODEL_STATE_CRASHED
                            : MODEL_STATE_ENDED;
    j->complete = j->n > 0 && j->incomplete == 0 && j->missing == 0;
}

void model_job_free(model_job *j)
{
    if (!j)
        return;
    for (size_t i = 0; i < j->n; i++)
        model_summary_free(&j->procs[i]);
    free(j->procs);
    for (size_t i = 0; i < j->nopen; i++)
        cupstore_env_close(j->open[i].env);
    free(j->open);
    memset(j, 0, sizeof *j);
}

int model_session_job(cupstore_env *env, char *job, size_t len, bool *own)
{
    cupstore_txn *txn;
    char *v = NULL;
    int rc = cupstore_txn_begin(env, false, &txn);
    if (rc)
        return rc;
    *own = false;
    rc = cupstore_meta_get(txn, "job", &v);
    if (rc == 0 && v && cupstore_job_valid(v)) {
        snprintf(job, len, "%s", v);
        free(v);
        v = NULL;
        if (cupstore_meta_get(txn, "job_source", &v) == 0 && v && !strcmp(v, "session"))
            *own = true;
    } else if (rc == 0 || rc == CUPSTORE_ENOTFOUND) {
        snprintf(job, len, "%s", cupstore_env_id(env));
        *own = true;
    }
    if (rc == CUPSTORE_ENOTFOUND)
        rc = 0;
    free(v);
    cupstore_txn_abort(txn);
    return rc;
}

/* One session of a store, for model_job_read: is it of the job, and if
 * so its summary (guarded: a damaged session stays one). */
struct job_one {
    const char *dir, *id, *job;
    const char *store;          /* the summary's store label (or NULL)   */
    uint64_t from_s, to_s;
    model_summary *sum;         /* filled when of the job                */
    bool member;
    char *cause;
    cupstore_env **keep;        /* non-NULL: a member's session stays open */
};

static int job_one_read(void *arg)
{
    struct job_one *a = arg;
    cupstore_env *env;
    char jid[96];
    bool own;
    int e = cupstore_session_open(&env, a->dir, a->id, CUPSTORE_RDONLY);
    if (e)
        return e;
    if ((e = model_session_job(env, jid, sizeof jid, &own)) == 0 && strcmp(jid, a->job) == 0) {
        a->member = true;
        e = model_summarize(env, a->from_s, a->to_s, a->sum, &a->cause);
        a->sum->store = a->store;
    }
    if (e == 0 && a->member && a->keep)
        *a->keep = env;
    else
        cupstore_env_close(env);
    return e;
}

/* Keep a member's open session in the job (by id: the judgement sorts the
 * summaries). */
static int job_keep(model_job *j, const char *id, const char *store, cupstore_env *env)
{
    struct model_job_open *p = realloc(j->open, (j->nopen + 1) * sizeof *p);
    if (!p) {
        cupstore_env_close(env);
        return ENOMEM;
    }
    j->open = p;
    snprintf(p[j->nopen].id, sizeof p[j->nopen].id, "%s", id);
    p[j->nopen].store = store;
    p[j->nopen++].env = env;
    return 0;
}

cupstore_env *model_job_env(const model_job *j, const model_summary *s)
{
    for (size_t i = 0; i < j->nopen; i++)
        if (!strcmp(j->open[i].id, s->id) && j->open[i].store == s->store)
            return j->open[i].env;
    return NULL;
}

struct job_resum {
    cupstore_env *env;
    uint64_t from_s, to_s;
    model_summary sum;
    char *cause;
};

static int job_resum_read(void *arg)
{
    struct job_resum *a = arg;
    return model_summarize(a->env, a->from_s, a->to_s, &a->sum, &a->cause);
}

int model_job_resummarize(model_job *j, uint64_t from_s, uint64_t to_s, char **cause)
{
    for (size_t i = 0; i < j->n; i++) {
        struct job_resum a = {.env = model_job_env(j, &j->procs[i]), .from_s = from_s,
                              .to_s = to_s};
        int e = a.env ? cupstore_guarded(job_resum_read, &a) : CUPSTORE_ENOTFOUND;
        if (e) {
            if (e == CUPSTORE_EFAULT)
                a.cause = NULL;   /* what the faulted read held is lost */
            if (cause && a.cause) {
                *cause = a.cause;   /* "session ID: ..." */
                a.cause = NULL;
            } else if (cause && asprintf(cause, "session %s: %s", j->procs[i].id,
                                         e == CUPSTORE_EFAULT ? model_fault_text()
                                                              : model_strerror(e)) < 0) {
                *cause = NULL;
            }
            free(a.cause);
            return e;
        }
        free(a.cause);
        a.sum.store = j->procs[i].store;
        model_summary_free(&j->procs[i]);
        j->procs[i] = a.sum;
    }
    model_job_judge(j);
    return 0;
}

/* How a job is being read: what each store's sessions are judged on. */
struct job_reading {
    const char *job;
    uint64_t from_s, to_s;
    bool keep;
    size_t cap;                 /* of out->procs                          */
    size_t *unreadable;
    model_job_error_fn err;
    void *arg;
};

/* Name one session of store dir that cannot be read (e: its code). */
static void job_unreadable(const struct job_reading *r, const char *dir, const char *id,
                           int e, char *cause)
{
    ++*r->unreadable;
    if (!r->err) {
        free(cause);
        return;
    }
    if (!cause && asprintf(&cause, "session %s in %s: %s", id, dir,
                           e == CUPSTORE_EFAULT ? model_fault_text() : model_strerror(e)) < 0)
        cause = NULL;
    r->err(id, e, cause, r->arg);
}

/* Add the job's sessions of store dir (label: the summaries' store) to
 * out.  0, ENOMEM, or the code of a store that cannot be listed. */
static int job_read_dir(struct job_reading *r, const char *dir, const char *label,
                        model_job *out)
{
    char **ids = NULL;
    size_t n = 0;
    int rc = cupstore_dir_sessions(dir, &ids, &n);
    if (rc)
        return rc;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (out->n == r->cap) {
            size_t nc = r->cap ? r->cap * 2 : 8;
            model_summary *p = realloc(out->procs, nc * sizeof *p);
            if (!p) {
                rc = ENOMEM;
                break;
            }
            out->procs = p;
            r->cap = nc;
        }
        cupstore_env *kept = NULL;
        struct job_one a = {.dir = dir, .id = ids[i], .job = r->job, .store = label,
                            .from_s = r->from_s, .to_s = r->to_s, .sum = &out->procs[out->n],
                            .keep = r->keep ? &kept : NULL};
        memset(a.sum, 0, sizeof *a.sum);
        int e = cupstore_guarded(job_one_read, &a);
        if (e == 0 && a.member) {
            out->n++;
            if (kept && (rc = job_keep(out, ids[i], label, kept)) != 0)
                break;
        }
        if (e == CUPSTORE_EFAULT) {
            /* what the faulted reads held is lost (cupstore_guarded) */
            memset(a.sum, 0, sizeof *a.sum);
            a.cause = NULL;
        }
        if (e == ENOMEM && !a.member) {
            rc = ENOMEM;
            break;
        }
        if (e)
            job_unreadable(r, dir, ids[i], e, a.cause);
    }
    cupstore_ids_free(ids, n);
    return rc;
}

/* The end of a reading: judged, or freed on failure or when empty. */
static int job_read_end(model_job *out, int rc)
{
    if (rc == 0 && !out->n)
        rc = CUPSTORE_ENOTFOUND;
    if (rc) {
        model_job_free(out);
        return rc;
    }
    model_job_judge(out);
    return 0;
}

static int job_read(const char *dir, const char *job, uint64_t from_s, uint64_t to_s,
                    bool keep, model_job *out, size_t *unreadable, model_job_error_fn err,
                    void *arg)
{
    struct job_reading r = {.job = job, .from_s = from_s, .to_s = to_s, .keep = keep,
                            .unreadable = unreadable, .err = err, .arg = arg};
    memset(out, 0, sizeof *out);
    *unreadable = 0;
    snprintf(out->id, sizeof out->id, "%s", job);
    out->nstores = 1;
    return job_read_end(out, job_read_dir(&r, dir, NULL, out));
}

int model_job_read_stores(const model_stores *ss, const char *job, uint64_t from_s,
                          uint64_t to_s, bool keep, model_job *out, size_t *unreadable,
                          model_job_error_fn err, void *arg)
{
    struct job_reading r = {.job = job, .from_s = from_s, .to_s = to_s, .keep = keep,
                            .unreadable = unreadable, .err = err, .arg = arg};
    int rc = 0;
    memset(out, 0, sizeof *out);
    *unreadable = 0;
    snprintf(out->id, sizeof out->id, "%s", job);
    out->nstores = ss->n;
    for (size_t i = 0; i < ss->n && rc != ENOMEM; i++) {
        const model_store *st = &ss->v[i];
        int e = st->err ? st->err
                        : job_read_dir(&r, st->dir, ss->several ? st->label : NULL, out);
        if (e == ENOMEM) {
            rc = e;
        } else if (e) {   /* named, and the other stores are read */
            char *cause = NULL;
            ++*unreadable;
            if (asprintf(&cause, "cannot read the store %s: %s", st->dir,
                         e == ENOENT ? "no such directory" : model_strerror(e)) < 0)
                cause = NULL;
            if (err)
                err(st->dir, e, cause, arg);
            else
                free(cause);
        }
    }
    return job_read_end(out, rc);
}

int model_job_read(const char *dir, const char *job, uint64_t from_s, uint64_t to_s,
                   model_job *out, size_t *unreadable, model_job_error_fn err, void *arg)
{
    return job_read(dir, job, from_s, to_s, false, out, unreadable, err, arg);
}

int model_job_read_open(const char *dir, const char *job, uint64_t from_s, uint64_t to_s,
                        model_job *out, size_t *unreadable, model_job_error_fn err, void *arg)
{
    return job_read(dir, job, from_s, to_s, true, out, unreadable, err, arg);
}
