/*
 * test_store_files.c - sessions that are not ours or are damaged (newer
 * schema, missing magic, foreign LMDB, zero-length, truncated and garbage
 * data files) give clear codes and never crash; the map-full path grows
 * the map and then refuses with CUPSTORE_EFULL, writing nothing partial.
 */
#include "config.h"

#include <fcntl.h>
#include <lmdb.h>

#include "store_test.h"

/* Create a session (id returned) with a few rows, closed. */
static char *make_session(const char *dir, int batches)
{
    char *id;
    cupstore_env *env = st_create(dir, &id);
    cupstore_txn *txn;
    cupstore_record r[400];
    uint64_t seed = 3;
    for (int b = 0; b < batches; b++) {
        for (int i = 0; i < 400; i++)
            st_record(&r[i], (unsigned)(i % CUPSTORE_KIND_MAX), &seed, 1ull << 61);
        assert_int_equal(cupstore_txn_begin(env, true, &txn), 0);
        assert_int_equal(cupstore_chunk_put(txn, r, 400), 0);
        assert_int_equal(cupstore_txn_commit(txn), 0);
    }
    cupstore_env_close(env);
    return id;
}

static void session_path(char *buf, size_t len, const char *dir, const char *id,
                         const char *file)
{
    snprintf(buf, len, "%s/%s%s%s", dir, id, file ? "/" : "", file ? file : "");
}

/* Both a reader and a front end (writable) open must fail with want. */
static void expect_open(const char *dir, const char *id, int want)
{
    cupstore_env *env = (cupstore_env *)1;
    assert_int_equal(cupstore_session_open(&env, dir, id, CUPSTORE_RDONLY), want);
    assert_null(env);
    env = (cupstore_env *)1;
    assert_int_equal(cupstore_session_open(&env, dir, id, 0), want);
    assert_null(env);
}

/* Change a meta key with the LMDB API directly (val NULL: delete). */
static void raw_meta(const char *path, const char *key, const char *val)
{
    MDB_env *e;
    MDB_txn *t;
    MDB_dbi dbi;
    MDB_val k = {strlen(key), (void *)(uintptr_t)key}, v;
    assert_int_equal(mdb_env_create(&e), 0);
    mdb_env_set_maxdbs(e, 16);
    assert_int_equal(mdb_env_open(e, path, 0, 0600), 0);
    assert_int_equal(mdb_txn_begin(e, NULL, 0, &t), 0);
    assert_int_equal(mdb_dbi_open(t, "meta", 0, &dbi), 0);
    if (val) {
        v.mv_size = strlen(val);
        v.mv_data = (void *)(uintptr_t)val;
        assert_int_equal(mdb_put(t, dbi, &k, &v, 0), 0);
    } else {
        assert_int_equal(mdb_del(t, dbi, &k, NULL), 0);
    }
    assert_int_equal(mdb_txn_commit(t), 0);
    mdb_env_close(e);
}

static void test_newer_schema(void **state)
{
    st_fix *f = *state;
    char path[512];
    char *id = make_session(f->dir, 1);
    session_path(path, sizeof path, f->dir, id, NULL);
    raw_meta(path, "schema", "3");
    expect_open(f->dir, id, CUPSTORE_ENEWER);
    raw_meta(path, "schema", "banana");
    expect_open(f->dir, id, CUPSTORE_ECORRUPT);
    cupstore_env *env;
    raw_meta(path, "schema", "1"); /* before checksummed chunks: still read */
    assert_int_equal(cupstore_session_open(&env, f->dir, id, CUPSTORE_RDONLY), 0);
    cupstore_env_close(env);
    raw_meta(path, "schema", "2");
    assert_int_equal(cupstore_session_open(&env, f->dir, id, CUPSTORE_RDONLY), 0);
    cupstore_env_close(env);
    raw_meta(path, "magic", "not-cuptop");
    expect_open(f->dir, id, CUPSTORE_ENOTSTORE);
    raw_meta(path, "magic", NULL);
    expect_open(f->dir, id, CUPSTORE_ENOTSTORE);
    free(id);
}

