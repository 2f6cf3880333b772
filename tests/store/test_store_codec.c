/*
 * test_store_codec.c - pure codecs: names and kind lists, the chunk
 * encoder/decoder (round trips, malformed input) and the health TLV row
 * (forward compatibility).
 */
#include "config.h"

#include "store_test.h"
#include "cupstore_int.h"

static void test_kind_names(void **state)
{
    (void)state;
    char buf[128];
    uint32_t mask;
    const char *bad;

    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++) {
        assert_string_not_equal(cupstore_kind_name(k), "?");
        assert_int_equal(cupstore_kind_parse(cupstore_kind_name(k)), (int)k);
    }
    assert_string_equal(cupstore_kind_name(CUPSTORE_KIND_MAX), "?");
    assert_int_equal(cupstore_kind_parse("CONCURRENT_KERNEL"), CUPSTORE_KIND_KERNEL);
    assert_int_equal(cupstore_kind_parse("synchronization"), CUPSTORE_KIND_SYNC);
    assert_int_equal(cupstore_kind_parse("CUPTI_ACTIVITY_KIND_MEMCPY"), CUPSTORE_KIND_MEMCPY);
    assert_int_equal(cupstore_kind_parse("Runtime"), CUPSTORE_KIND_RUNTIME);
    assert_int_equal(cupstore_kind_parse("bogus"), -1);
    assert_int_equal(cupstore_kind_parse(""), -1);

    assert_int_equal(cupstore_kinds_parse("kernel, runtime", &mask, &bad), 0);
    assert_int_equal(mask, (1u << CUPSTORE_KIND_KERNEL) | (1u << CUPSTORE_KIND_RUNTIME));
    assert_null(bad);
    assert_int_equal(cupstore_kinds_parse("all", &mask, NULL), 0);
    assert_int_equal(mask, CUPSTORE_KINDS_ALL);
    assert_int_equal(cupstore_kinds_parse("none", &mask, NULL), 0);
    assert_int_equal(mask, 0);
    assert_int_equal(cupstore_kinds_parse("default", &mask, NULL), 0);
    assert_int_equal(mask, CUPSTORE_KINDS_DEFAULT);
    const char *list = "kernel,florb,memcpy";
    assert_int_equal(cupstore_kinds_parse(list, &mask, &bad), CUPSTORE_EINVAL);
    assert_ptr_equal(bad, list + 7);
    assert_int_equal(cupstore_kinds_parse("kernel,,memcpy", &mask, &bad), CUPSTORE_EINVAL);
    assert_int_equal(cupstore_kinds_parse("", &mask, &bad), CUPSTORE_EINVAL);

    cupstore_kinds_format((1u << CUPSTORE_KIND_KERNEL) | (1u << CUPSTORE_KIND_SYNC), buf,
                          sizeof buf);
    assert_string_equal(buf, "kernel,sync");
    cupstore_kinds_format(0, buf, sizeof buf);
    assert_string_equal(buf, "none");
    cupstore_kinds_format(CUPSTORE_KINDS_ALL, buf, sizeof buf);
    assert_string_equal(buf, "all");
    /* graph is not in "all" (CUPTI does not trace it beside kernels) */
    cupstore_kinds_format(0xffffffffu, buf, sizeof buf);
    assert_string_equal(buf, "kernel,memcpy,memset,runtime,driver,sync,overhead,marker,other,graph");
    assert_int_equal(cupstore_kind_parse("graph"), CUPSTORE_KIND_GRAPH);
    assert_int_equal(cupstore_kind_parse("CUPTI_ACTIVITY_KIND_GRAPH_TRACE"), CUPSTORE_KIND_GRAPH);
    assert_int_equal(cupstore_kinds_parse("all", &mask, NULL), 0);
    assert_false(mask & (1u << CUPSTORE_KIND_GRAPH));
    cupstore_kinds_format(CUPSTORE_KINDS_DEFAULT, buf, sizeof buf);
    assert_int_equal(cupstore_kinds_parse(buf, &mask, NULL), 0);
    assert_int_equal(mask, CUPSTORE_KINDS_DEFAULT);
    cupstore_kinds_format(CUPSTORE_KINDS_DEFAULT, buf, 8); /* truncates, terminated */
    assert_true(strlen(buf) < 8);
}

