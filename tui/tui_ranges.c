/* tui_ranges.c - the NVTX ranges the dashboard shows: the session's range
 * table (model_ranges, loaded once per refresh when it may have changed),
 * the chosen name, the selected instance, stepping through instances, and
 * the lane cells drawn under the plots.  No curses here: plain data in,
 * plain data out (tested in tests/tui/test_tui_pure.c). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui_int.h"

#define NS 1000000000ull

static void forget_open(tui_ranges *r)
{
    free(r->open);
    r->open = NULL;
    r->nopen = 0;
}

void tui_ranges_free(tui_ranges *r)
{
    model_ranges_free(r->m);
    forget_open(r);
    free(r->name);
    free(r->domain);
    memset(r, 0, sizeof *r);
    r->k = r->sel = r->slow_rank = -1;
}

/* Index of the chosen (name, domain) in r->m, or -1.  Names are raw bytes
 * (a NUL inside is possible), so not model_ranges_find's strcmp. */
static long find_chosen(const tui_ranges *r)
{
    if (!r->m || !r->name)
        return -1;
    for (size_t k = 0; k < r->m->nnames; k++) {
        const model_range_name *e = &r->m->names[k];
        if (e->name_len == r->name_len && memcmp(e->name, r->name, r->name_len) == 0 &&
            e->domain_len == r->domain_len && memcmp(e->domain, r->domain, r->domain_len) == 0)
            return (long)k;
    }
    return -1;
}

