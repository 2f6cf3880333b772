/*
 * cupstore_guard.c - one damaged session stays one: reads under a guard.
 *
 * liblmdb trusts the pages it maps.  A damaged page can make it read past
 * the end of the file (SIGBUS), follow a wild offset (SIGSEGV) or trip one
 * of its own assertions (mdb_assert_fail, which then aborts).  A front end
 * that reads many sessions (sessions, check --all, the monitor, the
 * exporter) runs each session's reads in cupstore_guarded: such a fault
 * jumps back to the guard's frame (sigsetjmp/siglongjmp), which releases
 * what the reads held - the read and write transactions begun in the frame
 * (their cursors closed, LMDB's reader slot and this process' locks
 * given back) and the envs opened in it (unmapped) - and returns
 * CUPSTORE_EFAULT.  Heap memory the interrupted code had allocated is
 * lost; callers therefore do not read a faulted session again until its
 * data file changes (cupstore_session_stamp).
 *
 * Frames nest and belong to one thread (thread-local).  The signal handler
 * is the program's (cuptop's main installs it and calls
 * cupstore_guard_recover first); the store installs none, and the agent
 * never runs a guard, so inside the traced application nothing changes:
 * LMDB's assertion still aborts there as it always did.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cupstore_int.h"

struct cupstore_guard {
    sigjmp_buf jb;
    struct cupstore_guard *prev;     /* the enclosing frame (NULL: none) */
    cupstore_txn *txns;              /* begun in this frame, still open  */
    cupstore_env *envs;              /* opened in this frame, still open */
};

static _Thread_local struct cupstore_guard *guard_top;
/* What ended this thread's last guarded call ("SIGBUS", "LMDB assertion
 * ..."): written just before the jump, read after it. */
static _Thread_local char guard_what[200];
static void (*volatile guard_fatal)(const char *what);

/* ---- Resources taken on by the innermost frame ---------------------------- */

void cupstore_guard_env_opened(cupstore_env *env)
{
    struct cupstore_guard *g = guard_top;
    if (!g)
        return;
    env->guard = g;
    env->gprev = NULL;
    env->gnext = g->envs;
    if (g->envs)
        g->envs->gprev = env;
    g->envs = env;
}

void cupstore_guard_env_closing(cupstore_env *env)
{
    struct cupstore_guard *g = env->guard;
    if (!g)
        return;
    if (env->gprev)
        env->gprev->gnext = env->gnext;
    else
        g->envs = env->gnext;
    if (env->gnext)
        env->gnext->gprev = env->gprev;
    env->guard = NULL;
    env->gnext = env->gprev = NULL;
}

void cupstore_guard_txn_begun(cupstore_txn *txn)
{
    struct cupstore_guard *g = guard_top;
    if (!g)
        return;
    txn->guard = g;
    txn->gprev = NULL;
    txn->gnext = g->txns;
    if (g->txns)
        g->txns->gprev = txn;
    g->txns = txn;
}

void cupstore_guard_txn_ending(cupstore_txn *txn)
{
    struct cupstore_guard *g = txn->guard;
    if (!g)
        return;
    if (txn->gprev)
        txn->gprev->gnext = txn->gnext;
    else
        g->txns = txn->gnext;
    if (txn->gnext)
        txn->gnext->gprev = txn->gprev;
    txn->guard = NULL;
    txn->gnext = txn->gprev = NULL;
}

/* A frame that returned normally hands what is still open to the
 * enclosing frame (or lets it go: the caller keeps it, e.g. the exporter's
 * envs live from scrape to scrape). */
