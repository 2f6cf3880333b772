/*
 * agent_health.c - the health thread: one cupstore_health row per second
 * (aligned to wall-clock seconds), loss rows per (second, class, device,
 * kind), CUPTI's drop counts per context, the control poll every 200 ms,
 * and the session's metadata and epochs.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent_control.h"
#include "agent_health.h"
#include "agent_int.h"
#include "agent_norm.h"

#define HEALTH_TICK_NS 200000000ull   /* control poll period             */
#define HEALTH_CATCHUP_S 30           /* rows written for a late tick     */

/* Health-thread-only state: the previous snapshot of every counter. */
typedef struct health_state {
    uint64_t prev[C_COUNT];
    agent_hist_snap req_prev, cmp_prev, commit_prev, batch_prev;
    uint32_t seen_noted;
    uint32_t devices_noted;
    uint32_t threads_noted;     /* threads_seen last stored (meta "threads") */
    /* CUPTI's drops by kind, estimated: in rows written, and in the last
     * row refused (agent_health_dropped_est) */
    uint64_t est_written[CUPSTORE_KIND_MAX], est_pending[CUPSTORE_KIND_MAX];
} health_state;

static health_state health_s;


/* ---- metadata and epochs ------------------------------------------------ */

static void read_cmdline(char *buf, size_t len)
{
    int fd = agent_fd_open("/proc/self/cmdline", O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0) {
        snprintf(buf, len, "?");
        return;
    }
    buf[n] = '\0';
    for (ssize_t i = 0; i < n - 1; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
}

unsigned long long agent_health_start_ticks(void)
{
    char buf[1024];
    unsigned long long t = 0;
    int fd = agent_fd_open("/proc/self/stat", O_RDONLY);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    /* after ") ": state is field 3; the start time is field 22 */
    for (int f = 2; p && f < 22; f++)
        p = strchr(p + 1, ' ');
    if (p)
        t = strtoull(p + 1, NULL, 10);
    return t;
}

/* The process's identity across PID namespaces (model_proc_find reads it):
 * meta boot_id (the kernel's; "unknown" without /proc), start_time (clock
 * ticks after boot) and pid_ns (the inode of its PID namespace; 0 unknown).
 * A reader in another namespace finds the process by these, not by pid.
 * Read before the store transaction: a file opened inside one takes the
 * descriptor hold (agent_fd.c) while holding the store's write lock, and
 * an attach holds them the other way round (the window thread's first
 * window during the session's start: both waited forever, truth matrix
 * 78000239). */
struct identity {
    char boot[64];
    unsigned long long start_ticks, pid_ns;
    char host[256];
};

static void identity_read(struct identity *id)
{
    struct stat st;
    int fd = agent_fd_open("/proc/sys/kernel/random/boot_id", O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, id->boot, sizeof id->boot - 1) : -1;
    if (fd >= 0)
        close(fd);
    id->boot[n > 0 ? n : 0] = '\0';
    id->boot[strcspn(id->boot, "\n")] = '\0';
    id->start_ticks = agent_health_start_ticks();
    id->pid_ns = stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0ull;
    snprintf(id->host, sizeof id->host, "?");
    (void)gethostname(id->host, sizeof id->host - 1);
}

static int put_identity(cupstore_txn *txn, const struct identity *id)
{
    char buf[32];
    int rc = cupstore_meta_put(txn, "boot_id", id->boot[0] ? id->boot : "unknown");
    snprintf(buf, sizeof buf, "%llu", id->start_ticks);
    if (rc == 0)
        rc = cupstore_meta_put(txn, "start_time", buf);
    snprintf(buf, sizeof buf, "%llu", id->pid_ns);
    if (rc == 0)
        rc = cupstore_meta_put(txn, "pid_ns", buf);
    return rc;
}

struct meta_arg {
    agent *a;
    const char *cupti_note;
    struct identity id;
    char cmdline[4096];
};

/* One setting as the structured key config.KEY (agent_config_each). */
static int put_config_key(const char *key, const char *value, void *arg)
{
    char k[64];
    snprintf(k, sizeof k, AGENT_CONFIG_META_PREFIX "%s", key);
    return cupstore_meta_put(arg, k, value);
}

/* The process: pid, host and identity (what the model checks liveness by). */
static int put_process(cupstore_txn *txn, void *arg)
{
    const struct identity *id = arg;
    char buf[32];
    snprintf(buf, sizeof buf, "%d", (int)getpid());
    int rc = cupstore_meta_put(txn, "pid", buf);
    if (rc == 0)
        rc = cupstore_meta_put(txn, "host", id->host);
    return rc ? rc : put_identity(txn, id);
}

int agent_health_put_process(agent *a)
{
    struct identity id;
    if (!a->env)
        return 0;
    identity_read(&id);
    return agent_store_put(a, put_process, &id, AGENT_PUT_TRIES);
}

static int put_meta(cupstore_txn *txn, void *arg)
{
    struct meta_arg *m = arg;
    agent *a = m->a;
    char buf[4096];
    int rc = put_process(txn, &m->id);

#define PUT(k, v)                                      \
    do {                                               \
        if (rc == 0)                                   \
            rc = cupstore_meta_put(txn, (k), (v));     \
    } while (0)
    PUT("cmdline", m->cmdline);
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)agent_real_ns());
    PUT("start_ns", buf);
    PUT("agent_version", AGENT_VERSION);
    PUT("sink", a->cfg.sink == AGENT_SINK_NULL ? "null" : "store");
    PUT("cupti_library", a->cupti.path[0] ? a->cupti.path : "(not loaded: dormant)");
    if (agent_attach_loaded(a)) {
        snprintf(buf, sizeof buf, "%u", a->api_version);
        PUT("cupti_api_version", buf);
    }
    if (rc == 0)
        rc = agent_prov_put(a, txn);   /* versions, host, label, unknowns */
    if (m->cupti_note) {
        /* CUPTI could not start: why, and CUPTI's code when it gave one */
        PUT("cupti_error", m->cupti_note);
        if (a->cupti_error_rc) {
            snprintf(buf, sizeof buf, "%d", a->cupti_error_rc);
            PUT("cupti_error_code", buf);
        }
    }
    agent_config_format(&a->cfg, buf, sizeof buf);
    PUT("config", buf);
