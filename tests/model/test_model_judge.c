/*
 * test_model_judge.c - unit tests of the model's judgement on stores built
 * here through the store API: the verdict and its reasons for every loss
 * class and exit path (model_summarize), the read-back check
 * (model_verify), the per-epoch figures, and the first recommendation of
 * each advice case (model_advise).  Each test writes its own session in a
 * fresh mkdtemp() store; the assertions are on values, not golden files.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "model.h"

#define NS UINT64_C(1000000000)
#define T0 UINT64_C(1735732800) /* 2025-01-01T12:00:00Z */
#define MIB (UINT64_C(1) << 20)

/* ---- A session written in the test ---------------------------------- */

typedef struct fx {
    char dir[64];
    cupstore_env *env;
    char *id;
} fx;

/* Per-second rows: a healthy default that each test changes. */
typedef void (*row_fn)(unsigned i, cupstore_health *h, void *arg);

static void row_default(unsigned i, uint64_t t0, cupstore_health *h)
{
    memset(h, 0, sizeof *h);
    h->second = t0 + i;
    h->heartbeat_ns = (t0 + i) * NS + 999000000u;
    h->epoch = 1;
    h->kinds_enabled = CUPSTORE_KINDS_DEFAULT;
    h->buf_requested = h->buf_provided = 10;
    h->buf_completed = h->buf_consumed = 10;
    h->bytes_delivered = 10 * 4 * MIB;
    h->buf_outstanding = 2;
    h->pool_limit = 64;
    h->pool_high_water = 4;
    h->records_by_kind[CUPSTORE_KIND_KERNEL] = 1000;
    h->records_by_kind[CUPSTORE_KIND_MEMCPY] = 200;
    h->records_by_kind[CUPSTORE_KIND_RUNTIME] = 1200;
    h->records_by_kind[CUPSTORE_KIND_DRIVER] = 1200;
    h->records_by_device[0] = 1200;
    h->records_parsed = h->records_stored = 3600;
    h->queue_capacity = 64;
    h->queue_high_water = 2;
    h->commit_lat = (cupstore_lat){10, 300000, 900000, 1000000};
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/cuptop-judge.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    assert_int_equal(cupstore_session_create(&f->env, &f->id, f->dir, (int)getpid(), NULL), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    char cmd[128];
    cupstore_env_close(f->env);
    free(f->id);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

static void meta(fx *f, const char *key, const char *value)
{
    cupstore_txn *txn;
    assert_int_equal(cupstore_txn_begin(f->env, true, &txn), 0);
    assert_int_equal(cupstore_meta_put(txn, key, value), 0);
    assert_int_equal(cupstore_txn_commit(txn), 0);
}

/* Write n rows from t0, each changed by fn; epoch 1 from t0. */
static void rows(fx *f, uint64_t t0, unsigned n, row_fn fn, void *arg)
{
    cupstore_txn *txn;
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)(t0 * NS));
    meta(f, "start_ns", buf);
    assert_int_equal(cupstore_txn_begin(f->env, true, &txn), 0);
    cupstore_epoch e = {.id = 1, .kinds = CUPSTORE_KINDS_DEFAULT, .start_ns = t0 * NS};
    assert_int_equal(cupstore_epoch_put(txn, &e), 0);
    for (unsigned i = 0; i < n; i++) {
        cupstore_health h;
        row_default(i, t0, &h);
        if (fn)
            fn(i, &h, arg);
        assert_int_equal(cupstore_health_put(txn, &h), 0);
    }
    assert_int_equal(cupstore_txn_commit(txn), 0);
}

typedef struct end_spec {
    unsigned exit_path;
    bool protocol_complete, flush_ok;
    uint64_t tail_lost;
    int timed_out_step;          /* -1: none                               */
    int missing_step;            /* -1: none                               */
    uint64_t records_stored;
    uint64_t buffers_outstanding, tail_bound;
} end_spec;

static const end_spec END_OK = {CUPSTORE_EXIT_RETURN, true, true, 0, -1, -1, 0, 0, 0};

static void finish(fx *f, uint64_t end_s, const end_spec *e)
{
    cupstore_txn *txn;
    assert_int_equal(cupstore_txn_begin(f->env, true, &txn), 0);
    for (unsigned st = 0; st < CUPSTORE_STEP_MAX; st++) {
        if ((int)st == e->missing_step)
            continue;
        cupstore_step s = {.step = st, .start_mono_ns = 1000, .end_mono_ns = 2000};
        if ((int)st == e->timed_out_step) {
            s.timed_out = 1;
            s.rc = 110;
        }
        assert_int_equal(cupstore_step_put(txn, &s), 0);
    }
    cupstore_final fin = {.end_ns = end_s * NS, .exit_path = e->exit_path,
                          .protocol_complete = e->protocol_complete, .flush_ok = e->flush_ok,
                          .tail_lost = e->tail_lost, .records_stored = e->records_stored,
                          .buffers_outstanding = e->buffers_outstanding,
                          .tail_bound = e->tail_bound};
    assert_int_equal(cupstore_final_put(txn, &fin), 0);
    assert_int_equal(cupstore_txn_commit(txn), 0);
}

typedef struct judged {
    model_summary s;
    model_facts f;
    model_advice *a;
    size_t n;
} judged;

static void judge(fx *f, judged *j)
{
    char *cause = NULL;
    memset(j, 0, sizeof *j);
    assert_int_equal(model_judge(f->env, 0, UINT64_MAX, &j->s, &j->f, &j->a, &j->n, &cause), 0);
    assert_null(cause);
}

static void judged_free(judged *j)
{
    free(j->a);
    model_facts_free(&j->f);
    model_summary_free(&j->s);
}

/* The text of the last reason r, or NULL. */
static const char *reason_text(const model_summary *s, unsigned r)
{
    const char *t = NULL;
    for (size_t i = 0; i < s->nreasons; i++)
        if (s->reasons[i].reason == r)
            t = s->reasons[i].text;
    return t;
}

static bool has_reason(const model_summary *s, unsigned r)
{
    for (size_t i = 0; i < s->nreasons; i++)
        if (s->reasons[i].reason == r)
            return true;
    return false;
}

/* ---- Row changes ---------------------------------------------------- */

typedef struct loss_spec {
    unsigned cls;
    uint64_t count;
    unsigned from, to;           /* seconds with the loss (inclusive)      */
    uint32_t pool_limit;         /* 0: keep                                */
    bool at_limit;               /* pool high-water = limit, declines      */
    bool queue_full;
} loss_spec;

static void row_loss(unsigned i, cupstore_health *h, void *arg)
{
    const loss_spec *l = arg;
    if (l->pool_limit)
        h->pool_limit = l->pool_limit;
    if (i < l->from || i > l->to)
        return;
    h->loss[l->cls] = l->count;
    if (l->at_limit) {
        h->pool_high_water = h->buf_outstanding = h->pool_limit;
        h->buf_declined = l->count;
        h->buf_requested += l->count;
    }
    if (l->queue_full) {
        h->queue_high_water = h->queue_capacity;
        h->buf_consumed = h->buf_completed / 2;
    }
}

/* ---- Verdicts: one per loss class ------------------------------------ */

static void test_clean(void **state)
{
    fx *f = *state;
    judged j;
    rows(f, T0, 10, NULL, NULL);
    finish(f, T0 + 10, &END_OK);
    judge(f, &j);
    assert_true(j.s.complete);
    assert_int_equal(j.s.state, MODEL_STATE_ENDED);
    assert_int_equal(j.s.nreasons, 0);
    assert_int_equal(j.n, 0);                     /* nothing to do */
    assert_int_equal(j.s.records_total, 36000);
    assert_true(j.s.records_per_s_mean);          /* ended: the mean */
    assert_true(j.s.records_per_s > 3599.0 && j.s.records_per_s < 3601.0);
    assert_int_equal(j.f.longest.seconds, 0);
    judged_free(&j);
}

/* Each loss class alone: INCOMPLETE with exactly that class as the reason,
 * its count and its window. */
static void test_each_loss_class(void **state)
{
    static const unsigned classes[] = {
        CUPSTORE_LOSS_CUPTI_DROPPED, CUPSTORE_LOSS_DECLINED, CUPSTORE_LOSS_QUEUE_OVERFLOW,
        CUPSTORE_LOSS_PARSE_ERROR,   CUPSTORE_LOSS_STORE_REFUSED, CUPSTORE_LOSS_ZERO_TS,
        CUPSTORE_LOSS_TAIL,          CUPSTORE_LOSS_CONFLICT};
    (void)state;
    for (size_t c = 0; c < sizeof classes / sizeof classes[0]; c++) {
        void *st;
        setup(&st);
        fx *f = st;
        loss_spec l = {.cls = classes[c], .count = 7, .from = 3, .to = 5};
        judged j;
        rows(f, T0, 10, row_loss, &l);
        finish(f, T0 + 10, &END_OK);
        judge(f, &j);
        assert_false(j.s.complete);
        assert_int_equal(j.s.loss[classes[c]], 21);
        assert_int_equal(j.s.loss_total, 21);
        assert_true(has_reason(&j.s, classes[c]));
        assert_int_equal(j.s.reasons[0].reason, classes[c]);
        assert_int_equal(j.s.reasons[0].first_second, T0 + 3);
        assert_int_equal(j.s.reasons[0].last_second, T0 + 5);
        assert_int_equal(j.s.reasons[0].seconds_affected, 3);
        assert_int_equal(j.f.longest.seconds, 3);
        assert_int_equal(j.f.longest.first_s, T0 + 3);
        assert_int_equal(j.f.longest.by_class[classes[c]], 21);
        assert_true(j.n >= 1);                    /* every loss gets advice */
        judged_free(&j);
        teardown(&st);
    }
}

/* ---- Verdicts: exit paths and the stop protocol ---------------------- */

