/*
 * store_test.h - helpers shared by the store's cmocka tests: a fresh
 * mkdtemp() store per fixture, recursive removal, record generators.
 */
#ifndef STORE_TEST_H
#define STORE_TEST_H

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cupstore.h"

/* Per-test state: a fresh store directory. */
typedef struct st_fix {
    char dir[64];
} st_fix;

static inline void st_rmrf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *de;
        while (d && (de = readdir(d)) != NULL) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            char sub[4096];
            int w = snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
            if (w > 0 && (size_t)w < sizeof sub)
                st_rmrf(sub);
        }
        if (d)
            closedir(d);
        chmod(path, 0700);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static inline int st_setup(void **state)
{
    st_fix *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    const char *tmp = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/cupstore-XXXXXX", tmp && strlen(tmp) < 40 ? tmp : "/tmp");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static inline int st_teardown(void **state)
{
    st_fix *f = *state;
    st_rmrf(f->dir);
    free(f);
    return 0;
}

/* Deterministic PRNG (xorshift64*). */
static inline uint64_t st_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 2685821657736338717ull;
}

/* A plausible record of kind k with values drawn from seed. */
static inline void st_record(cupstore_record *r, unsigned k, uint64_t *seed, uint64_t t0)
{
    memset(r, 0, sizeof *r);
    r->kind = (uint8_t)k;
    r->device = k == CUPSTORE_KIND_RUNTIME || k == CUPSTORE_KIND_DRIVER
                    ? CUPSTORE_DEVICE_NONE
                    : (uint16_t)(st_rand(seed) % 8);
    r->context = 1 + (uint32_t)(st_rand(seed) % 3);
    r->stream = (uint32_t)(st_rand(seed) % 8) + 7;
    r->correlation = (uint32_t)st_rand(seed);
    r->start_ns = t0 + st_rand(seed) % 1000000000ull;
    r->end_ns = r->start_ns + st_rand(seed) % 50000;
    r->name_id = (uint32_t)(st_rand(seed) % 300);
    r->pid = 4242;
    r->tid = 4243 + (uint32_t)(st_rand(seed) % 4);
    r->cbid = (uint32_t)(st_rand(seed) % 400);
    r->aux = (uint32_t)(st_rand(seed) % 16);
    r->bytes = st_rand(seed) % (1ull << 40);
    for (int i = 0; i < 3; i++) {
        r->grid[i] = (uint32_t)(st_rand(seed) % 65536);
        r->block[i] = (uint32_t)(st_rand(seed) % 1024);
    }
    r->flags = (uint8_t)(st_rand(seed) % 4);
}

static inline void st_assert_record_eq(const cupstore_record *a, const cupstore_record *b)
{
    assert_int_equal(a->kind, b->kind);
    assert_int_equal(a->flags, b->flags);
    assert_int_equal(a->device, b->device);
    assert_int_equal(a->context, b->context);
    assert_int_equal(a->stream, b->stream);
    assert_int_equal(a->correlation, b->correlation);
    assert_int_equal(a->start_ns, b->start_ns);
    assert_int_equal(a->end_ns, b->end_ns);
    assert_int_equal(a->name_id, b->name_id);
    assert_int_equal(a->pid, b->pid);
    assert_int_equal(a->tid, b->tid);
    assert_int_equal(a->cbid, b->cbid);
    assert_int_equal(a->aux, b->aux);
    assert_int_equal(a->bytes, b->bytes);
    assert_memory_equal(a->grid, b->grid, sizeof a->grid);
    assert_memory_equal(a->block, b->block, sizeof a->block);
}

/* Collect decoded records into an array. */
typedef struct st_collect {
    cupstore_record *v;
    size_t n, cap;
} st_collect;

static inline int st_collect_fn(const cupstore_record *r, void *arg)
{
    st_collect *c = arg;
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 256;
        c->v = realloc(c->v, c->cap * sizeof *c->v);
        assert_non_null(c->v);
    }
    c->v[c->n++] = *r;
    return 0;
}

/* Open a fresh session in dir for writing. */
static inline cupstore_env *st_create(const char *dir, char **id)
{
    cupstore_env *env = NULL;
    assert_int_equal(cupstore_session_create(&env, id, dir, (int)getpid(), NULL), 0);
    assert_non_null(env);
    return env;
}

#endif /* STORE_TEST_H */