#undef PUT
    if (rc == 0)
        rc = agent_config_each(&a->cfg, put_config_key, txn);
    if (rc == 0 && a->session_ok) {
        cupstore_epoch e;
        agent_epoch_fill(a, &e);
        rc = cupstore_epoch_put(txn, &e);
        if (rc == 0)
            rc = agent_api_muted_put(a, txn);
    }
    return rc;
}

void agent_health_begin_session(agent *a, const char *cupti_note)
{
    static struct meta_arg m;   /* one session start at a time (stop_lock) */
    m.a = a;
    m.cupti_note = cupti_note;
    agent_epoch_begin(a);
    memset(&health_s, 0, sizeof health_s);
    if (!a->env)
        return;
    identity_read(&m.id);   /* files: before the transaction */
    read_cmdline(m.cmdline, sizeof m.cmdline);
    int rc = agent_store_put(a, put_meta, &m, AGENT_PUT_TRIES);
    if (rc)
        agent_log(a, 1, "cannot write session metadata: %s", cupstore_strerror(rc));
    if (a->session_ok && !agent_attached(a) && !a->cfg.capture)
        agent_note(a, 0, "dormant: CUPTI not attached (no CUPTI call) until a control "
                   "request turns kinds on");
}

static int put_threads(cupstore_txn *txn, void *arg)
{
    char buf[16];
    snprintf(buf, sizeof buf, "%u", *(uint32_t *)arg);
    return cupstore_meta_put(txn, "threads", buf);
}

