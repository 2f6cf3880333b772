/* fill_lib.c - write realistic sessions into a store for the TUI tests and
 * benchmark: per-second health rows, losses of several classes, devices
 * and kinds (exact and estimated), epochs, control requests, records. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fill_lib.h"

#define K(x) (1u << CUPSTORE_KIND_##x)
#define KINDS_E2 (K(KERNEL) | K(MEMCPY) | K(RUNTIME) | K(OVERHEAD))
#define KINDS_E3 (K(KERNEL) | K(MEMCPY))

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static unsigned epoch_of(fill_kind kind, unsigned t, unsigned seconds)
{
    if (kind == FILL_COMPLETE)
        return 1;
    return t < seconds / 2 ? 1 : t < seconds * 4 / 5 ? 2 : 3;
}

static uint32_t kinds_of_epoch(unsigned e)
{
    return e == 1 ? CUPSTORE_KINDS_DEFAULT : e == 2 ? KINDS_E2 : KINDS_E3;
}

/* Records lost in second t (all classes summed per class in loss[]). */
static bool burst(fill_kind kind, unsigned t, unsigned seconds)
{
    if (kind == FILL_COMPLETE)
        return false;
    unsigned e = epoch_of(kind, t, seconds);
    if (e == 1)
        return t % 60 >= 10 && t % 60 < 25;
    if (e == 2)
        return t % 120 >= 5 && t % 120 < 8;
    return false;
}

void fill_health_row(fill_kind kind, unsigned t, unsigned seconds, uint32_t kinds,
                     uint64_t second, cupstore_health *h)
{
    memset(h, 0, sizeof *h);
    h->second = second;
    h->heartbeat_ns = second * 1000000000u + 500000000u;
    h->epoch = epoch_of(kind, t, seconds);
    h->kinds_enabled = kinds;
    h->ctl_gen_applied = h->ctl_gen_seen = h->epoch - 1;
    static const double rate[CUPSTORE_KIND_MAX] = {20000, 4000, 500, 30000, 8000, 0, 40, 0, 0};
    double wave = 1.0 + 0.25 * sin((double)t / 37.0);
    uint64_t total = 0;
    for (int k = 0; k < CUPSTORE_KIND_MAX; k++) {
        if (!(kinds & (1u << k)))
            continue;
        h->records_by_kind[k] = (uint64_t)(rate[k] * wave);
        total += h->records_by_kind[k];
    }
    h->records_by_device[0] = total * 6 / 10;
    h->records_by_device[1] = total - h->records_by_device[0];
    h->records_parsed = h->records_stored = total;
    bool b = burst(kind, t, seconds);
    h->pool_limit = 8;
    h->buf_requested = 2 + total / 40000;
    h->buf_declined = b ? 3 : 0;
    h->buf_provided = h->buf_requested - h->buf_declined;
    h->buf_completed = h->buf_consumed = h->buf_provided;
    h->bytes_delivered = total * 120;
    h->buf_outstanding = b ? 8 : 2 + t % 2;
    h->pool_high_water = b ? 8 : 4;
    h->overhead_by_type[1] = kinds & K(OVERHEAD) ? 30 : 0;
    h->overhead_by_type[5] = kinds & K(OVERHEAD) ? 10 : 0;
    h->queue_capacity = 64;
    h->queue_depth = b ? 60 : 1 + t % 4;
    h->queue_high_water = b ? 64 : 8;
    h->req_lat = (cupstore_lat){100, 800, 3000, 9000};
    h->cmp_lat = (cupstore_lat){100, 2000, 15000, b ? 2000000u : 80000u};
    h->commit_lat = (cupstore_lat){10, 300000, 1500000, b ? 9000000u : 4000000u};
    h->batch_records_p50 = 4096;
    if (b) {
        h->loss[CUPSTORE_LOSS_CUPTI_DROPPED] = 300 + t % 200;
        h->loss[CUPSTORE_LOSS_DECLINED] = 3 * 1200;
        if (t % 60 == 12)
            h->loss[CUPSTORE_LOSS_QUEUE_OVERFLOW] = 4096;
        if (t % 60 == 20)
            h->loss[CUPSTORE_LOSS_ZERO_TS] = 17;
    }
}

/* The loss rows that go with a health row: exact by device, estimates by
 * kind, declined and queue losses host-side. */
