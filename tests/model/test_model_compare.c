/*
 * test_model_compare.c - the model's comparison (model_compare_run) and
 * the baseline verdict (model_bl_conclude) on stores written here through
 * the store API: operands, comparability, losses, percentiles against the
 * exact ones, the order agreement against an O(n*m) reference LCS, epochs
 * and marks as windows.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "model.h"

#define NS UINT64_C(1000000000)
#define T0 UINT64_C(1735732800) /* 2025-01-01T12:00:00Z */
#define SECS 4

/* What one session holds. */
typedef struct spec {
    int pid;
    const char *label, *cmdline;
    uint32_t kinds;             /* of epoch 1 (and 2)                       */
    uint32_t kinds2;            /* 0: one epoch; else epoch 2 from T0 + 2   */
    const char *buffer_size, *store;
    uint64_t lost;              /* cupti_dropped in second 1                */
    /* kernels: names[k] on stream 7, durations dur(i) */
    const uint32_t *seq;        /* name ids 1..3, n of them                 */
    size_t n;
    unsigned slow_name;         /* this name id's durations x slow_x        */
    unsigned slow_x;
    bool mark;                  /* a mark "second" over [T0+1, T0+2)        */
} spec;

static const char *const names[] = {NULL, "k_alpha", "_Z6vecAddPKfS0_Pfi", "k_gamma"};

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        abort();
    return p;
}

static void ck(int rc)
{
    assert_int_equal(rc, 0);
}

/* Write a session; returns its id (malloc'ed). */
static char *mk(const char *dir, const spec *s)
{
    cupstore_env *env;
    cupstore_txn *txn;
    char *id;
    ck(cupstore_session_create(&env, &id, dir, s->pid, NULL));
    ck(cupstore_txn_begin(env, true, &txn));
    ck(cupstore_meta_put(txn, "cmdline", s->cmdline ? s->cmdline : "./app --steps 10"));
    ck(cupstore_meta_put(txn, "host", "testhost"));
    char v[32];
    snprintf(v, sizeof v, "%" PRIu64, T0 * NS);
    ck(cupstore_meta_put(txn, "start_ns", v));
    snprintf(v, sizeof v, "%d", s->pid);
    ck(cupstore_meta_put(txn, "pid", v));
    if (s->label)
        ck(cupstore_meta_put(txn, "label", s->label));
    ck(cupstore_meta_put(txn, "config.buffer_size", s->buffer_size ? s->buffer_size : "4194304"));
    ck(cupstore_meta_put(txn, "config.store", s->store ? s->store : dir));
    ck(cupstore_meta_put(txn, "config.kinds", "kernel"));
    ck(cupstore_meta_put(txn, "driver_version", "580.1"));
    ck(cupstore_meta_put(txn, "simulated", "0"));
    for (uint32_t i = 1; i < 4; i++)
        ck(cupstore_name_put(txn, i, names[i], strlen(names[i])));
    cupstore_epoch e1 = {.id = 1, .kinds = s->kinds, .start_ns = T0 * NS,
                         .end_ns = s->kinds2 ? (T0 + 2) * NS : 0,
                         .flags = CUPSTORE_EPOCH_ATTACHED};
    ck(cupstore_epoch_put(txn, &e1));
    if (s->kinds2) {
        cupstore_epoch e2 = {.id = 2, .kinds = s->kinds2, .start_ns = (T0 + 2) * NS,
                             .flags = CUPSTORE_EPOCH_ATTACHED, .ctl_gen = 1};
        ck(cupstore_epoch_put(txn, &e2));
    }
    for (unsigned sec = 0; sec < SECS; sec++) {
        cupstore_health h = {.second = T0 + sec, .heartbeat_ns = (T0 + sec) * NS + 1,
                             .epoch = s->kinds2 && sec >= 2 ? 2 : 1,
                             .kinds_enabled = s->kinds2 && sec >= 2 ? s->kinds2 : s->kinds};
        if (sec == 1 && s->lost) {
            h.loss[CUPSTORE_LOSS_CUPTI_DROPPED] = s->lost;
            cupstore_loss_row lr = {.second = T0 + 1, .loss = CUPSTORE_LOSS_CUPTI_DROPPED,
                                    .kind = CUPSTORE_KIND_ALL, .device = 0, .count = s->lost};
            ck(cupstore_loss_add(txn, &lr));
        }
        ck(cupstore_health_put(txn, &h));
    }
    /* kernels spread evenly over the SECS seconds, stored in reverse (the
     * comparison must order them itself) */
    cupstore_record *r = calloc(s->n + 1, sizeof *r);
    assert_non_null(r);
    for (size_t i = 0; i < s->n; i++) {
        cupstore_record *x = &r[s->n - 1 - i];
        x->kind = CUPSTORE_KIND_KERNEL;
        x->stream = 7;
        x->name_id = s->seq[i];
        x->start_ns = T0 * NS + (uint64_t)i * (SECS * NS / (s->n + 1)) + 1000;
        uint64_t d = 1000 + (uint64_t)(i * 7919 % 1000);   /* 1000..1999 ns */
        if (s->slow_name == s->seq[i])
            d *= s->slow_x;
        x->end_ns = x->start_ns + d;
    }
    /* one memcpy HtoD of 5000 ns */
    r[s->n] = (cupstore_record){.kind = CUPSTORE_KIND_MEMCPY, .stream = 8, .aux = 1,
                                .start_ns = T0 * NS + 500, .end_ns = T0 * NS + 5500};
    ck(cupstore_chunk_put(txn, r, s->n + 1));
    free(r);
    if (s->mark) {
        cupstore_mark m = {.name = "second", .from_ns = (T0 + 1) * NS, .to_ns = (T0 + 2) * NS - 1};
        ck(cupstore_mark_put(txn, &m));
    }
    for (unsigned st = 0; st < CUPSTORE_STEP_MAX; st++) {
        cupstore_step step = {.step = st, .start_mono_ns = 1, .end_mono_ns = 2};
        ck(cupstore_step_put(txn, &step));
    }
    cupstore_final f = {.end_ns = (T0 + SECS) * NS, .exit_path = CUPSTORE_EXIT_RETURN,
                        .protocol_complete = 1, .flush_ok = 1, .records_stored = s->n + 1};
    ck(cupstore_final_put(txn, &f));
    ck(cupstore_txn_commit(txn));
    cupstore_env_close(env);
    return id;
}

