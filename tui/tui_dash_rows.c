/* tui_dash_rows.c - the dashboard's rows around its panels: the header
 * (session, state, verdict), the loss-class counters and control state, and
 * the time axis with the epochs, marks and cursor of the view. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui_int.h"

/* ---- Header, counters, axis ------------------------------------------ */

void tui_dash_header(tui *t, WINDOW *w)
{
    werase(w);
    wbkgdset(w, ' ' | tui_color_attr(TUI_C_HEADER));
    werase(w);
    const tui_sess *s = t->cur >= 0 && (size_t)t->cur < t->store.n ? &t->store.s[t->cur] : NULL;
    if (s) {
        tui_sess_state st = tui_sess_state_of(s);
        bool ok = st == TUI_ST_COMPLETE || (st == TUI_ST_RUNNING && s->sum.complete);
        char id[40], head[128];
        model_sanitize(s->id, strlen(s->id), id, sizeof id, true);
        const char *verdict = ok ? (st == TUI_ST_RUNNING ? "ok so far" : "COMPLETE") : "INCOMPLETE";
        /* State and verdict are never cut: on a narrow terminal the pid
         * (also the id's suffix) goes, then the id keeps its tail. */
        int cols = getmaxx(w);
        snprintf(head, sizeof head, "%s  pid %d  %s  %s  ", id, s->have_sum ? s->sum.pid : 0,
                 tui_sess_state_name(st), verdict);
        if ((int)strlen(head) > cols) {
            int fixed = (int)(strlen(tui_sess_state_name(st)) + strlen(verdict)) + 4;
            int idw = cols - fixed;
            size_t il = strlen(id);
            const char *ids = idw > 0 && il > (size_t)idw ? id + il - (size_t)idw : id;
            snprintf(head, sizeof head, "%.*s  %s  %s", idw > 0 ? idw : 0, ids,
                     tui_sess_state_name(st), verdict);
        }
        int x = tui_draw_text(w, 0, 0, A_BOLD, head);
        /* what it ran on: the label and the first device the agent named */
        const model_prov *p = s->have_sum ? s->sum.prov : NULL;
        char buf[96], lab[64];
        if (p && p->label) {
            model_sanitize(p->label, strlen(p->label), lab, sizeof lab, true);
            x = tui_draw_textf(w, 0, x, A_BOLD, "[%s]  ", lab);
        }
        for (unsigned d = 0; p && d < CUPSTORE_DEVICE_MAX; d++)
            if (p->dev[d].known) {
                /* whole or not at all: "GPU 0: NAME", NAME, "GPU 0
                 * (simulated)"; a cut "(simulat" reads as a defect */
                for (int form = 0; form < 3; form++) {
                    if (form == 0)
                        model_prov_device_label(p, d, buf, sizeof buf);
                    else if (form == 1)
                        snprintf(buf, sizeof buf, "%s", p->dev[d].name);
                    else if (p->dev[d].simulated)
                        snprintf(buf, sizeof buf, "GPU %u (simulated)", d);
                    else
                        break;
                    model_sanitize(buf, strlen(buf), lab, sizeof lab, true);
                    if (x + (int)strlen(lab) <= cols) {
                        x = tui_draw_textf(w, 0, x, 0, "%s  ", lab);
                        break;
                    }
                }
                break;
            }
        tui_draw_text(w, 0, x, 0, s->cmd);
    }
    wbkgdset(w, ' ');
    wnoutrefresh(w);
}

/* Items laid out left to right, wrapping onto the next row while there is
 * one (rows y .. ymax); a last item that finds no row is cut at the edge. */
typedef struct flow {
    WINDOW *w;
    int y, ymax, x, x0;
} flow;

static void flow_item(flow *f, attr_t a, const char *text)
{
    int cols = getmaxx(f->w), n = (int)strlen(text);
    if (f->x > f->x0 && f->x + n > cols && f->y < f->ymax) {
        f->y++;
        f->x = f->x0;
    }
    if (f->x >= cols)
        return;
    f->x = tui_draw_text(f->w, f->y, f->x, a, text) + 2;
}