static int put_devices(cupstore_txn *txn, void *arg)
{
    uint32_t mask = *(uint32_t *)arg;
    char buf[1024] = "";
    size_t off = 0;
    int (*getname)(char *, int, int) =
        (int (*)(char *, int, int))dlsym(RTLD_DEFAULT, "cuDeviceGetName");
    for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX && off < sizeof buf - 80; d++) {
        char name[64] = "device";
        if (!(mask & (1u << d)))
            continue;
        if (getname && getname(name, sizeof name, (int)d) != 0)
            snprintf(name, sizeof name, "device");
        off += (size_t)snprintf(buf + off, sizeof buf - off, "%u:%s\n", d, name);
    }
    return cupstore_meta_put(txn, "devices", buf);
}

/* Every tick: range transitions into epochs, a finished teardown noted,
 * the open epoch refreshed, then the control request (agent_control.c). */
static void health_tick(agent *a)
{
    if (!a->env)
        return;
    agent_scope_poll(a);
    if (agent_finalize_done(a) && agent_stop_trylock(a)) {
        agent_finalize_settle(a, false);   /* the detach's teardown ran: note it */
        agent_stop_unlock(a);
    }
    agent_epoch_refresh(a);
    agent_control_poll(a);
}

/* ---- per-second rows ------------------------------------------------------ */

/* Ask CUPTI for drops: every known context (per device), then NULL for the
 * rest.  The counts reset on read, so each lands in the second it is read. */
void agent_health_query_drops(agent *a)
{
    size_t n;
    if (!agent_attached(a))
        return;
    pthread_mutex_lock(&a->ctx_lock);
    for (int i = 0; i < AGENT_CTX_MAX; i++) {
        n = 0;
        if (a->ctx[i].cu &&
            a->cupti.ActivityGetNumDroppedRecords(a->ctx[i].cu, 0, &n) == CUPTI_SUCCESS && n)
            agent_count(a, agent_c_loss(CUPSTORE_LOSS_CUPTI_DROPPED,
                                        agent_dev_slot(a->ctx[i].device), AGENT_KIND_ALL), n);
    }
    for (unsigned d = 0; d < AGENT_DEVS; d++)
        if (a->dropped_at_destroy[d]) {
            agent_count(a, agent_c_loss(CUPSTORE_LOSS_CUPTI_DROPPED, d, AGENT_KIND_ALL),
                        a->dropped_at_destroy[d]);
            a->dropped_at_destroy[d] = 0;
        }
    pthread_mutex_unlock(&a->ctx_lock);
    n = 0;
    if (a->cupti.ActivityGetNumDroppedRecords(NULL, 0, &n) == CUPTI_SUCCESS && n)
        agent_count(a, agent_c_loss(CUPSTORE_LOSS_CUPTI_DROPPED, AGENT_DEV_NONE, AGENT_KIND_ALL), n);
}

static void lat_fill(cupstore_lat *l, agent_hist *h, agent_hist_snap *prev)
{
    agent_hist_snap s;
    agent_hist_take(h, prev, &s);
    uint64_t p50 = agent_hist_quantile(&s, 0.50), p99 = agent_hist_quantile(&s, 0.99);
    l->count = s.count > UINT32_MAX ? UINT32_MAX : (uint32_t)s.count;
    l->p50_ns = p50 > UINT32_MAX ? UINT32_MAX : (uint32_t)p50;
    l->p99_ns = p99 > UINT32_MAX ? UINT32_MAX : (uint32_t)p99;
    l->max_ns = s.max_ns > UINT32_MAX ? UINT32_MAX : (uint32_t)s.max_ns;
}

#define HEALTH_ROWS_MAX (CUPSTORE_LOSS_MAX * AGENT_DEVS * AGENT_KINDS + AGENT_DEVS * AGENT_KINDS + 1)

struct row_arg {
    cupstore_health h;
    cupstore_loss_row rows[HEALTH_ROWS_MAX];
    size_t nrows;
};

static int put_row(cupstore_txn *txn, void *arg)
{
    struct row_arg *r = arg;
    int rc = cupstore_health_put(txn, &r->h);
    for (size_t i = 0; i < r->nrows && rc == 0; i++)
        rc = cupstore_loss_add(txn, &r->rows[i]);
    return rc;
}

