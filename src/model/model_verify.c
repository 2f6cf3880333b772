/*
 * model_verify.c - a session read back: model_verify counts the records
 * and NVTX ranges the store still gives and names the damage;
 * model_session_read opens one session once and reads it under the store's
 * read-fault guard (DESIGN invariant 11), and the by-id entry points
 * (model_summarize_id, model_verify_id) are reads through it.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model_int.h"

/* The cause of a failure to open session id in dir. */
static int fail_open(char **cause, int rc, const char *dir, const char *id)
{
    if (cause && asprintf(cause, "session %s in %s: %s", id, dir, model_strerror(rc)) < 0)
        *cause = NULL;
    return rc;
}

/* One session opened once and read under the store's read-fault guard
 * (DESIGN invariant 11): model_session_read and the by-id entry points. */
struct session_read {
    const char *dir, *id;
    model_session_fn fn;
    void *arg;
    char **cause;
};

static int session_read_run(void *arg)
{
    struct session_read *r = arg;
    cupstore_env *env;
    int rc = cupstore_session_open(&env, r->dir, r->id, CUPSTORE_RDONLY);
    if (rc)
        return fail_open(r->cause, rc, r->dir, r->id);
    rc = r->fn(env, r->arg, r->cause);
    cupstore_env_close(env);
    return rc;
}

int model_session_read(const char *dir, const char *id, model_session_fn fn, void *arg,
                       char **cause)
{
    struct session_read r = {.dir = dir, .id = id, .fn = fn, .arg = arg, .cause = cause};
    if (cause)
        *cause = NULL;
    int rc = cupstore_guarded(session_read_run, &r);
    /* after a fault, what fn had allocated is left (the guard cannot know
     * it) and the session is named as damaged */
    if (rc == CUPSTORE_EFAULT && cause) {
        *cause = NULL;
        if (asprintf(cause, "session %s in %s: %s", id, dir, model_fault_text()) < 0)
            *cause = NULL;
    }
    return rc;
}

int model_verify_whole(cupstore_env *env, model_summary *out, bool *verified,
                       uint64_t *records_read, char **cause)
{
    int rc = model_summarize(env, 0, UINT64_MAX, out, cause);
    if (rc == 0 && (rc = model_verify(env, out, verified, records_read)) != 0) {
        if (cause && asprintf(cause, "session %s: reading the records back: %s", out->id,
                              model_strerror(rc)) < 0)
            *cause = NULL;
        model_summary_free(out);
    }
    return rc;
}

/* What model_summarize_id and model_verify_id read. */
struct by_id {
    uint64_t from_s, to_s;
    model_summary *out;
    bool verify, *verified;
    uint64_t *records_read;
};

static int by_id_read(cupstore_env *env, void *arg, char **cause)
{
    struct by_id *a = arg;
    if (a->verify)
        return model_verify_whole(env, a->out, a->verified, a->records_read, cause);
    return model_summarize(env, a->from_s, a->to_s, a->out, cause);
}

/* Run by_id_read on session id; after a fault, out is left empty. */
static int by_id_guarded(const char *dir, const char *id, struct by_id *a, char **cause)
{
    int rc = model_session_read(dir, id, by_id_read, a, cause);
    if (rc == CUPSTORE_EFAULT)
        memset(a->out, 0, sizeof *a->out);
    return rc;
}

int model_summarize_id(const char *dir, const char *id, uint64_t from_s, uint64_t to_s,
                       model_summary *out, char **cause)
{
    if (cause)
        *cause = NULL;
    if (!out)
        return CUPSTORE_EINVAL;
    memset(out, 0, sizeof *out);
    struct by_id a = {.from_s = from_s, .to_s = to_s, .out = out};
    return by_id_guarded(dir, id, &a, cause);
}

/* ---- Verify: read the stored records back ---------------------------------- */

static int count_record(const cupstore_record *r, void *arg)
{
    (void)r;
    ++*(uint64_t *)arg;
    return 0;
}

static int sum_stored(const cupstore_health *h, void *arg)
{
    *(uint64_t *)arg += h->records_stored;
    return 0;
}

static int count_range(const cupstore_range *r, void *arg)
{
    (void)r;
    ++*(uint64_t *)arg;
    return 0;
}