static void test_exit_paths(void **state)
{
    static const unsigned paths[] = {CUPSTORE_EXIT_RETURN, CUPSTORE_EXIT_SIGNAL,
                                     CUPSTORE_EXIT_CTX_DESTROY, CUPSTORE_EXIT_ABORT};
    (void)state;
    for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
        void *st;
        setup(&st);
        fx *f = st;
        end_spec e = END_OK;
        e.exit_path = paths[p];
        judged j;
        rows(f, T0, 5, NULL, NULL);
        finish(f, T0 + 5, &e);
        judge(f, &j);
        assert_true(j.s.complete);                /* every step ran: COMPLETE */
        judged_free(&j);
        teardown(&st);
        /* the same exit with a step missing: INCOMPLETE, protocol */
        setup(&st);
        f = st;
        e.protocol_complete = false;
        e.missing_step = CUPSTORE_STEP_DRAIN;
        rows(f, T0, 5, NULL, NULL);
        finish(f, T0 + 5, &e);
        judge(f, &j);
        assert_false(j.s.complete);
        assert_true(has_reason(&j.s, MODEL_REASON_PROTOCOL));
        assert_non_null(strstr(j.s.reasons[0].text, "drain"));
        assert_non_null(strstr(j.s.reasons[0].text, cupstore_exit_name(paths[p])));
        judged_free(&j);
        teardown(&st);
    }
}

static void test_crashed(void **state)
{
    fx *f = *state;
    judged j;
    rows(f, T0, 5, NULL, NULL);   /* a heartbeat from 2025: stale, no final */
    judge(f, &j);
    assert_int_equal(j.s.state, MODEL_STATE_CRASHED);
    assert_false(j.s.complete);
    assert_true(has_reason(&j.s, MODEL_REASON_NO_FINAL));
    assert_true(j.s.records_per_s_mean);
    assert_true(j.n >= 1);
    assert_int_equal(j.a[0].code, MODEL_ADVICE_CRASH);
    assert_string_equal(j.a[0].setting, "");      /* no setting fixes a crash */
    judged_free(&j);
}

/* Killed before its first health row: crashed, and the reason says there
 * was no heartbeat rather than "last heartbeat 1970-01-01" (issue 28). */
static void test_crashed_before_heartbeat(void **state)
{
    fx *f = *state;
    judged j;
    judge(f, &j);
    assert_int_equal(j.s.state, MODEL_STATE_CRASHED);
    assert_true(has_reason(&j.s, MODEL_REASON_NO_FINAL));
    const char *t = reason_text(&j.s, MODEL_REASON_NO_FINAL);
    assert_non_null(t);
    assert_null(strstr(t, "1970"));
    assert_non_null(strstr(t, "no heartbeat"));
    judged_free(&j);
}

static void row_now(unsigned i, cupstore_health *h, void *arg)
{
    uint64_t now = *(uint64_t *)arg;
    h->heartbeat_ns = now * NS;
    h->records_by_kind[CUPSTORE_KIND_KERNEL] = 1000 + i;  /* last row: 1004 */
}

static void test_running(void **state)
{
    fx *f = *state;
    judged j;
    char pid[16];
    uint64_t now = (uint64_t)time(NULL);
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    meta(f, "pid", pid);   /* the agent writes its process down as it starts */
    rows(f, now - 5, 5, row_now, &now);
    judge(f, &j);
    assert_int_equal(j.s.state, MODEL_STATE_RUNNING);
    assert_true(j.s.complete);                    /* so far */
    assert_false(j.s.records_per_s_mean);         /* running: the last full second */
    assert_true(j.s.records_per_s > 3603.0 && j.s.records_per_s < 3605.0);
    assert_int_equal(j.n, 0);
    judged_free(&j);
}

/* Health rows, a fresh heartbeat, but no process written down: killed
 * while the agent was starting (or starting now).  Its liveness cannot be
 * checked: never COMPLETE (the truth matrix's kill -9, seed 9101030705). */
static void test_running_no_pid(void **state)
{
    fx *f = *state;
    judged j;
    uint64_t now = (uint64_t)time(NULL);
    rows(f, now - 5, 5, row_now, &now);
    judge(f, &j);
    assert_false(j.s.complete);
    assert_true(has_reason(&j.s, MODEL_REASON_NO_FINAL));
    const char *t = reason_text(&j.s, MODEL_REASON_NO_FINAL);
    assert_non_null(t);
    assert_non_null(strstr(t, "no process recorded"));
    judged_free(&j);
}

static void test_flush_failed(void **state)
{
    fx *f = *state;
    end_spec e = END_OK;
    judged j;
    e.flush_ok = false;
    rows(f, T0, 5, NULL, NULL);
    finish(f, T0 + 5, &e);
    judge(f, &j);
    assert_false(j.s.complete);
    assert_true(has_reason(&j.s, MODEL_REASON_FLUSH));
    judged_free(&j);
}

static void test_disabled(void **state)
{
    fx *f = *state;
    end_spec e = END_OK;
    judged j;
    cupstore_txn *txn;
    cupstore_note n = {.time_ns = T0 * NS, .level = 2};
    snprintf(n.text, sizeof n.text, "CUPTI could not be loaded");
    e.exit_path = CUPSTORE_EXIT_DETACH;
    rows(f, T0, 3, NULL, NULL);
    assert_int_equal(cupstore_txn_begin(f->env, true, &txn), 0);
    assert_int_equal(cupstore_note_put(txn, &n), 0);
    assert_int_equal(cupstore_txn_commit(txn), 0);
    finish(f, T0 + 3, &e);
    judge(f, &j);
    assert_false(j.s.complete);
    assert_true(has_reason(&j.s, MODEL_REASON_DISABLED));
    assert_int_equal(j.a[0].code, MODEL_ADVICE_DISABLED);
    judged_free(&j);
}

/* ---- model_verify --------------------------------------------------- */

static void write_chunk(fx *f, unsigned n)
{
    cupstore_record r[64];
    cupstore_txn *txn;
    assert_true(n <= 64);
    memset(r, 0, sizeof r);
    for (unsigned i = 0; i < n; i++) {
        r[i].kind = CUPSTORE_KIND_KERNEL;
        r[i].start_ns = (T0 + 1) * NS + i * 1000u;
        r[i].end_ns = r[i].start_ns + 500;
    }
    assert_int_equal(cupstore_txn_begin(f->env, true, &txn), 0);
    assert_int_equal(cupstore_chunk_put(txn, r, n), 0);
    assert_int_equal(cupstore_txn_commit(txn), 0);
}

static void test_verify(void **state)
{
    fx *f = *state;
    model_summary s;
    bool verified;
    uint64_t read;
    end_spec e = END_OK;
    e.records_stored = 40;
    rows(f, T0, 3, NULL, NULL);
    write_chunk(f, 40);
    finish(f, T0 + 3, &e);
    assert_int_equal(model_summarize(f->env, 0, UINT64_MAX, &s, NULL), 0);
    assert_true(s.complete);
    assert_int_equal(model_verify(f->env, &s, &verified, &read), 0);
    assert_true(verified);
    assert_int_equal(read, 40);
    assert_true(s.complete);                      /* every record read back */
    model_summary_free(&s);
}

static void test_verify_missing(void **state)
{
    fx *f = *state;
    judged j;
    bool verified;
    uint64_t read;
    end_spec e = END_OK;
    e.records_stored = 45;                        /* 5 more than the store holds */
    rows(f, T0, 3, NULL, NULL);
    write_chunk(f, 40);
    finish(f, T0 + 3, &e);
    judge(f, &j);
    assert_true(j.s.complete);                    /* before reading back */
    assert_int_equal(model_verify(f->env, &j.s, &verified, &read), 0);
    assert_true(verified);
    assert_int_equal(read, 40);
    assert_false(j.s.complete);
    assert_true(has_reason(&j.s, MODEL_REASON_STORE_DAMAGED));
    assert_non_null(strstr(j.s.reasons[j.s.nreasons - 1].text, "5 records"));
    free(j.a);
    assert_int_equal(model_advise(&j.s, &j.f, &j.a, &j.n), 0);
    assert_int_equal(j.a[0].code, MODEL_ADVICE_DAMAGED);
    judged_free(&j);
}

static void test_verify_running_not_verified(void **state)
{
    fx *f = *state;
    model_summary s;
    bool verified = true;
    uint64_t read = 9, now = (uint64_t)time(NULL);
    rows(f, now - 3, 3, row_now, &now);
    assert_int_equal(model_summarize(f->env, 0, UINT64_MAX, &s, NULL), 0);
    assert_int_equal(model_verify(f->env, &s, &verified, &read), 0);
    assert_false(verified);
    assert_int_equal(read, 0);
    model_summary_free(&s);
}

/* ---- Advice: the first recommendation of each case ------------------- */

/* Sustained starvation (issue 12's defect): the pool at its limit in every
 * lossy second, the queue empty, the consumer idle: raise the pool, by what
 * the threads need, not narrow. */
static void test_advice_pool_sustained(void **state)
{
    fx *f = *state;
    loss_spec l = {.cls = CUPSTORE_LOSS_CUPTI_DROPPED, .count = 150000, .from = 0, .to = 9,
                   .pool_limit = 2, .at_limit = true};
    judged j;
    meta(f, "threads", "2");
    meta(f, "config", "buffer_size=4194304\npool=2\n");
    rows(f, T0, 10, row_loss, &l);
    finish(f, T0 + 10, &END_OK);
    judge(f, &j);
    assert_false(j.s.complete);
    assert_int_equal(j.s.reasons[0].reason, CUPSTORE_LOSS_CUPTI_DROPPED);
    assert_int_equal(j.a[0].code, MODEL_ADVICE_RAISE_POOL);
    assert_int_equal(j.a[0].pool, 36);            /* 32 + 2 per thread and device */
    assert_string_equal(j.a[0].setting, "CUPTOP_POOL");
    assert_string_equal(j.a[0].value, "36");
    assert_string_equal(j.a[0].control, "--pool 36");
    assert_non_null(strstr(j.a[0].text, "Raise the pool from 2 to 36"));
    assert_non_null(strstr(j.a[0].evidence, "at its limit in 10 of 10 lossy seconds"));
    for (size_t i = 0; i < j.n; i++)
        assert_int_not_equal(j.a[i].code, MODEL_ADVICE_NARROW);
    judged_free(&j);
}

