/*
 * export_perfetto_int.h - the Perfetto writer's state and encoder, shared by
 * export_perfetto.c (records, health, sessions), export_perfetto_enc.c
 * (packets, sequences, tracks and lanes) and export_perfetto_meta.c (NVTX
 * ranges, metadata).  Not for use outside src/export.
 */
#ifndef CUPTOP_EXPORT_PERFETTO_INT_H
#define CUPTOP_EXPORT_PERFETTO_INT_H

#include "export_int.h"
#include "export_pb.h"

#include <pthread.h>

/* ---- Field numbers (perfetto/protos, see tests/perfetto/) ----------------- */
enum {
    F_TRACE_PACKET = 1,
    /* TracePacket */
    F_TP_TIMESTAMP = 8, F_TP_CLOCK_ID = 58, F_TP_TRACK_EVENT = 11, F_TP_TRACK_DESC = 60,
    F_TP_CHROME_EVENTS = 5, F_TP_CLOCK_SNAPSHOT = 6, F_TP_SEQ_ID = 10, F_TP_INTERNED = 12,
    F_TP_SEQ_FLAGS = 13, F_TP_DEFAULTS = 59, F_TP_COMPRESSED = 50,
    /* TracePacketDefaults, TrackEventDefaults */
    F_TPD_CLOCK_ID = 58, F_TPD_TRACK_EVENT = 11, F_TED_TRACK_UUID = 11,
    /* ClockSnapshot */
    F_CS_CLOCKS = 1, F_CS_PRIMARY = 2, F_CLK_ID = 1, F_CLK_TS = 2, F_CLK_INCREMENTAL = 3,
    /* InternedData */
    F_ID_CATEGORIES = 1, F_ID_NAMES = 2, F_ID_ANNOTATION_NAMES = 3, F_IID = 1, F_INAME = 2,
    /* TrackEvent */
    F_TE_CATEGORY_IIDS = 3, F_TE_NAME_IID = 10, F_TE_NAME = 23, F_TE_TYPE = 9,
    F_TE_TRACK_UUID = 11, F_TE_COUNTER = 30, F_TE_FLOW_OLD = 36, F_TE_TERM_FLOW_OLD = 42,
    F_TE_ANNOTATIONS = 4,
    /* DebugAnnotation */
    F_DA_NAME_IID = 1, F_DA_NAME = 10, F_DA_BOOL = 2, F_DA_UINT = 3, F_DA_STRING = 6,
    /* TrackDescriptor, ProcessDescriptor, ThreadDescriptor */
    F_TD_UUID = 1, F_TD_PARENT = 5, F_TD_NAME = 2, F_TD_PROCESS = 3, F_TD_THREAD = 4,
    F_TD_COUNTER = 8, F_TD_ORDER = 12, F_PD_PID = 1, F_PD_NAME = 6, F_PD_SORT = 3,
    F_THD_PID = 1, F_THD_TID = 2, F_THD_NAME = 5, F_CD_UNIT_NAME = 6,
    /* ChromeEventBundle, ChromeMetadata */
    F_CEB_METADATA = 2, F_CM_NAME = 1, F_CM_STRING = 2, F_CM_JSON = 5,
};
enum { TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };
enum { SEQ_INCREMENTAL_STATE_CLEARED = 1 };
#define CLOCK_REALTIME_ID 1
#define CLOCK_INCREMENTAL 64   /* sequence-scoped clock (64..127)           */

/* Interned name keys: store name ids below 2^32, then synthetic names. */
#define KEY_KIND (1ull << 40)       /* + kind: the kind's name              */
#define KEY_CBID (2ull << 40)       /* + cbid: "cbid N"                     */
#define KEY_NVTX (3ull << 40)       /* + index into model_ranges.names      */
#define KEY_GPU (4ull << 40)        /* + kind << 32 + memcpy aux or memset
                                       memory kind: Kineto's name; + graph
                                       id: "graph <id>"                     */
#define KEY_GNVTX (5ull << 40)      /* + export_gnvtx_label: "graph <id>
                                       (NVTX: <range>)"                     */

/* Debug annotation names (iids, fixed) */
enum { DA_BYTES = 1, DA_TRUNCATED, DA_END_MISSING, DA_OPEN, DA_DOMAIN, DA_COUNT, DA_SECONDS,
       DA_CORRELATION, DA_THREAD, DA_NVTX_RANGE, DA_MAX };

#define FLOW_SLOTS (1u << 16)
#define PF_LANE_NAMES_MAX 65536u     /* interned names per lane before a reset */

/* Track classes (the key of a track with its lanes). */
/* CLS_LOST: the launch ledger's holes of one stream (`shown` = stream id),
 * under the loss group */
enum { CLS_STREAM, CLS_THREAD, CLS_KIND, CLS_NVTX, CLS_LOSS, CLS_LOST };

typedef struct iid_ent {
    uint64_t key;            /* 0: empty                                   */
    uint32_t iid;
} iid_ent;

