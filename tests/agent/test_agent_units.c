/*
 * test_agent_units.c - the agent's CUDA-free parts: buffer pool, latency
 * histograms, name interning, configuration parsing.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_config.h"
#include "agent_fd.h"
#include "cupstore.h"
#include "agent_hist.h"
#include "agent_names.h"
#include "agent_pool.h"

/* ---- pool ------------------------------------------------------------------ */

static void test_pool_bounds_and_recycle(void **state)
{
    agent_pool p;
    uint8_t *b[4], *x;
    int s[4];
    (void)state;

    assert_int_equal(agent_pool_init(&p, 1000, 3, 3), 0);
    assert_int_equal(p.buf_size % 64, 0);
    for (int i = 0; i < 3; i++) {
        s[i] = agent_pool_get(&p, &b[i]);
        assert_true(s[i] >= 0);
        assert_int_equal((uintptr_t)b[i] % AGENT_POOL_ALIGN, 0);
        assert_int_equal(agent_pool_find(&p, b[i]), s[i]);
    }
    assert_int_equal(agent_pool_get(&p, &x), -1);          /* exhausted */
    assert_int_equal(atomic_load(&p.outstanding), 3);
    assert_int_equal(atomic_load(&p.high_water), 3);
    /* foreign pointers are not ours */
    uint8_t local[64];
    assert_int_equal(agent_pool_find(&p, local), -1);
    assert_int_equal(agent_pool_find(&p, b[0] + 8), -1);
    /* complete once: ok; twice: detected */
    assert_true(agent_pool_complete(&p, s[0]));
    assert_false(agent_pool_complete(&p, s[0]));
    assert_int_equal(atomic_load(&p.outstanding), 2);
    agent_pool_put(&p, s[0]);
    agent_pool_put(&p, s[0]);   /* a double put must not duplicate the slot */
    s[3] = agent_pool_get(&p, &b[3]);
    assert_int_equal(s[3], s[0]);
    assert_ptr_equal(b[3], b[0]);                         /* recycled */
    assert_int_equal(agent_pool_get(&p, &x), -1);
    assert_int_equal(atomic_load(&p.allocated), 3);
    agent_pool_free(&p);
}

/* After a forced flush that returned, only buffers CUPTI wrote into and
 * kept are another client's: taken once, no longer outstanding; an empty
 * one stays out; a recycled buffer's old records do not count (the head
 * is zeroed at hand-out); the fork's reclaim takes a taken slot back. */
static void test_pool_take_written(void **state)
{
    (void)state;
    agent_pool p;
    uint8_t *b[3];
    int s[3];
    assert_int_equal(agent_pool_init(&p, 1000, 3, 3), 0);
    for (int i = 0; i < 3; i++)
        s[i] = agent_pool_get(&p, &b[i]);
    memset(b[0], 0xab, 64);                      /* completed normally  */
    assert_true(agent_pool_complete(&p, s[0]));
    agent_pool_put(&p, s[0]);
    memset(b[1], 0x11, 16);                      /* written, kept       */
    assert_int_equal(agent_pool_take_written(&p), 1);
    assert_int_equal(atomic_load(&p.outstanding), 1);   /* b[2]: empty  */
    assert_int_equal(agent_pool_take_written(&p), 0);   /* counted once */
    assert_false(agent_pool_complete(&p, s[1]));        /* not ours now */
    s[0] = agent_pool_get(&p, &b[0]);                   /* recycled     */
    assert_int_equal(b[0][0], 0);
    assert_int_equal(agent_pool_take_written(&p), 0);
    agent_pool_put(&p, s[1]);                           /* fork reclaim */
    assert_int_equal(atomic_load(&p.outstanding), 2);
    agent_pool_free(&p);
}

