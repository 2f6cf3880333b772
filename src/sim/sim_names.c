/*
 * sim_names.c - what the simulated CUPTI says about itself and its
 * devices: cuptiGetCallbackName with the toolkit's real callback names
 * (tables generated at build time from cupti_runtime_cbid.h and
 * cupti_driver_cbid.h by tools/gen_cbid_names.sh), DEVICE activity records
 * for the simulated devices, and the driver and runtime version calls a
 * client may look up beside CUPTI.  Every name and version it reports says
 * "simulated", so a trace of the simulator can never pass for a real one.
 */
#include "config.h"

#include <string.h>

#include "sim_int.h"

SIM_EXPORT CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                                     const char **name)
{
    const char *const *tab;
    unsigned n;

    if (!name)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *name = NULL;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
        tab = sim_runtime_cbid_names;
        n = sim_runtime_cbid_names_count;
    } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        tab = sim_driver_cbid_names;
        n = sim_driver_cbid_names_count;
    } else {
        return CUPTI_ERROR_INVALID_PARAMETER;   /* names: runtime and driver only */
    }
    if (cbid >= n || !tab[cbid])
        return CUPTI_ERROR_INVALID_PARAMETER;
    *name = tab[cbid];
    return CUPTI_SUCCESS;
}

/* Simulated devices: an H200-like part, named so no one mistakes it. */
#define SIM_DEVICE_NAME "NVIDIA H200 (simulated)"

void sim_device_record(unsigned d, CUpti_ActivityDevice5 *r)
{
    memset(r, 0, sizeof *r);
    r->kind = CUPTI_ACTIVITY_KIND_DEVICE;
    r->id = d + sim.cfg.device_base;
    r->name = SIM_DEVICE_NAME;
    r->computeCapabilityMajor = 9;
    r->computeCapabilityMinor = 0;
    r->numMultiprocessors = 132;
    r->globalMemorySize = (uint64_t)143771 << 20;
    r->globalMemoryBandwidth = 4800000000ull;
    r->numThreadsPerWarp = 32;
    r->coreClockRate = 1980000;
    r->isCudaVisible = 1;
    /* GPU-5349-4d00-... : "SIM" in the first bytes, the index last */
    static const unsigned char base[16] = {0x53, 0x49, 0x4d, 0x00, 0x00, 0x00, 0x40, 0x00,
                                           0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    memcpy(r->uuid.bytes, base, sizeof base);
    r->uuid.bytes[15] = (char)(unsigned char)r->id;
}

void sim_devices_dump(void)
{
    CUpti_ActivityDevice5 recs[SIM_DEV_MAX];
    unsigned n = sim.cfg.devices < SIM_DEV_MAX ? sim.cfg.devices : SIM_DEV_MAX;
    for (unsigned d = 0; d < n; d++)
        sim_device_record(d, &recs[d]);
    if (n)
        sim_buffer_put_meta(recs, sizeof recs[0] * n);
}

/* The driver and runtime version calls (CUDA 13.0), for a client that
 * looks them up in the CUPTI library it loaded; the simulated process
 * loads no libcuda or libcudart. */
SIM_EXPORT CUresult CUDAAPI cuDriverGetVersion(int *version)
{
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = 13000;
    return CUDA_SUCCESS;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaRuntimeGetVersion(int *version)
{
    if (!version)
        return cudaErrorInvalidValue;
    *version = 13000;
    return cudaSuccess;
}

/* Marks the library as the simulator for a client that wants to label
 * what it reports (the agent's provenance). */
SIM_EXPORT const char *cuptopsim_simulated(void);
SIM_EXPORT const char *cuptopsim_simulated(void)
{
    return "cuptop simulated CUPTI " PACKAGE_VERSION;
}
