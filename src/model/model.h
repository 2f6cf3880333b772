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
#include "model_prov.h"
#include "model_compare.h"
#include "model_ranges.h"
#include "model_graphs.h"

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
/** After a guarded read faulted (CUPSTORE_EFAULT): "its data.mdb is
 *  damaged: read fault (SIGBUS) while reading it; left out (...)", with
 *  what cupstore_guard_last() says.  Static per thread. */
const char *model_fault_text(void);

/* A heartbeat older than this, with no final status, means the process
 * stopped writing them: crashed when it is gone, stopped or not responding
 * when it is still there (model_liveness). */
#define MODEL_STALE_SECONDS 5

typedef enum model_state {
    MODEL_STATE_RUNNING = 0,   /* fresh heartbeat, no final status         */
    MODEL_STATE_ENDED,         /* final status written                     */
    MODEL_STATE_CRASHED,       /* no final status, and the process is gone
                                  (or, where it cannot be looked up, the
                                  heartbeat is stale)                      */
    MODEL_STATE_STOPPED,       /* stale heartbeat, the same process still
                                  there, stopped (SIGSTOP, Ctrl-Z, a
                                  debugger): live, unfinished              */
    MODEL_STATE_NOT_RESPONDING,/* stale heartbeat, the process still there
                                  (or not visible here: another PID
                                  namespace) but writing none: live,
                                  unfinished                               */
    MODEL_STATE_MAX
} model_state;
/** "running", "ended", "crashed", "stopped", "not_responding". */
const char *model_state_name(model_state s);
/** The session has not ended and its process is (or may be) there:
 *  running, stopped or not responding.  Its verdict is "so far". */
bool model_state_live(model_state s);

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
    MODEL_REASON_NOT_RESPONDING,  /* stopped or not responding: no
                                     heartbeat, the process still there    */
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
    /* Who the process is, whatever namespace reads it (meta boot_id,
     * start_time, pid_ns, written by agents since issue 28; have_identity
     * false for older stores, judged by host name and pid as before):
     * the kernel's boot id, the start time in clock ticks after boot
     * (/proc/PID/stat field 22) and the inode of its PID namespace. */
    bool have_identity;
    char boot_id[40];
    uint64_t start_ticks;
    uint64_t pid_ns;
    /* A session without a final status (model_liveness): what the
     * process lookup found. */
    char proc_state;                /* /proc state letter ('\0': not seen) */
    int pid_here;                   /* its pid in this PID namespace (0)   */
    bool not_visible;               /* cannot be looked up from here       */
    bool complete;                  /* the verdict (so far, if running)    */
    bool count_only;                /* CUPTOP_SINK=null session            */
    uint64_t attached_ns;           /* cuptop attach: when the agent was
                                       brought into the running process (0:
                                       started with it); nothing before it
                                       was ever in scope                   */
    char attached_uid[16];          /* by which uid ("" when not attached) */
    char skipped[192];              /* the agent stepped aside by design
                                       (--only-if): why; "" otherwise      */
    int continued_signal;           /* the stop signal that ended the session
                                       was handled and the process carried
                                       on (0: no); what followed is out of
                                       scope (meta continued_after_signal) */
    uint64_t continued_ns;          /* when the handler returned           */
    uint64_t process_exit_ns;       /* when that process exited (0: unknown) */
    uint32_t kinds_enabled;         /* at the last health row              */
    uint32_t epoch;                 /* current/last epoch                  */
    uint32_t device_mask;           /* devices seen (bit = index)          */
    /* A window export (`export --format store`; meta export_window): a
     * window, judged as one.  Its state is ended unless it holds the
     * session's end (window_end), where the session's end is judged: the
     * final status, or crashed when the session had crashed. */
    bool window;
    bool window_end;                /* the window holds the session's end  */
    char window_of[96];             /* the exported session's id           */
    char capture[160];              /* the capture range configured
                                       ("nvtx:NAME", "cudaProfilerApi"); ""
                                       when none (model_scope_*)            */
    uint64_t records_by_kind[CUPSTORE_KIND_MAX];
    uint64_t records_by_device[CUPSTORE_DEVICE_MAX];
    uint64_t records_total;
    double records_per_s;           /* ended or crashed: the mean over the
                                       health rows; running: the last full
                                       second (see records_per_s_mean)     */
    bool records_per_s_mean;        /* records_per_s is a mean             */
    uint64_t records_after_rows;    /* no final status and not running: the
                                       records stored after the last health
                                       row, counted from the store (in
                                       records_total and the per-kind and
                                       per-device counts above)            */
    uint64_t loss[CUPSTORE_LOSS_MAX];
    uint64_t loss_total;            /* exact counts only                   */
    /* Counts that are themselves estimates (loss rows with estimate set and
     * kind "all": records in the shared discard buffer, never read), in no
     * exact count above and never in loss_total. */
    uint64_t loss_estimate[CUPSTORE_LOSS_MAX];
    /* Lower bounds (invariant 12): at least this many records lost beyond
     * loss[] - in buffers handed to CUPTI that never came back (tail: held
     * when the final flush gave up; conflict: another client took them,
     * the flush having returned).  In no exact count, never in loss_total;
     * a bound makes the session INCOMPLETE and is always said to be one
     * ("at least N").  buffers_unreturned: how many buffers (0 from older
     * agents, which did not count them). */
    uint64_t loss_bound[CUPSTORE_LOSS_MAX];
    /* Loss that cannot be counted, only bounded from above: at most this
     * many records of the class beyond loss[] (loss_bound[] included).
     * Tail: the buffers CUPTI still held when the final flush gave up,
     * times the records a buffer can hold (MODEL_RECORD_MIN_BYTES); 0 when
     * nothing is unknown, or the session's buffer size is not stored.  It
     * includes loss_bound[] (at_most - bound more may be lost).  Records
     * CUPTI had not yet put in any buffer of the agent's are not in it. */
    uint64_t loss_at_most[CUPSTORE_LOSS_MAX];
    uint64_t buffers_unreturned;
    bool final_aside;               /* the store refused the final status:
                                       it was read from final.aside       */
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
    model_prov *prov;               /* versions, devices, label (model_prov.h);
                                       malloc'ed, NULL when out of memory  */
    /* The job (meta "job"; a session without one is a job of its own, its
     * id the session's) and the rank in it (-1: none named). */
    char job[96];
    bool job_own;                   /* no job was given: the session's own */
    int rank;
    char rank_source[24];           /* "RANK", ...; "" when no rank        */
    bool job_launcher;              /* model_job_judge: the job's launcher
                                       (model_job_launcher_like, in a job
                                       with ranks); false elsewhere        */
    int world_size;                 /* with the rank's source; 0 unknown  */
    /* The store it was read from when several are read as one (its label,
     * borrowed from the model_stores that outlives the summary); NULL when
     * one store is read.  Session ids are unique within a store only. */
    const char *store;
    /* Exact losses per device and class, from the loss rows; slot
     * MODEL_DEVICE_NONE holds those of no device (CUPSTORE_DEVICE_NONE). */
    uint64_t loss_by_device[CUPSTORE_DEVICE_MAX + 1][CUPSTORE_LOSS_MAX];
} model_summary;