/* Split a device's exact drop count over kinds in proportion to this
 * second's record mix (largest remainder, so the parts sum to the whole).
 * These rows say estimate = true: CUPTI does not report drops per kind. */
static void health_estimate(struct row_arg *r, uint64_t second, unsigned dev, uint64_t drops,
                            const uint64_t *by_kind, uint32_t kinds)
{
    uint64_t total = 0, given = 0, share[CUPSTORE_KIND_MAX] = {0};
    double rem[CUPSTORE_KIND_MAX] = {0};
    uint64_t w[CUPSTORE_KIND_MAX];

    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++) {
        w[k] = by_kind[k];
        total += w[k];
    }
    if (total == 0)   /* nothing parsed this second: split over enabled kinds */
        for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++) {
            w[k] = (kinds >> k) & 1u;
            total += w[k];
        }
    if (total == 0)
        return;
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++) {
        double exact = (double)drops * (double)w[k] / (double)total;
        share[k] = (uint64_t)exact;
        rem[k] = exact - (double)share[k];
        given += share[k];
    }
    while (given < drops) {
        unsigned best = 0;
        for (unsigned k = 1; k < CUPSTORE_KIND_MAX; k++)
            if (rem[k] > rem[best])
                best = k;
        share[best]++;
        rem[best] = -1.0;
        given++;
    }
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
        if (share[k])
            r->rows[r->nrows++] = (cupstore_loss_row){
                .second = second, .loss = CUPSTORE_LOSS_CUPTI_DROPPED, .kind = (uint8_t)k,
                .device = dev == AGENT_DEV_NONE ? CUPSTORE_DEVICE_NONE : (uint16_t)dev,
                .estimate = true, .count = share[k]};
}

/* The records lost in the shared last-resort discard buffer, which is
 * never read: its bytes times the records per byte of the pooled discard
 * buffers (the same declined traffic), else of the buffers parsed.  One
 * loss row, declined, all kinds, no device, estimate = true: an estimated
 * count of its own, not a split of an exact one, so it is never in the
 * health row's exact declined count.  No ratio known: no row (the note
 * says the count is unknown). */
static void health_shared_estimate(struct row_arg *r, uint64_t second, uint64_t bytes,
                                   const uint64_t *now)
{
    uint64_t recs = now[C_DISCARD_RECORDS], per = now[C_DISCARD_BYTES];
    if (!recs || !per) {
        recs = now[C_RECORDS_PARSED];
        per = now[C_BYTES] - now[C_DISCARD_BYTES] - now[C_SHARED_BYTES];
    }
    if (!recs || !per || per > now[C_BYTES])
        return;
    uint64_t n = (uint64_t)((double)bytes * (double)recs / (double)per + 0.5);
    if (n)
        r->rows[r->nrows++] = (cupstore_loss_row){
            .second = second, .loss = CUPSTORE_LOSS_DECLINED, .kind = CUPSTORE_KIND_ALL,
            .device = CUPSTORE_DEVICE_NONE, .estimate = true, .count = n};
}

static void health_notes(agent *a)
{
    static const struct {
        uint32_t bit;
        const char *text;
    } seen[] = {
        {AGENT_SEEN_FOREIGN, "buffers completed that the agent never handed out: another "
                             "CUPTI client is active in this process (subscriber conflict)"},
        {AGENT_SEEN_DUPLICATE, "a buffer was completed twice (counted as conflict)"},
        {AGENT_SEEN_OVERFLOW, "the completed-buffer queue overflowed"},
        {AGENT_SEEN_DECLINED, "buffer requests declined: every buffer of the pool was out"},
        {AGENT_SEEN_PARSE_ERROR, "CUPTI returned records it could not parse"},
        {AGENT_SEEN_SHARED_DISCARD, "every discard buffer was out: declined requests got the "
                                    "shared last-resort buffer, which CUPTI may write from "
                                    "several threads at once; its records are never read and "
                                    "their number is an estimate (from its bytes)"},
    };
    uint32_t f = atomic_load_explicit(&a->flags_seen, memory_order_relaxed);
    for (size_t i = 0; i < sizeof seen / sizeof seen[0]; i++)
        if ((f & seen[i].bit) && !(health_s.seen_noted & seen[i].bit)) {
            health_s.seen_noted |= seen[i].bit;
            bool warn = seen[i].bit == AGENT_SEEN_DECLINED ||
                        seen[i].bit == AGENT_SEEN_SHARED_DISCARD;
            agent_note(a, warn ? 1 : 2, "%s", seen[i].text);
        }
}

