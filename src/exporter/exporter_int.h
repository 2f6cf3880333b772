/*
 * exporter_int.h - inside the exporter: one session's figures as the
 * exposition needs them (exp_sess, filled by exporter_scan.c from the model
 * and the store), the exporter's own counters (exp_self), and the pure
 * writer that turns both into text (exporter_format.c, unit-tested).
 */
#ifndef CUPTOP_EXPORTER_INT_H
#define CUPTOP_EXPORTER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cupstore.h"
#include "model.h"
#include "model_ledger.h"

/* Label value sizes (bytes, before escaping).  The command line is
 * shortened on purpose, with "..." (exp_command_short); every other value
 * fits whole: a job id is at most CUPSTORE_JOB_MAX bytes, a rank a
 * number, and the workload label (at most 255 bytes, the agent's
 * CUPTOP_LABEL) made printable by model_escape at most four times that. */
#define EXP_COMMAND_MAX 96
#define EXP_LABEL_MAX 64
#define EXP_WORKLOAD_LABEL_MAX (4 * 255 + 1)

typedef struct exp_sess {
    char id[96];
    int pid;
    char host[64];
    char label[EXP_WORKLOAD_LABEL_MAX];                   /* "" unknown */
    char job[EXP_LABEL_MAX], rank[EXP_LABEL_MAX];          /* "" unknown */
    char command[EXP_COMMAND_MAX];   /* shortened, valid UTF-8           */
    model_state state;
    bool complete;                   /* the verdict (so far if running)  */
    uint64_t start_ns, end_ns, heartbeat_ns;
    /* whole-session totals: the model's (equal to `cuptop sessions`) */
    uint64_t records_by_kind[CUPSTORE_KIND_MAX];
    uint64_t records_by_device[CUPSTORE_DEVICE_MAX];
    uint32_t device_mask;
    uint64_t loss[CUPSTORE_LOSS_MAX];
    /* beyond loss[]: estimated, at least, at most (the model's
     * loss_estimate, loss_bound, loss_at_most) */
    uint64_t loss_estimate[CUPSTORE_LOSS_MAX], loss_bound[CUPSTORE_LOSS_MAX];
    uint64_t loss_at_most[CUPSTORE_LOSS_MAX];
    /* exact losses per device and class (slot MODEL_DEVICE_NONE: "none"),
     * and which devices are listed (model_device_listed) */
    uint64_t loss_by_device[CUPSTORE_DEVICE_MAX + 1][CUPSTORE_LOSS_MAX];
    bool device_listed[CUPSTORE_DEVICE_MAX + 1];
    uint64_t buf_completed, buf_consumed;
    /* whole-session totals of health-row counters the model does not sum */
    uint64_t buf_requested, buf_provided, buf_declined, buf_foreign;
    uint64_t bytes_delivered, records_stored;
    uint64_t req_lat_count, cmp_lat_count, commit_lat_count;
    /* the last health row */
    bool have_last;
    cupstore_health last;
    /* the launch ledger's result (--ledger), once ended: per kind
     * launched and arrived, missing per device (slot CUPSTORE_DEVICE_MAX:
     * no device, and what no stream was named for) */
    bool have_ledger;
    uint64_t ledger_launched[MODEL_LEDGER_KINDS], ledger_arrived[MODEL_LEDGER_KINDS];
    uint64_t ledger_missing[CUPSTORE_DEVICE_MAX + 1][MODEL_LEDGER_KINDS];
    /* the stop protocol, once ended */
    bool have_stop;
    double stop_s;                          /* first start to last end  */
    double step_s[CUPSTORE_STEP_MAX];
    bool step_seen[CUPSTORE_STEP_MAX];
} exp_sess;

/* The exporter's own figures, for its cuptop_exporter_* metrics. */
typedef struct exp_self {
    const char *version;
    uint64_t now_ns;                 /* CLOCK_REALTIME of this scrape     */
    uint64_t scrapes_total;
    uint64_t read_errors_total;      /* stores or sessions unreadable     */
    size_t unreadable;               /* sessions unreadable this scrape   */
    size_t stores_unreadable;        /* stores unreadable this scrape     */
    size_t exported, omitted, expired;
    size_t max_sessions;
    uint64_t retention_s;
    double read_seconds;             /* reading the stores, this scrape   */
} exp_self;

/* A growable output buffer. */
typedef struct exp_buf {
    char *p;
    size_t len, cap;
    bool oom;
} exp_buf;

void exp_buf_puts(exp_buf *b, const char *s);
void exp_buf_printf(exp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void exp_buf_free(exp_buf *b);

/** Append the exposition of n sessions and the exporter's own figures
 *  (text format 0.0.4, or OpenMetrics 1.0.0 ending in "# EOF"). */
void exp_format(exp_buf *b, const exp_sess *s, size_t n, const exp_self *self,
                bool openmetrics);

/** Escape a label value for the exposition (\\, \" and \n) into dst,
 *  always NUL-terminated, cutting at a character boundary. */
void exp_label_escape(char *dst, size_t len, const char *src);

/** Shorten a command line for a label: the program's base name and its
 *  arguments, made printable (model_escape) and cut to fit with "...". */
void exp_command_short(char *dst, size_t len, const char *cmdline);

#endif /* CUPTOP_EXPORTER_INT_H */
