/*
 * sim_truth.c - the ground truth: what the simulator produced, delivered,
 * dropped, held, and what the faults did, per device and kind; written as
 * a line-oriented file (format in doc/sim.md) with open/write/rename only,
 * so it can be written from an atexit handler or after a signal.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sim_int.h"

SIM_EXPORT void cuptopsim_truth_get(cuptopsim_truth *t)
{
    sim_init();
    sim_truth_collect(t);
}

/* A consistent snapshot: every slot lock and the queue lock are held at
 * once, so each record is counted in exactly one place. */
void sim_truth_collect(cuptopsim_truth *t)
{
    memset(t, 0, sizeof *t);
    t->devices = sim.cfg.devices;
    pthread_mutex_lock(&sim.reg_lock);
    for (sim_thread *th = sim.threads;; th = th->next) {
        if (!th)
            th = &sim.shared;
        for (unsigned d = 0; d < SIM_DEV_MAX; d++)
            pthread_mutex_lock(&th->slot[d].lock);
        if (th == &sim.shared)
            break;
    }
    pthread_mutex_lock(&sim.q_lock);
    for (sim_thread *th = sim.threads;; th = th->next) {
        if (!th)
            th = &sim.shared;
        for (unsigned d = 0; d < SIM_DEV_MAX; d++) {
            sim_slot *s = &th->slot[d];
            for (unsigned k = 0; k < SIM_KINDS; k++) {
                t->ops[d][k] += atomic_load_explicit(&s->ops[k], memory_order_relaxed);
                t->produced[d][k] += atomic_load_explicit(&s->produced[k], memory_order_relaxed);
                t->dropped[d][k] += atomic_load_explicit(&s->dropped[k], memory_order_relaxed);
                t->silent[d][k] += atomic_load_explicit(&s->silent[k], memory_order_relaxed);
                t->held[d][k] += s->cnt.rec[k];
            }
        }
        if (th == &sim.shared)
            break;
    }
    for (unsigned d = 0; d < SIM_DEV_MAX; d++)
        for (unsigned k = 0; k < CUPTOPSIM_GPU_KINDS; k++)
            for (unsigned s = 0; s < SIM_STREAM_MAX; s++)
                t->produced_stream[d][k][s] =
                    atomic_load_explicit(&sim.ctx[d].produced_stream[k][s], memory_order_relaxed);
    t->graph_nodes = sim.cfg.graph_nodes;
    for (unsigned d = 0; d < SIM_DEV_MAX; d++) {
        t->graph_node_records[d] =
            atomic_load_explicit(&sim.ctx[d].graph_node_records, memory_order_relaxed);
        for (unsigned k = 0; k < SIM_KINDS; k++) {
            t->held[d][k] += sim.queued[d][k];
            t->delivered[d][k] = sim.delivered[d][k];
            t->stolen[d][k] = sim.stolen[d][k];
            t->zero_ts[d][k] = sim.zero_ts[d][k];
            t->invalid[d][k] = sim.invalid[d][k];
            t->foreign[d][k] = sim.foreign[d][k];
        }
        t->reported_dropped[d] = atomic_load(&sim.ctx[d].reported);
        t->reported_via_null[d] = atomic_load(&sim.ctx[d].via_null);
        t->unreported_dropped[d] = atomic_load(&sim.ctx[d].pending_drops);
    }
    t->buffers_requested = atomic_load(&sim.b_requested);
    t->buffers_null = atomic_load(&sim.b_null);
    t->buffers_small = atomic_load(&sim.b_small);
    t->buffers_completed = sim.b_completed;
    t->buffers_dup = sim.b_dup;
    t->buffers_foreign = sim.b_foreign;
    t->buffers_stolen = sim.b_stolen;
    t->flushes = sim.flushes;
    t->flushes_forced = sim.flushes_forced;
    pthread_mutex_unlock(&sim.q_lock);
    for (unsigned c = 0; c < SIM_CALLS; c++) {
        t->call_count[c] = atomic_load_explicit(&sim.call_n[c], memory_order_relaxed);
        t->call_first_ns[c] = atomic_load_explicit(&sim.call_first[c], memory_order_relaxed);
        t->call_last_ns[c] = atomic_load_explicit(&sim.call_last[c], memory_order_relaxed);
    }
    for (unsigned d = 0; d < SIM_DEV_MAX; d++) {
        t->dumped_contexts[d] = atomic_load(&sim.dumped_ctx[d]);
        t->dumped_devices[d] = atomic_load(&sim.dumped_dev[d]);
    }
    t->dump_dropped = atomic_load(&sim.dump_dropped);
    t->api_callbacks = atomic_load(&sim.api_cbs);
    t->finalize_in_api_exit = atomic_load(&sim.fin_in_exit);
    t->finalize_outside = atomic_load(&sim.fin_outside);
    t->subscribed = sim.sub_used ? 1 : 0;
    for (sim_thread *th = sim.threads;; th = th->next) {
        if (!th)
            th = &sim.shared;
        for (unsigned d = 0; d < SIM_DEV_MAX; d++)
            pthread_mutex_unlock(&th->slot[d].lock);
        if (th == &sim.shared)
            break;
    }
    pthread_mutex_unlock(&sim.reg_lock);
}

