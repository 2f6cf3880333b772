/*
 * export_out.c - buffered output, JSON string escaping, the interned-name
 * cache, and small helpers shared by the data-out subcommands.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export_int.h"

#define XOUT_CAP (256u * 1024u)

int xout_init(xout *o, int fd)
{
    memset(o, 0, sizeof *o);
    o->fd = fd;
    o->cap = XOUT_CAP;
    if (!(o->buf = malloc(o->cap)))
        return ENOMEM;
    return 0;
}

void xout_free(xout *o)
{
    free(o->buf);
    o->buf = NULL;
}

#define XOUT_WB_STEP (32u << 20)

void xout_write_behind(xout *o)
{
    o->write_behind = true;
}

/* Start writeback of the last step; wait for the one before it.  Errors are
 * ignored here (some file systems do not support it): the final fsync
 * reports what matters. */
static void write_behind(xout *o)
{
    if (o->bytes - o->wb_started < XOUT_WB_STEP)
        return;
    uint64_t from = o->wb_started, len = o->bytes - from;
    if (sync_file_range(o->fd, (off_t)from, (off_t)len, SYNC_FILE_RANGE_WRITE) != 0) {
        o->write_behind = false;
        return;
    }
    if (from > o->wb_waited)
        sync_file_range(o->fd, (off_t)o->wb_waited, (off_t)(from - o->wb_waited),
                        SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                            SYNC_FILE_RANGE_WAIT_AFTER);
    o->wb_waited = from;
    o->wb_started = o->bytes;
}

int xout_flush(xout *o)
{
    size_t off = 0;
    while (!o->err && off < o->len) {
        ssize_t n = write(o->fd, o->buf + off, o->len - off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            o->err = errno;
            break;
        }
        off += (size_t)n;
        o->bytes += (uint64_t)n;
    }
    o->len = 0;
    if (o->write_behind && !o->err)
        write_behind(o);
    return o->err;
}

void xout_put_slow(xout *o, const char *s, size_t n)
{
    xout_flush(o);
    if (n > o->cap) { /* larger than the buffer: write through */
        while (!o->err && n) {
            ssize_t w = write(o->fd, s, n);
            if (w < 0) {
                if (errno != EINTR)
                    o->err = errno;
                continue;
            }
            s += w;
            n -= (size_t)w;
            o->bytes += (uint64_t)w;
        }
        return;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
}

void xout_puts(xout *o, const char *s)
{
    xout_put(o, s, strlen(s));
}

void xout_i64(xout *o, int64_t v)
{
    if (v < 0) {
        xout_putc(o, '-');
        xout_u64(o, (uint64_t)0 - (uint64_t)v);
    } else {
        xout_u64(o, (uint64_t)v);
    }
}

void xout_printf(xout *o, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof tmp) {
        xout_put(o, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        o->err = o->err ? o->err : ENOMEM;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    xout_put(o, big, (size_t)n);
    free(big);
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t l;
    if (c < 0x80)
        return 1;
    if (c < 0xc2 || c > 0xf4)
        return 0;
    l = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
    if (l > n)
        return 0;
    for (size_t k = 1; k < l; k++)
        if ((s[k] & 0xc0) != 0x80)
            return 0;
    if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0) ||
        (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90))
        return 0;
    return l;
}

/* Escape into a caller-sized buffer (at most 6 bytes out per byte in). */
static size_t json_escape_into(char *dst, const char *src, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)src;
    char *d = dst;
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            *d++ = (char)c;
            i++;
            continue;
        }
        if (c == '"' || c == '\\') {
            *d++ = '\\';
            *d++ = (char)c;
            i++;
        } else if (c < 0x20 || c == 0x7f ||
                   (c == 0xc2 && i + 1 < n && s[i + 1] >= 0x80 && s[i + 1] < 0xa0)) {
            /* C0, DEL and C1 controls (U+0080..U+009F) as \u escapes */
            if (c == 0xc2)
                c = s[++i];
            *d++ = '\\';
            switch (c) {
            case '\n': *d++ = 'n'; break;
            case '\r': *d++ = 'r'; break;
            case '\t': *d++ = 't'; break;
            case '\b': *d++ = 'b'; break;
            case '\f': *d++ = 'f'; break;
            default:
                memcpy(d, "u00", 3);
                d += 3;
                *d++ = hex[c >> 4];
                *d++ = hex[c & 15];
            }
            i++;
        } else {
            size_t l = utf8_len(s + i, n - i);
            if (l) {
                memcpy(d, s + i, l);
                d += l;
                i += l;
            } else {
                memcpy(d, "\\ufffd", 6);
                d += 6;
                i++;
            }
        }
    }
    return (size_t)(d - dst);
}

void xout_json_str(xout *o, const char *s, size_t n)
{
    char tmp[1024];
    xout_putc(o, '"');
    while (n) {
        size_t take = n > sizeof tmp / 6 ? sizeof tmp / 6 : n;
        /* do not split a UTF-8 sequence between blocks */
        for (int k = 0; k < 3 && take < n && ((unsigned char)s[take] & 0xc0) == 0x80; k++)
            take--;
        xout_put(o, tmp, json_escape_into(tmp, s, take));
        s += take;
        n -= take;
    }
    xout_putc(o, '"');
}

long json_escape_dup(const char *s, size_t n, char **out)
{
    char *d = malloc(n * 6 + 1);
    if (!d)
        return -1;
    size_t l = json_escape_into(d, s, n);
    d[l] = '\0';
    *out = d;
    return (long)l;
}

/* ---- Name cache: open addressing on the id ------------------------------- */

struct name_ent {
    uint32_t id;      /* 0: empty slot */
    uint32_t len;
    char *json;       /* NULL: known missing */
};

void name_cache_free(name_cache *c)
{
    for (size_t i = 0; i < c->cap; i++)
        free(c->ents[i].json);
    free(c->ents);
    memset(c, 0, sizeof *c);
}

static struct name_ent *name_slot(name_cache *c, uint32_t id)
{
    size_t i = (id * 2654435761u) & (c->cap - 1);
    while (c->ents[i].id && c->ents[i].id != id)
        i = (i + 1) & (c->cap - 1);
    return &c->ents[i];
}

static int name_grow(name_cache *c)
{
    name_cache n = {.cap = c->cap ? c->cap * 2 : 256};
    if (!(n.ents = calloc(n.cap, sizeof *n.ents)))
        return ENOMEM;
    for (size_t i = 0; i < c->cap; i++)
        if (c->ents[i].id)
            *name_slot(&n, c->ents[i].id) = c->ents[i];
    n.n = c->n;
    free(c->ents);
    *c = n;
    return 0;
}

const char *name_cache_get(name_cache *c, cupstore_txn *txn, uint32_t id, size_t *len)
{
    struct name_ent *e;
    if (!id)
        return NULL;
    if (c->cap) {
        e = name_slot(c, id);
        if (e->id == id) {
            *len = e->len;
            return e->json;
        }
    }
    if ((c->n + 1) * 2 > c->cap && name_grow(c) != 0)
        return NULL;
    e = name_slot(c, id);
    e->id = id;
    e->json = NULL;
    e->len = 0;
    c->n++;
    const char *raw;
    size_t rl;
    if (cupstore_name_get(txn, id, &raw, &rl) == 0) {
        long l = json_escape_dup(raw, rl, &e->json);
        e->len = l > 0 ? (uint32_t)l : 0;
    }
    *len = e->len;
    return e->json;
}