#define MODEL_DEVICE_NONE CUPSTORE_DEVICE_MAX   /* loss_by_device slot     */

/** Should device slot d (0..MODEL_DEVICE_NONE) of s be listed: records on
 *  it, or a loss?  (sessions --json, the exporter: every class of it.) */
bool model_device_listed(const model_summary *s, unsigned d);

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
 *  @param[out] cause  on error, a malloc'ed message for the user, "session
 *                     ID: what went wrong" (caller prints and frees it).
 *  @return 0 or a cupstore error code. */
int model_summarize(cupstore_env *env, uint64_t from_s, uint64_t to_s,
                    model_summary *out, char **cause);
void model_summary_free(model_summary *s);

/* ---- Is the process of a session without a final status there? ------ */

typedef enum model_presence {
    MODEL_PROC_ELSEWHERE = 0,  /* another kernel (boot id), or a store from
                                  before the identity of another host: only
                                  the heartbeat tells                      */
    MODEL_PROC_HIDDEN,         /* this kernel, but not visible from here
                                  (another PID namespace, hidepid, no
                                  identity recorded): cannot be checked    */
    MODEL_PROC_GONE,           /* this kernel, and no process has its pid
                                  and start time (or it is a zombie)       */
    MODEL_PROC_HERE,           /* the same process: pid and start time    */
} model_presence;

typedef struct model_proc {
    model_presence presence;
    char state;                /* HERE: the state letter of /proc/PID/stat */
    int pid_here;              /* HERE: its pid in this PID namespace     */
} model_proc;

/** Look the process of s up by its identity (pid, host, boot_id,
 *  start_ticks, pid_ns): in this PID namespace by its pid and start time;
 *  in another one by its start time and its innermost pid (NSpid of
 *  /proc/PID/status).  It is GONE only where it would be seen if it were
 *  there: this namespace, the initial one, or one in which another of its
 *  processes is seen.  Reads /proc (model_proc_root); never fails. */
void model_proc_find(const model_summary *s, model_proc *out);

/** The state of a session without a final status: pure.  A fresh heartbeat
 *  means running, whatever the lookup says, unless the process is
 *  provably gone (crashed).  A stale one: crashed when gone, or when only
 *  the heartbeat tells (ELSEWHERE); stopped when the process is there in
 *  state T or t; not responding when it is there otherwise, or HIDDEN. */
model_state model_liveness(bool fresh, const model_proc *p);

/** One line on the process of a stopped or not responding session: how
 *  long without a heartbeat, what the lookup found ("stopped: no heartbeat
 *  for 12 s; process 4242 is there, stopped (state T: SIGSTOP, Ctrl-Z or a
 *  debugger) ..."); "" for the other states.  Made safe to print. */