typedef struct fx {
    char dir[64];
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/cuptop-cmp-XXXXXX");
    if (!f || !mkdtemp(f->dir))
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    int rc = system(cmd);
    free(f);
    return rc;
}

static uint32_t *seq_random(size_t n, uint64_t seed)
{
    uint32_t *s = xcalloc(n, sizeof *s);
    for (size_t i = 0; i < n; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        s[i] = 1 + (uint32_t)(seed % 3);
    }
    return s;
}

static size_t lcs_ref(const uint32_t *a, size_t n, const uint32_t *b, size_t m)
{
    size_t *prev = xcalloc(m + 1, sizeof *prev), *cur = xcalloc(m + 1, sizeof *cur);
    for (size_t i = 1; i <= n; i++) {
        for (size_t j = 1; j <= m; j++)
            cur[j] = a[i - 1] == b[j - 1] ? prev[j - 1] + 1
                                          : (prev[j] > cur[j - 1] ? prev[j] : cur[j - 1]);
        size_t *t = prev;
        prev = cur;
        cur = t;
    }
    size_t r = prev[m];
    free(prev);
    free(cur);
    return r;
}

static const model_cmp_group *group(const model_compare *c, const char *name)
{
    for (size_t i = 0; i < c->ngroups; i++)
        if (!strcmp(c->groups[i].name, name))
            return &c->groups[i];
    fprintf(stderr, "no group \"%s\"\n", name);
    abort();
}

static bool has_diff(const model_compare *c, const char *what, bool fatal)
{
    for (size_t i = 0; i < c->ndiffs; i++)
        if (!strcmp(c->diffs[i].what, what) && c->diffs[i].fatal == fatal)
            return true;
    return false;
}

static size_t fake_demangle(const char *s, size_t n, char *out, size_t cap)
{
    if (n == 18 && !memcmp(s, "_Z6vecAddPKfS0_Pfi", 18))
        return (size_t)snprintf(out, cap, "vecAdd(float const*, float const*, float*, int)");
    return 0;
}

