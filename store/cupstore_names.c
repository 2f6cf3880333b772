/*
 * cupstore_names.c - names of kinds, loss classes, overhead types, stop
 * steps and exit paths; kind list parsing; error strings.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cupstore.h"

static const char *const kind_names[CUPSTORE_KIND_MAX] = {
    [CUPSTORE_KIND_KERNEL] = "kernel",     [CUPSTORE_KIND_MEMCPY] = "memcpy",
    [CUPSTORE_KIND_MEMSET] = "memset",     [CUPSTORE_KIND_RUNTIME] = "runtime",
    [CUPSTORE_KIND_DRIVER] = "driver",     [CUPSTORE_KIND_SYNC] = "sync",
    [CUPSTORE_KIND_OVERHEAD] = "overhead", [CUPSTORE_KIND_MARKER] = "marker",
    [CUPSTORE_KIND_OTHER] = "other",       [CUPSTORE_KIND_GRAPH] = "graph",
};

/* CUPTI-style spellings accepted by cupstore_kind_parse. */
static const struct {
    const char *name;
    int kind;
} kind_aliases[] = {
    {"concurrent_kernel", CUPSTORE_KIND_KERNEL},
    {"kernels", CUPSTORE_KIND_KERNEL},
    {"memcpy2", CUPSTORE_KIND_MEMCPY},
    {"memcpys", CUPSTORE_KIND_MEMCPY},
    {"memsets", CUPSTORE_KIND_MEMSET},
    {"synchronization", CUPSTORE_KIND_SYNC},
    {"markers", CUPSTORE_KIND_MARKER},
    {"graph_trace", CUPSTORE_KIND_GRAPH},
    {"graphs", CUPSTORE_KIND_GRAPH},
};

const char *cupstore_kind_name(unsigned kind)
{
    return kind < CUPSTORE_KIND_MAX ? kind_names[kind] : "?";
}

/* Compare name[0..len) with s case-insensitively; '-' matches '_'. */
static bool name_eq(const char *name, size_t len, const char *s)
{
    size_t i;
    for (i = 0; i < len && s[i]; i++) {
        int a = tolower((unsigned char)name[i]), b = (unsigned char)s[i];
        if (a == '-')
            a = '_';
        if (a != b)
            return false;
    }
    return i == len && s[i] == '\0';
}

static int kind_parse_n(const char *name, size_t len)
{
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
        if (name_eq(name, len, kind_names[k]))
            return (int)k;
    for (size_t i = 0; i < sizeof kind_aliases / sizeof kind_aliases[0]; i++)
        if (name_eq(name, len, kind_aliases[i].name))
            return kind_aliases[i].kind;
    if (len > 20 && strncasecmp(name, "cupti_activity_kind_", 20) == 0)
        return kind_parse_n(name + 20, len - 20);
    return -1;
}

int cupstore_kind_parse(const char *name)
{
    if (!name)
        return -1;
    return kind_parse_n(name, strlen(name));
}

int cupstore_kinds_parse(const char *list, uint32_t *mask, const char **bad)
{
    const uint32_t all = CUPSTORE_KINDS_ALL;
    uint32_t m = 0;
    const char *p = list;

    if (bad)
        *bad = list;
    if (!list || !mask)
        return CUPSTORE_EINVAL;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        const char *s = p;
        while (*p && *p != ',')
            p++;
        const char *e = p;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        size_t len = (size_t)(e - s);
        int k;
        if (len == 0) {
            if (bad)
                *bad = s;
            return CUPSTORE_EINVAL;
        }
        if (name_eq(s, len, "all"))
            m |= all;
        else if (name_eq(s, len, "none"))
            ;
        else if (name_eq(s, len, "default"))
            m |= CUPSTORE_KINDS_DEFAULT;
        else if ((k = kind_parse_n(s, len)) >= 0)
            m |= 1u << k;
        else {
            if (bad)
                *bad = s;
            return CUPSTORE_EINVAL;
        }
        if (*p == '\0')
            break;
        p++; /* skip ',' */
    }
    *mask = m;
    if (bad)
        *bad = NULL;
    return 0;
}

void cupstore_kinds_format(uint32_t mask, char *buf, size_t len)
{
    const uint32_t all = CUPSTORE_KINDS_ALL;
    size_t off = 0;

    if (!buf || len == 0)
        return;
    buf[0] = '\0';
    if ((mask & CUPSTORE_KINDS_EVERY) == all) {
        snprintf(buf, len, "all");
        return;
    }
    if ((mask & CUPSTORE_KINDS_EVERY) == 0) {
        snprintf(buf, len, "none");
        return;
    }
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++) {
        if (!(mask & (1u << k)))
            continue;
        int w = snprintf(buf + off, len - off, "%s%s", off ? "," : "", kind_names[k]);
        if (w < 0 || (size_t)w >= len - off) {
            buf[len - 1] = '\0';
            return;
        }
        off += (size_t)w;
    }
}

/* A duration in the largest unit that divides it. */
static void every_unit(uint32_t ms, char *buf, size_t len)
{
    if (ms && ms % 3600000u == 0)
        snprintf(buf, len, "%uh", ms / 3600000u);
    else if (ms && ms % 60000u == 0)
        snprintf(buf, len, "%um", ms / 60000u);
    else if (ms && ms % 1000u == 0)
        snprintf(buf, len, "%us", ms / 1000u);
    else
        snprintf(buf, len, "%ums", ms);
}

