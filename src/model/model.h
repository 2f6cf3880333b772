/*
 * model.h - what a session means: state, verdict and loss reasons, computed
 * from a store.  Shared by the CLI (sessions/check/report/export) and the
 * TUI, so both say the same thing about the same session.  No curses, no
 * CUPTI, no LMDB here: only the store API.
 */
#ifndef CUPTOP_MODEL_H
#define CUPTOP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cupstore.h"

/* Exit statuses of every front end (cuptop's subcommands, export_run and
 * the monitor): 0 ok, 1 a negative answer (INCOMPLETE, export failed),
 * 2 usage error or unreadable store. */
#define CUPTOP_EXIT_OK 0
#define CUPTOP_EXIT_NO 1
#define CUPTOP_EXIT_USAGE 2

/** The words for a store or model error code, said about a session: the
 *  one mapping every front end uses ("no such session in the store", ...).
 *  @return a static string. */
const char *model_strerror(int rc);

/* A heartbeat older than this, with no final status, means crashed. */
#define MODEL_STALE_SECONDS 5

typedef enum model_state {
    MODEL_STATE_RUNNING = 0,   /* fresh heartbeat, no final status         */
    MODEL_STATE_ENDED,         /* final status written                     */
    MODEL_STATE_CRASHED,       /* stale heartbeat (or dead pid), no final  */
} model_state;
const char *model_state_name(model_state s);   /* "running", ...          */

/* Why a session is INCOMPLETE.  Loss classes first (same numbering as
 * cupstore_loss), then reasons that are not record losses. */
enum {
    MODEL_REASON_UNCONSUMED = CUPSTORE_LOSS_MAX, /* completed != consumed   */
    MODEL_REASON_NO_FINAL,        /* crashed: stop protocol never ran       */
    MODEL_REASON_PROTOCOL,        /* a stop step failed or timed out        */
    MODEL_REASON_FLUSH,           /* final forced flush failed              */
    MODEL_REASON_DISABLED,        /* agent stepped aside (see notes)        */
    MODEL_REASON_STORE_DAMAGED,   /* model_verify: stored records missing or
                                     unreadable when read back             */
    MODEL_REASON_CUPTI_START,     /* CUPTI could not start: nothing traced
                                     (always the first reason)             */
    MODEL_REASON_MAX
};
const char *model_reason_name(unsigned reason);  /* "cupti_dropped", ...  */

typedef struct model_reason {
    unsigned reason;            /* cupstore_loss or MODEL_REASON_*         */
    uint64_t count;             /* records (or buffers / steps)            */
    uint64_t first_second;      /* window affected (unix seconds); 0 when  */
    uint64_t last_second;       /*   not tied to seconds                   */
    uint64_t seconds_affected;  /* number of seconds with a non-zero count */
    char text[256];             /* one line for humans                     */
} model_reason;

typedef struct model_summary {
    char id[96];
    int pid;
    char host[64];
    char cmdline[512];
    uint64_t start_ns, end_ns;      /* end_ns: final, else last heartbeat  */
    uint64_t heartbeat_ns;
    model_state state;
    bool complete;                  /* the verdict (so far, if running)    */
    bool count_only;                /* CUPTOP_SINK=null session            */
    uint32_t kinds_enabled;         /* at the last health row              */
    uint32_t epoch;                 /* current/last epoch                  */
    uint32_t device_mask;           /* devices seen (bit = index)          */
    uint64_t records_by_kind[CUPSTORE_KIND_MAX];
    uint64_t records_by_device[CUPSTORE_DEVICE_MAX];
    uint64_t records_total;
    double records_per_s;           /* last complete second                */
    uint64_t loss[CUPSTORE_LOSS_MAX];
    uint64_t loss_total;            /* exact counts only                   */
    /* Counts that are themselves estimates (loss rows with estimate set and
     * kind "all": records in the shared discard buffer, never read), in no
     * exact count above and never in loss_total. */
    uint64_t loss_estimate[CUPSTORE_LOSS_MAX];
    uint64_t buf_completed, buf_consumed;
    model_reason *reasons;          /* malloc'ed; model_summary_free       */
    size_t nreasons;
    uint64_t seconds;               /* health rows in the window (added)   */
    struct model_note *notes;       /* the session's notes, oldest first,  */
    size_t nnotes;                  /*   at most MODEL_NOTES_MAX (added)   */
    uint64_t notes_total;           /* notes in the store (may be more)    */
    /* CUPTI could not start (the agent's cupti_error): why, CUPTI's code
     * (0 when the library itself could not be loaded), and what to do. */
    bool cupti_failed;
    int cupti_error_code;
    char cupti_error[256];          /* raw bytes: model_escape to print    */
    const char *cupti_advice;       /* static text, NULL unless failed     */
} model_summary;

/* A note the agent left in the session (cupstore_note): a warning about a
 * bad setting, a CUPTI load failure, the name of a conflicting subscriber.
 * The text is raw bytes: escape it (model_escape) before printing. */
#define MODEL_NOTES_MAX 64
typedef struct model_note {
    uint64_t time_ns;
    uint32_t level;             /* 0 info, 1 warning, 2 error              */
    char text[241];             /* NUL-terminated copy of the store's text */
} model_note;