static void run(fx *f, const char *a, const char *b, model_compare *c, uint32_t cap)
{
    model_compare_opts o = {.store_dir = f->dir, .name_fn = fake_demangle, .edit_cap = cap};
    char *cause = NULL;
    int rc = model_compare_run(&o, a, b, c, &cause);
    if (rc)
        fprintf(stderr, "compare: %s\n", cause ? cause : "?");
    free(cause);
    assert_int_equal(rc, 0);
}

/* ---- tests -------------------------------------------------------------------- */

static void test_operands(void **state)
{
    (void)state;
    model_operand op;
    char *cause = NULL;
    assert_int_equal(model_operand_parse("20250101T120000-1", &op, &cause), 0);
    assert_int_equal(op.kind, MODEL_OP_SESSION);
    assert_string_equal(op.session, "20250101T120000-1");
    assert_int_equal(model_operand_parse("abc@3", &op, &cause), 0);
    assert_int_equal(op.kind, MODEL_OP_EPOCH);
    assert_int_equal(op.epoch, 3);
    assert_int_equal(model_operand_parse("abc:warm up", &op, &cause), 0);
    assert_int_equal(op.kind, MODEL_OP_MARK);
    assert_string_equal(op.name, "warm up");
    const char *bad[] = {"", "@1", "abc@", "abc@0", "abc@x", "abc:", "abc/x", "abc/range:",
                         "abc/range:#2", "abc/range:step#0", "abc/range:step#x"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(model_operand_parse(bad[i], &op, &cause), CUPSTORE_EINVAL);
        assert_non_null(cause);
        free(cause);
        cause = NULL;
    }
    /* the range forms: #N, #slowest, none (the first) */
    assert_int_equal(model_operand_parse("abc/range:step#2", &op, &cause), 0);
    assert_int_equal(op.kind, MODEL_OP_RANGE);
    assert_string_equal(op.name, "step");
    assert_int_equal(op.instance, 2);
    assert_false(op.slowest);
    assert_int_equal(model_operand_parse("abc/range:a#b#slowest", &op, &cause), 0);
    assert_string_equal(op.name, "a#b");
    assert_true(op.slowest);
    assert_int_equal(model_operand_parse("abc/range:step", &op, &cause), 0);
    assert_int_equal(op.instance, 1);
    assert_false(op.slowest);
}

static void test_identical(void **state)
{
    fx *f = *state;
    uint32_t *seq = seq_random(400, 7);
    spec s = {.pid = 11, .label = "w", .kinds = 1u << CUPSTORE_KIND_KERNEL, .seq = seq, .n = 400};
    char *a = mk(f->dir, &s);
    s.pid = 12;
    char *b = mk(f->dir, &s);
    model_compare c;
    run(f, a, b, &c, 0);
    assert_true(c.comparable);
    assert_string_equal(c.verdict, "comparable");
    assert_int_equal(c.ndiffs, 0);
    assert_int_equal(c.exit_status, CUPTOP_EXIT_OK);
    assert_false(c.side[0].lossy);
    assert_int_equal(c.side[0].kernels, 400);
    assert_int_equal(c.ngroups, 4);   /* three kernel names and memcpy HtoD */
    const model_cmp_group *g = group(&c, "vecAdd(float const*, float const*, float*, int)");
    assert_non_null(g);
    assert_int_equal(g->s[0].total_ns, g->s[1].total_ns);
    assert_int_equal(g->s[0].p90_ns, g->s[1].p90_ns);
    g = group(&c, "memcpy HtoD");
    assert_non_null(g);
    assert_int_equal(g->s[0].count, 1);
    assert_int_equal(g->s[0].p50_ns, 5000);   /* clamped into [min, max] */
    assert_int_equal(c.nstreams, 1);
    assert_int_equal(c.streams[0].stream, 7);
    assert_int_equal(c.streams[0].lcs, 400);
    assert_false(c.streams[0].diverged);
    assert_true(c.streams[0].agreement == 1.0);
    model_compare_free(&c);
    free(a);
    free(b);
    free(seq);
}

