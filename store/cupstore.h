/*
 * cupstore.h - the cuptop store: one LMDB environment per traced process.
 *
 * A store is a directory (mode 0700) holding one sub-directory per session
 * (one traced process).  Each session directory is an LMDB environment with
 * named databases for metadata, per-second health rows, losses, record
 * chunks, interned names, epochs, control requests, marks, stop-protocol
 * steps, warnings and the final status.  Only store/ includes lmdb.h.
 *
 * Caveats
 * - Threads: a cupstore_env may be shared by the threads of one process.
 *   Write transactions are serialised inside the env (one writer at a
 *   time, process-wide, and across processes by LMDB's lock).  A read
 *   transaction belongs to the thread that began it; a thread must not
 *   begin a write transaction while it holds a read transaction.
 * - Open a session once per process and share the env: LMDB forbids two
 *   handles on one environment in one process.
 * - Fork: never use an env or txn opened before fork() in the child.  The
 *   child must open its own env (the agent's pthread_atfork does this).
 * - Long read transactions pin old pages and make the file grow while a
 *   writer appends: hold a read txn for one frame or one batch, never for
 *   the life of the program.  In the writer's process they also delay
 *   growing the map (growth waits for them, at most 2 s, else EAGAIN).  Stale reader slots left by killed readers
 *   are cleared by the writer (cupstore_env_reader_check) each second.
 * - Durability: writes are not fsync'ed per commit (MDB_NOSYNC); the
 *   store is consistent after kill -9 of any process, and the final
 *   commit of a session is synced (cupstore_env_sync).
 *
 * Errors: every call that can fail returns int: 0, a positive errno value,
 * or a negative CUPSTORE_E* code.  cupstore_strerror() describes either.
 */
#ifndef CUPSTORE_H
#define CUPSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Error codes: a reserved negative range ------------------------- */
enum {
    CUPSTORE_E_FIRST = -30900,
    CUPSTORE_ENOTSTORE = -30900,  /* not a cuptop store / session        */
    CUPSTORE_ENEWER = -30899,     /* written by a newer schema version    */
    CUPSTORE_ECORRUPT = -30898,   /* damaged file or undecodable value    */
    CUPSTORE_EFULL = -30897,      /* map reached its configured cap       */
    CUPSTORE_ENOTFOUND = -30896,  /* no such key, session or mark         */
    CUPSTORE_EEXIST = -30895,     /* already exists                       */
    CUPSTORE_EPERM = -30894,      /* store dir not ours or mode too open  */
    CUPSTORE_EBUSY = -30893,      /* resource busy (retry)                */
    CUPSTORE_EINVAL = -30892,     /* bad argument                         */
    CUPSTORE_ELMDBNEWER = -30891, /* data file in a newer LMDB format     */
    CUPSTORE_EFAULT = -30890,     /* an access to the mapping faulted: a
                                     damaged page (cupstore_guarded), a
                                     file truncated under the agent       */
    CUPSTORE_E_LAST = -30890,
};

/** Describe an error code (positive errno or CUPSTORE_E*). Static string. */
const char *cupstore_strerror(int err);

#define CUPSTORE_MAGIC "cuptop-store"
#define CUPSTORE_SCHEMA_VERSION 2u  /* 2: checksummed chunks; 1 is still read */

/* ---- Activity kinds (cuptop's own numbering, CUDA-free) ------------- */
typedef enum cupstore_kind {
    CUPSTORE_KIND_KERNEL = 0, /* CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL/KERNEL */
    CUPSTORE_KIND_MEMCPY,     /* MEMCPY and MEMCPY2 (peer)                   */
    CUPSTORE_KIND_MEMSET,
    CUPSTORE_KIND_RUNTIME,
    CUPSTORE_KIND_DRIVER,
    CUPSTORE_KIND_SYNC,       /* SYNCHRONIZATION                            */
    CUPSTORE_KIND_OVERHEAD,
    CUPSTORE_KIND_MARKER,
    CUPSTORE_KIND_OTHER,      /* anything else the agent was given          */
    CUPSTORE_KIND_GRAPH,      /* GRAPH_TRACE: one record per CUDA graph launch
                                 (aux: graph id); after "other" so the
                                 numbers of older stores stay               */
    CUPSTORE_KIND_MAX
} cupstore_kind;

#define CUPSTORE_KIND_ALL 0xffu       /* "all kinds" in loss keys         */
/* Every kind bit, and what "all" means in a kind list: every kind but
 * graph, which CUPTI does not turn on beside per-node kernel records
 * (CUPTI_ERROR_NOT_COMPATIBLE); "all,graph" minus kernel is the user's
 * to write. */
#define CUPSTORE_KINDS_EVERY ((1u << CUPSTORE_KIND_MAX) - 1)
#define CUPSTORE_KINDS_ALL (CUPSTORE_KINDS_EVERY & ~(1u << CUPSTORE_KIND_GRAPH))
#define CUPSTORE_DEVICE_MAX 16        /* devices tracked per session       */
#define CUPSTORE_DEVICE_NONE 0xffffu  /* host-side / not attributable      */

/** Short lower-case name ("kernel", "memcpy", ...); "?" when out of range. */
const char *cupstore_kind_name(unsigned kind);
/** Parse a name (case-insensitive; also accepts CUPTI-style aliases such
 *  as "concurrent_kernel", "synchronization").  Returns -1 if unknown. */
int cupstore_kind_parse(const char *name);
/** Parse a comma list ("kernel,runtime", "all", "none", "default") into a
 *  mask of (1u << kind).  Returns 0 or CUPSTORE_EINVAL, with *bad pointing
 *  into list at the first unknown name (not NUL-terminated). */
int cupstore_kinds_parse(const char *list, uint32_t *mask, const char **bad);
/** A periodic window schedule as the user writes it ("60s/5s", "1h/90s",
 *  "500ms/200ms"): each duration in the largest unit that divides it. */
void cupstore_every_format(uint32_t period_ms, uint32_t window_ms, char *buf, size_t len);
/** Format a mask as a comma list into buf (always NUL-terminated). */
void cupstore_kinds_format(uint32_t mask, char *buf, size_t len);
#define CUPSTORE_KINDS_DEFAULT                                              \
    ((1u << CUPSTORE_KIND_KERNEL) | (1u << CUPSTORE_KIND_MEMCPY) |          \
     (1u << CUPSTORE_KIND_MEMSET) | (1u << CUPSTORE_KIND_RUNTIME) |         \
     (1u << CUPSTORE_KIND_DRIVER) | (1u << CUPSTORE_KIND_OVERHEAD))