static void test_other_names(void **state)
{
    (void)state;
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++) {
        assert_string_not_equal(cupstore_loss_name(l), "?");
        assert_true(strlen(cupstore_loss_describe(l)) > 10);
        for (unsigned m = 0; m < l; m++)
            assert_string_not_equal(cupstore_loss_name(l), cupstore_loss_name(m));
    }
    assert_string_equal(cupstore_loss_name(CUPSTORE_LOSS_STORE_REFUSED), "store_refused");
    assert_string_equal(cupstore_loss_name(99), "?");
    for (unsigned i = 0; i < 8; i++)
        assert_string_not_equal(cupstore_overhead_name(i), "?");
    assert_string_equal(cupstore_overhead_name(0), "driver_compiler");
    assert_string_equal(cupstore_overhead_name(6), "other");
    assert_string_equal(cupstore_overhead_name(8), "?");
    for (unsigned s = 0; s < CUPSTORE_STEP_MAX; s++)
        assert_string_not_equal(cupstore_step_name(s), "?");
    assert_string_equal(cupstore_step_name(CUPSTORE_STEP_MAX), "?");
    assert_string_equal(cupstore_exit_name(CUPSTORE_EXIT_SIGNAL), "signal");
    assert_string_equal(cupstore_exit_name(CUPSTORE_EXIT_DETACH), "detach");
    assert_string_equal(cupstore_exit_name(77), "?");
    for (int e = CUPSTORE_E_FIRST; e <= CUPSTORE_E_LAST; e++)
        assert_string_not_equal(cupstore_strerror(e), "unknown store error");
    assert_string_equal(cupstore_strerror(CUPSTORE_E_FIRST - 1), "unknown store error");
    assert_string_equal(cupstore_strerror(ENOENT), strerror(ENOENT));
    assert_string_equal(cupstore_strerror(0), "success");
    /* LMDB codes never leak: they are mapped at the boundary. */
    assert_int_equal(cupstore_mdb_err(MDB_MAP_FULL), CUPSTORE_EFULL);
    assert_int_equal(cupstore_mdb_err(MDB_NOTFOUND), CUPSTORE_ENOTFOUND);
    assert_int_equal(cupstore_mdb_err(MDB_CORRUPTED), CUPSTORE_ECORRUPT);
    assert_int_equal(cupstore_mdb_err(MDB_INVALID), CUPSTORE_ENOTSTORE);
    assert_int_equal(cupstore_mdb_err(ENOSPC), ENOSPC);
    for (int rc = MDB_KEYEXIST; rc <= MDB_LAST_ERRCODE; rc++) {
        int m = cupstore_mdb_err(rc);
        assert_true(m > 0 || (m >= CUPSTORE_E_FIRST && m <= CUPSTORE_E_LAST));
    }
}

static void roundtrip(const cupstore_record *recs, size_t n)
{
    void *buf = NULL;
    size_t len = 0;
    st_collect c = {0};

    assert_int_equal(cupstore_chunk_encode(recs, n, &buf, &len), 0);
    assert_non_null(buf);
    assert_int_equal(cupstore_chunk_decode(buf, len, st_collect_fn, &c), 0);
    assert_int_equal(c.n, n);
    for (size_t i = 0; i < n; i++)
        st_assert_record_eq(&c.v[i], &recs[i]);
    free(c.v);
    free(buf);
}

static void test_chunk_every_kind(void **state)
{
    (void)state;
    enum { N = 2000 };
    cupstore_record *r = calloc(N, sizeof *r);
    uint64_t seed = 12345;
    assert_non_null(r);
    for (size_t i = 0; i < N; i++)
        st_record(&r[i], (unsigned)(i % CUPSTORE_KIND_MAX), &seed, 1700000000000000000ull);
    roundtrip(r, N);
    /* Kinds beyond the enum (future agents) and the escape byte. */
    r[0].kind = 14;
    r[1].kind = 15;
    r[2].kind = 200;
    r[3].kind = 255;
    roundtrip(r, N);
    roundtrip(r, 1);
    roundtrip(r, 0);
    free(r);
}

