/*
 * export_perfetto_meta.c - what the Perfetto export writes besides the
 * records: the NVTX ranges as nested slices on a track per thread, and the
 * trace's metadata (the chrome export's otherData in a ChromeEventBundle).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export_int.h"
#include "export_perfetto_int.h"

/* ---- NVTX ranges ----------------------------------------------------------------- */

struct nvtx_ord {
    uint64_t s, e;
    size_t i;
};

static int nvtx_cmp(const void *a, const void *b)
{
    const struct nvtx_ord *x = a, *y = b;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    if (x->e != y->e)
        return x->e > y->e ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* The window's NVTX ranges as slices on a track per thread ("thread T
 * NVTX"), nested as pushed; open ranges end at the window's end (open),
 * marks are instants. */
int pf_write_nvtx(perfetto *f)
{
    export_ctx *x = f->x;
    cupstore_txn *txn;
    model_ranges *m = NULL;
    int rc = cupstore_txn_begin(x->env, false, &txn);
    if (rc)
        return rc;
    rc = model_ranges_load(txn, NULL, &m);
    cupstore_txn_abort(txn);
    if (rc)
        return rc;
    struct nvtx_ord *ord = calloc(m->ninst ? m->ninst : 1, sizeof *ord);
    size_t n = 0;
    if (!ord) {
        model_ranges_free(m);
        return ENOMEM;
    }
    for (size_t i = 0; i < m->ninst; i++) {
        const model_range_inst *r = &m->inst[i];
        if (r->name == UINT32_MAX || !r->start_ns)
            continue;
        bool open = model_range_open(r), point = r->flags & CUPSTORE_RANGE_POINT;
        uint64_t s = r->start_ns, e = open ? x->to_ns : point ? r->start_ns : r->end_ns;
        if (s > x->to_ns || e < x->from_ns || e < s)
            continue;
        ord[n++] = (struct nvtx_ord){s < x->from_ns ? x->from_ns : s,
                                     e > x->to_ns ? x->to_ns : e, i};
    }
    qsort(ord, n, sizeof *ord, nvtx_cmp);
    for (size_t k = 0; k < n && !rc; k++) {
        const model_range_inst *r = &m->inst[ord[k].i];
        const model_range_name *nm = &m->names[r->name];
        bool open = model_range_open(r), point = r->flags & CUPSTORE_RANGE_POINT;
        uint64_t s = ord[k].s, e = ord[k].e;
        uint64_t pid = f->group ? f->group
                                : r->pid ? r->pid : (uint64_t)(x->sum.pid > 0 ? x->sum.pid : 0);
        pf_track *t = pf_track_get(f, pid, r->tid, CLS_NVTX, CUPSTORE_DEVICE_NONE, r->tid);
        pf_lane *l = t ? pf_track_place(f, t, s, e) : NULL;
        if (!l) {
            rc = ENOMEM;
            break;
        }
        if (!l->seq)
            pf_sequence_start(f, l, s, true);
        pf_lane_pop(f, l, s);
        if (!point) {
            if (l->depth == l->cap) {
                size_t ncap = l->cap ? l->cap * 2 : 4;
                uint64_t *ns = realloc(l->stack, ncap * sizeof *ns);
                if (!ns) {
                    rc = ENOMEM;
                    break;
                }
                l->stack = ns;
                l->cap = ncap;
            }
            l->stack[l->depth++] = e;
        }
        l->last_start = s;
        bool fresh;
        uint32_t iid = pf_lane_iid(l, KEY_NVTX + r->name, &fresh);
        pf_lane_packet(f, l, s);
        pb *p = &f->p;
        size_t im = SIZE_MAX;
        if (fresh) {
            im = pf_interned_open(f, im);
            size_t en = pb_open(p, F_ID_NAMES);
            pb_uint(p, F_IID, iid);
            pf_clean_str(f, F_INAME, nm->name, nm->name_len);
            pb_close(p, en);
        }
        if (!(l->cats & (1u << CUPSTORE_KIND_MARKER))) {
            l->cats |= 1u << CUPSTORE_KIND_MARKER;
            im = pf_interned_open(f, im);
            size_t ec = pb_open(p, F_ID_CATEGORIES);
            pb_uint(p, F_IID, CUPSTORE_KIND_MARKER + 1u);
            pb_str(p, F_INAME, "nvtx");
            pb_close(p, ec);
        }
        if (nm->domain_len)
            pf_intern_da(f, l, DA_DOMAIN, &im);
        if (open)
            pf_intern_da(f, l, DA_OPEN, &im);
        if (im != SIZE_MAX)
            pb_close(p, im);
        size_t te = pb_open(p, F_TP_TRACK_EVENT);
        pb_uint(p, F_TE_TYPE, point ? TYPE_INSTANT : TYPE_SLICE_BEGIN);
        pb_uint(p, F_TE_NAME_IID, iid);
        pb_uint(p, F_TE_CATEGORY_IIDS, CUPSTORE_KIND_MARKER + 1u);
        if (nm->domain_len) {
            size_t a = pb_open(p, F_TE_ANNOTATIONS);
            pb_uint(p, F_DA_NAME_IID, DA_DOMAIN);
            pf_clean_str(f, F_DA_STRING, nm->domain, nm->domain_len);
            pb_close(p, a);
        }
        if (open)
            pf_annotate_bool(f, DA_OPEN);
        pb_close(p, te);
        pf_packet_end(f);
        f->nvtx++;
        rc = p->err ? p->err : f->o->err;
    }
    free(ord);
    model_ranges_free(m);
    return rc;
}

/* ---- Metadata -------------------------------------------------------------------- */

static void meta_entry(perfetto *f, pb *p, const char *name, const char *val, size_t len,
                       bool json)
{
    size_t m = pb_open(p, F_CEB_METADATA);
    pb_str(p, F_CM_NAME, name);
    pf_clean_str(f, json ? F_CM_JSON : F_CM_STRING, val, len);
    pb_close(p, m);
}

/* The trace's first packets: the trace clock (CLOCK_REALTIME, which CUPTI
 * timestamps are), then the metadata as a ChromeEventBundle: the chrome
 * export's otherData object (verdict, reasons, losses, versions, devices,
 * epochs; per rank for --job) and its headline values. */
int pf_write_header(perfetto *f)
{
    export_ctx *x = f->x;
    pb *p = &f->p;
    pf_packet_begin(f);
    pb_uint(p, F_TP_SEQ_ID, 1);
    pb_uint(p, F_TP_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
    size_t cs = pb_open(p, F_TP_CLOCK_SNAPSHOT);
    size_t c = pb_open(p, F_CS_CLOCKS);
    pb_uint(p, F_CLK_ID, CLOCK_REALTIME_ID);
    pb_uint(p, F_CLK_TS, x->base_ns);
    pb_close(p, c);
    pb_uint(p, F_CS_PRIMARY, CLOCK_REALTIME_ID);
    pb_close(p, cs);
    pf_packet_end(f);
    f->next_seq = 1;

    /* the otherData JSON, through a temporary file (xout writes to fds) */
    FILE *tmp = tmpfile();
    if (!tmp)
        return errno;
    xout jo;
    int rc = xout_init(&jo, fileno(tmp));
    if (!rc) {
        xout_putc(&jo, '{');
        rc = export_chrome_metadata(x, &jo);
        xout_putc(&jo, '}');
        int frc = xout_flush(&jo);
        rc = rc ? rc : frc;
        xout_free(&jo);
    }
    long len = rc ? -1 : ftell(tmp);
    char *json = len > 0 ? malloc((size_t)len) : NULL;
    if (!rc && (!json || fseek(tmp, 0, SEEK_SET) != 0 || fread(json, 1, (size_t)len, tmp) !=
                                                            (size_t)len))
        rc = json ? EIO : ENOMEM;
    fclose(tmp);
    if (rc) {
        free(json);
        return rc;
    }
    pf_packet_begin(f);
    pb_uint(p, F_TP_SEQ_ID, 1);
    pb_uint(p, F_TP_TIMESTAMP, x->base_ns);
    pb_uint(p, F_TP_CLOCK_ID, CLOCK_REALTIME_ID);
    size_t ceb = pb_open(p, F_TP_CHROME_EVENTS);
    meta_entry(f, p, "tool", "cuptop", 6, false);
    meta_entry(f, p, "cuptop_version", PACKAGE_VERSION, strlen(PACKAGE_VERSION), false);
    if (x->job) {
        const model_job *j = &x->job->j;
        meta_entry(f, p, "job", j->id, strlen(j->id), false);
        const char *v = j->complete ? "COMPLETE" : "INCOMPLETE";
        meta_entry(f, p, "verdict", v, strlen(v), false);
    } else {
        const model_summary *s = &x->sum;
        const char *v = model_verdict_name(s);
        meta_entry(f, p, "session", s->id, strlen(s->id), false);
        meta_entry(f, p, "verdict", v, strlen(v), false);
    }
    meta_entry(f, p, "otherData", json, (size_t)len, true);
    pb_close(p, ceb);
    pf_packet_end(f);
    free(json);
    return p->err ? p->err : f->o->err;
}