/* ---- Loss classes: never merged (DESIGN invariant 2) ---------------- */
typedef enum cupstore_loss {
    CUPSTORE_LOSS_CUPTI_DROPPED = 0, /* cuptiActivityGetNumDroppedRecords    */
    CUPSTORE_LOSS_DECLINED,          /* buffer requests declined (pool full);
                                        records written to a discard buffer */
    CUPSTORE_LOSS_QUEUE_OVERFLOW,    /* completed buffer did not fit queue   */
    CUPSTORE_LOSS_PARSE_ERROR,       /* GetNextRecord error / bad record     */
    CUPSTORE_LOSS_STORE_REFUSED,     /* store write failed / map full        */
    CUPSTORE_LOSS_ZERO_TS,           /* records with zero start/end          */
    CUPSTORE_LOSS_TAIL,              /* not flushed / not drained at stop    */
    CUPSTORE_LOSS_CONFLICT,          /* another CUPTI client took buffers    */
    CUPSTORE_LOSS_UNRECORDED,        /* launched GPU work whose records never
                                        arrived, beyond every other class
                                        (the launch ledger, --ledger)       */
    CUPSTORE_LOSS_MAX
} cupstore_loss;

/** Stable machine name ("cupti_dropped", "declined", ...). */
const char *cupstore_loss_name(unsigned loss);
/** One-line human description of the class. */
const char *cupstore_loss_describe(unsigned loss);

/* ---- Handles -------------------------------------------------------- */
typedef struct cupstore_env cupstore_env;   /* one session's environment */
typedef struct cupstore_txn cupstore_txn;   /* read or write transaction */

/* ---- Store directory ------------------------------------------------ */

/** Resolve the store directory: explicit (may be NULL), else $CUPTOP_STORE,
 *  else ${XDG_STATE_HOME:-$HOME/.local/state}/cuptop.
 *  @param[out] out  malloc'ed path; caller frees.
 *  @return 0, ENOMEM, or CUPSTORE_EINVAL when no HOME can be found. */
int cupstore_dir_resolve(const char *explicit_dir, char **out);

/** Create the store directory (and parents) with mode 0700 if missing, and
 *  check that an existing one is a directory owned by the caller's uid and
 *  not group/world writable.  @return 0, errno, or CUPSTORE_EPERM. */
int cupstore_dir_prepare(const char *dir);

/** Session ids in a store, sorted by start time (oldest first).
 *  @param[out] ids   malloc'ed array of malloc'ed strings; free with
 *                    cupstore_ids_free.  Entries that are not sessions
 *                    are skipped.
 *  @return 0, errno (ENOENT: no such store), CUPSTORE_EPERM (not owned
 *  by the caller's euid, or group/world writable). */
int cupstore_dir_sessions(const char *dir, char ***ids, size_t *n);
void cupstore_ids_free(char **ids, size_t n);

/* ---- Environments --------------------------------------------------- */

enum {
    CUPSTORE_CREATE = 1u << 0,   /* create a new session (writer)          */
    CUPSTORE_RDONLY = 1u << 1,   /* reader: never writes, never creates    */
};

typedef struct cupstore_open_opts {
    uint64_t map_initial;  /* bytes; 0 = default (64 MiB)                */
    uint64_t map_max;      /* cap for growth on MAP_FULL; 0 = 8 GiB       */
    bool no_compress;      /* chunk_put: never LZ4 (benchmarks); false =
                              LZ4 when it saves at least 1/8              */
} cupstore_open_opts;

/** Create a new session directory in store dir and open it for writing.
 *  The id is "YYYYmmddTHHMMSS-PID" (UTC), with a suffix if taken.
 *  Writes magic and schema version.
 *  @param[out] out  new env; close with cupstore_env_close.
 *  @param[out] id   malloc'ed session id (may be NULL); caller frees.
 *  @return 0, errno, CUPSTORE_EPERM. */
int cupstore_session_create(cupstore_env **out, char **id, const char *dir,
                            int pid, const cupstore_open_opts *opts);

/** Open an existing session by id (or unique id prefix) in store dir.
 *  flags: CUPSTORE_RDONLY for readers; 0 for a front end that may write
 *  control requests and marks.
 *  @return 0, CUPSTORE_ENOTFOUND, CUPSTORE_ENOTSTORE (not a cuptop
 *  session, e.g. a foreign LMDB or garbage), CUPSTORE_ENEWER (a newer
 *  cuptop schema), CUPSTORE_ELMDBNEWER (a newer LMDB data format),
 *  CUPSTORE_ECORRUPT, CUPSTORE_EINVAL (ambiguous prefix), CUPSTORE_EPERM
 *  (store dir not owned by the caller's euid or group/world writable),
 *  errno. */
int cupstore_session_open(cupstore_env **out, const char *dir, const char *id,
                          unsigned flags);

/** Open a session directory by path (export --format store, tests). */
int cupstore_env_open(cupstore_env **out, const char *path, unsigned flags,
                      const cupstore_open_opts *opts);

/** Session id (directory name) of an open env. Valid until close. */
const char *cupstore_env_id(const cupstore_env *env);
/** Flush to disk (used for the final commit).  */
int cupstore_env_sync(cupstore_env *env);
/** Clear reader slots of dead processes.
 *  @param[out] cleared  how many were cleared (may be NULL)
 *  @return 0, CUPSTORE_EINVAL, errno. */
int cupstore_env_reader_check(cupstore_env *env, int *cleared);
/** Bytes used in the map and the current map size. */
int cupstore_env_usage(cupstore_env *env, uint64_t *used, uint64_t *mapsize);
/** Close.  An env marked by cupstore_env_fault is left alone (leaked):
 *  LMDB's close would touch the mappings that faulted. */
void cupstore_env_close(cupstore_env *env);

/** The calling thread's access to env's mapped files faulted (SIGBUS: the
 *  file was truncated under the process, or can no longer be written) and
 *  the caller's fault handler jumped out of the store.  Marks env faulted:
 *  every later call on it returns CUPSTORE_EFAULT without touching LMDB;
 *  and gives back the store's locks this thread held (the write lock, the
 *  remap lock), so other threads waiting on them return too.
 *  @note LMDB's own state in env is abandoned, not repaired: the env is
 *  never used again (the agent's guard, src/agent/agent_guard.c). */
void cupstore_env_fault(cupstore_env *env);
/** Whether cupstore_env_fault marked env. */
bool cupstore_env_faulted(const cupstore_env *env);

/* ---- Read faults: one damaged session stays one ------------------------ */
/* liblmdb trusts the pages it maps: damage inside a data page can make a
 * read fault (SIGBUS past the end of the file, SIGSEGV) or trip one of
 * LMDB's assertions.  Front ends that read many sessions run each one's
 * reads in cupstore_guarded, so such a fault ends only that session's
 * reads.  Never used by the agent. */

