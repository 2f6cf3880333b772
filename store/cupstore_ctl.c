/*
 * cupstore_ctl.c - epochs, control requests, marks, notes, stop-protocol
 * steps and the final status.  All values are TLV rows (cupstore_codec.c)
 * so fields can be added without breaking old readers.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cupstore_int.h"

#define F(st_, id_, type_, count_, field_)                                                       \
    {.id = (id_), .type = CUPSTORE_TLV_##type_, .count = (count_), .offset = offsetof(st_, field_)}
#define NF(t) (sizeof(t) / sizeof((t)[0]))

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Greatest BE u64 key in db (0 when empty). */
static int last_key64(cupstore_txn *txn, int db, uint64_t *last)
{
    MDB_cursor *cur;
    MDB_val k, v;
    *last = 0;
    int rc = cupstore_cursor(txn, db, &cur);
    if (rc)
        return rc;
    rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
    cupstore_cursor_close(txn, cur);
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc)
        return cupstore_mdb_err(rc);
    if (k.mv_size != 8)
        return CUPSTORE_ECORRUPT;
    *last = cupstore_be64_get(k.mv_data);
    return 0;
}

/* ---- Epochs: key BE u32 id ---------------------------------------------- */
static const cupstore_tlv_field epoch_fields[] = {
    F(cupstore_epoch, 1, U32, 1, kinds),
    F(cupstore_epoch, 2, U64, 1, start_ns),
    F(cupstore_epoch, 3, U64, 1, end_ns),
    F(cupstore_epoch, 4, U64, 1, ctl_gen),
    F(cupstore_epoch, 5, U32, 1, flags),
    F(cupstore_epoch, 6, U64, 1, attach_ns),
    F(cupstore_epoch, 7, U64, 1, attach_cost_ns),
    F(cupstore_epoch, 8, U32, 1, devices),
    F(cupstore_epoch, 9, U32, 1, pre_contexts),
    F(cupstore_epoch, 20, U32, 1, api_mode),
    F(cupstore_epoch, 21, U32, 2, api_muted),
    {.id = 22, .type = CUPSTORE_TLV_STR, .count = CUPSTORE_API_POLICY_MAX,
     .offset = offsetof(cupstore_epoch, api_policy)},
    F(cupstore_epoch, 23, U64, 1, sched_ns),
    F(cupstore_epoch, 24, U32, 1, period_ms),
    F(cupstore_epoch, 25, U32, 1, window_ms),
};

const char *cupstore_api_mode_name(uint32_t mode)
{
    static const char *const names[] = {"-", "all", "gpu", "none"};
    return mode < sizeof names / sizeof names[0] ? names[mode] : "-";
}

void cupstore_epoch_flags_format(uint32_t flags, char *buf, size_t len)
{
    static const char *const names[] = {"attached", "late_attach", "drops_unattributed",
                                        "out_of_scope", "no_callbacks", "capture",
                                        "api_unfiltered"};
    size_t off = 0;
    if (!len)
        return;
    buf[0] = '\0';
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        if (flags & (1u << i)) {
            int n = snprintf(buf + off, len - off, "%s%s", off ? "," : "", names[i]);
            if (n < 0 || (size_t)n >= len - off)
                break;
            off += (size_t)n;
        }
    if (!off)
        snprintf(buf, len, "-");
}

int cupstore_epoch_put(cupstore_txn *txn, const cupstore_epoch *e)
{
    uint8_t key[4];
    if (!e || e->id == 0)
        return CUPSTORE_EINVAL;
    cupstore_be32_put(key, e->id);
    return cupstore_tlv_put(txn, CUPSTORE_DB_EPOCHS, key, 4, epoch_fields, NF(epoch_fields), e);
}

/* Typed callback and argument of one scan. */
struct cb {
    union {
        cupstore_epoch_fn epoch;
        cupstore_control_fn control;
        cupstore_mark_fn mark;
        cupstore_note_fn note;
        cupstore_step_fn step;
    } fn;
    void *arg;
};