static void test_foreign_lmdb(void **state)
{
    st_fix *f = *state;
    char path[512];
    MDB_env *e;
    MDB_txn *t;
    MDB_dbi dbi;
    MDB_val k = {3, (void *)(uintptr_t) "key"}, v = {5, (void *)(uintptr_t) "value"};

    /* 1: plain LMDB with a key in the main DB */
    snprintf(path, sizeof path, "%s/20200101T000000-1", f->dir);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(mdb_env_create(&e), 0);
    mdb_env_set_maxdbs(e, 4);
    assert_int_equal(mdb_env_open(e, path, 0, 0600), 0);
    assert_int_equal(mdb_txn_begin(e, NULL, 0, &t), 0);
    assert_int_equal(mdb_dbi_open(t, NULL, 0, &dbi), 0);
    assert_int_equal(mdb_put(t, dbi, &k, &v, 0), 0);
    assert_int_equal(mdb_txn_commit(t), 0);
    mdb_env_close(e);
    expect_open(f->dir, "20200101T000000-1", CUPSTORE_ENOTSTORE);

    /* 2: "meta" is a plain key, not a sub-database (MDB_INCOMPATIBLE) */
    snprintf(path, sizeof path, "%s/20200101T000000-2", f->dir);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(mdb_env_create(&e), 0);
    mdb_env_set_maxdbs(e, 4);
    assert_int_equal(mdb_env_open(e, path, 0, 0600), 0);
    assert_int_equal(mdb_txn_begin(e, NULL, 0, &t), 0);
    assert_int_equal(mdb_dbi_open(t, NULL, 0, &dbi), 0);
    k.mv_data = (void *)(uintptr_t) "meta";
    k.mv_size = 4;
    assert_int_equal(mdb_put(t, dbi, &k, &v, 0), 0);
    assert_int_equal(mdb_txn_commit(t), 0);
    mdb_env_close(e);
    expect_open(f->dir, "20200101T000000-2", CUPSTORE_ENOTSTORE);

    /* 3: a "meta" sub-database without the magic */
    snprintf(path, sizeof path, "%s/20200101T000000-3", f->dir);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(mdb_env_create(&e), 0);
    mdb_env_set_maxdbs(e, 4);
    assert_int_equal(mdb_env_open(e, path, 0, 0600), 0);
    assert_int_equal(mdb_txn_begin(e, NULL, 0, &t), 0);
    assert_int_equal(mdb_dbi_open(t, "meta", MDB_CREATE, &dbi), 0);
    assert_int_equal(mdb_put(t, dbi, &k, &v, 0), 0);
    assert_int_equal(mdb_txn_commit(t), 0);
    mdb_env_close(e);
    expect_open(f->dir, "20200101T000000-3", CUPSTORE_ENOTSTORE);
}

static void write_file(const char *path, const void *p, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, p, len), (ssize_t)len);
    close(fd);
}

static void test_bad_data_files(void **state)
{
    st_fix *f = *state;
    char path[512], file[600];
    uint64_t seed = 77;
    uint8_t *junk = malloc(1 << 20);
    for (size_t i = 0; i < (1 << 20); i++)
        junk[i] = (uint8_t)st_rand(&seed);

    /* zero-length data.mdb */
    snprintf(path, sizeof path, "%s/20200101T000000-10", f->dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(file, sizeof file, "%s/data.mdb", path);
    write_file(file, "", 0);
    expect_open(f->dir, "20200101T000000-10", CUPSTORE_ENOTSTORE);

    /* garbage */
    write_file(file, junk, 1 << 20);
    expect_open(f->dir, "20200101T000000-10", CUPSTORE_ENOTSTORE);

    /* garbage with LMDB's magic and a sane page size, then random pages */
    uint32_t magic = 0xBEEFC0DEu, ver = 1, psize = 4096;
    for (int pg = 0; pg < 2; pg++) {
        memcpy(junk + pg * 4096 + 16, &magic, 4);
        memcpy(junk + pg * 4096 + 20, &ver, 4);
        memcpy(junk + pg * 4096 + 40, &psize, 4);
    }
    write_file(file, junk, 1 << 20);
    expect_open(f->dir, "20200101T000000-10", CUPSTORE_ECORRUPT);
    ver = 2; /* a newer LMDB data format */
    memcpy(junk + 20, &ver, 4);
    memcpy(junk + 4096 + 20, &ver, 4);
    write_file(file, junk, 1 << 20);
    expect_open(f->dir, "20200101T000000-10", CUPSTORE_ELMDBNEWER);

    /* data.mdb is a directory; session dir is a file */
    unlink(file);
    assert_int_equal(mkdir(file, 0700), 0);
    expect_open(f->dir, "20200101T000000-10", CUPSTORE_ENOTSTORE);
    snprintf(path, sizeof path, "%s/20200101T000000-11", f->dir);
    write_file(path, "x", 1);
    expect_open(f->dir, "20200101T000000-11", CUPSTORE_ENOTSTORE);

    /* a real session, truncated at several points */
    char *id = make_session(f->dir, 60);
    session_path(file, sizeof file, f->dir, id, "data.mdb");
    struct stat st;
    assert_int_equal(stat(file, &st), 0);
    assert_true(st.st_size > 64 * 4096);
    off_t cuts[] = {st.st_size - 4096, st.st_size / 2, 8192, 4096 + 100, 100, 0};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        assert_int_equal(truncate(file, cuts[i]), 0);
        expect_open(f->dir, id, cuts[i] <= 100 ? CUPSTORE_ENOTSTORE : CUPSTORE_ECORRUPT);
    }
    free(id);
    free(junk);
}

