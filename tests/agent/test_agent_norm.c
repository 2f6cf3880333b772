/*
 * test_agent_norm.c - normalisation of the toolkit's CUPTI record structs
 * into cupstore_record, and the kind mappings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent_norm.h"

static uint16_t dev_of_ctx(uint32_t ctx, void *arg)
{
    (void)arg;
    return ctx == 7 ? 3 : CUPSTORE_DEVICE_NONE;
}

static void test_kernel(void **state)
{
    CUpti_ActivityKernel10 k;
    cupstore_record r;
    const char *name;
    (void)state;

    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = 1000;
    k.end = 2000;
    k.deviceId = 2;
    k.contextId = 5;
    k.streamId = 9;
    k.correlationId = 42;
    k.gridX = 8; k.gridY = 4; k.gridZ = 1;
    k.blockX = 256; k.blockY = 1; k.blockZ = 1;
    k.registersPerThread = 32;
    k.staticSharedMemory = 100;
    k.dynamicSharedMemory = 28;
    k.name = "_Z3fooPf";
    agent_norm_record((CUpti_Activity *)&k, &r, &name, NULL, NULL);
    assert_int_equal(r.kind, CUPSTORE_KIND_KERNEL);
    assert_int_equal(r.flags, 0);
    assert_int_equal(r.device, 2);
    assert_int_equal(r.context, 5);
    assert_int_equal(r.stream, 9);
    assert_int_equal(r.correlation, 42);
    assert_int_equal(r.start_ns, 1000);
    assert_int_equal(r.end_ns, 2000);
    assert_int_equal(r.grid[0], 8);
    assert_int_equal(r.grid[1], 4);
    assert_int_equal(r.block[0], 256);
    assert_int_equal(r.aux, 32);
    assert_int_equal(r.bytes, 128);
    assert_string_equal(name, "_Z3fooPf");

    /* still running at a forced flush: truncated, not zero-ts */
    k.end = 0;
    agent_norm_record((CUpti_Activity *)&k, &r, &name, NULL, NULL);
    assert_int_equal(r.flags, CUPSTORE_RF_TRUNCATED);
    /* device buffers ran out: both zero */
    k.start = 0;
    agent_norm_record((CUpti_Activity *)&k, &r, &name, NULL, NULL);
    assert_int_equal(r.flags, CUPSTORE_RF_ZERO_TS);
    /* out-of-range device */
    k.deviceId = 99;
    agent_norm_record((CUpti_Activity *)&k, &r, &name, NULL, NULL);
    assert_int_equal(r.device, CUPSTORE_DEVICE_NONE);
}

