/*
 * export_perfetto_enc.c - the Perfetto writer's encoder state: packets,
 * sequences with their incremental clock and interning, track descriptors,
 * and the tracks and lanes a slice is placed on (a lane's stack keeps its
 * slices nested).  The records, NVTX ranges, health and metadata of
 * export_perfetto.c and export_perfetto_meta.c are written through it.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export_int.h"
#include "export_perfetto_int.h"

static const char *const da_names[DA_MAX] = {
    [DA_BYTES] = "bytes", [DA_TRUNCATED] = "truncated", [DA_END_MISSING] = "end_missing",
    [DA_OPEN] = "open", [DA_DOMAIN] = "domain", [DA_COUNT] = "count",
    [DA_SECONDS] = "seconds", [DA_CORRELATION] = "correlation",
    [DA_THREAD] = "launching thread", [DA_NVTX_RANGE] = "nvtx_range",
};

/* ---- Packets ------------------------------------------------------------- */

void pf_packet_begin(perfetto *f)
{
    f->p.len = 0;
}

/* Frame the built packet as Trace.packet and write it out. */
void pf_packet_end(perfetto *f)
{
    uint8_t hdr[11];
    size_t n = 0;
    if (f->p.err)
        return;
    hdr[n++] = (uint8_t)((F_TRACE_PACKET << 3) | PB_LEN);
    n += pb_varint_at(hdr + n, f->p.len);
    pf_put(f, hdr, n, f->p.b, f->p.len);
}

/* Bytes as valid UTF-8 (protobuf strings must be): invalid sequences
 * become U+FFFD.  Returns a pointer to f->utf8 (or s when already valid). */
static const char *utf8_clean(perfetto *f, const char *s, size_t n, size_t *out_len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, k = 0;
    bool clean = true;
    if (n > EXPORT_DEMANGLE_MAX)
        n = EXPORT_DEMANGLE_MAX;
    while (i < n) {
        unsigned c = u[i];
        size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
                                  : (c & 0xf8) == 0xf0 ? 4 : 0;
        bool ok = len && i + len <= n;
        for (size_t j = 1; ok && j < len; j++)
            ok = (u[i + j] & 0xc0) == 0x80;
        if (ok && len == 2)
            ok = c >= 0xc2;
        if (ok && len == 3) {
            unsigned cp = ((c & 0x0fu) << 12) | ((u[i + 1] & 0x3fu) << 6) | (u[i + 2] & 0x3fu);
            ok = cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff);
        }
        if (ok && len == 4) {
            unsigned cp = ((c & 0x07u) << 18) | ((u[i + 1] & 0x3fu) << 12);
            ok = cp >= 0x10000 && cp <= 0x10ffff;
        }
        if (ok) {
            memcpy(f->utf8 + k, s + i, len);
            k += len;
            i += len;
        } else {
            memcpy(f->utf8 + k, "\xef\xbf\xbd", 3);
            k += 3;
            i++;
            clean = false;
        }
    }
    *out_len = clean ? n : k;
    return clean ? s : f->utf8;
}

void pf_clean_str(perfetto *f, uint32_t field, const char *s, size_t n)
{
    size_t len;
    const char *c = utf8_clean(f, s, n, &len);
    pb_bytes(&f->p, field, c, len);
}

/* ---- Sequences and track descriptors ------------------------------------------ */

/* The first packet of a lane's sequence: incremental state cleared, the
 * lane's track as default, the incremental clock at ts. */
