/*
 * bench_store.c - records/s into the store on one core and bytes per
 * stored record, for a realistic mix of activity records.
 *
 *   bench_store [-n RECORDS] [-d DIR]
 *
 * The mix imitates a CUDA application seen through CUPTI: runtime API
 * calls a few microseconds apart from 4 host threads, each with the driver
 * call beneath it; kernels (names drawn from 300, skewed) of 2-50 us on 8
 * streams, memcpys and memsets with their byte counts; correlation ids
 * increasing.  Prints one table (all rows from this run).
 */
#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cupstore.h"
#include "cupstore_int.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rnd(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 2685821657736338717ull;
}

/* Fill n records with the realistic mix. */
static void gen_mix(cupstore_record *r, size_t n)
{
    uint64_t seed = 42, t = 1764633600000000000ull; /* 2025-12-02 */
    uint64_t gpu_free[8] = {0};
    uint32_t corr = 1;
    size_t i = 0;

    memset(r, 0, n * sizeof *r);
    while (i < n) {
        uint32_t tid = 100 + (uint32_t)(rnd(&seed) % 4);
        uint64_t what = rnd(&seed) % 100;
        t += 1000 + rnd(&seed) % 4000; /* API calls a few us apart */
        uint64_t dur = 1500 + rnd(&seed) % 3000;
        unsigned gpu_kind = what < 70 ? CUPSTORE_KIND_KERNEL
                            : what < 90 ? CUPSTORE_KIND_MEMCPY
                            : what < 95 ? CUPSTORE_KIND_MEMSET
                                        : CUPSTORE_KIND_MAX; /* API only */
        uint32_t cbid = gpu_kind == CUPSTORE_KIND_KERNEL   ? 211
                        : gpu_kind == CUPSTORE_KIND_MEMCPY ? 41
                        : gpu_kind == CUPSTORE_KIND_MEMSET ? 51
                                                           : 1 + (uint32_t)(rnd(&seed) % 20);
        /* runtime API record */
        cupstore_record *a = &r[i++];
        a->kind = CUPSTORE_KIND_RUNTIME;
        a->device = CUPSTORE_DEVICE_NONE;
        a->correlation = corr;
        a->start_ns = t;
        a->end_ns = t + dur;
        a->cbid = cbid;
        a->name_id = 1000 + cbid;
        a->pid = 4242;
        a->tid = tid;
        if (i == n)
            break;
        /* driver API beneath it */
        cupstore_record *d = &r[i++];
        d->kind = CUPSTORE_KIND_DRIVER;
        d->device = CUPSTORE_DEVICE_NONE;
        d->correlation = corr + 1;
        d->start_ns = t + 300;
        d->end_ns = t + dur - 200;
        d->cbid = cbid + 300;
        d->name_id = 2000 + cbid;
        d->pid = 4242;
        d->tid = tid;
        if (i == n || gpu_kind == CUPSTORE_KIND_MAX) {
            corr += 2;
            continue;
        }
        /* the GPU activity */
        cupstore_record *g = &r[i++];
        unsigned s = (unsigned)(rnd(&seed) % 8);
        uint64_t start = t + dur + 2000 + rnd(&seed) % 5000;
        if (gpu_free[s] > start)
            start = gpu_free[s] + 500;
        uint64_t gd = 2000 + rnd(&seed) % 48000;
        gpu_free[s] = start + gd;
        g->kind = (uint8_t)gpu_kind;
        g->device = (uint16_t)(s / 4); /* two devices */
        g->context = 1 + s / 4;
        g->stream = 13 + s;
        g->correlation = corr;
        g->start_ns = start;
        g->end_ns = start + gd;
        if (gpu_kind == CUPSTORE_KIND_KERNEL) {
            /* skewed choice among 300 kernel names */
            uint64_t z = rnd(&seed) % 1000;
            uint32_t k = (uint32_t)(z < 600 ? z % 12 : z < 900 ? z % 60 : z % 300);
            g->name_id = 1 + k;
            g->grid[0] = 1u << (k % 12);
            g->grid[1] = g->grid[2] = 1;
            g->block[0] = 128u << (k % 3);
            g->block[1] = g->block[2] = 1;
            g->aux = 32 + k % 64;             /* registers */
            g->bytes = (k % 4) * 4096;        /* shared memory */
        } else {
            g->aux = gpu_kind == CUPSTORE_KIND_MEMCPY ? 1 + (uint32_t)(rnd(&seed) % 3) : 0;
            g->bytes = 4096ull << (rnd(&seed) % 12);
        }
        corr += 2;
    }
}

/* Encode everything in batches; returns seconds, bytes out. */
static double run_encode(const cupstore_record *r, size_t n, size_t batch, unsigned mode,
                         uint64_t *bytes)
{
    cupstore_buf b = {0}, lz = {0};
    const uint8_t *out;
    size_t len;
    uint64_t key, span;
    double t0 = now_s();
    *bytes = 0;
    for (size_t i = 0; i < n; i += batch) {
        size_t m = n - i < batch ? n - i : batch;
        if (cupstore_chunk_encode_buf(r + i, m, mode, &b, &lz, &out, &len, &key, &span) != 0) {
            fprintf(stderr, "encode failed\n");
            exit(1);
        }
        *bytes += len;
    }
    double dt = now_s() - t0;
    cupstore_buf_free(&b);
    cupstore_buf_free(&lz);
    return dt;
}