/* One lane: one Perfetto track, written by one sequence. */
typedef struct pf_lane {
    uint32_t seq;            /* 0: not started (no event yet)              */
    uint64_t uuid;
    uint64_t last_ts;        /* the incremental clock's value              */
    uint64_t last_start;
    uint64_t rt_end;         /* end of the latest runtime call placed here */
    uint64_t *stack;         /* ends of the open slices                    */
    size_t depth, cap;
    iid_ent *names;          /* name key -> iid on this sequence           */
    size_t ncap, nn;
    uint32_t cats;           /* categories interned (bit = kind)           */
    uint32_t das;            /* annotation names interned (bit = DA_*)     */
} pf_lane;

typedef struct pf_track {
    uint64_t pid, tid;       /* key (tid: thread, or stream/kind and device) */
    uint64_t shown;          /* the stream, thread, kind or class it shows */
    uint16_t device;
    bool used;
    uint8_t cls;
    uint32_t nlanes;
    pf_lane *lanes;
} pf_track;

typedef struct pf_flow {
    uint32_t corr;
    bool used;
    uint32_t id;             /* the flow id written on the launch          */
    uint64_t ts;
} pf_flow;

/* A flow id whose flow ended (its GPU record terminated it) at ts: free
 * for a launch that starts after ts (export_perfetto.c, flow_id_take). */
typedef struct pf_free_id {
    uint32_t id;
    uint64_t ts;
} pf_free_id;

typedef struct pf_proc {
    uint64_t pid, uuid;
} pf_proc;

/* The packets' way out (export_perfetto_out.c): deflated chunks, or the
 * output itself when zc is NULL (--uncompressed). */
#define PF_CHUNK (384u * 1024u)   /* packets per compressed_packets        */
#define PF_SMALL 96u              /* the most a packet written in place
                                     (pf_small_at) takes, framed          */
typedef struct pf_out {
    xout *o;
    struct libdeflate_compressor *zc;   /* NULL: packets as they are      */
    uint8_t *buf[2];         /* chunks: one filled, one being deflated    */
    unsigned cur;            /* the one being filled                      */
    size_t len;              /* bytes of packets in it                    */
    uint8_t *z;              /* the deflated chunk                        */
    size_t zcap;
    uint64_t in, chunks;     /* bytes of packets deflated, chunks         */
    /* the worker thread that deflates and writes (threaded) */
    bool threaded, locks, stop;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned job_buf;        /* the chunk handed over, job_len bytes (0:  */
    size_t job_len;          /* none: the worker is idle)                 */
    xout wo;                 /* *o, moved, while the worker writes        */
    uint8_t small[PF_SMALL]; /* a small packet's place when uncompressed  */
} pf_out;

typedef struct perfetto {
    export_ctx *x;
    xout *o;
    pf_out out;
    pb p;                    /* the packet being built                     */
    uint32_t next_seq;
    uint64_t next_uuid;
    pf_track *tracks;
    size_t ntracks, cap;
    pf_proc procs[64];       /* host processes described so far            */
    size_t nprocs;
    uint64_t dev_uuid[CUPSTORE_DEVICE_MAX + 1]; /* device tracks (last: none) */
    uint64_t health_uuid, loss_uuid;
    export_sort sort;
    pf_flow *flows;
    pf_free_id *free_ids;    /* FIFO ring of FLOW_SLOTS ended flow ids     */
    size_t free_head, nfree;
    uint32_t next_flow_id;   /* ids handed out so far (over a --job too)   */
    uint64_t written, zero_ts, overflowed, flows_out, markers_in_ranges, nvtx;
    uint64_t lost_out;            /* launch-ledger holes marked ("lost: ...") */
    export_lost lost;             /* the window's lost rows (export_lost.c)    */
    uint64_t (*lost_at)[2];       /* each row's place: from, to (by row)      */
    bool range_table;
    export_gnvtx *gnvtx;     /* graph launches' NVTX ranges (or NULL)      */
    uint64_t group;          /* --job: the process' group pid, else 0      */
    uint64_t group_sort;
    char group_name[96];
    char namebuf[EXPORT_DEMANGLE_MAX];
    char utf8[3 * EXPORT_DEMANGLE_MAX + 8];
} perfetto;

/* ---- Encoder (export_perfetto_enc.c) ---- */

void pf_packet_begin(perfetto *f);
void pf_packet_end(perfetto *f);
void pf_clean_str(perfetto *f, uint32_t field, const char *s, size_t n);
void pf_describe(perfetto *f, uint64_t uuid, uint64_t parent, const char *name, int pid,
                 int64_t tid, bool thread, bool process, bool counter, int64_t order);
uint64_t pf_health_uuid(perfetto *f);
void pf_sequence_start(perfetto *f, pf_lane *l, uint64_t ts, bool default_track);
uint32_t pf_lane_iid_new(pf_lane *l, uint64_t key, bool *fresh);