static void test_pool_limit_grows(void **state)
{
    agent_pool p;
    uint8_t *b;
    (void)state;
    assert_int_equal(agent_pool_init(&p, 4096, 2, 8), 0);
    assert_true(agent_pool_get(&p, &b) >= 0);
    assert_true(agent_pool_get(&p, &b) >= 0);
    assert_int_equal(agent_pool_get(&p, &b), -1);
    agent_pool_set_limit(&p, 100);                        /* clamped to 8 */
    assert_int_equal(atomic_load(&p.limit), 8);
    for (int i = 0; i < 6; i++)
        assert_true(agent_pool_get(&p, &b) >= 0);
    assert_int_equal(agent_pool_get(&p, &b), -1);
    agent_pool_free(&p);
}

struct pool_thr {
    agent_pool *p;
    _Atomic uint64_t *got, *declined;
};

static void *pool_worker(void *arg)
{
    struct pool_thr *t = arg;
    for (int i = 0; i < 20000; i++) {
        uint8_t *b;
        int s = agent_pool_get(t->p, &b);
        if (s < 0) {
            atomic_fetch_add(t->declined, 1);
            continue;
        }
        b[0] = (uint8_t)i;   /* the buffer is ours alone while out */
        assert_int_equal(agent_pool_find(t->p, b), s);
        assert_true(agent_pool_complete(t->p, s));
        agent_pool_put(t->p, s);
        atomic_fetch_add(t->got, 1);
    }
    return NULL;
}

static void test_pool_threads(void **state)
{
    agent_pool p;
    pthread_t th[4];
    _Atomic uint64_t got = 0, declined = 0;
    struct pool_thr t = {&p, &got, &declined};
    (void)state;
    assert_int_equal(agent_pool_init(&p, 256, 3, 3), 0);
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, pool_worker, &t);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&got) + atomic_load(&declined), 80000);
    assert_true(atomic_load(&p.high_water) <= 3);
    assert_int_equal(atomic_load(&p.in_use), 0);
    assert_int_equal(atomic_load(&p.outstanding), 0);
    agent_pool_free(&p);
}

/* ---- histograms --------------------------------------------------------------- */

static void test_hist_buckets(void **state)
{
    (void)state;
    for (uint64_t v = 0; v < 16; v++)
        assert_int_equal(agent_hist_bucket(v), v);
    /* every bucket's low bound maps back to it; buckets are ordered */
    for (unsigned b = 0; b < AGENT_HIST_BUCKETS; b++) {
        assert_int_equal(agent_hist_bucket(agent_hist_bucket_low(b)), b);
        if (b)
            assert_true(agent_hist_bucket_low(b) > agent_hist_bucket_low(b - 1));
    }
    /* resolution: within 12.5% */
    for (uint64_t v = 16; v < 100000000; v = v * 3 + 7) {
        uint64_t lo = agent_hist_bucket_low(agent_hist_bucket(v));
        assert_true(lo <= v);
        assert_true((double)(v - lo) <= 0.125 * (double)v);
    }
    assert_int_equal(agent_hist_bucket(UINT64_MAX), AGENT_HIST_BUCKETS - 1);
}

static void test_hist_quantiles_and_seconds(void **state)
{
    static agent_hist h;
    static agent_hist_snap prev, s;
    (void)state;
    memset(&h, 0, sizeof h);
    memset(&prev, 0, sizeof prev);
    for (int i = 0; i < 99; i++)
        agent_hist_add(&h, 1000);
    agent_hist_add(&h, 50000);
    agent_hist_take(&h, &prev, &s);
    assert_int_equal(s.count, 100);
    assert_int_equal(s.max_ns, 50000);
    uint64_t p50 = agent_hist_quantile(&s, 0.5), p99 = agent_hist_quantile(&s, 0.99);
    assert_true(p50 >= 1000 && p50 <= 1125);
    assert_true(p99 >= 1000 && p99 <= 1125);
    assert_int_equal(agent_hist_quantile(&s, 1.0), 50000);
    /* the next second sees only its own values */
    agent_hist_add(&h, 7);
    agent_hist_take(&h, &prev, &s);
    assert_int_equal(s.count, 1);
    assert_int_equal(s.max_ns, 7);
    assert_int_equal(agent_hist_quantile(&s, 0.5), 7);
    agent_hist_take(&h, &prev, &s);
    assert_int_equal(s.count, 0);
    assert_int_equal(agent_hist_quantile(&s, 0.99), 0);
}

