/*
 * cupstore_ranges.c - the NVTX range table: one TLV row per CUPTI marker
 * id (key BE u32), written when either end of the range is seen and
 * merged when the other arrives (doc/store-format.md, "ranges").
 */
#include "config.h"

#include <stddef.h>

#include "cupstore_int.h"

#define F(st_, id_, type_, count_, field_)                                                       \
    {.id = (id_), .type = CUPSTORE_TLV_##type_, .count = (count_), .offset = offsetof(st_, field_)}
#define NF(t) (sizeof(t) / sizeof((t)[0]))

/* Field ids are never renumbered (doc/store-format.md). */
static const cupstore_tlv_field range_fields[] = {
    F(cupstore_range, 1, U32, 1, name_id),
    F(cupstore_range, 2, U32, 1, domain_id),
    F(cupstore_range, 3, U32, 1, flags),
    F(cupstore_range, 4, U32, 1, pid),
    F(cupstore_range, 5, U32, 1, tid),
    F(cupstore_range, 6, U32, 1, end_tid),
    F(cupstore_range, 7, U64, 1, start_ns),
    F(cupstore_range, 8, U64, 1, end_ns),
    F(cupstore_range, 9, U32, 1, depth),
    F(cupstore_range, 10, U32, 1, color),
    F(cupstore_range, 11, U32, 1, category),
    F(cupstore_range, 12, U32, 1, payload_kind),
    F(cupstore_range, 13, U64, 1, payload),
};

static int range_from(const MDB_val *k, const MDB_val *v, cupstore_range *r)
{
    if (k->mv_size != 4 ||
        cupstore_tlv_decode(range_fields, NF(range_fields), v->mv_data, v->mv_size, r, sizeof *r))
        return CUPSTORE_ECORRUPT;
    r->id = cupstore_be32_get(k->mv_data);
    return 0;
}

int cupstore_range_put(cupstore_txn *txn, const cupstore_range *r)
{
    uint8_t key[4];
    if (!txn || !r || r->id == 0)
        return CUPSTORE_EINVAL;
    cupstore_be32_put(key, r->id);
    return cupstore_tlv_put(txn, CUPSTORE_DB_RANGES, key, 4, range_fields, NF(range_fields), r);
}

int cupstore_range_get(cupstore_txn *txn, uint32_t id, cupstore_range *r)
{
    uint8_t key[4];
    MDB_val k = {4, key}, v;
    if (!txn || !r || id == 0)
        return CUPSTORE_EINVAL;
    cupstore_be32_put(key, id);
    int rc = cupstore_get(txn, CUPSTORE_DB_RANGES, key, 4, &v);
    if (rc)
        return rc;
    return range_from(&k, &v, r);
}

#define TAKE(f)                                                                                  \
    do {                                                                                         \
        if (r->f)                                                                                \
            m.f = r->f;                                                                          \
    } while (0)

int cupstore_range_merge(cupstore_txn *txn, const cupstore_range *r, cupstore_range *merged)
{
    cupstore_range m;
    if (!txn || !r || r->id == 0)
        return CUPSTORE_EINVAL;
    int rc = cupstore_range_get(txn, r->id, &m);
    if (rc == CUPSTORE_ENOTFOUND || rc == CUPSTORE_ECORRUPT) {
        m = *r; /* a damaged old row is replaced, not merged */
    } else if (rc) {
        return rc;
    } else {
        bool had_start = m.flags & CUPSTORE_RANGE_START;
        TAKE(name_id);
        TAKE(domain_id);
        TAKE(start_ns);
        TAKE(end_ns);
        TAKE(end_tid);
        TAKE(color);
        TAKE(category);
        TAKE(payload_kind);
        TAKE(payload);
        if (!had_start) {
            TAKE(pid);
            TAKE(tid);
            TAKE(depth);
        }
        m.flags |= r->flags;
    }
    rc = cupstore_range_put(txn, &m);
    if (!rc && merged)
        *merged = m;
    return rc;
}

struct range_walk {
    cupstore_range_fn fn;
    void *arg;
};

static int range_step(const MDB_val *k, const MDB_val *v, void *arg, bool *done)
{
    struct range_walk *w = arg;
    cupstore_range r;
    (void)done;
    int rc = range_from(k, v, &r);
    return rc ? rc : w->fn(&r, w->arg);
}

int cupstore_range_scan(cupstore_txn *txn, cupstore_range_fn fn, void *arg)
{
    struct range_walk w = {fn, arg};
    if (!txn || !fn)
        return CUPSTORE_EINVAL;
    return cupstore_walk(txn, CUPSTORE_DB_RANGES, NULL, 0, range_step, &w);
}

int cupstore_range_count(cupstore_txn *txn, uint64_t *n)
{
    MDB_cursor *cur;
    MDB_stat st;
    if (!txn || !n)
        return CUPSTORE_EINVAL;
    *n = 0;
    int rc = cupstore_cursor(txn, CUPSTORE_DB_RANGES, &cur);
    if (rc)
        return rc == CUPSTORE_ENOTFOUND ? 0 : rc;
    MDB_txn *mt = mdb_cursor_txn(cur);
    MDB_dbi dbi = mdb_cursor_dbi(cur);
    cupstore_cursor_close(txn, cur);
    rc = mdb_stat(mt, dbi, &st);
    if (rc)
        return cupstore_mdb_err(rc);
    *n = st.ms_entries;
    return 0;
}