static void test_slowed_percentiles(void **state)
{
    fx *f = *state;
    uint32_t *seq = seq_random(3000, 3);
    spec s = {.pid = 21, .label = "w", .kinds = 1u << CUPSTORE_KIND_KERNEL, .seq = seq, .n = 3000};
    char *a = mk(f->dir, &s);
    s.pid = 22;
    s.slow_name = 3;
    s.slow_x = 3;
    s.cmdline = "./app --steps 10 --slow";   /* same label: noted only */
    char *b = mk(f->dir, &s);
    model_compare c;
    run(f, a, b, &c, 0);
    assert_true(c.comparable);
    assert_true(has_diff(&c, "command", false));
    assert_string_equal(c.groups[0].name, "k_gamma");   /* the largest change first */
    const model_cmp_group *g = &c.groups[0];
    double r = (double)g->s[1].total_ns / (double)g->s[0].total_ns;
    assert_true(r > 2.999 && r < 3.001);
    /* percentiles against the exact nearest-rank ones */
    uint64_t *d = xcalloc(3000, sizeof *d);
    size_t n = 0;
    for (size_t i = 0; i < 3000; i++)
        if (seq[i] == 3)
            d[n++] = 1000 + (uint64_t)(i * 7919 % 1000);
    for (size_t i = 1; i < n; i++)   /* insertion sort: small */
        for (size_t j = i; j && d[j - 1] > d[j]; j--) {
            uint64_t t = d[j];
            d[j] = d[j - 1];
            d[j - 1] = t;
        }
    const double ps[3] = {0.5, 0.9, 0.99};
    for (int k = 0; k < 3; k++) {
        size_t rank = (size_t)(ps[k] * (double)n);
        if ((double)rank < ps[k] * (double)n)
            rank++;
        uint64_t exact = d[rank - 1];
        uint64_t got = k == 0 ? g->s[0].p50_ns : k == 1 ? g->s[0].p90_ns : g->s[0].p99_ns;
        double err = (double)(got > exact ? got - exact : exact - got) / (double)exact;
        assert_true(err <= MODEL_CMP_REL_ERROR * 1.01);
        uint64_t got3 = k == 0 ? g->s[1].p50_ns : k == 1 ? g->s[1].p90_ns : g->s[1].p99_ns;
        err = ((double)got3 - 3.0 * (double)exact) / (3.0 * (double)exact);
        assert_true(err <= MODEL_CMP_REL_ERROR * 1.01 && err >= -MODEL_CMP_REL_ERROR * 1.01);
    }
    /* the other names did not change */
    const model_cmp_group *o = group(&c, "k_alpha");
    assert_int_equal(o->s[0].total_ns, o->s[1].total_ns);
    assert_true(c.streams[0].agreement == 1.0);
    free(d);
    model_compare_free(&c);
    free(a);
    free(b);
    free(seq);
}

static void test_order_lcs(void **state)
{
    fx *f = *state;
    size_t n = 300;
    uint32_t *sa = seq_random(n, 5), *sb = xcalloc(n + 2, sizeof *sb);
    /* B: the kernel at 40 removed, two inserted at 100, one changed at 200 */
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 40)
            continue;
        if (i == 100)
            sb[m++] = 1, sb[m++] = 2;
        sb[m++] = i == 200 ? (sa[i] % 3) + 1 : sa[i];
    }
    spec s = {.pid = 31, .label = "w", .kinds = 1u << CUPSTORE_KIND_KERNEL, .seq = sa, .n = n};
    char *a = mk(f->dir, &s);
    s.pid = 32;
    s.seq = sb;
    s.n = m;
    char *b = mk(f->dir, &s);
    model_compare c;
    run(f, a, b, &c, 0);
    const model_cmp_stream *st = &c.streams[0];
    assert_int_equal(st->lcs, lcs_ref(sa, n, sb, m));
    assert_false(st->lcs_bound);
    assert_true(st->diverged);
    size_t j = 0;
    while (j < n && j < m && sa[j] == sb[j])
        j++;
    assert_int_equal(st->diverge_index, j);
    assert_true(st->diverge_ns[0] > T0 * NS && st->diverge_ns[1] > T0 * NS);
    assert_true(st->agreement < 1.0 && st->agreement > 0.98);
    model_compare_free(&c);

    /* two unrelated sequences, with a small edit cap: an upper bound */
    uint32_t *sr = seq_random(n, 99);
    s.pid = 33;
    s.seq = sr;
    s.n = n;
    char *r = mk(f->dir, &s);
    run(f, a, r, &c, 16);
    st = &c.streams[0];
    assert_true(st->lcs_bound);
    assert_true(st->lcs >= lcs_ref(sa, n, sr, n));
    model_compare_free(&c);
    run(f, a, r, &c, 0);   /* the default cap suffices: exact */
    assert_false(c.streams[0].lcs_bound);
    assert_int_equal(c.streams[0].lcs, lcs_ref(sa, n, sr, n));
    model_compare_free(&c);
    free(a);
    free(b);
    free(r);
    free(sa);
    free(sb);
    free(sr);
}