/* ---- names -------------------------------------------------------------------- */

static void test_names(void **state)
{
    agent_names nm;
    const uint32_t *ids;
    char buf[64];
    (void)state;

    assert_int_equal(agent_names_init(&nm), 0);
    assert_int_equal(agent_names_intern(&nm, NULL, SIZE_MAX), 0);
    assert_int_equal(agent_names_intern(&nm, "", SIZE_MAX), 0);
    uint32_t a = agent_names_intern(&nm, "_Z6kernelPf", SIZE_MAX);
    uint32_t b = agent_names_intern(&nm, "quote\"back\\slash\xff", SIZE_MAX);
    assert_int_equal(a, 1);
    assert_int_equal(b, 2);
    assert_int_equal(agent_names_intern(&nm, "_Z6kernelPf", SIZE_MAX), a);
    assert_int_equal(agent_names_pending(&nm, &ids), 2);   /* each once */
    agent_names_batch_end(&nm, false);                      /* refused */
    assert_int_equal(agent_names_pending(&nm, &ids), 0);
    /* used again in the next batch: still pending (not stored yet) */
    assert_int_equal(agent_names_intern(&nm, "_Z6kernelPf", SIZE_MAX), a);
    assert_int_equal(agent_names_pending(&nm, &ids), 1);
    assert_int_equal(ids[0], a);
    agent_names_batch_end(&nm, true);
    assert_int_equal(agent_names_intern(&nm, "_Z6kernelPf", SIZE_MAX), a);
    assert_int_equal(agent_names_pending(&nm, &ids), 0);   /* stored */
    /* many names: rehash keeps ids */
    for (int i = 0; i < 5000; i++) {
        snprintf(buf, sizeof buf, "k%d", i);
        assert_int_equal(agent_names_intern(&nm, buf, SIZE_MAX), (uint32_t)i + 3);
    }
    for (int i = 0; i < 5000; i += 97) {
        snprintf(buf, sizeof buf, "k%d", i);
        assert_int_equal(agent_names_intern(&nm, buf, SIZE_MAX), (uint32_t)i + 3);
        const agent_name *e = agent_names_get(&nm, (uint32_t)i + 3);
        assert_string_equal(e->str, buf);
    }
    assert_int_equal(agent_names_get(&nm, 2)->len, 17);
    assert_null(agent_names_get(&nm, 0));
    agent_names_free(&nm);
}

/* API names: CUPTI is asked once per cbid; the version suffix goes */
static unsigned api_calls;
static const char *fake_cb_name(unsigned domain, uint32_t cbid, void *arg)
{
    (void)arg;
    api_calls++;
    if (domain == AGENT_API_RUNTIME && cbid == 211)
        return "cudaLaunchKernel_v7000";
    if (domain == AGENT_API_DRIVER && cbid == 307)
        return "cuLaunchKernel";
    if (domain == AGENT_API_DRIVER && cbid == 10)
        return "cuMemcpyHtoDAsync_v2";
    return NULL;
}

static size_t strip(const char *s)
{
    return agent_names_api_strip(s, strlen(s));
}

