/*
 * nvtx_other.c - a second NVTX instance for simdrive (nvtx_other.so): the
 * nvtx3 headers give every shared object its own NVTX state, so this
 * library's first NVTX call loads the injection (the agent) on its own,
 * as a second library of an application would.  simdrive passes domain
 * handles across the two instances (sim_nvtx.sh "cross"): a handle is
 * process-wide, whichever library made it.
 */
#include <string.h>

#include <nvtx3/nvToolsExt.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT void nvtx_other_init(void);
EXPORT void *nvtx_other_create(const char *name);
EXPORT void nvtx_other_dpush(void *dom, const char *name);
EXPORT void nvtx_other_dpop(void *dom);

void nvtx_other_init(void)
{
    nvtxInitialize(NULL);
}

void *nvtx_other_create(const char *name)
{
    return nvtxDomainCreateA(name);
}

void nvtx_other_dpush(void *dom, const char *name)
{
    nvtxEventAttributes_t at;
    memset(&at, 0, sizeof at);
    at.version = NVTX_VERSION;
    at.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    at.messageType = NVTX_MESSAGE_TYPE_ASCII;
    at.message.ascii = name;
    (void)nvtxDomainRangePushEx((nvtxDomainHandle_t)dom, &at);
}

void nvtx_other_dpop(void *dom)
{
    (void)nvtxDomainRangePop((nvtxDomainHandle_t)dom);
}
