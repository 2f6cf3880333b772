/*
 * test_model_liveness.c - is the process of a session without a final
 * status still there (issue 28 item 12)?  The judgement (model_liveness),
 * the lookup by the identity the agent records (model_proc_find) over
 * /proc trees built here (model_proc_root), and model_summarize on stores
 * written here: a stale heartbeat of a process that is still there is
 * stopped or not responding, live and not COMPLETE, never crashed; one in
 * another PID namespace is found by its start time and innermost pid; one
 * that cannot be looked up is "not visible here"; a process really gone
 * is crashed.  Stores from before the identity keep the old rule.
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "model.h"

#define NS UINT64_C(1000000000)
#define BOOT "6f1d2a4e-0000-4000-8000-00000000b007"

/* ---- A fake /proc ------------------------------------------------------ */

typedef struct fake {
    char root[64];
    uint64_t my_ns;       /* inode of root/self/ns/pid                    */
    uint64_t other_ns;    /* inode of root/ns-other (another namespace)   */
} fake;

static void put_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    assert_int_equal(fclose(fp), 0);
}

static uint64_t ino_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (uint64_t)st.st_ino;
}

/* root/PID/{stat,status,ns/pid}: state, start ticks, the innermost pid
 * (NSpid), the namespace file linked from ns_file (NULL: none). */
static void fake_proc(fake *fk, int pid, char state, uint64_t start, int inner,
                      const char *ns_file)
{
    char dir[160], path[200], text[512];
    snprintf(dir, sizeof dir, "%s/%d", fk->root, pid);
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/ns", dir);
    mkdir(path, 0700);
    /* a command name with ") " in it: the fields are read after the last ')' */
    snprintf(text, sizeof text,
             "%d (evil) T (x) %c 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %llu 100 200\n", pid,
             state, (unsigned long long)start);
    snprintf(path, sizeof path, "%s/stat", dir);
    put_file(path, text);
    snprintf(text, sizeof text, "Name:\tevil\nState:\t%c\nNSpid:\t%d\t%d\n", state, pid, inner);
    snprintf(path, sizeof path, "%s/status", dir);
    put_file(path, text);
    if (ns_file) {
        snprintf(path, sizeof path, "%s/ns/pid", dir);
        unlink(path);
        assert_int_equal(link(ns_file, path), 0);
    }
}

static int fake_setup(void **state)
{
    fake *fk = calloc(1, sizeof *fk);
    char path[200], self[32];
    assert_non_null(fk);
    snprintf(fk->root, sizeof fk->root, "/tmp/cuptop-proc.XXXXXX");
    assert_non_null(mkdtemp(fk->root));
    snprintf(path, sizeof path, "%s/sys", fk->root);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/sys/kernel", fk->root);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/sys/kernel/random", fk->root);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/sys/kernel/random/boot_id", fk->root);
    put_file(path, BOOT "\n");
    snprintf(path, sizeof path, "%s/ns-mine", fk->root);
    put_file(path, "");
    fk->my_ns = ino_of(path);
    snprintf(path, sizeof path, "%s/ns-other", fk->root);
    put_file(path, "");
    fk->other_ns = ino_of(path);
    /* self: this process, in "my" namespace; pid 1 visible */
    snprintf(path, sizeof path, "%s/ns-mine", fk->root);
    fake_proc(fk, (int)getpid(), 'R', 5, (int)getpid(), path);
    fake_proc(fk, 1, 'S', 1, 1, path);
    snprintf(path, sizeof path, "%s/self", fk->root);
    snprintf(self, sizeof self, "%d", (int)getpid());
    assert_int_equal(symlink(self, path), 0);
    model_proc_root(fk->root);
    *state = fk;
    return 0;
}

static int fake_teardown(void **state)
{
    fake *fk = *state;
    char cmd[128];
    model_proc_root(NULL);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fk->root);
    assert_int_equal(system(cmd), 0);
    free(fk);
    return 0;
}

/* A summary carrying only the identity. */
static model_summary ident(int pid, const char *boot, uint64_t start, uint64_t ns)
{
    model_summary s;
    memset(&s, 0, sizeof s);
    s.pid = pid;
    s.have_identity = true;
    snprintf(s.boot_id, sizeof s.boot_id, "%s", boot);
    s.start_ticks = start;
    s.pid_ns = ns;
    (void)gethostname(s.host, sizeof s.host - 1);
    return s;
}

/* ---- The judgement ------------------------------------------------------ */