void cupstore_every_format(uint32_t period_ms, uint32_t window_ms, char *buf, size_t len)
{
    char p[16], w[16];
    every_unit(period_ms, p, sizeof p);
    every_unit(window_ms, w, sizeof w);
    snprintf(buf, len, "%s/%s", p, w);
}

static const char *const loss_names[CUPSTORE_LOSS_MAX] = {
    [CUPSTORE_LOSS_CUPTI_DROPPED] = "cupti_dropped",
    [CUPSTORE_LOSS_DECLINED] = "declined",
    [CUPSTORE_LOSS_QUEUE_OVERFLOW] = "queue_overflow",
    [CUPSTORE_LOSS_PARSE_ERROR] = "parse_error",
    [CUPSTORE_LOSS_STORE_REFUSED] = "store_refused",
    [CUPSTORE_LOSS_ZERO_TS] = "zero_ts",
    [CUPSTORE_LOSS_TAIL] = "tail",
    [CUPSTORE_LOSS_CONFLICT] = "conflict",
    [CUPSTORE_LOSS_UNRECORDED] = "unrecorded",
};

static const char *const loss_texts[CUPSTORE_LOSS_MAX] = {
    [CUPSTORE_LOSS_CUPTI_DROPPED] = "records CUPTI dropped (cuptiActivityGetNumDroppedRecords)",
    [CUPSTORE_LOSS_DECLINED] = "records lost because the agent declined buffer requests "
                               "(buffer pool exhausted)",
    [CUPSTORE_LOSS_QUEUE_OVERFLOW] = "completed buffers that did not fit the agent's queue",
    [CUPSTORE_LOSS_PARSE_ERROR] = "records CUPTI returned with an error or that failed "
                                  "validation",
    [CUPSTORE_LOSS_STORE_REFUSED] = "records the store refused (write failed or map full)",
    [CUPSTORE_LOSS_ZERO_TS] = "records with zero start or end timestamps "
                              "(CUPTI device buffers exhausted)",
    [CUPSTORE_LOSS_TAIL] = "records not flushed or not drained when the session stopped",
    [CUPSTORE_LOSS_CONFLICT] = "buffers lost to another CUPTI client in the process",
    [CUPSTORE_LOSS_UNRECORDED] = "GPU records the launch ledger expected that never arrived "
                                 "although no other class counted them (CUPTI lost them "
                                 "without a drop count)",
};

const char *cupstore_loss_name(unsigned loss)
{
    return loss < CUPSTORE_LOSS_MAX ? loss_names[loss] : "?";
}

const char *cupstore_loss_describe(unsigned loss)
{
    return loss < CUPSTORE_LOSS_MAX ? loss_texts[loss] : "unknown loss class";
}

static const char *const overhead_names[CUPSTORE_OVERHEAD_MAX] = {
    "driver_compiler",  "cupti_buffer_flush",      "cupti_instrumentation", "cupti_resource",
    "command_buffer_full", "activity_buffer_request", "other",             "module_loading",
};

const char *cupstore_overhead_name(unsigned idx)
{
    return idx < CUPSTORE_OVERHEAD_MAX ? overhead_names[idx] : "?";
}

static const char *const step_names[CUPSTORE_STEP_MAX] = {
    [CUPSTORE_STEP_DISABLE] = "disable", [CUPSTORE_STEP_FLUSH] = "flush",
    [CUPSTORE_STEP_DRAIN] = "drain",     [CUPSTORE_STEP_COMMIT] = "commit",
    [CUPSTORE_STEP_CLOSE] = "close",
};

const char *cupstore_step_name(unsigned step)
{
    return step < CUPSTORE_STEP_MAX ? step_names[step] : "?";
}

static const char *const exit_names[] = {
    [CUPSTORE_EXIT_UNKNOWN] = "unknown",         [CUPSTORE_EXIT_RETURN] = "return",
    [CUPSTORE_EXIT_SIGNAL] = "signal",           [CUPSTORE_EXIT_CTX_DESTROY] = "ctx_destroy",
    [CUPSTORE_EXIT_ABORT] = "abort",             [CUPSTORE_EXIT_DETACH] = "detach",
};

const char *cupstore_exit_name(unsigned e)
{
    return e < sizeof exit_names / sizeof exit_names[0] ? exit_names[e] : "?";
}

const char *cupstore_strerror(int err)
{
    switch (err) {
    case 0:
        return "success";
    case CUPSTORE_ENOTSTORE:
        return "not a cuptop store session";
    case CUPSTORE_ENEWER:
        return "session written by a newer cuptop (schema version too new)";
    case CUPSTORE_ECORRUPT:
        return "store damaged or value undecodable";
    case CUPSTORE_EFULL:
        return "store map reached its size cap";
    case CUPSTORE_ENOTFOUND:
        return "not found";
    case CUPSTORE_EEXIST:
        return "already exists";
    case CUPSTORE_EPERM:
        return "store directory not owned by this user or writable by others";
    case CUPSTORE_EBUSY:
        return "store busy, retry";
    case CUPSTORE_EINVAL:
        return "invalid argument";
    case CUPSTORE_ELMDBNEWER:
        return "data file written in a newer LMDB format than this cuptop's liblmdb reads";
    case CUPSTORE_EFAULT:
        return "an access to the session's mapped files faulted (a damaged page, a file "
               "truncated or no longer writable)";
    default:
        break;
    }
    if (err > 0)
        return strerror(err);
    return "unknown store error";
}