void tui_dash_counters(tui *t, WINDOW *w)
{
    werase(w);
    const tui_hist *h = &t->hist;
    int rows = getmaxy(w);
    tui_draw_text(w, 0, 0, A_BOLD, "loss:");
    flow fl = {w, 0, rows >= 2 ? rows - 2 : 0, 6, 6};
    /* Lay the classes out first, those with a loss first: one that finds
     * no room is counted ("+N"), never cut ("con"), and the count itself
     * always has room. */
    unsigned order[CUPSTORE_LOSS_MAX], no = 0;
    for (int pass = 0; pass < 2; pass++)
        for (unsigned c = 0; c < CUPSTORE_LOSS_MAX; c++)
            if ((h->live.have_sum && h->live.sum.loss[c]) == (pass == 0))
                order[no++] = c;
    char items[CUPSTORE_LOSS_MAX][48];
    int iy[CUPSTORE_LOSS_MAX], ix[CUPSTORE_LOSS_MAX], px[CUPSTORE_LOSS_MAX + 1],
        py[CUPSTORE_LOSS_MAX + 1];
    unsigned placed = 0;
    int cols = getmaxx(w), y = fl.y, x = fl.x;
    for (unsigned c = 0; c < CUPSTORE_LOSS_MAX; c++) {
        char val[16];
        /* the verdict's counts (model_live), the tail it knows of included */
        uint64_t n = h->live.have_sum ? h->live.sum.loss[order[c]] : 0;
        tui_format_count((double)n, val, sizeof val);
        snprintf(items[c], sizeof items[c], "%s %s", cupstore_loss_name(order[c]), val);
        int len = (int)strlen(items[c]);
        if (x > fl.x0 && x + len > cols && y < fl.ymax)
            y++, x = fl.x0;
        if (x + len > cols)
            break;
        py[placed] = y, px[placed] = x;   /* where the count goes if it is next */
        iy[c] = y, ix[c] = x;
        x += len + 2;
        placed++;
        py[placed] = y, px[placed] = x;
    }
    char more[16] = "";
    while (placed < CUPSTORE_LOSS_MAX) {
        snprintf(more, sizeof more, "+%u", CUPSTORE_LOSS_MAX - placed);
        int my = py[placed], mx = px[placed];
        if (mx + (int)strlen(more) > cols && my < fl.ymax)
            my++, mx = fl.x0;
        if (mx + (int)strlen(more) <= cols || placed == 0) {
            px[placed] = mx, py[placed] = my;
            break;
        }
        placed--;   /* no room for the count: it takes the last class's place */
    }
    for (unsigned c = 0; c < placed; c++) {
        uint64_t n = h->live.have_sum ? h->live.sum.loss[order[c]] : 0;
        tui_draw_text(w, iy[c], ix[c], n ? tui_color_attr(TUI_C_BAD) : tui_color_attr(TUI_C_DIM),
                      items[c]);
    }
    if (placed < CUPSTORE_LOSS_MAX)
        tui_draw_text(w, py[placed], px[placed], tui_color_attr(TUI_C_DIM), more);
    /* The last row: control state, epoch, the mark in progress (with its
     * instruction), then the kinds, longest and least urgent, last. */
    fl = (flow){w, rows - 1, rows - 1, 0, 0};
    char kinds[128], item[192];
    if (h->have_ctl) {
        bool applied = h->have_last && h->last.ctl_gen_applied >= h->ctl.gen;
        if (applied) {
            snprintf(item, sizeof item, "control gen %llu", (unsigned long long)h->ctl.gen);
        } else {
            cupstore_kinds_format(h->ctl.kinds, kinds, sizeof kinds);
            snprintf(item, sizeof item, "control gen %llu [%s]", (unsigned long long)h->ctl.gen,
                     kinds);
        }
        flow_item(&fl, 0, item);
        fl.x -= 1;
        if (applied && h->ctl.result != 0) {
            snprintf(item, sizeof item, "failed (%d)", (int)h->ctl.result);
            flow_item(&fl, tui_color_attr(TUI_C_BAD), item);
        } else {
            flow_item(&fl, tui_color_attr(applied ? TUI_C_OK : TUI_C_WARN),
                      applied ? "applied" : "pending");
        }
    }
    if (h->have_last) {
        snprintf(item, sizeof item, "epoch %u", h->last.epoch);
        flow_item(&fl, 0, item);
    }
    if (t->dv.mark_from_set) {
        char c[16];
        tui_format_clock(t->dv.mark_from, c, sizeof c);
        snprintf(item, sizeof item, "mark from %s (M: end)", c);
        flow_item(&fl, tui_color_attr(TUI_C_MARK), item);
    } else if (h->nmarks) {
        snprintf(item, sizeof item, "marks %zu", h->nmarks);
        flow_item(&fl, tui_color_attr(TUI_C_DIM), item);
    }
    if (tui_agent_disabled(h)) {
        flow_item(&fl, tui_color_attr(TUI_C_BAD),
                  "kinds none: agent off (cuptop report says why)");
    } else if (h->have_last) {
        uint32_t on = tui_kinds_on(h);
        cupstore_kinds_format(on, kinds, sizeof kinds);
        snprintf(item, sizeof item, "kinds %s", on ? kinds : "none");
        if (fl.x + (int)strlen(item) > getmaxx(w)) {
            /* One letter per kind (the kind panel's legend), not cut. */
            static const char letters[] = "KCSRDYOMX";
            size_t n = (size_t)snprintf(item, sizeof item, "kinds ");
            for (unsigned k = 0; k < CUPSTORE_KIND_MAX && n + 1 < sizeof item; k++)
                item[n++] = on & (1u << k) ? letters[k] : '.';
            item[n] = '\0';
        }
        flow_item(&fl, 0, item);
    }
    static const char no_ctl[] = "control: no requests";
    if (!h->have_ctl && fl.x + (int)strlen(no_ctl) <= getmaxx(w))   /* least news: last, if room */
        flow_item(&fl, tui_color_attr(TUI_C_DIM), no_ctl);
    wnoutrefresh(w);
}

