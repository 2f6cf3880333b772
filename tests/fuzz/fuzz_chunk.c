/*
 * fuzz_chunk.c - fuzz target for the store's decoders.
 *
 * The first input byte picks the target, the rest is the data:
 *   0: cupstore_chunk_decode        (record chunks, raw and LZ4)
 *   1: health row TLV decode        (cupstore_health_decode)
 *   2: data.mdb pre-open validation (cupstore_file_check_mem)
 *   3: a session directory whose data.mdb is the data, opened read-only
 *      and scanned (validation, magic/schema checks, row decoders)
 *
 * libFuzzer: clang -fsanitize=fuzzer,address -DCUPTOP_LIBFUZZER ...
 * Standalone (gcc, make check): fuzz_chunk FILE|DIR...  replays files;
 * fuzz_chunk --self N  runs N deterministic mutations of generated seeds.
 *
 * Target 3 passes bytes that survive cupstore_file_check to LMDB, which
 * trusts its B-tree pages: see doc/store-format.md for what is checked.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cupstore_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count_fn(const cupstore_record *r, void *arg)
{
    (void)r;
    ++*(size_t *)arg;
    return 0;
}

static int health_fn(const cupstore_health *h, void *arg)
{
    (void)h;
    (void)arg;
    return 0;
}

static void fuzz_session(const uint8_t *data, size_t size)
{
    char dir[] = "/tmp/fuzz-session-XXXXXX", file[64], lock[64];
    cupstore_env *env;
    cupstore_txn *txn;
    size_t n = 0;

    if (!mkdtemp(dir))
        return;
    snprintf(file, sizeof file, "%s/data.mdb", dir);
    snprintf(lock, sizeof lock, "%s/lock.mdb", dir);
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
        if (write(fd, data, size) != (ssize_t)size)
            size = 0;
        close(fd);
        if (cupstore_env_open(&env, dir, CUPSTORE_RDONLY, NULL) == 0) {
            if (cupstore_txn_begin(env, false, &txn) == 0) {
                cupstore_record_scan(txn, 0, UINT64_MAX, count_fn, &n);
                cupstore_health_scan(txn, 0, UINT64_MAX, health_fn, NULL);
                cupstore_txn_abort(txn);
            }
            cupstore_env_close(env);
        }
    }
    unlink(file);
    unlink(lock);
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t n = 0;
    cupstore_health h;

    if (size < 1)
        return 0;
    switch (data[0] & 3) {
    case 0:
        cupstore_chunk_decode(data + 1, size - 1, count_fn, &n);
        break;
    case 1:
        cupstore_health_decode(data + 1, size - 1, &h);
        break;
    case 2:
        cupstore_file_check_mem(data + 1, size - 1);
        break;
    default:
        fuzz_session(data + 1, size - 1);
        break;
    }
    return 0;
}

#ifndef CUPTOP_LIBFUZZER
static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    long len;
    if (!f)
        return -1;
    if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
        !(buf = malloc((size_t)len + 1))) {
        fclose(f);
        return -1;
    }
    size_t got = fread(buf, 1, (size_t)len, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, got);
    free(buf);
    return 0;
}

static int replay(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode))
        return replay_file(path);
    DIR *d = opendir(path);
    struct dirent *de;
    int n = 0;
    while (d && (de = readdir(d)) != NULL) {
        char sub[4096];
        if (de->d_name[0] == '.')
            continue;
        int w = snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
        if (w > 0 && (size_t)w < sizeof sub && replay_file(sub) == 0)
            n++;
    }
    if (d)
        closedir(d);
    return n;
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

/* Seeds: a raw chunk, an LZ4 chunk, a health row; then mutations. */
static int self_test(long iters)
{
    enum { N = 200 };
    cupstore_record r[N];
    cupstore_health h;
    uint64_t seed = 1;
    uint8_t *seeds[3];
    size_t lens[3];
    void *enc;

    memset(r, 0, sizeof r);
    for (int i = 0; i < N; i++) {
        r[i].kind = (uint8_t)(rnd(&seed) % 12);
        r[i].start_ns = 1700000000000000000ull + rnd(&seed) % 1000000;
        r[i].end_ns = r[i].start_ns + rnd(&seed) % 50000;
        r[i].name_id = (uint32_t)(rnd(&seed) % 30);
        r[i].correlation = (uint32_t)i;
        r[i].bytes = rnd(&seed) % 4096;
        r[i].grid[0] = (uint32_t)(rnd(&seed) % 100);
    }
    for (int s = 0; s < 2; s++) {
        if (s == 1) /* repetitive: takes the LZ4 path */
            for (int i = 1; i < N; i++)
                r[i] = r[0];
        if (cupstore_chunk_encode(r, N, &enc, &lens[s]) != 0)
            return 1;
        seeds[s] = malloc(lens[s] + 1);
        seeds[s][0] = 0;
        memcpy(seeds[s] + 1, enc, lens[s]);
        lens[s]++;
        free(enc);
    }
    memset(&h, 0, sizeof h);
    h.epoch = 2, h.records_by_kind[3] = 99, h.commit_lat.p99_ns = 7, h.flags = 1;
    seeds[2] = malloc(2048);
    seeds[2][0] = 1;
    lens[2] = 1 + cupstore_health_encode(&h, seeds[2] + 1, 2047);

    uint8_t *buf = malloc(1 << 16);
    for (long it = 0; it < iters; it++) {
        int s = (int)(it % 3);
        size_t len = lens[s];
        memcpy(buf, seeds[s], len);
        int flips = 1 + (int)(rnd(&seed) % 8);
        for (int i = 0; i < flips; i++)
            buf[1 + rnd(&seed) % (len - 1)] = (uint8_t)rnd(&seed);
        if (rnd(&seed) % 4 == 0)
            len = 1 + rnd(&seed) % len; /* truncate */
        LLVMFuzzerTestOneInput(buf, len);
    }
    /* target 2 and 3 on garbage and on an all-zero page pair */
    memset(buf, 0, 8193);
    buf[0] = 2;
    LLVMFuzzerTestOneInput(buf, 8193);
    buf[0] = 3;
    LLVMFuzzerTestOneInput(buf, 8193);
    for (int i = 0; i < 3; i++)
        free(seeds[i]);
    free(buf);
    printf("fuzz_chunk: %ld mutated inputs decoded without a fault\n", iters);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--self"))
        return self_test(atol(argv[2]));
    if (argc < 2) {
        fprintf(stderr, "usage: fuzz_chunk FILE|DIR... | --self N\n");
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        if (replay(argv[i]) < 0) {
            fprintf(stderr, "fuzz_chunk: cannot read %s\n", argv[i]);
            return 1;
        }
    }
    return 0;
}
#endif
