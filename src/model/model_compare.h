/*
 * model_compare.h - two windows of traced work set side by side (`cuptop
 * compare`), and the verdict of the seed's two control runs (`cuptop
 * baseline`).  The judgements live here, the front ends print them.
 *
 * What a comparison computes (doc/design.md, "Comparing runs"):
 * - comparability: the workload (label, else command), the kinds collected
 *   in each window, every `config.*` key the agent stored (so a setting
 *   added later is compared without a change here), the CUPTI sink, the
 *   version items and host facts of the provenance, and the devices used;
 *   each difference listed, marked fatal or a note;
 * - losses per class on each side and whether a side is INCOMPLETE (then
 *   unusable for timing attribution);
 * - key durations per kernel name (through the caller's name function, so
 *   names read as the export shows them), per memcpy kind and per graph id
 *   (the graph kind's records, named "graph <id>" as the exports do): count,
 *   total, p50, p90, p99, from log-bucketed histograms (64 sub-buckets per
 *   power of two: a percentile is within 1/128 of a duration that was
 *   recorded, MODEL_CMP_REL_ERROR), sorted by the change in total time;
 * - event order per stream over a bounded prefix: the first `order_window`
 *   kernels of each (device, stream) by start time, the length of the
 *   longest common subsequence of their names over the shorter length
 *   (Myers' O((n+m)D) difference, D capped at `edit_cap`: beyond it only an
 *   upper bound is known) and the first index where they differ.
 * Memory is bounded by the histograms (per name), the order prefixes
 * (order_window per stream, at most MODEL_CMP_STREAMS streams) and one
 * record chunk: records are streamed, never held.
 */
#ifndef MODEL_COMPARE_H
#define MODEL_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cupstore.h"

/* ---- Operands ------------------------------------------------------------ */

typedef enum model_op_kind {
    MODEL_OP_SESSION = 0,       /* SESSION: the whole session               */
    MODEL_OP_EPOCH,             /* SESSION@EPOCH: one collection scope      */
    MODEL_OP_MARK,              /* SESSION:MARK: a named window             */
    MODEL_OP_RANGE,             /* SESSION/range:NAME#N or NAME#slowest:
                                   one NVTX range instance, start to end
                                   (open: to the session's last time)       */
} model_op_kind;

typedef struct model_operand {
    model_op_kind kind;
    char session[96];           /* id or unique prefix                      */
    uint32_t epoch;             /* MODEL_OP_EPOCH                           */
    char name[64];              /* mark, or range name                      */
    uint32_t instance;          /* range: 1-based instance (#N; default 1)  */
    bool slowest;               /* range: #slowest (instance 0)             */
} model_operand;

/** Parse an operand ("ID", "ID@3", "ID:warm", "ID/range:step#2").
 *  @param[out] cause  on error, a malloc'ed line for the user.
 *  @return 0 or CUPSTORE_EINVAL. */
int model_operand_parse(const char *s, model_operand *op, char **cause);

/* ---- A comparison ---------------------------------------------------------- */

#define MODEL_CMP_SUB_BITS 6        /* 64 sub-buckets per power of two     */
#define MODEL_CMP_REL_ERROR (1.0 / 128)
#define MODEL_CMP_ORDER_WINDOW 65536u /* default kernels per stream compared */
#define MODEL_CMP_EDIT_CAP 4096u    /* default most insertions+deletions   */
#define MODEL_CMP_STREAMS 256u      /* streams followed per comparison     */

/** A name function: writes the display form of a raw name (n bytes) into
 *  out (cap bytes) and returns its length, or 0 to keep the raw name (the
 *  CLI passes export_demangle). */
typedef size_t (*model_name_fn)(const char *s, size_t n, char *out, size_t cap);

typedef struct model_compare_opts {
    const char *store_dir;      /* NULL: the default store                  */
    const char *side_dir[2];    /* the store of A and of B when they differ
                                   (several stores); NULL: store_dir       */
    model_name_fn name_fn;      /* NULL: names as stored                    */
    uint32_t order_window;      /* 0: MODEL_CMP_ORDER_WINDOW                */
    uint32_t edit_cap;          /* 0: MODEL_CMP_EDIT_CAP                    */
} model_compare_opts;

/* One side (A or B). */
typedef struct model_cmp_side {
    model_operand op;
    char id[96];                /* the session id resolved                  */
    char what[160];             /* "session X", "epoch 2 of X", "mark m of X" */
    uint64_t from_ns, to_ns;    /* the window (CLOCK_REALTIME ns)           */
    uint64_t end_ns;            /* its end as said: to_ns, or where the window
                                   runs to the end (an open range, a whole
                                   session, an open epoch) the session's
                                   last time (summary end_ns); UINT64_MAX
                                   only when the session has none          */
    bool open;                  /* an NVTX range still open: read to the
                                   end of the data                          */
    uint32_t kinds;             /* collected in the window (epochs' union)  */
    bool kinds_mixed;           /* the window spans epochs of other kinds   */
    bool lossy;                 /* INCOMPLETE: unusable for timing          */
    bool running;               /* still running: the figures are partial   */
    char verdict[16];           /* COMPLETE / INCOMPLETE / SKIPPED          */
    uint64_t loss[CUPSTORE_LOSS_MAX];   /* over the window's seconds        */
    uint64_t loss_total;
    char reason[256];           /* the first reason when lossy              */
    uint64_t records, kernels, memcpys; /* records read in the window       */
    uint64_t graphs;            /* graph launch records read in the window  */
    uint64_t no_duration;       /* kernels/memcpys with zero or missing times */
    /* the launch ledger (a session run with --ledger): GPU records missing
     * among the launches made in the window, by kind (kernel, memcpy,
     * memset, graph), from the store's `lost` rows; `ledger_capped`: more
     * launches had records missing than the rows kept (at least) */
    bool ledger, ledger_capped;
    uint64_t ledger_missing[CUPSTORE_LEDGER_KINDS];   /* + graph */
} model_cmp_side;