static void guard_hand_over(struct cupstore_guard *g)
{
    while (g->txns) {
        cupstore_txn *t = g->txns;
        cupstore_guard_txn_ending(t);
        if (g->prev) {
            struct cupstore_guard *save = guard_top;
            guard_top = g->prev;
            cupstore_guard_txn_begun(t);
            guard_top = save;
        }
    }
    while (g->envs) {
        cupstore_env *e = g->envs;
        cupstore_guard_env_closing(e);
        if (g->prev) {
            struct cupstore_guard *save = guard_top;
            guard_top = g->prev;
            cupstore_guard_env_opened(e);
            guard_top = save;
        }
    }
}

/* After a fault: end every txn of the frame, then close its envs. */
static void guard_release(struct cupstore_guard *g)
{
    while (g->txns) {
        cupstore_txn *t = g->txns;
        cupstore_guard_txn_ending(t);
        cupstore_txn_release(t);
    }
    while (g->envs) {
        cupstore_env *e = g->envs;
        cupstore_guard_env_closing(e); /* before close: it unlinks itself too */
        cupstore_env_close(e);
    }
}

/* ---- The guard ------------------------------------------------------------- */

int cupstore_guarded(cupstore_guarded_fn fn, void *arg)
{
    if (!fn)
        return CUPSTORE_EINVAL;
    /* On the heap: the frame's fields change between sigsetjmp and the
     * jump, and only the pointer (which does not) is read after it. */
    struct cupstore_guard *g = calloc(1, sizeof *g);
    if (!g)
        return ENOMEM;
    g->prev = guard_top;
    if (sigsetjmp(g->jb, 1) != 0) {
        guard_top = g->prev;
        guard_release(g);
        free(g);
        return CUPSTORE_EFAULT;
    }
    guard_top = g;
    int rc = fn(arg);
    guard_top = g->prev;
    guard_hand_over(g);
    free(g);
    return rc;
}

const char *cupstore_guard_last(void)
{
    return guard_what;
}

/* Async-signal-safe: no stdio, no locks; only this thread's frame. */
void cupstore_guard_recover(int sig)
{
    struct cupstore_guard *g = guard_top;
    if (!g)
        return;
    const char *name = sig == SIGBUS ? "read fault (SIGBUS)" : sig == SIGSEGV
                                                                  ? "memory fault (SIGSEGV)"
                                                                  : "fault";
    size_t n = strlen(name);
    memcpy(guard_what, name, n + 1);
    siglongjmp(g->jb, 1);
}

void cupstore_guard_set_fatal(void (*fn)(const char *what))
{
    guard_fatal = fn;
}

void cupstore_guard_mdb_assert(MDB_env *env, const char *msg)
{
    (void)env;
    struct cupstore_guard *g = guard_top;
    if (g) {
        snprintf(guard_what, sizeof guard_what, "LMDB assertion (%s)", msg ? msg : "?");
        siglongjmp(g->jb, 1);
    }
    void (*fatal)(const char *) = guard_fatal;
    if (fatal) {
        char what[sizeof guard_what];
        snprintf(what, sizeof what, "LMDB assertion (%s)", msg ? msg : "?");
        fatal(what);
    }
    /* no guard, no hook (the agent): LMDB aborts as it always did */
}

/* ---- Has a session's data file changed? ------------------------------------ */

int cupstore_session_stamp(const char *dir, const char *id, cupstore_stamp *out)
{
    if (!dir || !id || !out)
        return CUPSTORE_EINVAL;
    memset(out, 0, sizeof *out);
    char *sub = cupstore_path_join(dir, id), *data = sub ? cupstore_path_join(sub, "data.mdb")
                                                         : NULL;
    free(sub);
    if (!data)
        return ENOMEM;
    struct stat st;
    int rc = lstat(data, &st) == 0 ? 0 : errno;
    free(data);
    if (rc)
        return rc;
    out->dev = (uint64_t)st.st_dev;
    out->ino = (uint64_t)st.st_ino;
    out->size = (uint64_t)st.st_size;
    out->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
    return 0;
}

bool cupstore_stamp_equal(const cupstore_stamp *a, const cupstore_stamp *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_ns == b->mtime_ns;
}
