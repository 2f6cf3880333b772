/*
 * cupstore_rows.c - metadata, per-second health rows and losses.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "cupstore_int.h"

/* ---- Metadata ------------------------------------------------------------ */

/* Keys starting with '.' are the store's own (binary) rows. */
static int meta_key_check(const char *key)
{
    if (!key || !*key || key[0] == '.' || strlen(key) > 256)
        return CUPSTORE_EINVAL;
    return 0;
}

int cupstore_meta_put(cupstore_txn *txn, const char *key, const char *value)
{
    int rc = meta_key_check(key);
    if (rc)
        return rc;
    if (!value)
        return CUPSTORE_EINVAL;
    if (!strcmp(key, "magic") || !strcmp(key, "schema"))
        return CUPSTORE_EEXIST;
    return cupstore_put(txn, CUPSTORE_DB_META, key, strlen(key), value, strlen(value), 0);
}

int cupstore_meta_get(cupstore_txn *txn, const char *key, char **value)
{
    MDB_val v;
    int rc = meta_key_check(key);
    if (rc)
        return rc;
    if (!value)
        return CUPSTORE_EINVAL;
    *value = NULL;
    if ((rc = cupstore_get(txn, CUPSTORE_DB_META, key, strlen(key), &v)) != 0)
        return rc;
    char *s = malloc(v.mv_size + 1);
    if (!s)
        return ENOMEM;
    memcpy(s, v.mv_data, v.mv_size);
    s[v.mv_size] = '\0';
    *value = s;
    return 0;
}

struct meta_walk {
    const char *prefix;
    size_t plen;
    cupstore_meta_fn fn;
    void *arg;
};

static int meta_step(const MDB_val *k, const MDB_val *v, void *arg, bool *done)
{
    struct meta_walk *w = arg;
    if (k->mv_size < w->plen || memcmp(k->mv_data, w->prefix, w->plen) != 0) {
        *done = true;
        return 0;
    }
    char *key = malloc(k->mv_size + 1 + v->mv_size + 1);
    if (!key)
        return ENOMEM;
    char *val = key + k->mv_size + 1;
    memcpy(key, k->mv_data, k->mv_size);
    key[k->mv_size] = '\0';
    memcpy(val, v->mv_data, v->mv_size);
    val[v->mv_size] = '\0';
    int rc = w->fn(key, val, w->arg);
    free(key);
    return rc;
}

int cupstore_meta_scan(cupstore_txn *txn, const char *prefix, cupstore_meta_fn fn, void *arg)
{
    int rc = meta_key_check(prefix);
    if (rc)
        return rc;
    if (!fn || !txn)
        return CUPSTORE_EINVAL;
    struct meta_walk w = {prefix, strlen(prefix), fn, arg};
    return cupstore_walk(txn, CUPSTORE_DB_META, prefix, w.plen, meta_step, &w);
}

/* ---- Health rows ------------------------------------------------------- */

#define HF(id_, type_, count_, field_)                                                           \
    {.id = (id_), .type = CUPSTORE_TLV_##type_, .count = (count_),                               \
     .offset = offsetof(cupstore_health, field_)}

