/*
 * export.h - the export library (src/export): export_run(), which writes a
 * window of a session as Trace Event JSON, JSON lines, CSV or a standalone
 * store, and the buffered output with JSON escaping that the writers and
 * the front ends' --json output share.  Used by the CLI and the monitor;
 * depends on the model and the store only.
 */
#ifndef CUPTOP_EXPORT_H
#define CUPTOP_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct cupstore_env;

/** Options of one export (the CLI and the monitor fill them). */
typedef struct export_opts {
    const char *store_dir;   /* store directory (NULL: the default)        */
    const char *session;     /* session id or unique prefix                */
    struct cupstore_env *env;/* that session already open (the caller's: it
                                stays open; session then only names it), or
                                NULL: export_run opens session             */
    uint64_t from_ns, to_ns; /* window (CLOCK_REALTIME ns), inclusive      */
    const char *mark;        /* or a mark name (then from/to are ignored)  */
    const char *format;      /* "chrome", "perfetto", "jsonl", "csv", "store" */
    const char *output;      /* path, or "-" for standard output           */
    bool force;              /* overwrite an existing output               */
    bool allow_stdout;       /* "-" means standard output (the CLI only:
                                the monitor owns its terminal)             */
    bool mangled;            /* keep kernel names as CUPTI gave them       */
    bool uncompressed;       /* perfetto: packets as they are, not in
                                deflated compressed_packets                */
    /* export --range: the NVTX range instance the window is (metadata) */
    const char *range_name;  /* raw bytes (NULL: not a range export)       */
    size_t range_name_len;
    const char *range_domain;/* "" for the default domain                  */
    uint32_t range_id;       /* CUPTI marker id of the instance            */
    uint64_t range_nth;      /* its position in time order (1-based)       */
    bool range_open;         /* still open: the window ends at the data's end */
    const char *job;         /* or every process of this job (chrome or
                                perfetto;
                                session is then ignored, mark refused)     */
    struct model_job *job_read; /* the job read once by the caller
                                (export_job_read: its sessions open),
                                taken over by the export; NULL: it reads
                                the job itself                             */
    const struct model_stores *stores; /* --job over several stores (every
                                one of them; store_dir is then only the
                                first, for messages); NULL: store_dir     */
} export_opts;

/** Progress: records done so far (total may be 0 when unknown).  Return
 *  non-zero to cancel. */
typedef int (*export_progress_fn)(uint64_t done, uint64_t total, void *arg);

/** Write an export.  Streams; atomic (temp file + rename).
 *  @param[in]  o         what to write, and where
 *  @param[in]  progress  called as records are written (may be NULL)
 *  @param[out] cause     malloc'ed message on failure; on success NULL or a
 *                        note the person must see (a count-only session's
 *                        export holds no records); the caller frees it
 *  @return 0, or a CUPTOP_EXIT_* status (model.h): 1 writing failed or
 *          was cancelled, 2 bad arguments, session, mark or store. */
int export_run(const export_opts *o, export_progress_fn progress, void *arg,
               char **cause);

/** Read job o->job from store dir (or every store of o->stores) once, its sessions kept open, for
 *  export_opts.job_read (a caller that needs the job's bounds first opens
 *  no session twice).  On failure cause says why (the same words
 *  export_run would); release out with model_job_free.
 *  @return 0 or -1. */
int export_job_read(const char *dir, const export_opts *o, struct model_job *out,
                    char **cause);

/** A session's first and last ns for relative --from/--to and an open
 *  window: its start and end, reaching back to its first record and first
 *  lost launch and on to its last record.  @return 0 or a store error
 *  (cause: malloc'ed words, when cause is not NULL). */
int export_session_bounds(struct cupstore_env *env, uint64_t *first_ns, uint64_t *last_ns,
                          char **cause);
/** A job's first and last ns, each process' as export_session_bounds gives
 *  it.  The job is read with its sessions open and summarized over all of
 *  them (not yet over a window: model_job_resummarize): their summaries'
 *  bounds are the start, no session is summarized again. */
void export_job_bounds(const struct model_job *j, uint64_t *start_ns, uint64_t *end_ns);

/** The signature of export_run, for front ends that take it as an option. */
typedef int (*export_run_fn)(const export_opts *o, export_progress_fn progress, void *arg,
                             char **cause);

/** From a fatal signal handler (or an LMDB assertion outside the read
 *  guard) just before the program exits: remove the temporary file an
 *  export is writing, if any.  Async-signal-safe. */
void export_fatal_cleanup(void);

/** True for a format export_run writes ("chrome", "perfetto", "jsonl",
 *  "csv", "store"). */
bool export_format_known(const char *format);

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

/* ---- Kernel names ---------------------------------------------------------- */
#define EXPORT_DEMANGLE_IN_MAX 8192u   /* longer mangled names stay raw        */
#define EXPORT_DEMANGLE_MAX 16384u     /* demangled output is cut here, "..." (real PyTorch kernels reach 5 KB) */

/** Demangle an Itanium C++ name ("_Z...", n bytes, not NUL-terminated)
 *  into out (cap bytes, NUL-terminated; use EXPORT_DEMANGLE_MAX).  A result
 *  that does not fit is cut and ends in "...".  Thread-safe, allocates
 *  only inside libstdc++.
 *  @return the length written, or 0 when s is not a mangled C++ name,
 *  demangling failed, or the build has no demangler: keep the raw name. */
size_t export_demangle(const char *s, size_t n, char *out, size_t cap);

/** A session's provenance (model_prov.h) as JSON object members, starting
 *  with a comma: ",\"label\":...,\"simulated\":...,\"versions\":{...},
 *  \"system\":{...},\"devices\":[...]" (sessions --json, the jsonl
 *  session line).  Devices in device_mask are listed even when nothing is
 *  known about them; p NULL writes nulls. */
struct model_prov;
void prov_json(xout *o, const struct model_prov *p, uint32_t device_mask);

#endif /* CUPTOP_EXPORT_H */
