/*
 * test_model_ranges.c - the range table and model_ranges on stores built
 * here: cupstore_range_merge of the two ends (either order), open and
 * unbalanced rows, points; per-name statistics (nearest-rank percentiles
 * computed by hand), slowest-first and time order, domains apart, the
 * name glob and domain filters, find/step/nth, hostile name bytes kept as
 * they are, and an empty session.
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

typedef struct fx {
    char dir[64];
    cupstore_env *env;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/cuptop-ranges.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    cupstore_open_opts o = {0};
    assert_int_equal(cupstore_session_create(&f->env, NULL, f->dir, 7, &o), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    char cmd[128];
    cupstore_env_close(f->env);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

static const char hostile[] = "q\"\\\n\x1b[2j\xff";

static void put_name(cupstore_txn *t, uint32_t id, const char *s, size_t n)
{
    assert_int_equal(cupstore_name_put(t, id, s, n), 0);
}

static void merge(cupstore_txn *t, uint32_t id, uint32_t flags, uint32_t name, uint32_t dom,
                  uint32_t tid, uint64_t start, uint64_t end, uint32_t depth)
{
    cupstore_range r = {.id = id, .flags = flags, .name_id = name, .domain_id = dom,
                        .tid = tid, .pid = 1, .start_ns = start, .end_ns = end, .depth = depth};
    if (flags == CUPSTORE_RANGE_END) {
        r.end_tid = tid;
        r.tid = 0;
    }
    assert_int_equal(cupstore_range_merge(t, &r, NULL), 0);
}

/* 10 "step" ranges of 1..10 us (ids 1..10, the END of id 4 written first),
 * one open "step", 2 "io" ranges in domain "d" (name 2, domain 3), one
 * "step" in domain "d" too, a point, an unbalanced end, a hostile name. */
static void fill(fx *f)
{
    cupstore_txn *t;
    assert_int_equal(cupstore_txn_begin(f->env, true, &t), 0);
    put_name(t, 1, "step", 4);
    put_name(t, 2, "io", 2);
    put_name(t, 3, "d", 1);
    put_name(t, 4, "here", 4);
    put_name(t, 5, hostile, sizeof hostile - 1);
    merge(t, 4, CUPSTORE_RANGE_END, 0, 0, 11, 0, 1000 * 4 + 4000, 0);
    for (uint32_t i = 1; i <= 10; i++) {
        merge(t, i, CUPSTORE_RANGE_START, 1, 0, 10 + i % 2, i * 1000, 0, 0);
        if (i != 4)
            merge(t, i, CUPSTORE_RANGE_END, 0, 0, 10 + i % 2, 0, i * 1000 + i * 1000, 0);
    }
    merge(t, 20, CUPSTORE_RANGE_START, 1, 0, 10, 50000, 0, 1);   /* open */
    merge(t, 21, CUPSTORE_RANGE_START, 2, 3, 12, 60000, 0, 0);
    merge(t, 21, CUPSTORE_RANGE_END, 0, 0, 12, 0, 60500, 0);
    merge(t, 22, CUPSTORE_RANGE_START, 2, 3, 12, 61000, 0, 0);
    merge(t, 22, CUPSTORE_RANGE_END, 0, 0, 12, 0, 63000, 0);
    merge(t, 23, CUPSTORE_RANGE_START, 1, 3, 12, 64000, 0, 0);
    merge(t, 23, CUPSTORE_RANGE_END, 0, 0, 12, 0, 64100, 0);
    merge(t, 24, CUPSTORE_RANGE_START | CUPSTORE_RANGE_END | CUPSTORE_RANGE_POINT, 4, 0, 10,
          70000, 70000, 0);
    merge(t, 25, CUPSTORE_RANGE_END, 0, 0, 10, 0, 80000, 0);   /* unbalanced */
    merge(t, 26, CUPSTORE_RANGE_START, 5, 0, 10, 90000, 0, 0);
    merge(t, 26, CUPSTORE_RANGE_END, 0, 0, 10, 0, 90007, 0);
    assert_int_equal(cupstore_txn_commit(t), 0);
}

static model_ranges *load(fx *f, const model_ranges_opts *o)
{
    cupstore_txn *t;
    model_ranges *m = NULL;
    assert_int_equal(cupstore_txn_begin(f->env, false, &t), 0);
    assert_int_equal(model_ranges_load(t, o, &m), 0);
    cupstore_txn_abort(t);
    return m;
}

static void test_merge_rows(void **state)
{
    fx *f = *state;
    fill(f);
    cupstore_txn *t;
    cupstore_range r;
    uint64_t n;
    assert_int_equal(cupstore_txn_begin(f->env, false, &t), 0);
    assert_int_equal(cupstore_range_get(t, 4, &r), 0);   /* END came first */
    assert_int_equal(r.flags, CUPSTORE_RANGE_START | CUPSTORE_RANGE_END);
    assert_int_equal(r.start_ns, 4000);
    assert_int_equal(r.end_ns, 8000);
    assert_int_equal(r.tid, 10);
    assert_int_equal(r.end_tid, 11);
    assert_int_equal(r.name_id, 1);
    assert_int_equal(cupstore_range_get(t, 20, &r), 0);
    assert_true(CUPSTORE_RANGE_IS_OPEN(&r));
    assert_int_equal(r.depth, 1);
    assert_int_equal(cupstore_range_get(t, 25, &r), 0);
    assert_false(CUPSTORE_RANGE_IS_OPEN(&r));
    assert_int_equal(cupstore_range_get(t, 99, &r), CUPSTORE_ENOTFOUND);
    assert_int_equal(cupstore_range_count(t, &n), 0);
    assert_int_equal(n, 17);
    cupstore_txn_abort(t);
}