/* ---- cupstore_write: the one write path ---------------------------------- */

struct wr_arg {
    cupstore_record r[600];
    int calls;
    int fail_first;          /* return `code` from the first fail_first calls */
    int code;
    uint64_t second;
};

static int wr_fn(cupstore_txn *txn, void *arg)
{
    struct wr_arg *w = arg;
    cupstore_loss_row lr = {.second = w->second, .count = (uint64_t)++w->calls};
    int rc = cupstore_loss_add(txn, &lr);
    if (rc == 0 && w->calls <= w->fail_first)
        return w->code;
    return rc ? rc : cupstore_chunk_put(txn, w->r, sizeof w->r / sizeof w->r[0]);
}

static int loss_sum_fn(const cupstore_loss_row *r, void *arg)
{
    *(uint64_t *)arg += r->count;
    return 0;
}

static uint64_t loss_sum(cupstore_env *env, uint64_t second)
{
    cupstore_txn *txn;
    uint64_t sum = 0;
    assert_int_equal(cupstore_txn_begin(env, false, &txn), 0);
    assert_int_equal(cupstore_loss_scan(txn, second, second, loss_sum_fn, &sum), 0);
    cupstore_txn_abort(txn);
    return sum;
}

static void test_write_retries(void **state)
{
    st_fix *f = *state;
    cupstore_open_opts opts = {.map_initial = 256 << 10, .map_max = 1 << 20};
    cupstore_env *env;
    char *id;
    static struct wr_arg w;
    uint64_t seed = 5, mapsize;

    assert_int_equal(cupstore_session_create(&env, &id, f->dir, 1, &opts), 0);

    /* EAGAIN and CUPSTORE_EBUSY from fn: the whole txn runs again and only
     * the attempt that committed is in the store */
    w = (struct wr_arg){.r = {{0}}, .fail_first = 2, .code = EAGAIN, .second = 1};
    for (size_t i = 0; i < sizeof w.r / sizeof w.r[0]; i++)
        st_record(&w.r[i], (unsigned)(i % CUPSTORE_KIND_MAX), &seed, 1ull << 60);
    assert_int_equal(cupstore_write(env, wr_fn, &w, 0), 0);
    assert_int_equal(w.calls, 3);
    assert_int_equal(loss_sum(env, 1), 3);
    w.calls = 0, w.fail_first = 1, w.code = CUPSTORE_EBUSY, w.second = 2;
    assert_int_equal(cupstore_write(env, wr_fn, &w, 0), 0);
    assert_int_equal(w.calls, 2);
    assert_int_equal(loss_sum(env, 2), 2);
    /* the attempts are a bound: busy every time ends busy, nothing written */
    w.calls = 0, w.fail_first = 100, w.second = 3;
    assert_int_equal(cupstore_write(env, wr_fn, &w, 3), CUPSTORE_EBUSY);
    assert_int_equal(w.calls, 3);
    assert_int_equal(loss_sum(env, 3), 0);
    /* any other failure ends at once */
    w.calls = 0, w.fail_first = 100, w.code = EIO, w.second = 4;
    assert_int_equal(cupstore_write(env, wr_fn, &w, 0), EIO);
    assert_int_equal(w.calls, 1);
    assert_int_equal(loss_sum(env, 4), 0);
    assert_int_equal(cupstore_write(env, NULL, &w, 0), CUPSTORE_EINVAL);

    /* map growth: batches that do not fit are retried in the grown map
     * until the cap, where CUPSTORE_EFULL ends it without a retry */
    int rc = 0, batches = 0;
    w.fail_first = 0;
    while (rc == 0 && batches < 1000) {
        w.calls = 0;
        w.second = 10 + (uint64_t)batches++;
        rc = cupstore_write(env, wr_fn, &w, 0);
        if (rc == 0)
            assert_int_equal(loss_sum(env, w.second), (uint64_t)w.calls);
    }
    assert_int_equal(rc, CUPSTORE_EFULL);
    assert_int_equal(cupstore_env_usage(env, NULL, &mapsize), 0);
    assert_int_equal(mapsize, 1 << 20); /* grown twice on the way */
    assert_int_equal(loss_sum(env, w.second), 0);
    cupstore_env_close(env);
    free(id);
}

