/*
 * cupstore_env.c - session environments: opening, creating and validating
 * sessions, their figures (usage, readers), closing.  Transactions, the
 * write lock, map growth and a fault's release are cupstore_txn.c's.
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

const char *const cupstore_db_names[CUPSTORE_DB_MAX] = {
    [CUPSTORE_DB_META] = "meta",       [CUPSTORE_DB_HEALTH] = "health",
    [CUPSTORE_DB_LOSS] = "loss",       [CUPSTORE_DB_CHUNKS] = "chunks",
    [CUPSTORE_DB_NAMES] = "names",     [CUPSTORE_DB_EPOCHS] = "epochs",
    [CUPSTORE_DB_CONTROL] = "control", [CUPSTORE_DB_MARKS] = "marks",
    [CUPSTORE_DB_NOTES] = "notes",     [CUPSTORE_DB_STEPS] = "steps",
    [CUPSTORE_DB_FINAL] = "final",     [CUPSTORE_DB_RANGES] = "ranges",
    [CUPSTORE_DB_LOST] = "lost",
};

int cupstore_mdb_err(int rc)
{
    switch (rc) {
    case MDB_SUCCESS:
        return 0;
    case MDB_KEYEXIST:
        return CUPSTORE_EEXIST;
    case MDB_NOTFOUND:
        return CUPSTORE_ENOTFOUND;
    case MDB_MAP_FULL:
        return CUPSTORE_EFULL;
    case MDB_MAP_RESIZED:
        return EAGAIN;
    case MDB_INVALID:
    case MDB_INCOMPATIBLE:
    case MDB_VERSION_MISMATCH:
        return CUPSTORE_ENOTSTORE;
    case MDB_DBS_FULL:
    case MDB_READERS_FULL:
    case MDB_TLS_FULL:
        return CUPSTORE_EBUSY;
    case MDB_TXN_FULL:
        return E2BIG;
    case MDB_BAD_RSLOT:
    case MDB_BAD_TXN:
    case MDB_BAD_VALSIZE:
    case MDB_BAD_DBI:
        return CUPSTORE_EINVAL;
    case MDB_PAGE_NOTFOUND:
    case MDB_CORRUPTED:
    case MDB_PANIC:
    case MDB_CURSOR_FULL:
    case MDB_PAGE_FULL:
        return CUPSTORE_ECORRUPT;
    default:
        return rc > 0 ? rc : CUPSTORE_ECORRUPT;
    }
}

/* Current map size.  Call with wlock or maplock held (it changes only
 * under both). */
uint64_t cupstore_map_current(cupstore_env *env)
{
    MDB_envinfo info;
    return mdb_env_info(env->mdb, &info) == 0 ? info.me_mapsize : 0;
}


static void env_free(cupstore_env *env)
{
    if (!env)
        return;
    cupstore_guard_env_closing(env);
    if (env->mdb)
        mdb_env_close(env->mdb);
    pthread_mutex_destroy(&env->wlock);
    pthread_rwlock_destroy(&env->maplock);
    cupstore_buf_free(&env->enc);
    cupstore_buf_free(&env->lz);
    free(env->path);
    free(env->id);
    free(env);
}

