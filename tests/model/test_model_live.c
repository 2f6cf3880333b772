/*
 * test_model_live.c - model_live_update against model_summarize: a live
 * session is written second by second (records, losses in health rows and
 * in exact loss rows only, an estimate row that must not count, a second
 * where the agent stepped aside), and after every batch the incremental
 * summary must say what a whole-session summary says; then the session
 * ends (a final status with tail loss) and the two must still agree.
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

#include "cupstore.h"
#include "model.h"

#define NS 1000000000ull

typedef struct fx {
    char dir[64];
    char path[128];
    cupstore_env *w;     /* writer; also read (LMDB allows one env per
                            process and file)                            */
    uint64_t t0;
    unsigned next;
} fx;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * NS + (uint64_t)ts.tv_nsec;
}

static void put_rows(fx *f, unsigned n, bool lossy, bool disabled_once)
{
    for (unsigned i = 0; i < n; i++, f->next++) {
        cupstore_txn *txn;
        cupstore_health h = {.second = f->t0 + f->next, .heartbeat_ns = now_ns(),
                             .epoch = 1, .kinds_enabled = CUPSTORE_KINDS_DEFAULT};
        h.records_by_kind[CUPSTORE_KIND_KERNEL] = 100 + f->next;
        h.records_by_kind[CUPSTORE_KIND_RUNTIME] = 50;
        h.records_by_device[f->next % 2] = 150 + f->next;
        h.buf_completed = 3;
        h.buf_consumed = f->next % 7 == 0 ? 2 : 3;
        if (lossy && f->next % 3 == 0)
            h.loss[CUPSTORE_LOSS_CUPTI_DROPPED] = 10;
        if (disabled_once && i == 0)
            h.flags = CUPSTORE_HF_DISABLED;
        assert_int_equal(cupstore_txn_begin(f->w, true, &txn), 0);
        assert_int_equal(cupstore_health_put(txn, &h), 0);
        if (lossy && f->next % 3 == 0) {
            /* the same drops as exact rows (not counted twice) ... */
            cupstore_loss_row r = {.second = h.second, .loss = CUPSTORE_LOSS_CUPTI_DROPPED,
                                   .kind = CUPSTORE_KIND_ALL, .device = 0, .count = 10};
            assert_int_equal(cupstore_loss_add(txn, &r), 0);
            /* ... an estimate (never counted) ... */
            r.kind = CUPSTORE_KIND_KERNEL, r.estimate = true, r.count = 99;
            assert_int_equal(cupstore_loss_add(txn, &r), 0);
        }
        if (lossy && f->next % 5 == 0) {
            /* ... and a class only in the loss rows */
            cupstore_loss_row r = {.second = h.second, .loss = CUPSTORE_LOSS_ZERO_TS,
                                   .kind = CUPSTORE_KIND_KERNEL, .device = 1, .count = 4};
            assert_int_equal(cupstore_loss_add(txn, &r), 0);
        }
        assert_int_equal(cupstore_txn_commit(txn), 0);
    }
}

static void assert_same(const model_summary *a, const model_summary *b)
{
    assert_string_equal(a->id, b->id);
    assert_int_equal(a->state, b->state);
    assert_int_equal(a->complete, b->complete);
    assert_int_equal(a->records_total, b->records_total);
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
        assert_int_equal(a->records_by_kind[k], b->records_by_kind[k]);
    for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX; d++)
        assert_int_equal(a->records_by_device[d], b->records_by_device[d]);
    assert_int_equal(a->device_mask, b->device_mask);
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
        assert_int_equal(a->loss[l], b->loss[l]);
    assert_int_equal(a->loss_total, b->loss_total);
    assert_int_equal(a->buf_completed, b->buf_completed);
    assert_int_equal(a->buf_consumed, b->buf_consumed);
    assert_int_equal(a->seconds, b->seconds);
    assert_int_equal(a->heartbeat_ns, b->heartbeat_ns);
    assert_int_equal(a->end_ns, b->end_ns);
    assert_int_equal(a->epoch, b->epoch);
    assert_int_equal(a->kinds_enabled, b->kinds_enabled);
}