/* Write the row for one second (and its loss rows).  A periodic row
 * leaves half the disk reserve alone; the last one may use all of it. */
static void health_write(agent *a, uint64_t second, bool last)
{
    static struct row_arg r;   /* health thread only; too big for a stack */
    uint64_t cur[C_COUNT], *prev = health_s.prev;
    uint64_t by_kind[CUPSTORE_KIND_MAX] = {0};
    uint32_t kinds = (uint32_t)atomic_load(&a->kinds);
    int st = atomic_load(&a->state);

    static uint64_t now[C_COUNT];
    agent_health_query_drops(a);
    for (unsigned i = 0; i < C_COUNT; i++) {
        now[i] = atomic_load_explicit(&a->c[i], memory_order_relaxed);
        cur[i] = now[i] - prev[i];
    }
    memset(&r, 0, sizeof r);
    cupstore_health *h = &r.h;
    h->second = second;
    h->heartbeat_ns = agent_real_ns();
    h->epoch = agent_epoch_id(a);
    /* while stopping, the kinds are off: report the epoch's scope */
    h->kinds_enabled = (st == AGENT_RUNNING) ? kinds : agent_epoch_kinds(a);
    agent_control_gens(a, &h->ctl_gen_applied, &h->ctl_gen_seen);
    h->buf_requested = cur[C_BUF_REQUESTED];
    h->buf_provided = cur[C_BUF_PROVIDED];
    h->buf_declined = cur[C_BUF_DECLINED];
    h->buf_completed = cur[C_BUF_COMPLETED];
    h->buf_consumed = cur[C_BUF_CONSUMED];
    h->buf_foreign = cur[C_BUF_FOREIGN] + cur[C_BUF_DUPLICATE];
    h->bytes_delivered = cur[C_BYTES];
    if (a->pool_ready) {
        h->buf_outstanding = atomic_load(&a->pool.outstanding);
        h->pool_limit = atomic_load(&a->pool.limit);
        h->pool_high_water = atomic_load(&a->pool.high_water);
    }
    h->records_parsed = cur[C_RECORDS_PARSED];
    h->records_stored = cur[C_RECORDS_STORED];
    agent_launches_health(a, h);
    for (unsigned d = 0; d < AGENT_DEVS; d++)
        for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++) {
            uint64_t n = cur[agent_c_rec(d, k)];
            by_kind[k] += n;
            if (d < CUPSTORE_DEVICE_MAX)
                h->records_by_device[d] += n;
        }
    memcpy(h->records_by_kind, by_kind, sizeof by_kind);
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
        for (unsigned d = 0; d < AGENT_DEVS; d++)
            for (unsigned k = 0; k < AGENT_KINDS; k++) {
                uint64_t n = cur[agent_c_loss(l, d, k)];
                if (!n)
                    continue;
                h->loss[l] += n;
                r.rows[r.nrows++] = (cupstore_loss_row){
                    .second = second, .loss = (uint8_t)l,
                    .kind = k == AGENT_KIND_ALL ? CUPSTORE_KIND_ALL : (uint8_t)k,
                    .device = d == AGENT_DEV_NONE ? CUPSTORE_DEVICE_NONE : (uint16_t)d,
                    .count = n};
                if (l == CUPSTORE_LOSS_CUPTI_DROPPED && k == AGENT_KIND_ALL)
                    /* the epoch's kinds while stopping (the kinds are off by
                     * then, and the stop's last drop query can be most of
                     * the session's drops); with none on now (a detach, a
                     * range's or window's end) the kinds that were on when
                     * the records were dropped (truth matrix 1707015121106,
                     * 1707040121192: 4,200 and 894 drops in no kind) */
                    health_estimate(&r, second, d, n, by_kind,
                                    h->kinds_enabled ? h->kinds_enabled : agent_epoch_kinds_on(a));
            }
    if (cur[C_SHARED_BYTES])
        health_shared_estimate(&r, second, cur[C_SHARED_BYTES], now);
    for (unsigned i = 0; i < CUPSTORE_OVERHEAD_MAX; i++)
        h->overhead_by_type[i] = cur[C_OVH + i];
    h->queue_depth = (uint32_t)agent_queue_depth(&a->queue);
    h->queue_high_water = (uint32_t)atomic_load(&a->queue.high_water);
    h->queue_capacity = (uint32_t)a->queue.capacity;
    lat_fill(&h->req_lat, &a->req_lat, &health_s.req_prev);
    lat_fill(&h->cmp_lat, &a->cmp_lat, &health_s.cmp_prev);
    lat_fill(&h->commit_lat, &a->commit_lat, &health_s.commit_prev);
    {
        agent_hist_snap s;
        agent_hist_take(&a->batch_size, &health_s.batch_prev, &s);
        h->batch_records_p50 = (uint32_t)agent_hist_quantile(&s, 0.5);
    }
    h->store_refused = (uint32_t)cur[C_STORE_REFUSED];
    if (kinds == 0 && st == AGENT_RUNNING)
        h->flags |= CUPSTORE_HF_DORMANT;
    if (agent_attached(a))
        h->flags |= CUPSTORE_HF_ATTACHED;
    if (a->cfg.devices || a->cfg.capture != AGENT_CAPTURE_NONE)
        h->flags |= CUPSTORE_HF_SCOPED;
    if (st == AGENT_STOPPING || st == AGENT_STOPPED)
        h->flags |= CUPSTORE_HF_STOPPING;
    if (st == AGENT_OFF)
        h->flags |= CUPSTORE_HF_DISABLED;
    if (a->cfg.sink == AGENT_SINK_NULL)
        h->flags |= CUPSTORE_HF_COUNT_ONLY;

    int rc = ENOSPC;
    if (last || agent_reserve_room(a, sizeof r, AGENT_RESERVE_KEEP / 2))
        rc = agent_store_put(a, put_row, &r, AGENT_PUT_TRIES);
    for (size_t i = 0; i < r.nrows && rc == 0; i++)
        if (r.rows[i].estimate && r.rows[i].kind < CUPSTORE_KIND_MAX &&
            r.rows[i].loss == CUPSTORE_LOSS_CUPTI_DROPPED)
            health_s.est_written[r.rows[i].kind] += r.rows[i].count;
    memset(health_s.est_pending, 0, sizeof health_s.est_pending);
    for (size_t i = 0; i < r.nrows && rc != 0; i++)
        if (r.rows[i].estimate && r.rows[i].kind < CUPSTORE_KIND_MAX &&
            r.rows[i].loss == CUPSTORE_LOSS_CUPTI_DROPPED)
            health_s.est_pending[r.rows[i].kind] += r.rows[i].count;
    if (rc == 0) {
        memcpy(prev, now, sizeof now);
    } else {
        /* not written: the counts carry over into the next row */
        agent_count(a, C_STORE_REFUSED, 1);
        agent_log(a, 1, "health row for %llu not written: %s", (unsigned long long)second,
                  cupstore_strerror(rc));
    }
    health_notes(a);
    uint32_t mask = atomic_load(&a->device_mask);
    if (mask != health_s.devices_noted) {
        uint32_t fresh = mask & ~health_s.devices_noted;
        char list[64] = "";
        size_t off = 0;
        for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX; d++)
            if (a->cfg.devices & (1u << d))
                off += (size_t)snprintf(list + off, sizeof list - off, "%s%u", off ? "," : "", d);
        for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX && a->cfg.devices; d++)
            if ((fresh & (1u << d)) && !(a->cfg.devices & (1u << d)))
                agent_note(a, 0, "device %u: out of scope (--devices %s): its kernel, memcpy, "
                           "memset and sync records are not collected", d, list);
        health_s.devices_noted = mask;
        (void)agent_store_put(a, put_devices, &mask, AGENT_PUT_TRIES);
    }
    /* how many threads took buffers: the pool they need grows with them */
    uint32_t threads = atomic_load_explicit(&a->threads_seen, memory_order_relaxed);
    if (threads != health_s.threads_noted &&
        agent_store_put(a, put_threads, &threads, AGENT_PUT_TRIES) == 0)
        health_s.threads_noted = threads;
    (void)agent_store_reader_check(a);
}