static void test_advice_pool_short(void **state)
{
    fx *f = *state;
    loss_spec l = {.cls = CUPSTORE_LOSS_DECLINED, .count = 500, .from = 4, .to = 5,
                   .pool_limit = 4, .at_limit = true};
    judged j;
    meta(f, "threads", "4");
    rows(f, T0, 10, row_loss, &l);
    finish(f, T0 + 10, &END_OK);
    judge(f, &j);
    assert_int_equal(j.a[0].code, MODEL_ADVICE_RAISE_POOL);
    assert_int_equal(j.a[0].pool, 40);
    assert_non_null(strstr(j.a[0].evidence, "at its limit in 2 of 2 lossy seconds"));
    judged_free(&j);
}

/* The evidence is each second's own pool limit: after '-' down to 1 the
 * rows say 1, whatever the configuration said. */
static void test_advice_pool_per_second_limit(void **state)
{
    fx *f = *state;
    loss_spec l = {.cls = CUPSTORE_LOSS_CUPTI_DROPPED, .count = 900, .from = 5, .to = 9,
                   .pool_limit = 0, .at_limit = true};
    judged j;
    meta(f, "config", "buffer_size=4194304\npool=36\n");
    meta(f, "threads", "1");
    rows(f, T0, 10, row_loss, &l);   /* limit 64 in the clean seconds */
    /* the lossy seconds ran with a limit of 1 */
    cupstore_txn *txn;
    assert_int_equal(cupstore_txn_begin(f->env, true, &txn), 0);
    for (unsigned i = 5; i < 10; i++) {
        cupstore_health h;
        assert_int_equal(cupstore_health_get(txn, T0 + i, &h), 0);
        h.pool_limit = h.pool_high_water = h.buf_outstanding = 1;
        assert_int_equal(cupstore_health_put(txn, &h), 0);
    }
    assert_int_equal(cupstore_txn_commit(txn), 0);
    finish(f, T0 + 10, &END_OK);
    judge(f, &j);
    assert_int_equal(j.a[0].code, MODEL_ADVICE_RAISE_POOL);
    assert_non_null(strstr(j.a[0].text, "Raise the pool from 1 to"));
    assert_non_null(strstr(j.a[0].evidence, "limit 1 in those seconds"));
    assert_null(strstr(j.a[0].evidence, "36"));
    judged_free(&j);
}

/* The reverse case (demo, slow-consumer): small buffers, a pool that is not
 * below what the threads hold: the buffer size first, narrowing second. */
static void test_advice_small_buffers(void **state)
{
    fx *f = *state;
    loss_spec l = {.cls = CUPSTORE_LOSS_CUPTI_DROPPED, .count = 50000, .from = 0, .to = 9,
                   .pool_limit = 4, .at_limit = true};
    judged j;
    meta(f, "config", "buffer_size=65536\npool=4\n");
    meta(f, "threads", "2");
    rows(f, T0, 10, row_loss, &l);
    finish(f, T0 + 10, &END_OK);
    judge(f, &j);
    assert_int_equal(j.a[0].code, MODEL_ADVICE_BUFFER_SIZE);
    assert_string_equal(j.a[0].setting, "CUPTOP_BUFFER_SIZE");
    assert_string_equal(j.a[0].control, "");      /* not at runtime */
    uint64_t v = strtoull(j.a[0].value, NULL, 10);
    assert_true(v >= 4 && strchr(j.a[0].value, 'M'));
    assert_true(j.n >= 2);
    assert_int_equal(j.a[1].code, MODEL_ADVICE_NARROW);
    assert_string_equal(j.a[1].value, "kernel,memcpy,memset,overhead");
    judged_free(&j);
}

/* A pool far larger than the threads hold, yet at its limit: the buffers
 * wait in CUPTI; a bigger pool would only queue more. */
static void test_advice_queued_in_cupti(void **state)
{
    fx *f = *state;
    loss_spec l = {.cls = CUPSTORE_LOSS_CUPTI_DROPPED, .count = 50000, .from = 0, .to = 9,
                   .pool_limit = 64, .at_limit = true};
    judged j;
    meta(f, "config", "buffer_size=4194304\n");
    meta(f, "threads", "2");
    rows(f, T0, 10, row_loss, &l);
    finish(f, T0 + 10, &END_OK);
    judge(f, &j);
    for (size_t i = 0; i < j.n; i++)
        assert_int_not_equal(j.a[i].code, MODEL_ADVICE_RAISE_POOL);
    assert_true(j.a[0].code == MODEL_ADVICE_BUFFER_SIZE || j.a[0].code == MODEL_ADVICE_NARROW);
    assert_non_null(strstr(j.a[0].evidence, "wait in CUPTI"));
    judged_free(&j);
}

/* The consumer falls behind: queue full, buffers unconsumed. */
static void test_advice_consumer_behind(void **state)
{
    fx *f = *state;
    loss_spec l = {.cls = CUPSTORE_LOSS_QUEUE_OVERFLOW, .count = 300, .from = 2, .to = 8,
                   .queue_full = true};
    judged j;
    rows(f, T0, 10, row_loss, &l);
    finish(f, T0 + 10, &END_OK);
    judge(f, &j);
    assert_true(has_reason(&j.s, CUPSTORE_LOSS_QUEUE_OVERFLOW));
    assert_int_equal(j.a[0].code, MODEL_ADVICE_NARROW);
    assert_int_equal(j.a[0].kinds, CUPSTORE_KINDS_DEFAULT &
                                       ~((1u << CUPSTORE_KIND_RUNTIME) | (1u << CUPSTORE_KIND_DRIVER)));
    assert_string_equal(j.a[0].control, "--kinds kernel,memcpy,memset,overhead");
    assert_non_null(strstr(j.a[0].evidence, "queue reached 64 of 64"));
    judged_free(&j);
}

static void row_slow_commit(unsigned i, cupstore_health *h, void *arg)
{
    row_loss(i, h, arg);
    h->commit_lat.p99_ns = 400000000u;            /* 400 ms */
}

static void test_advice_slow_store(void **state)
{
    fx *f = *state;
    loss_spec l = {.cls = CUPSTORE_LOSS_QUEUE_OVERFLOW, .count = 300, .from = 2, .to = 8,
                   .queue_full = true};
    judged j;
    rows(f, T0, 10, row_slow_commit, &l);
    finish(f, T0 + 10, &END_OK);
    judge(f, &j);
    assert_int_equal(j.a[0].code, MODEL_ADVICE_NARROW);
    assert_true(j.n >= 2);
    assert_int_equal(j.a[1].code, MODEL_ADVICE_FASTER_STORE);
    assert_non_null(strstr(j.a[1].evidence, "400 ms"));
    judged_free(&j);
}

static void test_advice_store_refused(void **state)
{
    fx *f = *state;
    loss_spec l = {.cls = CUPSTORE_LOSS_STORE_REFUSED, .count = 30, .from = 6, .to = 7};
    judged j;
    rows(f, T0, 10, row_loss, &l);
    finish(f, T0 + 10, &END_OK);
    judge(f, &j);
    assert_int_equal(j.a[0].code, MODEL_ADVICE_FASTER_STORE);
    assert_non_null(strstr(j.a[0].text, "free disk space"));
    judged_free(&j);
}

static void test_advice_zero_ts(void **state)
{
    fx *f = *state;
    loss_spec l = {.cls = CUPSTORE_LOSS_ZERO_TS, .count = 11, .from = 0, .to = 9};
    judged j;
    meta(f, "config", "device_buffer_size=8388608\n");
    rows(f, T0, 10, row_loss, &l);
    finish(f, T0 + 10, &END_OK);
    judge(f, &j);
    assert_int_equal(j.a[0].code, MODEL_ADVICE_DEVICE_BUFFERS);
    assert_string_equal(j.a[0].setting, "CUPTOP_DEVICE_BUFFER_SIZE");
    assert_string_equal(j.a[0].value, "16M");     /* twice the 8M it had */
    judged_free(&j);
}

static void test_advice_tail(void **state)
{
    fx *f = *state;
    end_spec e = END_OK;
    judged j;
    e.tail_lost = 40;
    e.timed_out_step = CUPSTORE_STEP_FLUSH;
    e.protocol_complete = false;
    meta(f, "config", "stop_timeout_ms=3000\n");
    rows(f, T0, 5, NULL, NULL);
    finish(f, T0 + 5, &e);
    judge(f, &j);
    assert_true(has_reason(&j.s, CUPSTORE_LOSS_TAIL));
    assert_true(has_reason(&j.s, MODEL_REASON_PROTOCOL));
    assert_int_equal(j.s.loss[CUPSTORE_LOSS_TAIL], 40);
    assert_int_equal(j.a[0].code, MODEL_ADVICE_STOP_TIMEOUT);
    assert_string_equal(j.a[0].setting, "CUPTOP_STOP_TIMEOUT_MS");
    assert_string_equal(j.a[0].value, "6000");
    judged_free(&j);
}

/* A flush that gave up with buffers still out, none of which bounds the
 * records from below (each may be a thread's partial last one): the loss
 * is known only to exist.  Never "0 lost": INCOMPLETE with a tail reason,
 * an upper bound of the buffers' capacity, advice that says so (27.2). */
static fx *fresh(void **state)
{
    teardown(state);
    setup(state);
    return *state;
}

