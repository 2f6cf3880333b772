/*
 * bench_ranges.c - `cuptop ranges` over many NVTX ranges (issue 15: 1M
 * ranges in under a second on the dev VM).  Builds a session with N range
 * rows (16 names, 8 threads, nested 3 deep, 1% left open, some unbalanced
 * ends) through the store API, then times model_ranges_load (what `cuptop
 * ranges` does) and prints a table; with --keep DIR the store stays in
 * DIR for timing the command itself (bench/model/bench_ranges.sh).
 *
 *   bench_ranges [--ranges N] [--keep DIR]
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cupstore.h"
#include "model.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct fill {
    uint64_t from, to;
};

static int put_rows(cupstore_txn *txn, void *arg)
{
    const struct fill *f = arg;
    int rc = 0;
    for (uint64_t i = f->from; i < f->to && rc == 0; i++) {
        cupstore_range r;
        memset(&r, 0, sizeof r);
        r.id = (uint32_t)(i + 1);
        uint64_t x = i * 0x9e3779b97f4a7c15ull;
        r.name_id = (uint32_t)(i % 16) + 1;
        r.tid = 1000 + (uint32_t)(i % 8);
        r.pid = 42;
        r.depth = (uint32_t)(i % 3);
        r.start_ns = 1700000000000000000ull + i * 1000;
        r.flags = CUPSTORE_RANGE_START;
        if (i % 100 != 7) {
            r.end_ns = r.start_ns + 1000 + (x >> 40) % 1000000;
            r.flags |= CUPSTORE_RANGE_END;
        }
        if (i % 1000 == 3) {   /* an unbalanced end */
            r.flags = CUPSTORE_RANGE_END;
            r.name_id = 0;
        }
        rc = cupstore_range_put(txn, &r);
    }
    return rc;
}

static int put_names(cupstore_txn *txn, void *arg)
{
    (void)arg;
    int rc = 0;
    for (uint32_t k = 1; k <= 16 && rc == 0; k++) {
        char n[32];
        int len = snprintf(n, sizeof n, "range_%02u", k);
        rc = cupstore_name_put(txn, k, n, (size_t)len);
    }
    return rc;
}

int main(int argc, char **argv)
{
    uint64_t n = 1000000;
    const char *keep = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--ranges") && i + 1 < argc)
            n = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--keep") && i + 1 < argc)
            keep = argv[++i];
        else {
            fprintf(stderr, "usage: bench_ranges [--ranges N] [--keep DIR]\n");
            return 2;
        }
    }
    char tmpl[] = "/tmp/bench-ranges.XXXXXX";
    const char *dir = keep ? keep : mkdtemp(tmpl);
    cupstore_env *env;
    char *id = NULL;
    cupstore_open_opts oo = {0};
    if (!dir || cupstore_dir_prepare(dir) || cupstore_session_create(&env, &id, dir, 4242, &oo)) {
        fprintf(stderr, "bench_ranges: cannot create a session in %s\n", dir ? dir : "?");
        return 1;
    }
    double t0 = now_s();
    int rc = cupstore_write(env, put_names, NULL, 0);
    for (uint64_t i = 0; i < n && rc == 0; i += 50000) {
        struct fill f = {i, i + 50000 < n ? i + 50000 : n};
        rc = cupstore_write(env, put_rows, &f, 0);
    }
    double t_fill = now_s() - t0;
    if (rc) {
        fprintf(stderr, "bench_ranges: writing: %s\n", cupstore_strerror(rc));
        return 1;
    }
    cupstore_txn *txn;
    model_ranges *m = NULL;
    t0 = now_s();
    rc = cupstore_txn_begin(env, false, &txn);
    if (!rc) {
        rc = model_ranges_load(txn, NULL, &m);
        cupstore_txn_abort(txn);
    }
    double t_load = now_s() - t0;
    if (rc) {
        fprintf(stderr, "bench_ranges: model_ranges_load: %s\n", cupstore_strerror(rc));
        return 1;
    }
    printf("%-28s %12s\n", "what", "value");
    printf("%-28s %12llu\n", "range rows", (unsigned long long)m->ninst);
    printf("%-28s %12zu\n", "names", m->nnames);
    printf("%-28s %12llu\n", "open", (unsigned long long)m->open);
    printf("%-28s %12llu\n", "unbalanced", (unsigned long long)m->unbalanced);
    printf("%-28s %12.3f\n", "fill (s)", t_fill);
    printf("%-28s %12.3f\n", "model_ranges_load (s)", t_load);
    printf("%-28s %12.0f\n", "rows per second (load)", (double)m->ninst / t_load);
    if (keep)
        printf("session %s in %s\n", id, dir);
    model_ranges_free(m);
    cupstore_env_close(env);
    free(id);
    return 0;
}