static void test_liveness_rule(void **state)
{
    (void)state;
    static const struct {
        model_presence presence;
        char st;
        bool fresh;
        model_state want;
    } c[] = {
        /* a fresh heartbeat: running, whatever the lookup says ... */
        {MODEL_PROC_HERE, 'R', true, MODEL_STATE_RUNNING},
        {MODEL_PROC_HERE, 'T', true, MODEL_STATE_RUNNING},
        {MODEL_PROC_HIDDEN, 0, true, MODEL_STATE_RUNNING},
        {MODEL_PROC_ELSEWHERE, 0, true, MODEL_STATE_RUNNING},
        /* ... unless the process is provably gone */
        {MODEL_PROC_GONE, 0, true, MODEL_STATE_CRASHED},
        /* stale and still there: stopped (T, t) or not responding */
        {MODEL_PROC_HERE, 'T', false, MODEL_STATE_STOPPED},
        {MODEL_PROC_HERE, 't', false, MODEL_STATE_STOPPED},
        {MODEL_PROC_HERE, 'S', false, MODEL_STATE_NOT_RESPONDING},
        {MODEL_PROC_HERE, 'D', false, MODEL_STATE_NOT_RESPONDING},
        /* stale and not visible here: not responding, never crashed */
        {MODEL_PROC_HIDDEN, 0, false, MODEL_STATE_NOT_RESPONDING},
        /* stale and gone, or only the heartbeat tells: crashed */
        {MODEL_PROC_GONE, 0, false, MODEL_STATE_CRASHED},
        {MODEL_PROC_ELSEWHERE, 0, false, MODEL_STATE_CRASHED},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        model_proc p = {.presence = c[i].presence, .state = c[i].st};
        assert_int_equal(model_liveness(c[i].fresh, &p), c[i].want);
    }
    assert_true(model_state_live(MODEL_STATE_RUNNING));
    assert_true(model_state_live(MODEL_STATE_STOPPED));
    assert_true(model_state_live(MODEL_STATE_NOT_RESPONDING));
    assert_false(model_state_live(MODEL_STATE_CRASHED));
    assert_false(model_state_live(MODEL_STATE_ENDED));
    assert_string_equal(model_state_name(MODEL_STATE_STOPPED), "stopped");
    assert_string_equal(model_state_name(MODEL_STATE_NOT_RESPONDING), "not_responding");
}

/* ---- The lookup ---------------------------------------------------------- */

/* The reader's own PID namespace: the pid names it, the start time proves it. */
static void test_find_same_namespace(void **state)
{
    fake *fk = *state;
    model_proc p;
    fake_proc(fk, 4242, 'T', 777, 4242, NULL);
    model_summary s = ident(4242, BOOT, 777, fk->my_ns);
    model_proc_find(&s, &p);
    assert_int_equal(p.presence, MODEL_PROC_HERE);
    assert_int_equal(p.state, 'T');
    assert_int_equal(p.pid_here, 4242);

    s.start_ticks = 778;   /* the pid was reused by another process */
    model_proc_find(&s, &p);
    assert_int_equal(p.presence, MODEL_PROC_GONE);

    fake_proc(fk, 4243, 'Z', 900, 4243, NULL);   /* exited, not reaped */
    s = ident(4243, BOOT, 900, fk->my_ns);
    model_proc_find(&s, &p);
    assert_int_equal(p.presence, MODEL_PROC_GONE);

    s = ident(4299, BOOT, 900, fk->my_ns);       /* no such pid */
    model_proc_find(&s, &p);
    assert_int_equal(p.presence, MODEL_PROC_GONE);
}

/* Another PID namespace (a container, unshare --pid): found by start time
 * and innermost pid, whatever its pid here; the pid alone would name
 * another process (here pid 2 is a different one). */
static void test_find_other_namespace(void **state)
{
    fake *fk = *state;
    model_proc p;
    char other[200];
    snprintf(other, sizeof other, "%s/ns-other", fk->root);
    fake_proc(fk, 2, 'S', 3, 2, NULL);              /* this namespace's pid 2 */
    fake_proc(fk, 5001, 'T', 1234, 2, other);       /* its pid 2 is 5001 here */
    model_summary s = ident(2, BOOT, 1234, fk->other_ns);
    model_proc_find(&s, &p);
    assert_int_equal(p.presence, MODEL_PROC_HERE);
    assert_int_equal(p.state, 'T');
    assert_int_equal(p.pid_here, 5001);

    /* same start tick and inner pid, but seen in a third namespace: not it */
    s.pid_ns = fk->other_ns + 999;
    model_proc_find(&s, &p);
    assert_int_equal(p.presence, MODEL_PROC_HIDDEN);

    /* not found, and nothing of its namespace visible: cannot be checked */
    s = ident(2, BOOT, 99999, fk->other_ns + 999);
    model_proc_find(&s, &p);
    assert_int_equal(p.presence, MODEL_PROC_HIDDEN);

    /* not found, but another process of its namespace is visible here: it
     * would be too, so it is gone */
    s = ident(7, BOOT, 99999, fk->other_ns);
    model_proc_find(&s, &p);
    assert_int_equal(p.presence, MODEL_PROC_GONE);

    /* another kernel: only the heartbeat tells */
    s = ident(2, "00000000-0000-4000-8000-000000000000", 1234, fk->other_ns);
    model_proc_find(&s, &p);
    assert_int_equal(p.presence, MODEL_PROC_ELSEWHERE);

    /* the agent could not read its identity (no /proc there): same host
     * name, so it may be here, unseen */
    s = ident(2, "", 0, 0);
    model_proc_find(&s, &p);
    assert_int_equal(p.presence, MODEL_PROC_HIDDEN);
}