static void test_tail_unknown_bounded_above(void **state)
{
    fx *f = *state;
    end_spec e = END_OK;
    judged j;
    e.flush_ok = false;
    e.protocol_complete = false;
    e.timed_out_step = CUPSTORE_STEP_FLUSH;
    e.buffers_outstanding = 4;
    meta(f, "config", "buffer_size=1048576\nstop_timeout_ms=50\n");
    rows(f, T0, 3, NULL, NULL);
    finish(f, T0 + 3, &e);
    judge(f, &j);
    assert_false(j.s.complete);
    assert_int_equal(j.s.loss[CUPSTORE_LOSS_TAIL], 0);
    assert_int_equal(j.s.loss_bound[CUPSTORE_LOSS_TAIL], 0);
    assert_int_equal(j.s.loss_at_most[CUPSTORE_LOSS_TAIL], 4 * (1048576 / MODEL_RECORD_MIN_BYTES));
    assert_true(has_reason(&j.s, CUPSTORE_LOSS_TAIL));
    bool said = false;
    for (size_t i = 0; i < j.s.nreasons; i++)
        said |= strstr(j.s.reasons[i].text, "an unknown number of records lost, up to 131072") != NULL;
    assert_true(said);
    assert_int_equal(j.a[0].code, MODEL_ADVICE_STOP_TIMEOUT);
    assert_null(strstr(j.a[0].evidence, "0 records lost at stop"));
    assert_non_null(strstr(j.a[0].evidence, "an unknown number more (up to 131072)"));
    judged_free(&j);

    /* a buffer smaller than a discard buffer: the discard buffer's 64 KiB */
    f = fresh(state);
    meta(f, "config", "buffer_size=4096\n");
    rows(f, T0, 3, NULL, NULL);
    finish(f, T0 + 3, &e);
    judge(f, &j);
    assert_int_equal(j.s.loss_at_most[CUPSTORE_LOSS_TAIL], 4 * (65536 / MODEL_RECORD_MIN_BYTES));
    judged_free(&j);

    /* no buffer size stored (an older agent): unknown, still INCOMPLETE */
    f = fresh(state);
    rows(f, T0, 3, NULL, NULL);
    finish(f, T0 + 3, &e);
    judge(f, &j);
    assert_false(j.s.complete);
    assert_int_equal(j.s.loss_at_most[CUPSTORE_LOSS_TAIL], 0);
    judged_free(&j);

    /* a lower bound that exceeds the capacity estimate wins */
    f = fresh(state);
    e.tail_bound = 1000000;
    meta(f, "config", "buffer_size=65536\n");
    rows(f, T0, 3, NULL, NULL);
    finish(f, T0 + 3, &e);
    judge(f, &j);
    assert_int_equal(j.s.loss_bound[CUPSTORE_LOSS_TAIL], 1000000);
    assert_int_equal(j.s.loss_at_most[CUPSTORE_LOSS_TAIL], 1000000);
    judged_free(&j);
}

static void row_foreign(unsigned i, cupstore_health *h, void *arg)
{
    row_loss(i, h, arg);
    if (h->loss[CUPSTORE_LOSS_CONFLICT])
        h->buf_foreign = 2;
}

static void test_advice_conflict(void **state)
{
    fx *f = *state;
    loss_spec l = {.cls = CUPSTORE_LOSS_CONFLICT, .count = 100, .from = 1, .to = 3};
    judged j;
    rows(f, T0, 5, row_foreign, &l);
    finish(f, T0 + 5, &END_OK);
    judge(f, &j);
    assert_int_equal(j.a[0].code, MODEL_ADVICE_CONFLICT);
    assert_non_null(strstr(j.a[0].evidence, "6 buffers"));
    judged_free(&j);
}

static void test_advice_parse(void **state)
{
    fx *f = *state;
    loss_spec l = {.cls = CUPSTORE_LOSS_PARSE_ERROR, .count = 3, .from = 1, .to = 1};
    judged j;
    rows(f, T0, 5, row_loss, &l);
    finish(f, T0 + 5, &END_OK);
    judge(f, &j);
    assert_int_equal(j.a[0].code, MODEL_ADVICE_PARSE);
    judged_free(&j);
}

/* ---- Epochs ---------------------------------------------------------- */

typedef struct switch_spec {
    unsigned at;                 /* second of the change                   */
} switch_spec;

/* Losses in epoch 1 only; the change is acknowledged 0.3 s into second 5,
 * whose row (written after it) carries epoch 2. */
static void row_switch(unsigned i, cupstore_health *h, void *arg)
{
    const switch_spec *sw = arg;
    if (i < sw->at) {
        h->loss[CUPSTORE_LOSS_CUPTI_DROPPED] = 100;
    } else if (i == sw->at) {
        h->loss[CUPSTORE_LOSS_CUPTI_DROPPED] = 30;
        h->epoch = 2;
    } else {
        h->epoch = 2;
    }
    if (i >= sw->at) {
        h->kinds_enabled = (1u << CUPSTORE_KIND_KERNEL) | (1u << CUPSTORE_KIND_MEMCPY);
        h->records_by_kind[CUPSTORE_KIND_RUNTIME] = h->records_by_kind[CUPSTORE_KIND_DRIVER] = 0;
    }
}

static void test_epoch_attribution(void **state)
{
    fx *f = *state;
    switch_spec sw = {5};
    judged j;
    cupstore_txn *txn;
    rows(f, T0, 10, row_switch, &sw);
    assert_int_equal(cupstore_txn_begin(f->env, true, &txn), 0);
    cupstore_epoch e1 = {.id = 1, .kinds = CUPSTORE_KINDS_DEFAULT, .start_ns = T0 * NS,
                         .end_ns = (T0 + 5) * NS + 300000000u};
    cupstore_epoch e2 = {.id = 2, .kinds = (1u << CUPSTORE_KIND_KERNEL) | (1u << CUPSTORE_KIND_MEMCPY),
                         .start_ns = (T0 + 5) * NS + 300000000u, .ctl_gen = 1};
    assert_int_equal(cupstore_epoch_put(txn, &e1), 0);
    assert_int_equal(cupstore_epoch_put(txn, &e2), 0);
    assert_int_equal(cupstore_txn_commit(txn), 0);
    finish(f, T0 + 10, &END_OK);
    judge(f, &j);
    assert_int_equal(j.f.nepochs, 2);
    const model_epoch_stat *a = &j.f.epochs[0], *b = &j.f.epochs[1];
    assert_int_equal(a->id, 1);
    assert_int_equal(b->id, 2);
    /* the loss of second 5 came before the switch: all of it in epoch 1
     * (epoch 2 lost nothing in its whole seconds) */
    assert_int_equal(a->losses, 530);
    assert_int_equal(b->losses, 0);
    assert_true(a->seconds > 5.29 && a->seconds < 5.31);
    assert_true(b->seconds > 4.69 && b->seconds < 4.71);
    assert_int_equal(a->records + b->records, j.s.records_total);
    assert_int_equal(model_epoch_baseline(j.f.epochs, j.f.nepochs), 1);
    judged_free(&j);
}

/* Issue 27 item 8: runtime and driver turned off at runtime, no loss
 * since.  Advice judges the current epoch: it never drops kernel records
 * (the largest kind now on) to fix a loss that is over; it keeps the
 * narrowing that ended it, for a rerun (no runtime request: in effect). */
static void row_narrowed(unsigned i, cupstore_health *h, void *arg)
{
    row_switch(i, h, arg);
    h->kinds_enabled |= i >= 5 ? (1u << CUPSTORE_KIND_MEMSET) | (1u << CUPSTORE_KIND_OVERHEAD) : 0;
    h->records_by_kind[CUPSTORE_KIND_KERNEL] = 9000;   /* most of what is left */
}

static void narrowed_epochs(fx *f, unsigned seconds)
{
    cupstore_txn *txn;
    uint32_t now = CUPSTORE_KINDS_DEFAULT &
                   ~((1u << CUPSTORE_KIND_RUNTIME) | (1u << CUPSTORE_KIND_DRIVER));
    assert_int_equal(cupstore_txn_begin(f->env, true, &txn), 0);
    cupstore_epoch e1 = {.id = 1, .kinds = CUPSTORE_KINDS_DEFAULT, .start_ns = T0 * NS,
                         .end_ns = (T0 + 5) * NS + 300000000u};
    cupstore_epoch e2 = {.id = 2, .kinds = now, .start_ns = (T0 + 5) * NS + 300000000u,
                         .ctl_gen = 1};
    assert_int_equal(cupstore_epoch_put(txn, &e1), 0);
    assert_int_equal(cupstore_epoch_put(txn, &e2), 0);
    assert_int_equal(cupstore_txn_commit(txn), 0);
    finish(f, T0 + seconds, &END_OK);
}

static void test_advice_loss_over(void **state)
{
    fx *f = *state;
    switch_spec sw = {5};
    judged j;
    uint32_t now = CUPSTORE_KINDS_DEFAULT &
                   ~((1u << CUPSTORE_KIND_RUNTIME) | (1u << CUPSTORE_KIND_DRIVER));
    rows(f, T0, 60, row_narrowed, &sw);
    narrowed_epochs(f, 60);
    judge(f, &j);
    assert_true(j.n >= 1);
    bool kept = false;
    for (size_t i = 0; i < j.n; i++) {
        if (j.a[i].code != MODEL_ADVICE_NARROW)
            continue;
        assert_true(j.a[i].kinds & (1u << CUPSTORE_KIND_KERNEL));
        assert_int_equal(j.a[i].kinds, now);
        assert_string_equal(j.a[i].value, "kernel,memcpy,memset,overhead");
        assert_string_equal(j.a[i].control, "");
        assert_non_null(strstr(j.a[i].text, "runtime,driver went off"));
        assert_non_null(strstr(j.a[i].evidence, "epoch 2"));
        kept = true;
    }
    assert_true(kept);
    judged_free(&j);
}

