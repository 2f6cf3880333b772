/*
 * test_store_procs.c - several processes on one session: a reader polling
 * while a writer appends (and grows the map), kill -9 of a writer in the
 * middle of its batch loop, kill -9 of a reader holding a transaction.
 *
 * No timing assertions: progress is proven by handshakes over pipes, and
 * every wait is a poll with a generous deadline.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "store_test.h"

#define DEADLINE_S 120

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nap(void)
{
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
}

/* One batch: a chunk of n records, a health row whose records_stored is
 * the running total, and meta "batches" = its number, in one txn. */
static int write_batch(cupstore_env *env, uint64_t b, size_t n, uint64_t total,
                       uint64_t *seed)
{
    static cupstore_record r[2048];
    cupstore_txn *txn;
    char num[32];
    int rc;
    for (size_t i = 0; i < n; i++)
        st_record(&r[i], (unsigned)(i % CUPSTORE_KIND_MAX), seed, 1ull << 60);
    for (;;) {
        if ((rc = cupstore_txn_begin(env, true, &txn)) != 0)
            return rc;
        cupstore_health h = {.second = b, .records_stored = total + n};
        snprintf(num, sizeof num, "%llu", (unsigned long long)b + 1);
        rc = cupstore_chunk_put(txn, r, n);
        if (rc == 0)
            rc = cupstore_health_put(txn, &h);
        if (rc == 0)
            rc = cupstore_meta_put(txn, "batches", num);
        if (rc) {
            int crc = cupstore_txn_commit(txn);
            if (crc == EAGAIN)
                continue;
            return rc;
        }
        rc = cupstore_txn_commit(txn);
        if (rc != EAGAIN)
            return rc;
    }
}

typedef struct view {
    uint64_t batches, chunks, records, stored, scanned;
    bool has_health;
} view;

static int count_fn(const cupstore_record *r, void *arg)
{
    (void)r;
    ++*(uint64_t *)arg;
    return 0;
}

/* Read everything of interest in ONE read txn and check it agrees. */
static void read_view(cupstore_env *env, view *v, bool full_scan)
{
    cupstore_txn *txn;
    cupstore_health h;
    char *s;
    memset(v, 0, sizeof *v);
    assert_int_equal(cupstore_txn_begin(env, false, &txn), 0);
    int rc = cupstore_meta_get(txn, "batches", &s);
    if (rc == 0) {
        v->batches = strtoull(s, NULL, 10);
        free(s);
    } else {
        assert_int_equal(rc, CUPSTORE_ENOTFOUND);
    }
    assert_int_equal(cupstore_record_stats(txn, &v->chunks, &v->records, NULL), 0);
    rc = cupstore_health_last(txn, &h);
    if (rc == 0) {
        v->has_health = true;
        v->stored = h.records_stored;
        assert_int_equal(h.second + 1, v->batches);
    } else {
        assert_int_equal(rc, CUPSTORE_ENOTFOUND);
    }
    if (full_scan)
        assert_int_equal(cupstore_record_scan(txn, 0, UINT64_MAX, count_fn, &v->scanned), 0);
    cupstore_txn_abort(txn);
    /* a batch is all or nothing */
    assert_int_equal(v->chunks, v->batches);
    assert_int_equal(v->stored, v->records);
    if (full_scan)
        assert_int_equal(v->scanned, v->records);
}

static void read_id(int fd, char *id, size_t len)
{
    size_t got = 0;
    while (got < len - 1) {
        ssize_t r = read(fd, id + got, 1);
        assert_true(r == 1);
        if (id[got] == '\n')
            break;
        got++;
    }
    id[got] = '\0';
}

/* Child: create a session, announce its id, write batches; every 10th
 * batch wait until the parent says it saw it. */
static void writer_child(const char *dir, int idfd, int ackfd, int nbatches, bool handshake)
{
    cupstore_open_opts opts = {.map_initial = 1 << 20}; /* grows while read */
    cupstore_env *env;
    char *id;
    uint64_t seed = (uint64_t)getpid() * 7919, total = 0;
    if (cupstore_session_create(&env, &id, dir, (int)getpid(), &opts) != 0)
        _exit(10);
    dprintf(idfd, "%s\n", id);
    for (int b = 0; nbatches < 0 || b < nbatches; b++) {
        size_t n = 1 + st_rand(&seed) % 2000;
        if (write_batch(env, (uint64_t)b, n, total, &seed) != 0)
            _exit(11);
        total += n;
        if (handshake && b % 10 == 9) {
            char c;
            if (read(ackfd, &c, 1) != 1)
                _exit(12);
        }
    }
    cupstore_env_sync(env);
    cupstore_env_close(env);
    free(id);
    _exit(0);
}

