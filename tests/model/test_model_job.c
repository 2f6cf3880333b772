/*
 * test_model_job.c - a job's verdict (model_job_judge) over summaries
 * built by hand, and model_session_job on a store built in the test.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cupstore.h"
#include "model.h"

/* A job of n processes, all ended COMPLETE, ranks given (-1: none). */
static void job_of(model_job *j, const int *ranks, size_t n)
{
    memset(j, 0, sizeof *j);
    snprintf(j->id, sizeof j->id, "job-1");
    j->procs = calloc(n, sizeof *j->procs);
    assert_non_null(j->procs);
    j->n = n;
    for (size_t i = 0; i < n; i++) {
        model_summary *s = &j->procs[i];
        snprintf(s->id, sizeof s->id, "20250101T000000-%zu", 100 + i);
        s->pid = (int)(100 + i);
        s->rank = ranks[i];
        s->state = MODEL_STATE_ENDED;
        s->complete = true;
        s->start_ns = (uint64_t)(1000 + i) * 1000000000u;
        s->end_ns = s->start_ns + 5000000000u;
        s->records_total = 10 * (i + 1);
    }
}

static void test_all_complete(void **state)
{
    (void)state;
    model_job j;
    int ranks[] = {2, 0, 1};
    job_of(&j, ranks, 3);
    model_job_judge(&j);
    assert_true(j.complete);
    assert_int_equal(j.state, MODEL_STATE_ENDED);
    /* sorted by rank */
    assert_int_equal(j.procs[0].rank, 0);
    assert_int_equal(j.procs[1].rank, 1);
    assert_int_equal(j.procs[2].rank, 2);
    assert_int_equal(j.records_total, 60);
    assert_int_equal(j.start_ns, 1000ull * 1000000000u);
    assert_int_equal(j.end_ns, 1007ull * 1000000000u);
    assert_int_equal(j.missing, 0);
    model_job_free(&j);
}

static void test_one_crashed(void **state)
{
    (void)state;
    model_job j;
    int ranks[] = {0, 1, 2};
    job_of(&j, ranks, 3);
    j.procs[1].state = MODEL_STATE_CRASHED;
    j.procs[1].complete = false;
    j.procs[2].loss[CUPSTORE_LOSS_TAIL] = 4;
    j.procs[2].loss_total = 4;
    j.procs[2].complete = false;
    model_job_judge(&j);
    assert_false(j.complete);
    assert_int_equal(j.state, MODEL_STATE_CRASHED);
    assert_int_equal(j.crashed, 1);
    assert_int_equal(j.incomplete, 2);
    assert_int_equal(j.loss[CUPSTORE_LOSS_TAIL], 4);
    assert_int_equal(j.loss_total, 4);
    /* a running process makes the job running (so far) */
    j.procs[0].state = MODEL_STATE_RUNNING;
    model_job_judge(&j);
    assert_int_equal(j.state, MODEL_STATE_RUNNING);
    model_job_free(&j);
}

static void test_skipped_and_missing(void **state)
{
    (void)state;
    model_job j;
    int ranks[] = {0, 3, -1};
    job_of(&j, ranks, 3);
    /* --only-if stepped aside in rank 3: not a failure */
    snprintf(j.procs[1].skipped, sizeof j.procs[1].skipped, "LOCAL_RANK is not 0");
    j.procs[1].complete = false;
    model_job_judge(&j);
    assert_true(j.complete);
    assert_int_equal(j.skipped, 1);
    assert_int_equal(j.procs[2].rank, -1);   /* no rank: last */
    /* a world size of 4: ranks 1 and 2 have no session */
    j.procs[0].world_size = 4;
    model_job_judge(&j);
    assert_false(j.complete);
    assert_int_equal(j.world_size, 4);
    assert_int_equal(j.missing, 2);
    assert_int_equal(j.first_missing, 1);
    model_job_free(&j);
}

static void test_duplicate_rank(void **state)
{
    (void)state;
    model_job j;
    int ranks[] = {0, 0};
    job_of(&j, ranks, 2);
    model_job_judge(&j);
    assert_true(j.duplicate_rank);
    assert_true(j.complete);
    model_job_free(&j);
    job_of(&j, ranks, 0);
    model_job_judge(&j);
    assert_false(j.complete);   /* no process: nothing to call complete */
    model_job_free(&j);
}

struct meta_kv {
    const char *job, *source;
};

static int put_job(cupstore_txn *txn, void *arg)
{
    const struct meta_kv *m = arg;
    int rc = 0;
    if (m->job)
        rc = cupstore_meta_put(txn, "job", m->job);
    if (!rc && m->source)
        rc = cupstore_meta_put(txn, "job_source", m->source);
    return rc;
}

/* torchrun's own session (CUDA started for a device count: one overhead
 * record, no rank) in a job with ranks is its launcher; a rankless process
 * with CUDA work, a crashed one, or any in a job without ranks is not. */