static void test_api_names(void **state)
{
    agent_names nm;
    const uint32_t *ids;
    (void)state;
    assert_int_equal(strip("cudaLaunchKernel_v7000"), strlen("cudaLaunchKernel"));
    assert_int_equal(strip("cudaLaunchKernel_ptsz_v7000"), strlen("cudaLaunchKernel_ptsz"));
    assert_int_equal(strip("cudaGraphInstantiate_v12000"), strlen("cudaGraphInstantiate"));
    assert_int_equal(strip("cuMemcpyHtoDAsync_v2"), strlen("cuMemcpyHtoDAsync_v2"));
    assert_int_equal(strip("cuFoo_v123"), strlen("cuFoo_v123"));
    assert_int_equal(strip("x_v1234567"), strlen("x_v1234567"));
    assert_int_equal(strip("_v7000"), strlen("_v7000"));   /* nothing left: kept */
    assert_int_equal(strip("cudaMalloc"), strlen("cudaMalloc"));

    assert_int_equal(agent_names_init(&nm), 0);
    api_calls = 0;
    uint32_t rt = agent_names_api(&nm, AGENT_API_RUNTIME, 211, fake_cb_name, NULL);
    uint32_t drv = agent_names_api(&nm, AGENT_API_DRIVER, 307, fake_cb_name, NULL);
    assert_true(rt && drv && rt != drv);
    assert_string_equal(agent_names_get(&nm, rt)->str, "cudaLaunchKernel");
    assert_string_equal(agent_names_get(&nm, drv)->str, "cuLaunchKernel");
    uint32_t v2 = agent_names_api(&nm, AGENT_API_DRIVER, 10, fake_cb_name, NULL);
    assert_string_equal(agent_names_get(&nm, v2)->str, "cuMemcpyHtoDAsync_v2");
    /* the same cbid in the other domain is another function */
    assert_int_equal(agent_names_api(&nm, AGENT_API_DRIVER, 211, fake_cb_name, NULL), 0);
    assert_int_equal(api_calls, 4);
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(agent_names_api(&nm, AGENT_API_RUNTIME, 211, fake_cb_name, NULL), rt);
        assert_int_equal(agent_names_api(&nm, AGENT_API_DRIVER, 211, fake_cb_name, NULL), 0);
    }
    assert_int_equal(api_calls, 4);   /* cached, named or not */
    /* out of range: no name, CUPTI not asked */
    assert_int_equal(agent_names_api(&nm, AGENT_API_RUNTIME, AGENT_CBID_MAX, fake_cb_name, NULL), 0);
    assert_int_equal(api_calls, 4);
    /* a refused batch: the cached name is written with the next one */
    assert_int_equal(agent_names_pending(&nm, &ids), 3);
    agent_names_batch_end(&nm, false);
    assert_int_equal(agent_names_api(&nm, AGENT_API_RUNTIME, 211, fake_cb_name, NULL), rt);
    assert_int_equal(agent_names_pending(&nm, &ids), 1);
    assert_int_equal(ids[0], rt);
    agent_names_batch_end(&nm, true);
    assert_int_equal(agent_names_api(&nm, AGENT_API_RUNTIME, 211, fake_cb_name, NULL), rt);
    assert_int_equal(agent_names_pending(&nm, &ids), 0);
    /* an API name equal to a kernel name shares its id */
    assert_int_equal(agent_names_intern(&nm, "cuLaunchKernel", SIZE_MAX), drv);
    agent_names_free(&nm);
}

/* ---- configuration --------------------------------------------------------------- */

struct kv {
    const char *k, *v;
};

static const char *kv_get(const char *name, void *arg)
{
    for (const struct kv *p = arg; p->k; p++)
        if (!strcmp(p->k, name))
            return p->v;
    return NULL;
}

