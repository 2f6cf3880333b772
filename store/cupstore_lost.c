/*
 * cupstore_lost.c - the launches whose records never arrived, as the
 * launch ledger found them at the end of a session (doc/store-format.md,
 * "lost"): one TLV row per launch, keyed by launch time and correlation id.
 */
#include "config.h"

#include <stddef.h>

#include "cupstore_int.h"

#define F(st_, id_, type_, count_, field_)                                                       \
    {.id = (id_), .type = CUPSTORE_TLV_##type_, .count = (count_), .offset = offsetof(st_, field_)}
#define NF(t) (sizeof(t) / sizeof((t)[0]))

/* Field ids are never renumbered (doc/store-format.md). */
static const cupstore_tlv_field lost_fields[] = {
    F(cupstore_lost, 1, U32, 1, device),
    F(cupstore_lost, 2, U32, 1, stream),
    F(cupstore_lost, 3, U32, 1, tid),
    F(cupstore_lost, 4, U32, CUPSTORE_LEDGER_KINDS, missing),
    F(cupstore_lost, 5, U32, 1, name_id),
};

int cupstore_lost_put(cupstore_txn *txn, const cupstore_lost *l)
{
    uint8_t key[12];
    if (!txn || !l)
        return CUPSTORE_EINVAL;
    cupstore_be64_put(key, l->launch_ns);
    cupstore_be32_put(key + 8, l->corr);
    return cupstore_tlv_put(txn, CUPSTORE_DB_LOST, key, sizeof key, lost_fields, NF(lost_fields),
                            l);
}

struct lost_walk {
    uint64_t to_ns;
    cupstore_lost_fn fn;
    void *arg;
};

static int lost_step(const MDB_val *k, const MDB_val *v, void *arg, bool *done)
{
    struct lost_walk *w = arg;
    cupstore_lost l;
    if (k->mv_size != 12 ||
        cupstore_tlv_decode(lost_fields, NF(lost_fields), v->mv_data, v->mv_size, &l, sizeof l))
        return CUPSTORE_ECORRUPT;
    l.launch_ns = cupstore_be64_get(k->mv_data);
    l.corr = cupstore_be32_get((const uint8_t *)k->mv_data + 8);
    if (l.launch_ns > w->to_ns) {
        *done = true;
        return 0;
    }
    return w->fn(&l, w->arg);
}

int cupstore_lost_scan(cupstore_txn *txn, uint64_t from_ns, uint64_t to_ns, cupstore_lost_fn fn,
                       void *arg)
{
    struct lost_walk w = {to_ns, fn, arg};
    uint8_t start[8];
    if (!txn || !fn)
        return CUPSTORE_EINVAL;
    cupstore_be64_put(start, from_ns);
    return cupstore_walk(txn, CUPSTORE_DB_LOST, start, sizeof start, lost_step, &w);
}