/* One difference in the comparability check. */
typedef struct model_cmp_diff {
    char what[64];              /* "label", "kinds", "config.buffer_size"   */
    char a[200], b[200];        /* the values ("(none)" when absent)        */
    bool fatal;                 /* false: listed, not against comparability */
} model_cmp_diff;

typedef struct model_cmp_stat {
    uint64_t count, total_ns;
    uint64_t p50_ns, p90_ns, p99_ns, min_ns, max_ns;
} model_cmp_stat;

/* What a group gathers: a kernel name, a memcpy kind, or a graph id (the
 * graph kind's records: one per graph launch). */
typedef enum model_cmp_gkind { MODEL_CMP_KERNEL = 0, MODEL_CMP_MEMCPY, MODEL_CMP_GRAPH } model_cmp_gkind;

/* A kernel name or memcpy kind with its figures on both sides. */
typedef struct model_cmp_group {
    model_cmp_gkind kind;
    char *name;                 /* display name (raw bytes: escape to print) */
    size_t name_len;
    model_cmp_stat s[2];
    uint64_t change_ns;         /* |total B - total A|: the sort key        */
    uint32_t id;                /* private: index before sorting            */
} model_cmp_group;

/* Event order on one (device, stream). */
typedef struct model_cmp_stream {
    uint16_t device;
    uint32_t stream;
    uint64_t kernels[2];        /* kernels on the stream in each window     */
    uint64_t compared[2];       /* the prefix compared (<= order_window)    */
    uint64_t lcs;               /* longest common subsequence (see bound)   */
    bool lcs_bound;             /* more than edit_cap edits: lcs is an upper
                                   bound                                   */
    double agreement;           /* lcs / the shorter compared length        */
    bool diverged;              /* the compared prefixes differ somewhere   */
    uint64_t diverge_index;     /* first index (0-based) where they differ  */
    uint64_t diverge_ns[2];     /* start of that kernel on each side; 0: the
                                   side ended there                        */
    int64_t diverge_group[2];   /* its index in groups (kernel name); -1: none */
} model_cmp_stream;

typedef struct model_compare {
    model_cmp_side side[2];
    model_cmp_diff *diffs;
    size_t ndiffs;
    bool comparable;            /* no fatal difference                      */
    bool config_differs;        /* kinds or config.* differ                 */
    char verdict[1024];         /* "comparable" / "not comparable: ..."     */
    model_cmp_group *groups;    /* sorted by change_ns, largest first       */
    size_t ngroups;
    model_cmp_stream *streams;  /* by (device, stream)                      */
    size_t nstreams;
    uint64_t streams_untracked; /* streams beyond MODEL_CMP_STREAMS         */
    uint32_t order_window, edit_cap;
    int exit_status;            /* 0 comparable and no side lossy; else 1   */
} model_compare;

/** Compare operands a and b (model_operand_parse forms) in one store.
 *  @param[out] out    release with model_compare_free.
 *  @param[out] cause  on error, a malloc'ed line for the user.
 *  @return 0, CUPSTORE_EINVAL (a bad operand, an epoch or mark that does
 *          not exist), or a store error (the session cannot be read). */
int model_compare_run(const model_compare_opts *o, const char *a, const char *b,
                      model_compare *out, char **cause);
void model_compare_free(model_compare *c);

/** "kernel", "memcpy" or "graph". */
const char *model_cmp_gkind_name(model_cmp_gkind k);
/** "HtoD", "DtoH", ... for a CUPTI memcpy kind ("kind N" beyond). */
const char *model_memcpy_kind_name(uint32_t kind, char *buf, size_t len);

/* ---- The seed's control runs (cuptop baseline) ------------------------------ */

enum { MODEL_BL_OFF = 0, MODEL_BL_NARROW, MODEL_BL_FULL, MODEL_BL_CONFIGS };

typedef enum model_bl_conclusion {
    MODEL_BL_USABLE = 0,        /* no loss anywhere: a usable baseline       */
    MODEL_BL_PRESSURE,          /* loss at full only: record pressure        */
    MODEL_BL_SUPPLY,            /* loss narrowed too: buffer supply / store  */
    MODEL_BL_NARROW_ONLY,       /* loss narrowed only: not reproducible      */
    MODEL_BL_UNTRACED,          /* a traced run left no session              */
    MODEL_BL_FAILED,            /* the command failed in some run            */
} model_bl_conclusion;

/* One configuration's runs. */
typedef struct model_bl_config {
    size_t runs;                /* runs made                                 */
    size_t sessions;            /* runs that left a session                  */
    size_t lossy;               /* sessions INCOMPLETE                       */
    size_t failed;              /* runs whose command did not exit 0         */
    uint64_t lost;              /* records lost over the runs (every class)  */
    double wall_median_s, wall_min_s, wall_max_s;
    double ratio;               /* wall median / the off median (0: unknown) */
    double spread;              /* (max - min) / median of this config       */
} model_bl_config;

/** Median, min and max of n wall times into c; ratio against off. */
void model_bl_walls(model_bl_config *c, const double *wall_s, size_t n);

/** The seed's conclusion from the three configurations.
 *  @param[out] text  one or two sentences for people.
 *  @return the conclusion; MODEL_BL_USABLE is the only good one. */
model_bl_conclusion model_bl_conclude(model_bl_config cfg[MODEL_BL_CONFIGS], char *text,
                                      size_t len);
/** "usable_baseline", "record_pressure", ... */
const char *model_bl_name(model_bl_conclusion c);

#endif /* MODEL_COMPARE_H */
