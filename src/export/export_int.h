/*
 * export_int.h - internals of the export library (src/export): the
 * interned-name cache, the export context, the window scan and the writers.
 * The buffered output and export_run() are public (export.h).
 */
#ifndef CUPTOP_EXPORT_INT_H
#define CUPTOP_EXPORT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cupstore.h"
#include "export.h"
#include "model.h"

/* ---- Interned names ---------------------------------------------------------
 * id -> JSON-escaped name (without quotes), copied out of the store so it
 * survives the read transaction.  Kernel names are demangled once per id
 * (export_demangle) unless raw is set; the raw name is kept beside.
 * Bounded by the session's names table. */
typedef struct name_cache {
    struct name_ent *ents;
    size_t cap, n;
    bool raw;                   /* --mangled: show names as CUPTI gave them */
    uint64_t demangled;         /* names demangled so far                   */
} name_cache;

void name_cache_free(name_cache *c);
/** JSON-escaped name to show for id (looked up in txn when not cached):
 *  demangled when it is a C++ name.  Returns NULL for id 0 or when the
 *  store has no such name. */
const char *name_cache_get(name_cache *c, cupstore_txn *txn, uint32_t id, size_t *len);
/** The same, and *mangled / *mlen: the raw name, JSON-escaped, when the
 *  name shown differs from it (else *mangled = NULL). */
const char *name_cache_get_full(name_cache *c, cupstore_txn *txn, uint32_t id, size_t *len,
                                const char **mangled, size_t *mlen);

/* ---- Export context ----------------------------------------------------------- */
typedef struct export_ctx {
    const export_opts *o;
    cupstore_env *env;
    bool env_lent;                  /* env is o->env: the caller closes it  */
    char *store_dir;
    uint64_t from_ns, to_ns;        /* window, inclusive                    */
    uint64_t base_ns;               /* chrome ts origin: from rounded down  */
    model_summary sum;              /* verdict for the window               */
    uint64_t total_hint;            /* records expected (for progress)      */
    uint64_t done;                  /* records written so far               */
    export_progress_fn progress;
    void *progress_arg;
    bool cancelled;
    bool faulted;               /* a read faulted: the store is damaged   */
    name_cache names;
    cupstore_txn *txn;              /* the slice's read txn during a scan   */
    uint64_t slice_end;             /* the last ns of the slice being read:
                                       every chunk keyed at or before it
                                       was read by its end_slice call      */
    struct export_job *job;         /* --job: the processes (else NULL)     */
    uint64_t group;                 /* --job: this process' group pid       */
} export_ctx;

/* ---- The NVTX range around a graph launch (export_gnvtx.c) ----------------
 * For the graph slices' names, "graph 7 (NVTX: forward)": the launch's API
 * record (same correlation id) gives the thread and the call's start, the
 * range table the innermost range open there.  Every function takes a NULL
 * export_gnvtx (a session without ranges) and then does nothing. */
typedef struct export_gnvtx export_gnvtx;

/* A graph launch's range: its name as stored (raw bytes) and JSON-escaped
 * (without quotes), and its index into model_ranges.names; name NULL: none. */
typedef struct export_gnvtx_hit {
    const char *name, *json;
    size_t len, json_len;
    uint32_t idx;
} export_gnvtx_hit;

/** Set up the lookup for x's session: *out NULL when it has no range table
 *  (nothing to name).  @return 0, ENOMEM or a store code. */
int export_gnvtx_open(export_ctx *x, export_gnvtx **out);
void export_gnvtx_close(export_gnvtx *g);
/** Note an API record (runtime or driver; others are ignored by the
 *  caller): kept when it launches a graph.  Call during the scan (x->txn). */
void export_gnvtx_api(export_gnvtx *g, const cupstore_record *r);
/** The innermost NVTX range open on the launching thread at the start of
 *  graph record r's launch call, in *hit (name NULL when none).  *known:
 *  the launch's API record was seen (false: none yet, or --api none).
 *  Reads the range table at the first call (x->txn).
 *  @return 0, ENOMEM or a store code.
 *  @note hit's strings are valid until export_gnvtx_close. */