/* Field ids are forever: never renumber, only append. */
static const cupstore_tlv_field health_fields[] = {
    HF(1, U64, 1, heartbeat_ns),
    HF(2, U32, 1, epoch),
    HF(3, U32, 1, kinds_enabled),
    HF(4, U64, 1, ctl_gen_applied),
    HF(5, U64, 1, ctl_gen_seen),
    HF(6, U64, 1, buf_requested),
    HF(7, U64, 1, buf_provided),
    HF(8, U64, 1, buf_declined),
    HF(9, U64, 1, buf_completed),
    HF(10, U64, 1, buf_consumed),
    HF(11, U64, 1, buf_foreign),
    HF(12, U64, 1, bytes_delivered),
    HF(13, U32, 1, buf_outstanding),
    HF(14, U32, 1, pool_limit),
    HF(15, U32, 1, pool_high_water),
    HF(16, U64, 1, records_parsed),
    HF(17, U64, 1, records_stored),
    HF(18, U64, CUPSTORE_KIND_MAX, records_by_kind),
    HF(19, U64, CUPSTORE_DEVICE_MAX, records_by_device),
    HF(20, U64, CUPSTORE_LOSS_MAX, loss),
    HF(21, U64, CUPSTORE_OVERHEAD_MAX, overhead_by_type),
    HF(22, U32, 1, queue_depth),
    HF(23, U32, 1, queue_high_water),
    HF(24, U32, 1, queue_capacity),
    HF(25, U32, 4, req_lat),
    HF(26, U32, 4, cmp_lat),
    HF(27, U32, 4, commit_lat),
    HF(28, U32, 1, batch_records_p50),
    HF(29, U32, 1, store_refused),
    HF(30, U32, 1, flags),
    HF(31, U64, CUPSTORE_LEDGER_KINDS, ledger_expected),
    HF(32, U64, CUPSTORE_LEDGER_KINDS, ledger_arrived),
    HF(33, U64, CUPSTORE_LEDGER_KINDS, ledger_pending),
};
#define NHEALTH (sizeof health_fields / sizeof health_fields[0])

_Static_assert(sizeof(cupstore_lat) == 16, "cupstore_lat is four u32 in a row");

size_t cupstore_health_encode(const cupstore_health *h, uint8_t *out, size_t cap)
{
    if (cap < cupstore_tlv_bound(health_fields, NHEALTH))
        return 0;
    return cupstore_tlv_encode(health_fields, NHEALTH, h, out);
}

int cupstore_health_decode(const void *buf, size_t len, cupstore_health *h)
{
    return cupstore_tlv_decode(health_fields, NHEALTH, buf, len, h, sizeof *h);
}

int cupstore_health_put(cupstore_txn *txn, const cupstore_health *h)
{
    uint8_t key[8];
    if (!h)
        return CUPSTORE_EINVAL;
    cupstore_be64_put(key, h->second);
    return cupstore_tlv_put(txn, CUPSTORE_DB_HEALTH, key, 8, health_fields, NHEALTH, h);
}

static int health_from(const MDB_val *k, const MDB_val *v, cupstore_health *h)
{
    if (k->mv_size != 8)
        return CUPSTORE_ECORRUPT;
    int rc = cupstore_health_decode(v->mv_data, v->mv_size, h);
    h->second = cupstore_be64_get(k->mv_data);
    return rc;
}

int cupstore_health_get(cupstore_txn *txn, uint64_t second, cupstore_health *h)
{
    uint8_t key[8];
    MDB_val v, k = {8, key};
    if (!h)
        return CUPSTORE_EINVAL;
    cupstore_be64_put(key, second);
    int rc = cupstore_get(txn, CUPSTORE_DB_HEALTH, key, 8, &v);
    return rc ? rc : health_from(&k, &v, h);
}

int cupstore_health_last(cupstore_txn *txn, cupstore_health *h)
{
    MDB_cursor *cur;
    MDB_val k, v;
    if (!h)
        return CUPSTORE_EINVAL;
    int rc = cupstore_cursor(txn, CUPSTORE_DB_HEALTH, &cur);
    if (rc)
        return rc;
    rc = cupstore_mdb_err(mdb_cursor_get(cur, &k, &v, MDB_LAST));
    if (rc == 0)
        rc = health_from(&k, &v, h);
    cupstore_cursor_close(txn, cur);
    return rc;
}