static int epoch_step(const MDB_val *k, const MDB_val *v, void *arg, bool *done)
{
    (void)done;
    struct cb *c = arg;
    cupstore_epoch e;
    if (k->mv_size != 4 || cupstore_tlv_decode(epoch_fields, NF(epoch_fields), v->mv_data,
                                               v->mv_size, &e, sizeof e))
        return CUPSTORE_ECORRUPT;
    e.id = cupstore_be32_get(k->mv_data);
    return c->fn.epoch(&e, c->arg);
}

int cupstore_epoch_scan(cupstore_txn *txn, cupstore_epoch_fn fn, void *arg)
{
    struct cb c = {.fn.epoch = fn, .arg = arg};
    if (!txn || !fn)
        return CUPSTORE_EINVAL;
    return cupstore_walk(txn, CUPSTORE_DB_EPOCHS, NULL, 0, epoch_step, &c);
}

/* ---- Control: key BE u64 generation -------------------------------------- */
static const cupstore_tlv_field control_fields[] = {
    F(cupstore_control, 1, U32, 1, kinds),
    F(cupstore_control, 2, U64, 1, requested_ns),
    F(cupstore_control, 3, U64, 1, applied_ns),
    F(cupstore_control, 4, I32, 1, result),
    F(cupstore_control, 5, U32, 1, pool),
    F(cupstore_control, 6, U32, 1, pool_applied),
    F(cupstore_control, 20, U32, 1, api_mode),
    F(cupstore_control, 21, U32, 1, api_set),
    {.id = 22, .type = CUPSTORE_TLV_STR, .count = CUPSTORE_API_GLOBS_MAX,
     .offset = offsetof(cupstore_control, api_include)},
    {.id = 23, .type = CUPSTORE_TLV_STR, .count = CUPSTORE_API_GLOBS_MAX,
     .offset = offsetof(cupstore_control, api_exclude)},
    F(cupstore_control, 24, U32, 1, every_set),
    F(cupstore_control, 25, U32, 1, every_period_ms),
    F(cupstore_control, 26, U32, 1, every_window_ms),
    F(cupstore_control, 27, U32, 1, ledger_set),
};

static int control_from(const MDB_val *k, const MDB_val *v, cupstore_control *c)
{
    if (k->mv_size != 8 || cupstore_tlv_decode(control_fields, NF(control_fields), v->mv_data,
                                               v->mv_size, c, sizeof *c))
        return CUPSTORE_ECORRUPT;
    c->gen = cupstore_be64_get(k->mv_data);
    return 0;
}

int cupstore_control_request(cupstore_txn *txn, uint32_t kinds, uint64_t *gen)
{
    return cupstore_control_request_pool(txn, kinds, 0, gen);
}

int cupstore_control_request_pool(cupstore_txn *txn, uint32_t kinds, uint32_t pool,
                                  uint64_t *gen)
{
    cupstore_control c = {0};
    c.kinds = kinds;
    c.pool = pool;
    return cupstore_control_put(txn, &c, gen);
}

int cupstore_control_put(cupstore_txn *txn, const cupstore_control *req, uint64_t *gen)
{
    cupstore_control c;
    uint8_t key[8];
    if (!req || req->api_mode > CUPSTORE_API_NONE || req->every_set > CUPSTORE_CTL_EVERY_OFF ||
        req->ledger_set > CUPSTORE_CTL_LEDGER_OFF ||
        (req->every_set == CUPSTORE_CTL_EVERY_ON &&
         !(req->every_window_ms && req->every_window_ms < req->every_period_ms)))
        return CUPSTORE_EINVAL;
    int rc = cupstore_txn_writable(txn);
    if (rc)
        return rc;
    c = *req;
    c.applied_ns = 0;
    c.result = 0;
    c.pool_applied = 0;
    c.api_include[sizeof c.api_include - 1] = '\0';
    c.api_exclude[sizeof c.api_exclude - 1] = '\0';
    if ((rc = last_key64(txn, CUPSTORE_DB_CONTROL, &c.gen)) != 0)
        return rc;
    c.gen++;
    c.requested_ns = now_ns();
    cupstore_be64_put(key, c.gen);
    rc = cupstore_tlv_put(txn, CUPSTORE_DB_CONTROL, key, 8, control_fields, NF(control_fields),
                          &c);
    if (rc == 0 && gen)
        *gen = c.gen;
    return rc;
}