/* ---- Map full ------------------------------------------------------------ */

static void test_map_full(void **state)
{
    st_fix *f = *state;
    enum { PER = 600 };
    cupstore_open_opts opts = {.map_initial = 256 << 10, .map_max = 1 << 20};
    cupstore_env *env;
    cupstore_txn *txn;
    cupstore_record r[PER];
    uint64_t seed = 11, committed = 0, mapsize, chunks, records, bytes;
    int eagain = 0, efull = 0;
    char *id;

    assert_int_equal(cupstore_session_create(&env, &id, f->dir, 1, &opts), 0);
    assert_int_equal(cupstore_env_usage(env, NULL, &mapsize), 0);
    assert_int_equal(mapsize, 256 << 10);
    for (int batch = 0; batch < 1000 && efull < 3; batch++) {
        for (int i = 0; i < PER; i++)
            st_record(&r[i], (unsigned)(i % CUPSTORE_KIND_MAX), &seed, 1ull << 60);
        for (;;) { /* retry the whole batch while the map grows */
            assert_int_equal(cupstore_txn_begin(env, true, &txn), 0);
            int rc = cupstore_chunk_put(txn, r, PER);
            cupstore_loss_row lr = {.second = (uint64_t)batch, .count = 1};
            if (rc == 0)
                rc = cupstore_loss_add(txn, &lr);
            if (rc) {
                assert_true(rc == EAGAIN || rc == CUPSTORE_EFULL);
                /* the put's code and the commit's agree; later puts too */
                assert_int_equal(cupstore_loss_add(txn, &lr), rc);
                assert_int_equal(cupstore_txn_commit(txn), rc);
            } else {
                rc = cupstore_txn_commit(txn);
            }
            if (rc == EAGAIN) {
                eagain++;
                continue;
            }
            if (rc == CUPSTORE_EFULL) {
                efull++;
                break;
            }
            assert_int_equal(rc, 0);
            committed++;
            break;
        }
    }
    assert_true(eagain >= 2); /* 256K -> 512K -> 1M */
    assert_int_equal(efull, 3);
    assert_int_equal(cupstore_env_usage(env, NULL, &mapsize), 0);
    assert_int_equal(mapsize, 1 << 20);

    /* Nothing partial: totals, chunk rows and loss rows agree. */
    assert_int_equal(cupstore_txn_begin(env, false, &txn), 0);
    assert_int_equal(cupstore_record_stats(txn, &chunks, &records, &bytes), 0);
    assert_int_equal(chunks, committed);
    assert_int_equal(records, committed * PER);
    st_collect c = {0};
    assert_int_equal(cupstore_record_scan(txn, 0, UINT64_MAX, st_collect_fn, &c), 0);
    assert_int_equal(c.n, committed * PER);
    free(c.v);
    cupstore_txn_abort(txn);
    cupstore_env_close(env);

    /* Reopened by a reader: the grown map is adopted and consistent. */
    assert_int_equal(cupstore_session_open(&env, f->dir, id, CUPSTORE_RDONLY), 0);
    assert_int_equal(cupstore_txn_begin(env, false, &txn), 0);
    assert_int_equal(cupstore_record_stats(txn, &chunks, NULL, NULL), 0);
    assert_int_equal(chunks, committed);
    cupstore_txn_abort(txn);
    cupstore_env_close(env);
    free(id);
}