/* Open the named DBs and check magic and schema (or write them). */
static int env_init_dbs(cupstore_env *env, bool create)
{
    MDB_txn *txn;
    MDB_val k, v;
    int rc = mdb_txn_begin(env->mdb, NULL, env->rdonly ? MDB_RDONLY : 0, &txn);
    if (rc == MDB_MAP_RESIZED) {
        mdb_env_set_mapsize(env->mdb, 0);
        rc = mdb_txn_begin(env->mdb, NULL, env->rdonly ? MDB_RDONLY : 0, &txn);
    }
    if (rc)
        return cupstore_mdb_err(rc);
    for (int i = 0; i < CUPSTORE_DB_MAX; i++) {
        rc = mdb_dbi_open(txn, cupstore_db_names[i], create ? MDB_CREATE : 0, &env->dbi[i]);
        if (rc == MDB_NOTFOUND && i != CUPSTORE_DB_META) {
            rc = 0; /* optional in older/other writers' sessions */
            continue;
        }
        if (rc) {
            rc = rc == MDB_NOTFOUND || rc == MDB_INCOMPATIBLE ? CUPSTORE_ENOTSTORE
                                                               : cupstore_mdb_err(rc);
            goto fail;
        }
        env->have_db[i] = true;
    }
    if (create) {
        char ver[16];
        snprintf(ver, sizeof ver, "%u", CUPSTORE_SCHEMA_VERSION);
        k.mv_data = (void *)(uintptr_t) "magic", k.mv_size = 5;
        v.mv_data = (void *)(uintptr_t)CUPSTORE_MAGIC, v.mv_size = strlen(CUPSTORE_MAGIC);
        if ((rc = mdb_put(txn, env->dbi[CUPSTORE_DB_META], &k, &v, 0)) == 0) {
            k.mv_data = (void *)(uintptr_t) "schema", k.mv_size = 6;
            v.mv_data = ver, v.mv_size = strlen(ver);
            rc = mdb_put(txn, env->dbi[CUPSTORE_DB_META], &k, &v, 0);
        }
        if (rc) {
            rc = cupstore_mdb_err(rc);
            goto fail;
        }
    } else {
        k.mv_data = (void *)(uintptr_t) "magic", k.mv_size = 5;
        rc = mdb_get(txn, env->dbi[CUPSTORE_DB_META], &k, &v);
        if (rc || v.mv_size != strlen(CUPSTORE_MAGIC) ||
            memcmp(v.mv_data, CUPSTORE_MAGIC, v.mv_size) != 0) {
            rc = rc && rc != MDB_NOTFOUND ? cupstore_mdb_err(rc) : CUPSTORE_ENOTSTORE;
            goto fail;
        }
        k.mv_data = (void *)(uintptr_t) "schema", k.mv_size = 6;
        if ((rc = mdb_get(txn, env->dbi[CUPSTORE_DB_META], &k, &v)) != 0) {
            rc = rc == MDB_NOTFOUND ? CUPSTORE_ECORRUPT : cupstore_mdb_err(rc);
            goto fail;
        }
        char ver[16];
        if (v.mv_size == 0 || v.mv_size >= sizeof ver) {
            rc = CUPSTORE_ECORRUPT;
            goto fail;
        }
        memcpy(ver, v.mv_data, v.mv_size);
        ver[v.mv_size] = '\0';
        char *end;
        unsigned long schema = strtoul(ver, &end, 10);
        if (*end || schema == 0) {
            rc = CUPSTORE_ECORRUPT;
            goto fail;
        }
        if (schema > CUPSTORE_SCHEMA_VERSION) {
            rc = CUPSTORE_ENEWER;
            goto fail;
        }
    }
    /* Commit (also for read txns) so the DB handles stay in the env. */
    return cupstore_mdb_err(mdb_txn_commit(txn));
fail:
    mdb_txn_abort(txn);
    return rc;
}

