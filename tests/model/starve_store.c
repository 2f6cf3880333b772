/*
 * starve_store.c - writes two ended sessions of pool starvation into a
 * store for the report and monitor tests (tests/model/starve_tmux.sh):
 * 10 s each, 2 threads, 4 MiB buffers, a pool of 2 at its limit while
 * CUPTI drops records, the queue empty and every buffer consumed; "short"
 * loses in 2 of the seconds, "sustained" in all 10.  Prints "short ID" and
 * "sustained ID", one a line.  A third, "merged" (tests/model/
 * counters_tmux.sh), has losses the health rows do not hold: exact loss
 * rows beyond a row's counter, a second with loss rows only, and a tail
 * the final status knows of beyond its rows; the verdict counts
 * cupti_dropped 45, declined 20, tail 19 where the health rows say 30, 0, 0.
 *
 *   starve_store DIR
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cupstore.h"

#define NS UINT64_C(1000000000)
#define T0 UINT64_C(1735736400) /* 2025-01-01T13:00:00Z */

static int check(int rc, const char *what)
{
    if (rc) {
        fprintf(stderr, "starve_store: %s: %s\n", what, cupstore_strerror(rc));
        exit(1);
    }
    return 0;
}

static void session(const char *dir, int pid, unsigned lossy_from, const char *name)
{
    cupstore_env *env;
    cupstore_txn *txn;
    char *id = NULL, buf[32];
    check(cupstore_session_create(&env, &id, dir, pid, NULL), "create");
    check(cupstore_txn_begin(env, true, &txn), "begin");
    snprintf(buf, sizeof buf, "%d", pid);
    check(cupstore_meta_put(txn, "pid", buf), "meta");
    check(cupstore_meta_put(txn, "host", "testhost"), "meta");
    check(cupstore_meta_put(txn, "cmdline", "./train --threads 2"), "meta");
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)(T0 * NS));
    check(cupstore_meta_put(txn, "start_ns", buf), "meta");
    check(cupstore_meta_put(txn, "config", "kinds=kernel,memcpy,memset,runtime,driver,overhead\n"
                                           "buffer_size=4194304\npool=2\n"), "meta");
    check(cupstore_meta_put(txn, "threads", "2"), "meta");
    cupstore_epoch e = {.id = 1, .kinds = CUPSTORE_KINDS_DEFAULT, .start_ns = T0 * NS};
    check(cupstore_epoch_put(txn, &e), "epoch");
    for (unsigned i = 0; i < 10; i++) {
        cupstore_health h;
        memset(&h, 0, sizeof h);
        h.second = T0 + i;
        h.heartbeat_ns = (T0 + i) * NS + 999000000u;
        h.epoch = 1;
        h.kinds_enabled = CUPSTORE_KINDS_DEFAULT;
        h.buf_requested = h.buf_provided = h.buf_completed = h.buf_consumed = 12;
        h.bytes_delivered = 12 * 4 * (UINT64_C(1) << 20);
        h.pool_limit = 2;
        h.pool_high_water = 2;
        h.buf_outstanding = 1;
        h.records_by_kind[CUPSTORE_KIND_KERNEL] = 200000;
        h.records_by_kind[CUPSTORE_KIND_RUNTIME] = 200000;
        h.records_by_kind[CUPSTORE_KIND_DRIVER] = 200000;
        h.records_by_device[0] = 200000;
        h.records_parsed = h.records_stored = 600000;
        h.queue_capacity = 4096;
        h.queue_high_water = 1;
        if (i >= lossy_from) {
            h.loss[CUPSTORE_LOSS_CUPTI_DROPPED] = 150000;
            h.buf_declined = 150000;
            h.buf_requested += 150000;
            h.buf_outstanding = 2;
        }
        check(cupstore_health_put(txn, &h), "health");
    }
    for (unsigned st = 0; st < CUPSTORE_STEP_MAX; st++) {
        cupstore_step s = {.step = st, .start_mono_ns = 1000, .end_mono_ns = 2000};
        check(cupstore_step_put(txn, &s), "step");
    }
    cupstore_final f = {.end_ns = (T0 + 10) * NS, .exit_path = CUPSTORE_EXIT_RETURN,
                        .protocol_complete = 1, .flush_ok = 1, .buffers_completed = 120,
                        .buffers_consumed = 120};
    check(cupstore_final_put(txn, &f), "final");
    check(cupstore_txn_commit(txn), "commit");
    cupstore_env_close(env);
    printf("%s %s\n", name, id);
    free(id);
}