static void test_reader_while_writer(void **state)
{
    st_fix *f = *state;
    enum { NB = 120 };
    int idp[2], ackp[2], status;
    char id[128];
    cupstore_env *env;
    view v;
    uint64_t acked = 0, polls = 0;

    assert_int_equal(pipe(idp), 0);
    assert_int_equal(pipe(ackp), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        writer_child(f->dir, idp[1], ackp[0], NB, true);
    read_id(idp[0], id, sizeof id);
    assert_int_equal(cupstore_session_open(&env, f->dir, id, CUPSTORE_RDONLY), 0);
    double end = now_s() + DEADLINE_S;
    for (;;) {
        read_view(env, &v, polls % 16 == 0);
        polls++;
        /* the writer blocks after every 10th batch until we have seen it */
        if (v.batches >= acked + 10 && v.batches % 10 == 0) {
            assert_int_equal(v.batches, acked + 10);
            acked = v.batches;
            assert_int_equal(write(ackp[1], "k", 1), 1);
        }
        if (v.batches == NB)
            break;
        assert_true(now_s() < end);
        nap();
    }
    read_view(env, &v, true);
    assert_int_equal(v.batches, NB);
    assert_int_equal(acked, NB);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    cupstore_env_close(env);
    close(idp[0]), close(idp[1]), close(ackp[0]), close(ackp[1]);
}

static void test_kill_writer(void **state)
{
    st_fix *f = *state;
    for (int round = 0; round < 3; round++) {
        int idp[2], status;
        char id[128];
        cupstore_env *env;
        cupstore_txn *txn;
        view v;

        assert_int_equal(pipe(idp), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
            writer_child(f->dir, idp[1], -1, -1, false); /* writes until killed */
        read_id(idp[0], id, sizeof id);
        assert_int_equal(cupstore_session_open(&env, f->dir, id, CUPSTORE_RDONLY), 0);
        double end = now_s() + DEADLINE_S;
        uint64_t want = 5 + 10 * (uint64_t)round;
        do { /* let it get well into its loop */
            read_view(env, &v, false);
            assert_true(now_s() < end);
            nap();
        } while (v.batches < want);
        cupstore_env_close(env);
        assert_int_equal(kill(pid, SIGKILL), 0);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));

        /* Reopen: consistent, every chunk decodes, nothing half-visible. */
        assert_int_equal(cupstore_session_open(&env, f->dir, id, CUPSTORE_RDONLY), 0);
        read_view(env, &v, true);
        assert_true(v.batches >= want);
        cupstore_env_close(env);

        /* And it takes new writes (LMDB recovers the dead writer's lock). */
        assert_int_equal(cupstore_session_open(&env, f->dir, id, 0), 0);
        assert_int_equal(cupstore_env_reader_check(env, NULL), 0);
        uint64_t seed = 1;
        assert_int_equal(write_batch(env, v.batches, 100, v.records, &seed), 0);
        view w;
        read_view(env, &w, true);
        assert_int_equal(w.batches, v.batches + 1);
        assert_int_equal(w.records, v.records + 100);
        assert_int_equal(cupstore_txn_begin(env, true, &txn), 0);
        cupstore_txn_abort(txn);
        cupstore_env_close(env);
        close(idp[0]), close(idp[1]);
    }
}

static void test_kill_reader(void **state)
{
    st_fix *f = *state;
    char *id;
    int p[2], status;
    cupstore_env *env = st_create(f->dir, &id);

    /* The writer keeps its env open: a sole opener resets the reader
     * table, which would hide the dead slot this test is about. */
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cupstore_env *e;
        cupstore_txn *t;
        if (cupstore_session_open(&e, f->dir, id, CUPSTORE_RDONLY) ||
            cupstore_txn_begin(e, false, &t))
            _exit(1);
        if (write(p[1], "r", 1) != 1)
            _exit(2);
        for (;;)
            pause(); /* holds its read txn until killed */
    }
    char c;
    assert_int_equal(read(p[0], &c, 1), 1);
    assert_int_equal(kill(pid, SIGKILL), 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    int cleared = -1;
    assert_int_equal(cupstore_env_reader_check(env, &cleared), 0);
    assert_int_equal(cleared, 1); /* the dead slot */
    assert_int_equal(cupstore_env_reader_check(env, &cleared), 0);
    assert_int_equal(cleared, 0);
    cupstore_env_close(env);
    close(p[0]), close(p[1]);
    free(id);
}

