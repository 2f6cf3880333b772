/*
 * cupstore_chunk.c - the record chunk codec (pure: no LMDB).
 *
 * A chunk is a header followed by a payload, raw or LZ4-compressed:
 *
 *   u8 magic 0xC5, u8 version 2, u8 flags (bit 0: LZ4),
 *   varint count, varint base_ns, [varint raw_len if LZ4],
 *   u32 LE CRC-32C of everything before it and of the payload, payload
 *
 * Version 1 chunks (no checksum) are still read.
 *
 * Each record in the payload is delta-coded against the previous record of
 * the same kind (a "slot"; kinds are folded into 16 slots):
 *
 *   varint head = mask << 4 | kc   (kc = kind, or 15 then a kind byte)
 *   fields present in mask, in bit order, then the timestamps.
 *
 * See doc/store-format.md for the full layout.  The decoder checks every
 * bound and returns CUPSTORE_ECORRUPT on any malformation.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>

#include "cupstore_int.h"

#define CHUNK_MAGIC 0xC5
#define CHUNK_VERSION 2             /* 1: the same without the checksum  */
#define CHUNK_F_LZ4 0x01
#define CHUNK_HDR_MAX 40            /* 3 + 3 varints + 4 (checksum)      */
#define CHUNK_REC_MAX 128           /* bound on one encoded record       */
#define CHUNK_COUNT_MAX (1u << 20)  /* records per chunk                 */

/* Mask bits: frequently changing fields first so the head is one byte. */
enum {
    M_NAME = 1u << 0,
    M_CBID = 1u << 1,
    M_STREAM = 1u << 2,
    M_CORR = 1u << 3,   /* correlation != previous + 1 (same slot)       */
    M_AUX = 1u << 4,
    M_BYTES = 1u << 5,
    M_GRID = 1u << 6,
    M_FLAGS = 1u << 7,
    M_DEV = 1u << 8,
    M_CTX = 1u << 9,
    M_PID = 1u << 10,
    M_TID = 1u << 11,
    M_BLOCK = 1u << 12,
    M_START0 = 1u << 13, /* start_ns == 0: no start delta               */
    M_END0 = 1u << 14,   /* end_ns == 0: no duration                     */
    M_ALL = (1u << 15) - 1
};

/* ---- CRC-32C (Castagnoli) ----------------------------------------------------
 * Catches bytes damaged at rest that would still decode.  The SSE4.2
 * instruction when the CPU has it, else slicing-by-8 tables; both give the
 * standard CRC-32C (crc32c("123456789") = 0xe3069283). */
static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static bool crc_hw;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    crc_hw = __builtin_cpu_supports("sse4.2");
#endif
}

static uint32_t crc_sw(uint32_t c, const uint8_t *p, size_t n)
{
    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                           (uint32_t)p[3] << 24);
        c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
            crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^ crc_table[3][p[4]] ^
            crc_table[2][p[5]] ^ crc_table[1][p[6]] ^ crc_table[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n--)
        c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
    return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("sse4.2"))) static uint32_t crc_x86(uint32_t c, const uint8_t *p, size_t n)
{
    uint64_t c64 = c;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c64 = __builtin_ia32_crc32di(c64, v);
        p += 8;
        n -= 8;
    }
    c = (uint32_t)c64;
    while (n--)
        c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}
#endif

/* Continue a CRC-32C (start with 0) over n more bytes. */
uint32_t cupstore_crc32c(uint32_t crc, const void *buf, size_t n)
{
    pthread_once(&crc_once, crc_init);
    uint32_t c = ~crc;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (crc_hw)
        return ~crc_x86(c, buf, n);
#endif
    return ~crc_sw(c, buf, n);
}

/* Previous record of one kind slot. */
typedef struct chunk_slot {
    uint64_t start, bytes;
    uint32_t corr, name, cbid, stream, ctx, pid, tid, aux;
    uint32_t grid[3], block[3];
    uint16_t dev;
    uint8_t flags;
} chunk_slot;

static void slots_init(chunk_slot *s, uint64_t base)
{
    memset(s, 0, 16 * sizeof *s);
    for (int i = 0; i < 16; i++)
        s[i].start = base;
}

