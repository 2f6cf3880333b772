/*
 * export_int.h - internals shared by the export writers and the read-only
 * subcommands (sessions, check, report): a buffered output with JSON
 * escaping, an interned-name cache, and the export context.
 */
#ifndef CUPTOP_EXPORT_INT_H
#define CUPTOP_EXPORT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cupstore.h"
#include "cuptop.h"
#include "model.h"

/* ---- Buffered output ------------------------------------------------------
 * Writes to fd in 256 KiB blocks; the first write error sticks in err and
 * later writes are dropped, so callers check once at the end. */
typedef struct xout {
    int fd;
    char *buf;
    size_t len, cap;
    int err;                 /* errno of the first failed write, or 0     */
    uint64_t bytes;          /* bytes handed to write(2)                  */
    bool write_behind;       /* a regular file: start writeback as we go  */
    uint64_t wb_started;     /* bytes whose writeback was started         */
    uint64_t wb_waited;      /* bytes known to be on disk                 */
} xout;

int xout_init(xout *o, int fd);
/** For a regular file that is fsync'ed at the end: start the writeback of
 *  every XOUT_WB_STEP bytes as they are written and wait for the step
 *  before, so that the disk works while records are formatted, dirty pages
 *  stay bounded, and the final fsync has little left to do. */
void xout_write_behind(xout *o);
void xout_free(xout *o);
/** Write what is buffered.  @return 0 or the sticky errno. */
int xout_flush(xout *o);
/** The slow path of xout_put: flush, or write through when n > cap. */
void xout_put_slow(xout *o, const char *s, size_t n);
void xout_puts(xout *o, const char *s);
void xout_i64(xout *o, int64_t v);

/* The fast paths are inline: an export calls them ~30 times per record
 * (an out-of-line call each was ~10% of a chrome export). */
static inline void xout_put(xout *o, const char *s, size_t n)
{
    if (__builtin_expect(o->len + n > o->cap, 0)) {
        xout_put_slow(o, s, n);
        return;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
}

static inline void xout_putc(xout *o, char c)
{
    if (__builtin_expect(o->len + 1 > o->cap, 0))
        xout_flush(o);
    o->buf[o->len++] = c;
}

/** Decimal digits of v right-aligned in tmp[24]; returns the first. */
static inline char *xout_u64_digits(char tmp[24], uint64_t v)
{
    char *p = tmp + 24;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return p;
}

static inline void xout_u64(xout *o, uint64_t v)
{
    char tmp[24];
    char *p = xout_u64_digits(tmp, v);
    xout_put(o, p, (size_t)(tmp + sizeof tmp - p));
}

/** Nanoseconds as microseconds with three decimals ("12.345"). */
static inline void xout_us(xout *o, uint64_t ns)
{
    char tmp[28];
    uint64_t r = ns % 1000;
    tmp[24] = '.';
    tmp[25] = (char)('0' + r / 100);
    tmp[26] = (char)('0' + r / 10 % 10);
    tmp[27] = (char)('0' + r % 10);
    char *p = xout_u64_digits(tmp, ns / 1000);
    xout_put(o, p, (size_t)(tmp + sizeof tmp - p));
}
void xout_printf(xout *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** A JSON string literal (quotes included) from any bytes: valid UTF-8 is
 *  kept, invalid bytes become U+FFFD, control characters \u00XX. */
void xout_json_str(xout *o, const char *s, size_t n);

/** Append the JSON form of n bytes (without quotes) to a malloc'ed string;
 *  returns its length, or -1 on ENOMEM. */
long json_escape_dup(const char *s, size_t n, char **out);

/* ---- Interned names ---------------------------------------------------------
 * id -> JSON-escaped name (without quotes), copied out of the store so it
 * survives the read transaction.  Bounded by the session's names table. */
typedef struct name_cache {
    struct name_ent *ents;
    size_t cap, n;
} name_cache;

void name_cache_free(name_cache *c);
/** JSON-escaped name for id (looked up in txn when not cached).  Returns
 *  NULL for id 0 or when the store has no such name. */
const char *name_cache_get(name_cache *c, cupstore_txn *txn, uint32_t id, size_t *len);

/* ---- CLI helpers --------------------------------------------------------- */

/** Resolve --store (NULL: $CUPTOP_STORE, then the default).  On failure
 *  prints one line for cmd and returns NULL. */
char *cli_store_dir(const char *cmd, const char *opt);
/** One line explaining why a session could not be opened. */
const char *cli_open_error(int rc);
/** Print s escaped for a terminal (control characters, ESC, invalid
 *  UTF-8 shown as \xHH). */
void cli_print_safe(FILE *f, const char *s, size_t n);

/** One note as "INDENT<level> <UTC time>  <text>" + newline, the text
 *  escaped for a terminal (model_escape). */
void cli_print_note(FILE *f, const char *indent, const model_note *n);

/** The JSON object for one summary (sessions --json, check --json). */
void sessions_json(xout *o, const model_summary *s);
/** The provenance fields (",\"label\":...,\"versions\":{...},\"devices\":[...]"),
 *  starting with a comma; devices in device_mask are listed even when
 *  nothing is known about them. */
void prov_json(xout *o, const model_prov *p, uint32_t device_mask);

/* ---- Export context ----------------------------------------------------------- */
typedef struct export_ctx {
    const export_opts *o;
    cupstore_env *env;
    char *store_dir;
    uint64_t from_ns, to_ns;        /* window, inclusive                    */
    uint64_t base_ns;               /* chrome ts origin: from rounded down  */
    model_summary sum;              /* verdict for the window               */
    uint64_t total_hint;            /* records expected (for progress)      */
    uint64_t done;                  /* records written so far               */
    export_progress_fn progress;
    void *progress_arg;
    bool cancelled;
    name_cache names;
    cupstore_txn *txn;              /* the slice's read txn during a scan   */
} export_ctx;

/** Scan the window's records in short read transactions (one per second
 *  of trace time), calling fn; end_slice (may be NULL) after each slice.
 *  Reports progress and honours cancellation. */
typedef int (*export_slice_fn)(export_ctx *x, void *arg);
int export_scan(export_ctx *x, cupstore_record_fn fn, export_slice_fn end_slice, void *arg);

/* Writers: 0, or an errno / cupstore code (the caller words the message). */
int export_chrome(export_ctx *x, xout *o);
int export_jsonl(export_ctx *x, xout *o);
int export_csv(export_ctx *x, xout *o);
/** Write a standalone store into dir (a new, empty directory). */
int export_store(export_ctx *x, const char *dir);

#endif /* CUPTOP_EXPORT_INT_H */