/* The axis row of one column of panels: what is drawn where, so that a
 * clock label never covers a marker (epoch, mark, cursor) or another
 * label. */
#define AXIS_MAX_COLS 1024
typedef struct axis_row {
    WINDOW *w;
    int x0, width;
    bool occ[AXIS_MAX_COLS];
} axis_row;

static void axis_put(axis_row *r, int col, chtype ch, attr_t a)
{
    if (col >= 0 && col < r->width && col < AXIS_MAX_COLS) {
        mvwaddch(r->w, 0, r->x0 + col, ch | a);
        r->occ[col] = true;
    }
}

static bool axis_free(const axis_row *r, int col, int len)
{
    if (col < 0 || col + len > r->width || col + len > AXIS_MAX_COLS)
        return false;
    for (int i = col - 1; i <= col + len; i++)   /* and a gap on each side */
        if (i >= 0 && i < r->width && r->occ[i])
            return false;
    return true;
}

#define AXIS_CLOCK_LEN 8   /* tui_format_clock: "hh:mm:ss" */

/* The second a clock label names where it sits: a left label (right false)
 * the first second of its first column, a right label the last second of
 * the column after its end (the view's last column when not moved). */
static uint64_t axis_clock(const tui_axis *axis, int ppc, int lead, int col, int len, bool right)
{
    uint64_t k = right ? (uint64_t)(col + len - lead + 1) * (uint64_t)ppc
                       : (uint64_t)(col - lead) * (uint64_t)ppc;
    if (right)
        return axis->first + (k < axis->points ? k : axis->points) * axis->span - 1;
    return axis->first + (k < axis->points ? k : axis->points - 1) * axis->span;
}

/* Put a clock label at `col`, or the nearest free place within a few
 * columns in direction `dir`, naming the time where it is put (never the
 * time of a column it was moved from); leave it out when there is none. */
