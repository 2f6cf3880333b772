/*
 * model_int.h - what the model's own files share (not for front ends):
 * adding a reason to a summary, the cause of a failure on a session, and
 * reading its meta table.
 */
#ifndef CUPTOP_MODEL_INT_H
#define CUPTOP_MODEL_INT_H

#include "model.h"

/* Append a reason to s->reasons (s owns it; model_summary_free frees it),
 * its text formatted from fmt.  Returns 0 or ENOMEM. */
int model_reason_add(model_summary *s, unsigned reason, uint64_t count, uint64_t first,
                     uint64_t last, uint64_t seconds, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

/* Set *cause (when cause is not NULL; caller frees) to "session ID: words"
 * for rc, and return rc. */
int model_fail(char **cause, int rc, const char *id);

/* A session's meta table read into its summary (model_meta.c): a key's
 * text into dst (cut to len; left as it is when absent) or as a number (0
 * when absent); the process's identity, its job and rank (0 or a store
 * error code), the capture range, and the window of a window export. */
void model_meta_copy(cupstore_txn *txn, const char *key, char *dst, size_t len);
uint64_t model_meta_u64(cupstore_txn *txn, const char *key);
void model_meta_identity(cupstore_txn *txn, model_summary *out);
int model_meta_job(cupstore_txn *txn, model_summary *out);
void model_meta_capture(cupstore_txn *txn, model_summary *out);
void model_meta_window(cupstore_txn *txn, model_summary *out);

/* A session's loss rows, all of them (model.c): exact counts by class and
 * kind and by class and device (slot CUPSTORE_DEVICE_MAX: no device), and
 * CUPTI's drops estimated by kind; what a final status's totals by kind
 * and device are held against, to credit what the rows lack (a full map
 * that refused the last health row: truth matrix 29.12). */
typedef struct model_loss_rows {
    uint64_t kind[CUPSTORE_LOSS_MAX][CUPSTORE_KIND_MAX];
    uint64_t device[CUPSTORE_LOSS_MAX][CUPSTORE_DEVICE_MAX + 1];
    uint64_t dropped_est[CUPSTORE_KIND_MAX];
} model_loss_rows;
int model_loss_rows_read(cupstore_txn *txn, model_loss_rows *out);
/* What f counts beyond the rows r: by kind (exact, and CUPTI's drops
 * estimated) for class l, into add[] / est[] (added to). */
void model_final_kind_extra(const cupstore_final *f, const model_loss_rows *r,
                            uint64_t add[CUPSTORE_KIND_MAX], uint64_t est[CUPSTORE_KIND_MAX]);

#endif