static int put_losses(cupstore_txn *txn, const cupstore_health *h)
{
    int rc = 0;
    uint64_t dropped = h->loss[CUPSTORE_LOSS_CUPTI_DROPPED];
    if (dropped) {
        cupstore_loss_row r = {h->second, CUPSTORE_LOSS_CUPTI_DROPPED, CUPSTORE_KIND_ALL, 0,
                               false, dropped * 2 / 3};
        rc = rc ? rc : cupstore_loss_add(txn, &r);
        r.device = 1;
        r.count = dropped - dropped * 2 / 3;
        rc = rc ? rc : cupstore_loss_add(txn, &r);
        /* CUPTI does not say which kinds: an estimate from the record mix */
        r.device = CUPSTORE_DEVICE_NONE;
        r.estimate = true;
        r.kind = CUPSTORE_KIND_KERNEL;
        r.count = dropped * 6 / 10;
        rc = rc ? rc : cupstore_loss_add(txn, &r);
        r.kind = CUPSTORE_KIND_RUNTIME;
        r.count = dropped - dropped * 6 / 10;
        rc = rc ? rc : cupstore_loss_add(txn, &r);
    }
    for (unsigned c = CUPSTORE_LOSS_DECLINED; c < CUPSTORE_LOSS_MAX; c++) {
        if (!h->loss[c])
            continue;
        cupstore_loss_row r = {h->second, (uint8_t)c, CUPSTORE_KIND_ALL, CUPSTORE_DEVICE_NONE,
                               false, h->loss[c]};
        if (c == CUPSTORE_LOSS_ZERO_TS) {
            r.kind = CUPSTORE_KIND_KERNEL;
            r.device = 0;
        }
        rc = rc ? rc : cupstore_loss_add(txn, &r);
    }
    return rc;
}

static int put_records(cupstore_txn *txn, uint64_t second, unsigned n)
{
    cupstore_record recs[16];
    if (n > 16)
        n = 16;
    memset(recs, 0, sizeof recs);
    for (unsigned i = 0; i < n; i++) {
        cupstore_record *r = &recs[i];
        r->kind = i % 3 == 0 ? CUPSTORE_KIND_RUNTIME : CUPSTORE_KIND_KERNEL;
        r->device = r->kind == CUPSTORE_KIND_KERNEL ? (uint16_t)(i % 2) : CUPSTORE_DEVICE_NONE;
        r->correlation = (uint32_t)(second * 16 + i);
        r->start_ns = second * 1000000000u + i * 50000000u;
        r->end_ns = r->start_ns + 20000000u;
        r->name_id = r->kind == CUPSTORE_KIND_KERNEL ? 1 : 2;
        r->grid[0] = 128, r->block[0] = 256;
    }
    return cupstore_chunk_put(txn, recs, n);
}

static int put_meta(cupstore_txn *txn, const fill_session *s, uint64_t start_s)
{
    char pid[16], start[32];
    snprintf(pid, sizeof pid, "%d", s->pid);
    snprintf(start, sizeof start, "%llu", (unsigned long long)start_s * 1000000000u);
    static const char *const cmds[] = {
        "python3 train.py --epochs 3 --tag \x1b[31mred\x1b[0m",
        "./nbody -benchmark -numbodies=256000",
        "./bw_test --memory=pinned --mode=range",
        "torchrun --nproc 2 ddp.py\x07",
    };
    const char *cmd = cmds[(unsigned)s->kind % 4];
    int rc = cupstore_meta_put(txn, "pid", pid);
    rc = rc ? rc : cupstore_meta_put(txn, "host", "gpu-node-1");
    rc = rc ? rc : cupstore_meta_put(txn, "cmdline", cmd);
    rc = rc ? rc : cupstore_meta_put(txn, "start_ns", start);
    rc = rc ? rc : cupstore_meta_put(txn, "devices", "0:NVIDIA H200\n1:NVIDIA H200");
    rc = rc ? rc : cupstore_meta_put(txn, "cuda_version", "13.0");
    rc = rc ? rc : cupstore_meta_put(txn, "agent_version", "tui-fill-store");
    rc = rc ? rc : cupstore_meta_put(txn, "sink", "store");
    rc = rc ? rc : cupstore_name_put(txn, 1, "sgemm_128x64_nn", 15);
    rc = rc ? rc : cupstore_name_put(txn, 2, "cudaLaunchKernel", 16);
    return rc;
}