typedef int (*cupstore_guarded_fn)(void *arg);
/** Run fn(arg).  When a read fault (the program's SIGBUS/SIGSEGV handler
 *  calls cupstore_guard_recover) or an LMDB assertion happens in this
 *  thread during the call, fn is abandoned: every transaction begun and
 *  every env opened during the call is ended and closed (envs opened
 *  before it stay open: close them, their data is damaged), and
 *  CUPSTORE_EFAULT is returned; cupstore_guard_last() says what happened.
 *  Calls nest.
 *  @return fn's return, CUPSTORE_EFAULT, ENOMEM or CUPSTORE_EINVAL.
 *  @note Memory fn had allocated is lost after a fault (it cannot be
 *        known): do not read the same damaged session again and again;
 *        cupstore_session_stamp says when its data file changed. */
int cupstore_guarded(cupstore_guarded_fn fn, void *arg);
/** What ended this thread's last faulted cupstore_guarded call, e.g.
 *  "read fault (SIGBUS)" or "LMDB assertion (...)".  Static per thread. */
const char *cupstore_guard_last(void);
/** For the program's SIGBUS/SIGSEGV handler, first thing: when the
 *  faulting thread is inside cupstore_guarded, jump back to it (does not
 *  return); otherwise return.  Async-signal-safe. */
void cupstore_guard_recover(int sig);
/** What an LMDB assertion outside any guard calls (a program prints one
 *  line and exits); it must not return.  NULL (the default, the agent):
 *  LMDB aborts as it always has. */
void cupstore_guard_set_fatal(void (*fn)(const char *what));

/** Identity of a session's data file (device, inode, size, mtime). */
typedef struct cupstore_stamp {
    uint64_t dev, ino, size, mtime_ns;
} cupstore_stamp;
/** Stamp of dir/id/data.mdb (lstat: a link is not followed).
 *  @return 0 or errno. */
int cupstore_session_stamp(const char *dir, const char *id, cupstore_stamp *out);
bool cupstore_stamp_equal(const cupstore_stamp *a, const cupstore_stamp *b);

/* ---- Transactions --------------------------------------------------- */

/** Begin a transaction.  Read txns are cheap; keep them short.  A write
 *  txn on MAP_FULL: the commit grows the map (up to map_max) and the
 *  caller retries the batch; past the cap commit returns CUPSTORE_EFULL.
 *  Puts into a transaction that hit MAP_FULL return the code its commit
 *  will return (EAGAIN or CUPSTORE_EFULL).
 *  @return 0, CUPSTORE_EFULL, EACCES (write on a CUPSTORE_RDONLY env),
 *  EAGAIN (map being remapped: retry), errno. */
int cupstore_txn_begin(cupstore_env *env, bool write, cupstore_txn **out);
/** Commit; the txn is freed in every case. On CUPSTORE_EFULL or EAGAIN
 *  (map grown: retry the whole batch) nothing of the txn was written. */
int cupstore_txn_commit(cupstore_txn *txn);
void cupstore_txn_abort(cupstore_txn *txn);

/** Writes one transaction's worth; called again from the start on a retry. */
typedef int (*cupstore_write_fn)(cupstore_txn *txn, void *arg);
/* Transactions cupstore_write tries when its caller gives 0. */
#define CUPSTORE_WRITE_ATTEMPTS 8

/** Run fn in a write transaction and commit it, by the rules above: when
 *  begin, fn or commit returns EAGAIN (the map grew or is being remapped:
 *  nothing of the txn was written) or CUPSTORE_EBUSY (readers held up the
 *  remap, or a table of LMDB's was full), the txn is aborted and the whole
 *  of fn runs again in a new one, at most attempts times.  Any other
 *  failure ends it at once (the txn aborted), CUPSTORE_EFULL (the map is at
 *  its cap) included.  Every writer of the project goes through here.
 *  @param[in] fn        the writes; must be safe to run more than once
 *                       (it may see its earlier attempts' writes gone)
 *  @param[in] attempts  transactions at most (0: CUPSTORE_WRITE_ATTEMPTS)
 *  @return 0 (committed), fn's own non-zero return, or begin's / commit's
 *          code (EAGAIN or CUPSTORE_EBUSY once the attempts are used up).
 *  @note fn must not begin another transaction on env; the txn is valid
 *        during the call only. */
int cupstore_write(cupstore_env *env, cupstore_write_fn fn, void *arg, unsigned attempts);

/* ---- Metadata (write once at session start; key/value strings) ------ */
/* Well-known keys: "pid", "host", "boot_id", "start_time", "pid_ns" (the
 * process's identity across PID namespaces), "cmdline", "start_ns", "cuda_version",
 * "cupti_version", "cupti_api_version", "driver_version", "devices"
 * (one "index:name" per line), "config" (the agent configuration, one
 * "key=value" per line, for people), "config.KEY" (the same settings one
 * key each, for programs: "config.buffer_size", "config.pool",
 * "config.kinds", ...), "agent_version", "sink" ("store"/"null"),
 * "cupti_library"; provenance: "simulated", "driver_version_source",
 * "cuda_driver_version", "cuda_runtime_version", "kernel_release", "os",
 * "virt", "label", "cuptop_version", "unknown" (key=reason lines) and
 * "device.N" (key=value lines from CUPTI's DEVICE record); see
 * doc/store-format.md.  Values are NUL-free strings. */
int cupstore_meta_put(cupstore_txn *txn, const char *key, const char *value);

/* Jobs: the sessions of one `cuptop run` share the meta key "job" (the id
 * cuptop run passes down in CUPTOP_JOB, or the session's own id when the
 * agent was loaded without one; "job_source" says which: "CUPTOP_JOB" or
 * "session"), and "rank" / "rank_source" hold the process' rank and the
 * variable it came from (RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID,
 * LOCAL_RANK); "local_rank" holds LOCAL_RANK beside another source and
 * "world_size" the size that goes with the source (WORLD_SIZE,
 * OMPI_COMM_WORLD_SIZE, SLURM_NTASKS, LOCAL_WORLD_SIZE). */
#define CUPSTORE_JOB_MAX 63
/** Is s a job id: 1 to CUPSTORE_JOB_MAX bytes of A-Z a-z 0-9 and ._:@+-
 *  (safe in a file name, a shell word and a Prometheus label)? */
bool cupstore_job_valid(const char *s);
/** Prefix of the structured configuration keys ("config.buffer_size"). */
#define CUPSTORE_META_CONFIG "config."
/** @param[out] value  malloc'ed copy; caller frees. CUPSTORE_ENOTFOUND. */
int cupstore_meta_get(cupstore_txn *txn, const char *key, char **value);

/** Called per metadata key; return non-zero to stop the scan with it.
 *  key and value are NUL-terminated and valid during the call only. */
typedef int (*cupstore_meta_fn)(const char *key, const char *value, void *arg);
/** Every metadata key that starts with prefix, in key order (the store's
 *  own '.' rows never).
 *  @param[in] prefix  non-empty, not starting with '.'
 *  @return 0, fn's non-zero return, CUPSTORE_EINVAL, ENOMEM, errno. */