/* ---- Threads of one process sharing an env while the map grows ----------- */

typedef struct thr {
    cupstore_env *env;
    int which;           /* 0 chunk writer, 1 health writer, 2 reader */
    atomic_int *stop;
    uint64_t done, errors;
} thr;

static void *thr_main(void *arg)
{
    thr *t = arg;
    cupstore_record r[700];
    uint64_t seed = 99 + (uint64_t)t->which;
    cupstore_txn *txn;
    while (!*t->stop || t->which == 0) {
        int rc;
        if (t->which == 0) { /* consumer: 300 batches, retried on EAGAIN */
            if (t->done == 300)
                break;
            for (int i = 0; i < 700; i++)
                st_record(&r[i], (unsigned)(i % CUPSTORE_KIND_MAX), &seed, 1ull << 60);
            do {
                if ((rc = cupstore_txn_begin(t->env, true, &txn)) != 0)
                    continue;
                rc = cupstore_chunk_put(txn, r, 700);
                int crc = cupstore_txn_commit(txn);
                rc = rc ? rc : crc;
            } while (rc == EAGAIN || rc == CUPSTORE_EBUSY);
        } else if (t->which == 1) { /* health thread */
            cupstore_health h = {.second = t->done + 1};
            if ((rc = cupstore_txn_begin(t->env, true, &txn)) == 0) {
                rc = cupstore_health_put(txn, &h);
                int crc = cupstore_txn_commit(txn);
                rc = rc ? rc : crc;
            }
            if (rc == EAGAIN || rc == CUPSTORE_EBUSY)
                continue;
        } else { /* a reader in the writer's process */
            uint64_t chunks, records;
            cupstore_health h;
            if ((rc = cupstore_txn_begin(t->env, false, &txn)) == EAGAIN)
                continue;
            if (rc == 0) {
                rc = cupstore_record_stats(txn, &chunks, &records, NULL);
                if (rc == 0 && records != chunks * 700)
                    rc = -1;
                int hr = cupstore_health_last(txn, &h);
                if (hr != 0 && hr != CUPSTORE_ENOTFOUND)
                    rc = hr;
                cupstore_txn_abort(txn);
            }
        }
        if (rc)
            t->errors++;
        else
            t->done++;
    }
    return NULL;
}

static void test_threads_share_env(void **state)
{
    st_fix *f = *state;
    cupstore_open_opts opts = {.map_initial = 256 << 10};
    cupstore_env *env;
    atomic_int stop = 0;
    thr t[3];
    pthread_t th[3];
    uint64_t chunks, records, mapsize;

    assert_int_equal(cupstore_session_create(&env, NULL, f->dir, 1, &opts), 0);
    for (int i = 0; i < 3; i++) {
        t[i] = (thr){.env = env, .which = i, .stop = &stop};
        assert_int_equal(pthread_create(&th[i], NULL, thr_main, &t[i]), 0);
    }
    assert_int_equal(pthread_join(th[0], NULL), 0);
    stop = 1;
    for (int i = 1; i < 3; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(t[i].errors, 0);
    assert_int_equal(t[0].done, 300);
    cupstore_txn *txn;
    assert_int_equal(cupstore_txn_begin(env, false, &txn), 0);
    assert_int_equal(cupstore_record_stats(txn, &chunks, &records, NULL), 0);
    assert_int_equal(chunks, 300);
    assert_int_equal(records, 300 * 700);
    st_collect c = {0};
    assert_int_equal(cupstore_record_scan(txn, 0, UINT64_MAX, st_collect_fn, &c), 0);
    assert_int_equal(c.n, 300 * 700);
    free(c.v);
    cupstore_txn_abort(txn);
    assert_int_equal(cupstore_env_usage(env, NULL, &mapsize), 0);
    assert_true(mapsize > (256 << 10)); /* it grew while the others ran */
    cupstore_env_close(env);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, st_setup, st_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_reader_while_writer),
        T(test_kill_writer),
        T(test_kill_reader),
        T(test_threads_share_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