void model_liveness_text(const model_summary *s, char *buf, size_t len);

/** Tests: look processes up under dir instead of /proc (NULL: /proc);
 *  dir/sys/kernel/random/boot_id is the boot id, dir/self/ns/pid (its
 *  inode) this PID namespace.  Not thread-safe; call before reading. */
void model_proc_root(const char *dir);

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
/** model_summarize over the whole session of env, then model_verify; when
 *  the records cannot be read back, out is freed and cause (caller frees)
 *  says so. */
int model_verify_whole(cupstore_env *env, model_summary *out, bool *verified,
                       uint64_t *records_read, char **cause);
/** model_verify_whole, opening session id in store dir read-only; cause
 *  as for model_summarize_id. */
int model_verify_id(const char *dir, const char *id, model_summary *out, bool *verified,
                    uint64_t *records_read, char **cause);

/** What a front end reads from one open session (model_session_read): 0
 *  or an error code, with *cause (caller frees) set where it has words. */
typedef int (*model_session_fn)(cupstore_env *env, void *arg, char **cause);

/** Open session id in store dir read-only once, run fn(env, arg, cause)
 *  on it under the store's read-fault guard (DESIGN invariant 11) and
 *  close it: a front end that needs several judgements of one session
 *  opens it once.  When the open fails, cause is "session ID in DIR: what
 *  went wrong"; after a fault (CUPSTORE_EFAULT) "session ID in DIR: its
 *  data.mdb is damaged ...", and whatever fn had allocated is lost (the
 *  caller forgets fn's outputs). */
int model_session_read(const char *dir, const char *id, model_session_fn fn, void *arg,
                       char **cause);

/** Same as model_summarize, opening session id in store dir read-only;
 *  when that fails, cause is "session ID in DIR: what went wrong". */
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

/** "COMPLETE", "INCOMPLETE", or "SKIPPED" (the agent stepped aside by design:
 *  --only-if did not match; not a failure) for the CLI. */
const char *model_verdict_name(const model_summary *s);

/** The scope statement of a session whose stop signal the application
 *  survived (continued_signal): one line, "" when there is none.  The
 *  verdict covers the session up to the signal; what followed is out of
 *  scope, neither traced nor lost. */
void model_scope_text(const model_summary *s, char *buf, size_t len);

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


/* ---- Seconds: one second as the verdict counts it (model_seconds.c) ----- */

/* One second of a session.  loss[] is the verdict's rule: per class the
 * larger of the health row's counter and the second's exact loss rows.
 * Every judgement (the verdict, the per-epoch figures, the monitor's
 * series) reads seconds through model_seconds_scan. */
typedef struct model_second {
    uint64_t second;
    bool have_health;           /* a health row exists for it              */
    cupstore_health h;          /* that row; zeros (but .second) if none   */
    uint64_t loss[CUPSTORE_LOSS_MAX];     /* the verdict's count per class  */
    uint64_t loss_total;                  /* their sum                      */
    uint64_t rows_loss[CUPSTORE_LOSS_MAX];/* the exact loss rows' sums      */
    uint64_t estimate[CUPSTORE_LOSS_MAX]; /* kind-"all" estimates: counts of
                                             their own, in no loss[] above  */
    uint64_t est_kind[CUPSTORE_KIND_MAX]; /* per-kind estimates (a split of
                                             exact counts over kinds)       */
    uint64_t loss_by_device[CUPSTORE_DEVICE_MAX + 1][CUPSTORE_LOSS_MAX];
                                          /* exact rows; slot MODEL_DEVICE_NONE:
                                             of no device                   */
} model_second;

/** Called per second in order; return non-zero to stop with that value. */
typedef int (*model_second_fn)(const model_second *s, void *arg);

/** Call fn for every second of [from_s, to_s] that has a health row or a
 *  loss row, in order, inside the caller's read transaction.
 *  @note s is valid during the call only.
 *  @return 0, fn's non-zero value, or a cupstore error code. */
int model_seconds_scan(cupstore_txn *txn, uint64_t from_s, uint64_t to_s, model_second_fn fn,
                       void *arg);

/* ---- The words for an epoch's scope (model_scope.c) --------------------- */

/** The sentences `cuptop report` prints about epoch e's scope, one per
 *  line ("out of scope (dormant: CUPTI not attached); ...", "in scope: a
 *  capture range (nvtx:step)", "CUPTI attached late, by a control request
 *  (attach took 1.2 ms)", "device scope 0,2 (...)", the API policy).
 *  capture: the session's capture range as configured (model_summary's
 *  capture: "nvtx:NAME", "cudaProfilerApi"; "" or NULL: none).
 *  @return the lines written (at most max). */
size_t model_scope_lines(const cupstore_epoch *e, const char *capture, char (*lines)[200],
                         size_t max);