int cupstore_meta_scan(cupstore_txn *txn, const char *prefix, cupstore_meta_fn fn, void *arg);

/* ---- Per-second health rows ----------------------------------------- */
/* Encoded as (field-id, value) pairs: readers skip unknown fields, and
 * fields missing from old rows read as zero, so fields can be added. */
typedef struct cupstore_lat {
    uint32_t count;
    uint32_t p50_ns, p99_ns, max_ns;
} cupstore_lat;

/* Overhead types counted per second (cupstore_health.overhead_by_type,
 * named by cupstore_overhead_name); fixed by the health row's field 21. */
#define CUPSTORE_OVERHEAD_MAX 8

/* Kinds the launch ledger counts in a health row: kernel, memcpy, memset,
 * graph (the agent's agent_ledger_kind order; graph appended later: an
 * older row reads 0 for it, an older reader skips it). */
#define CUPSTORE_LEDGER_KINDS 4

typedef struct cupstore_health {
    uint64_t second;            /* unix seconds (UTC): the key            */
    uint64_t heartbeat_ns;      /* CLOCK_REALTIME ns when written          */
    uint32_t epoch;             /* current epoch id                        */
    uint32_t kinds_enabled;     /* mask of (1u << cupstore_kind)           */
    uint64_t ctl_gen_applied;   /* last control generation applied         */
    uint64_t ctl_gen_seen;      /* last control generation read            */
    /* buffers (counts within this second) */
    uint64_t buf_requested, buf_provided, buf_declined;
    uint64_t buf_completed, buf_consumed, buf_foreign;
    uint64_t bytes_delivered;
    uint32_t buf_outstanding;   /* at the end of the second                */
    uint32_t pool_limit, pool_high_water;
    /* records (counts within this second) */
    uint64_t records_parsed, records_stored;
    uint64_t records_by_kind[CUPSTORE_KIND_MAX];
    uint64_t records_by_device[CUPSTORE_DEVICE_MAX];
    uint64_t loss[CUPSTORE_LOSS_MAX];   /* per class, this second          */
    uint64_t overhead_by_type[CUPSTORE_OVERHEAD_MAX]; /* CUPTI OVERHEAD records
                                           by type: cupstore_overhead_name */
    /* queue */
    uint32_t queue_depth, queue_high_water, queue_capacity;
    /* latencies */
    cupstore_lat req_lat, cmp_lat;      /* request / completion callback   */
    cupstore_lat commit_lat;            /* store commit                    */
    uint32_t batch_records_p50;         /* consumer batch size             */
    uint32_t store_refused;             /* write txns refused this second  */
    uint32_t flags;                     /* CUPSTORE_HF_*                    */
    /* the launch ledger (--ledger), by kind: kernel, memcpy, memset, graph.
     * expected and arrived count since the session's start; pending is
     * now: records of launches older than the grace period (2 s) not
     * arrived yet.  All zero without the ledger. */
    uint64_t ledger_expected[CUPSTORE_LEDGER_KINDS];
    uint64_t ledger_arrived[CUPSTORE_LEDGER_KINDS];
    uint64_t ledger_pending[CUPSTORE_LEDGER_KINDS];
} cupstore_health;

enum {
    CUPSTORE_HF_DORMANT = 1u << 0,      /* loaded, no kinds on             */
    CUPSTORE_HF_DISABLED = 1u << 1,     /* agent stepped aside             */
    CUPSTORE_HF_STOPPING = 1u << 2,     /* stop protocol running           */
    CUPSTORE_HF_COUNT_ONLY = 1u << 3,   /* CUPTOP_SINK=null                */
    CUPSTORE_HF_ATTACHED = 1u << 4,     /* CUPTI attached (subscribed,
                                           callbacks registered)           */
    CUPSTORE_HF_SCOPED = 1u << 5,       /* a device scope (--devices) or a
                                           capture range is in force       */
    CUPSTORE_HF_LEDGER = 1u << 6,       /* the launch ledger registers
                                           launches now (--ledger, or a
                                           `ledger on` control request)    */
    CUPSTORE_HF_LEDGER_PARTIAL = 1u << 7, /* the ledger was switched on or
                                           off during the session: it
                                           covers part of it only          */
};

/** Overhead type names by index in overhead_by_type ("driver_compiler",
 *  "cupti_buffer_flush", "cupti_instrumentation", "cupti_resource",
 *  "command_buffer_full", "activity_buffer_request", "other", ...). */
const char *cupstore_overhead_name(unsigned idx);

int cupstore_health_put(cupstore_txn *txn, const cupstore_health *h);
/** Read the row for one second; CUPSTORE_ENOTFOUND if none. */
int cupstore_health_get(cupstore_txn *txn, uint64_t second, cupstore_health *h);
/** Last row written (greatest second); CUPSTORE_ENOTFOUND if none. */
int cupstore_health_last(cupstore_txn *txn, cupstore_health *h);
/** Call fn for every row with from <= second <= to (0/UINT64_MAX for all),
 *  in order; fn returns non-zero to stop (that value is returned). */
typedef int (*cupstore_health_fn)(const cupstore_health *h, void *arg);
int cupstore_health_scan(cupstore_txn *txn, uint64_t from, uint64_t to,
                         cupstore_health_fn fn, void *arg);

/* ---- Losses by (second, class, device, kind) ------------------------ */
typedef struct cupstore_loss_row {
    uint64_t second;
    uint8_t loss;       /* cupstore_loss                                  */
    uint8_t kind;       /* cupstore_kind, or CUPSTORE_KIND_ALL            */
    uint16_t device;    /* device index, or CUPSTORE_DEVICE_NONE          */
    bool estimate;      /* true: a per-kind estimate, not CUPTI's count   */
    uint64_t count;
} cupstore_loss_row;

/** Add count to the row's key (rows with the same key are summed). */
int cupstore_loss_add(cupstore_txn *txn, const cupstore_loss_row *row);
typedef int (*cupstore_loss_fn)(const cupstore_loss_row *row, void *arg);
int cupstore_loss_scan(cupstore_txn *txn, uint64_t from, uint64_t to,
                       cupstore_loss_fn fn, void *arg);

/* ---- Records -------------------------------------------------------- */
/* The normalised record form, readable without CUDA headers.  Fields not
 * meaningful for a kind are zero. */
typedef struct cupstore_record {
    uint8_t kind;           /* cupstore_kind                              */
    uint8_t flags;          /* CUPSTORE_RF_*                              */
    uint16_t device;        /* device index or CUPSTORE_DEVICE_NONE       */
    uint32_t context;       /* CUPTI context id                           */
    uint32_t stream;        /* CUPTI stream id                            */
    uint32_t correlation;   /* links API record <-> GPU record            */
    uint64_t start_ns, end_ns;  /* CUPTI timestamps (CLOCK_REALTIME ns)   */
    uint32_t name_id;       /* interned name (kernel, API, marker); 0=none */
    uint32_t pid, tid;      /* API records: process and thread            */
    uint32_t cbid;          /* API records: callback id                   */
    uint32_t aux;           /* memcpy: copy kind, source and destination
                               memory kinds (CUPSTORE_COPY_*); sync: type;
                               overhead: type; marker: flags; kernel:
                               registers per thread; memset: value        */
    uint64_t bytes;         /* memcpy/memset bytes; kernel: shared mem    */
    uint32_t grid[3], block[3]; /* kernel launch geometry                 */
} cupstore_record;