static void test_memcpy_memset_api_sync(void **state)
{
    cupstore_record r;
    const char *name;
    (void)state;

    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.bytes = 1 << 20;
    m.start = 5;
    m.end = 9;
    m.deviceId = 1;
    m.correlationId = 3;
    agent_norm_record((CUpti_Activity *)&m, &r, &name, NULL, NULL);
    assert_int_equal(r.kind, CUPSTORE_KIND_MEMCPY);
    assert_int_equal(r.bytes, 1 << 20);
    assert_int_equal(CUPSTORE_COPY_KIND(r.aux), CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
    assert_int_equal(CUPSTORE_COPY_SRC(r.aux), CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
    assert_int_equal(CUPSTORE_COPY_DST(r.aux), CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    assert_int_equal(r.device, 1);
    assert_null(name);

    CUpti_ActivityMemset4 s;
    memset(&s, 0, sizeof s);
    s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    s.bytes = 64;
    s.start = 1;
    s.end = 2;
    s.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
    agent_norm_record((CUpti_Activity *)&s, &r, &name, NULL, NULL);
    assert_int_equal(r.kind, CUPSTORE_KIND_MEMSET);
    assert_int_equal(r.bytes, 64);
    assert_int_equal(CUPSTORE_RF_MEMKIND(r.flags), CUPTI_ACTIVITY_MEMORY_KIND_MANAGED);
    assert_int_equal(r.flags & (CUPSTORE_RF_ZERO_TS | CUPSTORE_RF_TRUNCATED), 0);

    CUpti_ActivityAPI a;
    memset(&a, 0, sizeof a);
    a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
    a.cbid = 307;
    a.start = 10;
    a.end = 0;
    a.processId = 77;
    a.threadId = 78;
    a.correlationId = 42;
    agent_norm_record((CUpti_Activity *)&a, &r, &name, NULL, NULL);
    assert_int_equal(r.kind, CUPSTORE_KIND_DRIVER);
    assert_int_equal(r.cbid, 307);
    assert_int_equal(r.pid, 77);
    assert_int_equal(r.tid, 78);
    assert_int_equal(r.device, CUPSTORE_DEVICE_NONE);
    assert_int_equal(r.flags, CUPSTORE_RF_ZERO_TS);   /* API: end 0 is zero-ts */

    CUpti_ActivitySynchronization2 y;
    memset(&y, 0, sizeof y);
    y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    y.contextId = 7;
    y.start = 1;
    y.end = 2;
    y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    agent_norm_record((CUpti_Activity *)&y, &r, &name, dev_of_ctx, NULL);
    assert_int_equal(r.kind, CUPSTORE_KIND_SYNC);
    assert_int_equal(r.device, 3);   /* from the context map */
}

static void test_overhead_marker_other(void **state)
{
    cupstore_record r;
    const char *name;
    (void)state;

    CUpti_ActivityOverhead3 o;
    memset(&o, 0, sizeof o);
    o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL;
    o.objectKind = CUPTI_ACTIVITY_OBJECT_DEVICE;
    o.objectId.dcs.deviceId = 1;
    o.start = 3;
    o.end = 4;
    agent_norm_record((CUpti_Activity *)&o, &r, &name, NULL, NULL);
    assert_int_equal(r.kind, CUPSTORE_KIND_OVERHEAD);
    assert_int_equal(r.aux, 4);
    assert_string_equal(cupstore_overhead_name(r.aux), "command_buffer_full");
    assert_int_equal(r.device, 1);

    CUpti_ActivityMarker2 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MARKER;
    m.timestamp = 123;
    m.name = "phase";
    m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    m.objectId.pt.processId = 5;
    agent_norm_record((CUpti_Activity *)&m, &r, &name, NULL, NULL);
    assert_int_equal(r.kind, CUPSTORE_KIND_MARKER);
    assert_int_equal(r.start_ns, 123);
    assert_int_equal(r.pid, 5);
    assert_string_equal(name, "phase");

    CUpti_Activity other = {.kind = CUPTI_ACTIVITY_KIND_NAME};
    agent_norm_record(&other, &r, &name, NULL, NULL);
    assert_int_equal(r.kind, CUPSTORE_KIND_OTHER);
}

/* A GRAPH_TRACE record (the toolkit's CUpti_ActivityGraphTrace2): one
 * record per graph launch, the graph id in aux, a zero end flagged. */
static void test_graph(void **state)
{
    cupstore_record r;
    const char *name;
    CUpti_ActivityGraphTrace2 g;
    CUpti_ActivityKind ck[2];
    (void)state;

    memset(&g, 0, sizeof g);
    g.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
    g.correlationId = 77;
    g.start = 1000;
    g.end = 5000;
    g.deviceId = 2;
    g.contextId = 5;
    g.streamId = 13;
    g.graphId = 42;
    agent_norm_record((CUpti_Activity *)&g, &r, &name, NULL, NULL);
    assert_int_equal(r.kind, CUPSTORE_KIND_GRAPH);
    assert_int_equal(r.correlation, 77);
    assert_int_equal(r.start_ns, 1000);
    assert_int_equal(r.end_ns, 5000);
    assert_int_equal(r.device, 2);
    assert_int_equal(r.context, 5);
    assert_int_equal(r.stream, 13);
    assert_int_equal(r.aux, 42);
    assert_int_equal(r.flags, 0);
    assert_null(name);
    g.end = 0;   /* still running at a forced flush */
    agent_norm_record((CUpti_Activity *)&g, &r, &name, NULL, NULL);
    assert_true(r.flags & CUPSTORE_RF_TRUNCATED);
    assert_int_equal(agent_norm_kind(CUPTI_ACTIVITY_KIND_GRAPH_TRACE), CUPSTORE_KIND_GRAPH);
    assert_int_equal(agent_norm_cupti_kinds(CUPSTORE_KIND_GRAPH, ck), 1);
    assert_int_equal(ck[0], CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
}

static void test_kind_maps(void **state)
{
    CUpti_ActivityKind ck[2];
    (void)state;
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++) {
        size_t n = agent_norm_cupti_kinds((cupstore_kind)k, ck);
        if (k == CUPSTORE_KIND_OTHER) {
            assert_int_equal(n, 0);
            continue;
        }
        assert_true(n >= 1);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(agent_norm_kind(ck[i]), k);   /* round trip */
    }
    assert_int_equal(agent_norm_kind(CUPTI_ACTIVITY_KIND_KERNEL), CUPSTORE_KIND_KERNEL);
    assert_int_equal(agent_norm_overhead_index(CUPTI_ACTIVITY_OVERHEAD_UNKNOWN), 6);
    assert_int_equal(agent_norm_overhead_index(CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING), 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernel),
        cmocka_unit_test(test_memcpy_memset_api_sync),
        cmocka_unit_test(test_overhead_marker_other),
        cmocka_unit_test(test_kind_maps),
        cmocka_unit_test(test_graph),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