static size_t record_encode(chunk_slot *slots, const cupstore_record *r, uint8_t *out)
{
    chunk_slot *s = &slots[r->kind & 15];
    unsigned mask = 0;
    size_t o;

    if (r->name_id != s->name)
        mask |= M_NAME;
    if (r->cbid != s->cbid)
        mask |= M_CBID;
    if (r->stream != s->stream)
        mask |= M_STREAM;
    if (r->correlation != (uint32_t)(s->corr + 1))
        mask |= M_CORR;
    if (r->aux != s->aux)
        mask |= M_AUX;
    if (r->bytes != s->bytes)
        mask |= M_BYTES;
    if (memcmp(r->grid, s->grid, sizeof s->grid) != 0)
        mask |= M_GRID;
    if (r->flags != s->flags)
        mask |= M_FLAGS;
    if (r->device != s->dev)
        mask |= M_DEV;
    if (r->context != s->ctx)
        mask |= M_CTX;
    if (r->pid != s->pid)
        mask |= M_PID;
    if (r->tid != s->tid)
        mask |= M_TID;
    if (memcmp(r->block, s->block, sizeof s->block) != 0)
        mask |= M_BLOCK;
    if (r->start_ns == 0)
        mask |= M_START0;
    if (r->end_ns == 0)
        mask |= M_END0;

    if (r->kind < 15) {
        o = cupstore_varint_put(out, (uint64_t)mask << 4 | r->kind);
    } else {
        o = cupstore_varint_put(out, (uint64_t)mask << 4 | 15);
        out[o++] = r->kind;
    }
    if (mask & M_NAME)
        o += cupstore_varint_put(out + o, s->name = r->name_id);
    if (mask & M_CBID)
        o += cupstore_varint_put(out + o, s->cbid = r->cbid);
    if (mask & M_STREAM)
        o += cupstore_varint_put(out + o, s->stream = r->stream);
    if (mask & M_CORR)
        o += cupstore_varint_put(
            out + o, cupstore_zigzag((int64_t)r->correlation - ((int64_t)s->corr + 1)));
    s->corr = r->correlation;
    if (mask & M_AUX)
        o += cupstore_varint_put(out + o, s->aux = r->aux);
    if (mask & M_BYTES)
        o += cupstore_varint_put(out + o, s->bytes = r->bytes);
    if (mask & M_GRID)
        for (int i = 0; i < 3; i++)
            o += cupstore_varint_put(out + o, s->grid[i] = r->grid[i]);
    if (mask & M_FLAGS)
        out[o++] = s->flags = r->flags;
    if (mask & M_DEV)
        o += cupstore_varint_put(out + o, s->dev = r->device);
    if (mask & M_CTX)
        o += cupstore_varint_put(out + o, s->ctx = r->context);
    if (mask & M_PID)
        o += cupstore_varint_put(out + o, s->pid = r->pid);
    if (mask & M_TID)
        o += cupstore_varint_put(out + o, s->tid = r->tid);
    if (mask & M_BLOCK)
        for (int i = 0; i < 3; i++)
            o += cupstore_varint_put(out + o, s->block[i] = r->block[i]);
    if (!(mask & M_START0)) {
        o += cupstore_varint_put(out + o, cupstore_zigzag((int64_t)(r->start_ns - s->start)));
        s->start = r->start_ns;
    }
    if (!(mask & M_END0))
        o += cupstore_varint_put(out + o, cupstore_zigzag((int64_t)(r->end_ns - s->start)));
    return o;
}

/* Append the checksum of the header so far and the payload; new length. */
static size_t header_seal(uint8_t *hdr, size_t hl, const uint8_t *payload, size_t len)
{
    uint32_t c = cupstore_crc32c(cupstore_crc32c(0, hdr, hl), payload, len);
    for (int i = 0; i < 4; i++)
        hdr[hl + (size_t)i] = (uint8_t)(c >> (8 * i));
    return hl + 4;
}

