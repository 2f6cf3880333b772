/*
 * cupstore_dir.c - the store directory: resolving, preparing (0700,
 * ownership) and listing sessions.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cupstore_int.h"

static char *path_join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *p = malloc(la + lb + 2);
    if (!p)
        return NULL;
    memcpy(p, a, la);
    p[la] = '/';
    memcpy(p + la + 1, b, lb + 1);
    return p;
}

int cupstore_dir_resolve(const char *explicit_dir, char **out)
{
    const char *e;
    char *p;

    if (!out)
        return CUPSTORE_EINVAL;
    *out = NULL;
    if (explicit_dir && *explicit_dir)
        p = strdup(explicit_dir);
    else if ((e = getenv("CUPTOP_STORE")) && *e)
        p = strdup(e);
    else if ((e = getenv("XDG_STATE_HOME")) && *e == '/')
        p = path_join(e, "cuptop");
    else {
        const char *home = getenv("HOME");
        if (!home || !*home) {
            struct passwd *pw = getpwuid(getuid());
            home = pw ? pw->pw_dir : NULL;
        }
        if (!home || !*home)
            return CUPSTORE_EINVAL;
        p = path_join(home, ".local/state/cuptop");
    }
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

/* Owned by us and not writable by group or others. */
static int dir_check(const struct stat *st)
{
    if (!S_ISDIR(st->st_mode))
        return ENOTDIR;
    if (st->st_uid != geteuid() || (st->st_mode & (S_IWGRP | S_IWOTH)))
        return CUPSTORE_EPERM;
    return 0;
}

int cupstore_dir_check(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return errno;
    return dir_check(&st);
}

int cupstore_dir_prepare(const char *dir)
{
    struct stat st;
    char *p;
    int rc = 0;

    if (!dir || !*dir)
        return CUPSTORE_EINVAL;
    if (stat(dir, &st) == 0)
        return dir_check(&st);
    if (errno != ENOENT)
        return errno;
    if (!(p = strdup(dir)))
        return ENOMEM;
    /* mkdir -p: create each missing component with 0700. */
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST) {
            rc = errno;
            break;
        }
        *s = c;
        if (c == '\0')
            break;
    }
    free(p);
    if (rc)
        return rc;
    if (stat(dir, &st) != 0)
        return errno;
    if (S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 0777) != 0700 &&
        chmod(dir, 0700) == 0)
        st.st_mode = (st.st_mode & ~0777u) | 0700;
    return dir_check(&st);
}

/* "YYYYmmddTHHMMSS-PID" with an optional "-N" suffix. */
bool cupstore_id_valid(const char *s)
{
    for (int i = 0; i < 15; i++) {
        if (i == 8 ? s[i] != 'T' : (s[i] < '0' || s[i] > '9'))
            return false;
    }
    s += 15;
    for (int part = 0; part < 2; part++) {
        if (*s != '-')
            return part == 1 && *s == '\0';
        s++;
        if (*s < '0' || *s > '9')
            return false;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == '\0';
}

bool cupstore_job_valid(const char *s)
{
    size_t n = 0;
    if (!s)
        return false;
    for (; s[n]; n++) {
        unsigned char c = (unsigned char)s[n];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  strchr("._:@+-", c) != NULL;
        if (!ok || n >= CUPSTORE_JOB_MAX)
            return false;
    }
    return n > 0;
}

static int id_cmp(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    char *ex, *ey;
    int c = strncmp(x, y, 15);
    if (c)
        return c;
    unsigned long long px = strtoull(x + 16, &ex, 10);
    unsigned long long py = strtoull(y + 16, &ey, 10);
    if (px != py)
        return px < py ? -1 : 1;
    unsigned long long sx = *ex ? strtoull(ex + 1, NULL, 10) : 1;
    unsigned long long sy = *ey ? strtoull(ey + 1, NULL, 10) : 1;
    return sx < sy ? -1 : sx > sy;
}

int cupstore_dir_sessions(const char *dir, char ***ids, size_t *n)
{
    struct stat st;
    DIR *d;
    struct dirent *de;
    char **v = NULL;
    size_t cnt = 0, cap = 0;
    int rc = 0;

    if (!dir || !ids || !n)
        return CUPSTORE_EINVAL;
    *ids = NULL;
    *n = 0;
    if ((rc = cupstore_dir_check(dir)) != 0)
        return rc;
    if (!(d = opendir(dir)))
        return errno;
    while ((de = readdir(d)) != NULL) {
        if (!cupstore_id_valid(de->d_name))
            continue;
        /* A session is a directory with a data file (a directory being
         * created is renamed into place only once it has one).  Whatever
         * the data file is (a FIFO, a directory, a link to a device), it
         * is listed: opening it says why it cannot be read, and a view of
         * the store names it instead of leaving it out in silence. */
        char *sub = path_join(dir, de->d_name), *data = NULL;
        if (sub)
            data = path_join(sub, "data.mdb");
        free(sub);
        if (!data) {
            rc = ENOMEM;
            break;
        }
        bool ok = lstat(data, &st) == 0;
        free(data);
        if (!ok)
            continue;
        if (cnt == cap) {
            size_t nc = cap ? cap * 2 : 16;
            char **nv = realloc(v, nc * sizeof *nv);
            if (!nv) {
                rc = ENOMEM;
                break;
            }
            v = nv;
            cap = nc;
        }
        if (!(v[cnt] = strdup(de->d_name))) {
            rc = ENOMEM;
            break;
        }
        cnt++;
    }
    closedir(d);
    if (rc) {
        cupstore_ids_free(v, cnt);
        return rc;
    }
    if (cnt)
        qsort(v, cnt, sizeof *v, id_cmp);
    *ids = v;
    *n = cnt;
    return 0;
}

void cupstore_ids_free(char **ids, size_t n)
{
    if (!ids)
        return;
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

char *cupstore_path_join(const char *a, const char *b)
{
    return path_join(a, b);
}