static int put_epochs(cupstore_txn *txn, const fill_session *s, uint64_t start_s)
{
    unsigned n = s->kind == FILL_COMPLETE ? 1 : 3;
    for (unsigned e = 1; e <= n; e++) {
        unsigned t0 = e == 1 ? 0 : e == 2 ? s->seconds / 2 : s->seconds * 4 / 5;
        unsigned t1 = e == n ? s->seconds : e == 1 ? s->seconds / 2 : s->seconds * 4 / 5;
        cupstore_epoch ep = {e, kinds_of_epoch(e), (start_s + t0) * 1000000000u,
                             (start_s + t1) * 1000000000u, e - 1};
        if (e == n && (s->kind == FILL_RUNNING || s->kind == FILL_CRASHED))
            ep.end_ns = 0;
        if (s->kind == FILL_COMPLETE)
            ep.kinds = CUPSTORE_KINDS_DEFAULT;
        int rc = cupstore_epoch_put(txn, &ep);
        if (rc)
            return rc;
        if (e > 1) {
            uint64_t gen;
            rc = cupstore_control_request(txn, ep.kinds, &gen);
            rc = rc ? rc : cupstore_control_ack(txn, gen, ep.start_ns, 0, 0);
            if (rc)
                return rc;
        }
    }
    if (s->pending_ctl && s->kind == FILL_RUNNING)
        return cupstore_control_request(txn, K(KERNEL), NULL);
    return 0;
}

static int put_final(cupstore_txn *txn, const fill_session *s, uint64_t end_s)
{
    cupstore_final f;
    memset(&f, 0, sizeof f);
    f.end_ns = end_s * 1000000000u + 900000000u;
    f.exit_path = CUPSTORE_EXIT_RETURN;
    f.protocol_complete = 1;
    f.flush_ok = 1;
    f.buffers_completed = f.buffers_consumed = 2 * (uint64_t)s->seconds;
    f.records_stored = 62540ull * s->seconds;
    if (s->kind == FILL_INCOMPLETE)
        f.tail_lost = 120;
    for (unsigned st = 0; st < CUPSTORE_STEP_MAX; st++) {
        cupstore_step step = {st, 1000u * st, 1000u * st + 500, 0, 0, 0};
        int rc = cupstore_step_put(txn, &step);
        if (rc)
            return rc;
    }
    return cupstore_final_put(txn, &f);
}

/* What the agent leaves when CUPTI cannot start: an epoch with the
 * configured kinds, health rows flagged DISABLED, a note, DETACH. */
static int put_no_cupti(cupstore_txn *txn, const fill_session *s, uint64_t start_s)
{
    uint64_t end_s = start_s + s->seconds - 1;
    cupstore_epoch ep = {1, CUPSTORE_KINDS_DEFAULT, start_s * 1000000000u,
                         end_s * 1000000000u, 0};
    int rc = cupstore_epoch_put(txn, &ep);
    for (unsigned t = 0; rc == 0 && t < s->seconds; t++) {
        cupstore_health h;
        memset(&h, 0, sizeof h);
        h.second = start_s + t;
        h.heartbeat_ns = h.second * 1000000000u + 500000000u;
        h.epoch = 1;
        h.kinds_enabled = CUPSTORE_KINDS_DEFAULT;
        h.flags = CUPSTORE_HF_DISABLED;
        rc = cupstore_health_put(txn, &h);
    }
    cupstore_note n;
    memset(&n, 0, sizeof n);
    n.time_ns = start_s * 1000000000u;
    n.level = 2;
    snprintf(n.text, sizeof n.text, "agent disabled: CUPTI could not start: "
                                    "cuptiActivityEnable: CUPTI_ERROR_UNKNOWN (999)");
    rc = rc ? rc : cupstore_note_put(txn, &n);
    cupstore_final f;
    memset(&f, 0, sizeof f);
    f.end_ns = end_s * 1000000000u + 900000000u;
    f.exit_path = CUPSTORE_EXIT_DETACH;
    return rc ? rc : cupstore_final_put(txn, &f);
}

#define MS 1000000ull
#define FILL_STEPS 8

static const char fill_evil[] = "\x1b[31mevil\x07\x1b]0;pwned\x07\xff";

const char *fill_range_name(uint32_t name_id, size_t *len)
{
    static const char *const names[] = {"step", "phase"};
    if (name_id == 103) {
        *len = sizeof fill_evil - 1;
        return fill_evil;
    }
    if (name_id < 101 || name_id > 102)
        return NULL;
    *len = strlen(names[name_id - 101]);
    return names[name_id - 101];
}

