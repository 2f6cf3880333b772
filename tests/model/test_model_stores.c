/*
 * test_model_stores.c - several stores read as one (model_stores.c,
 * model_job_read_stores) on stores built in the test: how a directory of
 * stores is recognised, a directory reached twice read once, a store that
 * cannot be listed kept with its error, a session looked up across stores,
 * and a job whose processes have the same session id in two stores (ids
 * are unique within one store only): two processes, each with its store
 * and its own open session.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cupstore.h"
#include "model.h"

static char root[64];

static void path(char *buf, size_t len, const char *sub)
{
    snprintf(buf, len, "%s/%s", root, sub);
}

static int put_meta(cupstore_txn *txn, void *arg)
{
    const char *const *kv = arg;
    int rc = 0;
    for (size_t i = 0; !rc && kv[i]; i += 2)
        rc = cupstore_meta_put(txn, kv[i], kv[i + 1]);
    return rc;
}

/* A session of pid in store sub (created 0700), with job and rank; its id
 * into id (caller frees). */
static void session(const char *sub, int pid, const char *job, const char *rank, char **id)
{
    char dir[128];
    cupstore_env *env;
    path(dir, sizeof dir, sub);
    mkdir(dir, 0700);
    assert_int_equal(cupstore_session_create(&env, id, dir, pid, NULL), 0);
    const char *kv[] = {"job", job, "job_source", "CUPTOP_JOB", "rank", rank,
                        "rank_source", "RANK", NULL};
    assert_int_equal(cupstore_write(env, put_meta, kv, 0), 0);
    cupstore_env_close(env);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/cuptop-model-stores.XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    return system(cmd) == 0 ? 0 : -1;
}

/* A directory of stores: each subdirectory holding sessions, by name; an
 * empty one and a file are not stores; a store named again is read once. */
static void test_gathered(void **state)
{
    (void)state;
    char *a, *b, g[128], hb[128], file[128], empty[128];
    path(g, sizeof g, "g");
    mkdir(g, 0700);
    session("g/hostB", 4100, "j1", "1", &b);
    session("g/hostA", 4100, "j1", "0", &a);
    path(empty, sizeof empty, "g/empty");
    mkdir(empty, 0700);
    path(file, sizeof file, "g/file");
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    model_stores ss = {0};
    assert_int_equal(model_stores_add(&ss, g), 0);
    assert_int_equal(ss.n, 2);
    assert_true(ss.several);
    assert_non_null(strstr(ss.v[0].dir, "/g/hostA"));
    assert_non_null(strstr(ss.v[1].dir, "/g/hostB"));
    assert_int_equal(ss.v[0].nsessions, 1);
    path(hb, sizeof hb, "g/hostB");
    assert_int_equal(model_stores_add(&ss, hb), 0);   /* already there */
    assert_int_equal(ss.n, 2);
    /* a session in both stores (the same pid, the same second: the same
     * id), and one in neither */
    size_t ix = 9, found = 0;
    if (strcmp(a, b) == 0) {
        assert_int_equal(model_stores_find(&ss, a, &ix, &found), CUPSTORE_EINVAL);
        assert_int_equal(found, 2);
    }
    assert_int_equal(model_stores_find(&ss, "20000101T000000-1", &ix, &found),
                     CUPSTORE_ENOTFOUND);
    model_stores_free(&ss);
    /* one store alone is one store; an empty directory too (as ever) */
    assert_int_equal(model_stores_add(&ss, hb), 0);
    assert_int_equal(ss.n, 1);
    assert_false(ss.several);
    assert_int_equal(model_stores_find(&ss, b, &ix, &found), 0);
    assert_int_equal(ix, 0);
    model_stores_free(&ss);
    assert_int_equal(model_stores_add(&ss, empty), 0);
    assert_int_equal(ss.n, 1);
    assert_int_equal(ss.v[0].nsessions, 0);
    assert_int_equal(ss.v[0].err, 0);
    /* a file: kept with its error, the set is several */
    assert_int_equal(model_stores_add(&ss, file), 0);
    assert_int_equal(ss.n, 2);
    assert_true(ss.several);
    assert_int_not_equal(ss.v[1].err, 0);
    model_stores_free(&ss);
    free(a);
    free(b);
}

/* A job over two stores whose sessions share one id: two processes, each
 * with its store and its own open session; an unreadable store among them
 * is counted and named, the job still read. */
static void test_job_same_id(void **state)
{
    (void)state;
    char *a = NULL, *b = NULL, d[128], nosuch[128];
    /* the same pid in the same second gives the same id: retry across a
     * second boundary */
    for (int t = 0; t < 3; t++) {
        free(a);
        free(b);
        char s1[32], s2[32];
        snprintf(s1, sizeof s1, "s%d/h1", t);
        snprintf(s2, sizeof s2, "s%d/h2", t);
        path(d, sizeof d, s1);
        d[strlen(d) - 3] = '\0';
        mkdir(d, 0700);
        session(s1, 4200, "jobx", "0", &a);
        session(s2, 4200, "jobx", "1", &b);
        if (strcmp(a, b) == 0)
            break;
    }
    assert_string_equal(a, b);
    model_stores ss = {0};
    path(nosuch, sizeof nosuch, "nosuch");
    assert_int_equal(model_stores_add(&ss, d), 0);
    assert_int_equal(model_stores_add(&ss, nosuch), 0);
    assert_int_equal(ss.n, 3);
    model_job j;
    size_t unreadable = 0;
    assert_int_equal(model_job_read_stores(&ss, "jobx", 0, UINT64_MAX, true, &j, &unreadable,
                                           NULL, NULL),
                     0);
    assert_int_equal(unreadable, 1);
    assert_int_equal(j.n, 2);
    assert_int_equal(j.nstores, 3);
    assert_int_equal(j.world_size, 0);
    assert_int_equal(j.procs[0].rank, 0);
    assert_int_equal(j.procs[1].rank, 1);
    assert_string_equal(j.procs[0].id, j.procs[1].id);
    assert_ptr_equal(j.procs[0].store, ss.v[0].label);
    assert_ptr_equal(j.procs[1].store, ss.v[1].label);
    cupstore_env *e0 = model_job_env(&j, &j.procs[0]), *e1 = model_job_env(&j, &j.procs[1]);
    assert_non_null(e0);
    assert_non_null(e1);
    assert_ptr_not_equal(e0, e1);
    /* the window summaries keep their stores */
    assert_int_equal(model_job_resummarize(&j, 0, UINT64_MAX, NULL), 0);
    assert_ptr_equal(j.procs[1].store, ss.v[1].label);
    model_job_free(&j);
    /* a job in none of the stores */
    assert_int_equal(model_job_read_stores(&ss, "jobnone", 0, UINT64_MAX, false, &j,
                                           &unreadable, NULL, NULL),
                     CUPSTORE_ENOTFOUND);
    model_stores_free(&ss);
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_gathered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_same_id, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