void pf_sequence_start(perfetto *f, pf_lane *l, uint64_t ts, bool default_track)
{
    l->seq = ++f->next_seq;
    l->last_ts = ts;
    pf_packet_begin(f);
    pb *p = &f->p;
    pb_uint(p, F_TP_SEQ_ID, l->seq);
    pb_uint(p, F_TP_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
    size_t d = pb_open(p, F_TP_DEFAULTS);
    pb_uint(p, F_TPD_CLOCK_ID, CLOCK_INCREMENTAL);
    if (default_track) {
        size_t t = pb_open(p, F_TPD_TRACK_EVENT);
        pb_uint(p, F_TED_TRACK_UUID, l->uuid);
        pb_close(p, t);
    }
    pb_close(p, d);
    size_t cs = pb_open(p, F_TP_CLOCK_SNAPSHOT);
    size_t c = pb_open(p, F_CS_CLOCKS);
    pb_uint(p, F_CLK_ID, CLOCK_REALTIME_ID);
    pb_uint(p, F_CLK_TS, ts);
    pb_close(p, c);
    c = pb_open(p, F_CS_CLOCKS);
    pb_uint(p, F_CLK_ID, CLOCK_INCREMENTAL);
    pb_uint(p, F_CLK_TS, ts);
    pb_uint(p, F_CLK_INCREMENTAL, 1);
    pb_close(p, c);
    pb_close(p, cs);
    pf_packet_end(f);
}

/* A TrackDescriptor packet (on sequence 1, the metadata's); pid/tid for a
 * thread track, pid alone for a process track, neither for a plain one. */
void pf_describe(perfetto *f, uint64_t uuid, uint64_t parent, const char *name, int pid,
                 int64_t tid, bool thread, bool process, bool counter, int64_t order)
{
    pb *p = &f->p;
    pf_packet_begin(f);
    pb_uint(p, F_TP_SEQ_ID, 1);
    size_t td = pb_open(p, F_TP_TRACK_DESC);
    pb_uint(p, F_TD_UUID, uuid);
    if (parent)
        pb_uint(p, F_TD_PARENT, parent);
    if (process) {
        size_t pd = pb_open(p, F_TD_PROCESS);
        pb_int(p, F_PD_PID, pid);
        pf_clean_str(f, F_PD_NAME, name, strlen(name));
        if (order >= 0)
            pb_int(p, F_PD_SORT, order);
        pb_close(p, pd);
    } else if (thread) {
        size_t th = pb_open(p, F_TD_THREAD);
        pb_int(p, F_THD_PID, pid);
        pb_int(p, F_THD_TID, tid);
        pf_clean_str(f, F_THD_NAME, name, strlen(name));
        pb_close(p, th);
    } else {
        pf_clean_str(f, F_TD_NAME, name, strlen(name));
        if (order >= 0)
            pb_int(p, F_TD_ORDER, order);
    }
    if (counter) {
        size_t cd = pb_open(p, F_TD_COUNTER);
        pb_close(p, cd);
    }
    pb_close(p, td);
    pf_packet_end(f);
}

/* The process track of pid (described once). */
static uint64_t process_uuid(perfetto *f, uint64_t pid)
{
    char buf[128];
    for (size_t i = 0; i < f->nprocs; i++)
        if (f->procs[i].pid == pid)
            return f->procs[i].uuid;
    uint64_t uuid = ++f->next_uuid;
    if (f->nprocs < sizeof f->procs / sizeof f->procs[0])
        f->procs[f->nprocs++] = (pf_proc){pid, uuid};
    if (f->group)
        snprintf(buf, sizeof buf, "%s", f->group_name);
    else
        snprintf(buf, sizeof buf, "host process %llu", (unsigned long long)pid);
    pf_describe(f, uuid, 0, buf, (int)pid, 0, false, true, false,
                f->group ? (int64_t)f->group_sort : 1);
    return uuid;
}

/* The track of a GPU (its streams are children). */
static uint64_t device_uuid(perfetto *f, unsigned d)
{
    unsigned slot = d < CUPSTORE_DEVICE_MAX ? d : CUPSTORE_DEVICE_MAX;
    char buf[200];
    if (f->dev_uuid[slot])
        return f->dev_uuid[slot];
    const model_prov *pv = f->x->sum.prov;
    if (slot < CUPSTORE_DEVICE_MAX && pv && pv->dev[slot].known)
        snprintf(buf, sizeof buf, "GPU %u: %s", slot, pv->dev[slot].name);
    else if (slot < CUPSTORE_DEVICE_MAX)
        snprintf(buf, sizeof buf, "GPU %u", slot);
    else
        snprintf(buf, sizeof buf, "GPU (unknown device)");
    f->dev_uuid[slot] = ++f->next_uuid;
    pf_describe(f, f->dev_uuid[slot], f->group ? process_uuid(f, f->group) : 0, buf, 0, 0, false,
                false, false, 10 + slot);
    return f->dev_uuid[slot];
}

uint64_t pf_health_uuid(perfetto *f)
{
    if (!f->health_uuid) {
        f->health_uuid = ++f->next_uuid;
        pf_describe(f, f->health_uuid, f->group ? process_uuid(f, f->group) : 0, "cuptop health",
                    0, 0, false, false, false, 0);
    }
    return f->health_uuid;
}

/* ---- Tracks and lanes ---------------------------------------------------------- */

/* pf_track_get's other way: the table grown when half full, then the
 * track found or added. */
pf_track *pf_track_new(perfetto *f, uint64_t pid, uint64_t tid, uint8_t cls,
                       uint16_t device, uint64_t shown)
{
    if ((f->ntracks + 1) * 2 > f->cap) {
        size_t ncap = f->cap ? f->cap * 2 : 64;
        pf_track *nt = calloc(ncap, sizeof *nt);
        if (!nt)
            return NULL;
        for (size_t i = 0; i < f->cap; i++) {
            if (!f->tracks[i].used)
                continue;
            size_t j = pf_track_hash(f->tracks[i].pid, f->tracks[i].tid, f->tracks[i].cls, ncap);
            while (nt[j].used)
                j = (j + 1) & (ncap - 1);
            nt[j] = f->tracks[i];
        }
        free(f->tracks);
        f->tracks = nt;
        f->cap = ncap;
    }
    size_t i = pf_track_hash(pid, tid, cls, f->cap);
    while (f->tracks[i].used &&
           (f->tracks[i].pid != pid || f->tracks[i].tid != tid || f->tracks[i].cls != cls))
        i = (i + 1) & (f->cap - 1);
    pf_track *t = &f->tracks[i];
    if (!t->used) {
        *t = (pf_track){.pid = pid, .tid = tid, .shown = shown, .cls = cls, .device = device,
                         .used = true};
        f->ntracks++;
    }
    return t;
}

/* Describe lane k of t (its uuid is new). */
static void lane_describe(perfetto *f, const pf_track *t, uint32_t k, pf_lane *l)
{
    char buf[160];
    int n;
    l->uuid = ++f->next_uuid;
    switch (t->cls) {
    case CLS_STREAM:
        n = snprintf(buf, sizeof buf, "stream %llu", (unsigned long long)t->shown);
        break;
    case CLS_KIND:
        n = snprintf(buf, sizeof buf, "%s", cupstore_kind_name((unsigned)t->shown));
        break;
    case CLS_NVTX:
        n = snprintf(buf, sizeof buf, "thread %llu NVTX", (unsigned long long)t->shown);
        break;
    case CLS_LOSS:
        n = snprintf(buf, sizeof buf, "loss: %s", cupstore_loss_name((unsigned)t->shown));
        break;
    case CLS_LOST:
        n = snprintf(buf, sizeof buf, "lost on stream %llu (GPU %u)", (unsigned long long)t->shown,
                     (unsigned)t->device);
        break;
    default:
        n = snprintf(buf, sizeof buf, "thread %llu", (unsigned long long)t->shown);
        break;
    }
    if (k && n > 0 && (size_t)n < sizeof buf)
        snprintf(buf + n, sizeof buf - (size_t)n, " (overlap %u)", k);
    uint64_t parent;
    if (t->cls == CLS_STREAM || t->cls == CLS_KIND)
        parent = device_uuid(f, t->device);
    else if (t->cls == CLS_LOSS || t->cls == CLS_LOST)
        parent = f->loss_uuid;
    else
        parent = process_uuid(f, t->pid);
    bool thread = t->cls == CLS_THREAD && k == 0;
    pf_describe(f, l->uuid, thread ? 0 : parent, buf, (int)t->pid, (int64_t)t->shown, thread, false,
                false, t->cls == CLS_STREAM ? (int64_t)(t->shown & 0x7fffffff) + (int64_t)k : -1);
}

/* The lane of t where [s, e] nests (a new one when none does). */
pf_lane *pf_track_place(perfetto *f, pf_track *t, uint64_t s, uint64_t e)
{
    for (uint32_t k = 0;; k++) {
        if (k == t->nlanes) {
            pf_lane *nl = realloc(t->lanes, (k + 1) * sizeof *nl);
            if (!nl)
                return NULL;
            t->lanes = nl;
            memset(&nl[k], 0, sizeof nl[k]);
            t->nlanes++;
            lane_describe(f, t, k, &nl[k]);
            if (k)
                f->overflowed++;
        }
        pf_lane *l = &t->lanes[k];
        if (l->seq && s < l->last_start)
            continue; /* a late record: never reorder a lane's past */
        size_t d = l->depth;
        while (d && l->stack[d - 1] <= s)
            d--;
        if (d && e > l->stack[d - 1])
            continue;
        return l;
    }
}

/* A packet on lane l at ts: sequence id and timestamp delta. */
void pf_lane_packet(perfetto *f, pf_lane *l, uint64_t ts)
{
    pf_packet_begin(f);
    pb_uint(&f->p, F_TP_TIMESTAMP, ts - l->last_ts);
    pb_uint(&f->p, F_TP_SEQ_ID, l->seq);
    l->last_ts = ts;
}

/* pf_lane_pop's work: the ENDs, once there is one to write. */
void pf_lane_pop_ends(perfetto *f, pf_lane *l, uint64_t ts)
{
    while (l->depth && l->stack[l->depth - 1] <= ts) {
        /* An END is half of all packets and always the same but for the
         * time and the sequence: built in place in the chunk (pb_open/
         * pb_close and a second put were a fifth of the export). */
        uint64_t e = l->stack[--l->depth];
        uint8_t *b = pf_small_at(f), *q = b + 2;
        *q++ = (uint8_t)(F_TP_TIMESTAMP << 3 | PB_VARINT);
        q += pb_varint_at(q, e - l->last_ts);
        *q++ = (uint8_t)(F_TP_SEQ_ID << 3 | PB_VARINT);
        q += pb_varint_at(q, l->seq);
        *q++ = (uint8_t)(F_TP_TRACK_EVENT << 3 | PB_LEN);
        *q++ = 2;
        *q++ = (uint8_t)(F_TE_TYPE << 3 | PB_VARINT);
        *q++ = TYPE_SLICE_END;
        b[0] = (uint8_t)(F_TRACE_PACKET << 3 | PB_LEN);
        b[1] = (uint8_t)(q - b - 2);   /* < 128: at most 26 bytes */
        l->last_ts = e;
        pf_small_put(f, b, (size_t)(q - b));
    }
}

/* pf_lane_iid's other way: the map grown when half full, then the key
 * found or given the next iid. */
uint32_t pf_lane_iid_new(pf_lane *l, uint64_t key, bool *fresh)
{
    *fresh = false;
    if ((l->nn + 1) * 2 > l->ncap) {
        size_t ncap = l->ncap ? l->ncap * 2 : 16;
        iid_ent *ne = calloc(ncap, sizeof *ne);
        if (!ne)
            return 0;
        for (size_t i = 0; i < l->ncap; i++) {
            if (!l->names[i].key)
                continue;
            size_t j = pf_iid_hash(l->names[i].key, ncap);
            while (ne[j].key)
                j = (j + 1) & (ncap - 1);
            ne[j] = l->names[i];
        }
        free(l->names);
        l->names = ne;
        l->ncap = ncap;
    }
    size_t i = pf_iid_hash(key, l->ncap);
    while (l->names[i].key && l->names[i].key != key)
        i = (i + 1) & (l->ncap - 1);
    if (!l->names[i].key) {
        l->names[i].key = key;
        l->names[i].iid = (uint32_t)++l->nn;
        *fresh = true;
    }
    return l->names[i].iid;
}

size_t pf_name_stored(perfetto *f, cupstore_txn *txn, uint32_t id, bool kernel, char *buf,
                      size_t cap, bool *found)
{
    const char *raw;
    size_t rl, dl = 0;
    *found = txn && cupstore_name_get(txn, id, &raw, &rl) == 0;
    if (!*found)
        return 0;
    if (!f->x->names.raw && kernel)
        dl = export_demangle(raw, rl, buf, cap);
    if (dl)
        return dl;
    if (rl >= cap)
        rl = cap - 1;
    memcpy(buf, raw, rl);
    return rl;
}

/* The text of a record's name key into f->namebuf; returns its length. */
size_t pf_name_text(perfetto *f, const cupstore_record *r, uint64_t key)
{
    bool found = false;
    size_t n = key < KEY_KIND ? pf_name_stored(f, f->x->txn, r->name_id,
                                               r->kind == CUPSTORE_KIND_KERNEL, f->namebuf,
                                               sizeof f->namebuf, &found)
                              : 0;
    if (found)
        return n;
    if (key >= KEY_CBID && key < KEY_NVTX)
        return (size_t)snprintf(f->namebuf, sizeof f->namebuf, "cbid %u", r->cbid);
    if (key >= KEY_GPU && key < KEY_GPU + (1ull << 40))
        return export_gpu_name(r, f->namebuf, sizeof f->namebuf);
    return (size_t)snprintf(f->namebuf, sizeof f->namebuf, "%s", cupstore_kind_name(r->kind));
}

/* Intern what the BEGIN on l needs: returns the open interned_data mark
 * or SIZE_MAX when nothing is new. */
size_t pf_interned_open(perfetto *f, size_t mark)
{
    return mark != SIZE_MAX ? mark : pb_open(&f->p, F_TP_INTERNED);
}

void pf_intern_da(perfetto *f, pf_lane *l, unsigned da, size_t *mark)
{
    if (l->das & (1u << da))
        return;
    l->das |= 1u << da;
    *mark = pf_interned_open(f, *mark);
    size_t e = pb_open(&f->p, F_ID_ANNOTATION_NAMES);
    pb_uint(&f->p, F_IID, da);
    pb_str(&f->p, F_INAME, da_names[da]);
    pb_close(&f->p, e);
}

void pf_annotate_uint(perfetto *f, unsigned da, uint64_t v)
{
    size_t a = pb_open(&f->p, F_TE_ANNOTATIONS);
    pb_uint(&f->p, F_DA_NAME_IID, da);
    pb_uint(&f->p, F_DA_UINT, v);
    pb_close(&f->p, a);
}

void pf_annotate_bool(perfetto *f, unsigned da)
{
    size_t a = pb_open(&f->p, F_TE_ANNOTATIONS);
    pb_uint(&f->p, F_DA_NAME_IID, da);
    pb_uint(&f->p, F_DA_BOOL, 1);
    pb_close(&f->p, a);
}