int cupstore_env_open(cupstore_env **out, const char *path, unsigned flags,
                      const cupstore_open_opts *opts)
{
    bool create = flags & CUPSTORE_CREATE, rdonly = flags & CUPSTORE_RDONLY;
    cupstore_env *env;
    struct stat st;
    char *data = NULL;
    int rc;

    if (!out || !path || !*path || (create && rdonly))
        return CUPSTORE_EINVAL;
    *out = NULL;
    if (!(env = calloc(1, sizeof *env)))
        return ENOMEM;
    pthread_mutex_init(&env->wlock, NULL);
    pthread_rwlock_init(&env->maplock, NULL);
    env->rdonly = rdonly;
    env->sync_each = !create && !rdonly;
    env->no_compress = opts && opts->no_compress;
    env->map_max = opts && opts->map_max ? opts->map_max : CUPSTORE_MAP_MAX_DEFAULT;
    env->path = strdup(path);
    if (!env->path || !(data = cupstore_path_join(path, "data.mdb"))) {
        rc = ENOMEM;
        goto fail;
    }
    const char *slash = strrchr(env->path, '/');
    while (slash && slash[1] == '\0' && slash > env->path) { /* trailing '/' */
        const char *s = slash - 1;
        while (s > env->path && *s != '/')
            s--;
        slash = *s == '/' ? s : NULL;
    }
    env->id = strdup(slash ? slash + 1 : env->path);
    if (!env->id) {
        rc = ENOMEM;
        goto fail;
    }
    char *t = strchr(env->id, '/');
    if (t)
        *t = '\0';

    if (create) {
        if (mkdir(path, 0700) != 0 && errno != EEXIST) {
            rc = errno;
            goto fail;
        }
        if (stat(data, &st) == 0) {
            rc = CUPSTORE_EEXIST;
            goto fail;
        }
    } else {
        if (stat(path, &st) != 0) {
            rc = errno == ENOENT ? CUPSTORE_ENOTFOUND : errno;
            goto fail;
        }
        if (!S_ISDIR(st.st_mode)) {
            rc = CUPSTORE_ENOTSTORE;
            goto fail;
        }
        if ((rc = cupstore_file_check(data)) != 0)
            goto fail;
        char *lock = cupstore_path_join(path, "lock.mdb");
        rc = lock ? cupstore_lockfile_check(lock) : ENOMEM;
        free(lock);
        if (rc)
            goto fail;
    }

    if ((rc = mdb_env_create(&env->mdb)) != 0) {
        rc = cupstore_mdb_err(rc);
        goto fail;
    }
    /* LMDB's assertions (a damaged page it trips over) go through the
     * guard: a read-fault in a front end, abort() as before in the agent. */
    mdb_env_set_assert(env->mdb, cupstore_guard_mdb_assert);
    mdb_env_set_maxdbs(env->mdb, CUPSTORE_MAXDBS);
    mdb_env_set_maxreaders(env->mdb, CUPSTORE_MAXREADERS);
    if (create) {
        uint64_t init = opts && opts->map_initial ? opts->map_initial : CUPSTORE_MAP_DEFAULT;
        if (init > env->map_max)
            init = env->map_max;
        mdb_env_set_mapsize(env->mdb, (size_t)init);
    }
    unsigned mflags = MDB_NOTLS | MDB_NORDAHEAD;
    if (rdonly)
        mflags |= MDB_RDONLY;
    else if (!env->sync_each)
        mflags |= MDB_NOSYNC | MDB_NOMETASYNC;
    if ((rc = mdb_env_open(env->mdb, path, mflags, 0600)) != 0) {
        rc = rc == MDB_INVALID ? CUPSTORE_ENOTSTORE : cupstore_mdb_err(rc);
        goto fail;
    }
    /* LMDB leaves its data file inheritable (its lock file and second
     * data descriptor are close-on-exec): a program the process execs
     * must not inherit the store */
    mdb_filehandle_t dfd;
    if (mdb_env_get_fd(env->mdb, &dfd) == 0 && dfd >= 0) {
        int fl = fcntl(dfd, F_GETFD);
        if (fl >= 0)
            (void)fcntl(dfd, F_SETFD, fl | FD_CLOEXEC);
    }
    uint64_t cur = cupstore_map_current(env);
    if (env->map_max < cur)
        env->map_max = cur;
    cupstore_guard_env_opened(env);
    if ((rc = env_init_dbs(env, create)) != 0)
        goto fail;
    free(data);
    *out = env;
    return 0;
fail:
    free(data);
    env_free(env);
    return rc;
}

