/*
 * cupstore_records.c - record chunks in the store (put, window scan,
 * totals) and the interned names table.
 *
 * Chunk key: BE u64 key time (smallest non-zero start_ns of the batch),
 * BE u32 sequence.  Records inside a chunk are not sorted, so a window
 * scan starts max_span before the window, where max_span is the largest
 * (max start - min start) of any chunk, kept in the chunk statistics row.
 * A reader scanning window after window (the export, second by second)
 * passes a cupstore_scan_memo: the chunks it read whole and their last
 * record time, so that a chunk with nothing left ahead is not decoded
 * again for every later window within max_span.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "cupstore_int.h"

#define CHUNK_KEY 12

/* The chunk statistics row (meta ".chunkstats", six BE u64). */
typedef struct chunkstats {
    uint64_t chunks, records, bytes, span, seq, last_key;
} chunkstats;

static int stats_get(cupstore_txn *txn, chunkstats *s)
{
    MDB_val v;
    memset(s, 0, sizeof *s);
    int rc = cupstore_get(txn, CUPSTORE_DB_META, CUPSTORE_META_CHUNKSTATS,
                          strlen(CUPSTORE_META_CHUNKSTATS), &v);
    if (rc == CUPSTORE_ENOTFOUND)
        return 0;
    if (rc)
        return rc;
    if (v.mv_size < 48)
        return CUPSTORE_ECORRUPT;
    const uint8_t *p = v.mv_data;
    s->chunks = cupstore_be64_get(p);
    s->records = cupstore_be64_get(p + 8);
    s->bytes = cupstore_be64_get(p + 16);
    s->span = cupstore_be64_get(p + 24);
    s->seq = cupstore_be64_get(p + 32);
    s->last_key = cupstore_be64_get(p + 40);
    return 0;
}

static int stats_put(cupstore_txn *txn, const chunkstats *s)
{
    uint8_t p[48];
    cupstore_be64_put(p, s->chunks);
    cupstore_be64_put(p + 8, s->records);
    cupstore_be64_put(p + 16, s->bytes);
    cupstore_be64_put(p + 24, s->span);
    cupstore_be64_put(p + 32, s->seq);
    cupstore_be64_put(p + 40, s->last_key);
    return cupstore_put(txn, CUPSTORE_DB_META, CUPSTORE_META_CHUNKSTATS,
                        strlen(CUPSTORE_META_CHUNKSTATS), p, sizeof p, 0);
}

int cupstore_chunk_put(cupstore_txn *txn, const cupstore_record *recs, size_t n)
{
    cupstore_env *env;
    const uint8_t *enc;
    size_t len;
    uint64_t key_ns, span;
    uint8_t key[CHUNK_KEY];
    chunkstats st;
    int rc = cupstore_txn_writable(txn);
    if (rc)
        return rc;
    if (n == 0)
        return 0;
    if (!recs)
        return CUPSTORE_EINVAL;
    env = txn->env; /* scratch buffers: safe, we hold the env's write lock */
    if ((rc = cupstore_chunk_encode_buf(recs, n,
                                        env->no_compress ? CUPSTORE_ENC_RAW : CUPSTORE_ENC_AUTO,
                                        &env->enc, &env->lz, &enc,
                                        &len, &key_ns, &span)) != 0)
        return rc;
    if ((rc = stats_get(txn, &st)) != 0)
        return rc;
    if (key_ns == 0) /* only zero timestamps: file it beside the last chunk */
        key_ns = st.last_key;
    st.seq++;
    cupstore_be64_put(key, key_ns);
    cupstore_be32_put(key + 8, (uint32_t)st.seq);
    if ((rc = cupstore_put(txn, CUPSTORE_DB_CHUNKS, key, CHUNK_KEY, enc, len, 0)) != 0)
        return rc;
    st.chunks++;
    st.records += n;
    st.bytes += len;
    if (span > st.span)
        st.span = span;
    st.last_key = key_ns;
    return stats_put(txn, &st);
}

/* One chunk read whole by a memo'd scan: its key and the last record time
 * in it (start_ns, or the chunk's key for a record without one). */
typedef struct memo_ent {
    uint64_t key_ns;
    uint32_t seq;
    uint64_t last;
} memo_ent;

/* Entries sorted by (key_ns, seq), the walk's order. */
struct cupstore_scan_memo {
    memo_ent *v;
    size_t n, cap;
};

int cupstore_scan_memo_new(cupstore_scan_memo **out)
{
    if (!out)
        return CUPSTORE_EINVAL;
    *out = calloc(1, sizeof **out);
    return *out ? 0 : ENOMEM;
}

void cupstore_scan_memo_free(cupstore_scan_memo *m)
{
    if (m)
        free(m->v);
    free(m);
}

/* Forget the chunks keyed before from (a later scan starting at from or
 * after never walks them). */