/* Buffered writer over a file descriptor. */
typedef struct sim_out {
    int fd, err;
    size_t n;
    char buf[4096];
} sim_out;

static void sim_out_flush(sim_out *o)
{
    size_t off = 0;
    while (off < o->n && !o->err) {
        ssize_t w = write(o->fd, o->buf + off, o->n - off);
        if (w < 0 && errno != EINTR)
            o->err = errno;
        else if (w > 0)
            off += (size_t)w;
    }
    o->n = 0;
}

static void sim_out_line(sim_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sim_out_line(sim_out *o, const char *fmt, ...)
{
    va_list ap;
    if (sizeof o->buf - o->n < 256)
        sim_out_flush(o);
    va_start(ap, fmt);
    int w = vsnprintf(o->buf + o->n, sizeof o->buf - o->n, fmt, ap);
    va_end(ap);
    if (w > 0)
        o->n += (size_t)w < sizeof o->buf - o->n ? (size_t)w : sizeof o->buf - o->n - 1;
}

static void sim_out_table(sim_out *o, const char *what, unsigned devices,
                          const uint64_t v[CUPTOPSIM_DEV_MAX][CUPTOPSIM_KINDS])
{
    for (unsigned d = 0; d < devices; d++)
        for (unsigned k = 0; k < SIM_KINDS; k++)
            sim_out_line(o, "%s %u %s %llu\n", what, d + sim.cfg.device_base, sim_kind_name(k),
                         (unsigned long long)v[d][k]);
}

SIM_EXPORT int cuptopsim_truth_write(const char *path, int final, const char *exit_path)
{
    char target[PATH_MAX + 16], tmp[PATH_MAX + 48];
    cuptopsim_truth t;
    sim_out o;

    sim_init();
    if (!path) {
        if (!sim.cfg.truth[0])
            return 0;
        snprintf(target, sizeof target, "%s%s", sim.cfg.truth, sim.is_child ? ".child" : "");
    } else {
        snprintf(target, sizeof target, "%s", path);
    }
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", target, (long)getpid());
    /* Writes the library makes itself (forced flushes) keep the exit path
     * the application announced last. */
    if (exit_path && *exit_path)
        snprintf(sim.exit_path, sizeof sim.exit_path, "%s", exit_path);
    exit_path = sim.exit_path;
    sim_truth_collect(&t);
    o.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (o.fd < 0)
        return errno;
    o.err = 0;
    o.n = 0;
    sim_out_line(&o, "cuptopsim-truth 1\npid %ld\nchild %d\nscenario %s\napi_version %u\n"
                     "devices %u\nfinal %d\nexit_path %s\n",
                 (long)getpid(), sim.is_child ? 1 : 0, sim.cfg.scenario, sim.cfg.api_version,
                 t.devices, final ? 1 : 0, exit_path && *exit_path ? exit_path : "-");
    sim_out_table(&o, "ops", t.devices, t.ops);
    sim_out_table(&o, "produced", t.devices, t.produced);
    sim_out_table(&o, "delivered", t.devices, t.delivered);
    sim_out_table(&o, "dropped", t.devices, t.dropped);
    sim_out_table(&o, "held", t.devices, t.held);
    sim_out_table(&o, "stolen", t.devices, t.stolen);
    sim_out_table(&o, "zero_ts", t.devices, t.zero_ts);
    sim_out_table(&o, "invalid", t.devices, t.invalid);
    sim_out_table(&o, "foreign", t.devices, t.foreign);
    sim_out_table(&o, "silent", t.devices, t.silent);
    for (unsigned d = 0; d < t.devices; d++)
        sim_out_line(&o, "reported_dropped %u %llu\nreported_via_null %u %llu\n"
                         "unreported_dropped %u %llu\n",
                     d + sim.cfg.device_base, (unsigned long long)t.reported_dropped[d],
                     d + sim.cfg.device_base, (unsigned long long)t.reported_via_null[d],
                     d + sim.cfg.device_base,
                     (unsigned long long)t.unreported_dropped[d]);
    static const char *const gpu_kind[CUPTOPSIM_GPU_KINDS] = {"kernel", "memcpy", "memset"};
    for (unsigned d = 0; d < t.devices; d++)
        for (unsigned k = 0; k < CUPTOPSIM_GPU_KINDS; k++)
            for (unsigned s = 0; s < SIM_STREAM_MAX; s++)
                if (t.produced_stream[d][k][s])
                    sim_out_line(&o, "produced_stream %u %s %u %llu\n", d + sim.cfg.device_base,
                                 gpu_kind[k], SIM_STREAM_ID(s),
                                 (unsigned long long)t.produced_stream[d][k][s]);
    /* graph launches are ops of kind graph; their nodes' kernel records
     * are in produced/delivered of kind kernel, and counted apart here */
    sim_out_line(&o, "graph_nodes %u\n", t.graph_nodes);
    for (unsigned d = 0; d < t.devices; d++)
        sim_out_line(&o, "graph_node_records %u %llu\n", d + sim.cfg.device_base,
                     (unsigned long long)t.graph_node_records[d]);
    for (unsigned d = 0; d < t.devices; d++)
        sim_out_line(&o, "dumped_contexts %u %llu\ndumped_devices %u %llu\n",
                     d + sim.cfg.device_base, (unsigned long long)t.dumped_contexts[d],
                     d + sim.cfg.device_base, (unsigned long long)t.dumped_devices[d]);
    for (unsigned c = 0; c < SIM_CALLS; c++)
        if (t.call_count[c])
            sim_out_line(&o, "call %s %llu %llu %llu\n", sim_call_name(c),
                         (unsigned long long)t.call_count[c],
                         (unsigned long long)t.call_first_ns[c],
                         (unsigned long long)t.call_last_ns[c]);
    /* API calls per call id: made by the application (while anything
     * was enabled), and the records produced of them */
    for (unsigned dom = 0; dom < 2; dom++)
        for (unsigned id = 0; id < SIM_CBID_MAX; id++) {
            uint64_t calls = atomic_load_explicit(&sim.api_calls[dom][id], memory_order_relaxed);
            uint64_t prod = atomic_load_explicit(&sim.api_produced[dom][id], memory_order_relaxed);
            const char *const *tab = dom ? sim_driver_cbid_names : sim_runtime_cbid_names;
            unsigned n = dom ? sim_driver_cbid_names_count : sim_runtime_cbid_names_count;
            if (calls && id < n && tab[id])
                sim_out_line(&o, "api_calls %s %s %llu\napi_produced %s %s %llu\n",
                             dom ? "driver" : "runtime", tab[id], (unsigned long long)calls,
                             dom ? "driver" : "runtime", tab[id], (unsigned long long)prod);
        }
    sim_out_line(&o,
                 "buffers_requested %llu\nbuffers_null %llu\nbuffers_small %llu\n"
                 "buffers_completed %llu\nbuffers_dup %llu\nbuffers_foreign %llu\n"
                 "buffers_stolen %llu\nflushes %llu\nflushes_forced %llu\n"
                 "api_callbacks %llu\nfinalize_in_api_exit %llu\nfinalize_outside %llu\n"
                 "subscribed %d\nend\n",
                 (unsigned long long)t.buffers_requested, (unsigned long long)t.buffers_null,
                 (unsigned long long)t.buffers_small, (unsigned long long)t.buffers_completed,
                 (unsigned long long)t.buffers_dup, (unsigned long long)t.buffers_foreign,
                 (unsigned long long)t.buffers_stolen, (unsigned long long)t.flushes,
                 (unsigned long long)t.flushes_forced,
                 (unsigned long long)t.api_callbacks, (unsigned long long)t.finalize_in_api_exit,
                 (unsigned long long)t.finalize_outside, t.subscribed);
    sim_out_flush(&o);
    int err = o.err;
    if (close(o.fd) && !err)
        err = errno;
    if (!err && rename(tmp, target))
        err = errno;
    if (err)
        unlink(tmp);
    return err;
}

void sim_stream_counts_clear(void)
{
    for (unsigned d = 0; d < SIM_DEV_MAX; d++)
        for (unsigned k = 0; k < CUPTOPSIM_GPU_KINDS; k++)
            for (unsigned s = 0; s < SIM_STREAM_MAX; s++)
                atomic_store_explicit(&sim.ctx[d].produced_stream[k][s], 0, memory_order_relaxed);
    for (unsigned d = 0; d < SIM_DEV_MAX; d++)
        atomic_store_explicit(&sim.ctx[d].graph_node_records, 0, memory_order_relaxed);
}
