/*
 * agent_prov.h - provenance: what the session ran on, recorded by the
 * agent as session metadata (doc/store-format.md, "Provenance keys").
 *
 * Versions and host facts are collected once per session before any
 * activity kind is on (so the agent's own version queries never show up
 * in the trace); devices come from CUPTI DEVICE records, which the agent
 * asks for when it first enables a kind (cuptiActivityEnableAndDump, so a
 * late attach still gets the devices that already exist) and the consumer
 * turns into one "device.N" key each.  What cannot be found is recorded
 * under "unknown" with the reason, never guessed.
 */
#ifndef AGENT_PROV_H
#define AGENT_PROV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cupti.h>

#include "cupstore.h"

#define AGENT_PROV_UNKNOWN_MAX 16

typedef struct agent_prov {
    bool simulated;              /* CUPTI is cuptop's simulator            */
    char driver_version[96];     /* NVML's string, else from libcuda       */
    char driver_source[32];      /* "nvml" / "cuDriverGetVersion"          */
    char cuda_driver[16];        /* cuDriverGetVersion: "13.0"             */
    char cuda_runtime[16];       /* cudaRuntimeGetVersion: "13.0"          */
    char cupti_version[32];      /* "13.0.1"                               */
    char kernel_release[128];
    char os[160];
    char virt[256];              /* container / VM hints, "" when none     */
    char label[256];             /* CUPTOP_LABEL                           */
    char job[CUPSTORE_JOB_MAX + 1];  /* CUPTOP_JOB; "": the session's id  */
    char rank[16], rank_source[24];  /* the rank and its variable; "" none */
    char local_rank[16];         /* LOCAL_RANK beside another rank source  */
    char world_size[16];         /* the size that goes with the rank source */
    /* item -> why it is unknown */
    const char *unknown_key[AGENT_PROV_UNKNOWN_MAX];
    char unknown_why[AGENT_PROV_UNKNOWN_MAX][96];
    unsigned nunknown;
    bool device_records_on;      /* DEVICE kind enabled                    */
    /* each device.N value stored (agent_prov_device), kept so that a
     * forked child's session has them too: CUPTI dumped the DEVICE
     * records in the parent, the child gets none (the last byte of each
     * stays 0, so a copy made by fork mid-write is still a string) */
    char device[CUPSTORE_DEVICE_MAX][512];
} agent_prov;

struct agent;

/** Collect versions and host facts (session start, before any kind is on). */
void agent_prov_collect(struct agent *a);

/** Only who the process is (label, job, rank), read from its environment:
 *  for a process that steps aside (--only-if) before any library is asked,
 *  so that it still belongs to its job with its rank. */
void agent_prov_identity(struct agent *a);

/** Write the provenance keys into a session's metadata. */
int agent_prov_put(const struct agent *a, cupstore_txn *txn);

/** Ask CUPTI for DEVICE records (once per process; the first time a kind
 *  goes on).  A refusal is noted and the devices stay unknown. */
void agent_prov_enable_devices(struct agent *a);

/** A CUPTI DEVICE record (consumer thread): store it as "device.N". */
void agent_prov_device(struct agent *a, const CUpti_Activity *rec);

/** Format a device record as the "device.N" value (key=value lines). */
void agent_prov_device_format(const CUpti_ActivityDevice5 *d, bool simulated, char *buf,
                              size_t len);

#endif /* AGENT_PROV_H */
