/*
 * test_store_rows.c - round trips of every row type through a real
 * session environment, window scans against a brute-force filter,
 * sessions (create, open, prefix), directory permissions.
 */
#include "config.h"

#include <time.h>

#include "store_test.h"

static cupstore_txn *wbegin(cupstore_env *env)
{
    cupstore_txn *txn = NULL;
    assert_int_equal(cupstore_txn_begin(env, true, &txn), 0);
    return txn;
}

static cupstore_txn *rbegin(cupstore_env *env)
{
    cupstore_txn *txn = NULL;
    assert_int_equal(cupstore_txn_begin(env, false, &txn), 0);
    return txn;
}

static void test_meta(void **state)
{
    st_fix *f = *state;
    char *id = NULL, *v = NULL;
    cupstore_env *env = st_create(f->dir, &id);
    cupstore_txn *txn = wbegin(env);

    assert_string_equal(cupstore_env_id(env), id);
    assert_int_equal(cupstore_meta_put(txn, "host", "gpu-node-7"), 0);
    assert_int_equal(cupstore_meta_put(txn, "cmdline", "./app --x \"y\" \\z"), 0);
    assert_int_equal(cupstore_meta_put(txn, "devices", "0:NVIDIA H200\n1:NVIDIA H200"), 0);
    assert_int_equal(cupstore_meta_put(txn, "empty", ""), 0);
    assert_int_equal(cupstore_meta_put(txn, "magic", "x"), CUPSTORE_EEXIST);
    assert_int_equal(cupstore_meta_put(txn, ".internal", "x"), CUPSTORE_EINVAL);
    assert_int_equal(cupstore_meta_put(txn, "", "x"), CUPSTORE_EINVAL);
    assert_int_equal(cupstore_txn_commit(txn), 0);
    cupstore_env_close(env);

    assert_int_equal(cupstore_session_open(&env, f->dir, id, CUPSTORE_RDONLY), 0);
    txn = rbegin(env);
    assert_int_equal(cupstore_meta_get(txn, "host", &v), 0);
    assert_string_equal(v, "gpu-node-7");
    free(v);
    assert_int_equal(cupstore_meta_get(txn, "cmdline", &v), 0);
    assert_string_equal(v, "./app --x \"y\" \\z");
    free(v);
    assert_int_equal(cupstore_meta_get(txn, "devices", &v), 0);
    assert_string_equal(v, "0:NVIDIA H200\n1:NVIDIA H200");
    free(v);
    assert_int_equal(cupstore_meta_get(txn, "empty", &v), 0);
    assert_string_equal(v, "");
    free(v);
    assert_int_equal(cupstore_meta_get(txn, "magic", &v), 0);
    assert_string_equal(v, CUPSTORE_MAGIC);
    free(v);
    assert_int_equal(cupstore_meta_get(txn, "schema", &v), 0);
    assert_int_equal(atoi(v), CUPSTORE_SCHEMA_VERSION);
    free(v);
    assert_int_equal(cupstore_meta_get(txn, "nope", &v), CUPSTORE_ENOTFOUND);
    assert_null(v);
    /* writes through a read txn or a read-only env are refused */
    assert_int_equal(cupstore_meta_put(txn, "x", "y"), EACCES);
    cupstore_txn_abort(txn);
    cupstore_txn *w = NULL;
    assert_int_equal(cupstore_txn_begin(env, true, &w), EACCES);
    assert_null(w);
    cupstore_env_close(env);
    free(id);
}

struct mcollect {
    char seen[256];
    int n, stop_at;
};

static int meta_fn(const char *key, const char *value, void *arg)
{
    struct mcollect *c = arg;
    size_t l = strlen(c->seen);
    snprintf(c->seen + l, sizeof c->seen - l, "%s=%s;", key, value);
    return ++c->n == c->stop_at ? 42 : 0;
}

/* cupstore_meta_scan: the keys with a prefix, in key order, nothing else
 * (not a key that merely starts like it, not the store's own rows). */
static void test_meta_scan(void **state)
{
    st_fix *f = *state;
    cupstore_env *env = st_create(f->dir, NULL);
    cupstore_txn *txn = wbegin(env);
    assert_int_equal(cupstore_meta_put(txn, "config.pool", "64"), 0);
    assert_int_equal(cupstore_meta_put(txn, "config.buffer_size", "4194304"), 0);
    assert_int_equal(cupstore_meta_put(txn, "config", "pool=64\n"), 0);
    assert_int_equal(cupstore_meta_put(txn, "configx", "no"), 0);
    assert_int_equal(cupstore_meta_put(txn, "host", "h"), 0);
    assert_int_equal(cupstore_txn_commit(txn), 0);

    txn = rbegin(env);
    struct mcollect c = {.stop_at = -1};
    assert_int_equal(cupstore_meta_scan(txn, "config.", meta_fn, &c), 0);
    assert_string_equal(c.seen, "config.buffer_size=4194304;config.pool=64;");
    memset(&c, 0, sizeof c);
    c.stop_at = 1;
    assert_int_equal(cupstore_meta_scan(txn, "config.", meta_fn, &c), 42);
    assert_string_equal(c.seen, "config.buffer_size=4194304;");
    memset(&c, 0, sizeof c);
    c.stop_at = -1;
    assert_int_equal(cupstore_meta_scan(txn, "zz", meta_fn, &c), 0);
    assert_int_equal(c.n, 0);
    assert_int_equal(cupstore_meta_scan(txn, "", meta_fn, &c), CUPSTORE_EINVAL);
    assert_int_equal(cupstore_meta_scan(txn, ".chunk", meta_fn, &c), CUPSTORE_EINVAL);
    assert_int_equal(cupstore_meta_scan(txn, "config.", NULL, &c), CUPSTORE_EINVAL);
    cupstore_txn_abort(txn);
    cupstore_env_close(env);
}

