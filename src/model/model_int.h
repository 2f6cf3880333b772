/*
 * model_int.h - what the model's own files share (not for front ends):
 * adding a reason to a summary and the cause of a failure on a session.
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

#endif