int cupstore_control_latest(cupstore_txn *txn, cupstore_control *c)
{
    MDB_cursor *cur;
    MDB_val k, v;
    if (!c)
        return CUPSTORE_EINVAL;
    int rc = cupstore_cursor(txn, CUPSTORE_DB_CONTROL, &cur);
    if (rc)
        return rc;
    rc = cupstore_mdb_err(mdb_cursor_get(cur, &k, &v, MDB_LAST));
    if (rc == 0)
        rc = control_from(&k, &v, c);
    cupstore_cursor_close(txn, cur);
    return rc;
}

int cupstore_control_ack(cupstore_txn *txn, uint64_t gen, uint64_t applied_ns, int32_t result,
                         uint32_t pool_applied)
{
    cupstore_control c;
    uint8_t key[8];
    MDB_val k = {8, key}, v;
    int rc = cupstore_txn_writable(txn);
    if (rc)
        return rc;
    cupstore_be64_put(key, gen);
    if ((rc = cupstore_get(txn, CUPSTORE_DB_CONTROL, key, 8, &v)) != 0)
        return rc;
    if ((rc = control_from(&k, &v, &c)) != 0)
        return rc;
    c.applied_ns = applied_ns;
    c.result = result;
    c.pool_applied = pool_applied;
    return cupstore_tlv_put(txn, CUPSTORE_DB_CONTROL, key, 8, control_fields,
                            NF(control_fields), &c);
}

static int control_step(const MDB_val *k, const MDB_val *v, void *arg, bool *done)
{
    (void)done;
    struct cb *cb = arg;
    cupstore_control c;
    int rc = control_from(k, v, &c);
    return rc ? rc : cb->fn.control(&c, cb->arg);
}

int cupstore_control_scan(cupstore_txn *txn, cupstore_control_fn fn, void *arg)
{
    struct cb c = {.fn.control = fn, .arg = arg};
    if (!txn || !fn)
        return CUPSTORE_EINVAL;
    return cupstore_walk(txn, CUPSTORE_DB_CONTROL, NULL, 0, control_step, &c);
}

/* ---- Marks: key = name bytes ---------------------------------------------- */
static const cupstore_tlv_field mark_fields[] = {
    F(cupstore_mark, 1, U64, 1, from_ns),
    F(cupstore_mark, 2, U64, 1, to_ns),
    F(cupstore_mark, 3, U64, 1, created_ns),
};

static int mark_from(const MDB_val *k, const MDB_val *v, cupstore_mark *m)
{
    if (k->mv_size == 0 || k->mv_size >= sizeof m->name ||
        cupstore_tlv_decode(mark_fields, NF(mark_fields), v->mv_data, v->mv_size, m, sizeof *m))
        return CUPSTORE_ECORRUPT;
    memcpy(m->name, k->mv_data, k->mv_size);
    m->name[k->mv_size] = '\0';
    return 0;
}

int cupstore_mark_put(cupstore_txn *txn, const cupstore_mark *m)
{
    if (!m)
        return CUPSTORE_EINVAL;
    size_t nl = strnlen(m->name, sizeof m->name);
    if (nl == 0 || nl == sizeof m->name)
        return CUPSTORE_EINVAL;
    return cupstore_tlv_put(txn, CUPSTORE_DB_MARKS, m->name, nl, mark_fields, NF(mark_fields), m);
}

