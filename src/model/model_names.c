/*
 * model_names.c - the model's codes in words (states, reasons, verdicts,
 * note levels, store errors, the advice for a CUPTI start failure) and
 * times in and out: model_parse_time reads what a person types after
 * --from/--to, model_format_second prints a second as RFC 3339.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "model.h"

static const char *const state_names[MODEL_STATE_MAX] = {
    "running", "ended", "crashed", "stopped", "not_responding"};

const char *model_state_name(model_state s)
{
    return (unsigned)s < MODEL_STATE_MAX ? state_names[s] : "?";
}

bool model_state_live(model_state s)
{
    return s == MODEL_STATE_RUNNING || s == MODEL_STATE_STOPPED ||
           s == MODEL_STATE_NOT_RESPONDING;
}

const char *model_reason_name(unsigned reason)
{
    static const char *const extra[] = {"unconsumed", "no_final", "protocol", "flush",
                                        "disabled", "store_damaged", "cupti_start",
                                        "not_responding"};
    if (reason < CUPSTORE_LOSS_MAX)
        return cupstore_loss_name(reason);
    if (reason < MODEL_REASON_MAX)
        return extra[reason - CUPSTORE_LOSS_MAX];
    return "?";
}

const char *model_cupti_advice(int code)
{
    switch (code) {
    case 0:
        return "the CUPTI library could not be loaded: install the CUDA toolkit's CUPTI "
               "(extras/CUPTI/lib64) or point CUPTOP_CUPTI_LIBRARY at a libcupti.so that "
               "matches the driver, then run again";
    case 35:   /* CUPTI_ERROR_INSUFFICIENT_PRIVILEGES */
    case 40:   /* CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES */
        return "GPU profiling is restricted to administrators here: run as root, or ask the "
               "administrator to load the driver with NVreg_RestrictProfilingToAdminUsers=0 "
               "(https://developer.nvidia.com/CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)";
    case 39:   /* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED */
        return "another profiler holds CUPTI in this process (Nsight Systems or Compute, "
               "compute-sanitizer, torch.profiler): run the application without it";
    default:
        return "check that the CUPTI library the agent loaded (cuptop report: CUPTI) comes "
               "with the CUDA version of the driver, and that no other profiler (Nsight, "
               "compute-sanitizer, torch.profiler) runs in the process; then run again";
    }
}

const char *model_verdict_name(const model_summary *s)
{
    return s->skipped[0] ? "SKIPPED" : s->complete ? "COMPLETE" : "INCOMPLETE";
}

void model_scope_text(const model_summary *s, char *buf, size_t len)
{
    char at[64];
    if (!len)
        return;
    buf[0] = '\0';
    if (!s->continued_signal)
        return;
    model_format_second(s->continued_ns / 1000000000u, at, sizeof at);
    if (s->process_exit_ns > s->continued_ns)
        snprintf(buf, len,
                 "scope: the application handled signal %d at %s and carried on for %.1f s "
                 "more: the session ended at the signal, that time is not traced (out of "
                 "scope, not lost)",
                 s->continued_signal, at, (double)(s->process_exit_ns - s->continued_ns) / 1e9);
    else
        snprintf(buf, len,
                 "scope: the application handled signal %d at %s and carried on: the "
                 "session ended at the signal, what followed is not traced (out of scope, "
                 "not lost)",
                 s->continued_signal, at);
}

void model_format_second(uint64_t second, char *buf, size_t len)
{
    time_t t = (time_t)second;
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, len, "%" PRIu64, second);
}

const char *model_note_level_name(uint32_t level)
{
    static const char *const names[] = {"info", "warning", "error"};
    return level < 3 ? names[level] : "unknown";
}

/* ---- Times --------------------------------------------------------------- */

static bool parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!*s)
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return true;
}

int model_parse_time(const char *s, uint64_t session_start_s, uint64_t session_end_s,
                     uint64_t *out_s)
{
    uint64_t v;
    if (!s || !out_s || !*s)
        return CUPSTORE_EINVAL;
    if (strcmp(s, "start") == 0) {
        *out_s = session_start_s;
        return 0;
    }
    if (strcmp(s, "end") == 0) {
        *out_s = session_end_s;
        return 0;
    }
    if (s[0] == '+' && parse_u64(s + 1, &v)) {
        if (v > UINT64_MAX - session_start_s)
            return CUPSTORE_EINVAL;
        *out_s = session_start_s + v;
        return 0;
    }
    if (s[0] == '-' && parse_u64(s + 1, &v)) {
        if (v > session_end_s)
            return CUPSTORE_EINVAL;
        *out_s = session_end_s - v;
        return 0;
    }
    if (parse_u64(s, &v)) {
        *out_s = v;
        return 0;
    }
    /* RFC 3339 in UTC: YYYY-mm-ddTHH:MM:SS[Z] (also 't' or ' ' between). */
    struct tm tm;
    int n = 0;
    char sep;
    memset(&tm, 0, sizeof tm);
    if (sscanf(s, "%4d-%2d-%2d%c%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &sep,
               &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 7 ||
        (sep != 'T' && sep != 't' && sep != ' '))
        return CUPSTORE_EINVAL;
    const char *rest = s + n;
    if (strcmp(rest, "") != 0 && strcmp(rest, "Z") != 0 && strcmp(rest, "z") != 0 &&
        strcmp(rest, "+00:00") != 0)
        return CUPSTORE_EINVAL;
    if (tm.tm_year < 1970 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
        tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
        return CUPSTORE_EINVAL;
    /* A day the month does not have (2026-02-30) is refused, not carried
     * into the next month by timegm. */
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y = tm.tm_year;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (tm.tm_mday > mdays[tm.tm_mon - 1] + (tm.tm_mon == 2 && leap))
        return CUPSTORE_EINVAL;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    time_t t = timegm(&tm);
    if (t < 0)
        return CUPSTORE_EINVAL;
    *out_s = (uint64_t)t;
    return 0;
}

const char *model_fault_text(void)
{
    static _Thread_local char text[320];
    snprintf(text, sizeof text, "its data.mdb is damaged: %s while reading it; left out "
             "(check it with mdb_stat -a)", cupstore_guard_last());
    return text;
}

const char *model_strerror(int rc)
{
    switch (rc) {
    case CUPSTORE_ENOTFOUND:
        return "no such session in the store";
    case CUPSTORE_EINVAL:
        return "ambiguous or invalid session id (give more of it)";
    case CUPSTORE_ENOTSTORE:
        return "not a cuptop session (foreign or damaged files)";
    case CUPSTORE_ENEWER:
        return "written by a newer cuptop (schema version too new); upgrade cuptop";
    case CUPSTORE_ELMDBNEWER:
        return "its data file is in a newer LMDB format than this cuptop's liblmdb reads "
               "(not a newer cuptop schema); read it with a cuptop built on that LMDB";
    case CUPSTORE_ECORRUPT:
        return "the session's store is damaged";
    case CUPSTORE_EFAULT:
        return "its data.mdb is damaged: reading it faulted; left out (check it with "
               "mdb_stat -a)";
    default:
        return cupstore_strerror(rc);
    }
}