/* The loss is over with the kinds unchanged (a burst): no narrowing. */
static void row_burst(unsigned i, cupstore_health *h, void *arg)
{
    (void)arg;
    h->records_by_kind[CUPSTORE_KIND_RUNTIME] = h->records_by_kind[CUPSTORE_KIND_DRIVER] = 0;
    h->kinds_enabled = CUPSTORE_KINDS_DEFAULT &
                       ~((1u << CUPSTORE_KIND_RUNTIME) | (1u << CUPSTORE_KIND_DRIVER));
    h->records_by_kind[CUPSTORE_KIND_KERNEL] = 9000;
    if (i < 3) {
        h->loss[CUPSTORE_LOSS_QUEUE_OVERFLOW] = 50;
        h->queue_high_water = h->queue_capacity;
    }
    if (i >= 20)
        h->epoch = 2;
}

static void test_advice_loss_over_same_kinds(void **state)
{
    fx *f = *state;
    judged j;
    cupstore_txn *txn;
    uint32_t k = CUPSTORE_KINDS_DEFAULT &
                 ~((1u << CUPSTORE_KIND_RUNTIME) | (1u << CUPSTORE_KIND_DRIVER));
    rows(f, T0, 40, row_burst, NULL);
    assert_int_equal(cupstore_txn_begin(f->env, true, &txn), 0);
    cupstore_epoch e1 = {.id = 1, .kinds = k, .start_ns = T0 * NS, .end_ns = (T0 + 20) * NS};
    cupstore_epoch e2 = {.id = 2, .kinds = k, .start_ns = (T0 + 20) * NS, .ctl_gen = 1};
    assert_int_equal(cupstore_epoch_put(txn, &e1), 0);
    assert_int_equal(cupstore_epoch_put(txn, &e2), 0);
    assert_int_equal(cupstore_txn_commit(txn), 0);
    finish(f, T0 + 40, &END_OK);
    judge(f, &j);
    for (size_t i = 0; i < j.n; i++)
        assert_int_not_equal(j.a[i].code, MODEL_ADVICE_NARROW);
    judged_free(&j);
}

static void test_epoch_dormant_never_baseline(void **state)
{
    (void)state;
    model_epoch_stat e[3];
    memset(e, 0, sizeof e);
    e[0] = (model_epoch_stat){.id = 1, .kinds = 0, .seconds = 600};          /* dormant */
    e[1] = (model_epoch_stat){.id = 2, .kinds = 1, .seconds = 300, .records = 10, .losses = 4};
    e[2] = (model_epoch_stat){.id = 3, .kinds = 1, .seconds = 100, .records = 0};  /* nothing */
    assert_int_equal(model_epoch_baseline(e, 3), -1);
    e[1].losses = 0;
    assert_int_equal(model_epoch_baseline(e, 3), 1);
    e[2].records = 5;
    e[2].seconds = 300;
    assert_int_equal(model_epoch_baseline(e, 3), 2);   /* tie: the later one */
    assert_int_equal(model_epoch_baseline(e, 0), -1);
}

/* ---- One per-epoch rule (issue 27 item 5) --------------------------- */

/* A session changed three times: epoch 1 (default kinds) to 3.4 s, epoch 2
 * (kernel only) to 6.5 s, epoch 3 dormant (out of scope) to 9.2 s, epoch 4
 * (default) open to the end at 12.  Losses on the change seconds, in loss
 * rows beyond the health rows, in a second with loss rows only, and a tail
 * the final status knows of beyond its rows. */
static void row_changes(unsigned i, cupstore_health *h, void *arg)
{
    (void)arg;
    static const uint32_t epoch_of[12] = {1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4};
    h->epoch = epoch_of[i];
    if (h->epoch == 2) {
        h->kinds_enabled = 1u << CUPSTORE_KIND_KERNEL;
        h->records_by_kind[CUPSTORE_KIND_MEMCPY] = h->records_by_kind[CUPSTORE_KIND_RUNTIME] =
            h->records_by_kind[CUPSTORE_KIND_DRIVER] = 0;
    } else if (h->epoch == 3) {
        h->kinds_enabled = 0;
        h->flags |= CUPSTORE_HF_DORMANT;
        memset(h->records_by_kind, 0, sizeof h->records_by_kind);
        memset(h->records_by_device, 0, sizeof h->records_by_device);
    }
    if (i == 1)
        h->loss[CUPSTORE_LOSS_CUPTI_DROPPED] = 70;     /* whole second of epoch 1  */
    if (i == 3)
        h->loss[CUPSTORE_LOSS_CUPTI_DROPPED] = 50;     /* change second 1 -> 2     */
    if (i == 4)
        h->loss[CUPSTORE_LOSS_DECLINED] = 10;          /* whole second of epoch 2  */
}

static void loss_put(cupstore_txn *txn, uint64_t second, unsigned cls, uint64_t n)
{
    cupstore_loss_row r = {.second = second, .loss = (uint8_t)cls, .kind = CUPSTORE_KIND_ALL,
                           .device = CUPSTORE_DEVICE_NONE, .count = n};
    assert_int_equal(cupstore_loss_add(txn, &r), 0);
}

static void write_changes(fx *f)
{
    cupstore_txn *txn;
    rows(f, T0, 12, row_changes, NULL);
    assert_int_equal(cupstore_txn_begin(f->env, true, &txn), 0);
    uint32_t k2 = 1u << CUPSTORE_KIND_KERNEL;
    cupstore_epoch e[4] = {
        {.id = 1, .kinds = CUPSTORE_KINDS_DEFAULT, .start_ns = T0 * NS,
         .end_ns = (T0 + 3) * NS + 400000000u},
        {.id = 2, .kinds = k2, .start_ns = (T0 + 3) * NS + 400000000u,
         .end_ns = (T0 + 6) * NS + 500000000u, .ctl_gen = 1},
        {.id = 3, .kinds = 0, .start_ns = (T0 + 6) * NS + 500000000u,
         .end_ns = (T0 + 9) * NS + 200000000u, .ctl_gen = 2,
         .flags = CUPSTORE_EPOCH_OUT_OF_SCOPE},
        {.id = 4, .kinds = CUPSTORE_KINDS_DEFAULT, .start_ns = (T0 + 9) * NS + 200000000u,
         .ctl_gen = 3},
    };
    for (unsigned i = 0; i < 4; i++)
        assert_int_equal(cupstore_epoch_put(txn, &e[i]), 0);
    loss_put(txn, T0 + 3, CUPSTORE_LOSS_CUPTI_DROPPED, 80);  /* rows beyond the health row */
    loss_put(txn, T0 + 6, CUPSTORE_LOSS_DECLINED, 40);       /* change 2 -> dormant        */
    loss_put(txn, T0 + 12, CUPSTORE_LOSS_TAIL, 7);           /* no health row              */
    assert_int_equal(cupstore_txn_commit(txn), 0);
    end_spec end = END_OK;
    end.tail_lost = 20;                                     /* 13 beyond the rows         */
    finish(f, T0 + 12, &end);
}

static void test_epochs_add_up(void **state)
{
    fx *f = *state;
    judged j;
    write_changes(f);
    judge(f, &j);
    /* the verdict: 70 + 80 + 10 + 40 + 20 */
    assert_int_equal(j.s.loss_total, 220);
    assert_int_equal(j.f.nepochs, 4);
    uint64_t rec = 0, lost = 0;
    for (size_t i = 0; i < j.f.nepochs; i++) {
        rec += j.f.epochs[i].records;
        lost += j.f.epochs[i].losses;
    }
    assert_int_equal(rec, j.s.records_total);
    assert_int_equal(lost, j.s.loss_total);
    const model_epoch_stat *e = j.f.epochs;
    /* epoch 2's whole seconds lost only declined records: the change
     * second's drops stay with epoch 1, the 40 declined of second 6 with
     * epoch 2, never with the dormant epoch */
    assert_int_equal(e[0].losses, 150);
    assert_int_equal(e[0].loss[CUPSTORE_LOSS_CUPTI_DROPPED], 150);
    assert_int_equal(e[1].losses, 50);
    assert_int_equal(e[2].losses, 0);
    assert_int_equal(e[2].records, 0);
    assert_int_equal(e[3].loss[CUPSTORE_LOSS_TAIL], 20);
    assert_true(e[2].seconds > 2.69 && e[2].seconds < 2.71);

    /* compare's SESSION@N is the same rule: each epoch's judgement equals
     * the report's row, and the dormant epoch is not lossy */
    for (size_t i = 0; i < j.f.nepochs; i++) {
        model_summary es;
        model_epoch_stat st;
        char *cause = NULL;
        assert_int_equal(model_summarize_epoch(f->env, e[i].id, &es, &st, &cause), 0);
        assert_null(cause);
        assert_int_equal(es.loss_total, e[i].losses);
        for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
            assert_int_equal(es.loss[l], e[i].loss[l]);
        assert_int_equal(es.records_total, e[i].records);
        assert_true(es.complete == (e[i].losses == 0));
        model_summary_free(&es);
    }
    model_summary es;
    char *cause = NULL;
    assert_int_equal(model_summarize_epoch(f->env, 9, &es, NULL, &cause), CUPSTORE_ENOTFOUND);
    assert_non_null(cause);
    free(cause);
    judged_free(&j);
}

/* A capture range shorter than a second, between two out-of-scope epochs:
 * its records are its own, and so is the pool limit of that second. */
static void row_short_capture(unsigned i, cupstore_health *h, void *arg)
{
    (void)arg;
    h->epoch = i < 5 ? 1 : i == 5 ? 3 : 3;
    if (i != 5) {
        h->kinds_enabled = 0;
        memset(h->records_by_kind, 0, sizeof h->records_by_kind);
        memset(h->records_by_device, 0, sizeof h->records_by_device);
    }
}