/* ---- model_summarize ------------------------------------------------------ */

typedef struct sess {
    char dir[64];
    cupstore_env *env;
    char *id;
} sess;

static void meta(sess *x, const char *key, const char *value)
{
    cupstore_txn *txn;
    assert_int_equal(cupstore_txn_begin(x->env, true, &txn), 0);
    assert_int_equal(cupstore_meta_put(txn, key, value), 0);
    assert_int_equal(cupstore_txn_commit(txn), 0);
}

/* A session of pid with 3 healthy rows whose last heartbeat is age_s old;
 * identity written unless boot is NULL (a store from before it). */
static void sess_make(sess *x, int pid, const char *boot, uint64_t start, uint64_t ns,
                      uint64_t age_s)
{
    char buf[64], host[64] = "";
    snprintf(x->dir, sizeof x->dir, "/tmp/cuptop-live.XXXXXX");
    assert_non_null(mkdtemp(x->dir));
    assert_int_equal(cupstore_session_create(&x->env, &x->id, x->dir, pid, NULL), 0);
    uint64_t now = (uint64_t)time(NULL), t0 = now - age_s - 3;
    snprintf(buf, sizeof buf, "%d", pid);
    meta(x, "pid", buf);
    (void)gethostname(host, sizeof host - 1);
    meta(x, "host", host);
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)(t0 * NS));
    meta(x, "start_ns", buf);
    if (boot) {
        meta(x, "boot_id", boot[0] ? boot : "unknown");
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)start);
        meta(x, "start_time", buf);
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)ns);
        meta(x, "pid_ns", buf);
    }
    cupstore_txn *txn;
    assert_int_equal(cupstore_txn_begin(x->env, true, &txn), 0);
    cupstore_epoch e = {.id = 1, .kinds = CUPSTORE_KINDS_DEFAULT, .start_ns = t0 * NS};
    assert_int_equal(cupstore_epoch_put(txn, &e), 0);
    for (unsigned i = 0; i < 3; i++) {
        cupstore_health h;
        memset(&h, 0, sizeof h);
        h.second = t0 + i + 1;
        h.heartbeat_ns = (t0 + i + 1) * NS;
        h.epoch = 1;
        h.kinds_enabled = CUPSTORE_KINDS_DEFAULT;
        h.buf_requested = h.buf_provided = h.buf_completed = h.buf_consumed = 2;
        h.records_by_kind[CUPSTORE_KIND_KERNEL] = 100;
        h.records_by_device[0] = 100;
        h.records_parsed = h.records_stored = 100;
        assert_int_equal(cupstore_health_put(txn, &h), 0);
    }
    assert_int_equal(cupstore_txn_commit(txn), 0);
}

static void sess_free(sess *x)
{
    char cmd[128];
    cupstore_env_close(x->env);
    free(x->id);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", x->dir);
    assert_int_equal(system(cmd), 0);
}

static const model_reason *reason_of(const model_summary *s, unsigned r)
{
    for (size_t i = 0; i < s->nreasons; i++)
        if (s->reasons[i].reason == r)
            return &s->reasons[i];
    return NULL;
}

static void judge(sess *x, model_summary *s)
{
    char *cause = NULL;
    assert_int_equal(model_summarize(x->env, 0, UINT64_MAX, s, &cause), 0);
    assert_null(cause);
}

/* SIGSTOP: a stale heartbeat, the same process there in state T. */
static void test_summary_stopped(void **state)
{
    fake *fk = *state;
    sess x;
    model_summary s;
    fake_proc(fk, 4242, 'T', 777, 4242, NULL);
    sess_make(&x, 4242, BOOT, 777, fk->my_ns, 2 * MODEL_STALE_SECONDS);
    judge(&x, &s);
    assert_int_equal(s.state, MODEL_STATE_STOPPED);
    assert_false(s.complete);                        /* live, unfinished */
    assert_null(reason_of(&s, MODEL_REASON_NO_FINAL));   /* not crashed */
    const model_reason *r = reason_of(&s, MODEL_REASON_NOT_RESPONDING);
    assert_non_null(r);
    assert_non_null(strstr(r->text, "stopped"));
    assert_non_null(strstr(r->text, "state T"));
    assert_int_equal(s.proc_state, 'T');
    assert_string_equal(model_reason_name(MODEL_REASON_NOT_RESPONDING), "not_responding");
    model_summary_free(&s);

    /* continued (SIGCONT): the heartbeat is fresh again: running, COMPLETE so far */
    fake_proc(fk, 4242, 'S', 777, 4242, NULL);
    sess_free(&x);
    sess_make(&x, 4242, BOOT, 777, fk->my_ns, 0);
    judge(&x, &s);
    assert_int_equal(s.state, MODEL_STATE_RUNNING);
    assert_true(s.complete);
    model_summary_free(&s);
    sess_free(&x);
}