/* A memcpy record's aux: CUPTI's copy kind in bits 0-7, the source's and
 * the destination's memory kinds (CUpti_ActivityMemoryKind) in bits 8-15
 * and 16-23.  Stores written before the memory kinds were kept have 0
 * (unknown) there. */
#define CUPSTORE_COPY_AUX(copy, src, dst) \
    ((uint32_t)((copy) & 0xffu) | (uint32_t)((src) & 0xffu) << 8 | (uint32_t)((dst) & 0xffu) << 16)
#define CUPSTORE_COPY_KIND(aux) ((aux) & 0xffu)
#define CUPSTORE_COPY_SRC(aux) (((aux) >> 8) & 0xffu)
#define CUPSTORE_COPY_DST(aux) (((aux) >> 16) & 0xffu)

enum {
    CUPSTORE_RF_ZERO_TS = 1u << 0,   /* CUPTI gave start or end == 0       */
    CUPSTORE_RF_TRUNCATED = 1u << 1, /* forced flush: still running        */
};
/* A memset record's flags, bits 4-7: the memory kind it set
 * (CUpti_ActivityMemoryKind, 0 unknown: also in older stores). */
#define CUPSTORE_RF_MEMKIND_SHIFT 4
#define CUPSTORE_RF_MEMKIND(flags) (((unsigned)(flags) >> CUPSTORE_RF_MEMKIND_SHIFT) & 0xfu)

/** Encode n records into one chunk and put it (key: smallest non-zero
 *  start_ns in the batch, then a sequence number).  Records need not be
 *  sorted.  The batch is one LMDB value: keep n <= 65536. */
int cupstore_chunk_put(cupstore_txn *txn, const cupstore_record *recs, size_t n);

/** Call fn for each record whose start_ns lies in [from_ns, to_ns]
 *  (records with zero timestamps are included when their chunk's key is in
 *  the window).  Records come chunk by chunk in key order; within a chunk
 *  in stored order.  fn returns non-zero to stop.  Memory stays bounded by
 *  one chunk. */
typedef int (*cupstore_record_fn)(const cupstore_record *r, void *arg);
int cupstore_record_scan(cupstore_txn *txn, uint64_t from_ns, uint64_t to_ns,
                         cupstore_record_fn fn, void *arg);
/** A window scan's memory from one cupstore_record_scan_memo call to the
 *  next: the last record time of each chunk it read whole.  A chunk's
 *  records are not sorted, so a scan starts max_span (the longest chunk of
 *  the session) before its window and decodes every chunk from there; a
 *  reader that scans second by second (an export: one short read
 *  transaction per second) decoded each chunk once per second of max_span.
 *  With the memo, a chunk already read whose records all lie before the
 *  window is skipped undecoded.  The records given to fn are the same as
 *  cupstore_record_scan's.  Made for ascending windows of one session (any
 *  order stays correct, only slower); chunk keys are never reused, so the
 *  memo stays right across transactions while a writer appends.  Memory:
 *  one 24-byte entry per chunk within max_span of the latest window.
 *  Not thread-safe: one memo per reader.
 *  @param[out] out  the new memo (caller frees with cupstore_scan_memo_free)
 *  @return 0 or ENOMEM */
typedef struct cupstore_scan_memo cupstore_scan_memo;
int cupstore_scan_memo_new(cupstore_scan_memo **out);
void cupstore_scan_memo_free(cupstore_scan_memo *m);
/** cupstore_record_scan with a memo (NULL: none), which it reads and
 *  adds to (a memo that cannot grow stops adding: the same records, only
 *  slower).  @return as cupstore_record_scan. */
int cupstore_record_scan_memo(cupstore_txn *txn, uint64_t from_ns, uint64_t to_ns,
                              cupstore_scan_memo *m, cupstore_record_fn fn, void *arg);
/** Totals without decoding: chunks, records, encoded bytes. */
int cupstore_record_stats(cupstore_txn *txn, uint64_t *chunks, uint64_t *records,
                          uint64_t *bytes);

/** Call fn for each record committed after the first skip records, in
 *  commit order (the chunks' sequence numbers), the first limit of them in
 *  commit order (UINT64_MAX: all): the records a crashed session stored
 *  after its last health row, whose counts cover skip, or those a final
 *  status counts beyond the rows.  Records come chunk by chunk in key
 *  order (both cuts are by commit order all the same).  Cost: one walk reading the
 *  first bytes of every chunk (its record count), then a decode of the
 *  chunks after the cut only.  fn returns non-zero to stop (that value is
 *  returned); CUPSTORE_ECORRUPT for a malformed chunk. */
int cupstore_record_scan_after(cupstore_txn *txn, uint64_t skip, uint64_t limit,
                               cupstore_record_fn fn, void *arg);

/* Pure encoder/decoder (also used by the fuzzer and the benchmark). */
/** Encode into a malloc'ed buffer; caller frees *out. */
int cupstore_chunk_encode(const cupstore_record *recs, size_t n, void **out,
                          size_t *out_len);
/** Decode a chunk; fn per record. CUPSTORE_ECORRUPT on any malformation. */
int cupstore_chunk_decode(const void *buf, size_t len, cupstore_record_fn fn,
                          void *arg);

/* ---- Interned names -------------------------------------------------- */
/** Store name for id (ids are assigned by the writer, starting at 1). */
int cupstore_name_put(cupstore_txn *txn, uint32_t id, const char *name, size_t len);
/** @param[out] name  points into the txn's memory: valid until it ends;
 *  not NUL-terminated (use *len). Bytes are as CUPTI gave them: may be
 *  invalid UTF-8 or contain control characters. */
int cupstore_name_get(cupstore_txn *txn, uint32_t id, const char **name, size_t *len);

/* ---- API record policy ------------------------------------------------- */
/** Which runtime and driver API calls are recorded (cuptop run --api). */
enum {
    CUPSTORE_API_UNSET = 0,  /* older store, or a request that keeps it    */
    CUPSTORE_API_ALL,        /* every call                                 */
    CUPSTORE_API_GPU,        /* the calls that explain GPU work (default)  */
    CUPSTORE_API_NONE,       /* none (but --api-include)                   */
};
/** "all", "gpu", "none" ("-" for CUPSTORE_API_UNSET or out of range). */
const char *cupstore_api_mode_name(uint32_t mode);
/** The kinds an API record policy applies to (runtime, driver). */
#define CUPSTORE_KINDS_API ((1u << CUPSTORE_KIND_RUNTIME) | (1u << CUPSTORE_KIND_DRIVER))
/** Longest include or exclude glob list, NUL included. */
#define CUPSTORE_API_GLOBS_MAX 96
/** Longest policy text (mode, " include=", " exclude=", two lists). */
#define CUPSTORE_API_POLICY_MAX 224

