/*
 * cupstore_txn.c - transactions on a session environment: serialised write
 * transactions (the write lock with its holder recorded, the map lock that
 * keeps this process's readers out while the map is remapped), map growth
 * on MDB_MAP_FULL and adoption of a map grown by another process, the one
 * write helper (cupstore_write), puts, gets and cursors, and what a fault
 * gives back (cupstore_env_fault).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cupstore_int.h"

/* How long map remapping waits for this process's read txns to end. */
#define REMAP_WAIT_S 2

/* wlock with its holder recorded (cupstore_env_fault gives it back). */
static void wlock_take(cupstore_env *env)
{
    pthread_mutex_lock(&env->wlock);
    env->wlock_owner = pthread_self();
    env->wlock_held = true;
}

static bool wlock_try(cupstore_env *env)
{
    if (pthread_mutex_trylock(&env->wlock) != 0)
        return false;
    env->wlock_owner = pthread_self();
    env->wlock_held = true;
    return true;
}

static void wlock_drop(cupstore_env *env)
{
    env->wlock_held = false;
    pthread_mutex_unlock(&env->wlock);
}

/* Timed exclusive hold of maplock: no read txn of this process is live. */
static int maplock_exclusive(cupstore_env *env)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += REMAP_WAIT_S;
    int rc = pthread_rwlock_timedwrlock(&env->maplock, &ts);
    if (rc == 0) {
        env->maplock_writer = pthread_self();
        env->maplock_wr_held = true;
    }
    return rc == 0 ? 0 : rc == ETIMEDOUT ? CUPSTORE_EBUSY : rc;
}

static void maplock_exclusive_drop(cupstore_env *env)
{
    env->maplock_wr_held = false;
    pthread_rwlock_unlock(&env->maplock);
}

/* Adopt a map size grown by another process (MDB_MAP_RESIZED).  Called
 * with wlock held: LMDB refuses to remap while this process has a write
 * txn, and maplock keeps this process's read txns out. */
static int map_adopt(cupstore_env *env)
{
    int rc = maplock_exclusive(env);
    if (rc)
        return rc;
    rc = cupstore_mdb_err(mdb_env_set_mapsize(env->mdb, 0));
    maplock_exclusive_drop(env);
    return rc;
}

/* Grow the map (doubling, up to map_max).  Called with wlock held and no
 * write txn open.  Returns EAGAIN (grown: retry) or CUPSTORE_EFULL. */
static int map_grow(cupstore_env *env)
{
    uint64_t cur = cupstore_map_current(env);
    if (cur >= env->map_max) {
        env->grow_pending = false;
        return CUPSTORE_EFULL;
    }
    uint64_t want = cur * 2;
    if (want > env->map_max || want < cur)
        want = env->map_max;
    int rc = maplock_exclusive(env);
    if (rc) {
        env->grow_pending = true; /* readers busy: grow at the next begin */
        return EAGAIN;
    }
    rc = mdb_env_set_mapsize(env->mdb, (size_t)want);
    maplock_exclusive_drop(env);
    env->grow_pending = false;
    return rc == 0 ? EAGAIN : cupstore_mdb_err(rc);
}

void cupstore_env_fault(cupstore_env *env)
{
    if (!env)
        return;
    /* Set first: a thread that takes a lock after this sees it (every
     * entry checks it under the lock it takes), so nothing enters LMDB
     * on this env again.  Then give back what this thread held when its
     * access faulted: the waiters wake, see the flag and return. */
    atomic_store(&env->dead, true);
    if (env->maplock_wr_held && pthread_equal(env->maplock_writer, pthread_self()))
        maplock_exclusive_drop(env);
    if (env->wlock_held && pthread_equal(env->wlock_owner, pthread_self()))
        wlock_drop(env);
}

bool cupstore_env_faulted(const cupstore_env *env)
{
    return env && atomic_load(&env->dead);
}

/* ---- Transactions ------------------------------------------------------ */