static void test_not_comparable(void **state)
{
    fx *f = *state;
    uint32_t *seq = seq_random(100, 1);
    spec s = {.pid = 41, .label = "w", .kinds = 1u << CUPSTORE_KIND_KERNEL, .seq = seq, .n = 100};
    char *a = mk(f->dir, &s);
    s.pid = 42;
    s.kinds |= 1u << CUPSTORE_KIND_RUNTIME;
    char *b = mk(f->dir, &s);
    s.pid = 43;
    s.kinds = 1u << CUPSTORE_KIND_KERNEL;
    s.buffer_size = "1048576";
    s.store = "/elsewhere";
    char *c3 = mk(f->dir, &s);
    model_compare c;
    run(f, a, b, &c, 0);
    assert_false(c.comparable);
    assert_true(c.config_differs);
    assert_true(has_diff(&c, "kinds", true));
    assert_non_null(strstr(c.verdict, "not comparable: kinds"));
    assert_non_null(strstr(c.verdict, "absolute times are not comparable; only order and "
                                      "relative durations are"));
    assert_int_equal(c.exit_status, CUPTOP_EXIT_NO);
    model_compare_free(&c);
    run(f, a, c3, &c, 0);
    assert_false(c.comparable);
    assert_true(has_diff(&c, "config.buffer_size", true));
    assert_true(has_diff(&c, "config.store", false));   /* where, not what: a note */
    assert_non_null(strstr(c.verdict, "config.buffer_size"));
    model_compare_free(&c);
    free(a);
    free(b);
    free(c3);
    free(seq);
}

static void test_lossy_side(void **state)
{
    fx *f = *state;
    uint32_t *seq = seq_random(100, 1);
    spec s = {.pid = 51, .label = "w", .kinds = 1u << CUPSTORE_KIND_KERNEL, .seq = seq, .n = 100};
    char *a = mk(f->dir, &s);
    s.pid = 52;
    s.lost = 77;
    char *b = mk(f->dir, &s);
    model_compare c;
    run(f, a, b, &c, 0);
    assert_true(c.comparable);
    assert_false(c.side[0].lossy);
    assert_true(c.side[1].lossy);
    assert_string_equal(c.side[1].verdict, "INCOMPLETE");
    assert_int_equal(c.side[1].loss[CUPSTORE_LOSS_CUPTI_DROPPED], 77);
    assert_int_equal(c.exit_status, CUPTOP_EXIT_NO);
    model_compare_free(&c);
    free(a);
    free(b);
    free(seq);
}

