/*
 * export_chrome_int.h - the chrome writer's state, shared by
 * export_chrome.c (tracks, records, sessions) and export_chrome_meta.c
 * (health, losses, epochs, metadata, NVTX ranges).  Not for use outside
 * src/export.
 */
#ifndef CUPTOP_EXPORT_CHROME_INT_H
#define CUPTOP_EXPORT_CHROME_INT_H

#include "export_int.h"


#define DEV_PID 1000000000ull     /* + device index; Linux pids stay below */
#define HEALTH_PID 999999990ull
#define OVERLAP_STRIDE (1ull << 22) /* lane k of tid t: t + k * stride;
                                       Linux tids and stream ids stay below */
#define KIND_TID 0x3fff00ull      /* + kind: records with no thread/stream */
#define FLOW_SLOTS (1u << 16)
/* export --job: each process is one group (pid); its GPU tracks are
 * threads of it, device d's from GROUP_GPU_TID(d) (device none: slot 16),
 * 16 overlap lanes apart before they meet the next device's. */
#define GROUP_GPU_TID(d) (0x80000000ull + (uint64_t)((d) < CUPSTORE_DEVICE_MAX ? (d) : CUPSTORE_DEVICE_MAX) * 0x4000000ull)
#define GROUP_GPU_MASK 0x3ffffffull

/* A string literal or "key": number, the literal's length known at compile
 * time (strlen on every key was 5% of a chrome export). */
#define XOUT_LIT(o, lit) xout_put((o), "" lit, sizeof(lit) - 1)
#define PUT_KV_U64(o, k, v) (XOUT_LIT(o, k), xout_u64((o), (v)))

typedef struct lane {
    uint64_t last_start;
    uint64_t *stack;          /* ends of the open slices                   */
    size_t depth, cap;
} lane;

typedef struct track {
    uint64_t pid, tid;        /* tid = stream or thread (lane 0)           */
    bool used;
    uint8_t kind_class;       /* 0 stream, 1 thread, 2 kind track          */
    uint32_t nlanes;
    lane *lanes;
} track;

typedef struct flow_slot {
    uint32_t corr;
    bool used;
    uint64_t ts, pid, tid;
} flow_slot;

typedef struct chrome {
    export_ctx *x;
    xout *o;
    bool first;               /* no event written yet (comma handling)     */
    track *tracks;
    size_t ntracks, cap;
    uint64_t pids[64];
    size_t npids;
    export_sort sort;         /* the reorder window (export_sort.c)        */
    flow_slot *flows;
    uint64_t flow_id;
    uint64_t written, zero_ts, overflowed, flows_out;
    bool range_table;         /* NVTX ranges drawn from the range table    */
    uint64_t markers_in_ranges;   /* MARKER records drawn only as ranges   */
    uint64_t lost_out;            /* launch-ledger holes marked ("lost: ...") */
    export_gnvtx *gnvtx;          /* graph launches' NVTX ranges (or NULL) */
    uint64_t graphs_in_ranges;    /* graph slices named by their range     */
    export_lost lost;             /* the window's lost rows (export_lost.c)    */
    cupstore_txn *lost_txn;       /* names of the rows placed after the scan   */
    char devnames[CUPSTORE_DEVICE_MAX][160];
    uint64_t group;           /* --job: this process' group pid, else 0    */
    uint64_t group_sort;      /* its sort index (the rank)                 */
    char group_name[96];      /* "rank N (pid P)"                          */
    char gpu_name[2][EXPORT_GPU_NAME_MAX];  /* last memcpy, memset name    */
    size_t gpu_name_len[2];
    uint32_t gpu_name_key[2];               /* its aux / memory kind       */
} chrome;

/* The pid of the health counters and loss instants. */
static inline uint64_t chrome_health_pid(const chrome *c)
{
    return c->group ? c->group : HEALTH_PID;
}

struct epochs_arg {
    chrome *c;
    bool first;
    bool events;   /* write instant events rather than metadata entries */
};

/* ---- Small writers and process names (export_chrome.c) ---- */

void chrome_ev_begin(chrome *c);
void chrome_put_ts(chrome *c, uint64_t ns);
void chrome_process_seen(chrome *c, uint64_t pid);

/* ---- Health, losses, epochs, metadata, NVTX (export_chrome_meta.c) ---- */

int chrome_on_health(const cupstore_health *h, void *arg);
int chrome_on_loss(const cupstore_loss_row *r, void *arg);
int chrome_on_epoch(const cupstore_epoch *e, void *arg);
void chrome_write_job_metadata(chrome *c, const export_job *jb);
void chrome_load_devices(chrome *c);
int chrome_write_metadata(chrome *c, cupstore_txn *txn);
void chrome_write_device_props(chrome *c);
bool chrome_has_range_table(export_ctx *x);
int chrome_write_nvtx(chrome *c);

#endif