static void memo_prune(cupstore_scan_memo *m, uint64_t from)
{
    size_t k = 0;
    while (k < m->n && m->v[k].key_ns < from)
        k++;
    if (k) {
        memmove(m->v, m->v + k, (m->n - k) * sizeof *m->v);
        m->n -= k;
    }
}

/* Remember chunk (key_ns, seq) at index i (its place in the order). */
static int memo_insert(cupstore_scan_memo *m, size_t i, uint64_t key_ns, uint32_t seq,
                       uint64_t last)
{
    if (m->n == m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 64;
        memo_ent *nv = realloc(m->v, ncap * sizeof *nv);
        if (!nv)
            return ENOMEM;
        m->v = nv;
        m->cap = ncap;
    }
    memmove(m->v + i + 1, m->v + i, (m->n - i) * sizeof *m->v);
    m->v[i] = (memo_ent){.key_ns = key_ns, .seq = seq, .last = last};
    m->n++;
    return 0;
}

struct scan {
    uint64_t from, to, key;
    uint64_t last;              /* latest record time of the chunk read    */
    cupstore_scan_memo *memo;   /* NULL: none                              */
    size_t at;                  /* memo: the first entry not before key    */
    cupstore_record_fn fn;
    void *arg;
    cupstore_buf scratch;
};

static int scan_record(const cupstore_record *r, void *arg)
{
    struct scan *s = arg;
    uint64_t t = r->start_ns ? r->start_ns : s->key;
    if (t > s->last)
        s->last = t;
    if (t < s->from || t > s->to)
        return 0;
    return s->fn(r, s->arg);
}

static int scan_chunk(const MDB_val *k, const MDB_val *v, void *arg, bool *done)
{
    struct scan *s = arg;
    if (k->mv_size != CHUNK_KEY)
        return CUPSTORE_ECORRUPT;
    s->key = cupstore_be64_get(k->mv_data);
    if (s->key > s->to) {
        *done = true;
        return 0;
    }
    cupstore_scan_memo *m = s->memo;
    uint32_t seq = cupstore_be32_get((const uint8_t *)k->mv_data + 8);
    if (m) {
        while (s->at < m->n && (m->v[s->at].key_ns < s->key ||
                                (m->v[s->at].key_ns == s->key && m->v[s->at].seq < seq)))
            s->at++;
        if (s->at < m->n && m->v[s->at].key_ns == s->key && m->v[s->at].seq == seq) {
            if (m->v[s->at].last < s->from)
                return 0; /* read before: nothing at or after the window */
            m = NULL;     /* known: read it, no new entry */
        }
    }
    s->last = 0;
    int rc = cupstore_chunk_decode_buf(v->mv_data, v->mv_size, &s->scratch, scan_record, s);
    /* only a chunk read whole is remembered (fn may stop the scan); a
     * memo that cannot grow forgets it: the same records, only slower */
    if (rc == 0 && m)
        (void)memo_insert(m, s->at, s->key, seq, s->last);
    return rc;
}

int cupstore_record_scan_memo(cupstore_txn *txn, uint64_t from_ns, uint64_t to_ns,
                              cupstore_scan_memo *m, cupstore_record_fn fn, void *arg)
{
    struct scan s = {.from = from_ns, .to = to_ns, .memo = m, .fn = fn, .arg = arg};
    chunkstats st;
    uint8_t key[CHUNK_KEY] = {0};
    if (!txn || !fn)
        return CUPSTORE_EINVAL;
    if (from_ns > to_ns)
        return 0;
    int rc = stats_get(txn, &st);
    if (rc)
        return rc;
    uint64_t first = from_ns > st.span ? from_ns - st.span : 0;
    if (m)
        memo_prune(m, first);
    cupstore_be64_put(key, first);
    rc = cupstore_walk(txn, CUPSTORE_DB_CHUNKS, key, CHUNK_KEY, scan_chunk, &s);
    cupstore_buf_free(&s.scratch);
    return rc;
}

int cupstore_record_scan(cupstore_txn *txn, uint64_t from_ns, uint64_t to_ns,
                         cupstore_record_fn fn, void *arg)
{
    return cupstore_record_scan_memo(txn, from_ns, to_ns, NULL, fn, arg);
}

/* cupstore_record_scan_after: each chunk's sequence number and count (one
 * walk, the first bytes of each header only), then the records of the
 * chunks past the first skip records in commit order, up to limit of them
 * in commit order too (decoded, checked).  The second walk goes in key
 * order, so both cuts are set by sequence number before it: from_seq and
 * the records passed over at its front, to_seq and the records kept of it. */
typedef struct seq_count {
    uint32_t seq;
    uint64_t count;
} seq_count;

struct after {
    seq_count *v;
    size_t n, cap;
    uint32_t from_seq;          /* second walk: chunks from this sequence   */
    uint64_t partial;           /* records to pass over in chunk from_seq   */
    uint32_t to_seq;            /* ... to this one (when limited)           */
    uint64_t to_keep;           /* records given of chunk to_seq, counting
                                   those passed over at its front          */
    bool limited;
    uint64_t at, front, keep;   /* the chunk being decoded: its record index,
                                   the records passed over, the end given  */
    cupstore_record_fn fn;
    void *arg;
    cupstore_buf scratch;
};