static void test_config_defaults_and_env(void **state)
{
    static agent_config c;
    (void)state;
    struct kv none[] = {{NULL, NULL}};
    agent_config_load(&c, kv_get, none);
    assert_int_equal(c.nwarn, 0);
    assert_int_equal(c.kinds, CUPSTORE_KINDS_DEFAULT);
    assert_int_equal(c.buffer_size, AGENT_DEFAULT_BUFFER_SIZE);
    assert_int_equal(c.pool, 0);
    assert_false(c.pool_explicit);
    assert_int_equal(c.sink, AGENT_SINK_STORE);
    assert_false(c.detach_keep);   /* a detach tears CUPTI down by default */

    struct kv env[] = {{"CUPTOP_KINDS", "kernel,runtime"}, {"CUPTOP_BUFFER_SIZE", "1M"},
                       {"CUPTOP_ON_DETACH", "keep"},
                       {"CUPTOP_POOL", "8"}, {"CUPTOP_QUEUE", "4"}, {"CUPTOP_SINK", "null"},
                       {"CUPTOP_DORMANT", "1"}, {"CUPTOP_MAP_MAX", "2m"},
                       {"CUPTOP_STOP_TIMEOUT_MS", "250"}, {"CUPTOP_STORE", "/x/y"},
                       {"CUPTOP_FLUSH_PERIOD_MS", "0"}, {NULL, NULL}};
    agent_config_load(&c, kv_get, env);
    assert_int_equal(c.nwarn, 0);
    assert_int_equal(c.kinds, (1u << CUPSTORE_KIND_KERNEL) | (1u << CUPSTORE_KIND_RUNTIME));
    assert_int_equal(c.buffer_size, 1u << 20);
    assert_int_equal(c.pool, 8);
    assert_true(c.pool_explicit);
    assert_int_equal(c.queue, 4);
    assert_int_equal(c.sink, AGENT_SINK_NULL);
    assert_true(c.dormant);
    assert_int_equal(c.map_max, 2u << 20);
    assert_int_equal(c.stop_timeout_ms, 250);
    assert_int_equal(c.flush_period_ms, 0);
    assert_string_equal(c.store, "/x/y");
    assert_true(c.detach_keep);
    assert_true(agent_config_set(&c, "on_detach", "Finalize"));
    assert_false(c.detach_keep);
}

static void test_config_bad_values(void **state)
{
    static agent_config c;
    (void)state;
    struct kv env[] = {{"CUPTOP_KINDS", "kernel,bogus"}, {"CUPTOP_BUFFER_SIZE", "12"},
                       {"CUPTOP_POOL", "0"}, {"CUPTOP_SINK", "disk"}, {"CUPTOP_DORMANT", "maybe"},
                       {"CUPTOP_QUEUE", "-3"}, {"CUPTOP_MAP_MAX", "1x"},
                       {"CUPTOP_ON_DETACH", "unload"}, {NULL, NULL}};
    agent_config_load(&c, kv_get, env);
    assert_int_equal(c.nwarn, 8);
    assert_false(c.detach_keep);
    assert_non_null(strstr(c.warn[7], "CUPTOP_ON_DETACH"));
    assert_non_null(strstr(c.warn[7], "not finalize or keep"));
    assert_int_equal(c.kinds, CUPSTORE_KINDS_DEFAULT);          /* defaults kept */
    assert_int_equal(c.buffer_size, AGENT_DEFAULT_BUFFER_SIZE);
    assert_false(c.pool_explicit);
    assert_int_equal(c.sink, AGENT_SINK_STORE);
    assert_false(c.dormant);
    assert_int_equal(c.queue, 0);
    assert_non_null(strstr(c.warn[0], "CUPTOP_KINDS"));
    assert_non_null(strstr(c.warn[0], "using the default"));
    uint64_t v;
    assert_int_equal(agent_config_parse_size("4MiB", &v), 0);
    assert_int_equal(v, 4u << 20);
    assert_int_equal(agent_config_parse_size("", &v), -1);
    assert_int_equal(agent_config_parse_size("99999999999999999999", &v), -1);
}