/* ---- Epochs ------------------------------------------------------------ */
typedef struct cupstore_epoch {
    uint32_t id;            /* 1, 2, ...                                   */
    uint32_t kinds;         /* mask enabled during the epoch               */
    uint64_t start_ns;      /* CLOCK_REALTIME                              */
    uint64_t end_ns;        /* 0 while open                                */
    uint64_t ctl_gen;       /* control generation that started it (0: start) */
    /* scope (fields absent in older stores read as 0) */
    uint32_t flags;         /* CUPSTORE_EPOCH_*                            */
    uint64_t attach_ns;     /* CUPTI attached at (CLOCK_REALTIME); 0: not
                               attached at this epoch's start              */
    uint64_t attach_cost_ns;/* how long the attach took (monotonic)        */
    uint32_t devices;       /* devices in scope (bit mask); 0: all         */
    uint32_t pre_contexts;  /* contexts that existed before the attach
                               (learned from CUPTI's CONTEXT records)      */
    /* API record policy (cuptop run --api; 0 / "" in older stores) */
    uint32_t api_mode;      /* CUPSTORE_API_*                              */
    uint32_t api_muted[2];  /* call ids muted: [0] runtime, [1] driver     */
    char api_policy[CUPSTORE_API_POLICY_MAX]; /* "gpu", "gpu include=A
                               exclude=B*": mode and globs, as applied     */
    /* periodic windows (--capture-range every:P/W; 0 in older stores) */
    uint64_t sched_ns;      /* the wall-clock boundary this epoch was due to
                               start at (a window's open or close); start_ns
                               - sched_ns is how late it came              */
    uint32_t period_ms;     /* the schedule it belongs to: every period_ms */
    uint32_t window_ms;     /* ... for window_ms (0: not a window epoch)   */
} cupstore_epoch;
/** Epoch flags. */
enum {
    /** CUPTI was attached during the epoch (kinds on). */
    CUPSTORE_EPOCH_ATTACHED = 1u << 0,
    /** The attach came after the process had started (a control request
     *  or a capture range): what happened before it was never collected. */
    CUPSTORE_EPOCH_LATE_ATTACH = 1u << 1,
    /** Contexts existed before the attach: CUPTI gives no handle for
     *  them, so their drops are reported under device "none", not per
     *  device (pre_contexts says how many). */
    CUPSTORE_EPOCH_DROPS_UNATTRIBUTED = 1u << 2,
    /** Out of scope: dormant, or outside a capture range.  Its time is
     *  neither loss nor evidence of a complete trace. */
    CUPSTORE_EPOCH_OUT_OF_SCOPE = 1u << 3,
    /** Another CUPTI client held the subscriber slot at the attach:
     *  activity records only, no resource callbacks. */
    CUPSTORE_EPOCH_NO_CALLBACKS = 1u << 4,
    /** The session collects by capture range (cudaProfilerStart/Stop):
     *  an attached epoch is one range, an out-of-scope one the time
     *  between ranges. */
    CUPSTORE_EPOCH_CAPTURE = 1u << 5,
    /** The API policy could not be applied per call (the CUPTI lacks
     *  cuptiActivityEnableRuntimeApi/DriverApi): every call recorded. */
    CUPSTORE_EPOCH_API_UNFILTERED = 1u << 6,
};
/** Epoch flags as a comma list ("attached,late_attach"; "-" for none). */
void cupstore_epoch_flags_format(uint32_t flags, char *buf, size_t len);
int cupstore_epoch_put(cupstore_txn *txn, const cupstore_epoch *e);  /* upsert */
typedef int (*cupstore_epoch_fn)(const cupstore_epoch *e, void *arg);
int cupstore_epoch_scan(cupstore_txn *txn, cupstore_epoch_fn fn, void *arg);

/* ---- Runtime control (DESIGN invariant 7) ---------------------------- */
typedef struct cupstore_control {
    uint64_t gen;           /* generation: 1, 2, ... (assigned by put)     */
    uint32_t kinds;         /* requested mask (every request carries one)  */
    uint32_t pool;          /* requested buffer-pool limit; 0: unchanged   */
    uint64_t requested_ns;
    uint64_t applied_ns;    /* 0 while pending                             */
    int32_t result;         /* 0 ok; else a CUPTI/agent error code         */
    uint32_t pool_applied;  /* pool limit in effect after applying it; 0
                               from an agent without pool control          */
    /* API record policy: api_mode 0 keeps the mode; api_set says which
     * glob lists the request replaces (CUPSTORE_CTL_API_*) */
    uint32_t api_mode;
    uint32_t api_set;
    char api_include[CUPSTORE_API_GLOBS_MAX];
    char api_exclude[CUPSTORE_API_GLOBS_MAX];
    /* periodic windows: every_set 0 keeps the schedule, CUPSTORE_CTL_EVERY_ON
     * sets every every_period_ms for every_window_ms, CUPSTORE_CTL_EVERY_OFF
     * ends it (collect whenever kinds are on) */
    uint32_t every_set;
    uint32_t every_period_ms, every_window_ms;
    /* the launch ledger: 0 unchanged, CUPSTORE_CTL_LEDGER_ON registers
     * launches from now, CUPSTORE_CTL_LEDGER_OFF stops registering */
    uint32_t ledger_set;
} cupstore_control;
enum { CUPSTORE_CTL_API_INCLUDE = 1u << 0, CUPSTORE_CTL_API_EXCLUDE = 1u << 1 };
enum { CUPSTORE_CTL_EVERY_ON = 1, CUPSTORE_CTL_EVERY_OFF = 2 };
enum { CUPSTORE_CTL_LEDGER_ON = 1, CUPSTORE_CTL_LEDGER_OFF = 2 };
/** Front end: write the request *req (kinds, pool, API policy fields;
 *  gen and the times are assigned here).
 *  @param[out] gen  the generation assigned (may be NULL). */
int cupstore_control_put(cupstore_txn *txn, const cupstore_control *req, uint64_t *gen);
/** Front end: request kinds; assigns the next generation.
 *  @param[out] gen  the generation assigned (may be NULL). */
int cupstore_control_request(cupstore_txn *txn, uint32_t kinds, uint64_t *gen);
/** Largest buffer-pool limit a request may carry (the agent's cap too). */
#define CUPSTORE_CONTROL_POOL_MAX 4096u
/** Front end: request kinds and a buffer-pool limit (pool 0: unchanged;
 *  1..CUPSTORE_CONTROL_POOL_MAX). */