static void test_epoch_short_capture(void **state)
{
    fx *f = *state;
    judged j;
    cupstore_txn *txn;
    rows(f, T0, 10, row_short_capture, NULL);
    assert_int_equal(cupstore_txn_begin(f->env, true, &txn), 0);
    uint32_t out = CUPSTORE_EPOCH_OUT_OF_SCOPE | CUPSTORE_EPOCH_CAPTURE;
    cupstore_epoch e[3] = {
        {.id = 1, .kinds = 0, .start_ns = T0 * NS, .end_ns = (T0 + 5) * NS + 200000000u,
         .flags = out},
        {.id = 2, .kinds = CUPSTORE_KINDS_DEFAULT, .start_ns = (T0 + 5) * NS + 200000000u,
         .end_ns = (T0 + 5) * NS + 700000000u, .flags = CUPSTORE_EPOCH_CAPTURE},
        {.id = 3, .kinds = 0, .start_ns = (T0 + 5) * NS + 700000000u, .flags = out},
    };
    for (unsigned i = 0; i < 3; i++)
        assert_int_equal(cupstore_epoch_put(txn, &e[i]), 0);
    assert_int_equal(cupstore_txn_commit(txn), 0);
    finish(f, T0 + 10, &END_OK);
    judge(f, &j);
    assert_int_equal(j.f.nepochs, 3);
    assert_int_equal(j.f.epochs[1].records, j.s.records_total);
    assert_true(j.s.records_total > 0);
    assert_int_equal(j.f.epochs[0].records + j.f.epochs[2].records, 0);
    assert_true(j.f.epochs[1].seconds > 0.49 && j.f.epochs[1].seconds < 0.51);
    assert_int_equal(j.f.epochs[1].pool_limit, 64);
    judged_free(&j);
}

/* A crashed session: the epoch open at its end lost its tail, so it is no
 * baseline even though no row counted a loss in it. */
static void test_baseline_not_crashed_tail(void **state)
{
    fx *f = *state;
    judged j;
    rows(f, T0, 10, NULL, NULL);
    judge(f, &j);
    assert_int_equal(j.s.state, MODEL_STATE_CRASHED);
    assert_int_equal(model_epoch_baseline(j.f.epochs, j.f.nepochs), 0);
    assert_int_equal(model_session_baseline(&j.s, &j.f), -1);
    judged_free(&j);
}

/* ---- A crashed session's records after its last health row (29.1) ---- */

/* n records of one kind on one device, at second at, in one chunk. */
static void put_chunk(fx *f, unsigned kind, uint16_t device, uint64_t at, unsigned n)
{
    cupstore_record r[64];
    cupstore_txn *txn;
    assert_true(n <= 64);
    memset(r, 0, sizeof r);
    for (unsigned i = 0; i < n; i++) {
        r[i].kind = (uint8_t)kind;
        r[i].device = device;
        r[i].start_ns = at * NS + i * 1000u;
        r[i].end_ns = r[i].start_ns + 500;
    }
    assert_int_equal(cupstore_txn_begin(f->env, true, &txn), 0);
    assert_int_equal(cupstore_chunk_put(txn, r, n), 0);
    assert_int_equal(cupstore_txn_commit(txn), 0);
}

static void row_ten_kernels(unsigned i, cupstore_health *h, void *arg)
{
    (void)i;
    (void)arg;
    memset(h->records_by_kind, 0, sizeof h->records_by_kind);
    memset(h->records_by_device, 0, sizeof h->records_by_device);
    h->records_by_kind[CUPSTORE_KIND_KERNEL] = 10;
    h->records_by_device[0] = 10;
    h->records_parsed = h->records_stored = 10;
}

/* Two rows of 10 kernels each (their chunks committed first, at later
 * times), then 7 kernels on device 0 and 5 memcpys on device 1 committed
 * after the last row (at earlier times: commit order, not time, decides;
 * the memcpys, committed last, the earliest), then the process died. */
static void crashed_with_tail(fx *f)
{
    rows(f, T0, 2, row_ten_kernels, NULL);
    put_chunk(f, CUPSTORE_KIND_KERNEL, 0, T0 + 1, 10);
    put_chunk(f, CUPSTORE_KIND_KERNEL, 0, T0 + 1, 10);
    put_chunk(f, CUPSTORE_KIND_KERNEL, 0, T0 + 1, 7);
    put_chunk(f, CUPSTORE_KIND_MEMCPY, 1, T0, 5);
}

static void test_crashed_records_after_rows(void **state)
{
    fx *f = *state;
    model_summary s;
    crashed_with_tail(f);
    assert_int_equal(model_summarize(f->env, 0, UINT64_MAX, &s, NULL), 0);
    assert_int_equal(s.state, MODEL_STATE_CRASHED);
    assert_int_equal(s.records_after_rows, 12);
    assert_int_equal(s.records_total, 32);
    assert_int_equal(s.records_by_kind[CUPSTORE_KIND_KERNEL], 27);
    assert_int_equal(s.records_by_kind[CUPSTORE_KIND_MEMCPY], 5);
    assert_int_equal(s.records_by_device[0], 27);
    assert_int_equal(s.records_by_device[1], 5);
    assert_true(s.device_mask & 2u);
    model_summary_free(&s);
    /* a window that ends at the last row holds none of them */
    assert_int_equal(model_summarize(f->env, 0, T0 + 1, &s, NULL), 0);
    assert_int_equal(s.records_after_rows, 0);
    assert_int_equal(s.records_total, 20);
    model_summary_free(&s);
    /* the epoch open at the end holds them (the epochs add up) */
    assert_int_equal(model_summarize_epoch(f->env, 1, &s, NULL, NULL), 0);
    assert_int_equal(s.records_total, 32);
    model_summary_free(&s);
}

/* Died before its first row: every stored record is counted. */
static void test_crashed_records_no_row(void **state)
{
    fx *f = *state;
    model_summary s;
    put_chunk(f, CUPSTORE_KIND_KERNEL, 0, T0, 9);
    assert_int_equal(model_summarize(f->env, 0, UINT64_MAX, &s, NULL), 0);
    assert_int_equal(s.state, MODEL_STATE_CRASHED);
    assert_int_equal(s.records_total, 9);
    assert_int_equal(s.records_by_kind[CUPSTORE_KIND_KERNEL], 9);
    model_summary_free(&s);
}

/* A chunk the last row counted only in part cannot happen (the agent
 * counts whole batches), but the cut still counts exactly: rows of 15
 * over chunks of 10 and 10 leave 5 (the second chunk's last five). */
static void row_fifteen(unsigned i, cupstore_health *h, void *arg)
{
    row_ten_kernels(i, h, arg);
    h->records_by_kind[CUPSTORE_KIND_KERNEL] = 15;
    h->records_by_device[0] = 15;
    h->records_parsed = h->records_stored = 15;
}

static void test_crashed_records_partial_chunk(void **state)
{
    fx *f = *state;
    model_summary s;
    rows(f, T0, 1, row_fifteen, NULL);
    put_chunk(f, CUPSTORE_KIND_KERNEL, 0, T0, 10);
    put_chunk(f, CUPSTORE_KIND_KERNEL, 0, T0, 10);
    assert_int_equal(model_summarize(f->env, 0, UINT64_MAX, &s, NULL), 0);
    assert_int_equal(s.records_after_rows, 5);
    assert_int_equal(s.records_total, 20);
    model_summary_free(&s);
}

/* With a final status that the rows cover, the rows are the count: what a
 * consumer committed after the final status is the tail's (lost). */
static void test_ended_records_rows_only(void **state)
{
    fx *f = *state;
    model_summary s;
    end_spec e = END_OK;
    crashed_with_tail(f);
    e.records_stored = 20;
    finish(f, T0 + 2, &e);
    assert_int_equal(model_summarize(f->env, 0, UINT64_MAX, &s, NULL), 0);
    assert_int_equal(s.state, MODEL_STATE_ENDED);
    assert_int_equal(s.records_after_rows, 0);
    assert_int_equal(s.records_total, 20);
    model_summary_free(&s);
}

/* A final status the store refused (written aside), saying more were
 * stored than the rows: a full map refused the last health row too (truth
 * matrix seed 1617004884).  The records after the rows count, up to the
 * final status's figure; in the store, the rows stay the count. */
static void test_ended_records_last_row_refused(void **state)
{
    fx *f = *state;
    model_summary s;
    cupstore_txn *txn;
    int fd = -1;
    crashed_with_tail(f);
    assert_int_equal(cupstore_txn_begin(f->env, true, &txn), 0);
    for (unsigned st = 0; st < CUPSTORE_STEP_MAX; st++) {
        cupstore_step step = {.step = st, .start_mono_ns = 1000, .end_mono_ns = 2000};
        assert_int_equal(cupstore_step_put(txn, &step), 0);
    }
    assert_int_equal(cupstore_txn_commit(txn), 0);
    assert_int_equal(cupstore_final_aside_open(f->env, &fd), 0);
    cupstore_final fin = {.end_ns = (T0 + 2) * NS, .exit_path = CUPSTORE_EXIT_RETURN,
                          .protocol_complete = 1, .flush_ok = 1, .records_stored = 29,
                          .store_refused = 2};
    assert_int_equal(cupstore_final_aside_put(fd, &fin), 0);
    close(fd);
    assert_int_equal(model_summarize(f->env, 0, UINT64_MAX, &s, NULL), 0);
    assert_int_equal(s.state, MODEL_STATE_ENDED);
    assert_int_equal(s.records_after_rows, 9);
    assert_int_equal(s.records_total, 29);
    /* the first 9 committed after the rows: the 7 kernels, then 2 of the
     * memcpys (committed last but the earliest in time) */
    assert_int_equal(s.records_by_kind[CUPSTORE_KIND_KERNEL], 27);
    assert_int_equal(s.records_by_kind[CUPSTORE_KIND_MEMCPY], 2);
    assert_int_equal(s.records_by_device[1], 2);
    model_summary_free(&s);
    /* the same figure in the store: the rows are the count */
    end_spec e = END_OK;
    e.records_stored = 29;
    finish(f, T0 + 2, &e);
    assert_int_equal(model_summarize(f->env, 0, UINT64_MAX, &s, NULL), 0);
    assert_int_equal(s.records_after_rows, 0);
    assert_int_equal(s.records_total, 20);
    model_summary_free(&s);
}