/* The tick ran late: a row for each second that ended meanwhile, so a
 * running session has one per second (`export` and `check` of a second
 * with no row and no record find "no data").  The thread applies control
 * requests: a detach that drained a slow consumer on a slow disk held it
 * 1.9 s (truth matrix 1105020315080).  The counts read at the first row
 * land in it, as counts land in the second they are read; the others
 * carry what came since.  A longer gap (a suspended process) stays one.
 * @return the next tick after now. */
static uint64_t health_catch_up(agent *a, uint64_t next, uint64_t now)
{
    uint64_t first = (next + 999999999u) / 1000000000u, last = now / 1000000000u;
    if (last >= first && last - first < HEALTH_CATCHUP_S)
        for (uint64_t b = first; b <= last && !atomic_load(&a->health.quit); b++)
            health_write(a, b - 1, false);
    return (now / HEALTH_TICK_NS + 1) * HEALTH_TICK_NS;
}

static void *health_main(void *arg)
{
    agent *a = arg;
    uint64_t next = (agent_real_ns() / HEALTH_TICK_NS + 1) * HEALTH_TICK_NS;

    agent_thread_enter();
    for (;;) {
        struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
        pthread_mutex_lock(&a->health.lock);
        while (!atomic_load(&a->health.quit) && agent_real_ns() < next)
            if (pthread_cond_timedwait(&a->health.cond, &a->health.lock, &ts) == ETIMEDOUT)
                break;
        pthread_mutex_unlock(&a->health.lock);
        if (atomic_load(&a->health.quit))
            break;
        if (next % 1000000000u == 0)
            health_write(a, next / 1000000000u - 1, false);
        health_tick(a);
        uint64_t now = agent_real_ns();
        next += HEALTH_TICK_NS;
        if (next <= now)   /* fell behind: the rows missed, then realign */
            next = health_catch_up(a, next, now);
    }
    /* last (partial) second: carries the stop protocol's counts */
    health_write(a, agent_real_ns() / 1000000000u, true);
    return NULL;
}

int agent_health_start(agent *a)
{
    atomic_store(&a->health.quit, 0);
    int rc = pthread_create(&a->health.th, NULL, health_main, a);
    a->health.up = rc == 0;
    return rc;
}

int agent_health_stop(agent *a, uint32_t timeout_ms)
{
    struct timespec ts;
    if (!a->health.up)
        return 0;
    pthread_mutex_lock(&a->health.lock);
    atomic_store(&a->health.quit, 1);
    pthread_cond_broadcast(&a->health.cond);
    pthread_mutex_unlock(&a->health.lock);
    agent_deadline(&ts, timeout_ms);
    int rc = pthread_timedjoin_np(a->health.th, NULL, &ts);
    if (rc == 0)
        a->health.up = false;
    return rc;
}

int agent_health_dropped_est(agent *a, uint64_t *out)
{
    if (a->health.up)
        return EBUSY;
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
        out[k] = health_s.est_written[k] + health_s.est_pending[k];
    return 0;
}

void agent_health_forked(agent *a)
{
    pthread_mutex_init(&a->health.lock, NULL);
    pthread_cond_init(&a->health.cond, NULL);
    a->health.up = false;
}