/* Stale, the process there but not stopped: not responding. */
static void test_summary_not_responding(void **state)
{
    fake *fk = *state;
    sess x;
    model_summary s;
    fake_proc(fk, 4244, 'D', 800, 4244, NULL);
    sess_make(&x, 4244, BOOT, 800, fk->my_ns, 2 * MODEL_STALE_SECONDS);
    judge(&x, &s);
    assert_int_equal(s.state, MODEL_STATE_NOT_RESPONDING);
    assert_false(s.not_visible);
    assert_false(s.complete);
    assert_non_null(reason_of(&s, MODEL_REASON_NOT_RESPONDING));
    model_summary_free(&s);
    sess_free(&x);
}

/* Another PID namespace, nothing of it visible: running while the
 * heartbeat is fresh (the old rule called it crashed: kill(2, 0) asked
 * about another process), "not visible here" once stale. */
static void test_summary_hidden(void **state)
{
    fake *fk = *state;
    sess x;
    model_summary s;
    sess_make(&x, 2, BOOT, 55555, fk->other_ns + 999, 0);
    judge(&x, &s);
    assert_int_equal(s.state, MODEL_STATE_RUNNING);
    model_summary_free(&s);
    sess_free(&x);

    sess_make(&x, 2, BOOT, 55555, fk->other_ns + 999, 2 * MODEL_STALE_SECONDS);
    judge(&x, &s);
    assert_int_equal(s.state, MODEL_STATE_NOT_RESPONDING);
    assert_true(s.not_visible);
    const model_reason *r = reason_of(&s, MODEL_REASON_NOT_RESPONDING);
    assert_non_null(r);
    assert_non_null(strstr(r->text, "not responding (process not visible here)"));
    model_summary_free(&s);
    sess_free(&x);
}

/* Really gone (same boot, pid gone or reused): crashed at once, even with
 * a fresh heartbeat. */
static void test_summary_gone(void **state)
{
    fake *fk = *state;
    sess x;
    model_summary s;
    fake_proc(fk, 4250, 'S', 1000, 4250, NULL);
    sess_make(&x, 4250, BOOT, 999, fk->my_ns, 0);   /* start time differs */
    judge(&x, &s);
    assert_int_equal(s.state, MODEL_STATE_CRASHED);
    assert_non_null(reason_of(&s, MODEL_REASON_NO_FINAL));
    assert_false(s.complete);
    model_summary_free(&s);
    sess_free(&x);
}

/* A store from before the identity (no boot_id): the old rule, on the
 * real /proc: this host's pid gone is crashed; a stale heartbeat is
 * crashed; a fresh one of a live pid is running. */
static void test_summary_legacy(void **state)
{
    (void)state;
    sess x;
    model_summary s;
    model_proc_root(NULL);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0)
        _exit(0);
    assert_int_equal(waitpid(child, NULL, 0), child);   /* reaped: gone */
    sess_make(&x, (int)child, NULL, 0, 0, 0);
    judge(&x, &s);
    assert_false(s.have_identity);
    assert_int_equal(s.state, MODEL_STATE_CRASHED);
    model_summary_free(&s);
    sess_free(&x);

    sess_make(&x, (int)getpid(), NULL, 0, 0, 0);
    judge(&x, &s);
    assert_int_equal(s.state, MODEL_STATE_RUNNING);
    model_summary_free(&s);
    sess_free(&x);

    sess_make(&x, (int)getpid(), NULL, 0, 0, 2 * MODEL_STALE_SECONDS);
    judge(&x, &s);
    assert_int_equal(s.state, MODEL_STATE_CRASHED);
    model_summary_free(&s);
    sess_free(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_liveness_rule),
        cmocka_unit_test_setup_teardown(test_find_same_namespace, fake_setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_find_other_namespace, fake_setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_summary_stopped, fake_setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_summary_not_responding, fake_setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_summary_hidden, fake_setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_summary_gone, fake_setup, fake_teardown),
        cmocka_unit_test(test_summary_legacy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