/* The same in the monitor's few words. */
typedef struct model_scope_words {
    char cupti[128];            /* "CUPTI: attached (late, 0.4 ms)", ...   */
    char scope[128];            /* "scope: devices 0,2", "scope: all devices,
                                   capture range nvtx:step (in a range)"   */
    char api[160];              /* "API gpu, 930 call ids muted"; "" none  */
} model_scope_words;

/** The kind panel's words, from the newest health row's flags
 *  (CUPSTORE_HF_*: attached now or not) and the open epoch (NULL: none). */
void model_scope_brief(uint32_t health_flags, const cupstore_epoch *open, const char *capture,
                       model_scope_words *out);

/* ---- Facts: what the health rows of a window say ---------------------- */

/* One epoch (a collection scope) with its figures: the one per-epoch rule
 * of report, compare (SESSION@N) and the monitor.  The second in which a
 * change was acknowledged is split between the epochs it saw at the
 * acknowledged change times, in proportion to each epoch's rates in its
 * whole seconds (by time alone when one has none): losses that came before
 * the switch stay in the old epoch.  An epoch that collects nothing (kinds
 * off, out of scope) takes time but no records or losses from a split
 * second.  Losses are the verdict's (model_seconds.c, and the tail the
 * final status knows of in the epoch open at the end): over the whole
 * session the epochs add up to records_total and loss_total exactly. */
typedef struct model_epoch_stat {
    uint32_t id;
    uint32_t kinds;             /* mask collected in the epoch             */
    uint64_t start_ns, end_ns;  /* acknowledged change times; end 0: open  */
    double seconds;             /* time with health rows, in seconds       */
    uint64_t records, losses;   /* losses: every class                     */
    uint64_t loss[CUPSTORE_LOSS_MAX];   /* losses per class                */
    uint32_t pool_limit;        /* last per-second pool limit seen         */
    bool known;                 /* an epoch row exists (else only rows)    */
    cupstore_epoch row;         /* that row (scope flags, attach), if known */
} model_epoch_stat;

/* The longest run of consecutive seconds with a loss. */
typedef struct model_window {
    uint64_t first_s, seconds;  /* 0 seconds: no loss                      */
    uint64_t lost;
    uint64_t by_class[CUPSTORE_LOSS_MAX];
} model_window;

#define MODEL_OVERHEAD_TYPES CUPSTORE_OVERHEAD_MAX /* entries of overhead_by_type */

typedef struct model_facts {
    uint64_t rows, first_s, last_s;
    uint64_t peak_kind[CUPSTORE_KIND_MAX];
    uint64_t peak_total, peak_second;
    uint64_t requested, provided, declined, completed, consumed, foreign, bytes;
    uint32_t pool_limit, pool_hw, q_cap, q_hw;   /* maxima over the window  */
    uint32_t req_p99_max, cmp_p99_max, cmp_max, commit_p99_max;
    uint64_t store_refused;                      /* write txns refused      */
    uint64_t overhead[MODEL_OVERHEAD_TYPES];
    /* the seconds with a loss */
    uint64_t loss_seconds, loss_records, loss_lost;
    uint64_t loss_completed, loss_consumed, loss_declined, loss_bytes;
    uint64_t loss_at_limit;        /* lossy seconds with the pool at that
                                      second's own limit                   */
    uint32_t loss_limit_min, loss_limit_max;     /* per-second pool limits  */
    uint32_t loss_q_hw_max, loss_q_cap, loss_commit_p99_max;
    uint64_t loss_q_full;          /* lossy seconds with the queue full     */
    uint32_t loss_kinds;           /* kinds on in any lossy second          */
    uint64_t windows;              /* runs of consecutive lossy seconds     */
    model_window longest;
    /* losses by kind and device, from the loss rows */
    uint64_t kind_loss[CUPSTORE_KIND_MAX], kind_loss_est[CUPSTORE_KIND_MAX];
    uint64_t dev_loss[CUPSTORE_DEVICE_MAX];
    /* the agent's configuration (0: unknown) */
    uint64_t buffer_size, device_buffer_size;
    uint32_t device_buffer_pool_limit, stop_timeout_ms, threads, devices;
    uint32_t kinds_now;            /* at the last row of the window         */
    uint32_t device_mask;          /* devices with records in the window    */
    uint32_t steps_timed_out;      /* stop steps whose watchdog fired       */
    model_epoch_stat *epochs;      /* by id order; model_facts_free         */
    size_t nepochs;
} model_facts;

/* Periodic capture windows (--capture-range every:P/W), judged over the
 * session's epochs: how many, how late their edges came, which were cut
 * short (a session that ends inside a window is judged as far as it went;
 * a control request that ends the schedule closes one early). */
typedef struct model_windows {
    uint32_t n;                 /* window epochs (in scope)                */
    uint32_t period_ms, window_ms; /* the last window's schedule           */
    uint32_t timed;             /* windows opened at a boundary (sched_ns) */
    double open_late_ms;        /* the latest open after its boundary      */
    uint32_t closes;            /* closes at a boundary (the next epoch's)  */
    double close_late_ms;       /* the latest close after its boundary     */
    uint32_t cut_short;         /* ended before their close boundary       */
    uint32_t lossy;             /* windows with a loss                     */
} model_windows;