struct hcollect {
    cupstore_health rows[16];
    int n;
};

static int health_fn(const cupstore_health *h, void *arg)
{
    struct hcollect *c = arg;
    assert_true(c->n < 16);
    c->rows[c->n++] = *h;
    return 0;
}

static void test_health(void **state)
{
    st_fix *f = *state;
    cupstore_env *env = st_create(f->dir, NULL);
    cupstore_txn *txn = rbegin(env);
    cupstore_health h, g;
    struct hcollect c = {0};

    assert_int_equal(cupstore_health_last(txn, &g), CUPSTORE_ENOTFOUND);
    assert_int_equal(cupstore_health_get(txn, 5, &g), CUPSTORE_ENOTFOUND);
    cupstore_txn_abort(txn);

    txn = wbegin(env);
    for (uint64_t s = 100; s < 110; s++) {
        memset(&h, 0, sizeof h);
        h.second = s;
        h.heartbeat_ns = s * 1000000000ull + 5;
        h.epoch = (uint32_t)(s / 4);
        h.records_by_kind[CUPSTORE_KIND_MAX - 1] = s;
        h.records_by_device[CUPSTORE_DEVICE_MAX - 1] = s + 1;
        h.loss[CUPSTORE_LOSS_CONFLICT] = s + 2;
        h.overhead_by_type[7] = s + 3;
        h.req_lat.max_ns = (uint32_t)s;
        h.commit_lat.count = 9;
        h.flags = CUPSTORE_HF_DORMANT;
        assert_int_equal(cupstore_health_put(txn, &h), 0);
    }
    assert_int_equal(cupstore_txn_commit(txn), 0);

    txn = rbegin(env);
    assert_int_equal(cupstore_health_get(txn, 104, &g), 0);
    assert_int_equal(g.second, 104);
    assert_int_equal(g.heartbeat_ns, 104000000005ull);
    assert_int_equal(g.epoch, 26);
    assert_int_equal(g.records_by_kind[CUPSTORE_KIND_MAX - 1], 104);
    assert_int_equal(g.records_by_device[CUPSTORE_DEVICE_MAX - 1], 105);
    assert_int_equal(g.loss[CUPSTORE_LOSS_CONFLICT], 106);
    assert_int_equal(g.overhead_by_type[7], 107);
    assert_int_equal(g.req_lat.max_ns, 104);
    assert_int_equal(g.commit_lat.count, 9);
    assert_int_equal(g.flags, CUPSTORE_HF_DORMANT);
    assert_int_equal(cupstore_health_last(txn, &g), 0);
    assert_int_equal(g.second, 109);
    assert_int_equal(cupstore_health_scan(txn, 103, 106, health_fn, &c), 0);
    assert_int_equal(c.n, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(c.rows[i].second, 103 + (uint64_t)i);
    c.n = 0;
    assert_int_equal(cupstore_health_scan(txn, 0, UINT64_MAX, health_fn, &c), 0);
    assert_int_equal(c.n, 10);
    c.n = 0;
    assert_int_equal(cupstore_health_scan(txn, 200, 300, health_fn, &c), 0);
    assert_int_equal(c.n, 0);
    cupstore_txn_abort(txn);

    /* upsert: rewriting a second replaces the row */
    txn = wbegin(env);
    memset(&h, 0, sizeof h);
    h.second = 104;
    h.epoch = 1;
    assert_int_equal(cupstore_health_put(txn, &h), 0);
    assert_int_equal(cupstore_txn_commit(txn), 0);
    txn = rbegin(env);
    assert_int_equal(cupstore_health_get(txn, 104, &g), 0);
    assert_int_equal(g.epoch, 1);
    assert_int_equal(g.heartbeat_ns, 0);
    cupstore_txn_abort(txn);
    cupstore_env_close(env);
}

struct lcollect {
    cupstore_loss_row rows[32];
    int n;
};

static int loss_fn(const cupstore_loss_row *r, void *arg)
{
    struct lcollect *c = arg;
    assert_true(c->n < 32);
    c->rows[c->n++] = *r;
    return 0;
}

static void test_loss(void **state)
{
    st_fix *f = *state;
    cupstore_env *env = st_create(f->dir, NULL);
    cupstore_txn *txn = wbegin(env);
    struct lcollect c = {0};
    cupstore_loss_row r = {.second = 50, .loss = CUPSTORE_LOSS_CUPTI_DROPPED,
                           .kind = CUPSTORE_KIND_ALL, .device = 1, .count = 10};

    assert_int_equal(cupstore_loss_add(txn, &r), 0);
    assert_int_equal(cupstore_loss_add(txn, &r), 0); /* summed: 20 */
    r.device = CUPSTORE_DEVICE_NONE;
    assert_int_equal(cupstore_loss_add(txn, &r), 0); /* another key */
    r.device = 1;
    r.kind = CUPSTORE_KIND_KERNEL;
    r.estimate = true;
    r.count = 7;
    assert_int_equal(cupstore_loss_add(txn, &r), 0); /* estimate: separate key */
    r.second = 51;
    r.loss = CUPSTORE_LOSS_STORE_REFUSED;
    r.estimate = false;
    r.count = UINT64_MAX;
    assert_int_equal(cupstore_loss_add(txn, &r), 0);
    assert_int_equal(cupstore_loss_add(txn, &r), 0); /* saturates */
    r.second = 52;
    r.loss = CUPSTORE_LOSS_MAX;
    assert_int_equal(cupstore_loss_add(txn, &r), CUPSTORE_EINVAL);
    assert_int_equal(cupstore_txn_commit(txn), 0);

    txn = rbegin(env);
    assert_int_equal(cupstore_loss_scan(txn, 0, UINT64_MAX, loss_fn, &c), 0);
    assert_int_equal(c.n, 4);
    /* key order: second, class, kind, device, estimate */
    assert_int_equal(c.rows[0].kind, CUPSTORE_KIND_KERNEL);
    assert_true(c.rows[0].estimate);
    assert_int_equal(c.rows[0].count, 7);
    assert_int_equal(c.rows[1].kind, CUPSTORE_KIND_ALL);
    assert_int_equal(c.rows[1].device, 1);
    assert_int_equal(c.rows[1].count, 20);
    assert_false(c.rows[1].estimate);
    assert_int_equal(c.rows[2].device, CUPSTORE_DEVICE_NONE);
    assert_int_equal(c.rows[2].count, 10);
    assert_int_equal(c.rows[3].second, 51);
    assert_int_equal(c.rows[3].loss, CUPSTORE_LOSS_STORE_REFUSED);
    assert_int_equal(c.rows[3].count, UINT64_MAX);
    c.n = 0;
    assert_int_equal(cupstore_loss_scan(txn, 51, 51, loss_fn, &c), 0);
    assert_int_equal(c.n, 1);
    c.n = 0;
    assert_int_equal(cupstore_loss_scan(txn, 0, 50, loss_fn, &c), 0);
    assert_int_equal(c.n, 3);
    cupstore_txn_abort(txn);
    cupstore_env_close(env);
}

static void test_names(void **state)
{
    st_fix *f = *state;
    cupstore_env *env = st_create(f->dir, NULL);
    cupstore_txn *txn = wbegin(env);
    const char *n;
    size_t len;
    static const char weird[] = "k<\"q\\b\">\xff\xfe\x01\n\0tail";

    assert_int_equal(cupstore_name_put(txn, 1, "void kern<float>(float*, int)", 29), 0);
    assert_int_equal(cupstore_name_put(txn, 2, weird, sizeof weird - 1), 0);
    assert_int_equal(cupstore_name_put(txn, 3, "", 0), 0);
    assert_int_equal(cupstore_name_put(txn, 0, "zero", 4), CUPSTORE_EINVAL);
    assert_int_equal(cupstore_txn_commit(txn), 0);

    txn = rbegin(env);
    assert_int_equal(cupstore_name_get(txn, 1, &n, &len), 0);
    assert_int_equal(len, 29);
    assert_memory_equal(n, "void kern<float>(float*, int)", 29);
    assert_int_equal(cupstore_name_get(txn, 2, &n, &len), 0);
    assert_int_equal(len, sizeof weird - 1);
    assert_memory_equal(n, weird, len);
    assert_int_equal(cupstore_name_get(txn, 3, &n, &len), 0);
    assert_int_equal(len, 0);
    assert_int_equal(cupstore_name_get(txn, 4, &n, &len), CUPSTORE_ENOTFOUND);
    cupstore_txn_abort(txn);
    cupstore_env_close(env);
}

static int epoch_fn(const cupstore_epoch *e, void *arg)
{
    cupstore_epoch *v = arg;
    v[e->id] = *e;
    return 0;
}

static int control_fn(const cupstore_control *c, void *arg)
{
    int *n = arg;
    assert_int_equal(c->gen, (uint64_t)++*n);
    return 0;
}

static int mark_fn(const cupstore_mark *m, void *arg)
{
    cupstore_mark *v = arg;
    int i = 0;
    while (v[i].name[0])
        i++;
    v[i] = *m;
    return 0;
}

static int note_fn(const cupstore_note *n, void *arg)
{
    cupstore_note *v = arg;
    v[n->seq] = *n;
    return 0;
}

static int step_fn(const cupstore_step *s, void *arg)
{
    cupstore_step *v = arg;
    v[s->step] = *s;
    return 0;
}

static int stop_fn(const cupstore_control *c, void *arg)
{
    (void)c;
    (void)arg;
    return 99;
}

static void test_epochs_control_marks(void **state)
{
    st_fix *f = *state;
    char *id;
    cupstore_env *env = st_create(f->dir, &id);
    cupstore_txn *txn = wbegin(env);
    cupstore_epoch ev[4];
    cupstore_control c;
    uint64_t gen;
    cupstore_mark marks[4], m;
    int n = 0;

    cupstore_epoch e1 = {.id = 1, .kinds = CUPSTORE_KINDS_DEFAULT, .start_ns = 10};
    cupstore_epoch e2 = {.id = 2, .kinds = 1, .start_ns = 20, .ctl_gen = 1};
    assert_int_equal(cupstore_epoch_put(txn, &e1), 0);
    e1.end_ns = 20; /* upsert closes epoch 1 */
    assert_int_equal(cupstore_epoch_put(txn, &e1), 0);
    assert_int_equal(cupstore_epoch_put(txn, &e2), 0);
    cupstore_epoch e0 = {0};
    assert_int_equal(cupstore_epoch_put(txn, &e0), CUPSTORE_EINVAL);
    assert_int_equal(cupstore_control_latest(txn, &c), CUPSTORE_ENOTFOUND);
    assert_int_equal(cupstore_txn_commit(txn), 0);
    cupstore_env_close(env);

    /* A front end (flags 0) writes control requests and marks. */
    assert_int_equal(cupstore_session_open(&env, f->dir, id, 0), 0);
    txn = wbegin(env);
    assert_int_equal(cupstore_control_request(txn, 0x3, &gen), 0);
    assert_int_equal(gen, 1);
    assert_int_equal(cupstore_control_request(txn, 0x7, &gen), 0);
    assert_int_equal(gen, 2);
    assert_int_equal(cupstore_control_request_pool(txn, 0x1, 96, NULL), 0);
    strcpy(m.name, "warmup");
    m.from_ns = 100, m.to_ns = 200, m.created_ns = 300;
    assert_int_equal(cupstore_mark_put(txn, &m), 0);
    strcpy(m.name, "steady state");
    m.from_ns = 200, m.to_ns = 900, m.created_ns = 301;
    assert_int_equal(cupstore_mark_put(txn, &m), 0);
    m.to_ns = 1000; /* upsert */
    assert_int_equal(cupstore_mark_put(txn, &m), 0);
    m.name[0] = '\0';
    assert_int_equal(cupstore_mark_put(txn, &m), CUPSTORE_EINVAL);
    memset(m.name, 'x', sizeof m.name); /* not terminated */
    assert_int_equal(cupstore_mark_put(txn, &m), CUPSTORE_EINVAL);
    assert_int_equal(cupstore_txn_commit(txn), 0);
    cupstore_env_close(env);

    /* The agent acknowledges. */
    assert_int_equal(cupstore_session_open(&env, f->dir, id, 0), 0);
    txn = wbegin(env);
    assert_int_equal(cupstore_control_latest(txn, &c), 0);
    assert_int_equal(c.gen, 3);
    assert_int_equal(c.kinds, 1);
    assert_int_equal(c.pool, 96);
    assert_int_equal(c.pool_applied, 0);
    assert_int_equal(c.applied_ns, 0);
    assert_true(c.requested_ns > 1500000000ull * 1000000000ull);
    assert_int_equal(cupstore_control_ack(txn, 3, 777, -5, 48), 0);
    assert_int_equal(cupstore_control_ack(txn, 9, 777, 0, 0), CUPSTORE_ENOTFOUND);
    assert_int_equal(cupstore_txn_commit(txn), 0);

    txn = rbegin(env);
    memset(ev, 0, sizeof ev);
    assert_int_equal(cupstore_epoch_scan(txn, epoch_fn, ev), 0);
    assert_int_equal(ev[1].id, 1);
    assert_int_equal(ev[1].end_ns, 20);
    assert_int_equal(ev[1].kinds, CUPSTORE_KINDS_DEFAULT);
    assert_int_equal(ev[2].ctl_gen, 1);
    assert_int_equal(ev[2].start_ns, 20);
    assert_int_equal(cupstore_control_latest(txn, &c), 0);
    assert_int_equal(c.applied_ns, 777);
    assert_int_equal(c.result, -5);
    assert_int_equal(c.pool, 96);
    assert_int_equal(c.pool_applied, 48);
    assert_int_equal(cupstore_control_scan(txn, control_fn, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(cupstore_control_scan(txn, stop_fn, NULL), 99);
    memset(marks, 0, sizeof marks);
    assert_int_equal(cupstore_mark_scan(txn, mark_fn, marks), 0);
    assert_string_equal(marks[0].name, "steady state"); /* key order */
    assert_int_equal(marks[0].to_ns, 1000);
    assert_string_equal(marks[1].name, "warmup");
    assert_int_equal(marks[1].created_ns, 300);
    assert_string_equal(marks[2].name, "");
    assert_int_equal(cupstore_mark_get(txn, "warmup", &m), 0);
    assert_int_equal(m.from_ns, 100);
    assert_int_equal(cupstore_mark_get(txn, "warm", &m), CUPSTORE_ENOTFOUND);
    cupstore_txn_abort(txn);
    cupstore_env_close(env);
    free(id);
}

static void test_notes_steps_final(void **state)
{
    st_fix *f = *state;
    cupstore_env *env = st_create(f->dir, NULL);
    cupstore_txn *txn = rbegin(env);
    cupstore_note notes[4], n = {.time_ns = 5, .level = 1};
    cupstore_step steps[CUPSTORE_STEP_MAX], s;
    cupstore_final fin, g;

    assert_int_equal(cupstore_final_get(txn, &g), CUPSTORE_ENOTFOUND);
    cupstore_txn_abort(txn);
    txn = wbegin(env);
    strcpy(n.text, "pool exhausted: \"declined\" 3 requests \\ \xff");
    assert_int_equal(cupstore_note_put(txn, &n), 0);
    assert_int_equal(n.seq, 1);
    n.level = 2;
    memset(n.text, 'a', sizeof n.text); /* fills the array: stored truncated */
    assert_int_equal(cupstore_note_put(txn, &n), 0);
    assert_int_equal(n.seq, 2);
    for (unsigned i = 0; i < CUPSTORE_STEP_MAX; i++) {
        s = (cupstore_step){.step = i, .start_mono_ns = 1000 * i, .end_mono_ns = 1000 * i + 5,
                            .rc = -(int32_t)i, .timed_out = i == 1, .queue_remaining = i};
        assert_int_equal(cupstore_step_put(txn, &s), 0);
    }
    fin = (cupstore_final){.end_ns = 123, .exit_path = CUPSTORE_EXIT_SIGNAL, .exit_detail = -9,
                           .protocol_complete = 1, .flush_ok = 1, .tail_lost = 4,
                           .buffers_completed = 10, .buffers_consumed = 9,
                           .records_stored = UINT64_MAX};
    assert_int_equal(cupstore_final_put(txn, &fin), 0);
    assert_int_equal(cupstore_txn_commit(txn), 0);
    assert_int_equal(cupstore_env_sync(env), 0);

    txn = rbegin(env);
    memset(notes, 0, sizeof notes);
    assert_int_equal(cupstore_note_scan(txn, note_fn, notes), 0);
    assert_string_equal(notes[1].text, "pool exhausted: \"declined\" 3 requests \\ \xff");
    assert_int_equal(notes[1].level, 1);
    assert_int_equal(notes[1].time_ns, 5);
    assert_int_equal(notes[2].level, 2);
    assert_int_equal(strlen(notes[2].text), sizeof n.text - 1);
    memset(steps, 0, sizeof steps);
    assert_int_equal(cupstore_step_scan(txn, step_fn, steps), 0);
    for (unsigned i = 0; i < CUPSTORE_STEP_MAX; i++) {
        assert_int_equal(steps[i].step, i);
        assert_int_equal(steps[i].end_mono_ns, 1000 * i + 5);
        assert_int_equal(steps[i].rc, -(int32_t)i);
        assert_int_equal(steps[i].timed_out, i == 1);
        assert_int_equal(steps[i].queue_remaining, i);
    }
    assert_int_equal(cupstore_final_get(txn, &g), 0);
    assert_memory_equal(&fin, &g, sizeof fin);
    cupstore_txn_abort(txn);
    cupstore_env_close(env);
}

/* The final status aside (invariant 12): allocated, all zeros, reads as
 * none; written, it is what cupstore_final_get gives when the store has no
 * final row (aside set); the store's own row wins; damage reads as none;
 * the descriptor is never one of the standard three. */
static void test_final_aside(void **state)
{
    st_fix *f = *state;
    char *id = NULL;
    cupstore_env *env = st_create(f->dir, &id);
    cupstore_txn *txn;
    cupstore_final fin, g;
    int fd = -1, fd2 = -1;

    assert_int_equal(cupstore_final_aside_open(env, &fd), 0);
    assert_true(fd >= 3);
    assert_int_equal(cupstore_final_aside_open(env, &fd2), EEXIST);   /* once */
    txn = rbegin(env);
    assert_int_equal(cupstore_final_get(txn, &g), CUPSTORE_ENOTFOUND);   /* zeros */
    cupstore_txn_abort(txn);
    memset(&fin, 0, sizeof fin);
    fin.end_ns = 77;
    fin.exit_path = CUPSTORE_EXIT_RETURN;
    fin.flush_ok = 1;
    fin.protocol_complete = 1;
    fin.store_refused = 9;
    fin.buffers_outstanding = 3;
    fin.conflict_bound = 300;
    fin.loss_total[CUPSTORE_LOSS_STORE_REFUSED] = 1234;
    assert_int_equal(cupstore_final_aside_put(fd, &fin), 0);
    txn = rbegin(env);
    assert_int_equal(cupstore_final_get(txn, &g), 0);
    cupstore_txn_abort(txn);
    assert_int_equal(g.aside, 1);
    g.aside = 0;
    assert_memory_equal(&fin, &g, sizeof fin);
    /* damage: the magic overwritten */
    assert_int_equal(pwrite(fd, "x", 1, 0), 1);
    txn = rbegin(env);
    assert_int_equal(cupstore_final_get(txn, &g), CUPSTORE_ENOTFOUND);
    cupstore_txn_abort(txn);
    /* the store's own final row wins over the aside */
    assert_int_equal(cupstore_final_aside_put(fd, &fin), 0);
    fin.end_ns = 88;
    txn = wbegin(env);
    assert_int_equal(cupstore_final_put(txn, &fin), 0);
    assert_int_equal(cupstore_txn_commit(txn), 0);
    txn = rbegin(env);
    assert_int_equal(cupstore_final_get(txn, &g), 0);
    cupstore_txn_abort(txn);
    assert_int_equal(g.end_ns, 88);
    assert_int_equal(g.aside, 0);
    close(fd);
    cupstore_env_close(env);
    free(id);
}

/* ---- Records: window scans vs brute force --------------------------------- */

typedef struct window_check {
    const cupstore_record *all;
    size_t n;
} window_check;

static int cmp_rec(const void *a, const void *b)
{
    return memcmp(a, b, sizeof(cupstore_record));
}

/* The window's records from a scan (with memo m, or none) equal brute
 * force's. */
static void check_window_memo(cupstore_env *env, const cupstore_record *all, const uint64_t *keys,
                              size_t n, uint64_t from, uint64_t to, cupstore_scan_memo *m)
{
    st_collect got = {0};
    cupstore_record *want = malloc((n + 1) * sizeof *want);
    size_t nw = 0;
    cupstore_txn *txn = rbegin(env);
    assert_int_equal(cupstore_record_scan_memo(txn, from, to, m, st_collect_fn, &got), 0);
    cupstore_txn_abort(txn);
    for (size_t i = 0; i < n; i++) {
        uint64_t t = all[i].start_ns ? all[i].start_ns : keys[i];
        if (t >= from && t <= to)
            want[nw++] = all[i];
    }
    assert_int_equal(got.n, nw);
    qsort(want, nw, sizeof *want, cmp_rec);
    if (got.n)
        qsort(got.v, got.n, sizeof *got.v, cmp_rec);
    for (size_t i = 0; i < nw; i++)
        st_assert_record_eq(&got.v[i], &want[i]);
    free(want);
    free(got.v);
}

static void check_window(cupstore_env *env, const cupstore_record *all, const uint64_t *keys,
                         size_t n, uint64_t from, uint64_t to)
{
    check_window_memo(env, all, keys, n, from, to, NULL);
}

static int stop_rec(const cupstore_record *r, void *arg);

static void test_record_windows(void **state)
{
    st_fix *f = *state;
    enum { BATCHES = 40, PER = 500, N = BATCHES * PER };
    cupstore_env *env = st_create(f->dir, NULL);
    cupstore_record *all = calloc(N, sizeof *all);
    uint64_t *keys = calloc(N, sizeof *keys); /* chunk key of each record */
    uint64_t seed = 2024, t0 = 1700000000000000000ull, chunks, records, bytes;
    assert_non_null(all);

    for (size_t b = 0; b < BATCHES; b++) {
        cupstore_record *r = all + b * PER;
        uint64_t base = t0 + b * 1000000ull; /* batches 1 ms apart, overlapping */
        uint64_t kmin = UINT64_MAX;
        for (size_t i = 0; i < PER; i++) {
            st_record(&r[i], (unsigned)(st_rand(&seed) % CUPSTORE_KIND_MAX), &seed, 0);
            r[i].start_ns = base + st_rand(&seed) % 3000000ull; /* unsorted, 3 ms spread */
            r[i].end_ns = r[i].start_ns + 1000;
            if (i % 97 == 0) { /* zero timestamps ride with their chunk key */
                r[i].start_ns = r[i].end_ns = 0;
                r[i].flags = CUPSTORE_RF_ZERO_TS;
            }
            if (r[i].start_ns && r[i].start_ns < kmin)
                kmin = r[i].start_ns;
        }
        for (size_t i = 0; i < PER; i++)
            keys[b * PER + i] = kmin;
        cupstore_txn *txn = wbegin(env);
        assert_int_equal(cupstore_chunk_put(txn, r, PER), 0);
        assert_int_equal(cupstore_txn_commit(txn), 0);
    }
    cupstore_txn *txn = rbegin(env);
    assert_int_equal(cupstore_record_stats(txn, &chunks, &records, &bytes), 0);
    assert_int_equal(chunks, BATCHES);
    assert_int_equal(records, N);
    assert_true(bytes > 0 && bytes < (uint64_t)N * 128); /* random fields: no 40 B goal */
    cupstore_txn_abort(txn);

    check_window(env, all, keys, N, 0, UINT64_MAX);
    check_window(env, all, keys, N, t0 + 5500000, t0 + 5600000); /* inside chunks */
    check_window(env, all, keys, N, t0 + 2999999, t0 + 3000001);
    check_window(env, all, keys, N, t0 + 10000000, t0 + 30000000);
    check_window(env, all, keys, N, t0 + 41000000, UINT64_MAX); /* past the end */
    check_window(env, all, keys, N, 0, t0 - 1);                 /* before the start */
    check_window(env, all, keys, N, t0 + 7000000, t0 + 7000000); /* a chunk key exactly */
    for (int i = 0; i < 20; i++) {
        uint64_t a = t0 + st_rand(&seed) % 45000000ull, b = a + st_rand(&seed) % 5000000ull;
        check_window(env, all, keys, N, a, b);
    }
    check_window(env, all, keys, N, 5, 4); /* empty window */

    /* A memo across ascending windows (an export's seconds, here 250 us,
     * each in a transaction of its own): the same records as without */
    cupstore_scan_memo *m;
    assert_int_equal(cupstore_scan_memo_new(&m), 0);
    for (uint64_t a = t0 - 250000; a < t0 + 45000000; a += 250000)
        check_window_memo(env, all, keys, N, a, a + 249999, m);
    /* windows that go back, repeat or jump: still the same records */
    check_window_memo(env, all, keys, N, t0 + 3000000, t0 + 3100000, m);
    check_window_memo(env, all, keys, N, t0 + 3000000, t0 + 3100000, m);
    check_window_memo(env, all, keys, N, 0, UINT64_MAX, m);
    check_window_memo(env, all, keys, N, t0 + 20000000, t0 + 20000001, m);
    cupstore_scan_memo_free(m);
    /* a scan stopped inside a chunk does not remember it */
    assert_int_equal(cupstore_scan_memo_new(&m), 0);
    int stopped = 0;
    txn = rbegin(env);
    assert_int_equal(cupstore_record_scan_memo(txn, t0, t0 + 1000000, m, stop_rec, &stopped), 7);
    cupstore_txn_abort(txn);
    check_window_memo(env, all, keys, N, t0 + 1000, t0 + 2000000, m);
    cupstore_scan_memo_free(m);
    cupstore_scan_memo_free(NULL);
    cupstore_env_close(env);
    free(all);
    free(keys);
}

static int stop_rec(const cupstore_record *r, void *arg)
{
    (void)r;
    return ++*(int *)arg == 10 ? 7 : 0;
}

static void test_record_zero_only_and_stop(void **state)
{
    st_fix *f = *state;
    cupstore_env *env = st_create(f->dir, NULL);
    cupstore_record r[50];
    uint64_t seed = 1;
    st_collect got = {0};
    int n = 0;

    for (int i = 0; i < 50; i++)
        st_record(&r[i], CUPSTORE_KIND_MEMCPY, &seed, 5000000000ull);
    cupstore_txn *txn = wbegin(env);
    assert_int_equal(cupstore_chunk_put(txn, r, 50), 0);
    for (int i = 0; i < 50; i++)
        r[i].start_ns = r[i].end_ns = 0;
    assert_int_equal(cupstore_chunk_put(txn, r, 50), 0); /* files beside the last chunk */
    assert_int_equal(cupstore_chunk_put(txn, r, 0), 0);   /* nothing */
    assert_int_equal(cupstore_txn_commit(txn), 0);
    txn = rbegin(env);
    assert_int_equal(cupstore_record_scan(txn, 0, UINT64_MAX, st_collect_fn, &got), 0);
    assert_int_equal(got.n, 100);
    assert_int_equal(cupstore_record_scan(txn, 0, UINT64_MAX, stop_rec, &n), 7);
    assert_int_equal(n, 10);
    cupstore_txn_abort(txn);
    free(got.v);
    cupstore_env_close(env);
}

/* cupstore_record_scan_after: both cuts by commit order, whatever the key
 * order.  Three chunks of 10, committed late, early, middle in time; each
 * record's cid says its commit position (0-29). */
typedef struct after_seen {
    uint64_t seen;
    size_t n;
} after_seen;

static int after_cid(const cupstore_record *r, void *arg)
{
    after_seen *c = arg;
    c->seen |= 1ull << r->correlation;
    c->n++;
    return 0;
}

static uint64_t after_bits(cupstore_env *env, uint64_t skip, uint64_t limit, size_t *n)
{
    after_seen got = {0};
    cupstore_txn *txn = rbegin(env);
    assert_int_equal(cupstore_record_scan_after(txn, skip, limit, after_cid, &got), 0);
    cupstore_txn_abort(txn);
    *n = got.n;
    return got.seen;
}

static uint64_t bits(unsigned from, unsigned to)   /* [from, to) */
{
    return ((1ull << to) - 1) & ~((1ull << from) - 1);
}

static void test_record_scan_after(void **state)
{
    st_fix *f = *state;
    cupstore_env *env = st_create(f->dir, NULL);
    const uint64_t at[3] = {9000000000ull, 1000000000ull, 5000000000ull};
    uint64_t seed = 3;
    size_t n;
    for (unsigned c = 0; c < 3; c++) {
        cupstore_record r[10];
        for (unsigned i = 0; i < 10; i++) {
            st_record(&r[i], CUPSTORE_KIND_KERNEL, &seed, at[c]);
            r[i].correlation = c * 10 + i;
        }
        cupstore_txn *txn = wbegin(env);
        assert_int_equal(cupstore_chunk_put(txn, r, 10), 0);
        assert_int_equal(cupstore_txn_commit(txn), 0);
    }
    assert_int_equal(after_bits(env, 0, UINT64_MAX, &n), bits(0, 30));
    assert_int_equal(n, 30);
    assert_int_equal(after_bits(env, 5, UINT64_MAX, &n), bits(5, 30));
    assert_int_equal(n, 25);
    /* the limit in the second chunk committed (the earliest in time) */
    assert_int_equal(after_bits(env, 5, 12, &n), bits(5, 17));
    assert_int_equal(n, 12);
    /* both cuts in one chunk */
    assert_int_equal(after_bits(env, 12, 3, &n), bits(12, 15));
    assert_int_equal(n, 3);
    /* the limit at a chunk's end, past the records, none */
    assert_int_equal(after_bits(env, 10, 10, &n), bits(10, 20));
    assert_int_equal(after_bits(env, 25, 100, &n), bits(25, 30));
    assert_int_equal(after_bits(env, 30, UINT64_MAX, &n), 0);
    assert_int_equal(n, 0);
    assert_int_equal(after_bits(env, 0, 0, &n), 0);
    assert_int_equal(n, 0);
    cupstore_env_close(env);
}

/* ---- Sessions and directories ------------------------------------------- */

static void test_sessions(void **state)
{
    st_fix *f = *state;
    char **ids, *a, *b, *c, path[256];
    size_t n;
    cupstore_env *env, *e2;

    snprintf(path, sizeof path, "%s/store", f->dir);
    assert_int_equal(cupstore_dir_sessions(path, &ids, &n), ENOENT);
    env = st_create(path, &a);
    cupstore_env_close(env);
    env = st_create(path, &b); /* same second and pid: suffixed */
    cupstore_env_close(env);
    assert_int_equal(cupstore_session_create(&env, &c, path, 99999999, NULL), 0);
    cupstore_env_close(env);
    assert_string_not_equal(a, b);
    assert_int_equal(strncmp(a, b, strlen(a)), 0);
    assert_true(strlen(b) > strlen(a));

    /* non-sessions are skipped */
    snprintf(path, sizeof path, "%s/store/notes.txt", f->dir);
    FILE *fp = fopen(path, "w");
    fclose(fp);
    snprintf(path, sizeof path, "%s/store/20990101T000000-1", f->dir);
    mkdir(path, 0700); /* no data file: not a session (yet) */
    snprintf(path, sizeof path, "%s/store", f->dir);
    assert_int_equal(cupstore_dir_sessions(path, &ids, &n), 0);
    assert_int_equal(n, 3);
    int found = 0;
    for (size_t i = 0; i < n; i++)
        found += !strcmp(ids[i], a) + !strcmp(ids[i], b) + !strcmp(ids[i], c);
    assert_int_equal(found, 3);
    /* sorted: a before its suffixed twin; same-second sessions by pid */
    for (size_t i = 0; i + 1 < n; i++)
        assert_true(strncmp(ids[i], ids[i + 1], 15) <= 0);
    cupstore_ids_free(ids, n);

    /* exact id, unique prefix, ambiguous prefix, unknown */
    assert_int_equal(cupstore_session_open(&e2, path, a, CUPSTORE_RDONLY), 0);
    assert_string_equal(cupstore_env_id(e2), a);
    cupstore_env_close(e2);
    assert_int_equal(cupstore_session_open(&e2, path, c + 0, CUPSTORE_RDONLY), 0);
    cupstore_env_close(e2);
    char pre[32];
    snprintf(pre, sizeof pre, "%.*s", (int)strlen(c) - 2, c); /* unique: pid 99999999 */
    assert_int_equal(cupstore_session_open(&e2, path, pre, CUPSTORE_RDONLY), 0);
    assert_string_equal(cupstore_env_id(e2), c);
    cupstore_env_close(e2);
    snprintf(pre, sizeof pre, "%.*s", (int)strlen(a) - 1, a); /* a and b share it */
    assert_int_equal(cupstore_session_open(&e2, path, pre, CUPSTORE_RDONLY), CUPSTORE_EINVAL);
    assert_null(e2);
    assert_int_equal(cupstore_session_open(&e2, path, "19990101", CUPSTORE_RDONLY),
                     CUPSTORE_ENOTFOUND);
    assert_int_equal(cupstore_session_open(&e2, path, "../x", CUPSTORE_RDONLY), CUPSTORE_EINVAL);
    assert_int_equal(cupstore_session_open(&e2, path, "20990101T000000-1", CUPSTORE_RDONLY),
                     CUPSTORE_ENOTSTORE);
    snprintf(path, sizeof path, "%s/none", f->dir);
    assert_int_equal(cupstore_session_open(&e2, path, a, CUPSTORE_RDONLY), CUPSTORE_ENOTFOUND);
    free(a);
    free(b);
    free(c);
}

static void test_dir_prepare(void **state)
{
    st_fix *f = *state;
    char path[256], *r;
    struct stat st;

    snprintf(path, sizeof path, "%s/a/b/c", f->dir);
    assert_int_equal(cupstore_dir_prepare(path), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(cupstore_dir_prepare(path), 0); /* idempotent */

    snprintf(path, sizeof path, "%s/open", f->dir);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(chmod(path, 0777), 0);
    assert_int_equal(cupstore_dir_prepare(path), CUPSTORE_EPERM);
    cupstore_env *env;
    assert_int_equal(cupstore_session_create(&env, NULL, path, 1, NULL), CUPSTORE_EPERM);
    char **ids;
    size_t n;
    assert_int_equal(cupstore_dir_sessions(path, &ids, &n), CUPSTORE_EPERM);
    assert_int_equal(chmod(path, 0750), 0);
    assert_int_equal(cupstore_dir_prepare(path), 0); /* group-readable is fine */
    assert_int_equal(chmod(path, 0770), 0);
    assert_int_equal(cupstore_dir_prepare(path), CUPSTORE_EPERM);

    snprintf(path, sizeof path, "%s/file", f->dir);
    FILE *fp = fopen(path, "w");
    fclose(fp);
    assert_int_equal(cupstore_dir_prepare(path), ENOTDIR);
    snprintf(path, sizeof path, "%s/file/sub", f->dir);
    assert_int_equal(cupstore_dir_prepare(path), ENOTDIR);

    assert_int_equal(cupstore_dir_resolve("/explicit", &r), 0);
    assert_string_equal(r, "/explicit");
    free(r);
    setenv("CUPTOP_STORE", "/from/env", 1);
    assert_int_equal(cupstore_dir_resolve(NULL, &r), 0);
    assert_string_equal(r, "/from/env");
    free(r);
    unsetenv("CUPTOP_STORE");
    setenv("XDG_STATE_HOME", "/xdg", 1);
    assert_int_equal(cupstore_dir_resolve("", &r), 0);
    assert_string_equal(r, "/xdg/cuptop");
    free(r);
    unsetenv("XDG_STATE_HOME");
    char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("HOME", "/home/u", 1);
    assert_int_equal(cupstore_dir_resolve(NULL, &r), 0);
    assert_string_equal(r, "/home/u/.local/state/cuptop");
    free(r);
    if (home) {
        setenv("HOME", home, 1);
        free(home);
    } else {
        unsetenv("HOME");
    }
}

static void test_env_open_path(void **state)
{
    st_fix *f = *state;
    char path[256];
    cupstore_env *env;
    uint64_t used, mapsize;

    snprintf(path, sizeof path, "%s/byhand", f->dir);
    assert_int_equal(cupstore_env_open(&env, path, CUPSTORE_CREATE, NULL), 0);
    assert_string_equal(cupstore_env_id(env), "byhand");
    assert_int_equal(cupstore_env_usage(env, &used, &mapsize), 0);
    assert_true(used > 0 && used <= mapsize);
    assert_int_equal(mapsize, 64ull << 20);
    assert_int_equal(cupstore_env_reader_check(env, NULL), 0);
    cupstore_env_close(env);
    assert_int_equal(cupstore_env_open(&env, path, CUPSTORE_CREATE, NULL), CUPSTORE_EEXIST);
    assert_int_equal(cupstore_env_open(&env, path, CUPSTORE_CREATE | CUPSTORE_RDONLY, NULL),
                     CUPSTORE_EINVAL);
    strcat(path, "/"); /* trailing slash: same id */
    assert_int_equal(cupstore_env_open(&env, path, CUPSTORE_RDONLY, NULL), 0);
    assert_string_equal(cupstore_env_id(env), "byhand");
    cupstore_env_close(env);
    snprintf(path, sizeof path, "%s/missing", f->dir);
    assert_int_equal(cupstore_env_open(&env, path, CUPSTORE_RDONLY, NULL), CUPSTORE_ENOTFOUND);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, st_setup, st_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_meta),
        T(test_meta_scan),
        T(test_health),
        T(test_loss),
        T(test_names),
        T(test_epochs_control_marks),
        T(test_notes_steps_final),
        T(test_final_aside),
        T(test_record_windows),
        T(test_record_zero_only_and_stop),
        T(test_record_scan_after),
        T(test_sessions),
        T(test_dir_prepare),
        T(test_env_open_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