static void test_epochs_marks(void **state)
{
    fx *f = *state;
    uint32_t *seq = seq_random(400, 11);
    spec s = {.pid = 61, .label = "w", .kinds = 1u << CUPSTORE_KIND_KERNEL,
              .kinds2 = 1u << CUPSTORE_KIND_KERNEL, .seq = seq, .n = 400, .mark = true};
    char *a = mk(f->dir, &s);
    char e1[128], e2[128], mk1[128], e9[128];
    snprintf(e1, sizeof e1, "%s@1", a);
    snprintf(e2, sizeof e2, "%s@2", a);
    snprintf(mk1, sizeof mk1, "%s:second", a);
    snprintf(e9, sizeof e9, "%s@9", a);
    model_compare c;
    run(f, e1, e2, &c, 0);
    assert_true(c.comparable);
    assert_int_equal(c.side[0].from_ns, T0 * NS);
    assert_int_equal(c.side[0].to_ns, (T0 + 2) * NS);
    assert_int_equal(c.side[1].from_ns, (T0 + 2) * NS);
    /* the last epoch runs to the end: said as the session's end */
    assert_int_equal(c.side[1].to_ns, UINT64_MAX);
    assert_int_equal(c.side[1].end_ns, (T0 + SECS) * NS);
    assert_int_equal(c.side[0].end_ns, (T0 + 2) * NS);
    /* kernels are evenly spread: half in each epoch (+ the memcpy in 1) */
    assert_int_equal(c.side[0].kernels + c.side[1].kernels, 400);
    assert_in_range(c.side[0].kernels, 195, 205);
    assert_int_equal(c.side[0].memcpys, 1);
    assert_int_equal(c.side[1].memcpys, 0);
    assert_non_null(strstr(c.side[0].what, "epoch 1 of"));
    model_compare_free(&c);
    run(f, mk1, e2, &c, 0);
    assert_in_range(c.side[0].kernels, 95, 105);   /* one second of four */
    assert_non_null(strstr(c.side[0].what, "mark \"second\""));
    model_compare_free(&c);
    /* an epoch that does not exist, a mark that does not exist */
    model_compare_opts o = {.store_dir = f->dir};
    char *cause = NULL;
    assert_int_equal(model_compare_run(&o, e9, e1, &c, &cause), CUPSTORE_EINVAL);
    assert_non_null(strstr(cause, "no epoch 9"));
    free(cause);
    snprintf(mk1, sizeof mk1, "%s:nope", a);
    assert_int_equal(model_compare_run(&o, mk1, e1, &c, &cause), CUPSTORE_EINVAL);
    assert_non_null(strstr(cause, "no mark"));
    free(cause);
    assert_int_not_equal(model_compare_run(&o, "nosuchsession", e1, &c, &cause), 0);
    free(cause);
    free(a);
    free(seq);
}

static void test_baseline_conclusion(void **state)
{
    (void)state;
    char t[600];
    model_bl_config cfg[MODEL_BL_CONFIGS];
    memset(cfg, 0, sizeof cfg);
    for (int i = 0; i < MODEL_BL_CONFIGS; i++)
        cfg[i].runs = cfg[i].sessions = 3;
    assert_int_equal(model_bl_conclude(cfg, t, sizeof t), MODEL_BL_USABLE);
    assert_non_null(strstr(t, "usable baseline"));
    cfg[MODEL_BL_FULL].lossy = 2;
    assert_int_equal(model_bl_conclude(cfg, t, sizeof t), MODEL_BL_PRESSURE);
    assert_non_null(strstr(t, "caused by record pressure"));
    cfg[MODEL_BL_NARROW].lossy = 1;
    assert_int_equal(model_bl_conclude(cfg, t, sizeof t), MODEL_BL_SUPPLY);
    assert_non_null(strstr(t, "buffer supply"));
    cfg[MODEL_BL_FULL].lossy = 0;
    assert_int_equal(model_bl_conclude(cfg, t, sizeof t), MODEL_BL_NARROW_ONLY);
    cfg[MODEL_BL_FULL].sessions = 2;
    assert_int_equal(model_bl_conclude(cfg, t, sizeof t), MODEL_BL_UNTRACED);
    cfg[MODEL_BL_OFF].failed = 1;
    assert_int_equal(model_bl_conclude(cfg, t, sizeof t), MODEL_BL_FAILED);
    const double w[4] = {4.0, 1.0, 3.0, 2.0};
    model_bl_config m = {0};
    model_bl_walls(&m, w, 4);
    assert_true(m.wall_median_s == 2.5 && m.wall_min_s == 1.0 && m.wall_max_s == 4.0);
    assert_true(m.spread > 1.19 && m.spread < 1.21);
    model_bl_walls(&m, w, 3);
    assert_true(m.wall_median_s == 3.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_operands),
        cmocka_unit_test(test_baseline_conclusion),
        cmocka_unit_test_setup_teardown(test_identical, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slowed_percentiles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_order_lcs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_comparable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lossy_side, setup, teardown),
        cmocka_unit_test_setup_teardown(test_epochs_marks, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