int cupstore_control_request_pool(cupstore_txn *txn, uint32_t kinds, uint32_t pool,
                                  uint64_t *gen);
/** Latest request (greatest gen); CUPSTORE_ENOTFOUND when none. */
int cupstore_control_latest(cupstore_txn *txn, cupstore_control *c);
/** Agent: acknowledge generation gen; pool_applied is the pool limit now
 *  in effect (0 when unknown). */
int cupstore_control_ack(cupstore_txn *txn, uint64_t gen, uint64_t applied_ns,
                         int32_t result, uint32_t pool_applied);
typedef int (*cupstore_control_fn)(const cupstore_control *c, void *arg);
int cupstore_control_scan(cupstore_txn *txn, cupstore_control_fn fn, void *arg);

/* ---- Marks (named windows) -------------------------------------------- */
typedef struct cupstore_mark {
    char name[64];
    uint64_t from_ns, to_ns;
    uint64_t created_ns;
} cupstore_mark;
int cupstore_mark_put(cupstore_txn *txn, const cupstore_mark *m);  /* upsert */
int cupstore_mark_get(cupstore_txn *txn, const char *name, cupstore_mark *m);
typedef int (*cupstore_mark_fn)(const cupstore_mark *m, void *arg);
int cupstore_mark_scan(cupstore_txn *txn, cupstore_mark_fn fn, void *arg);

/* ---- NVTX ranges (one row per CUPTI marker id) -------------------------- */
/* The agent pairs CUPTI's MARKER records (START / END / INSTANTANEOUS, the
 * same id on both ends) and MARKER_DATA (payload, colour) into one row per
 * marker id.  A row is written as soon as either end is seen and updated
 * (upsert) when the other arrives, so a session killed mid-range holds the
 * range as open: never invented, never dropped.  Names and domains are
 * interned in the names table (0: none / the default domain). */
typedef struct cupstore_range {
    uint32_t id;            /* CUPTI marker id: the key                    */
    uint32_t name_id;       /* interned range name; 0: never seen (END only) */
    uint32_t domain_id;     /* interned domain name; 0: default domain     */
    uint32_t flags;         /* CUPSTORE_RANGE_*                            */
    uint32_t pid, tid;      /* thread that opened (or marked) it           */
    uint32_t end_tid;       /* thread that closed it (0: same / unknown)   */
    uint64_t start_ns;      /* CUPTI timestamp of START (0: not seen)      */
    uint64_t end_ns;        /* CUPTI timestamp of END (0: still open)      */
    uint32_t depth;         /* nesting depth on its thread at START (0: top) */
    uint32_t color;         /* ARGB, when CUPSTORE_RANGE_COLOR             */
    uint32_t category;      /* NVTX category (MARKER_DATA), 0: none        */
    uint32_t payload_kind;  /* CUPTI's CUpti_MetricValueKind + 1; 0: none  */
    uint64_t payload;       /* payload bits (double/u64/i64 as stored)     */
} cupstore_range;

enum {
    CUPSTORE_RANGE_START = 1u << 0,   /* the START record was seen         */
    CUPSTORE_RANGE_END = 1u << 1,     /* the END record was seen           */
    CUPSTORE_RANGE_POINT = 1u << 2,   /* instantaneous mark (start = end)  */
    CUPSTORE_RANGE_COLOR = 1u << 3,   /* color is valid                    */
    CUPSTORE_RANGE_PAYLOAD = 1u << 4, /* payload_kind / payload valid      */
    CUPSTORE_RANGE_AGENT = 1u << 5,   /* CUPTI never saw it open (pushed
                                         before it was attached): made by
                                         the agent from its own view of the
                                         push and the pop; no MARKER records */
};
/* A range is open when START is set and END is not; an unbalanced end
 * (a pop or end without a range CUPTI reported) has END without START. */
#define CUPSTORE_RANGE_IS_OPEN(r) \
    (((r)->flags & (CUPSTORE_RANGE_START | CUPSTORE_RANGE_END | CUPSTORE_RANGE_POINT)) == \
     CUPSTORE_RANGE_START)

/** Write (insert or replace) the row of r->id.
 *  @return 0, CUPSTORE_EINVAL (id 0), EAGAIN/CUPSTORE_EFULL (map full),
 *          EACCES (read txn), errno. */
int cupstore_range_put(cupstore_txn *txn, const cupstore_range *r);
/** Read the row of one marker id.
 *  @return 0, CUPSTORE_ENOTFOUND, CUPSTORE_ECORRUPT. */
int cupstore_range_get(cupstore_txn *txn, uint32_t id, cupstore_range *r);
/** Merge one end of a range into its row: fields set in r (non-zero, and
 *  the flags ORed) replace the stored ones; depth and tid of an existing
 *  START are kept.  What the agent calls per marker record.
 *  @param[out] merged  the row as written (may be NULL). */
int cupstore_range_merge(cupstore_txn *txn, const cupstore_range *r, cupstore_range *merged);
/** Call fn for every row, in marker-id order; fn returns non-zero to stop
 *  (that value is returned).  r is valid during the call only.
 *  @return 0, fn's value, CUPSTORE_ECORRUPT (a damaged row). */
typedef int (*cupstore_range_fn)(const cupstore_range *r, void *arg);
int cupstore_range_scan(cupstore_txn *txn, cupstore_range_fn fn, void *arg);
/** Number of rows (no decoding). */
int cupstore_range_count(cupstore_txn *txn, uint64_t *n);

/* ---- Launches whose records never arrived (the launch ledger) -------- */
/* One row per launch the ledger found records missing for at the end of
 * the session (cuptop run --ledger; at most CUPSTORE_LOST_MAX rows, the
 * rest counted in the `ledger` metadata): where the hole is in the trace.
 * Key: BE u64 launch_ns, BE u32 corr; value TLV (doc/store-format.md). */
#define CUPSTORE_LOST_MAX 65536
typedef struct cupstore_lost {
    uint64_t launch_ns;     /* CPU time of the call (CLOCK_REALTIME)       */
    uint32_t corr;          /* its correlation id                          */
    uint32_t device;        /* device index, CUPSTORE_DEVICE_NONE unknown  */
    uint32_t stream;        /* CUPTI stream id                             */
    uint32_t tid;           /* launching thread                            */
    uint32_t missing[CUPSTORE_LEDGER_KINDS]; /* records missing: kernel, memcpy,
                               memset, graph (an older row: graph 0)   */
    uint32_t name_id;       /* the launch's kernel name in the names table
                               (mangled, as kernel records name it); 0:
                               unknown, not a kernel, or an older row     */
} cupstore_lost;
int cupstore_lost_put(cupstore_txn *txn, const cupstore_lost *l);
typedef int (*cupstore_lost_fn)(const cupstore_lost *l, void *arg);
/** Rows with from_ns <= launch_ns <= to_ns, in launch order.  Nonzero
 *  from fn stops the scan and is returned. */