/** "info", "warning" or "error" ("level N" beyond). */
const char *model_note_level_name(uint32_t level);

/** Summarise one open session over the window [from_s, to_s] (unix
 *  seconds; 0 and UINT64_MAX for the whole session) and judge it.
 *  @param[out] out    filled; release with model_summary_free.
 *  @param[out] cause  on error, a malloc'ed message (caller frees).
 *  @return 0 or a cupstore error code. */
int model_summarize(cupstore_env *env, uint64_t from_s, uint64_t to_s,
                    model_summary *out, char **cause);
void model_summary_free(model_summary *s);

/** Read every record chunk of the session back (decoding each) and
 *  compare the count with what the agent said it stored (the final
 *  status; without one, the health rows, as a lower bound).  A shortfall or
 *  a chunk that does not decode adds a MODEL_REASON_STORE_DAMAGED reason
 *  and makes s INCOMPLETE.  s must summarise the whole session.  Running
 *  and count-only sessions are not verified (*verified = false); nor are
 *  counts in a window export (`export --format store`), whose chunks are
 *  still decoded.
 *  @param[out] records_read  records decoded.
 *  @return 0, or a cupstore error code when the store cannot be read. */
int model_verify(cupstore_env *env, model_summary *s, bool *verified, uint64_t *records_read);
/** model_summarize over the whole session, then model_verify. */
int model_verify_id(const char *dir, const char *id, model_summary *out, bool *verified,
                    uint64_t *records_read, char **cause);

/** Same as model_summarize, opening session id in store dir read-only. */
int model_summarize_id(const char *dir, const char *id, uint64_t from_s,
                       uint64_t to_s, model_summary *out, char **cause);

/** Parse a time for --from/--to: unix seconds, "+N"/"-N" seconds from the
 *  session start/end, RFC 3339 "YYYY-mm-ddTHH:MM:SS[Z]", or "start"/"end".
 *  @return 0 or CUPSTORE_EINVAL. */
int model_parse_time(const char *s, uint64_t session_start_s,
                     uint64_t session_end_s, uint64_t *out_s);

/** What a person can do when CUPTI could not start with this code (a
 *  CUptiResult; 0: the CUPTI library could not be loaded).  Static text. */
const char *model_cupti_advice(int code);

/** "COMPLETE" or "INCOMPLETE" for s->complete (added for the CLI). */
const char *model_verdict_name(const model_summary *s);

/* ---- Text from a trace, made safe for a terminal (model_text.c) ----------
 * One decision for every front end: C0/C1 controls, DEL, zero-width
 * characters, LRM/RLM, bidi embeddings/overrides/isolates (U+202A..E,
 * U+2066..9), the BOM and invalid UTF-8 never reach a terminal as they are. */

/** Copy n bytes of src (trace strings: any bytes) into dst as text that is
 *  harmless on a terminal, reversibly (the CLI's text output): other valid
 *  UTF-8 is kept; newline, tab and backslash are written \n, \t and \\;
 *  every byte of a refused character, and every invalid byte, as \xHH
 *  (U+202E is \xe2\x80\xae).  Always NUL-terminates; truncates to fit,
 *  never inside an escape or a character. */
void model_escape(char *dst, size_t len, const char *src, size_t n);

/** Copy at most len bytes of s (stopping at a NUL) into out (size outlen,
 *  always terminated), each refused character or invalid byte replaced by
 *  one '?' (the monitor: one column each).  ascii_only: also replace every
 *  non-ASCII character.  Never splits a character.
 *  @return the length written. */
size_t model_sanitize(const char *s, size_t len, char *out, size_t outlen, bool ascii_only);

/** Format unix seconds as "YYYY-mm-ddTHH:MM:SSZ" (UTC) into buf. */
void model_format_second(uint64_t second, char *buf, size_t len);

/* ---- A live session, summarised incrementally ------------------------- */

/** What model_summarize(env, 0, UINT64_MAX) says of a session, kept up to
 *  date by model_live_update at the cost of the rows written since the
 *  previous update (for front ends that re-read many live sessions, such
 *  as the exporter).  While the session runs, every count, the state and
 *  the verdict of `sum` equal the whole-session summary's; its reasons
 *  cover only the recent seconds.  Once it has ended or crashed, `sum` is
 *  the whole-session summary itself.  Zero-initialise; one env per
 *  model_live; release with model_live_free. */
typedef struct model_live {
    model_summary sum;          /* as of the last update                   */
    /* private: seconds <= base_to are summed in base */
    model_summary base;
    uint64_t base_to;
    bool have_base;
    bool disabled;              /* a folded second had the agent disabled  */
} model_live;

/** Bring l->sum up to date with one or two short read transactions.
 *  @param[out] cause  on error, a malloc'ed message (caller frees).
 *  @return 0 or a cupstore error code (l->sum is then unchanged). */
int model_live_update(cupstore_env *env, model_live *l, char **cause);
void model_live_free(model_live *l);

#endif /* CUPTOP_MODEL_H */