static void loss_row(cupstore_txn *txn, uint64_t second, unsigned cls, uint64_t n)
{
    cupstore_loss_row r = {.second = second, .loss = (uint8_t)cls, .kind = CUPSTORE_KIND_ALL,
                           .device = CUPSTORE_DEVICE_NONE, .count = n};
    check(cupstore_loss_add(txn, &r), "loss");
}

static void merged(const char *dir)
{
    cupstore_env *env;
    cupstore_txn *txn;
    char *id = NULL, buf[32];
    check(cupstore_session_create(&env, &id, dir, 4003, NULL), "create");
    check(cupstore_txn_begin(env, true, &txn), "begin");
    check(cupstore_meta_put(txn, "pid", "4003"), "meta");
    check(cupstore_meta_put(txn, "host", "testhost"), "meta");
    check(cupstore_meta_put(txn, "cmdline", "./train --merged"), "meta");
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)(T0 * NS));
    check(cupstore_meta_put(txn, "start_ns", buf), "meta");
    cupstore_epoch e = {.id = 1, .kinds = CUPSTORE_KINDS_DEFAULT, .start_ns = T0 * NS};
    check(cupstore_epoch_put(txn, &e), "epoch");
    for (unsigned i = 0; i < 10; i++) {
        cupstore_health h;
        memset(&h, 0, sizeof h);
        h.second = T0 + i;
        h.heartbeat_ns = (T0 + i) * NS + 999000000u;
        h.epoch = 1;
        h.kinds_enabled = CUPSTORE_KINDS_DEFAULT;
        h.buf_requested = h.buf_provided = h.buf_completed = h.buf_consumed = 4;
        h.pool_limit = 64;
        h.records_by_kind[CUPSTORE_KIND_KERNEL] = 500;
        h.records_by_device[0] = 500;
        h.records_parsed = h.records_stored = 500;
        h.queue_capacity = 4096;
        if (i == 2)
            h.loss[CUPSTORE_LOSS_CUPTI_DROPPED] = 30;
        check(cupstore_health_put(txn, &h), "health");
    }
    loss_row(txn, T0 + 2, CUPSTORE_LOSS_CUPTI_DROPPED, 45);  /* beyond the row's 30  */
    loss_row(txn, T0 + 5, CUPSTORE_LOSS_DECLINED, 20);       /* in loss rows only    */
    loss_row(txn, T0 + 10, CUPSTORE_LOSS_TAIL, 7);           /* after the last row   */
    for (unsigned st = 0; st < CUPSTORE_STEP_MAX; st++) {
        cupstore_step s = {.step = st, .start_mono_ns = 1000, .end_mono_ns = 2000};
        check(cupstore_step_put(txn, &s), "step");
    }
    cupstore_final f = {.end_ns = (T0 + 10) * NS, .exit_path = CUPSTORE_EXIT_RETURN,
                        .protocol_complete = 1, .flush_ok = 1, .tail_lost = 19,
                        .buffers_completed = 40, .buffers_consumed = 40};
    check(cupstore_final_put(txn, &f), "final");
    check(cupstore_txn_commit(txn), "commit");
    cupstore_env_close(env);
    printf("merged %s\n", id);
    free(id);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: starve_store DIR\n");
        return 2;
    }
    check(cupstore_dir_prepare(argv[1]), "store");
    session(argv[1], 4001, 8, "short");
    session(argv[1], 4002, 0, "sustained");
    merged(argv[1]);
    return 0;
}