int cupstore_txn_begin(cupstore_env *env, bool write, cupstore_txn **out)
{
    cupstore_txn *txn;
    int rc;

    if (!env || !out)
        return CUPSTORE_EINVAL;
    *out = NULL;
    if (write && env->rdonly)
        return EACCES;
    if (!(txn = calloc(1, sizeof *txn)))
        return ENOMEM;
    txn->env = env;
    txn->write = write;
    for (int attempt = 0;; attempt++) {
        if (write) {
            wlock_take(env);
            if (atomic_load(&env->dead)) {   /* checked under the lock: see env_fault */
                wlock_drop(env);
                rc = CUPSTORE_EFAULT;
                break;
            }
            if (env->grow_pending) /* at the cap: this txn may still fit */
                (void)map_grow(env);
            rc = mdb_txn_begin(env->mdb, NULL, 0, &txn->mdb);
            if (rc)
                wlock_drop(env);
        } else {
            pthread_rwlock_rdlock(&env->maplock);
            if (atomic_load(&env->dead)) {
                pthread_rwlock_unlock(&env->maplock);
                rc = CUPSTORE_EFAULT;
                break;
            }
            rc = mdb_txn_begin(env->mdb, NULL, MDB_RDONLY, &txn->mdb);
            if (rc)
                pthread_rwlock_unlock(&env->maplock);
        }
        if (rc != MDB_MAP_RESIZED || attempt >= 3) {
            rc = rc == MDB_MAP_RESIZED ? EAGAIN : cupstore_mdb_err(rc);
            break;
        }
        if (write) {
            wlock_take(env);
        } else if (!wlock_try(env)) {
            /* a write txn of this process is open (maybe this thread's):
             * LMDB cannot remap now; the caller retries */
            rc = EAGAIN;
            break;
        }
        rc = map_adopt(env); /* already a cupstore code */
        wlock_drop(env);
        if (rc)
            break;
    }
    if (rc) {
        free(txn);
        return rc;
    }
    cupstore_guard_txn_begun(txn);
    *out = txn;
    return 0;
}

/* Close the cursors a txn still has open (before it ends). */
static void txn_cursors_close(cupstore_txn *txn)
{
    for (int i = 0; i < CUPSTORE_TXN_CURSORS; i++) {
        if (txn->cursors[i])
            mdb_cursor_close(txn->cursors[i]);
        txn->cursors[i] = NULL;
    }
}

void cupstore_txn_release(cupstore_txn *txn)
{
    cupstore_env *env = txn->env;
    txn_cursors_close(txn);
    mdb_txn_abort(txn->mdb);
    if (txn->write)
        pthread_mutex_unlock(&env->wlock);
    else
        pthread_rwlock_unlock(&env->maplock);
    free(txn);
}

/* End a write txn whose puts failed; grow the map if it was full. */
static int txn_end_failed(cupstore_txn *txn)
{
    cupstore_env *env = txn->env;
    int rc = txn->failed;
    cupstore_guard_txn_ending(txn);
    txn_cursors_close(txn);
    mdb_txn_abort(txn->mdb);
    if (txn->map_full)
        rc = map_grow(env);
    wlock_drop(env);
    free(txn);
    return rc;
}

int cupstore_txn_commit(cupstore_txn *txn)
{
    if (!txn)
        return CUPSTORE_EINVAL;
    cupstore_env *env = txn->env;
    int rc;
    if (!txn->write) {
        cupstore_guard_txn_ending(txn);
        txn_cursors_close(txn);
        mdb_txn_abort(txn->mdb);
        pthread_rwlock_unlock(&env->maplock);
        free(txn);
        return 0;
    }
    if (txn->failed)
        return txn_end_failed(txn);
    cupstore_guard_txn_ending(txn);
    txn_cursors_close(txn);
    rc = mdb_txn_commit(txn->mdb);
    if (rc == MDB_MAP_FULL)
        rc = map_grow(env);
    else
        rc = cupstore_mdb_err(rc);
    wlock_drop(env);
    free(txn);
    return rc;
}

