/*
 * model_meta.c - what a session's meta table says, read into its summary:
 * the process's identity, its job and rank, the capture range and, for a
 * window export, the window it holds (doc/store-format.md).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model_int.h"

void model_meta_copy(cupstore_txn *txn, const char *key, char *dst, size_t len)
{
    char *v = NULL;
    if (cupstore_meta_get(txn, key, &v) == 0 && v)
        snprintf(dst, len, "%s", v);
    free(v);
}

uint64_t model_meta_u64(cupstore_txn *txn, const char *key)
{
    char *v = NULL;
    uint64_t x = 0;
    if (cupstore_meta_get(txn, key, &v) == 0 && v)
        x = strtoull(v, NULL, 10);
    free(v);
    return x;
}

/* The process's identity (model_proc_find); have_identity stays false
 * for stores written before the agent recorded it ("unknown": the agent
 * could not read it). */
void model_meta_identity(cupstore_txn *txn, model_summary *out)
{
    char *v = NULL;
    if (cupstore_meta_get(txn, "boot_id", &v) != 0 || !v) {
        free(v);
        return;
    }
    out->have_identity = true;
    if (strcmp(v, "unknown") != 0)
        snprintf(out->boot_id, sizeof out->boot_id, "%s", v);
    free(v);
    out->start_ticks = model_meta_u64(txn, "start_time");
    out->pid_ns = model_meta_u64(txn, "pid_ns");
}

/* The job and rank keys (doc/store-format.md, "Jobs"). */
int model_meta_job(cupstore_txn *txn, model_summary *out)
{
    char *v = NULL;
    int rc = cupstore_meta_get(txn, "job", &v);
    if (rc && rc != CUPSTORE_ENOTFOUND)
        return rc;
    if (rc == 0 && v && cupstore_job_valid(v)) {
        snprintf(out->job, sizeof out->job, "%s", v);
        free(v);
        v = NULL;
        if (cupstore_meta_get(txn, "job_source", &v) == 0 && v && !strcmp(v, "session"))
            out->job_own = true;
    } else {
        snprintf(out->job, sizeof out->job, "%s", out->id);   /* a job of its own */
        out->job_own = true;
    }
    free(v);
    v = NULL;
    out->rank = -1;
    if (cupstore_meta_get(txn, "rank", &v) == 0 && v && *v >= '0' && *v <= '9' &&
        strlen(v) <= 10) {
        char *end;
        unsigned long long r = strtoull(v, &end, 10);
        if (!*end && r <= 0x7fffffffu) {
            out->rank = (int)r;
            model_meta_copy(txn, "rank_source", out->rank_source, sizeof out->rank_source);
            uint64_t w = model_meta_u64(txn, "world_size");
            out->world_size = w <= 0x7fffffffu ? (int)w : 0;
        }
    }
    free(v);
    return 0;
}

/* The capture range from the agent's configuration text (capture_range=). */
void model_meta_capture(cupstore_txn *txn, model_summary *out)
{
    char *v = NULL;
    if (cupstore_meta_get(txn, "config", &v) == 0 && v) {
        for (const char *p = v; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
            if (!strncmp(p, "capture_range=", 14)) {
                size_t n = strcspn(p + 14, "\n");
                if (n && strncmp(p + 14, "none", n) != 0)
                    snprintf(out->capture, sizeof out->capture, "%.*s", (int)n, p + 14);
                break;
            }
    }
    free(v);
}

/* A window export's keys (export_store.c): export_of, export_window
 * "FROM TO" (ns), export_session_span "START END" (ns) and export_state,
 * the session's state when it was exported.  The window holds the
 * session's end when the session had ended or crashed and the window
 * reaches its end (an export without export_state: when a final status
 * was copied and the window reaches its end). */
void model_meta_window(cupstore_txn *txn, model_summary *out)
{
    char *w = NULL, *span = NULL, *state = NULL;
    unsigned long long wfrom, wto, sstart, send = 0;
    if (cupstore_meta_get(txn, "export_window", &w) == 0 && w &&
        sscanf(w, "%llu %llu", &wfrom, &wto) == 2) {
        out->window = true;
        model_meta_copy(txn, "export_of", out->window_of, sizeof out->window_of);
        if (cupstore_meta_get(txn, "export_session_span", &span) == 0 && span &&
            sscanf(span, "%llu %llu", &sstart, &send) != 2)
            send = 0;
        bool reaches = wto == UINT64_MAX || (send && wto + 1 >= send);
        if (cupstore_meta_get(txn, "export_state", &state) == 0 && state)
            out->window_end = reaches && strcmp(state, "running") != 0 &&
                              strcmp(state, "stopped") != 0 &&
                              strcmp(state, "not_responding") != 0;   /* live ones */
        else
            out->window_end = reaches && cupstore_final_get(txn, &(cupstore_final){0}) == 0;
    }
    free(w);
    free(span);
    free(state);
}
