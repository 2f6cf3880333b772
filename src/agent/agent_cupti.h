/*
 * agent_cupti.h - CUPTI bound at run time: one table of function pointers
 * filled by dlopen/dlsym, so the agent has no link-time dependency on
 * libcupti or libcuda, and the simulated CUPTI is the same table loaded
 * from another library.
 */
#ifndef AGENT_CUPTI_H
#define AGENT_CUPTI_H

#include <stdbool.h>
#include <stddef.h>

#include <cupti.h>

#define AGENT_CUPTI_FN(name) __typeof__(cupti##name) *name

typedef struct agent_cupti {
    void *handle;
    char path[512];               /* library actually loaded               */
    /* required */
    AGENT_CUPTI_FN(GetVersion);
    AGENT_CUPTI_FN(GetResultString);
    AGENT_CUPTI_FN(ActivityRegisterCallbacks);
    AGENT_CUPTI_FN(ActivityEnable);
    AGENT_CUPTI_FN(ActivityDisable);
    AGENT_CUPTI_FN(ActivityFlushAll);
    AGENT_CUPTI_FN(ActivityGetNextRecord);
    AGENT_CUPTI_FN(ActivityGetNumDroppedRecords);
    AGENT_CUPTI_FN(GetTimestamp);
    /* optional (NULL when the library lacks them) */
    AGENT_CUPTI_FN(ActivityFlushPeriod);
    AGENT_CUPTI_FN(ActivitySetAttribute);
    AGENT_CUPTI_FN(ActivityGetAttribute);
    AGENT_CUPTI_FN(GetDeviceId);
    AGENT_CUPTI_FN(GetContextId);
    AGENT_CUPTI_FN(Subscribe);
    AGENT_CUPTI_FN(Subscribe_v2);
    AGENT_CUPTI_FN(Unsubscribe);
    AGENT_CUPTI_FN(EnableDomain);
    AGENT_CUPTI_FN(EnableCallback);
    AGENT_CUPTI_FN(GetErrorMessage);
    AGENT_CUPTI_FN(GetCallbackName);        /* API names (consumer)     */
    AGENT_CUPTI_FN(ActivityEnableAndDump);     /* late attach: what exists */
    AGENT_CUPTI_FN(ActivityEnableContext);     /* device scope             */
    AGENT_CUPTI_FN(ActivityDisableContext);
    AGENT_CUPTI_FN(ActivityEnableRuntimeApi);  /* API record policy        */
    AGENT_CUPTI_FN(ActivityEnableDriverApi);
    AGENT_CUPTI_FN(GetStreamIdEx);             /* the launch ledger           */
    AGENT_CUPTI_FN(Finalize);                  /* teardown after a detach */
} agent_cupti;

/** Load CUPTI: explicit path (CUPTOP_CUPTI_LIBRARY) if non-empty, else
 *  libcupti.so.13 / .12 / libcupti.so through the dynamic linker and in the
 *  toolkit's usual directories.  Fills every required entry.
 *  @param[out] why  on failure, the reason (dlerror text or missing symbol).
 *  @return 0 or -1. */
int agent_cupti_load(agent_cupti *t, const char *explicit_path, char *why, size_t whylen);

/** Result code as text (CUPTI's own string when available). */
const char *agent_cupti_strerror(const agent_cupti *t, CUptiResult r);

/** The error for a person: "NAME (CODE): CUPTI's message" (the message
 *  when the library has cuptiGetErrorMessage), into buf. */
void agent_cupti_describe(const agent_cupti *t, CUptiResult r, char *buf, size_t len);

#endif /* AGENT_CUPTI_H */
