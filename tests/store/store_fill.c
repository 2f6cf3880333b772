/*
 * store_fill.c - test helper for the integration scripts.
 *
 *   store_fill fill DIR      create a session with known rows; print its id
 *   store_fill check PATH    open a session directory read-only and print
 *                            "records=N host=H chunks=C"
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cupstore.h"

static int fail(const char *what, int rc)
{
    fprintf(stderr, "store_fill: %s: %s\n", what, cupstore_strerror(rc));
    return 1;
}

static int fill(const char *dir)
{
    cupstore_env *env;
    cupstore_txn *txn;
    cupstore_record r[1000];
    char *id;
    int rc;

    if ((rc = cupstore_session_create(&env, &id, dir, (int)getpid(), NULL)) != 0)
        return fail(dir, rc);
    memset(r, 0, sizeof r);
    for (int i = 0; i < 1000; i++) {
        r[i].kind = (uint8_t)(i % CUPSTORE_KIND_MAX);
        r[i].start_ns = 1700000000000000000ull + (uint64_t)i * 3000;
        r[i].end_ns = r[i].start_ns + 2500;
        r[i].correlation = (uint32_t)i;
        r[i].name_id = 1 + (uint32_t)(i % 7);
    }
    for (int b = 0; b < 5; b++) {
        if ((rc = cupstore_txn_begin(env, true, &txn)) != 0)
            return fail("begin", rc);
        if ((rc = cupstore_meta_put(txn, "host", "fill-host")) != 0 ||
            (rc = cupstore_name_put(txn, 1, "kern\"el\\", 8)) != 0 ||
            (rc = cupstore_chunk_put(txn, r, 1000)) != 0)
            return fail("put", rc);
        if ((rc = cupstore_txn_commit(txn)) != 0)
            return fail("commit", rc);
    }
    cupstore_env_sync(env);
    cupstore_env_close(env);
    printf("%s\n", id);
    free(id);
    return 0;
}

static int count_fn(const cupstore_record *r, void *arg)
{
    (void)r;
    ++*(unsigned long long *)arg;
    return 0;
}

static int check(const char *path)
{
    cupstore_env *env;
    cupstore_txn *txn;
    unsigned long long n = 0;
    uint64_t chunks;
    char *host;
    int rc;

    if ((rc = cupstore_env_open(&env, path, CUPSTORE_RDONLY, NULL)) != 0)
        return fail(path, rc);
    if ((rc = cupstore_txn_begin(env, false, &txn)) != 0)
        return fail("begin", rc);
    if ((rc = cupstore_record_scan(txn, 0, UINT64_MAX, count_fn, &n)) != 0)
        return fail("scan", rc);
    if ((rc = cupstore_meta_get(txn, "host", &host)) != 0)
        return fail("meta", rc);
    if ((rc = cupstore_record_stats(txn, &chunks, NULL, NULL)) != 0)
        return fail("stats", rc);
    printf("records=%llu host=%s chunks=%llu\n", n, host, (unsigned long long)chunks);
    free(host);
    cupstore_txn_abort(txn);
    cupstore_env_close(env);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "fill"))
        return fill(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "check"))
        return check(argv[2]);
    fprintf(stderr, "usage: store_fill fill DIR | check PATH\n");
    return 2;
}