int cupstore_mark_get(cupstore_txn *txn, const char *name, cupstore_mark *m)
{
    MDB_val v;
    if (!name || !m)
        return CUPSTORE_EINVAL;
    size_t nl = strlen(name);
    if (nl == 0 || nl >= sizeof m->name)
        return CUPSTORE_ENOTFOUND;
    int rc = cupstore_get(txn, CUPSTORE_DB_MARKS, name, nl, &v);
    if (rc)
        return rc;
    MDB_val k = {nl, (void *)(uintptr_t)name};
    return mark_from(&k, &v, m);
}

static int mark_step(const MDB_val *k, const MDB_val *v, void *arg, bool *done)
{
    (void)done;
    struct cb *cb = arg;
    cupstore_mark m;
    int rc = mark_from(k, v, &m);
    return rc ? rc : cb->fn.mark(&m, cb->arg);
}

int cupstore_mark_scan(cupstore_txn *txn, cupstore_mark_fn fn, void *arg)
{
    struct cb c = {.fn.mark = fn, .arg = arg};
    if (!txn || !fn)
        return CUPSTORE_EINVAL;
    return cupstore_walk(txn, CUPSTORE_DB_MARKS, NULL, 0, mark_step, &c);
}

/* ---- Notes: key BE u64 seq ------------------------------------------------- */
static const cupstore_tlv_field note_fields[] = {
    F(cupstore_note, 1, U64, 1, time_ns),
    F(cupstore_note, 2, U32, 1, level),
    F(cupstore_note, 3, STR, sizeof(((cupstore_note *)0)->text), text),
};

int cupstore_note_put(cupstore_txn *txn, cupstore_note *n)
{
    uint8_t key[8];
    uint64_t last;
    int rc = cupstore_txn_writable(txn);
    if (rc)
        return rc;
    if (!n)
        return CUPSTORE_EINVAL;
    if ((rc = last_key64(txn, CUPSTORE_DB_NOTES, &last)) != 0)
        return rc;
    cupstore_be64_put(key, last + 1);
    rc = cupstore_tlv_put(txn, CUPSTORE_DB_NOTES, key, 8, note_fields, NF(note_fields), n);
    if (rc == 0)
        n->seq = last + 1;
    return rc;
}

static int note_step(const MDB_val *k, const MDB_val *v, void *arg, bool *done)
{
    (void)done;
    struct cb *cb = arg;
    cupstore_note n;
    if (k->mv_size != 8 ||
        cupstore_tlv_decode(note_fields, NF(note_fields), v->mv_data, v->mv_size, &n, sizeof n))
        return CUPSTORE_ECORRUPT;
    n.seq = cupstore_be64_get(k->mv_data);
    return cb->fn.note(&n, cb->arg);
}

int cupstore_note_scan(cupstore_txn *txn, cupstore_note_fn fn, void *arg)
{
    struct cb c = {.fn.note = fn, .arg = arg};
    if (!txn || !fn)
        return CUPSTORE_EINVAL;
    return cupstore_walk(txn, CUPSTORE_DB_NOTES, NULL, 0, note_step, &c);
}

/* ---- Steps: key BE u32 step id ------------------------------------------- */
static const cupstore_tlv_field step_fields[] = {
    F(cupstore_step, 1, U64, 1, start_mono_ns),
    F(cupstore_step, 2, U64, 1, end_mono_ns),
    F(cupstore_step, 3, I32, 1, rc),
    F(cupstore_step, 4, U32, 1, timed_out),
    F(cupstore_step, 5, U64, 1, queue_remaining),
};

int cupstore_step_put(cupstore_txn *txn, const cupstore_step *s)
{
    uint8_t key[4];
    if (!s)
        return CUPSTORE_EINVAL;
    cupstore_be32_put(key, s->step);
    return cupstore_tlv_put(txn, CUPSTORE_DB_STEPS, key, 4, step_fields, NF(step_fields), s);
}

static int step_step(const MDB_val *k, const MDB_val *v, void *arg, bool *done)
{
    (void)done;
    struct cb *cb = arg;
    cupstore_step s;
    if (k->mv_size != 4 ||
        cupstore_tlv_decode(step_fields, NF(step_fields), v->mv_data, v->mv_size, &s, sizeof s))
        return CUPSTORE_ECORRUPT;
    s.step = cupstore_be32_get(k->mv_data);
    return cb->fn.step(&s, cb->arg);
}