/* Index in inst[] (marker-id order) of marker id, or -1. */
static long find_id(const model_ranges *m, uint32_t id)
{
    size_t lo = 0, hi = m ? m->ninst : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->inst[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return m && lo < m->ninst && m->inst[lo].id == id ? (long)lo : -1;
}

/* After a load or a choice: the chosen name's index, its open instances
 * (the lane draws them to the end of the view), the selection again. */
static int resolve(tui_ranges *r)
{
    forget_open(r);
    r->k = find_chosen(r);
    long sel = r->sel_id ? find_id(r->m, r->sel_id) : -1;
    if (sel >= 0 && (r->k < 0 || r->m->inst[sel].name != (uint32_t)r->k))
        sel = -1;
    r->sel = sel;
    if (sel < 0) {
        r->sel_id = 0;
        r->slow_rank = -1;
    }
    if (r->k < 0)
        return 0;
    const model_range_name *e = &r->m->names[r->k];
    if (e->open) {
        r->open = malloc(e->open * sizeof *r->open);
        if (!r->open)
            return ENOMEM;
        for (size_t i = 0; i < e->ntime; i++)
            if (model_range_open(&r->m->inst[e->by_time[i]]) && r->nopen < e->open)
                r->open[r->nopen++] = e->by_time[i];
    }
    return 0;
}

int tui_ranges_load(tui_ranges *r, cupstore_txn *txn, uint64_t now_mono)
{
    uint64_t rows = 0;
    int rc = cupstore_range_count(txn, &rows);
    if (rc != 0)
        return rc;
    model_ranges *m = NULL;
    rc = model_ranges_load(txn, NULL, &m);
    if (rc != 0)
        return rc;
    model_ranges_free(r->m);
    r->m = m;
    r->rows = rows;
    r->loaded = true;
    r->loaded_at = now_mono;
    return resolve(r);
}

bool tui_ranges_stale(const tui_ranges *r, bool live, uint64_t rows, uint64_t now_mono,
                      uint64_t cost_ns)
{
    if (!r->loaded)
        return true;
    if (!live)
        return false;
    /* A live session: new rows, or open ranges that may have closed (an
     * end updates its row: the count stays).  Never more often than once
     * a second, nor than ten times the last load's cost. */
    if (rows == r->rows && (!r->m || r->m->open == 0))
        return false;
    uint64_t gap = cost_ns * 10 > NS ? cost_ns * 10 : NS;
    return now_mono - r->loaded_at >= gap;
}

int tui_ranges_choose(tui_ranges *r, long k)
{
    free(r->name);
    free(r->domain);
    r->name = r->domain = NULL;
    r->name_len = r->domain_len = 0;
    r->sel = r->slow_rank = -1;
    r->sel_id = 0;
    if (k >= 0 && r->m && (size_t)k < r->m->nnames) {
        const model_range_name *e = &r->m->names[k];
        r->name = malloc(e->name_len + 1);
        r->domain = malloc(e->domain_len + 1);
        if (!r->name || !r->domain) {
            free(r->name);
            free(r->domain);
            r->name = r->domain = NULL;
            r->k = -1;
            forget_open(r);
            return ENOMEM;
        }
        memcpy(r->name, e->name, e->name_len + 1);
        memcpy(r->domain, e->domain, e->domain_len + 1);
        r->name_len = e->name_len;
        r->domain_len = e->domain_len;
    }
    return resolve(r);
}

long tui_ranges_jump(tui_ranges *r, int how, uint64_t cursor_s)
{
    if (r->k < 0)
        return -1;
    const model_range_name *e = &r->m->names[r->k];
    long i = -1;
    if (how == TUI_RANGE_SLOWEST) {
        if (e->count == 0)
            return -1;
        /* Again: the next slowest (after the last, the slowest again). */
        long rank = r->sel >= 0 && r->slow_rank >= 0 ? r->slow_rank + 1 : 0;
        if ((uint64_t)rank >= e->count)
            rank = 0;
        r->slow_rank = rank;
        i = (long)e->by_dur[rank];
    } else {
        /* From the selection while the cursor is still in its second: the
         * neighbour in time order (also among equal starts; sel_at: where
         * the cursor went, its start second unless clamped); else from the
         * cursor: next = the first instance that starts in the cursor's
         * second or later, previous = the last one that starts before it. */
        if (r->sel >= 0 && r->sel_at == cursor_s) {
            size_t n = tui_ranges_nth(r, r->sel);
            i = model_ranges_nth(r->m, (size_t)r->k, how > 0 ? n + 1 : n - 1);
        } else {
            uint64_t t = how > 0 ? (cursor_s ? cursor_s * NS - 1 : 0) : cursor_s * NS;
            i = model_ranges_step(r->m, (size_t)r->k, t, how > 0 ? 1 : -1);
        }
        if (i >= 0)
            r->slow_rank = -1;
    }
    if (i >= 0) {
        r->sel = i;
        r->sel_id = r->m->inst[i].id;
        r->sel_at = r->m->inst[i].start_ns / NS;
    }
    return i;
}

size_t tui_ranges_nth(const tui_ranges *r, long inst)
{
    if (r->k < 0 || inst < 0)
        return 0;
    const model_range_name *e = &r->m->names[r->k];
    uint64_t s = r->m->inst[inst].start_ns;
    size_t lo = 0, hi = e->ntime;
    while (lo < hi) {   /* first with start >= s, then the equal run */
        size_t mid = lo + (hi - lo) / 2;
        if (r->m->inst[e->by_time[mid]].start_ns < s)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < e->ntime && r->m->inst[e->by_time[lo]].start_ns == s; lo++)
        if (e->by_time[lo] == (size_t)inst)
            return lo + 1;
    return 0;
}

void tui_ranges_label(const tui_ranges *r, size_t k, bool ascii, char *buf, size_t len)
{
    if (!r->m || k >= r->m->nnames || len == 0) {
        if (len)
            buf[0] = '\0';
        return;
    }
    const model_range_name *e = &r->m->names[k];
    char name[96], dom[48];
    model_sanitize(e->name, e->name_len, name, sizeof name, ascii);
    if (e->domain_len) {
        model_sanitize(e->domain, e->domain_len, dom, sizeof dom, ascii);
        snprintf(buf, len, "%s/%s", dom, name);
    } else {
        snprintf(buf, len, "%s", name);
    }
}

int tui_ranges_window(const tui_ranges *r, uint64_t last_ns, uint64_t *from, uint64_t *to)
{
    if (r->sel < 0)
        return EINVAL;
    const model_range_inst *in = &r->m->inst[r->sel];
    if (in->flags & CUPSTORE_RANGE_POINT || !(in->flags & CUPSTORE_RANGE_START))
        return EINVAL;
    *from = in->start_ns;
    *to = model_range_open(in) ? (last_ns > in->start_ns ? last_ns : in->start_ns) : in->end_ns;
    return 0;
}

void tui_ranges_mark_name(const tui_ranges *r, char *buf, size_t len)
{
    char name[48];
    if (r->k < 0 || r->sel < 0) {
        snprintf(buf, len, "range");
        return;
    }
    const model_range_name *e = &r->m->names[r->k];
    size_t n = model_sanitize(e->name, e->name_len, name, sizeof name, true);
    for (size_t i = 0; i < n; i++)   /* one word, safe in a file name */
        if (name[i] == ' ' || name[i] == '/' || name[i] == '?')
            name[i] = '_';
    snprintf(buf, len, "%s-%zu", n ? name : "range", tui_ranges_nth(r, r->sel));
}

/* ---- The lane: one cell per view column -------------------------------- */

void tui_lane_paint(uint8_t *cells, int ncols, const tui_axis *a, int ppc, uint64_t start_ns,
                    uint64_t end_ns, uint8_t kind)
{
    if (ncols <= 0 || ppc <= 0 || a->points == 0 || end_ns < start_ns)
        return;
    uint64_t s0 = start_ns / NS, s1 = end_ns / NS;
    uint64_t vlast = a->first + a->points * a->span - 1;
    if (s1 < a->first || s0 > vlast)
        return;
    long p0 = s0 < a->first ? 0 : tui_axis_point(a, s0);
    long p1 = s1 > vlast ? (long)a->points - 1 : tui_axis_point(a, s1);
    int c0 = tui_axis_col(p0, ppc), c1 = tui_axis_col(p1, ppc);
    for (int c = c0; c <= c1 && c < ncols; c++) {
        if (c < 0)
            continue;
        uint8_t sel = (uint8_t)((cells[c] | kind) & TUI_LANE_SEL);
        uint8_t k = (uint8_t)(cells[c] & ~TUI_LANE_SEL), nk = (uint8_t)(kind & ~TUI_LANE_SEL);
        cells[c] = (uint8_t)((nk > k ? nk : k) | sel);
    }
}

static void paint_inst(const model_range_inst *in, const tui_axis *a, int ppc, uint64_t last_ns,
                       uint8_t *cells, int ncols, uint8_t sel)
{
    if (in->flags & CUPSTORE_RANGE_POINT)
        tui_lane_paint(cells, ncols, a, ppc, in->start_ns, in->start_ns, TUI_LANE_POINT | sel);
    else if (model_range_open(in))
        tui_lane_paint(cells, ncols, a, ppc, in->start_ns,
                       last_ns > in->start_ns ? last_ns : in->start_ns, TUI_LANE_OPEN | sel);
    else if (model_range_closed(in))
        tui_lane_paint(cells, ncols, a, ppc, in->start_ns, in->end_ns, TUI_LANE_RANGE | sel);
}

void tui_ranges_lane(const tui_ranges *r, const tui_axis *a, int ppc, uint64_t last_ns,
                     uint8_t *cells, int ncols)
{
    memset(cells, 0, ncols > 0 ? (size_t)ncols : 0);
    if (r->k < 0 || ncols <= 0)
        return;
    const model_range_name *e = &r->m->names[r->k];
    uint64_t vfirst = a->first * NS, vend = (a->first + a->points * a->span) * NS;
    /* Closed ranges and points that reach into the view start after
     * vfirst - max: a binary search, then the instances in the view. */
    uint64_t from = vfirst > e->max_ns ? vfirst - e->max_ns : 0;
    size_t lo = 0, hi = e->ntime;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->m->inst[e->by_time[mid]].start_ns < from)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < e->ntime; i++) {
        const model_range_inst *in = &r->m->inst[e->by_time[i]];
        if (in->start_ns >= vend)
            break;
        if (!model_range_open(in))
            paint_inst(in, a, ppc, last_ns, cells, ncols, 0);
    }
    for (size_t i = 0; i < r->nopen; i++)
        paint_inst(&r->m->inst[r->open[i]], a, ppc, last_ns, cells, ncols, 0);
    if (r->sel >= 0)
        paint_inst(&r->m->inst[r->sel], a, ppc, last_ns, cells, ncols, TUI_LANE_SEL);
}