static int count_fn(const cupstore_record *r, void *arg)
{
    (void)r;
    ++*(uint64_t *)arg;
    return 0;
}

/* Encode + commit in batches into a fresh session; returns seconds. */
static double run_commit(const char *dir, const cupstore_record *r, size_t n, size_t batch,
                         bool no_lz4, uint64_t *bytes, double *scan_s)
{
    cupstore_open_opts opts = {.no_compress = no_lz4};
    cupstore_env *env;
    cupstore_txn *txn;
    char *id;
    int rc;
    if ((rc = cupstore_session_create(&env, &id, dir, (int)getpid(), &opts)) != 0) {
        fprintf(stderr, "bench_store: %s: %s\n", dir, cupstore_strerror(rc));
        exit(1);
    }
    double t0 = now_s();
    for (size_t i = 0; i < n; i += batch) {
        size_t m = n - i < batch ? n - i : batch;
        do {
            if ((rc = cupstore_txn_begin(env, true, &txn)) != 0)
                break;
            rc = cupstore_chunk_put(txn, r + i, m);
            int crc = cupstore_txn_commit(txn);
            if (!rc)
                rc = crc;
        } while (rc == EAGAIN);
        if (rc) {
            fprintf(stderr, "bench_store: commit: %s\n", cupstore_strerror(rc));
            exit(1);
        }
    }
    cupstore_env_sync(env);
    double dt = now_s() - t0;
    uint64_t count = 0;
    cupstore_txn_begin(env, false, &txn);
    cupstore_record_stats(txn, NULL, NULL, bytes);
    t0 = now_s();
    cupstore_record_scan(txn, 0, UINT64_MAX, count_fn, &count);
    *scan_s = now_s() - t0;
    cupstore_txn_abort(txn);
    if (count != n)
        fprintf(stderr, "bench_store: scan saw %llu of %zu records\n",
                (unsigned long long)count, n);
    cupstore_env_close(env);
    free(id);
    return dt;
}

static int rm_fn(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void row(const char *what, size_t n, double s, uint64_t bytes, double scan_s)
{
    printf("| %-34s | %10.2f | %8.1f |", what, (double)n / s / 1e6, (double)bytes / (double)n);
    if (scan_s > 0)
        printf(" %11.2f |\n", (double)n / scan_s / 1e6);
    else
        printf(" %11s |\n", "-");
}

int main(int argc, char **argv)
{
    size_t n = 2000000;
    const char *dir = NULL;
    bool made_dir = false;
    char tmpl[] = "/tmp/bench-store-XXXXXX";
    int opt;
    while ((opt = getopt(argc, argv, "n:d:")) != -1) {
        if (opt == 'n')
            n = strtoull(optarg, NULL, 10);
        else if (opt == 'd')
            dir = optarg;
        else {
            fprintf(stderr, "usage: bench_store [-n RECORDS] [-d DIR]\n");
            return 2;
        }
    }
    if (n == 0) {
        fprintf(stderr, "bench_store: -n must be > 0\n");
        return 2;
    }
    if (!dir) {
        if (!(dir = mkdtemp(tmpl))) {
            perror("mkdtemp");
            return 1;
        }
        made_dir = true;
    }
    cupstore_record *r = malloc(n * sizeof *r);
    if (!r) {
        perror("malloc");
        return 1;
    }
    gen_mix(r, n);

    printf("bench_store: %zu records (realistic mix), store %s\n\n", n, dir);
    printf("| %-34s | %10s | %8s | %11s |\n", "operation", "Mrec/s", "B/record",
           "scan Mrec/s");
    printf("|%.36s|%.12s|%.10s|%.13s|\n", "------------------------------------",
           "------------", "----------", "-------------");
    uint64_t bytes;
    double s;
    s = run_encode(r, n, 8192, CUPSTORE_ENC_RAW, &bytes);
    row("encode only, raw (8k batches)", n, s, bytes, 0);
    s = run_encode(r, n, 8192, CUPSTORE_ENC_AUTO, &bytes);
    row("encode only, LZ4 (8k batches)", n, s, bytes, 0);
    static const size_t batches[] = {1024, 8192, 65536};
    for (int lz = 0; lz < 2; lz++) {
        for (size_t b = 0; b < 3; b++) {
            char what[64];
            double scan_s;
            snprintf(what, sizeof what, "encode+commit, %s, %zuk batches", lz ? "LZ4" : "raw",
                     batches[b] / 1024);
            s = run_commit(dir, r, n, batches[b], !lz, &bytes, &scan_s);
            row(what, n, s, bytes, scan_s);
        }
    }
    printf("\ntargets: >= 5 Mrec/s into the store, <= 40 B/record\n");
    free(r);
    if (made_dir)
        nftw(dir, rm_fn, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