int cupstore_step_scan(cupstore_txn *txn, cupstore_step_fn fn, void *arg)
{
    struct cb c = {.fn.step = fn, .arg = arg};
    if (!txn || !fn)
        return CUPSTORE_EINVAL;
    return cupstore_walk(txn, CUPSTORE_DB_STEPS, NULL, 0, step_step, &c);
}

/* ---- Final status: one row under key "final" ------------------------------ */
static const cupstore_tlv_field final_fields[] = {
    F(cupstore_final, 1, U64, 1, end_ns),
    F(cupstore_final, 2, U32, 1, exit_path),
    F(cupstore_final, 3, I32, 1, exit_detail),
    F(cupstore_final, 4, U32, 1, protocol_complete),
    F(cupstore_final, 5, U32, 1, flush_ok),
    F(cupstore_final, 6, U64, 1, tail_lost),
    F(cupstore_final, 7, U64, 1, buffers_completed),
    F(cupstore_final, 8, U64, 1, buffers_consumed),
    F(cupstore_final, 9, U64, 1, records_stored),
    F(cupstore_final, 10, U64, 1, buffers_outstanding),
    F(cupstore_final, 11, U64, 1, tail_bound),
    F(cupstore_final, 12, U64, 1, conflict_bound),
    F(cupstore_final, 13, U64, 1, store_refused),
    F(cupstore_final, 14, U64, CUPSTORE_LOSS_MAX, loss_total),
    /* one field per loss class: an array field holds at most 32 */
#define FINAL_BY_CLASS(id_, l_)                                                                    \
    F(cupstore_final, (id_) + (l_), U64, CUPSTORE_KIND_MAX, loss_kind[l_]),                        \
        F(cupstore_final, (id_) + 10 + (l_), U64, CUPSTORE_DEVICE_MAX + 1, loss_device[l_])
    FINAL_BY_CLASS(15, 0), FINAL_BY_CLASS(15, 1), FINAL_BY_CLASS(15, 2),
    FINAL_BY_CLASS(15, 3), FINAL_BY_CLASS(15, 4), FINAL_BY_CLASS(15, 5),
    FINAL_BY_CLASS(15, 6), FINAL_BY_CLASS(15, 7), FINAL_BY_CLASS(15, 8),
#undef FINAL_BY_CLASS
    F(cupstore_final, 35, U64, CUPSTORE_KIND_MAX, dropped_kind_est),
};
_Static_assert(CUPSTORE_LOSS_MAX == 9, "final_fields: one loss_kind and loss_device field per class");
_Static_assert(CUPSTORE_LOSS_MAX <= 10 && CUPSTORE_DEVICE_MAX + 1 <= 32 && CUPSTORE_KIND_MAX <= 32,
               "final_fields: ids and array sizes");

int cupstore_final_put(cupstore_txn *txn, const cupstore_final *f)
{
    if (!f)
        return CUPSTORE_EINVAL;
    return cupstore_tlv_put(txn, CUPSTORE_DB_FINAL, "final", 5, final_fields, NF(final_fields),
                            f);
}

int cupstore_final_get(cupstore_txn *txn, cupstore_final *f)
{
    MDB_val v;
    if (!f)
        return CUPSTORE_EINVAL;
    int rc = cupstore_get(txn, CUPSTORE_DB_FINAL, "final", 5, &v);
    if (rc == CUPSTORE_ENOTFOUND) {
        /* the store refused it: the agent may have written it aside; a
         * damaged aside reads as none (judged on the rows, as before) */
        rc = cupstore_final_aside_get(txn->env, f);
        return rc == 0 ? 0 : CUPSTORE_ENOTFOUND;
    }
    if (rc)
        return rc;
    return cupstore_tlv_decode(final_fields, NF(final_fields), v.mv_data, v.mv_size, f,
                               sizeof *f);
}