/** Judge the windows of r's epochs.  @return out->n (0: no windows). */
uint32_t model_windows_judge(const model_facts *r, model_windows *out);

/** The sentence `cuptop report` prints about the windows: "4 periodic
 *  windows every:1s/300ms, opened at most 1.2 ms and closed at most 0.8
 *  ms after their boundary (wall clock); ...; the time between them was
 *  out of scope".  Empty when w->n is 0. */
void model_windows_line(const model_windows *w, char *buf, size_t len);

/** The windows that lost records, one line each ("window 3 (epoch 7, due
 *  ...Z): INCOMPLETE, 120 records lost (dropped 120)"), numbered among
 *  the windows in scope; at most max, the rest counted in *more.  Said the
 *  same by cuptop check and cuptop report. */
size_t model_windows_lossy_lines(const model_facts *r, char (*lines)[200], size_t max,
                                 size_t *more);

/** The monitor's countdown under periodic windows (open: the open epoch,
 *  now_ns: CLOCK_REALTIME): "window closes in 0.2 s", "next window in
 *  42.0 s", "next window in 12m05s"; "" without a schedule. */
void model_window_next(const cupstore_epoch *open, uint64_t now_ns, char *buf, size_t len);


/** Read the facts of session env over [from_s, to_s] (0, UINT64_MAX: all).
 *  @param[out] out    release with model_facts_free.
 *  @param[out] cause  on error, a malloc'ed message (caller frees).
 *  @return 0 or a cupstore error code. */
int model_facts_read(cupstore_env *env, uint64_t from_s, uint64_t to_s, model_facts *out,
                     char **cause);
void model_facts_free(model_facts *f);

/** A number from the session's stored configuration (config.KEY, KEY, or
 *  the KEY=VALUE lines of "config"); 0 when absent. */
uint64_t model_config_u64(cupstore_txn *txn, const char *key);
/* The smallest activity record the agent enables (CUpti_ActivityContext3,
 * 32 bytes; the API records are 40, a kernel 216): what bounds the records
 * one buffer can hold. */
#define MODEL_RECORD_MIN_BYTES 32
/* The agent's discard buffers (CUPTI API < 27; AGENT_DISCARD_SIZE): a held
 * buffer is at most the larger of this and the session's buffer size. */
#define MODEL_DISCARD_BYTES (64u << 10)

/** The baseline epoch: the longest one that collected records (kinds on,
 *  records > 0) and lost none; ties go to the later.  -1 when none: an
 *  epoch that collected nothing is never a baseline. */
int model_epoch_baseline(const model_epoch_stat *e, size_t n);

/** The baseline epoch of session s (facts f over the whole session): as
 *  model_epoch_baseline, but never the epoch open at the end when the
 *  session's end is judged lossy (crashed, stop protocol or final flush
 *  failed, buffers unconsumed): its tail is missing. */
int model_session_baseline(const model_summary *s, const model_facts *f);

/** Judge one epoch of a session (`cuptop compare SESSION@N`) by the
 *  per-epoch rule of model_epoch_stat: the summary of the epoch's seconds,
 *  with the epoch's own losses per class (a change second split, never
 *  counted twice) and the session-end reasons (crash, stop protocol,
 *  flush, unconsumed buffers) only for the epoch open at the end, when it
 *  collects.  An epoch that collects nothing (dormant, out of scope) is
 *  judged by its own losses only.
 *  @param[out] out    release with model_summary_free.
 *  @param[out] stat   the epoch's figures (NULL: not wanted).
 *  @param[out] cause  on error, a malloc'ed message (caller frees).
 *  @return 0, CUPSTORE_ENOTFOUND (no such epoch), or a cupstore error. */
int model_summarize_epoch(cupstore_env *env, uint32_t epoch, model_summary *out,
                          model_epoch_stat *stat, char **cause);

/* ---- Records by the epoch of their launch (model_epoch.c) ------------- */

/* Epochs are cut at CPU times while GPU work runs later: a kernel launched
 * in one epoch may start on the GPU after the next has begun (known defect
 * 29.2).  A GPU record (kernel, memcpy, memset, graph) carries the
 * correlation id of its launch, and CUPTI numbers API calls in the order
 * they are entered, as their records' start times are: so the epoch of a
 * launch is the collecting epoch whose first API call's id is the largest
 * at or below the record's.  The map holds each collecting epoch's lowest
 * API correlation id (its first 2 seconds' API records: an epoch with none
 * there is taken to collect none) and says whether every boundary between
 * collecting epochs has one; where one lacks it (no API kind in an epoch,
 * --api none) or a record has no id, the record's own start time decides:
 * the last collecting epoch started by then (GPU work that starts in a
 * dormant or out-of-scope epoch, or after the end, was launched in the
 * epoch that collected before it). */