int cupstore_chunk_encode_buf(const cupstore_record *recs, size_t n, unsigned mode,
                              cupstore_buf *b, cupstore_buf *lz, const uint8_t **out,
                              size_t *out_len, uint64_t *key_ns, uint64_t *span)
{
    uint64_t smin = UINT64_MAX, smax = 0, emin = UINT64_MAX, base;
    chunk_slot slots[16];
    uint8_t hdr[CHUNK_HDR_MAX];
    size_t hl, raw_len = 0;
    int rc;

    if ((n && !recs) || n > CHUNK_COUNT_MAX)
        return CUPSTORE_EINVAL;
    for (size_t i = 0; i < n; i++) {
        uint64_t s = recs[i].start_ns;
        if (s) {
            if (s < smin)
                smin = s;
            if (s > smax)
                smax = s;
        } else if (recs[i].end_ns && recs[i].end_ns < emin) {
            emin = recs[i].end_ns;
        }
    }
    base = smin != UINT64_MAX ? smin : emin != UINT64_MAX ? emin : 0;
    *key_ns = base;
    *span = smin != UINT64_MAX ? smax - smin : 0;

    if ((rc = cupstore_buf_reserve(b, CHUNK_HDR_MAX + n * CHUNK_REC_MAX)) != 0)
        return rc;
    slots_init(slots, base);
    uint8_t *payload = b->p + CHUNK_HDR_MAX;
    for (size_t i = 0; i < n; i++)
        raw_len += record_encode(slots, &recs[i], payload + raw_len);

    hdr[0] = CHUNK_MAGIC;
    hdr[1] = CHUNK_VERSION;
    hdr[2] = 0;
    hl = 3;
    hl += cupstore_varint_put(hdr + hl, n);
    hl += cupstore_varint_put(hdr + hl, base);

    if (mode == CUPSTORE_ENC_AUTO && raw_len >= 64) {
        int bound = LZ4_compressBound((int)raw_len);
        if (bound > 0 && cupstore_buf_reserve(lz, CHUNK_HDR_MAX + (size_t)bound) == 0) {
            int cl = LZ4_compress_default((const char *)payload, (char *)lz->p + CHUNK_HDR_MAX,
                                          (int)raw_len, bound);
            if (cl > 0 && (size_t)cl + 5 < raw_len - raw_len / 8) {
                hdr[2] = CHUNK_F_LZ4;
                hl += cupstore_varint_put(hdr + hl, raw_len);
                hl = header_seal(hdr, hl, lz->p + CHUNK_HDR_MAX, (size_t)cl);
                memcpy(lz->p + CHUNK_HDR_MAX - hl, hdr, hl);
                *out = lz->p + CHUNK_HDR_MAX - hl;
                *out_len = hl + (size_t)cl;
                return 0;
            }
        }
    }
    hl = header_seal(hdr, hl, payload, raw_len);
    memcpy(payload - hl, hdr, hl);
    *out = payload - hl;
    *out_len = hl + raw_len;
    return 0;
}

int cupstore_chunk_encode(const cupstore_record *recs, size_t n, void **out, size_t *out_len)
{
    cupstore_buf b = {0}, lz = {0};
    const uint8_t *p;
    size_t len;
    uint64_t key, span;

    if (!out || !out_len)
        return CUPSTORE_EINVAL;
    int rc = cupstore_chunk_encode_buf(recs, n, CUPSTORE_ENC_AUTO, &b, &lz, &p, &len, &key,
                                       &span);
    if (rc == 0) {
        void *copy = malloc(len ? len : 1);
        if (!copy) {
            rc = ENOMEM;
        } else {
            memcpy(copy, p, len);
            *out = copy;
            *out_len = len;
        }
    }
    cupstore_buf_free(&b);
    cupstore_buf_free(&lz);
    return rc;
}

/* Parse the header: count, base, flags, raw length, payload. */
typedef struct chunk_hdr {
    uint64_t count, base, raw_len;
    unsigned flags;
    const uint8_t *payload;
    size_t payload_len;
} chunk_hdr;