/* Exact id, else the unique session whose id starts with id. */
static int session_find(const char *dir, const char *id, char **path)
{
    char **ids;
    size_t n, hit = 0, nhit = 0;
    struct stat st;
    int rc;

    *path = NULL;
    if (!dir || !id || !*id || strchr(id, '/') || strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
        return CUPSTORE_EINVAL;
    if ((rc = cupstore_dir_check(dir)) != 0)
        return rc == ENOENT ? CUPSTORE_ENOTFOUND : rc;
    char *p = cupstore_path_join(dir, id);
    if (!p)
        return ENOMEM;
    if (stat(p, &st) == 0) {
        *path = p;
        return 0;
    }
    free(p);
    if ((rc = cupstore_dir_sessions(dir, &ids, &n)) != 0)
        return rc == ENOENT ? CUPSTORE_ENOTFOUND : rc;
    size_t idl = strlen(id);
    for (size_t i = 0; i < n; i++) {
        if (strncmp(ids[i], id, idl) == 0) {
            hit = i;
            nhit++;
        }
    }
    if (nhit == 1)
        *path = cupstore_path_join(dir, ids[hit]);
    cupstore_ids_free(ids, n);
    if (nhit == 0)
        return CUPSTORE_ENOTFOUND;
    if (nhit > 1)
        return CUPSTORE_EINVAL;
    return *path ? 0 : ENOMEM;
}

int cupstore_session_open(cupstore_env **out, const char *dir, const char *id, unsigned flags)
{
    char *path;
    if (!out || (flags & CUPSTORE_CREATE))
        return CUPSTORE_EINVAL;
    *out = NULL;
    int rc = session_find(dir, id, &path);
    if (rc)
        return rc;
    rc = cupstore_env_open(out, path, flags, NULL);
    free(path);
    return rc;
}

int cupstore_session_create(cupstore_env **out, char **id, const char *dir, int pid,
                            const cupstore_open_opts *opts)
{
    char name[64], tmpname[80];
    struct tm tm;
    time_t now = time(NULL);
    char *path = NULL, *tmp = NULL;
    int rc;

    if (!out)
        return CUPSTORE_EINVAL;
    *out = NULL;
    if (id)
        *id = NULL;
    if ((rc = cupstore_dir_prepare(dir)) != 0)
        return rc;
    gmtime_r(&now, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);
    /* Reserve the id with mkdir, build the environment in a hidden
     * directory, then rename it over the (empty) reservation: readers
     * never see a session without its magic. */
    for (unsigned n = 1;; n++) {
        if (n == 1)
            snprintf(name, sizeof name, "%s-%d", stamp, pid < 0 ? 0 : pid);
        else
            snprintf(name, sizeof name, "%s-%d-%u", stamp, pid < 0 ? 0 : pid, n);
        free(path);
        if (!(path = cupstore_path_join(dir, name)))
            return ENOMEM;
        if (mkdir(path, 0700) == 0)
            break;
        if (errno != EEXIST || n >= 10000) {
            rc = errno;
            free(path);
            return rc;
        }
    }
    snprintf(tmpname, sizeof tmpname, ".%s.new", name);
    if (!(tmp = cupstore_path_join(dir, tmpname))) {
        rc = ENOMEM;
        goto fail;
    }
    if ((rc = cupstore_env_open(out, tmp, CUPSTORE_CREATE, opts)) != 0)
        goto fail;
    if (rename(tmp, path) != 0) {
        rc = errno;
        cupstore_env_close(*out);
        *out = NULL;
        goto fail;
    }
    free((*out)->path);
    free((*out)->id);
    (*out)->path = path;
    (*out)->id = strdup(name);
    path = NULL;
    if (!(*out)->id) {
        cupstore_env_close(*out);
        *out = NULL;
        free(tmp);
        return ENOMEM;
    }
    if (id && !(*id = strdup(name))) {
        cupstore_env_close(*out);
        *out = NULL;
        free(tmp);
        return ENOMEM;
    }
    free(tmp);
    return 0;
fail:
    if (tmp) {
        char *f = cupstore_path_join(tmp, "data.mdb");
        if (f)
            unlink(f), free(f);
        if ((f = cupstore_path_join(tmp, "lock.mdb")))
            unlink(f), free(f);
        rmdir(tmp);
    }
    if (path)
        rmdir(path);
    free(path);
    free(tmp);
    return rc;
}

const char *cupstore_env_id(const cupstore_env *env)
{
    return env ? env->id : NULL;
}

int cupstore_env_sync(cupstore_env *env)
{
    if (!env)
        return CUPSTORE_EINVAL;
    if (env->rdonly)
        return 0;
    if (atomic_load(&env->dead))
        return CUPSTORE_EFAULT;
    return cupstore_mdb_err(mdb_env_sync(env->mdb, 1));
}

int cupstore_env_reader_check(cupstore_env *env, int *cleared)
{
    int dead = 0;
    if (cleared)
        *cleared = 0;
    if (!env)
        return CUPSTORE_EINVAL;
    if (atomic_load(&env->dead))
        return CUPSTORE_EFAULT;
    int rc = mdb_reader_check(env->mdb, &dead);
    if (rc)
        return cupstore_mdb_err(rc);
    if (cleared)
        *cleared = dead;
    return 0;
}

int cupstore_env_usage(cupstore_env *env, uint64_t *used, uint64_t *mapsize)
{
    MDB_envinfo info;
    MDB_stat st;
    if (!env)
        return CUPSTORE_EINVAL;
    pthread_rwlock_rdlock(&env->maplock);
    if (atomic_load(&env->dead)) {
        pthread_rwlock_unlock(&env->maplock);
        return CUPSTORE_EFAULT;
    }
    int rc = mdb_env_info(env->mdb, &info);
    if (rc == 0)
        rc = mdb_env_stat(env->mdb, &st);
    pthread_rwlock_unlock(&env->maplock);
    if (rc)
        return cupstore_mdb_err(rc);
    if (used)
        *used = ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
    if (mapsize)
        *mapsize = info.me_mapsize;
    return 0;
}

void cupstore_env_close(cupstore_env *env)
{
    if (env && atomic_load(&env->dead))
        return;   /* LMDB's close would touch the faulting mappings: leaked */
    env_free(env);
}
