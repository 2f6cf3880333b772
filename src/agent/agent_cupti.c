/* agent_cupti.c - bind CUPTI by dlopen/dlsym (see agent_cupti.h). */
#include "agent_cupti.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static const char *const cupti_names[] = {
    "libcupti.so.13", "libcupti.so.12", "libcupti.so",
};

static const char *const cupti_dirs[] = {
    "/usr/local/cuda/lib64",
    "/usr/local/cuda/targets/x86_64-linux/lib",
    "/usr/local/cuda/extras/CUPTI/lib64",
};

static void *cupti_open(const char *path, char *why, size_t whylen)
{
    /* RTLD_GLOBAL is not needed: nothing resolves against CUPTI's symbols
     * through us.  RTLD_NOW: a missing symbol fails here, not mid-run. */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h && why && !*why) {
        const char *e = dlerror();
        snprintf(why, whylen, "%s", e ? e : path);
    }
    return h;
}

#define BIND(field, required)                                                  \
    do {                                                                       \
        *(void **)&t->field = dlsym(t->handle, "cupti" #field);                \
        if (!t->field && (required)) {                                         \
            snprintf(why, whylen, "%s lacks cupti%s", t->path, #field);        \
            return -1;                                                         \
        }                                                                      \
    } while (0)

int agent_cupti_load(agent_cupti *t, const char *explicit_path, char *why, size_t whylen)
{
    char path[512];

    memset(t, 0, sizeof *t);
    if (whylen)
        why[0] = '\0';
    if (explicit_path && *explicit_path) {
        snprintf(t->path, sizeof t->path, "%s", explicit_path);
        t->handle = cupti_open(explicit_path, why, whylen);
    } else {
        for (size_t i = 0; !t->handle && i < sizeof cupti_names / sizeof *cupti_names; i++) {
            snprintf(t->path, sizeof t->path, "%s", cupti_names[i]);
            t->handle = cupti_open(cupti_names[i], why, whylen);
            for (size_t d = 0; !t->handle && d < sizeof cupti_dirs / sizeof *cupti_dirs; d++) {
                snprintf(path, sizeof path, "%s/%s", cupti_dirs[d], cupti_names[i]);
                snprintf(t->path, sizeof t->path, "%s", path);
                t->handle = cupti_open(path, NULL, 0);
            }
        }
        if (!t->handle && whylen)
            snprintf(why + strlen(why), whylen - strlen(why),
                     " (also searched /usr/local/cuda; set CUPTOP_CUPTI_LIBRARY)");
    }
    if (!t->handle)
        return -1;
    if (whylen)
        why[0] = '\0';
    BIND(GetVersion, 1);
    BIND(GetResultString, 1);
    BIND(ActivityRegisterCallbacks, 1);
    BIND(ActivityEnable, 1);
    BIND(ActivityDisable, 1);
    BIND(ActivityFlushAll, 1);
    BIND(ActivityGetNextRecord, 1);
    BIND(ActivityGetNumDroppedRecords, 1);
    BIND(GetTimestamp, 1);
    BIND(ActivityFlushPeriod, 0);
    BIND(ActivitySetAttribute, 0);
    BIND(ActivityGetAttribute, 0);
    BIND(GetDeviceId, 0);
    BIND(GetContextId, 0);
    BIND(Subscribe, 0);
    BIND(Subscribe_v2, 0);
    BIND(Unsubscribe, 0);
    BIND(EnableDomain, 0);
    BIND(EnableCallback, 0);
    BIND(GetErrorMessage, 0);
    BIND(GetCallbackName, 0);
    BIND(ActivityEnableAndDump, 0);
    BIND(ActivityEnableContext, 0);
    BIND(ActivityDisableContext, 0);
    BIND(ActivityEnableRuntimeApi, 0);
    BIND(ActivityEnableDriverApi, 0);
    BIND(GetStreamIdEx, 0);
    BIND(Finalize, 0);
    return 0;
}

const char *agent_cupti_strerror(const agent_cupti *t, CUptiResult r)
{
    const char *s = NULL;
    if (t && t->GetResultString && t->GetResultString(r, &s) == CUPTI_SUCCESS && s)
        return s;
    return "CUPTI error";
}

void agent_cupti_describe(const agent_cupti *t, CUptiResult r, char *buf, size_t len)
{
    const char *msg = NULL;
    if (t && t->GetErrorMessage && (t->GetErrorMessage(r, &msg) != CUPTI_SUCCESS || !msg))
        msg = NULL;
    size_t n = msg ? strlen(msg) : 0;
    while (n && (msg[n - 1] == '.' || msg[n - 1] == ' ' || msg[n - 1] == '\n'))
        n--;   /* the caller goes on after it */
    snprintf(buf, len, "%s (%d)%s%.*s", agent_cupti_strerror(t, r), (int)r, n ? ": " : "",
             (int)n, n ? msg : "");
}