static int header_parse(const uint8_t *p, size_t len, chunk_hdr *h)
{
    const uint8_t *end = p + len;

    const uint8_t *start = p;
    if (!p || len < 5 || p[0] != CHUNK_MAGIC || (p[1] != 1 && p[1] != CHUNK_VERSION) ||
        (p[2] & ~CHUNK_F_LZ4))
        return CUPSTORE_ECORRUPT;
    unsigned version = p[1];
    h->flags = p[2];
    p += 3;
    if (!cupstore_varint_get(&p, end, &h->count) || !cupstore_varint_get(&p, end, &h->base))
        return CUPSTORE_ECORRUPT;
    if (h->count > CHUNK_COUNT_MAX)
        return CUPSTORE_ECORRUPT;
    h->payload = p;
    h->payload_len = (size_t)(end - p);
    h->raw_len = h->payload_len;
    if (h->flags & CHUNK_F_LZ4) {
        if (!cupstore_varint_get(&p, end, &h->raw_len))
            return CUPSTORE_ECORRUPT;
        h->payload = p;
        h->payload_len = (size_t)(end - p);
        if (h->raw_len == 0 || h->raw_len > h->count * CHUNK_REC_MAX)
            return CUPSTORE_ECORRUPT;
    }
    if (version >= 2) { /* the checksum, then the payload */
        if (end - p < 4)
            return CUPSTORE_ECORRUPT;
        uint32_t want = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                        (uint32_t)p[3] << 24;
        uint32_t got = cupstore_crc32c(0, start, (size_t)(p - start));
        p += 4;
        if (cupstore_crc32c(got, p, (size_t)(end - p)) != want)
            return CUPSTORE_ECORRUPT;
        h->payload = p;
        h->payload_len = (size_t)(end - p);
        if (!(h->flags & CHUNK_F_LZ4))
            h->raw_len = h->payload_len;
    }
    if ((h->flags & CHUNK_F_LZ4) && h->payload_len == 0)
        return CUPSTORE_ECORRUPT;
    /* Every record takes at least one byte and at most CHUNK_REC_MAX. */
    if (h->raw_len < h->count || h->raw_len > h->count * CHUNK_REC_MAX)
        return CUPSTORE_ECORRUPT;
    return 0;
}

int cupstore_chunk_count(const void *buf, size_t len, uint64_t *count)
{
    chunk_hdr h;
    int rc = header_parse(buf, len, &h);
    if (rc == 0)
        *count = h.count;
    return rc;
}

int cupstore_chunk_count_quick(const void *buf, size_t len, uint64_t *count)
{
    const uint8_t *p = buf, *end = p + len;
    if (!p || len < 5 || p[0] != CHUNK_MAGIC || (p[1] != 1 && p[1] != CHUNK_VERSION) ||
        (p[2] & ~CHUNK_F_LZ4))
        return CUPSTORE_ECORRUPT;
    p += 3;
    if (!cupstore_varint_get(&p, end, count) || *count > CHUNK_COUNT_MAX)
        return CUPSTORE_ECORRUPT;
    return 0;
}

#define GET(var)                                                                                 \
    do {                                                                                         \
        if (!cupstore_varint_get(&p, end, &(var)))                                               \
            return CUPSTORE_ECORRUPT;                                                            \
    } while (0)
#define GET32(dst)                                                                               \
    do {                                                                                         \
        uint64_t v_;                                                                             \
        GET(v_);                                                                                 \
        if (v_ > UINT32_MAX)                                                                     \
            return CUPSTORE_ECORRUPT;                                                            \
        (dst) = (uint32_t)v_;                                                                    \
    } while (0)

