/*
 * model_stores.c - several stores read as one (issue 32: the stores of a
 * job written on N hosts, gathered afterwards).  A path names a store when
 * it holds sessions; a directory that holds none but has subdirectories
 * that do (HOST/ per host, as `rsync host:store/ gathered/HOST/` leaves
 * them) names each of those.  The same directory reached twice is read
 * once (its device and inode), so a store named both on its own and
 * through its parent is not counted twice.  A store that cannot be listed
 * stays in the set with its error: the front ends name it and serve the
 * others (DESIGN invariant 11).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model.h"

void model_stores_free(model_stores *ss)
{
    for (size_t i = 0; ss && i < ss->n; i++) {
        free(ss->v[i].dir);
        free(ss->v[i].label);
    }
    if (ss) {
        free(ss->v);
        memset(ss, 0, sizeof *ss);
    }
}

/* Add one store (dir is taken over); an already added directory is
 * dropped.  0 or ENOMEM. */
static int stores_push(model_stores *ss, char *dir, int err, size_t nsessions)
{
    struct stat st;
    bool have_st = stat(dir, &st) == 0;
    for (size_t i = 0; have_st && i < ss->n; i++)
        if (ss->v[i].have_id && ss->v[i].dev == (unsigned long)st.st_dev &&
            ss->v[i].ino == (unsigned long)st.st_ino) {
            free(dir);
            return 0;
        }
    model_store *p = realloc(ss->v, (ss->n + 1) * sizeof *p);
    if (!p) {
        free(dir);
        return ENOMEM;
    }
    ss->v = p;
    model_store *s = &p[ss->n];
    memset(s, 0, sizeof *s);
    s->dir = dir;
    if (!(s->label = strdup(dir))) {
        free(dir);
        return ENOMEM;
    }
    s->err = err;
    s->nsessions = nsessions;
    s->have_id = have_st;
    s->dev = have_st ? (unsigned long)st.st_dev : 0;
    s->ino = have_st ? (unsigned long)st.st_ino : 0;
    ss->n++;
    return 0;
}

/* How many sessions dir holds (0 when it cannot be listed: *err says). */
static size_t stores_count(const char *dir, int *err)
{
    char **ids = NULL;
    size_t n = 0;
    *err = cupstore_dir_sessions(dir, &ids, &n);
    cupstore_ids_free(ids, n);
    return *err ? 0 : n;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The subdirectories of dir (not hidden), sorted by name: malloc'ed
 * paths.  0, or errno. */
static int stores_subdirs(const char *dir, char ***out, size_t *n)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char **v = NULL;
    size_t cnt = 0;
    int rc = 0;
    *out = NULL;
    *n = 0;
    if (!d)
        return errno;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        struct stat st;
        char *p = NULL;
        if (de->d_name[0] == '.')
            continue;
        if (asprintf(&p, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/",
                     de->d_name) < 0) {
            rc = ENOMEM;
            break;
        }
        if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
            free(p);
            continue;
        }
        char **nv = realloc(v, (cnt + 1) * sizeof *nv);
        if (!nv) {
            free(p);
            rc = ENOMEM;
            break;
        }
        v = nv;
        v[cnt++] = p;
    }
    closedir(d);
    if (cnt)
        qsort(v, cnt, sizeof *v, name_cmp);
    *out = v;
    *n = cnt;
    return rc;
}

/* A directory of stores: each subdirectory that holds sessions, or cannot
 * be listed for a reason other than not being a store (its permissions:
 * it may be one).  *found: how many were added. */
static int stores_gathered(model_stores *ss, const char *path, size_t *found)
{
    char **subs;
    size_t n;
    int rc = stores_subdirs(path, &subs, &n);
    *found = 0;
    for (size_t i = 0; i < n; i++) {
        int err;
        size_t k = rc ? 0 : stores_count(subs[i], &err);
        if (rc == 0 && (k || err == CUPSTORE_EPERM)) {
            rc = stores_push(ss, subs[i], err, k);
            subs[i] = NULL;
            ++*found;
        }
        free(subs[i]);
    }
    free(subs);
    return rc;
}

int model_stores_add(model_stores *ss, const char *path)
{
    int err;
    size_t n = stores_count(path, &err);
    size_t before = ss->n;
    char *dir = strdup(path);
    if (!dir)
        return ENOMEM;
    if (!err && !n) {   /* no session of its own: gathered stores? */
        size_t found;
        int rc = stores_gathered(ss, path, &found);
        if (rc || found) {
            free(dir);
            ss->several = true;
            return rc;
        }
    }
    int rc = stores_push(ss, dir, err, n);
    if (rc == 0 && before > 0)
        ss->several = true;
    return rc;
}

/* Whether store dir holds session id (exactly, or as the unique prefix
 * of one): true when it does; *rc: 0, or why
 * the store cannot be listed (CUPSTORE_EINVAL: the prefix is ambiguous). */
static bool stores_holds(const char *dir, const char *id, int *rc)
{
    char **ids = NULL;
    size_t n = 0, hits = 0, idl = strlen(id);
    *rc = cupstore_dir_sessions(dir, &ids, &n);
    for (size_t i = 0; !*rc && i < n; i++) {
        if (strcmp(ids[i], id) == 0) {
            hits = 1;
            break;
        }
        hits += strncmp(ids[i], id, idl) == 0;
    }
    cupstore_ids_free(ids, n);
    if (hits > 1)
        *rc = CUPSTORE_EINVAL;   /* ambiguous within the store */
    return hits == 1;
}

int model_stores_find(const model_stores *ss, const char *id, size_t *ix, size_t *nfound)
{
    *nfound = 0;
    for (size_t i = 0; i < ss->n; i++) {
        int rc;
        if (ss->v[i].err)
            continue;
        bool here = stores_holds(ss->v[i].dir, id, &rc);
        if (rc == ENOMEM || rc == CUPSTORE_EINVAL)
            return rc;
        if (here && !(*nfound)++)
            *ix = i;
    }
    return *nfound == 1 ? 0 : *nfound ? CUPSTORE_EINVAL : CUPSTORE_ENOTFOUND;
}