/* One table read back in a read txn of its own, under a nested guard so
 * that a page that faults (or trips LMDB's assertions) is a damaged
 * table, not an unreadable session. */
struct readback {
    cupstore_env *env;
    bool ranges;                /* the NVTX range rows, else the records */
    uint64_t n;                 /* rows decoded                          */
    uint64_t rows;              /* ranges: rows LMDB counts              */
};

static int readback_run(void *arg)
{
    struct readback *b = arg;
    cupstore_txn *txn;
    int rc = cupstore_txn_begin(b->env, false, &txn);
    if (rc)
        return rc;
    if (b->ranges) {
        rc = cupstore_range_count(txn, &b->rows);
        if (rc == 0)
            rc = cupstore_range_scan(txn, count_range, &b->n);
    } else {
        rc = cupstore_record_scan(txn, 0, UINT64_MAX, count_record, &b->n);
    }
    cupstore_txn_abort(txn);
    return rc;
}

int model_verify(cupstore_env *env, model_summary *s, bool *verified, uint64_t *records_read)
{
    cupstore_txn *txn;
    cupstore_final f;
    uint64_t want = 0;
    char *exported = NULL;
    *verified = false;
    *records_read = 0;
    if (model_state_live(s->state) || s->count_only)
        return 0;
    int rc = cupstore_txn_begin(env, false, &txn);
    if (rc)
        return rc;
    /* what the agent stored: its final count, else (crashed) the health
     * rows' sum, a lower bound */
    if (cupstore_final_get(txn, &f) == 0)
        want = f.records_stored;
    else
        rc = cupstore_health_scan(txn, 0, UINT64_MAX, sum_stored, &want);
    (void)cupstore_meta_get(txn, "export_of", &exported);
    cupstore_txn_abort(txn);
    bool is_export = exported != NULL;
    free(exported);
    if (rc)
        return rc;
    struct readback rec = {.env = env}, rng = {.env = env, .ranges = true};
    int scan = cupstore_guarded(readback_run, &rec);
    int rscan = cupstore_guarded(readback_run, &rng);
    uint64_t n = rec.n;
    *records_read = n;
    *verified = true;
    uint64_t end_s = s->end_ns / 1000000000u;
    if (rscan == 0 && rng.n != rng.rows)
        rscan = CUPSTORE_ECORRUPT;
    if (rscan && rscan != CUPSTORE_ENOTFOUND) {
        s->complete = false;
        if ((rc = model_reason_add(s, MODEL_REASON_STORE_DAMAGED, 1, end_s, end_s, 0,
                             "store damaged: reading the NVTX ranges back failed after %" PRIu64
                             " of %" PRIu64 " rows (%s%s%s)", rng.n, rng.rows,
                             cupstore_strerror(rscan), rscan == CUPSTORE_EFAULT ? ": " : "",
                             rscan == CUPSTORE_EFAULT ? cupstore_guard_last() : "")) != 0)
            return rc;
    }
    if (scan) {
        s->complete = false;
        return model_reason_add(s, MODEL_REASON_STORE_DAMAGED, 1, end_s, end_s, 0,
                          "store damaged: reading the records back failed after %" PRIu64
                          " records (%s%s%s); the rest of the trace is unreadable",
                          n, cupstore_strerror(scan), scan == CUPSTORE_EFAULT ? ": " : "",
                          scan == CUPSTORE_EFAULT ? cupstore_guard_last() : "");
    }
    if (is_export)
        return 0; /* a window: its counts are not the session's */
    if (n >= want)
        return 0;
    s->complete = false;
    return model_reason_add(s, MODEL_REASON_STORE_DAMAGED, want - n, end_s, end_s, 0,
                      "store damaged: %" PRIu64 " records stored by the agent are missing "
                      "(%" PRIu64 " read back of %" PRIu64 ")", want - n, n, want);
}

int model_verify_id(const char *dir, const char *id, model_summary *out, bool *verified,
                    uint64_t *records_read, char **cause)
{
    if (cause)
        *cause = NULL;
    memset(out, 0, sizeof *out);
    *verified = false;
    *records_read = 0;
    struct by_id a = {.from_s = 0, .to_s = UINT64_MAX, .out = out, .verify = true,
                      .verified = verified, .records_read = records_read};
    return by_id_guarded(dir, id, &a, cause);
}