/* 29.12: the store refused the last health row and the final status (a
 * full map); the final status, written aside, carries the losses by kind
 * and device: what the rows lack goes to its kind and device, so the
 * devices and the kinds add up to the loss total (truth matrix:
 * report:kind-lost-sum==all, sessions:loss_by_device-sums). */
static void put_loss(fx *f, uint64_t second, unsigned loss, unsigned kind, uint16_t dev,
                     bool estimate, uint64_t n)
{
    cupstore_txn *txn;
    cupstore_loss_row r = {.second = second, .loss = (uint8_t)loss, .kind = (uint8_t)kind,
                           .device = dev, .estimate = estimate, .count = n};
    assert_int_equal(cupstore_txn_begin(f->env, true, &txn), 0);
    assert_int_equal(cupstore_loss_add(txn, &r), 0);
    assert_int_equal(cupstore_txn_commit(txn), 0);
}

static void row_dropped4(unsigned i, cupstore_health *h, void *arg)
{
    (void)arg;
    if (i == 1)
        h->loss[CUPSTORE_LOSS_CUPTI_DROPPED] = 4;
}

static void test_final_aside_by_kind_and_device(void **state)
{
    fx *f = *state;
    model_summary s;
    model_facts fa;
    int fd = -1;
    rows(f, T0, 2, row_dropped4, NULL);
    put_loss(f, T0 + 1, CUPSTORE_LOSS_CUPTI_DROPPED, CUPSTORE_KIND_ALL, 0, false, 4);
    put_loss(f, T0 + 1, CUPSTORE_LOSS_CUPTI_DROPPED, CUPSTORE_KIND_KERNEL, 0, true, 3);
    put_loss(f, T0 + 1, CUPSTORE_LOSS_CUPTI_DROPPED, CUPSTORE_KIND_RUNTIME, 0, true, 1);
    /* the last row, refused: 6 more drops on device 1 (estimated 5 kernel,
     * 1 memcpy), a tail of 7 memcpy records on device 1 and 2 kernel
     * records on device 0 declined */
    assert_int_equal(cupstore_final_aside_open(f->env, &fd), 0);
    cupstore_final fin = {.end_ns = (T0 + 2) * NS, .exit_path = CUPSTORE_EXIT_RETURN,
                          .protocol_complete = 1, .flush_ok = 1, .records_stored = 20,
                          .store_refused = 2, .tail_lost = 7};
    fin.loss_total[CUPSTORE_LOSS_CUPTI_DROPPED] = 10;
    fin.loss_total[CUPSTORE_LOSS_TAIL] = 7;
    fin.loss_total[CUPSTORE_LOSS_DECLINED] = 2;
    fin.loss_device[CUPSTORE_LOSS_CUPTI_DROPPED][0] = 4;
    fin.loss_device[CUPSTORE_LOSS_CUPTI_DROPPED][1] = 6;
    fin.loss_device[CUPSTORE_LOSS_TAIL][1] = 7;
    fin.loss_device[CUPSTORE_LOSS_DECLINED][0] = 2;
    fin.loss_kind[CUPSTORE_LOSS_TAIL][CUPSTORE_KIND_MEMCPY] = 7;
    fin.loss_kind[CUPSTORE_LOSS_DECLINED][CUPSTORE_KIND_KERNEL] = 2;
    fin.dropped_kind_est[CUPSTORE_KIND_KERNEL] = 8;
    fin.dropped_kind_est[CUPSTORE_KIND_RUNTIME] = 1;
    fin.dropped_kind_est[CUPSTORE_KIND_MEMCPY] = 1;
    assert_int_equal(cupstore_final_aside_put(fd, &fin), 0);
    close(fd);

    assert_int_equal(model_summarize(f->env, 0, UINT64_MAX, &s, NULL), 0);
    assert_true(s.final_aside);
    assert_int_equal(s.loss[CUPSTORE_LOSS_CUPTI_DROPPED], 10);
    assert_int_equal(s.loss[CUPSTORE_LOSS_TAIL], 7);
    assert_int_equal(s.loss[CUPSTORE_LOSS_DECLINED], 2);
    assert_int_equal(s.loss_by_device[0][CUPSTORE_LOSS_CUPTI_DROPPED], 4);
    assert_int_equal(s.loss_by_device[1][CUPSTORE_LOSS_CUPTI_DROPPED], 6);
    assert_int_equal(s.loss_by_device[1][CUPSTORE_LOSS_TAIL], 7);
    assert_int_equal(s.loss_by_device[0][CUPSTORE_LOSS_DECLINED], 2);
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
        assert_int_equal(s.loss_by_device[MODEL_DEVICE_NONE][l], 0);
    model_summary_free(&s);

    assert_int_equal(model_facts_read(f->env, 0, UINT64_MAX, &fa, NULL), 0);
    assert_int_equal(fa.kind_loss[CUPSTORE_KIND_MEMCPY], 7);
    assert_int_equal(fa.kind_loss[CUPSTORE_KIND_KERNEL], 2);
    assert_int_equal(fa.kind_loss_est[CUPSTORE_KIND_KERNEL], 8);
    assert_int_equal(fa.kind_loss_est[CUPSTORE_KIND_RUNTIME], 1);
    assert_int_equal(fa.kind_loss_est[CUPSTORE_KIND_MEMCPY], 1);
    model_facts_free(&fa);

}

/* 29.2: records by the epoch of their launch.  Epoch 1 collects
 * [T0, T0+1), epoch 2 collects [T0+1, T0+2), epoch 3 is out of scope
 * from T0+2 to the end at T0+3.  API calls: correlation 5 at T0+0.9 (epoch
 * 1), 6 at T0+1.1 (epoch 2).  Kernel 5 starts on the GPU at T0+1.2 (in
 * epoch 2's time: epoch 1's launch); kernel 6 at T0+2.5 (out of scope:
 * epoch 2's); a memcpy with no id at T0+2.6 (no launch known: the epoch
 * that collected before it); one at T0+3.5 (after the end: the same). */
static void put_epochs_and_launches(fx *f, bool api)
{
    cupstore_txn *txn;
    cupstore_epoch e[3] = {
        {.id = 1, .kinds = CUPSTORE_KINDS_DEFAULT, .start_ns = T0 * NS, .end_ns = (T0 + 1) * NS},
        {.id = 2, .kinds = CUPSTORE_KINDS_DEFAULT, .start_ns = (T0 + 1) * NS,
         .end_ns = (T0 + 2) * NS},
        {.id = 3, .kinds = 0, .start_ns = (T0 + 2) * NS, .end_ns = (T0 + 3) * NS,
         .flags = CUPSTORE_EPOCH_OUT_OF_SCOPE}};
    cupstore_record r[6];
    memset(r, 0, sizeof r);
    r[0] = (cupstore_record){.kind = CUPSTORE_KIND_RUNTIME, .device = CUPSTORE_DEVICE_NONE,
                             .correlation = 5, .start_ns = T0 * NS + 900000000u};
    r[1] = (cupstore_record){.kind = CUPSTORE_KIND_RUNTIME, .device = CUPSTORE_DEVICE_NONE,
                             .correlation = 6, .start_ns = (T0 + 1) * NS + 100000000u};
    r[2] = (cupstore_record){.kind = CUPSTORE_KIND_KERNEL, .correlation = 5,
                             .start_ns = (T0 + 1) * NS + 200000000u};
    r[3] = (cupstore_record){.kind = CUPSTORE_KIND_KERNEL, .correlation = 6,
                             .start_ns = (T0 + 2) * NS + 500000000u};
    r[4] = (cupstore_record){.kind = CUPSTORE_KIND_MEMCPY, .start_ns = (T0 + 2) * NS + 600000000u};
    r[5] = (cupstore_record){.kind = CUPSTORE_KIND_MEMCPY, .start_ns = (T0 + 3) * NS + 500000000u};
    for (unsigned i = 0; i < 6; i++)
        r[i].end_ns = r[i].start_ns + 1000;
    assert_int_equal(cupstore_txn_begin(f->env, true, &txn), 0);
    for (unsigned i = 0; i < 3; i++)
        assert_int_equal(cupstore_epoch_put(txn, &e[i]), 0);
    assert_int_equal(api ? cupstore_chunk_put(txn, r, 6) : cupstore_chunk_put(txn, r + 2, 4), 0);
    assert_int_equal(cupstore_txn_commit(txn), 0);
}

typedef struct epoch_of_ctx {
    model_epoch_map *m;
    long by_corr[8];            /* correlation -> epoch index            */
    long memcpy_epoch[2];
    unsigned nmemcpy;
} epoch_of_ctx;

static int on_epoch_of(const cupstore_record *r, void *arg)
{
    epoch_of_ctx *c = arg;
    if (r->kind == CUPSTORE_KIND_KERNEL)
        c->by_corr[r->correlation] = model_epoch_map_of(c->m, r);
    else if (r->kind == CUPSTORE_KIND_MEMCPY && c->nmemcpy < 2)
        c->memcpy_epoch[c->nmemcpy++] = model_epoch_map_of(c->m, r);
    return 0;
}

static void epoch_of_read(fx *f, model_epoch_map *m, epoch_of_ctx *c)
{
    cupstore_txn *txn;
    memset(c, 0, sizeof *c);
    c->m = m;
    assert_int_equal(cupstore_txn_begin(f->env, false, &txn), 0);
    assert_int_equal(model_epoch_map_read(txn, m), 0);
    assert_int_equal(cupstore_record_scan(txn, 0, UINT64_MAX, on_epoch_of, c), 0);
    cupstore_txn_abort(txn);
}