static void test_chunk_extremes(void **state)
{
    (void)state;
    cupstore_record r[8];
    memset(r, 0, sizeof r);
    /* all zero (zero timestamps) */
    roundtrip(r, 1);
    /* extreme values everywhere */
    memset(&r[1], 0xff, sizeof r[1]);
    r[2] = r[1];
    r[2].start_ns = 1;
    r[2].end_ns = UINT64_MAX; /* end far after start */
    r[3] = r[1];
    r[3].start_ns = UINT64_MAX;
    r[3].end_ns = 1; /* end before start */
    r[4].start_ns = 0;
    r[4].end_ns = 12345; /* zero start, non-zero end */
    r[4].flags = CUPSTORE_RF_ZERO_TS;
    r[5].start_ns = 99;
    r[5].end_ns = 0;
    r[5].flags = CUPSTORE_RF_TRUNCATED;
    r[5].correlation = UINT32_MAX;
    r[6] = r[5];
    r[6].correlation = 0; /* wraps from UINT32_MAX + 1 */
    r[7] = r[6];
    r[7].correlation = 5;
    roundtrip(r, 8);
}

static void test_chunk_realistic_compact(void **state)
{
    (void)state;
    enum { N = 8192 };
    cupstore_record *r = calloc(N, sizeof *r);
    uint64_t t = 1700000000000000000ull, seed = 7;
    void *buf;
    size_t len;
    uint32_t corr = 1000;
    assert_non_null(r);
    for (size_t i = 0; i < N; i++) {
        r[i].kind = i % 2 ? CUPSTORE_KIND_KERNEL : CUPSTORE_KIND_RUNTIME;
        t += 2000 + st_rand(&seed) % 3000;
        r[i].start_ns = t;
        r[i].end_ns = t + 2000 + st_rand(&seed) % 48000;
        r[i].correlation = corr++;
        r[i].name_id = 1 + (uint32_t)(st_rand(&seed) % 300);
        r[i].stream = 7 + (uint32_t)(i % 4);
        r[i].device = i % 2 ? 0 : CUPSTORE_DEVICE_NONE;
        r[i].grid[0] = 128;
        r[i].block[0] = 256;
    }
    roundtrip(r, N);
    assert_int_equal(cupstore_chunk_encode(r, N, &buf, &len), 0);
    /* Delta coding must beat 40 bytes per record by far on this shape. */
    assert_true(len < (size_t)N * 16);
    free(buf);
    free(r);
}

/* Every strict prefix of a valid chunk is malformed; random flips never
 * crash (ASan checks the bounds). */
static void test_chunk_malformed(void **state)
{
    (void)state;
    enum { N = 300 };
    cupstore_record r[N];
    uint64_t seed = 99;
    void *buf;
    size_t len;
    st_collect c = {0};

    for (size_t i = 0; i < N; i++)
        st_record(&r[i], (unsigned)(i % CUPSTORE_KIND_MAX), &seed, 1ull << 60);
    for (int lz = 0; lz < 2; lz++) {
        if (lz) { /* repetitive records compress: exercise the LZ4 path */
            for (size_t i = 1; i < N; i++) {
                r[i] = r[0];
                r[i].start_ns += i * 1000;
                r[i].end_ns += i * 1000;
            }
        }
        assert_int_equal(cupstore_chunk_encode(r, N, &buf, &len), 0);
        uint8_t *p = buf;
        if (lz)
            assert_int_equal(p[2], 1); /* LZ4 flag */
        for (size_t cut = 0; cut < len; cut++) {
            c.n = 0;
            assert_int_equal(cupstore_chunk_decode(p, cut, st_collect_fn, &c), CUPSTORE_ECORRUPT);
        }
        /* trailing garbage */
        uint8_t *longer = malloc(len + 1);
        memcpy(longer, p, len);
        longer[len] = 0;
        assert_int_equal(cupstore_chunk_decode(longer, len + 1, NULL, NULL), CUPSTORE_ECORRUPT);
        free(longer);
        for (int iter = 0; iter < 3000; iter++) {
            uint8_t *q = malloc(len);
            memcpy(q, p, len);
            int flips = 1 + (int)(st_rand(&seed) % 4);
            for (int f = 0; f < flips; f++)
                q[st_rand(&seed) % len] ^= (uint8_t)(1u << (st_rand(&seed) % 8));
            c.n = 0;
            int rc = cupstore_chunk_decode(q, len, st_collect_fn, &c);
            /* the checksum catches every change (flips may cancel out) */
            if (memcmp(q, p, len) != 0)
                assert_int_equal(rc, CUPSTORE_ECORRUPT);
            else
                assert_int_equal(rc, 0);
            free(q);
        }
        free(buf);
    }
    assert_int_equal(cupstore_chunk_decode(NULL, 0, NULL, NULL), CUPSTORE_ECORRUPT);
    assert_int_equal(cupstore_chunk_decode("garbage!", 8, NULL, NULL), CUPSTORE_ECORRUPT);
    /* A header claiming a huge count is refused before any work. */
    const uint8_t huge[] = {0xC5, 1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0};
    assert_int_equal(cupstore_chunk_decode(huge, sizeof huge, NULL, NULL), CUPSTORE_ECORRUPT);
    free(c.v);
}