/* Scope settings (issue 16): devices, only-if, capture ranges. */
static void test_config_scope(void **state)
{
    static agent_config c;
    uint32_t m;
    char why[128];
    (void)state;
    assert_int_equal(agent_config_parse_devices("0,2", &m), 0);
    assert_int_equal(m, 0x5u);
    assert_int_equal(agent_config_parse_devices("1-3,7", &m), 0);
    assert_int_equal(m, 0x8eu);
    assert_int_equal(agent_config_parse_devices("all", &m), 0);
    assert_int_equal(m, 0u);
    assert_int_equal(agent_config_parse_devices("16", &m), -1);
    assert_int_equal(agent_config_parse_devices("3-1", &m), -1);
    assert_int_equal(agent_config_parse_devices("0,", &m), -1);
    assert_int_equal(agent_config_parse_devices("", &m), -1);

    struct kv env[] = {{"CUPTOP_DEVICES", "0,2"}, {"CUPTOP_ONLY_IF", "LOCAL_RANK=0"},
                       {"CUPTOP_CAPTURE_RANGE", "cudaProfilerApi"},
                       {"CUPTOP_CAPTURE_RANGE_END", "repeat:3"}, {"LOCAL_RANK", "1"},
                       {NULL, NULL}};
    agent_config_load(&c, kv_get, env);
    assert_int_equal(c.nwarn, 0);
    assert_int_equal(c.devices, 0x5u);
    assert_int_equal(c.capture, AGENT_CAPTURE_PROFILER);
    assert_true(c.capture_repeat);
    assert_int_equal(c.capture_max, 3);
    assert_true(agent_config_skip(&c, kv_get, env, why, sizeof why));
    assert_string_equal(why, "only-if LOCAL_RANK=0: LOCAL_RANK is \"1\"");
    struct kv rank0[] = {{"LOCAL_RANK", "0"}, {NULL, NULL}};
    assert_false(agent_config_skip(&c, kv_get, rank0, why, sizeof why));
    struct kv none[] = {{NULL, NULL}};
    assert_true(agent_config_skip(&c, kv_get, none, why, sizeof why));
    assert_string_equal(why, "only-if LOCAL_RANK=0: LOCAL_RANK is unset");

    struct kv bad[] = {{"CUPTOP_DEVICES", "gpu0"}, {"CUPTOP_ONLY_IF", "=1"},
                       {"CUPTOP_CAPTURE_RANGE", "nvtx:@io"},
                       {"CUPTOP_CAPTURE_RANGE_END", "repeat:0"}, {NULL, NULL}};
    agent_config_load(&c, kv_get, bad);
    assert_int_equal(c.nwarn, 4);
    assert_int_equal(c.devices, 0u);
    assert_string_equal(c.only_if, "");
    assert_int_equal(c.capture, AGENT_CAPTURE_NONE);
    assert_false(c.capture_repeat);
    assert_int_equal(c.capture_max, 1);
    assert_non_null(strstr(c.warn[2], "nvtx:NAME[@DOMAIN] wants a range name of 1 to 255"));

    struct kv nv[] = {{"CUPTOP_CAPTURE_RANGE", "nvtx:train step"}, {NULL, NULL}};
    agent_config_load(&c, kv_get, nv);
    assert_int_equal(c.nwarn, 0);
    assert_int_equal(c.capture, AGENT_CAPTURE_NVTX);
    assert_string_equal(c.capture_name, "train step");
    struct kv nvd[] = {{"CUPTOP_CAPTURE_RANGE", "nvtx:a@b@io"}, {NULL, NULL}};
    agent_config_load(&c, kv_get, nvd);
    assert_int_equal(c.nwarn, 0);
    assert_int_equal(c.capture, AGENT_CAPTURE_NVTX);
    assert_string_equal(c.capture_name, "a@b@io");

    /* the split: the last '@' separates; "NAME@" is the default domain */
    char n[256], d[256];
    bool given;
    assert_int_equal(agent_config_nvtx_range("a@b@io", n, d, &given), 0);
    assert_string_equal(n, "a@b");
    assert_string_equal(d, "io");
    assert_true(given);
    assert_int_equal(agent_config_nvtx_range("step@", n, d, &given), 0);
    assert_string_equal(n, "step");
    assert_string_equal(d, "");
    assert_true(given);
    assert_int_equal(agent_config_nvtx_range("step", n, d, &given), 0);
    assert_string_equal(n, "step");
    assert_false(given);
    assert_int_equal(agent_config_nvtx_range("@io", n, d, &given), -1);
    assert_int_equal(agent_config_nvtx_range("", n, d, &given), -1);
    char longd[300];
    memset(longd, 'x', sizeof longd - 1);
    longd[0] = 's';
    longd[1] = '@';
    longd[sizeof longd - 1] = '\0';
    assert_int_equal(agent_config_nvtx_range(longd, n, d, &given), -1);
    struct kv nv0[] = {{"CUPTOP_CAPTURE_RANGE", "nvtx:"}, {NULL, NULL}};
    agent_config_load(&c, kv_get, nv0);
    assert_int_equal(c.nwarn, 1);
    assert_int_equal(c.capture, AGENT_CAPTURE_NONE);
}