static void test_launcher(void **state)
{
    (void)state;
    model_job j;
    int ranks[] = {-1, 1, 0, -1};
    job_of(&j, ranks, 4);
    for (size_t i = 0; i < 4; i++)
        j.procs[i].records_by_kind[CUPSTORE_KIND_KERNEL] = ranks[i] >= 0 ? 100 : 0;
    j.procs[0].records_by_kind[CUPSTORE_KIND_OVERHEAD] = 1;   /* the launcher */
    j.procs[3].records_by_kind[CUPSTORE_KIND_RUNTIME] = 5;    /* rankless, with work */
    model_job_judge(&j);
    assert_true(j.complete);
    assert_int_equal(j.launchers, 1);
    assert_int_equal(j.procs[0].rank, 0);
    assert_false(j.procs[0].job_launcher);
    assert_false(j.procs[1].job_launcher);
    /* rank none last, by start: the launcher (started first), then the other */
    assert_true(j.procs[2].job_launcher);
    assert_int_equal(j.procs[2].pid, 100);
    assert_false(j.procs[3].job_launcher);
    /* crashed: not taken for a launcher */
    j.procs[2].state = MODEL_STATE_CRASHED;
    j.procs[2].complete = false;
    model_job_judge(&j);
    assert_int_equal(j.launchers, 0);
    assert_false(j.complete);
    model_job_free(&j);
    /* no process names a rank: nobody is the launcher */
    int none[] = {-1, -1};
    job_of(&j, none, 2);
    model_job_judge(&j);
    assert_int_equal(j.launchers, 0);
    assert_false(j.procs[0].job_launcher || j.procs[1].job_launcher);
    model_job_free(&j);
}

static void test_session_job(void **state)
{
    (void)state;
    char dir[] = "/tmp/cuptop-model-job.XXXXXX";
    assert_non_null(mkdtemp(dir));
    const struct meta_kv cases[] = {
        {"job-7", "CUPTOP_JOB"}, {NULL, NULL}, {"bad id", "CUPTOP_JOB"}, {"x", "session"}};
    const char *want[] = {"job-7", NULL, NULL, "x"};
    const bool own[] = {false, true, true, true};
    for (size_t i = 0; i < 4; i++) {
        cupstore_env *env;
        char *id = NULL, job[96];
        bool o;
        assert_int_equal(cupstore_session_create(&env, &id, dir, 4000 + (int)i, NULL), 0);
        assert_int_equal(cupstore_write(env, put_job, (void *)&cases[i], 0), 0);
        assert_int_equal(model_session_job(env, job, sizeof job, &o), 0);
        /* no job, or one that is no job id: the session's own */
        assert_string_equal(job, want[i] ? want[i] : id);
        assert_int_equal(o, own[i]);
        cupstore_env_close(env);
        free(id);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}


/* Periodic windows across a job: openings aligned by boundary; the spread
 * is the largest of one boundary opened by two or more processes; a
 * boundary only some processes opened is not "in all". */
static void test_windows_align(void **state)
{
    (void)state;
    const uint64_t S = 1000000000ull;
    model_job_opening v[] = {
        {.proc = 1, .sched_ns = 11 * S, .start_ns = 11 * S + 3000000},
        {.proc = 0, .sched_ns = 10 * S, .start_ns = 10 * S + 1000000},
        {.proc = 1, .sched_ns = 10 * S, .start_ns = 10 * S + 1500000},
        {.proc = 0, .sched_ns = 11 * S, .start_ns = 11 * S + 200000},
        {.proc = 0, .sched_ns = 12 * S, .start_ns = 12 * S + 100000},   /* rank 1 ended */
    };
    model_job_windows w;
    model_job_windows_align(v, 5, &w);
    assert_int_equal(w.procs, 2);
    assert_int_equal(w.boundaries, 3);
    assert_int_equal(w.in_all, 2);
    assert_int_equal(w.spread_ns, 2800000);   /* boundary 11: 3.0 ms - 0.2 ms */
    assert_int_equal(w.spread_sched_ns, 11 * S);
    assert_int_equal(v[0].sched_ns, 10 * S);   /* sorted in place */

    /* one process: boundaries counted, no spread */
    model_job_opening one[] = {{.proc = 3, .sched_ns = 5 * S, .start_ns = 5 * S + 9}};
    model_job_windows_align(one, 1, &w);
    assert_int_equal(w.procs, 1);
    assert_int_equal(w.boundaries, 1);
    assert_int_equal(w.in_all, 1);
    assert_int_equal(w.spread_ns, 0);
    assert_int_equal(w.spread_sched_ns, 0);

    model_job_windows_align(NULL, 0, &w);
    assert_int_equal(w.procs, 0);
    assert_int_equal(w.boundaries, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_complete),
        cmocka_unit_test(test_one_crashed),
        cmocka_unit_test(test_skipped_and_missing),
        cmocka_unit_test(test_duplicate_rank),
        cmocka_unit_test(test_launcher),
        cmocka_unit_test(test_session_job),
        cmocka_unit_test(test_windows_align),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