void fill_range_row(unsigned i, uint64_t start_s, unsigned seconds, cupstore_range *r)
{
    memset(r, 0, sizeof *r);
    r->id = 1000 + i;
    r->pid = 4242;
    r->tid = 4243 + i % 2;
    r->flags = CUPSTORE_RANGE_START | CUPSTORE_RANGE_END;
    uint64_t t0 = start_s * 1000000000ull;
    if (i < FILL_STEPS) {   /* step: 100..800 ms, the sixth 2.4 s */
        r->name_id = 101;
        r->depth = 1;
        r->start_ns = t0 + (30 + 20 * (uint64_t)i) * 1000000000ull + 250 * MS * i;
        uint64_t dur = i == 5 ? 2400 * MS : (uint64_t)((i * 5) % 8 + 1) * 100 * MS;
        r->end_ns = r->start_ns + dur;
    } else if (i == FILL_STEPS) {   /* step, still open at the end */
        r->name_id = 101;
        r->depth = 1;
        r->flags = CUPSTORE_RANGE_START;
        r->start_ns = t0 + (uint64_t)(seconds - 20) * 1000000000ull + 125 * MS;
    } else if (i == FILL_STEPS + 1) {   /* phase around the first steps */
        r->name_id = 102;
        r->start_ns = t0 + 20 * 1000000000ull;
        r->end_ns = t0 + 200 * 1000000000ull;
    } else if (i == FILL_STEPS + 2) {   /* a hostile name */
        r->name_id = 103;
        r->start_ns = t0 + 25 * 1000000000ull;
        r->end_ns = r->start_ns + 50 * MS;
    } else {   /* an unbalanced end */
        r->flags = CUPSTORE_RANGE_END;
        r->end_ns = t0 + 27 * 1000000000ull;
    }
}

static int put_ranges(cupstore_txn *txn, const fill_session *s, uint64_t start_s)
{
    int rc = 0;
    for (uint32_t n = 101; rc == 0 && n <= 103; n++) {
        size_t len;
        const char *name = fill_range_name(n, &len);
        rc = cupstore_name_put(txn, n, name, len);
    }
    for (unsigned i = 0; rc == 0 && i < FILL_RANGES; i++) {
        cupstore_range r;
        fill_range_row(i, start_s, s->seconds, &r);
        rc = cupstore_range_put(txn, &r);
    }
    return rc;
}

struct write_all_arg {
    const fill_session *s;
    uint64_t start_s;
};

/* The whole session in one txn (cupstore_write retries it when the map
 * was grown). */
static int put_all(cupstore_txn *txn, void *arg)
{
    const struct write_all_arg *w = arg;
    const fill_session *s = w->s;
    uint64_t start_s = w->start_s;
    int rc = put_meta(txn, s, start_s);
    if (s->kind == FILL_NO_CUPTI)
        return rc ? rc : put_no_cupti(txn, s, start_s);
    rc = rc ? rc : put_epochs(txn, s, start_s);
    for (unsigned t = 0; rc == 0 && t < s->seconds; t++) {
        cupstore_health h;
        uint64_t sec = start_s + t;
        fill_health_row(s->kind, t, s->seconds, kinds_of_epoch(epoch_of(s->kind, t, s->seconds)),
                        sec, &h);
        if (s->kind == FILL_COMPLETE)
            h.kinds_enabled = CUPSTORE_KINDS_DEFAULT;
        if (t + 1 == s->seconds && s->kind == FILL_INCOMPLETE)
            h.loss[CUPSTORE_LOSS_TAIL] = 120;
        rc = cupstore_health_put(txn, &h);
        rc = rc ? rc : put_losses(txn, &h);
        if (rc == 0 && t + 120 >= s->seconds)
            rc = put_records(txn, sec, 12);
    }
    if (rc == 0 && s->ranges)
        rc = put_ranges(txn, s, start_s);
    if (rc == 0 && (s->kind == FILL_COMPLETE || s->kind == FILL_INCOMPLETE))
        rc = put_final(txn, s, start_s + s->seconds - 1);
    return rc;
}

static int write_all(cupstore_env *env, const fill_session *s, uint64_t start_s)
{
    struct write_all_arg w = {s, start_s};
    return cupstore_write(env, put_all, &w, 4);
}

int fill_session_write(const char *dir, fill_session *s)
{
    cupstore_env *env;
    int rc = cupstore_session_create(&env, &s->id, dir, s->pid, NULL);
    if (rc)
        return rc;
    uint64_t start_s = s->end_s + 1 - s->seconds;
    rc = write_all(env, s, start_s);
    if (rc == 0)
        rc = cupstore_env_sync(env);
    cupstore_env_close(env);
    return rc;
}

/* ---- Live mode ------------------------------------------------------------ */

struct live_state {
    uint32_t kinds, epoch;
    uint64_t applied, epoch_start_ns;
};

