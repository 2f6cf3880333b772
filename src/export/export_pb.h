/*
 * export_pb.h - a small streaming protobuf encoder for the Perfetto writer
 * (export_perfetto.c): varints, fixed64, length-delimited fields and nested
 * messages in one growable buffer.  No library, no schema: the caller names
 * field numbers (perfetto's .proto files, tests/perfetto/).
 *
 * A nested message is opened with pb_open (its length byte reserved) and
 * closed with pb_close, which writes the length and, only when the message
 * reached 128 bytes or more, moves it up to make room for a longer varint.
 * Messages are small (a trace packet is tens of bytes), so the move is rare.
 * Memory: the buffer grows to the largest message and is reused; a failed
 * allocation sticks in err (later writes are dropped; check once at the end).
 */
#ifndef CUPTOP_EXPORT_PB_H
#define CUPTOP_EXPORT_PB_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { PB_VARINT = 0, PB_FIXED64 = 1, PB_LEN = 2 };

typedef struct pb {
    uint8_t *b;
    size_t len, cap;
    int err;                 /* ENOMEM once an allocation failed, else 0 */
} pb;

/* Make room for n more bytes.  @return 0 or ENOMEM (sticky). */
static inline int pb_reserve(pb *p, size_t n)
{
    if (__builtin_expect(p->len + n <= p->cap, 1))
        return 0;
    if (p->err)
        return p->err;
    size_t ncap = p->cap ? p->cap : 256;
    while (ncap < p->len + n)
        ncap *= 2;
    uint8_t *nb = realloc(p->b, ncap);
    if (!nb)
        return p->err = ENOMEM;
    p->b = nb;
    p->cap = ncap;
    return 0;
}

static inline void pb_free(pb *p)
{
    free(p->b);
    memset(p, 0, sizeof *p);
}

static inline size_t pb_varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Encode v at d (room for 10 bytes); returns the bytes written. */
static inline size_t pb_varint_at(uint8_t *d, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        d[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    d[n++] = (uint8_t)v;
    return n;
}

/* A varint field at d (room for 20 bytes; a constant field's tag folds to
 * its bytes); returns the end.  For packets built in place. */
static inline uint8_t *pb_uint_at(uint8_t *d, uint32_t field, uint64_t v)
{
    d += pb_varint_at(d, ((uint64_t)field << 3) | PB_VARINT);
    return d + pb_varint_at(d, v);
}

static inline void pb_varint(pb *p, uint64_t v)
{
    if (pb_reserve(p, 10))
        return;
    p->len += pb_varint_at(p->b + p->len, v);
}

static inline void pb_tag(pb *p, uint32_t field, unsigned wire)
{
    pb_varint(p, ((uint64_t)field << 3) | wire);
}

/** An unsigned (uint32/uint64/enum/bool) field. */
static inline void pb_uint(pb *p, uint32_t field, uint64_t v)
{
    pb_tag(p, field, PB_VARINT);
    pb_varint(p, v);
}

/** An int32/int64 field (two's complement: negatives take 10 bytes). */
static inline void pb_int(pb *p, uint32_t field, int64_t v)
{
    pb_uint(p, field, (uint64_t)v);
}

static inline void pb_fixed64(pb *p, uint32_t field, uint64_t v)
{
    pb_tag(p, field, PB_FIXED64);
    if (pb_reserve(p, 8))
        return;
    for (int i = 0; i < 8; i++)
        p->b[p->len++] = (uint8_t)(v >> (8 * i));
}

static inline void pb_double(pb *p, uint32_t field, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    pb_fixed64(p, field, v);
}

/** A bytes or string field (strings must be valid UTF-8: the caller's job). */
static inline void pb_bytes(pb *p, uint32_t field, const void *s, size_t n)
{
    pb_tag(p, field, PB_LEN);
    pb_varint(p, n);
    if (pb_reserve(p, n))
        return;
    memcpy(p->b + p->len, s, n);
    p->len += n;
}

static inline void pb_str(pb *p, uint32_t field, const char *s)
{
    pb_bytes(p, field, s, strlen(s));
}

/** Open a nested message; returns the mark pb_close takes. */
static inline size_t pb_open(pb *p, uint32_t field)
{
    pb_tag(p, field, PB_LEN);
    if (pb_reserve(p, 1))
        return p->len;
    p->b[p->len] = 0;
    return p->len++;
}

/** Close the message opened at mark: write its length (moving it up when
 *  the length needs more than one byte). */
static inline void pb_close(pb *p, size_t mark)
{
    if (p->err || mark >= p->len)
        return;
    size_t n = p->len - mark - 1;
    if (__builtin_expect(n < 0x80, 1)) {
        p->b[mark] = (uint8_t)n;
        return;
    }
    size_t extra = pb_varint_len(n) - 1;
    if (pb_reserve(p, extra))
        return;
    memmove(p->b + mark + 1 + extra, p->b + mark + 1, n);
    pb_varint_at(p->b + mark, n);
    p->len += extra;
}

#endif /* CUPTOP_EXPORT_PB_H */