int export_gnvtx_find(export_gnvtx *g, const cupstore_record *r, export_gnvtx_hit *hit,
                      bool *known);
/** A small number for the pair (graph id, range name index), 1, 2, ... in
 *  the order first asked (the perfetto writer's name key); 0 when too many
 *  pairs were seen (or ENOMEM): then name the slice without its range. */
uint32_t export_gnvtx_label(export_gnvtx *g, uint32_t graph_id, uint32_t idx);

/* export --job: one export context per process of the job (each with its
 * own env, window summary and names), all on the job's window and base_ns;
 * the chrome writer puts each in one process group ("rank N (pid P)"). */
typedef struct export_job {
    model_job j;                    /* the judgement; j.procs[i] is the
                                       window summary of procs[i]          */
    export_ctx *procs;
    size_t n;
} export_job;

/** Scan the window's records in short read transactions (one per second
 *  of trace time), calling fn; end_slice (may be NULL) after each slice.
 *  Reports progress and honours cancellation. */
typedef int (*export_slice_fn)(export_ctx *x, void *arg);
int export_scan(export_ctx *x, cupstore_record_fn fn, export_slice_fn end_slice, void *arg);

/* ---- Lost records (export_lost.c) -----------------------------------------
 * The launch ledger's `lost` rows of the window, each placed on its stream
 * between its neighbours: after the stream's last record with a smaller
 * correlation id ended (and after its launch), before the first with a
 * larger one started; rows between the same two records share the gap in
 * equal parts.  Bounded by the store's rows (CUPSTORE_LOST_MAX a process). */
typedef struct export_lost_stream {
    uint32_t device, stream;
    size_t first, end;              /* its rows: first..end-1               */
    size_t next;                    /* the first not yet placed             */
    uint64_t prev_end;              /* end of its last record written       */
} export_lost_stream;

typedef struct export_lost {
    cupstore_lost *v;               /* by device, stream, correlation id    */
    size_t n, cap;
    export_lost_stream *s;          /* by device, stream                    */
    size_t ns;
} export_lost;

/** A row placed: on its stream from from_ns to to_ns (equal when only the
 *  earliest time is known: no record after it on the stream). */
typedef int (*export_lost_fn)(const cupstore_lost *l, uint64_t from_ns, uint64_t to_ns, void *arg);
/** Read the window's rows (none: L->n 0, and every call below is free). */
int export_lost_load(export_lost *L, export_ctx *x);
void export_lost_free(export_lost *L);
/** Sort L->v[0..n) (allocated by malloc) and index its streams. */
int export_lost_index(export_lost *L);
/** Before writing a GPU record: fn for each row of its stream that ran
 *  before it, then the record's end is the stream's last. */
int export_lost_before(export_lost *L, uint32_t device, uint32_t stream, uint32_t corr,
                       uint64_t start_ns, uint64_t end_ns, export_lost_fn fn, void *arg);
/** After the last record: the rows no record came after. */
int export_lost_rest(export_lost *L, export_lost_fn fn, void *arg);
/** The name of ledger kind k ("kernel", "memcpy", "memset", "graph"). */
const char *export_lost_kind(unsigned k);
/** The kinds a row misses, "kernel+memcpy", into buf; returns its length. */
size_t export_lost_kinds(const cupstore_lost *l, char *buf, size_t cap);

/* ---- Reorder window (export_sort.c) ----------------------------------------
 * Records in, records out in (start asc, end desc, arrival) order, holding at
 * most EXPORT_SORT_WINDOW records (or EXPORT_SORT_MAX_RUNS runs). */
#define EXPORT_SORT_RUN 8192u              /* records sorted at a time       */
#define EXPORT_SORT_WINDOW (256u * 1024u)  /* records held for reordering    */
#define EXPORT_SORT_MAX_RUNS (EXPORT_SORT_WINDOW / EXPORT_SORT_RUN + 1)