static void test_stats(void **state)
{
    fx *f = *state;
    fill(f);
    model_ranges *m = load(f, NULL);
    assert_int_equal(m->ninst, 17);
    assert_int_equal(m->unbalanced, 1);
    assert_int_equal(m->open, 1);
    assert_int_equal(m->points, 1);
    assert_int_equal(m->nnames, 5);   /* step, io@d, step@d, here, hostile */
    long k = model_ranges_find(m, "step", "");
    assert_true(k >= 0);
    assert_int_equal(k, 0);   /* largest total first: 55 us */
    const model_range_name *e = &m->names[k];
    assert_int_equal(e->count, 10);
    assert_int_equal(e->open, 1);
    assert_int_equal(e->total_ns, 55000);
    assert_int_equal(e->min_ns, 1000);
    /* nearest rank over 1..10 us: p50 = 5th, p90 = 9th, p99 = 10th */
    assert_int_equal(e->p50_ns, 5000);
    assert_int_equal(e->p90_ns, 9000);
    assert_int_equal(e->p99_ns, 10000);
    assert_int_equal(e->max_ns, 10000);
    assert_int_equal(m->inst[e->by_dur[0]].id, 10);
    assert_int_equal(m->inst[e->by_dur[9]].id, 1);
    assert_int_equal(e->ntime, 11);
    for (size_t i = 1; i < e->ntime; i++)
        assert_true(m->inst[e->by_time[i - 1]].start_ns <= m->inst[e->by_time[i]].start_ns);
    /* the same name in another domain is apart */
    long kd = model_ranges_find(m, "step", "d");
    assert_true(kd >= 0 && kd != k);
    assert_int_equal(m->names[kd].count, 1);
    assert_int_equal(m->names[kd].total_ns, 100);
    assert_int_equal(model_ranges_find(m, "step", NULL), k);
    long ki = model_ranges_find(m, "io", "d");
    assert_int_equal(m->names[ki].p50_ns, 500);
    assert_int_equal(m->names[ki].max_ns, 2000);
    long kp = model_ranges_find(m, "here", "");
    assert_int_equal(m->names[kp].points, 1);
    assert_int_equal(m->names[kp].count, 0);
    long kh = model_ranges_find(m, hostile, "");
    assert_true(kh >= 0);
    assert_memory_equal(m->names[kh].name, hostile, sizeof hostile - 1);
    assert_int_equal(m->names[kh].max_ns, 7);
    /* step, nth */
    long s = model_ranges_step(m, (size_t)k, 4500, 1);
    assert_int_equal(m->inst[s].start_ns, 5000);
    s = model_ranges_step(m, (size_t)k, 4500, -1);
    assert_int_equal(m->inst[s].start_ns, 4000);
    assert_int_equal(model_ranges_step(m, (size_t)k, 50000, 1), -1);
    assert_int_equal(model_ranges_step(m, (size_t)k, 1000, -1), -1);
    assert_int_equal(m->inst[model_ranges_nth(m, (size_t)k, 3)].start_ns, 3000);
    assert_int_equal(model_ranges_nth(m, (size_t)k, 12), -1);
    assert_int_equal(model_ranges_nth(m, (size_t)k, 0), -1);
    model_ranges_free(m);
}

static void test_filters(void **state)
{
    fx *f = *state;
    fill(f);
    model_ranges_opts o = {.name_glob = "s*"};
    model_ranges *m = load(f, &o);
    assert_int_equal(m->nnames, 2);   /* step and step@d */
    assert_int_equal(m->unbalanced, 1);
    model_ranges_free(m);
    o = (model_ranges_opts){.domain = "d"};
    m = load(f, &o);
    assert_int_equal(m->nnames, 2);   /* io@d, step@d */
    model_ranges_free(m);
    o = (model_ranges_opts){.domain = "", .name_glob = "nomatch*"};
    m = load(f, &o);
    assert_int_equal(m->nnames, 0);
    model_ranges_free(m);
}

static void test_empty(void **state)
{
    fx *f = *state;
    model_ranges *m = load(f, NULL);
    assert_int_equal(m->ninst, 0);
    assert_int_equal(m->nnames, 0);
    assert_int_equal(model_ranges_find(m, "step", NULL), -1);
    model_ranges_free(m);
    uint64_t v[] = {10, 20, 30};
    assert_int_equal(model_percentile(v, 3, 0.5), 20);
    assert_int_equal(model_percentile(v, 3, 0.99), 30);
    assert_int_equal(model_percentile(v, 3, 0.01), 10);
    assert_int_equal(model_percentile(v, 0, 0.5), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_merge_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_filters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