/* CRC-32C: the standard check value, and chaining. */
/* cupstore_varint_get: every length 1..10 with 0..12 bytes of room after
 * it (the straight path needs three), truncation and overlong input. */
static void test_varint_get(void **state)
{
    (void)state;
    uint8_t buf[32];
    for (unsigned len = 1; len <= 10; len++) {
        uint64_t v = len == 10 ? UINT64_MAX - 5 : (1ull << (7 * (len - 1))) + 3 * len;
        for (unsigned room = 0; room <= 12; room++) {
            memset(buf, 0xff, sizeof buf);
            size_t n = cupstore_varint_put(buf, v);
            assert_int_equal(n, len);
            const uint8_t *p = buf;
            uint64_t got = 0;
            assert_true(cupstore_varint_get(&p, buf + n + room, &got));
            assert_true(got == v);
            assert_ptr_equal(p, buf + n);
            p = buf; /* cut short by one byte */
            assert_false(cupstore_varint_get(&p, buf + n - 1, &got));
            assert_ptr_equal(p, buf);
        }
    }
    /* the tenth byte holds bit 63 alone; an eleventh is never read */
    static const uint8_t over[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0};
    static const uint8_t longer[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x81, 0};
    const uint8_t *p = over;
    uint64_t got;
    assert_false(cupstore_varint_get(&p, over + sizeof over, &got));
    p = longer;
    assert_false(cupstore_varint_get(&p, longer + sizeof longer, &got));
    p = over; /* nothing to read */
    assert_false(cupstore_varint_get(&p, over, &got));
}

