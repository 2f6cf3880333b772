/*
 * model_prov.h - a session's provenance as the front ends show it: the
 * versions, devices, host facts and workload label the agent recorded
 * (doc/store-format.md, "Provenance keys"), read in one place so that
 * sessions --json, report, export and the monitor say the same thing.
 *
 * Older sessions lack most keys: what is missing reads as unknown, with the
 * reason the agent gave where it gave one ("not recorded" otherwise).
 */
#ifndef MODEL_PROV_H
#define MODEL_PROV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cupstore.h"

typedef struct model_device {
    bool known;                 /* a DEVICE record (or an old name) seen    */
    bool from_cupti;            /* properties from CUPTI's DEVICE record     */
    bool simulated;
    char name[160];             /* "NVIDIA H200"                             */
    char uuid[48];              /* "GPU-..."                                 */
    char cc[16];                /* compute capability "9.0"                  */
    uint32_t sm;                /* multiprocessors                           */
    uint64_t memory;            /* global memory, bytes                      */
    int mig;                    /* 1 / 0; -1 unknown                         */
} model_device;

/* The version items, in the order every front end lists them. */
enum {
    MODEL_V_DRIVER = 0,         /* "580.159.04" (NVML) or the CUDA version  */
    MODEL_V_CUDA_DRIVER,        /* cuDriverGetVersion: "13.0"                */
    MODEL_V_CUDA_RUNTIME,       /* cudaRuntimeGetVersion                     */
    MODEL_V_CUPTI,              /* "13.0.1"                                  */
    MODEL_V_CUPTI_API,          /* cuptiGetVersion: "130001"                 */
    MODEL_V_CUPTOP,             /* the agent's cuptop version                */
    MODEL_V_KERNEL,             /* OS kernel release                         */
    MODEL_V_MAX
};

typedef struct model_prov {
    char *v[MODEL_V_MAX];       /* malloc'ed values; NULL: unknown           */
    char *why[MODEL_V_MAX];     /* why unknown (malloc'ed; NULL when known)  */
    char *label;                /* workload label; NULL when none            */
    char *host, *os, *virt;     /* NULL when not recorded                    */
    char *config;               /* the collection configuration, as stored   */
    bool simulated;             /* recorded by the simulated CUPTI           */
    bool recorded;              /* the agent wrote provenance keys (>= 0.3)  */
    model_device dev[CUPSTORE_DEVICE_MAX];
} model_prov;

/** JSON field name of a version item ("driver", "cuda_driver", ...). */
const char *model_prov_vname(unsigned i);
/** Human name of a version item ("driver", "CUDA driver API", ...). */
const char *model_prov_vlabel(unsigned i);

/** Read a session's provenance (inside the caller's read transaction).
 *  @return 0 or ENOMEM; missing keys are not errors.  Free with
 *  model_prov_free. */
int model_prov_read(cupstore_txn *txn, model_prov *p);
void model_prov_free(model_prov *p);

/** "GPU 0: NVIDIA H200" (or "GPU 0" when the name is unknown). */
void model_prov_device_label(const model_prov *p, unsigned index, char *buf, size_t len);

#endif /* MODEL_PROV_H */