/* every:PERIOD/WINDOW: units, bounds, the order, and the text back. */
static void test_config_every(void **state)
{
    (void)state;
    agent_config c;
    uint32_t p, w;
    char why[160], txt[40];
    struct kv ev[] = {{"CUPTOP_CAPTURE_RANGE", "every:60s/5s"}, {NULL, NULL}};
    agent_config_load(&c, kv_get, ev);
    assert_int_equal(c.nwarn, 0);
    assert_int_equal(c.capture, AGENT_CAPTURE_EVERY);
    assert_int_equal(c.capture_period_ms, 60000);
    assert_int_equal(c.capture_window_ms, 5000);
    assert_int_equal(agent_config_parse_every("1s/300ms", &p, &w, why, sizeof why), 0);
    assert_int_equal(p, 1000);
    assert_int_equal(w, 300);
    assert_int_equal(agent_config_parse_every("24h/100ms", &p, &w, why, sizeof why), 0);
    assert_int_equal(p, 24u * 3600 * 1000);
    assert_int_equal(agent_config_parse_every("2m/1m", &p, &w, why, sizeof why), 0);
    assert_int_equal(w, 60000);
    cupstore_every_format(1000, 300, txt, sizeof txt);
    assert_string_equal(txt, "1s/300ms");
    cupstore_every_format(3600000, 90000, txt, sizeof txt);
    assert_string_equal(txt, "1h/90s");
    /* WINDOW < PERIOD, WINDOW >= 100 ms, PERIOD <= 24 h, units required */
    const char *bad[] = {"1s/1s", "1s/2s", "1s/99ms", "25h/1s", "1441m/1s", "10/1s", "1s/",
                         "1s", "/1s", "1x/1s", "1s/300ms/", "1s /300ms", "99999999999999999999s/1s",
                         "-1s/1ms", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(agent_config_parse_every(bad[i], &p, &w, why, sizeof why), -1);
    assert_int_equal(agent_config_parse_every("1s/99ms", &p, &w, why, sizeof why), -1);
    assert_non_null(strstr(why, "WINDOW < PERIOD"));
    struct kv bad_env[] = {{"CUPTOP_CAPTURE_RANGE", "every:1s/2s"}, {NULL, NULL}};
    agent_config_load(&c, kv_get, bad_env);
    assert_int_equal(c.nwarn, 1);
    assert_int_equal(c.capture, AGENT_CAPTURE_NONE);
}

static int collect_kv(const char *key, const char *value, void *arg)
{
    char *buf = arg;
    size_t l = strlen(buf);
    snprintf(buf + l, 4096 - l, ";%s=%s;", key, value);
    return 0;
}

static int stop_kv(const char *key, const char *value, void *arg)
{
    (void)key, (void)value, (void)arg;
    return 7;
}

static void test_config_file(void **state)
{
    static agent_config c;
    char path[] = "/tmp/cuptop-agent-cfg.XXXXXX";
    (void)state;
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "# comment\n pool = 16 \nCUPTOP_KINDS=kernel\nbuffer_size=2M\n"
                       "nonsense line\nunknown_key=1\nqueue = 2\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    struct kv env[] = {{"CUPTOP_CONFIG", path}, {"CUPTOP_QUEUE", "8"}, {NULL, NULL}};
    agent_config_load(&c, kv_get, env);
    unlink(path);
    assert_int_equal(c.pool, 16);
    assert_int_equal(c.kinds, 1u << CUPSTORE_KIND_KERNEL);
    assert_int_equal(c.buffer_size, 2u << 20);
    assert_int_equal(c.queue, 8);            /* the environment wins */
    assert_int_equal(c.nwarn, 2);            /* the bad line, the unknown key */
    char buf[2048];
    agent_config_format(&c, buf, sizeof buf);
    assert_non_null(strstr(buf, "pool=16\n"));
    assert_non_null(strstr(buf, "kinds=kernel\n"));
    /* the same settings as structured keys, one each */
    char kv[4096] = "";
    assert_int_equal(agent_config_each(&c, collect_kv, kv), 0);
    assert_non_null(strstr(kv, ";pool=16;"));
    assert_non_null(strstr(kv, ";pool_explicit=1;"));
    assert_non_null(strstr(kv, ";kinds=kernel;"));
    assert_non_null(strstr(kv, ";buffer_size=2097152;"));
    assert_non_null(strstr(kv, ";queue=8;"));
    assert_non_null(strstr(kv, ";sink=store;"));
    assert_int_equal(agent_config_each(&c, stop_kv, NULL), 7);

    struct kv missing[] = {{"CUPTOP_CONFIG", "/nonexistent/cuptop.conf"}, {NULL, NULL}};
    agent_config_load(&c, kv_get, missing);
    assert_int_equal(c.nwarn, 1);
    assert_non_null(strstr(c.warn[0], "ignored"));
}

/* ---- the descriptor hold's lock order (agent_fd.h) ------------------------ */

static void *fd_hold_other(void *arg)
{
    (void)arg;
    agent_fd_hold();   /* this thread writes nothing: in order */
    agent_fd_release();
    return NULL;
}

/* A hold before the store's write lock is the order; a hold taken afresh
 * inside a write is counted every time, whether or not it had to wait
 * (session 13's deadlock, found only when a window opened in the session's
 * first milliseconds, is now found by any run that takes that path). */
static void test_fd_lock_order(void **state)
{
    (void)state;
    unsigned v0 = agent_fd_order_violations();
    /* in order: hold, then the write, then a nested hold of the same thread */
    agent_fd_hold();
    agent_fd_write_enter();
    agent_fd_hold();
    agent_fd_release();
    agent_fd_write_leave();
    agent_fd_release();
    assert_int_equal(agent_fd_order_violations(), v0);
    /* another thread's hold while this one writes: not this thread's order */
    pthread_t th;
    agent_fd_write_enter();
    assert_int_equal(pthread_create(&th, NULL, fd_hold_other, NULL), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(agent_fd_order_violations(), v0);
    /* out of order: a hold inside the write, and a file opened there */
    agent_fd_hold();
    agent_fd_release();
    assert_int_equal(agent_fd_order_violations(), v0 + 1);
    int fd = agent_fd_open("/dev/null", O_RDONLY);
    assert_true(fd >= 3);
    close(fd);
    assert_int_equal(agent_fd_order_violations(), v0 + 2);
    agent_fd_write_leave();
    /* after the write: in order again */
    fd = agent_fd_open("/dev/null", O_RDONLY);
    assert_true(fd >= 3);
    close(fd);
    agent_fd_write_leave();   /* an extra leave does not underflow */
    agent_fd_hold();
    agent_fd_release();
    assert_int_equal(agent_fd_order_violations(), v0 + 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fd_lock_order),
        cmocka_unit_test(test_pool_bounds_and_recycle),
        cmocka_unit_test(test_pool_limit_grows),
        cmocka_unit_test(test_pool_take_written),
        cmocka_unit_test(test_pool_threads),
        cmocka_unit_test(test_hist_buckets),
        cmocka_unit_test(test_hist_quantiles_and_seconds),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_api_names),
        cmocka_unit_test(test_config_defaults_and_env),
        cmocka_unit_test(test_config_bad_values),
        cmocka_unit_test(test_config_file),
        cmocka_unit_test(test_config_scope),
        cmocka_unit_test(test_config_every),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