static int window_epoch_fn(const cupstore_epoch *e, void *arg)
{
    *(cupstore_epoch *)arg = *e;
    return 0;
}

/* Periodic windows: an epoch's boundary and schedule, and a control
 * request's, come back as written; a schedule a request cannot mean is
 * refused. */
static void test_window_fields(void **state)
{
    st_fix *f = *state;
    char *id;
    cupstore_env *env = st_create(f->dir, &id);
    cupstore_txn *txn;
    cupstore_epoch e = {.id = 1, .kinds = 1, .start_ns = 5000000123, .sched_ns = 5000000000,
                        .period_ms = 1000, .window_ms = 300}, got = {0};
    cupstore_control c = {.kinds = 1, .every_set = CUPSTORE_CTL_EVERY_ON,
                          .every_period_ms = 60000, .every_window_ms = 5000};
    uint64_t gen;
    assert_int_equal(cupstore_txn_begin(env, true, &txn), 0);
    assert_int_equal(cupstore_epoch_put(txn, &e), 0);
    assert_int_equal(cupstore_control_put(txn, &c, &gen), 0);
    c.every_window_ms = 60000;   /* not shorter than the period */
    assert_int_equal(cupstore_control_put(txn, &c, NULL), CUPSTORE_EINVAL);
    c.every_set = 3;
    assert_int_equal(cupstore_control_put(txn, &c, NULL), CUPSTORE_EINVAL);
    assert_int_equal(cupstore_txn_commit(txn), 0);
    assert_int_equal(cupstore_txn_begin(env, false, &txn), 0);
    assert_int_equal(cupstore_epoch_scan(txn, window_epoch_fn, &got), 0);
    assert_int_equal(got.sched_ns, 5000000000ull);
    assert_int_equal(got.period_ms, 1000);
    assert_int_equal(got.window_ms, 300);
    assert_int_equal(cupstore_control_latest(txn, &c), 0);
    assert_int_equal(c.gen, gen);
    assert_int_equal(c.every_set, CUPSTORE_CTL_EVERY_ON);
    assert_int_equal(c.every_period_ms, 60000);
    assert_int_equal(c.every_window_ms, 5000);
    cupstore_txn_abort(txn);
    cupstore_env_close(env);
    free(id);
}

/* A `ledger on|off` request comes back as written, the latest first; a
 * value it cannot mean is refused. */
static void test_ledger_request(void **state)
{
    st_fix *f = *state;
    char *id;
    cupstore_env *env = st_create(f->dir, &id);
    cupstore_txn *txn;
    cupstore_control c = {.kinds = 1, .ledger_set = CUPSTORE_CTL_LEDGER_ON};
    uint64_t on_gen, off_gen;
    assert_int_equal(cupstore_txn_begin(env, true, &txn), 0);
    assert_int_equal(cupstore_control_put(txn, &c, &on_gen), 0);
    c.ledger_set = CUPSTORE_CTL_LEDGER_OFF;
    assert_int_equal(cupstore_control_put(txn, &c, &off_gen), 0);
    c.ledger_set = 3;
    assert_int_equal(cupstore_control_put(txn, &c, NULL), CUPSTORE_EINVAL);
    assert_int_equal(cupstore_txn_commit(txn), 0);
    assert_int_equal(cupstore_txn_begin(env, false, &txn), 0);
    assert_int_equal(cupstore_control_latest(txn, &c), 0);
    assert_int_equal(c.gen, off_gen);
    assert_int_equal(off_gen, on_gen + 1);
    assert_int_equal(c.ledger_set, CUPSTORE_CTL_LEDGER_OFF);
    cupstore_txn_abort(txn);
    cupstore_env_close(env);
    free(id);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, st_setup, st_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_newer_schema),
        T(test_foreign_lmdb),
        T(test_bad_data_files),
        T(test_map_full),
        T(test_write_retries),
        T(test_window_fields),
        T(test_ledger_request),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