static void axis_label(axis_row *r, const tui_axis *axis, int ppc, int lead, int col, int dir)
{
    char lab[32];
    const int len = AXIS_CLOCK_LEN;
    for (int k = 0; k <= 12; k++) {
        int c = col + dir * k;
        if (!axis_free(r, c, len))
            continue;
        tui_format_clock(axis_clock(axis, ppc, lead, c, len, dir < 0), lab, sizeof lab);
        tui_draw_text(r->w, 0, r->x0 + c, tui_color_attr(TUI_C_DIM), lab);
        for (int i = 0; i < len; i++)
            r->occ[c + i] = true;
        return;
    }
}

void tui_dash_axis(tui *t, WINDOW *w, const tui_axis *axis, int ppc, long cursor, int x0,
                   int width)
{
    const tui_hist *h = &t->hist;
    axis_row r;
    memset(&r, 0, sizeof r);
    r.w = w;
    r.x0 = x0;
    r.width = width < AXIS_MAX_COLS ? width : AXIS_MAX_COLS;
    wattron(w, tui_color_attr(TUI_C_DIM));
    if (t->ascii) {
        mvwhline(w, 0, x0, '-', width);
    } else {
        wmove(w, 0, x0);
        whline_set(w, WACS_HLINE, width);
    }
    wattroff(w, tui_color_attr(TUI_C_DIM));
    /* The view is right-aligned: the last point is in the last column. */
    int lead = width - (int)((axis->points + (size_t)ppc - 1) / (size_t)ppc);
    /* Markers first (they matter more than the clock): epoch starts, marks,
     * the cursor; then the epochs' names where they cover no marker. */
    for (size_t i = 0; i < h->nepochs; i++) {
        long p = tui_axis_point(axis, h->epochs[i].start_ns / 1000000000u);
        if (p >= 0)
            axis_put(&r, lead + tui_axis_col(p, ppc), '|', tui_color_attr(TUI_C_EPOCH));
    }
    for (size_t i = 0; i < h->nmarks; i++) {
        long a = tui_axis_point(axis, h->marks[i].from_ns / 1000000000u);
        long b = tui_axis_point(axis, h->marks[i].to_ns / 1000000000u);
        if (a >= 0)
            axis_put(&r, lead + tui_axis_col(a, ppc), '[', tui_color_attr(TUI_C_MARK));
        if (b >= 0)
            axis_put(&r, lead + tui_axis_col(b, ppc), ']', tui_color_attr(TUI_C_MARK));
    }
    if (t->dv.mark_from_set) {
        long a = tui_axis_point(axis, t->dv.mark_from);
        if (a >= 0)
            axis_put(&r, lead + tui_axis_col(a, ppc), '[', tui_color_attr(TUI_C_MARK));
    }
    if (cursor >= 0)
        axis_put(&r, lead + tui_axis_col(cursor, ppc), '^', tui_color_attr(TUI_C_CURSOR));
    for (size_t i = 0; i < h->nepochs; i++) {
        long p = tui_axis_point(axis, h->epochs[i].start_ns / 1000000000u);
        if (p < 0)
            continue;
        char e[12];
        int len = snprintf(e, sizeof e, "E%u", h->epochs[i].id);
        int col = lead + tui_axis_col(p, ppc) + 1;
        bool room = col + len <= r.width;
        for (int k = 0; room && k < len; k++)
            room = !r.occ[col + k];
        for (int k = 0; room && k < len; k++)
            axis_put(&r, col + k, (chtype)(unsigned char)e[k], tui_color_attr(TUI_C_EPOCH));
    }
    /* The clock at both ends of the view, where the markers leave room. */
    if (!axis->points || ppc <= 0)
        return;
    axis_label(&r, axis, ppc, lead, lead > 0 ? lead : 0, 1);
    if (width > 20)
        axis_label(&r, axis, ppc, lead, width - 1 - AXIS_CLOCK_LEN, -1);
}