static void check(fx *f, model_live *l)
{
    model_summary full;
    char *cause = NULL;
    assert_int_equal(model_live_update(f->w, l, &cause), 0);
    assert_int_equal(model_summarize(f->w, 0, UINT64_MAX, &full, &cause), 0);
    assert_same(&l->sum, &full);
    model_summary_free(&full);
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    char host[64];
    snprintf(f->dir, sizeof f->dir, "/tmp/cuptop-live-test.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/20250101T000000-%d", f->dir, (int)getpid());
    assert_int_equal(cupstore_env_open(&f->w, f->path, CUPSTORE_CREATE, NULL), 0);
    cupstore_txn *txn;
    char buf[64];
    assert_int_equal(cupstore_txn_begin(f->w, true, &txn), 0);
    snprintf(buf, sizeof buf, "%d", (int)getpid());
    assert_int_equal(cupstore_meta_put(txn, "pid", buf), 0);
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    assert_int_equal(cupstore_meta_put(txn, "host", host), 0);
    /* history from 200 s ago to now, the heartbeat always fresh */
    f->t0 = now_ns() / NS - 200;
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)(f->t0 * NS));
    assert_int_equal(cupstore_meta_put(txn, "start_ns", buf), 0);
    assert_int_equal(cupstore_txn_commit(txn), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    char cmd[160];
    cupstore_env_close(f->w);
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

static void test_live_equals_full(void **state)
{
    fx *f = *state;
    model_live l;
    memset(&l, 0, sizeof l);
    put_rows(f, 5, false, false);
    check(f, &l);                   /* first update: the whole session */
    assert_int_equal(l.sum.state, MODEL_STATE_RUNNING);
    assert_true(l.sum.complete);
    put_rows(f, 40, true, false);   /* losses; a fold happens */
    check(f, &l);
    assert_false(l.sum.complete);
    assert_true(l.have_base);
    for (int round = 0; round < 6; round++) {
        put_rows(f, 7 + (unsigned)round * 5, round % 2 == 0, false);
        check(f, &l);
    }
    assert_true(l.base_to > f->t0 + 40);
    model_live_free(&l);
}

/* model_live_series: the series a monitor keeps (each second overwritten
 * when re-read) adds up to the verdict's losses, class by class. */
typedef struct kept {
    uint64_t t0;
    uint64_t loss[400][CUPSTORE_LOSS_MAX];
    unsigned calls;
} kept;

static int keep_second(const model_second *m, void *arg)
{
    kept *k = arg;
    assert_true(m->second >= k->t0 && m->second - k->t0 < 400);
    memcpy(k->loss[m->second - k->t0], m->loss, sizeof m->loss);
    k->calls++;
    return 0;
}

static void test_live_series(void **state)
{
    fx *f = *state;
    model_live l;
    kept *k = calloc(1, sizeof *k);
    char *cause = NULL;
    assert_non_null(k);
    memset(&l, 0, sizeof l);
    k->t0 = f->t0;
    for (int round = 0; round < 6; round++) {
        put_rows(f, 9 + (unsigned)round * 4, true, false);
        k->calls = 0;
        assert_int_equal(model_live_series(f->w, &l, keep_second, k, &cause), 0);
        assert_null(cause);
        /* after the first frame, only the new and the newest guarded seconds */
        if (round > 0)
            assert_true(k->calls <= 9 + (unsigned)round * 4 + MODEL_LIVE_GUARD);
        for (unsigned c = 0; c < CUPSTORE_LOSS_MAX; c++) {
            uint64_t sum = 0;
            for (unsigned i = 0; i < 400; i++)
                sum += k->loss[i][c];
            assert_int_equal(sum, l.sum.loss[c]);
        }
    }
    assert_true(l.sum.loss[CUPSTORE_LOSS_ZERO_TS] > 0);   /* loss rows only */
    model_live_free(&l);
    free(k);
}

static void test_live_disabled_in_the_base(void **state)
{
    fx *f = *state;
    model_live l;
    memset(&l, 0, sizeof l);
    put_rows(f, 3, false, true);    /* the agent stepped aside, once */
    put_rows(f, 30, false, false);
    check(f, &l);
    assert_false(l.sum.complete);
    put_rows(f, 30, false, false);  /* the disabled second is folded now */
    check(f, &l);
    check(f, &l);
    assert_true(l.have_base);
    assert_false(l.sum.complete);
    model_live_free(&l);
}

static void test_live_then_ended(void **state)
{
    fx *f = *state;
    model_live l;
    memset(&l, 0, sizeof l);
    put_rows(f, 60, true, false);
    check(f, &l);
    put_rows(f, 10, false, false);
    check(f, &l);
    cupstore_txn *txn;
    cupstore_final fin = {.end_ns = now_ns(), .exit_path = CUPSTORE_EXIT_RETURN,
                          .protocol_complete = 1, .flush_ok = 1, .tail_lost = 17};
    assert_int_equal(cupstore_txn_begin(f->w, true, &txn), 0);
    for (unsigned st = 0; st < CUPSTORE_STEP_MAX; st++) {
        cupstore_step step = {.step = st, .start_mono_ns = 1000, .end_mono_ns = 2000};
        assert_int_equal(cupstore_step_put(txn, &step), 0);
    }
    assert_int_equal(cupstore_final_put(txn, &fin), 0);
    assert_int_equal(cupstore_txn_commit(txn), 0);
    check(f, &l);
    assert_int_equal(l.sum.state, MODEL_STATE_ENDED);
    assert_int_equal(l.sum.loss[CUPSTORE_LOSS_TAIL], 17);
    model_live_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_live_equals_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_live_series, setup, teardown),
        cmocka_unit_test_setup_teardown(test_live_disabled_in_the_base, setup, teardown),
        cmocka_unit_test_setup_teardown(test_live_then_ended, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