typedef struct model_epoch_span {
    uint32_t id;
    uint64_t start_ns, end_ns;   /* end 0: open                            */
    bool collects;               /* kinds on and in scope                  */
    bool corr_known;
    uint32_t corr_lo;            /* its lowest API call id (corr_known)    */
} model_epoch_span;

typedef struct model_epoch_map {
    model_epoch_span *e;         /* by start                               */
    size_t n;
    size_t *coll, ncoll;         /* the collecting ones, by start (into e) */
} model_epoch_map;

/* How long after its epoch's end a GPU record of it is looked for (a
 * reader scans that far past an epoch's window for its late records). */
#define MODEL_EPOCH_LATE_NS (60ull * 1000000000ull)
/* How far a GPU record's start may lie before its launch's (the GPU's and
 * the host's clocks, as CUPTI aligns them). */
#define MODEL_EPOCH_SKEW_NS 1000000ull

/** Read the epochs of a session and their API correlation boundaries.
 *  @return 0 or a cupstore error; release with model_epoch_map_free. */
int model_epoch_map_read(cupstore_txn *txn, model_epoch_map *m);
/** The epoch (index into m->e) record r belongs to, or -1 (none: before
 *  the first, after an end, or no time). */
long model_epoch_map_of(const model_epoch_map *m, const cupstore_record *r);
/** Whether the map places r (a GPU record with its launch's id or a
 *  start time); others go by the window they are read in. */
bool model_epoch_map_places(const model_epoch_map *m, const cupstore_record *r);
/** The index of epoch id in m->e, or -1. */
long model_epoch_map_find(const model_epoch_map *m, uint32_t id);
void model_epoch_map_free(model_epoch_map *m);

/* ---- Advice: facts -> ranked recommendations ------------------------- */

typedef enum model_advice_code {
    MODEL_ADVICE_RAISE_POOL = 0,  /* the pool starves: raise its limit      */
    MODEL_ADVICE_BUFFER_SIZE,     /* buffers too small for the rate         */
    MODEL_ADVICE_NARROW,          /* the consumer/store falls behind        */
    MODEL_ADVICE_FASTER_STORE,    /* the store refuses or commits slowly    */
    MODEL_ADVICE_DEVICE_BUFFERS,  /* zero timestamps: CUPTI device buffers  */
    MODEL_ADVICE_STOP_TIMEOUT,    /* tail: the stop steps ran out of time   */
    MODEL_ADVICE_CONFLICT,        /* another CUPTI client                   */
    MODEL_ADVICE_CRASH,           /* died without a stop protocol           */
    MODEL_ADVICE_PARSE,           /* records that do not parse              */
    MODEL_ADVICE_DISABLED,        /* the agent stepped aside                */
    MODEL_ADVICE_DAMAGED,         /* stored records missing on read-back    */
    MODEL_ADVICE_CUPTI_START,     /* CUPTI could not start: nothing traced  */
    MODEL_ADVICE_MAX
} model_advice_code;
/** "raise_pool", "buffer_size", "narrow", ... */
const char *model_advice_name(unsigned code);

typedef struct model_advice {
    unsigned code;              /* model_advice_code                       */
    char setting[32];           /* CUPTOP_* variable for a rerun; "" none  */
    char value[128];            /*   and its value                         */
    char run_option[160];       /* the same as a `cuptop run` option       */
    char control[160];          /* a runtime request for `cuptop control`
                                   ("--pool 36"); "" when none applies     */
    uint32_t pool;              /* RAISE_POOL: the limit advised           */
    uint32_t kinds;             /* NARROW: the mask advised                */
    char brief[96];             /* the same in a few words (monitor line)  */
    char text[256];             /* what to do, one sentence                */
    char evidence[400];         /* the facts that say so                   */
} model_advice;

/** Rank what to do about s (judged over the window f was read for).
 *  @param[out] out  malloc'ed array, best first (caller frees); NULL and
 *                   0 entries when nothing needs doing.
 *  @return 0 or ENOMEM. */
int model_advise(const model_summary *s, const model_facts *f, model_advice **out, size_t *n);

/** model_facts_read on env and model_advise for a summary s of the same
 *  window (the CLI's check), under a read-fault guard of its own: a fault
 *  leaves the verdict standing, without advice.
 *  @param[out] cause  NULL, or on an error a malloc'ed message when the
 *                     code alone does not say it (caller frees; NULL
 *                     otherwise, and after a fault).
 *  @return 0 or a cupstore error code; *out as for model_advise. */
int model_advise_read(cupstore_env *env, uint64_t from_s, uint64_t to_s,
                      const model_summary *s, model_advice **out, size_t *n, char **cause);

/** model_summarize, model_facts_read and model_advise over one window of
 *  an open session, for front ends that need all three (the monitor). */
int model_judge(cupstore_env *env, uint64_t from_s, uint64_t to_s, model_summary *s,
                model_facts *f, model_advice **advice, size_t *nadvice, char **cause);