static inline size_t pf_iid_hash(uint64_t key, size_t cap)
{
    return (size_t)(key * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
}

/* The iid of a name key on l's sequence (0: no memory); *fresh: first use
 * (the caller interns it in this packet).  A known key is found in line. */
static inline uint32_t pf_lane_iid(pf_lane *l, uint64_t key, bool *fresh)
{
    if ((l->nn + 1) * 2 <= l->ncap) {
        for (size_t i = pf_iid_hash(key, l->ncap); l->names[i].key; i = (i + 1) & (l->ncap - 1))
            if (l->names[i].key == key) {
                *fresh = false;
                return l->names[i].iid;
            }
    }
    return pf_lane_iid_new(l, key, fresh);
}
void pf_lane_packet(perfetto *f, pf_lane *l, uint64_t ts);
void pf_lane_pop_ends(perfetto *f, pf_lane *l, uint64_t ts);
size_t pf_name_text(perfetto *f, const cupstore_record *r, uint64_t key);
/** Name id's text from the names table of txn into buf (demangled when
 *  kernel, unless --mangled); *found false when the table has no such id. */
size_t pf_name_stored(perfetto *f, cupstore_txn *txn, uint32_t id, bool kernel, char *buf,
                      size_t cap, bool *found);
pf_track *pf_track_new(perfetto *f, uint64_t pid, uint64_t tid, uint8_t cls,
                       uint16_t device, uint64_t shown);

static inline size_t pf_track_hash(uint64_t pid, uint64_t tid, uint8_t cls, size_t cap)
{
    return (size_t)((pid * 0x9e3779b97f4a7c15ull) ^ (tid * 0xc2b2ae3d27d4eb4full) ^ cls) &
           (cap - 1);
}

/* The track of (pid, tid, cls), added when new (NULL: no memory).  A track
 * already there is found in line; pf_track_new grows the table (before a
 * lookup, as it always did: the tracks' order, that of their last ENDs,
 * does not change) and adds. */
static inline pf_track *pf_track_get(perfetto *f, uint64_t pid, uint64_t tid, uint8_t cls,
                                     uint16_t device, uint64_t shown)
{
    if ((f->ntracks + 1) * 2 <= f->cap) {
        size_t i = pf_track_hash(pid, tid, cls, f->cap);
        for (pf_track *t = &f->tracks[i]; t->used; t = &f->tracks[i]) {
            if (t->pid == pid && t->tid == tid && t->cls == cls)
                return t;
            i = (i + 1) & (f->cap - 1);
        }
    }
    return pf_track_new(f, pid, tid, cls, device, shown);
}
pf_lane *pf_track_place(perfetto *f, pf_track *t, uint64_t s, uint64_t e);
size_t pf_interned_open(perfetto *f, size_t mark);
void pf_intern_da(perfetto *f, pf_lane *l, unsigned da, size_t *mark);
void pf_annotate_uint(perfetto *f, unsigned da, uint64_t v);
void pf_annotate_bool(perfetto *f, unsigned da);

/* End the open slices of l that end at or before ts (all: UINT64_MAX);
 * nothing to end (a third of the calls) is decided in line. */
static inline void pf_lane_pop(perfetto *f, pf_lane *l, uint64_t ts)
{
    if (l->depth && l->stack[l->depth - 1] <= ts)
        pf_lane_pop_ends(f, l, ts);
}

/* ---- Output (export_perfetto_out.c) ---- */

int pf_out_init(perfetto *f, xout *o, bool deflate);
void pf_put(perfetto *f, const void *a, size_t na, const void *b, size_t nb);
void pf_small_spill(perfetto *f, const uint8_t *d, size_t n);

/* Where the next small packet (at most PF_SMALL bytes, framed) is built in
 * place: the end of the chunk being filled (each chunk buffer has PF_SMALL
 * bytes of slack past PF_CHUNK), or pf_out.small when uncompressed.  The
 * packet is then given to pf_small_put; no other write in between.  The
 * END and the common BEGIN packets (nearly all of them) go this way: no
 * packet buffer, no copy. */
static inline uint8_t *pf_small_at(perfetto *f)
{
    pf_out *u = &f->out;
    return u->zc ? u->buf[u->cur] + u->len : u->small;
}

/* The n bytes built at d = pf_small_at(f) are a packet: keep them. */
static inline void pf_small_put(perfetto *f, uint8_t *d, size_t n)
{
    pf_out *u = &f->out;
    if (__builtin_expect(u->zc && u->len + n <= PF_CHUNK, 1)) {
        u->len += n;
        return;
    }
    pf_small_spill(f, d, n);   /* past the chunk's end, or uncompressed */
}
int pf_out_finish(perfetto *f);
void pf_out_free(perfetto *f);

/* ---- NVTX ranges and metadata (export_perfetto_meta.c) ---- */

int pf_write_nvtx(perfetto *f);
int pf_write_header(perfetto *f);

#endif