/* ---- The final status aside: final.aside in the session's directory ------
 * Layout (CUPSTORE_ASIDE_SIZE bytes): "cuptop-final 1\n" (15 bytes), BE u32
 * length, the final status as the same TLV as the store's row, zeros to
 * the end.  All zeros: allocated, never written (the session has not
 * ended, or it ended with the store's own final status). */
static const char aside_magic[] = "cuptop-final 1\n";
#define ASIDE_HDR (sizeof aside_magic - 1 + 4)

static char *aside_path(const cupstore_env *env)
{
    return env && env->path ? cupstore_path_join(env->path, "final.aside") : NULL;
}

int cupstore_final_aside_open(cupstore_env *env, int *fd)
{
    char *path = aside_path(env);
    int rc = 0;
    *fd = -1;
    if (!path)
        return env ? ENOMEM : CUPSTORE_EINVAL;
    int f = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    free(path);
    if (f < 0)
        return errno;
    if (f < 3) {
        /* never one of the host's standard descriptors (invariant 10) */
        int g = fcntl(f, F_DUPFD_CLOEXEC, 3);
        rc = g < 0 ? errno : 0;
        close(f);
        if (rc)
            return rc;
        f = g;
    }
    /* the blocks now, while the disk has them: the write at the end needs
     * none (tmpfs and ext4 both allocate with posix_fallocate) */
    if ((rc = posix_fallocate(f, 0, CUPSTORE_ASIDE_SIZE)) != 0) {
        close(f);
        return rc;
    }
    *fd = f;
    return 0;
}

int cupstore_final_aside_put(int fd, const cupstore_final *f)
{
    uint8_t block[CUPSTORE_ASIDE_SIZE];
    if (fd < 0 || !f || cupstore_tlv_bound(final_fields, NF(final_fields)) >
                            sizeof block - ASIDE_HDR)
        return CUPSTORE_EINVAL;
    memset(block, 0, sizeof block);
    memcpy(block, aside_magic, sizeof aside_magic - 1);
    size_t n = cupstore_tlv_encode(final_fields, NF(final_fields), f, block + ASIDE_HDR);
    cupstore_be32_put(block + sizeof aside_magic - 1, (uint32_t)n);
    size_t off = 0;
    while (off < sizeof block) {
        ssize_t w = pwrite(fd, block + off, sizeof block - off, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? errno : EIO;
        off += (size_t)w;
    }
    return fdatasync(fd) == 0 || errno == EINVAL ? 0 : errno;
}

int cupstore_final_aside_get(cupstore_env *env, cupstore_final *f)
{
    uint8_t block[CUPSTORE_ASIDE_SIZE];
    char *path = aside_path(env);
    if (!f)
        return CUPSTORE_EINVAL;
    if (!path)
        return env ? ENOMEM : CUPSTORE_EINVAL;
    /* O_NONBLOCK: a FIFO planted there never blocks a reader */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    free(path);
    if (fd < 0)
        return errno == ENOENT ? CUPSTORE_ENOTFOUND : errno;
    struct stat st;
    ssize_t got = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        got = pread(fd, block, sizeof block, 0);
    close(fd);
    if (got < (ssize_t)ASIDE_HDR)
        return got < 0 ? CUPSTORE_ECORRUPT : CUPSTORE_ENOTFOUND;
    if (memcmp(block, aside_magic, sizeof aside_magic - 1) != 0) {
        for (ssize_t i = 0; i < got; i++)
            if (block[i])
                return CUPSTORE_ECORRUPT;
        return CUPSTORE_ENOTFOUND;   /* allocated, never written */
    }
    uint32_t n = cupstore_be32_get(block + sizeof aside_magic - 1);
    if (n > (size_t)got - ASIDE_HDR)
        return CUPSTORE_ECORRUPT;
    int rc = cupstore_tlv_decode(final_fields, NF(final_fields), block + ASIDE_HDR, n, f,
                                 sizeof *f);
    if (rc == 0)
        f->aside = 1;
    return rc;
}