/* ---- Several stores read as one (model_stores.c) ------------------------ */

/** One store of a set: a directory of sessions. */
typedef struct model_store {
    char *dir;                  /* its path                                */
    char *label;                /* how outputs name it (its path)          */
    int err;                    /* 0, or why it cannot be listed (a
                                   cupstore code or errno): named, left out */
    size_t nsessions;           /* sessions listed when it was added       */
    bool have_id;               /* dev and ino are known                   */
    unsigned long dev, ino;     /* read once however it was reached        */
} model_store;

/** The stores a command reads: several --store, or directories of stores
 *  gathered from many hosts.  Zero-initialise; model_stores_free. */
typedef struct model_stores {
    model_store *v;
    size_t n;
    bool several;               /* more than one store was named, or a
                                   directory of stores: outputs name the
                                   store of each session                   */
} model_stores;

/** Add path to ss: the store itself when it holds sessions or cannot be
 *  listed (err set); when it holds none, each subdirectory that does (a
 *  directory of stores gathered from many hosts, HOST/ each), sorted by
 *  name; when none does, path itself (an empty store).  A directory
 *  already in ss is not added again.  @return 0 or ENOMEM. */
int model_stores_add(model_stores *ss, const char *path);
void model_stores_free(model_stores *ss);

/** The one store of ss holding session id (or a unique prefix of one).
 *  @param[out] ix      its index (when found in exactly one)
 *  @param[out] nfound  how many stores hold it
 *  @return 0, CUPSTORE_ENOTFOUND, CUPSTORE_EINVAL (in several stores, or
 *          ambiguous within one), or ENOMEM. */
int model_stores_find(const model_stores *ss, const char *id, size_t *ix, size_t *nfound);

/* ---- Jobs: the processes of one `cuptop run` (model_job.c) -------------- */

/** A job: its processes' summaries and the verdict over all of them.
 *  COMPLETE only if every process is COMPLETE (a SKIPPED one, stepped
 *  aside by --only-if, does not count against it) and no rank is missing
 *  (ranks below a world size some process named, with no session). */
typedef struct model_job {
    char id[96];
    model_summary *procs;       /* by rank (none last), then start, id     */
    size_t n;
    model_state state;          /* running if any is live (running, stopped
                                   or not responding), else crashed if any
                                   crashed, else ended                     */
    bool complete;
    size_t incomplete, crashed, running, skipped;   /* running: live ones  */
    size_t stalled;             /* of the running: stopped or not responding */
    size_t launchers;           /* processes marked job_launcher           */
    int world_size;             /* the largest any process named; 0 none   */
    size_t missing;             /* ranks below world_size with no session  */
    int first_missing;          /* the lowest of them (-1 none)            */
    bool duplicate_rank;        /* two processes name the same rank        */
    uint64_t loss[CUPSTORE_LOSS_MAX], loss_total, records_total;
    uint64_t start_ns, end_ns;
    /* model_job_read_open: the job's sessions, kept open (model_job_env) */
    struct model_job_open {
        char id[96];
        const char *store;      /* the summary's store (NULL: one store)  */
        cupstore_env *env;
    } *open;
    size_t nopen;
    size_t nstores;             /* stores read (model_job_read_stores)     */
} model_job;

/** A process that looks like a job's launcher (torchrun, mpirun, a
 *  shell): no rank, not skipped, not crashed, and no record of a kind that
 *  CUDA work makes (kernel, memcpy, memset, sync, runtime, driver, marker;
 *  CUPTI's overhead records alone come from starting CUDA in it). */
bool model_job_launcher_like(const model_summary *s);
/** Judge j from j->procs (sorts them; fills every other field).  In a
 *  job where some process names a rank, a launcher-like process is marked
 *  job_launcher: listed as the launcher, not as a process without a rank;
 *  its verdict still counts (a loss in it is a loss).  Pure: the tests
 *  build the summaries by hand. */
void model_job_judge(model_job *j);
void model_job_free(model_job *j);
/** Read a session's job id and whether it is its own (one short read
 *  transaction); job holds at least 96 bytes. */
int model_session_job(cupstore_env *env, char *job, size_t len, bool *own);

/* ---- Periodic windows across a job's processes (model_job_win.c) ---- */

/** One window a process opened: the boundary it was due at, when it
 *  opened (each by the process' own CLOCK_REALTIME). */
typedef struct model_job_opening {
    size_t proc;                /* index into the job's procs              */
    uint64_t sched_ns, start_ns;
} model_job_opening;

typedef struct model_job_windows {
    size_t procs;               /* processes that opened any window        */
    uint32_t boundaries;        /* distinct boundaries some process opened */
    uint32_t in_all;            /* of them, opened by every such process   */
    uint64_t spread_ns;         /* the largest spread of open times at one
                                   boundary opened by two or more          */
    uint64_t spread_sched_ns;   /* that boundary (0: none shared)          */
} model_job_windows;

