/*
 * cupstore_codec.c - scratch buffers and the table-driven TLV row codec
 * used for health rows and every other structured row.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "cupstore_int.h"

int cupstore_buf_reserve(cupstore_buf *b, size_t need)
{
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need) {
        if (cap > SIZE_MAX / 2)
            return ENOMEM;
        cap *= 2;
    }
    uint8_t *p = realloc(b->p, cap);
    if (!p)
        return ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

void cupstore_buf_free(cupstore_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

size_t cupstore_tlv_bound(const cupstore_tlv_field *t, size_t n)
{
    size_t sz = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i].type == CUPSTORE_TLV_STR)
            sz += 3 + 5 + t[i].count;
        else
            sz += (size_t)t[i].count * (3 + 10);
    }
    return sz;
}

static uint64_t field_get(const cupstore_tlv_field *f, const uint8_t *base, unsigned idx)
{
    const uint8_t *p = base + f->offset;
    switch (f->type) {
    case CUPSTORE_TLV_U32: {
        uint32_t v;
        memcpy(&v, p + 4 * idx, 4);
        return v;
    }
    case CUPSTORE_TLV_I32: {
        int32_t v;
        memcpy(&v, p + 4 * idx, 4);
        return cupstore_zigzag(v);
    }
    default: {
        uint64_t v;
        memcpy(&v, p + 8 * idx, 8);
        return v;
    }
    }
}

size_t cupstore_tlv_encode(const cupstore_tlv_field *t, size_t n, const void *s, uint8_t *out)
{
    const uint8_t *base = s;
    size_t len = 0;

    for (size_t i = 0; i < n; i++) {
        const cupstore_tlv_field *f = &t[i];
        if (f->type == CUPSTORE_TLV_STR) {
            const char *str = (const char *)(base + f->offset);
            size_t sl = strnlen(str, f->count);
            if (sl == 0)
                continue;
            len += cupstore_varint_put(out + len, (uint64_t)f->id << 6 | 1);
            len += cupstore_varint_put(out + len, sl);
            memcpy(out + len, str, sl);
            len += sl;
            continue;
        }
        for (unsigned j = 0; j < f->count; j++) {
            uint64_t v = field_get(f, base, j);
            if (v == 0)
                continue;
            len += cupstore_varint_put(out + len, (uint64_t)f->id << 6 | (uint64_t)j << 1);
            len += cupstore_varint_put(out + len, v);
        }
    }
    return len;
}

static const cupstore_tlv_field *field_find(const cupstore_tlv_field *t, size_t n, uint64_t id)
{
    /* Tables list ids in increasing order starting at 1; try the direct
     * slot, then search (keeps working if a table has gaps). */
    if (id >= 1 && id <= n && t[id - 1].id == id)
        return &t[id - 1];
    for (size_t i = 0; i < n; i++)
        if (t[i].id == id)
            return &t[i];
    return NULL;
}

int cupstore_tlv_decode(const cupstore_tlv_field *t, size_t n, const uint8_t *in, size_t len,
                        void *s, size_t ssize)
{
    const uint8_t *p = in, *end = in + len;
    uint8_t *base = s;

    memset(s, 0, ssize);
    while (p < end) {
        uint64_t tag, v;
        if (!cupstore_varint_get(&p, end, &tag) || !cupstore_varint_get(&p, end, &v))
            return CUPSTORE_ECORRUPT;
        unsigned wire = tag & 1, idx = (tag >> 1) & 31;
        const cupstore_tlv_field *f = field_find(t, n, tag >> 6);
        if (wire == 1) {
            if (v > (uint64_t)(end - p))
                return CUPSTORE_ECORRUPT;
            if (f && f->type == CUPSTORE_TLV_STR && idx == 0) {
                size_t cl = v < f->count ? (size_t)v : (size_t)f->count - 1;
                memcpy(base + f->offset, p, cl);
                base[f->offset + cl] = '\0';
            }
            p += v;
            continue;
        }
        if (!f || f->type == CUPSTORE_TLV_STR || idx >= f->count)
            continue; /* unknown field or index: skip */
        uint8_t *dst = base + f->offset;
        switch (f->type) {
        case CUPSTORE_TLV_U32: {
            uint32_t x = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
            memcpy(dst + 4 * idx, &x, 4);
            break;
        }
        case CUPSTORE_TLV_I32: {
            int64_t sv = cupstore_unzigzag(v);
            int32_t x = sv > INT32_MAX ? INT32_MAX : sv < INT32_MIN ? INT32_MIN : (int32_t)sv;
            memcpy(dst + 4 * idx, &x, 4);
            break;
        }
        default:
            memcpy(dst + 8 * idx, &v, 8);
            break;
        }
    }
    return 0;
}

int cupstore_tlv_put(cupstore_txn *txn, int db, const void *key, size_t kl,
                     const cupstore_tlv_field *t, size_t n, const void *s)
{
    uint8_t stack[1024];
    size_t bound = cupstore_tlv_bound(t, n);
    uint8_t *buf = bound <= sizeof stack ? stack : malloc(bound);
    if (!buf)
        return ENOMEM;
    size_t len = cupstore_tlv_encode(t, n, s, buf);
    int rc = cupstore_put(txn, db, key, kl, buf, len, 0);
    if (buf != stack)
        free(buf);
    return rc;
}