static int payload_decode(const chunk_hdr *h, const uint8_t *p, size_t len, cupstore_record_fn fn,
                          void *arg)
{
    const uint8_t *end = p + len;
    chunk_slot slots[16];
    cupstore_record r;

    slots_init(slots, h->base);
    memset(&r, 0, sizeof r); /* padding too: callers may memcmp records */
    for (uint64_t i = 0; i < h->count; i++) {
        uint64_t head, v;
        GET(head);
        if (head >> 4 > M_ALL)
            return CUPSTORE_ECORRUPT;
        unsigned mask = (unsigned)(head >> 4), kind = head & 15;
        if (kind == 15) {
            if (p >= end)
                return CUPSTORE_ECORRUPT;
            kind = *p++;
            if (kind < 15)
                return CUPSTORE_ECORRUPT;
        }
        chunk_slot *s = &slots[kind & 15];
        if (mask & M_NAME)
            GET32(s->name);
        if (mask & M_CBID)
            GET32(s->cbid);
        if (mask & M_STREAM)
            GET32(s->stream);
        if (mask & M_CORR) {
            GET(v);
            int64_t d = cupstore_unzigzag(v);
            /* bound the delta first: corr + 1 + d must not overflow */
            if (d < -(int64_t)UINT32_MAX - 1 || d > (int64_t)UINT32_MAX)
                return CUPSTORE_ECORRUPT;
            int64_t c = (int64_t)s->corr + 1 + d;
            if (c < 0 || c > UINT32_MAX)
                return CUPSTORE_ECORRUPT;
            s->corr = (uint32_t)c;
        } else {
            s->corr++;
        }
        if (mask & M_AUX)
            GET32(s->aux);
        if (mask & M_BYTES)
            GET(s->bytes);
        if (mask & M_GRID)
            for (int j = 0; j < 3; j++)
                GET32(s->grid[j]);
        if (mask & M_FLAGS) {
            if (p >= end)
                return CUPSTORE_ECORRUPT;
            s->flags = *p++;
        }
        if (mask & M_DEV) {
            GET(v);
            if (v > UINT16_MAX)
                return CUPSTORE_ECORRUPT;
            s->dev = (uint16_t)v;
        }
        if (mask & M_CTX)
            GET32(s->ctx);
        if (mask & M_PID)
            GET32(s->pid);
        if (mask & M_TID)
            GET32(s->tid);
        if (mask & M_BLOCK)
            for (int j = 0; j < 3; j++)
                GET32(s->block[j]);
        r.start_ns = 0;
        if (!(mask & M_START0)) {
            GET(v);
            s->start += (uint64_t)cupstore_unzigzag(v);
            r.start_ns = s->start;
        }
        r.end_ns = 0;
        if (!(mask & M_END0)) {
            GET(v);
            r.end_ns = s->start + (uint64_t)cupstore_unzigzag(v);
        }
        r.kind = (uint8_t)kind;
        r.flags = s->flags;
        r.device = s->dev;
        r.context = s->ctx;
        r.stream = s->stream;
        r.correlation = s->corr;
        r.name_id = s->name;
        r.pid = s->pid;
        r.tid = s->tid;
        r.cbid = s->cbid;
        r.aux = s->aux;
        r.bytes = s->bytes;
        memcpy(r.grid, s->grid, sizeof r.grid);
        memcpy(r.block, s->block, sizeof r.block);
        if (fn) {
            int stop = fn(&r, arg);
            if (stop)
                return stop;
        }
    }
    return p == end ? 0 : CUPSTORE_ECORRUPT;
}

int cupstore_chunk_decode_buf(const void *buf, size_t len, cupstore_buf *scratch,
                              cupstore_record_fn fn, void *arg)
{
    chunk_hdr h;
    int rc = header_parse(buf, len, &h);
    if (rc)
        return rc;
    if (!(h.flags & CHUNK_F_LZ4))
        return payload_decode(&h, h.payload, h.payload_len, fn, arg);
    if (h.payload_len > INT32_MAX || h.raw_len > INT32_MAX)
        return CUPSTORE_ECORRUPT;
    if ((rc = cupstore_buf_reserve(scratch, (size_t)h.raw_len)) != 0)
        return rc;
    int dl = LZ4_decompress_safe((const char *)h.payload, (char *)scratch->p, (int)h.payload_len,
                                 (int)h.raw_len);
    if (dl < 0 || (uint64_t)dl != h.raw_len)
        return CUPSTORE_ECORRUPT;
    return payload_decode(&h, scratch->p, (size_t)dl, fn, arg);
}

int cupstore_chunk_decode(const void *buf, size_t len, cupstore_record_fn fn, void *arg)
{
    cupstore_buf scratch = {0};
    int rc = cupstore_chunk_decode_buf(buf, len, &scratch, fn, arg);
    cupstore_buf_free(&scratch);
    return rc;
}