static void test_epoch_of_launch(void **state)
{
    fx *f = *state;
    model_epoch_map m;
    epoch_of_ctx c;
    put_epochs_and_launches(f, true);
    epoch_of_read(f, &m, &c);
    assert_int_equal(m.n, 3);
    assert_int_equal(m.ncoll, 2);
    assert_int_equal(m.e[1].corr_lo, 6);
    assert_int_equal(c.by_corr[5], model_epoch_map_find(&m, 1));   /* started in epoch 2 */
    assert_int_equal(c.by_corr[6], model_epoch_map_find(&m, 2));   /* started out of scope */
    assert_int_equal(c.nmemcpy, 2);
    assert_int_equal(c.memcpy_epoch[0], model_epoch_map_find(&m, 2));
    assert_int_equal(c.memcpy_epoch[1], model_epoch_map_find(&m, 2));
    model_epoch_map_free(&m);
}

/* Periodic windows with CUPTI torn down between them: call ids start
 * afresh in each window (the H100, session 18: agentctl put every GPU
 * record in the first window).  Epoch 1 [T0, T0+1) and 3 [T0+2, T0+3)
 * collect, 2 and 4 are the rests (out of scope).  Calls 1 and 2 in each
 * window; kernels of call 2 at T0+0.6 and T0+1.05 (run into the rest),
 * of call 1 at T0+2.3 and call 2 at T0+2.5. */
typedef struct afresh_ctx {
    model_epoch_map *m;
    long epoch[4];
    unsigned n;
} afresh_ctx;

static int on_afresh(const cupstore_record *r, void *arg)
{
    afresh_ctx *c = arg;
    if (r->kind == CUPSTORE_KIND_KERNEL && c->n < 4)
        c->epoch[c->n++] = model_epoch_map_of(c->m, r);
    return 0;
}

static void test_epoch_of_ids_afresh(void **state)
{
    fx *f = *state;
    cupstore_txn *txn;
    cupstore_epoch e[4] = {
        {.id = 1, .kinds = CUPSTORE_KINDS_DEFAULT, .start_ns = T0 * NS, .end_ns = (T0 + 1) * NS},
        {.id = 2, .kinds = 0, .start_ns = (T0 + 1) * NS, .end_ns = (T0 + 2) * NS,
         .flags = CUPSTORE_EPOCH_OUT_OF_SCOPE},
        {.id = 3, .kinds = CUPSTORE_KINDS_DEFAULT, .start_ns = (T0 + 2) * NS,
         .end_ns = (T0 + 3) * NS},
        {.id = 4, .kinds = 0, .start_ns = (T0 + 3) * NS, .flags = CUPSTORE_EPOCH_OUT_OF_SCOPE}};
    const struct { unsigned kind, corr; uint64_t ms; } spec[8] = {
        {CUPSTORE_KIND_RUNTIME, 1, 100},  {CUPSTORE_KIND_RUNTIME, 2, 500},
        {CUPSTORE_KIND_KERNEL, 2, 600},   {CUPSTORE_KIND_KERNEL, 2, 1050},
        {CUPSTORE_KIND_RUNTIME, 1, 2100}, {CUPSTORE_KIND_RUNTIME, 2, 2200},
        {CUPSTORE_KIND_KERNEL, 1, 2300},  {CUPSTORE_KIND_KERNEL, 2, 2500}};
    cupstore_record r[8];
    memset(r, 0, sizeof r);
    for (unsigned i = 0; i < 8; i++) {
        r[i].kind = (uint8_t)spec[i].kind;
        r[i].device = spec[i].kind == CUPSTORE_KIND_KERNEL ? 0 : CUPSTORE_DEVICE_NONE;
        r[i].correlation = spec[i].corr;
        r[i].start_ns = T0 * NS + spec[i].ms * 1000000u;
        r[i].end_ns = r[i].start_ns + 1000;
    }
    assert_int_equal(cupstore_txn_begin(f->env, true, &txn), 0);
    for (unsigned i = 0; i < 4; i++)
        assert_int_equal(cupstore_epoch_put(txn, &e[i]), 0);
    assert_int_equal(cupstore_chunk_put(txn, r, 8), 0);
    assert_int_equal(cupstore_txn_commit(txn), 0);
    model_epoch_map m;
    afresh_ctx c = {.m = &m};
    assert_int_equal(cupstore_txn_begin(f->env, false, &txn), 0);
    assert_int_equal(model_epoch_map_read(txn, &m), 0);
    assert_int_equal(cupstore_record_scan(txn, 0, UINT64_MAX, on_afresh, &c), 0);
    cupstore_txn_abort(txn);
    assert_int_equal(m.ncoll, 2);
    assert_int_equal(c.n, 4);
    assert_int_equal(c.epoch[0], model_epoch_map_find(&m, 1));
    assert_int_equal(c.epoch[1], model_epoch_map_find(&m, 1));   /* ran into the rest */
    assert_int_equal(c.epoch[2], model_epoch_map_find(&m, 3));
    assert_int_equal(c.epoch[3], model_epoch_map_find(&m, 3));
    model_epoch_map_free(&m);
}

/* No API record: the boundary ids are unknown, each record by its start:
 * kernel 5 then falls in epoch 2 (the limit of the rule), kernel 6 (out
 * of scope) and the memcpys in epoch 2, the last that collected. */
static void test_epoch_of_no_api(void **state)
{
    fx *f = *state;
    model_epoch_map m;
    epoch_of_ctx c;
    put_epochs_and_launches(f, false);
    epoch_of_read(f, &m, &c);
    assert_int_equal(c.by_corr[5], model_epoch_map_find(&m, 2));
    assert_int_equal(c.by_corr[6], model_epoch_map_find(&m, 2));
    assert_int_equal(c.memcpy_epoch[0], model_epoch_map_find(&m, 2));
    assert_int_equal(c.memcpy_epoch[1], model_epoch_map_find(&m, 2));
    model_epoch_map_free(&m);
}

/* A session that ended outside its capture range with a tail the rows do
 * not hold: the tail is the newest collecting epoch's, not the
 * out-of-scope epoch's (29.2: an out-of-scope epoch must stay lossless). */
static void row_epoch2_from3(unsigned i, cupstore_health *h, void *arg)
{
    (void)arg;
    if (i >= 3) {
        h->epoch = 2;
        h->kinds_enabled = 0;
        memset(h->records_by_kind, 0, sizeof h->records_by_kind);
        memset(h->records_by_device, 0, sizeof h->records_by_device);
        h->records_parsed = h->records_stored = 0;
    }
}

static void test_tail_not_in_out_of_scope_epoch(void **state)
{
    fx *f = *state;
    cupstore_txn *txn;
    model_facts fa;
    rows(f, T0, 5, row_epoch2_from3, NULL);
    cupstore_epoch e1 = {.id = 1, .kinds = CUPSTORE_KINDS_DEFAULT, .start_ns = T0 * NS,
                         .end_ns = (T0 + 3) * NS};
    cupstore_epoch e2 = {.id = 2, .kinds = 0, .start_ns = (T0 + 3) * NS,
                         .flags = CUPSTORE_EPOCH_OUT_OF_SCOPE};
    assert_int_equal(cupstore_txn_begin(f->env, true, &txn), 0);
    assert_int_equal(cupstore_epoch_put(txn, &e1), 0);
    assert_int_equal(cupstore_epoch_put(txn, &e2), 0);
    assert_int_equal(cupstore_txn_commit(txn), 0);
    end_spec e = END_OK;
    e.tail_lost = 40;
    finish(f, T0 + 4, &e);
    assert_int_equal(model_facts_read(f->env, 0, UINT64_MAX, &fa, NULL), 0);
    assert_int_equal(fa.nepochs, 2);
    assert_int_equal(fa.epochs[0].id, 1);
    assert_int_equal(fa.epochs[0].loss[CUPSTORE_LOSS_TAIL], 40);
    assert_int_equal(fa.epochs[1].loss[CUPSTORE_LOSS_TAIL], 0);
    model_facts_free(&fa);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_clean, setup, teardown),
        cmocka_unit_test(test_each_loss_class),
        cmocka_unit_test(test_exit_paths),
        cmocka_unit_test_setup_teardown(test_crashed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crashed_before_heartbeat, setup, teardown),
        cmocka_unit_test_setup_teardown(test_running, setup, teardown),
        cmocka_unit_test_setup_teardown(test_running_no_pid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush_failed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disabled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_verify, setup, teardown),
        cmocka_unit_test_setup_teardown(test_verify_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_verify_running_not_verified, setup, teardown),
        cmocka_unit_test_setup_teardown(test_advice_pool_sustained, setup, teardown),
        cmocka_unit_test_setup_teardown(test_advice_pool_short, setup, teardown),
        cmocka_unit_test_setup_teardown(test_advice_pool_per_second_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_advice_small_buffers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_advice_queued_in_cupti, setup, teardown),
        cmocka_unit_test_setup_teardown(test_advice_consumer_behind, setup, teardown),
        cmocka_unit_test_setup_teardown(test_advice_slow_store, setup, teardown),
        cmocka_unit_test_setup_teardown(test_advice_store_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_advice_zero_ts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_advice_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tail_unknown_bounded_above, setup, teardown),
        cmocka_unit_test_setup_teardown(test_advice_conflict, setup, teardown),
        cmocka_unit_test_setup_teardown(test_advice_parse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_advice_loss_over, setup, teardown),
        cmocka_unit_test_setup_teardown(test_advice_loss_over_same_kinds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_epoch_attribution, setup, teardown),
        cmocka_unit_test(test_epoch_dormant_never_baseline),
        cmocka_unit_test_setup_teardown(test_epochs_add_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_epoch_short_capture, setup, teardown),
        cmocka_unit_test_setup_teardown(test_baseline_not_crashed_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crashed_records_after_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_final_aside_by_kind_and_device, setup, teardown),
        cmocka_unit_test_setup_teardown(test_epoch_of_launch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_epoch_of_ids_afresh, setup, teardown),
        cmocka_unit_test_setup_teardown(test_epoch_of_no_api, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tail_not_in_out_of_scope_epoch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crashed_records_no_row, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crashed_records_partial_chunk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ended_records_rows_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ended_records_last_row_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