void cupstore_txn_abort(cupstore_txn *txn)
{
    if (!txn)
        return;
    if (txn->write) {
        (void)txn_end_failed(txn);
        return;
    }
    cupstore_guard_txn_ending(txn);
    txn_cursors_close(txn);
    mdb_txn_abort(txn->mdb);
    pthread_rwlock_unlock(&txn->env->maplock);
    free(txn);
}

int cupstore_write(cupstore_env *env, cupstore_write_fn fn, void *arg, unsigned attempts)
{
    if (!env || !fn)
        return CUPSTORE_EINVAL;
    int rc = 0;
    for (unsigned a = 0; a < (attempts ? attempts : CUPSTORE_WRITE_ATTEMPTS); a++) {
        cupstore_txn *txn;
        rc = cupstore_txn_begin(env, true, &txn);
        if (rc == 0) {
            rc = fn(txn, arg);
            if (rc == 0)
                rc = cupstore_txn_commit(txn);
            else
                cupstore_txn_abort(txn); /* grows the map when it was full */
        }
        if (rc != EAGAIN && rc != CUPSTORE_EBUSY)
            break;
    }
    return rc;
}

int cupstore_txn_fail(cupstore_txn *txn, int mdbrc)
{
    if (mdbrc == MDB_MAP_FULL) {
        txn->map_full = true;
        /* write txn: we hold wlock, so the size is stable */
        txn->failed = cupstore_map_current(txn->env) < txn->env->map_max ? EAGAIN : CUPSTORE_EFULL;
    } else if (!txn->failed) {
        txn->failed = cupstore_mdb_err(mdbrc);
    }
    return txn->failed;
}

int cupstore_txn_writable(cupstore_txn *txn)
{
    if (!txn)
        return CUPSTORE_EINVAL;
    if (!txn->write)
        return EACCES;
    return txn->failed;
}

static int db_check(cupstore_txn *txn, int db)
{
    if (!txn)
        return CUPSTORE_EINVAL;
    if (!txn->env->have_db[db])
        return CUPSTORE_ENOTFOUND;
    return 0;
}

int cupstore_put(cupstore_txn *txn, int db, const void *k, size_t kl, const void *v, size_t vl,
                 unsigned flags)
{
    int rc = cupstore_txn_writable(txn);
    if (rc)
        return rc;
    if (!txn->env->have_db[db])
        return CUPSTORE_ENOTSTORE;
    MDB_val key = {kl, (void *)(uintptr_t)k}, val = {vl, (void *)(uintptr_t)v};
    rc = mdb_put(txn->mdb, txn->env->dbi[db], &key, &val, flags);
    if (rc == 0)
        return 0;
    if (rc == MDB_KEYEXIST)
        return CUPSTORE_EEXIST;
    return cupstore_txn_fail(txn, rc);
}

int cupstore_get(cupstore_txn *txn, int db, const void *k, size_t kl, MDB_val *v)
{
    int rc = db_check(txn, db);
    if (rc)
        return rc;
    MDB_val key = {kl, (void *)(uintptr_t)k};
    return cupstore_mdb_err(mdb_get(txn->mdb, txn->env->dbi[db], &key, v));
}

int cupstore_cursor(cupstore_txn *txn, int db, MDB_cursor **cur)
{
    int rc = db_check(txn, db);
    if (rc)
        return rc;
    if ((rc = cupstore_mdb_err(mdb_cursor_open(txn->mdb, txn->env->dbi[db], cur))) != 0)
        return rc;
    for (int i = 0; i < CUPSTORE_TXN_CURSORS; i++) {
        if (!txn->cursors[i]) {
            txn->cursors[i] = *cur;
            break;
        }
    }
    return 0;
}

void cupstore_cursor_close(cupstore_txn *txn, MDB_cursor *cur)
{
    if (!cur)
        return;
    for (int i = 0; txn && i < CUPSTORE_TXN_CURSORS; i++)
        if (txn->cursors[i] == cur)
            txn->cursors[i] = NULL;
    mdb_cursor_close(cur);
}