/** Align the openings v[0..n) (sorted in place) by boundary.  Pure. */
void model_job_windows_align(model_job_opening *v, size_t n, model_job_windows *out);

/** The windows of a job read by model_job_read_open (or _stores with
 *  keep): each process' window epochs, aligned by boundary.  out->procs 0:
 *  no process had windows.  @return 0 or a cupstore error (-ENOMEM). */
int model_job_windows_read(const model_job *j, model_job_windows *out);

/** Called for a session that cannot be read while a job is collected: it
 *  may belong to the job.  cause is the malloc'ed message (callee frees). */
typedef void (*model_job_error_fn)(const char *id, int rc, char *cause, void *arg);

/** Collect job `job` from store dir: every session whose job it is,
 *  summarised over [from_s, to_s], then judged.
 *  @param[out] out     release with model_job_free
 *  @param[out] unreadable  sessions that could not be read (err called)
 *  @return 0, CUPSTORE_ENOTFOUND (no session of that job), or the code of
 *          a store that cannot be listed. */
int model_job_read(const char *dir, const char *job, uint64_t from_s, uint64_t to_s,
                   model_job *out, size_t *unreadable, model_job_error_fn err, void *arg);

/** As model_job_read, and the job's sessions stay open for the caller (a
 *  command that reads each of them again opens none twice):
 *  model_job_env gives each; model_job_free closes them. */
int model_job_read_open(const char *dir, const char *job, uint64_t from_s, uint64_t to_s,
                        model_job *out, size_t *unreadable, model_job_error_fn err, void *arg);

/** model_job_read and model_job_read_open (keep) over every store of ss:
 *  a store that cannot be listed (or a session in one that cannot be read)
 *  counts in unreadable and err is called for it (id: its directory), and
 *  the others are read.  Each summary's store is its store's label when
 *  ss->several.  @return as model_job_read (ENOTFOUND: in no store). */
int model_job_read_stores(const model_stores *ss, const char *job, uint64_t from_s,
                          uint64_t to_s, bool keep, model_job *out, size_t *unreadable,
                          model_job_error_fn err, void *arg);

/** The open session of process s of a job read by model_job_read_open
 *  (owned by the job), or NULL. */
cupstore_env *model_job_env(const model_job *j, const model_summary *s);

/** Summarise every process of a job read by model_job_read_open again, over
 *  [from_s, to_s], on its open session (guarded), and judge the job again.
 *  @return 0, or the code of the first session that cannot be read (cause:
 *          malloc'ed, naming it). */
int model_job_resummarize(model_job *j, uint64_t from_s, uint64_t to_s, char **cause);

/* ---- A live session, summarised incrementally ------------------------- */

/** What model_summarize(env, 0, UINT64_MAX) says of a session, kept up to
 *  date by model_live_update at the cost of the rows written since the
 *  previous update (for front ends that re-read many live sessions, such
 *  as the exporter).  While the session runs, every count, the state and
 *  the verdict of `sum` equal the whole-session summary's; its reasons
 *  cover only the recent seconds.  Once it has ended or crashed, `sum` is
 *  the whole-session summary itself.  Zero-initialise; one env per
 *  model_live; release with model_live_free. */
/* The one staleness policy of live readers: the rows of the newest
 * MODEL_LIVE_GUARD seconds may still change (a second's losses can be
 * added after its health row, a tail after the last row); older seconds
 * are final.  model_live folds only older seconds into its base, and
 * model_live_series re-reads the newest MODEL_LIVE_GUARD seconds. */
#define MODEL_LIVE_GUARD 8

typedef struct model_live {
    model_summary sum;          /* as of the last update                   */
    /* private: seconds <= base_to are summed in base */
    model_summary base;
    uint64_t base_to;
    bool have_base;
    bool disabled;              /* a folded second had the agent disabled  */
    bool have_sum;              /* sum holds a summary                     */
    uint64_t series_from;       /* model_live_series re-reads from here    */
    bool series_started;
} model_live;

/** Bring l->sum up to date with one or two short read transactions.
 *  @param[out] cause  on error, a malloc'ed message (caller frees).
 *  @return 0 or a cupstore error code (l->sum is then unchanged). */
int model_live_update(cupstore_env *env, model_live *l, char **cause);

/** A live front end's frame (the monitor): model_live_update, then fn for
 *  every second that is new or may still have changed since the previous
 *  call (the first call: every second; then from MODEL_LIVE_GUARD seconds
 *  before the newest one), in order, each counted by the verdict's rule
 *  (model_second).  Front ends lay the series and l->sum out; they never
 *  sum losses themselves, so the counters they show are the verdict's
 *  (the tail the final status knows of included).
 *  @return 0, fn's non-zero value, or a cupstore error code (cause as for
 *          model_live_update). */
int model_live_series(cupstore_env *env, model_live *l, model_second_fn fn, void *arg,
                      char **cause);
void model_live_free(model_live *l);

#endif /* CUPTOP_MODEL_H */