/* Live ranges: one "step" of 200 ms per second, ending just before now. */
static int live_range(cupstore_txn *txn, unsigned t, uint64_t now)
{
    size_t len;
    const char *name = fill_range_name(101, &len);
    int rc = t == 0 ? cupstore_name_put(txn, 101, name, len) : 0;
    cupstore_range r;
    memset(&r, 0, sizeof r);
    r.id = 5000 + t;
    r.name_id = 101;
    r.flags = CUPSTORE_RANGE_START | CUPSTORE_RANGE_END;
    r.pid = 4242;
    r.tid = 4243;
    r.start_ns = now - 300 * MS;
    r.end_ns = now - 100 * MS;
    return rc ? rc : cupstore_range_put(txn, &r);
}

static int live_second(cupstore_env *env, unsigned t, struct live_state *ls, bool ranges)
{
    cupstore_txn *txn;
    int rc = cupstore_txn_begin(env, true, &txn);
    if (rc)
        return rc;
    uint64_t now = now_ns();
    cupstore_control c;
    rc = cupstore_control_latest(txn, &c);
    if (rc == 0 && c.gen > ls->applied) {
        /* Apply like the agent: close the epoch, open the next, ack. */
        cupstore_epoch e = {ls->epoch, ls->kinds, ls->epoch_start_ns, now, ls->applied};
        rc = cupstore_epoch_put(txn, &e);
        ls->kinds = c.kinds;
        ls->epoch++;
        ls->epoch_start_ns = now;
        cupstore_epoch ne = {ls->epoch, ls->kinds, now, 0, c.gen};
        rc = rc ? rc : cupstore_epoch_put(txn, &ne);
        rc = rc ? rc : cupstore_control_ack(txn, c.gen, now, 0, c.pool);
        ls->applied = c.gen;
    } else if (rc == CUPSTORE_ENOTFOUND) {
        rc = 0;
    }
    if (rc == 0) {
        cupstore_health h;
        uint64_t sec = now / 1000000000u;
        fill_health_row(FILL_RUNNING, 3 * t, 1u << 30, ls->kinds, sec, &h);
        h.heartbeat_ns = now;
        h.epoch = ls->epoch;
        h.ctl_gen_applied = h.ctl_gen_seen = ls->applied;
        /* Drops while the kernel kind is on: narrowing it clears them. */
        bool drop = (ls->kinds & K(KERNEL)) != 0;
        memset(h.loss, 0, sizeof h.loss);
        if (drop) {
            h.loss[CUPSTORE_LOSS_CUPTI_DROPPED] = 400 + t % 100;
            h.loss[CUPSTORE_LOSS_DECLINED] = 1200;
            h.buf_declined = 1;
            h.buf_outstanding = 8;
        } else {
            h.buf_declined = 0;
            h.buf_outstanding = 2;
            h.queue_depth = 2;
        }
        rc = cupstore_health_put(txn, &h);
        rc = rc ? rc : put_losses(txn, &h);
        rc = rc ? rc : put_records(txn, sec, 4);
        if (rc == 0 && ranges)
            rc = live_range(txn, t, now);
    }
    if (rc) {
        cupstore_txn_abort(txn);
        return rc;
    }
    return cupstore_txn_commit(txn);
}

static int last_epoch_cb(const cupstore_epoch *e, void *arg)
{
    struct live_state *ls = arg;
    if (e->id == ls->epoch)
        ls->epoch_start_ns = e->start_ns;
    return 0;
}

int fill_live(const char *dir, const char *id, unsigned duration, bool ranges,
              volatile int *stop)
{
    cupstore_env *env;
    int rc = cupstore_session_open(&env, dir, id, 0);
    if (rc)
        return rc;
    struct live_state ls = {KINDS_E3, 3, 2, now_ns()};
    cupstore_txn *txn;
    if (cupstore_txn_begin(env, false, &txn) == 0) {
        cupstore_health h;
        if (cupstore_health_last(txn, &h) == 0) {
            ls.kinds = h.kinds_enabled;
            ls.epoch = h.epoch;
            ls.applied = h.ctl_gen_applied;
        }
        (void)cupstore_epoch_scan(txn, last_epoch_cb, &ls);
        cupstore_txn_abort(txn);
    }
    for (unsigned t = 0; !*stop && (duration == 0 || t < duration); t++) {
        rc = live_second(env, t, &ls, ranges);
        if (rc && rc != EAGAIN)
            break;
        rc = 0;
        /* Sleep to the next second boundary. */
        uint64_t now = now_ns();
        struct timespec ts = {0, (long)(1000000000u - now % 1000000000u)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !*stop)
            ;
    }
    cupstore_env_close(env);
    return rc;
}