static int after_count(const MDB_val *k, const MDB_val *v, void *arg, bool *done)
{
    struct after *a = arg;
    uint64_t n;
    (void)done;
    if (k->mv_size != CHUNK_KEY)
        return CUPSTORE_ECORRUPT;
    int rc = cupstore_chunk_count_quick(v->mv_data, v->mv_size, &n);
    if (rc)
        return rc;
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        seq_count *p = realloc(a->v, cap * sizeof *p);
        if (!p)
            return ENOMEM;
        a->v = p;
        a->cap = cap;
    }
    a->v[a->n].seq = cupstore_be32_get((const uint8_t *)k->mv_data + 8);
    a->v[a->n++].count = n;
    return 0;
}

static int cmp_seq(const void *x, const void *y)
{
    uint32_t a = ((const seq_count *)x)->seq, b = ((const seq_count *)y)->seq;
    return a < b ? -1 : a > b;
}

static int after_record(const cupstore_record *r, void *arg)
{
    struct after *a = arg;
    uint64_t i = a->at++;
    if (i < a->front || i >= a->keep)
        return 0;
    return a->fn(r, a->arg);
}

static int after_chunk(const MDB_val *k, const MDB_val *v, void *arg, bool *done)
{
    struct after *a = arg;
    (void)done;
    uint32_t seq = cupstore_be32_get((const uint8_t *)k->mv_data + 8);
    if (seq < a->from_seq || (a->limited && seq > a->to_seq))
        return 0;
    a->at = 0;
    a->front = seq == a->from_seq ? a->partial : 0;
    a->keep = a->limited && seq == a->to_seq ? a->to_keep : UINT64_MAX;
    return cupstore_chunk_decode_buf(v->mv_data, v->mv_size, &a->scratch, after_record, a);
}

int cupstore_record_scan_after(cupstore_txn *txn, uint64_t skip, uint64_t limit,
                               cupstore_record_fn fn, void *arg)
{
    struct after a = {.fn = fn, .arg = arg};
    uint8_t key[CHUNK_KEY] = {0};
    if (!txn || !fn)
        return CUPSTORE_EINVAL;
    int rc = cupstore_walk(txn, CUPSTORE_DB_CHUNKS, key, CHUNK_KEY, after_count, &a);
    if (rc == 0 && a.n) {
        qsort(a.v, a.n, sizeof *a.v, cmp_seq);
        uint64_t before = 0;
        size_t i = 0;
        while (i < a.n && before + a.v[i].count <= skip)
            before += a.v[i++].count;
        if (i < a.n && limit) {
            a.from_seq = a.v[i].seq;
            a.partial = skip - before;
            for (size_t j = i, front = a.partial; j < a.n; j++, front = 0) {
                if (a.v[j].count - front >= limit) {
                    a.limited = true;
                    a.to_seq = a.v[j].seq;
                    a.to_keep = front + limit;
                    break;
                }
                limit -= a.v[j].count - front;
            }
            rc = cupstore_walk(txn, CUPSTORE_DB_CHUNKS, key, CHUNK_KEY, after_chunk, &a);
        }
    }
    free(a.v);
    cupstore_buf_free(&a.scratch);
    return rc;
}

int cupstore_record_stats(cupstore_txn *txn, uint64_t *chunks, uint64_t *records,
                          uint64_t *bytes)
{
    chunkstats st;
    if (!txn)
        return CUPSTORE_EINVAL;
    int rc = stats_get(txn, &st);
    if (rc)
        return rc;
    if (chunks)
        *chunks = st.chunks;
    if (records)
        *records = st.records;
    if (bytes)
        *bytes = st.bytes;
    return 0;
}

/* ---- Names: key BE u32 id, value the bytes as given ---------------------- */

int cupstore_name_put(cupstore_txn *txn, uint32_t id, const char *name, size_t len)
{
    uint8_t key[4];
    if (id == 0 || (!name && len))
        return CUPSTORE_EINVAL;
    if (len > 65536)
        len = 65536; /* C++ names can be long; keep values bounded */
    cupstore_be32_put(key, id);
    return cupstore_put(txn, CUPSTORE_DB_NAMES, key, 4, name ? name : "", len, 0);
}

int cupstore_name_get(cupstore_txn *txn, uint32_t id, const char **name, size_t *len)
{
    uint8_t key[4];
    MDB_val v;
    if (!name || !len)
        return CUPSTORE_EINVAL;
    cupstore_be32_put(key, id);
    int rc = cupstore_get(txn, CUPSTORE_DB_NAMES, key, 4, &v);
    if (rc)
        return rc;
    *name = v.mv_data;
    *len = v.mv_size;
    return 0;
}