int cupstore_lost_scan(cupstore_txn *txn, uint64_t from_ns, uint64_t to_ns, cupstore_lost_fn fn,
                       void *arg);

/* ---- Warnings / agent log ---------------------------------------------- */
typedef struct cupstore_note {
    uint64_t seq;           /* assigned by put                             */
    uint64_t time_ns;
    uint32_t level;         /* 0 info, 1 warning, 2 error                  */
    char text[240];
} cupstore_note;
int cupstore_note_put(cupstore_txn *txn, cupstore_note *n);
typedef int (*cupstore_note_fn)(const cupstore_note *n, void *arg);
int cupstore_note_scan(cupstore_txn *txn, cupstore_note_fn fn, void *arg);

/* ---- Stop protocol and final status ------------------------------------ */
typedef enum cupstore_step_id {
    CUPSTORE_STEP_DISABLE = 0,   /* activity kinds disabled                 */
    CUPSTORE_STEP_FLUSH,         /* cuptiActivityFlushAll(FORCED)           */
    CUPSTORE_STEP_DRAIN,         /* queue drained by the consumer           */
    CUPSTORE_STEP_COMMIT,        /* last batch committed                    */
    CUPSTORE_STEP_CLOSE,         /* final status written and synced         */
    CUPSTORE_STEP_MAX
} cupstore_step_id;
const char *cupstore_step_name(unsigned step);

typedef struct cupstore_step {
    uint32_t step;              /* cupstore_step_id                         */
    uint64_t start_mono_ns, end_mono_ns;   /* CLOCK_MONOTONIC               */
    int32_t rc;                 /* 0 ok; CUPTI result or errno              */
    uint32_t timed_out;         /* watchdog fired                           */
    uint64_t queue_remaining;   /* buffers left in the queue after the step */
} cupstore_step;
int cupstore_step_put(cupstore_txn *txn, const cupstore_step *s);
typedef int (*cupstore_step_fn)(const cupstore_step *s, void *arg);
int cupstore_step_scan(cupstore_txn *txn, cupstore_step_fn fn, void *arg);

typedef enum cupstore_exit {
    CUPSTORE_EXIT_UNKNOWN = 0,
    CUPSTORE_EXIT_RETURN,        /* return from main / exit()  (atexit)     */
    CUPSTORE_EXIT_SIGNAL,        /* fatal signal (signo in exit_detail)     */
    CUPSTORE_EXIT_CTX_DESTROY,   /* last context destroyed / device reset   */
    CUPSTORE_EXIT_ABORT,         /* abort()                                 */
    CUPSTORE_EXIT_DETACH,        /* agent disabled itself (reason in notes) */
} cupstore_exit;
const char *cupstore_exit_name(unsigned e);

typedef struct cupstore_final {
    uint64_t end_ns;             /* CLOCK_REALTIME when written             */
    uint32_t exit_path;          /* cupstore_exit                           */
    int32_t exit_detail;         /* signal number, exit status, ...         */
    uint32_t protocol_complete;  /* every stop step ran and returned ok     */
    uint32_t flush_ok;           /* final forced flush returned CUPTI_SUCCESS */
    uint64_t tail_lost;          /* records known lost at stop              */
    uint64_t buffers_completed;  /* session totals, for the verdict         */
    uint64_t buffers_consumed;
    uint64_t records_stored;
    /* Buffers handed to CUPTI that never came back (invariant 12).  Absent
     * (0) in sessions of older agents. */
    uint64_t buffers_outstanding;  /* handed out, not returned at the end  */
    uint64_t tail_bound;         /* records at least lost beyond tail_lost:
                                    held by CUPTI when the flush gave up    */
    uint64_t conflict_bound;     /* records at least lost in buffers that
                                    never came back although the flush
                                    returned (another client took them)    */
    uint64_t store_refused;      /* write transactions refused, any errno  */
    /* The agent's session totals per loss class (exact counts): a reader
     * takes the larger of these and the loss rows' sum, so a loss whose
     * rows the store refused is still counted.  All 0 from older agents. */
    uint64_t loss_total[CUPSTORE_LOSS_MAX];
    /* The same losses by kind and by device (exact counts; all 0 from
     * older agents), and CUPTI's drops split over kinds by the record mix
     * (the estimate the health rows carry): a reader credits what the
     * rows lack to its kind and device, not to "none" (truth matrix 29.12:
     * a full map that refused the last health row).  loss_device's last
     * slot is CUPSTORE_DEVICE_NONE. */
    uint64_t loss_kind[CUPSTORE_LOSS_MAX][CUPSTORE_KIND_MAX];
    uint64_t dropped_kind_est[CUPSTORE_KIND_MAX];
    uint64_t loss_device[CUPSTORE_LOSS_MAX][CUPSTORE_DEVICE_MAX + 1];
    uint32_t aside;              /* read from the aside file: the store
                                    refused the final status (set by
                                    cupstore_final_aside_get only)         */
} cupstore_final;
int cupstore_final_put(cupstore_txn *txn, const cupstore_final *f);
/** The final status; when the store has none, the one the agent wrote
 *  aside (below: f->aside is then 1).  CUPSTORE_ENOTFOUND while the
 *  session has not ended (or ended without either). */
int cupstore_final_get(cupstore_txn *txn, cupstore_final *f);

/* The final status aside (invariant 12, doc/store-format.md): a file of
 * CUPSTORE_ASIDE_SIZE bytes, `final.aside` in the session's directory,
 * created and allocated on the disk when the session starts, and written
 * through the descriptor kept open from then on.  When the store refuses
 * the final status (EPERM on an immutable data.mdb, EIO, a tmpfs too small
 * for the map) the agent writes it there: the write needs no new block, no
 * open and no LMDB.  A reader that finds no final status in the store
 * reads the aside: a clean exit is never judged as a crash. */
#define CUPSTORE_ASIDE_SIZE 4096
/** Create and allocate the aside file of the writer's session.
 *  @param[out] fd  a descriptor >= 3, close-on-exec (caller closes).
 *  @return 0 or an errno (the session then has no aside). */
int cupstore_final_aside_open(cupstore_env *env, int *fd);
/** Write f into the aside file fd (one pwrite of the whole block, then
 *  fdatasync).  Async-unsafe but lock-free.  @return 0 or an errno. */
int cupstore_final_aside_put(int fd, const cupstore_final *f);
/** Read the aside final status of env's session.  Sets f->aside.
 *  @return 0, CUPSTORE_ENOTFOUND (no aside, or never written), or
 *          CUPSTORE_ECORRUPT. */
int cupstore_final_aside_get(cupstore_env *env, cupstore_final *f);

#ifdef __cplusplus
}
#endif
#endif /* CUPSTORE_H */