static void test_crc32c(void **state)
{
    (void)state;
    assert_int_equal(cupstore_crc32c(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(cupstore_crc32c(cupstore_crc32c(0, "12345", 5), "6789", 4), 0xe3069283u);
    assert_int_equal(cupstore_crc32c(0, "", 0), 0);
    char big[1000];
    for (int i = 0; i < 1000; i++)
        big[i] = (char)(i * 7);
    uint32_t whole = cupstore_crc32c(0, big, sizeof big);
    assert_int_equal(cupstore_crc32c(cupstore_crc32c(0, big, 333), big + 333, 667), whole);
}

/* A version-1 chunk (before checksums) still decodes. */
static void test_chunk_v1(void **state)
{
    (void)state;
    cupstore_record r[2];
    uint64_t seed = 5;
    void *buf;
    size_t len;
    st_collect c = {0};
    st_record(&r[0], CUPSTORE_KIND_KERNEL, &seed, 1ull << 40);
    st_record(&r[1], CUPSTORE_KIND_RUNTIME, &seed, 1ull << 40);
    assert_int_equal(cupstore_chunk_encode(r, 2, &buf, &len), 0);
    uint8_t *p = buf, v1[512];
    assert_int_equal(p[1], 2);
    assert_int_equal(p[2], 0); /* raw: header, varint count, varint base, crc */
    size_t h = 3;
    for (int v = 0; v < 2; v++)
        while (p[h++] & 0x80)
            ;
    assert_true(len - 4 <= sizeof v1);
    memcpy(v1, p, h);
    v1[1] = 1;
    memcpy(v1 + h, p + h + 4, len - h - 4);
    assert_int_equal(cupstore_chunk_decode(v1, len - 4, st_collect_fn, &c), 0);
    assert_int_equal(c.n, 2);
    assert_memory_equal(&c.v[0], &r[0], sizeof r[0]);
    assert_memory_equal(&c.v[1], &r[1], sizeof r[1]);
    /* the same bytes labelled version 2 lack the checksum: refused */
    v1[1] = 2;
    assert_int_equal(cupstore_chunk_decode(v1, len - 4, NULL, NULL), CUPSTORE_ECORRUPT);
    free(buf);
    free(c.v);
}

static int stop_after_3(const cupstore_record *r, void *arg)
{
    (void)r;
    int *n = arg;
    return ++*n == 3 ? 42 : 0;
}

static void test_chunk_stop(void **state)
{
    (void)state;
    cupstore_record r[10];
    uint64_t seed = 5;
    void *buf;
    size_t len;
    int n = 0;
    for (int i = 0; i < 10; i++)
        st_record(&r[i], CUPSTORE_KIND_KERNEL, &seed, 1000);
    assert_int_equal(cupstore_chunk_encode(r, 10, &buf, &len), 0);
    assert_int_equal(cupstore_chunk_decode(buf, len, stop_after_3, &n), 42);
    assert_int_equal(n, 3);
    free(buf);
}

static void fill_health(cupstore_health *h)
{
    uint64_t v = 1;
    memset(h, 0, sizeof *h);
    h->second = 1700000000;
    h->heartbeat_ns = 1700000000123456789ull;
    h->epoch = 3;
    h->kinds_enabled = CUPSTORE_KINDS_DEFAULT;
    h->ctl_gen_applied = 4;
    h->ctl_gen_seen = 5;
    h->buf_requested = 10, h->buf_provided = 9, h->buf_declined = 1;
    h->buf_completed = 8, h->buf_consumed = 7, h->buf_foreign = 2;
    h->bytes_delivered = 1ull << 40;
    h->buf_outstanding = 3, h->pool_limit = 64, h->pool_high_water = 60;
    h->records_parsed = 123456789, h->records_stored = 123456780;
    for (int i = 0; i < CUPSTORE_KIND_MAX; i++)
        h->records_by_kind[i] = v++ * 1000;
    for (int i = 0; i < CUPSTORE_DEVICE_MAX; i++)
        h->records_by_device[i] = v++ * 7;
    for (int i = 0; i < CUPSTORE_LOSS_MAX; i++)
        h->loss[i] = v++;
    for (int i = 0; i < CUPSTORE_OVERHEAD_MAX; i++)
        h->overhead_by_type[i] = v++ * 3;
    h->overhead_by_type[CUPSTORE_OVERHEAD_MAX - 1] = UINT64_MAX;
    h->queue_depth = 5, h->queue_high_water = 17, h->queue_capacity = 1024;
    h->req_lat = (cupstore_lat){100, 200, 3000, 40000};
    h->cmp_lat = (cupstore_lat){101, 201, 3001, 40001};
    h->commit_lat = (cupstore_lat){102, 202, 3002, UINT32_MAX};
    h->batch_records_p50 = 8192;
    h->store_refused = 2;
    h->flags = CUPSTORE_HF_STOPPING | CUPSTORE_HF_COUNT_ONLY;
    for (int k = 0; k < CUPSTORE_LEDGER_KINDS; k++) {   /* fields 31-33 */
        h->ledger_expected[k] = 1000000 + (uint64_t)k;
        h->ledger_arrived[k] = 999000 + (uint64_t)k;
        h->ledger_pending[k] = 7 * (uint64_t)k;
    }
}

static void test_health_tlv(void **state)
{
    (void)state;
    cupstore_health h, d;
    uint8_t buf[2048], ext[2100];
    fill_health(&h);
    size_t len = cupstore_health_encode(&h, buf, sizeof buf);
    assert_true(len > 0);
    assert_int_equal(cupstore_health_decode(buf, len, &d), 0);
    d.second = h.second; /* the key, not in the value */
    assert_memory_equal(&h, &d, sizeof h);

    /* A newer writer's row: unknown scalar, unknown array index of a known
     * field, and an unknown length-delimited field, all skipped. */
    size_t o = 0;
    o += cupstore_varint_put(ext + o, (uint64_t)200 << 6);          /* id 200 varint */
    o += cupstore_varint_put(ext + o, 123456);
    o += cupstore_varint_put(ext + o, (uint64_t)18 << 6 | 31u << 1); /* kind index 31 */
    o += cupstore_varint_put(ext + o, 77);
    o += cupstore_varint_put(ext + o, (uint64_t)201 << 6 | 1);      /* id 201 bytes */
    o += cupstore_varint_put(ext + o, 5);
    memcpy(ext + o, "hello", 5);
    o += 5;
    memcpy(ext + o, buf, len);
    o += len;
    assert_int_equal(cupstore_health_decode(ext, o, &d), 0);
    d.second = h.second;
    assert_memory_equal(&h, &d, sizeof h);

    /* An older writer's row: only a few fields; the rest read as zero. */
    o = 0;
    o += cupstore_varint_put(ext + o, (uint64_t)2 << 6); /* epoch */
    o += cupstore_varint_put(ext + o, 9);
    o += cupstore_varint_put(ext + o, (uint64_t)20 << 6 | (uint64_t)CUPSTORE_LOSS_TAIL << 1);
    o += cupstore_varint_put(ext + o, 4);
    assert_int_equal(cupstore_health_decode(ext, o, &d), 0);
    assert_int_equal(d.epoch, 9);
    assert_int_equal(d.loss[CUPSTORE_LOSS_TAIL], 4);
    assert_int_equal(d.records_parsed, 0);
    assert_int_equal(d.req_lat.p99_ns, 0);
    assert_int_equal(d.flags, 0);
    /* Empty row: all zero. */
    assert_int_equal(cupstore_health_decode(ext, 0, &d), 0);
    assert_int_equal(d.epoch, 0);

    /* Truncated rows are errors, never crashes. */
    for (size_t cut = 1; cut < len; cut++) {
        int rc = cupstore_health_decode(buf, cut, &d);
        assert_true(rc == 0 || rc == CUPSTORE_ECORRUPT);
    }
    ext[0] = 0x80 | 1; /* tag varint without its end */
    assert_int_equal(cupstore_health_decode(ext, 1, &d), CUPSTORE_ECORRUPT);
    o = cupstore_varint_put(ext, (uint64_t)201 << 6 | 1);
    o += cupstore_varint_put(ext + o, 1000); /* bytes field longer than the row */
    assert_int_equal(cupstore_health_decode(ext, o, &d), CUPSTORE_ECORRUPT);
}

static void test_file_check_mem(void **state)
{
    (void)state;
    uint8_t page[8192] = {0};
    assert_int_equal(cupstore_file_check_mem(page, 0), CUPSTORE_ENOTSTORE);
    assert_int_equal(cupstore_file_check_mem(page, sizeof page), CUPSTORE_ENOTSTORE);
    uint32_t magic = 0xBEEFC0DEu, psize = 3000;
    memcpy(page + 16, &magic, 4);
    memcpy(page + 40, &psize, 4);
    assert_int_equal(cupstore_file_check_mem(page, sizeof page), CUPSTORE_ECORRUPT);
    psize = 4096;
    memcpy(page + 40, &psize, 4);
    assert_int_equal(cupstore_file_check_mem(page, 4096), CUPSTORE_ECORRUPT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kind_names),
        cmocka_unit_test(test_other_names),
        cmocka_unit_test(test_chunk_every_kind),
        cmocka_unit_test(test_chunk_extremes),
        cmocka_unit_test(test_chunk_realistic_compact),
        cmocka_unit_test(test_chunk_malformed),
        cmocka_unit_test(test_varint_get),
        cmocka_unit_test(test_crc32c),
        cmocka_unit_test(test_chunk_v1),
        cmocka_unit_test(test_chunk_stop),
        cmocka_unit_test(test_health_tlv),
        cmocka_unit_test(test_file_check_mem),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