/* A sorted run: records in (start asc, end desc, arrival) order. */
typedef struct export_run_buf {
    cupstore_record *recs;    /* EXPORT_SORT_RUN records                   */
    uint32_t pos, n;
    uint64_t seq;             /* creation order: ties go to the older run  */
} export_run_buf;

/* Sort key of one arrival: packed (start - base, ~duration) when it fits,
 * else compared field by field. */
struct export_skey {
    uint64_t key;
    uint32_t idx;
};

typedef struct export_sort {
    cupstore_record *in;      /* arrivals not yet sorted (EXPORT_SORT_RUN) */
    uint32_t nin;
    struct export_skey *keys, *keys2; /* radix sort buffers                */
    export_run_buf runs[EXPORT_SORT_MAX_RUNS]; /* free ones: recs in spare */
    cupstore_record *spare[EXPORT_SORT_MAX_RUNS];
    uint32_t nspare;
    uint32_t merge[EXPORT_SORT_MAX_RUNS]; /* min-heap of runs by head record */
    uint32_t nmerge;
    uint32_t rival;           /* the root's earlier child, when rival_ok   */
    bool rival_ok;
    size_t held;              /* records in runs                           */
    uint64_t run_seq;
} export_sort;

/** Allocate the window's buffers.  @return 0 or ENOMEM (then call
 *  export_sort_free all the same). */
int export_sort_init(export_sort *s);
void export_sort_free(export_sort *s);
/** Add one record; emits (through emit) the earliest records when the
 *  window is full.  @return 0 or emit's first non-zero return. */
int export_sort_add(export_sort *s, const cupstore_record *r, cupstore_record_fn emit, void *arg);
/** Emit every held record in order (the end of a slice: later slices
 *  start later).  @return 0 or emit's first non-zero return. */
int export_sort_flush(export_sort *s, cupstore_record_fn emit, void *arg);

/** Collect the job o->job (chrome only) into x->job: one context per
 *  process, the window clamped to the job's data.  0, or -1 with *cause. */
int export_job_open(export_ctx *x, const char *dir, char **cause);
/** Release x->job (nothing when NULL). */
void export_job_close(export_ctx *x);
/** The process group's name of process i of a job: "rank N (pid P)",
 *  "launcher (pid P)" or "no rank (pid P)", and the host after the rank
 *  when the job was read from several stores (a group per host and rank). */
void export_job_group_name(const export_job *jb, size_t i, char *buf, size_t len);

/* Writers: 0, or an errno / cupstore code (the caller words the message). */
/* Kineto's category for a kind ("kernel", "gpu_memcpy", "cuda_runtime"...;
 * cuptop's kind name where Kineto has none). */
const char *export_kineto_cat(unsigned kind);
/* Kineto's name of a memcpy ("Memcpy HtoD (Pinned -> Device)") or memset
 * ("Memset (Device)") into buf; returns its length, 0 for other kinds. */
size_t export_gpu_name(const cupstore_record *r, char *buf, size_t len);
#define EXPORT_GPU_NAME_MAX 64

int export_chrome(export_ctx *x, xout *o);
/** The chrome export's metadata, "otherData":{...} (the session's or, with
 *  x->job, the job's): the Perfetto writer's metadata too. */
int export_chrome_metadata(export_ctx *x, xout *o);
/** Perfetto's protobuf trace format (export_perfetto.c). */
int export_perfetto(export_ctx *x, xout *o);
/** ,"range":{...} of an export --range (nothing otherwise): the metadata
 *  of chrome and jsonl files. */
void export_range_json(const export_ctx *x, xout *o);
int export_jsonl(export_ctx *x, xout *o);
int export_csv(export_ctx *x, xout *o);
/** Write a standalone store into dir (a new, empty directory). */
int export_store(export_ctx *x, const char *dir);

#endif /* CUPTOP_EXPORT_INT_H */