int cupstore_walk(cupstore_txn *txn, int db, const void *start, size_t klen,
                 cupstore_walk_fn fn, void *arg)
{
    MDB_cursor *cur;
    MDB_val k = {klen, (void *)(uintptr_t)start}, v;
    bool done = false;
    int rc = cupstore_cursor(txn, db, &cur);
    if (rc)
        return rc == CUPSTORE_ENOTFOUND ? 0 : rc;
    int mrc = mdb_cursor_get(cur, &k, &v, start ? MDB_SET_RANGE : MDB_FIRST);
    while (mrc == 0) {
        if ((rc = fn(&k, &v, arg, &done)) != 0 || done)
            break;
        mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    cupstore_cursor_close(txn, cur);
    if (rc || done)
        return rc;
    return mrc == MDB_NOTFOUND ? 0 : cupstore_mdb_err(mrc);
}

struct health_walk {
    uint64_t to;
    cupstore_health_fn fn;
    void *arg;
};

static int health_step(const MDB_val *k, const MDB_val *v, void *arg, bool *done)
{
    struct health_walk *w = arg;
    cupstore_health h;
    if (k->mv_size == 8 && cupstore_be64_get(k->mv_data) > w->to) {
        *done = true;
        return 0;
    }
    int rc = health_from(k, v, &h);
    return rc ? rc : w->fn(&h, w->arg);
}

int cupstore_health_scan(cupstore_txn *txn, uint64_t from, uint64_t to, cupstore_health_fn fn,
                         void *arg)
{
    uint8_t key[8];
    struct health_walk w = {to, fn, arg};
    if (!fn || !txn)
        return CUPSTORE_EINVAL;
    cupstore_be64_put(key, from);
    return cupstore_walk(txn, CUPSTORE_DB_HEALTH, key, 8, health_step, &w);
}

/* ---- Losses ---------------------------------------------------------------- */
/* Key: BE u64 second, u8 class, u8 kind, BE u16 device, u8 estimate.
 * Value: BE u64 count. */
#define LOSS_KEY 13

static void loss_key(uint8_t *k, const cupstore_loss_row *r)
{
    cupstore_be64_put(k, r->second);
    k[8] = r->loss;
    k[9] = r->kind;
    k[10] = (uint8_t)(r->device >> 8);
    k[11] = (uint8_t)r->device;
    k[12] = r->estimate ? 1 : 0;
}

int cupstore_loss_add(cupstore_txn *txn, const cupstore_loss_row *row)
{
    uint8_t k[LOSS_KEY], val[8];
    MDB_val v;
    uint64_t sum;
    int rc = cupstore_txn_writable(txn);
    if (rc)
        return rc;
    if (!row || row->loss >= CUPSTORE_LOSS_MAX)
        return CUPSTORE_EINVAL;
    loss_key(k, row);
    rc = cupstore_get(txn, CUPSTORE_DB_LOSS, k, LOSS_KEY, &v);
    if (rc == CUPSTORE_ENOTFOUND)
        sum = row->count;
    else if (rc)
        return rc;
    else if (v.mv_size != 8)
        return CUPSTORE_ECORRUPT;
    else {
        uint64_t old = cupstore_be64_get(v.mv_data);
        sum = old + row->count < old ? UINT64_MAX : old + row->count;
    }
    cupstore_be64_put(val, sum);
    return cupstore_put(txn, CUPSTORE_DB_LOSS, k, LOSS_KEY, val, 8, 0);
}

struct loss_walk {
    uint64_t to;
    cupstore_loss_fn fn;
    void *arg;
};

static int loss_step(const MDB_val *k, const MDB_val *v, void *arg, bool *done)
{
    struct loss_walk *w = arg;
    const uint8_t *p = k->mv_data;
    cupstore_loss_row r;
    if (k->mv_size != LOSS_KEY || v->mv_size != 8)
        return CUPSTORE_ECORRUPT;
    r.second = cupstore_be64_get(p);
    if (r.second > w->to) {
        *done = true;
        return 0;
    }
    r.loss = p[8];
    r.kind = p[9];
    r.device = (uint16_t)(p[10] << 8 | p[11]);
    r.estimate = p[12] != 0;
    r.count = cupstore_be64_get(v->mv_data);
    return w->fn(&r, w->arg);
}

int cupstore_loss_scan(cupstore_txn *txn, uint64_t from, uint64_t to, cupstore_loss_fn fn,
                       void *arg)
{
    uint8_t key[8];
    struct loss_walk w = {to, fn, arg};
    if (!fn || !txn)
        return CUPSTORE_EINVAL;
    cupstore_be64_put(key, from);
    return cupstore_walk(txn, CUPSTORE_DB_LOSS, key, 8, loss_step, &w);
}
