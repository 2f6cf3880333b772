/* tui_dash_ranges.c - NVTX ranges on the dashboard: r chooses a range
 * name, n / N step to the next / previous instance, s to the slowest
 * (again: the next slowest), w turns the selected instance into a mark
 * for e(xport).  The lane above the time axis shows the chosen name's
 * instances.  The range table is read when asked for, then (a live
 * session) once per refresh when it may have changed (tui_ranges.c). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui_int.h"

#define NS 1000000000ull
#define CHOOSER_MAX 500   /* names offered in the chooser (largest total first) */

static bool sess_live(const tui *t)
{
    return t->cur >= 0 && (size_t)t->cur < t->store.n &&
           tui_sess_state_of(&t->store.s[t->cur]) == TUI_ST_RUNNING;
}

/* The session's last time: the final status, else the end of the newest
 * second seen (where an open range is drawn to, and what its mark ends). */
static uint64_t sess_last_ns(const tui *t)
{
    const tui_hist *h = &t->hist;
    if (h->have_final && h->fin.end_ns)
        return h->fin.end_ns;
    uint64_t s = h->len ? h->base + h->len - 1 : t->now_ns / NS;
    return s * NS + NS - 1;
}

/* One short read txn: the row count, and the table when stale (force:
 * whenever it is not loaded yet or may have changed). */
static int ranges_refresh(tui *t, cupstore_env *env)
{
    tui_ranges *r = &t->rv;
    cupstore_txn *txn;
    int rc = cupstore_txn_begin(env, false, &txn);
    if (rc != 0)
        return rc;
    uint64_t rows = 0, now = tui_clock_ns(CLOCK_MONOTONIC);
    rc = cupstore_range_count(txn, &rows);
    if (rc == 0 && tui_ranges_stale(r, sess_live(t), rows, now, r->cost)) {
        rc = tui_ranges_load(r, txn, now);
        r->cost = tui_clock_ns(CLOCK_MONOTONIC) - now;
    }
    cupstore_txn_abort(txn);
    return rc;
}

int tui_dash_ranges_sample(tui *t, cupstore_env *env)
{
    if (!t->rv.name)   /* nobody asked for ranges: nothing read */
        return 0;
    return ranges_refresh(t, env);
}

int tui_dash_ranges_rows(const tui *t)
{
    return t->rv.name ? 2 : 0;
}

/* hh:mm:ss.mmm of a nanosecond time (local time, as the axis). */
static void clock_ms(uint64_t ns, char *buf, size_t len)
{
    char c[16];
    tui_format_clock(ns / NS, c, sizeof c);
    snprintf(buf, len, "%s.%03u", c, (unsigned)(ns % NS / 1000000u));
}

/* Load on demand; false (with the status set) when there is nothing. */
static bool ranges_ready(tui *t)
{
    int err = 0;
    cupstore_env *env = t->cur >= 0 ? tui_store_env(&t->store, (size_t)t->cur, false, &err) : NULL;
    int rc = env ? ranges_refresh(t, env) : (err ? err : CUPSTORE_EINVAL);
    if (rc != 0) {
        tui_set_status(t, TUI_C_BAD, "cannot read the NVTX ranges: %s", cupstore_strerror(rc));
        return false;
    }
    if (!t->rv.m || t->rv.m->nnames == 0) {
        if (t->rv.m && t->rv.m->unbalanced)
            tui_set_status(t, TUI_C_WARN,
                           "no NVTX ranges in this session (%llu unbalanced ends only)",
                           (unsigned long long)t->rv.m->unbalanced);
        else
            tui_set_status(t, TUI_C_WARN, "no NVTX ranges in this session");
        return false;
    }
    return true;
}

static void relayout(tui *t)
{
    tui_screen_ops(TUI_SCR_DASH)->layout(t);
}

static void choose_name(tui *t)
{
    tui_ranges *r = &t->rv;
    if (!ranges_ready(t))
        return;
    const model_ranges *m = r->m;
    size_t n = m->nnames < CHOOSER_MAX ? m->nnames : CHOOSER_MAX;
    size_t extra = r->name ? 1 : 0;
    char (*text)[96] = calloc(n + extra, sizeof *text);
    const char **items = calloc(n + extra, sizeof *items);
    if (!text || !items) {
        free(text);
        free(items);
        tui_set_status(t, TUI_C_BAD, "out of memory");
        return;
    }
    for (size_t k = 0; k < n; k++) {
        char lab[40], tot[16];
        tui_ranges_label(r, k, t->ascii, lab, sizeof lab);
        tui_format_ns((double)m->names[k].total_ns, tot, sizeof tot);
        /* ranges counted as cuptop ranges counts them (COUNT: closed);
         * the open ones and the marks of the name said apart */
        const model_range_name *e = &m->names[k];
        int o = snprintf(text[k], sizeof text[k], "%-24s %6llu x %-7s", lab,
                         (unsigned long long)e->count, tot);
        if (e->open && o > 0 && (size_t)o < sizeof text[k])
            o += snprintf(text[k] + o, sizeof text[k] - (size_t)o, " +%llu open",
                          (unsigned long long)e->open);
        if (e->points && o > 0 && (size_t)o < sizeof text[k])
            snprintf(text[k] + o, sizeof text[k] - (size_t)o, " +%llu mark%s",
                     (unsigned long long)e->points, e->points == 1 ? "" : "s");
        items[k] = text[k];
    }
    if (extra) {
        snprintf(text[n], sizeof text[n], "(hide the ranges)");
        items[n] = text[n];
    }
    char title[64];
    if (m->nnames > n)
        snprintf(title, sizeof title, " NVTX ranges (%zu of %zu) ", n, m->nnames);
    else
        snprintf(title, sizeof title, " NVTX ranges (%zu) ", m->nnames);
    int c = tui_choose(t, title, items, (int)(n + extra));
    free(text);
    free(items);
    if (c < 0) {
        tui_set_status(t, TUI_C_DIM, "range choice cancelled");
        return;
    }
    if ((size_t)c == n) {
        tui_ranges_choose(r, -1);
        relayout(t);
        tui_set_status(t, TUI_C_DIM, "NVTX ranges hidden");
        return;
    }
    if (tui_ranges_choose(r, c) != 0) {
        tui_set_status(t, TUI_C_BAD, "out of memory");
        return;
    }
    relayout(t);
    char lab[64];
    tui_ranges_label(r, (size_t)c, t->ascii, lab, sizeof lab);
    tui_set_status(t, TUI_C_OK, "ranges '%s': n/N next/previous, s slowest, w mark it", lab);
}

static void jump(tui *t, int how)
{
    tui_ranges *r = &t->rv;
    if (!ranges_ready(t))
        return;
    if (r->k < 0) {
        tui_set_status(t, TUI_C_WARN, "no range name chosen: r picks one");
        return;
    }
    char lab[64];
    tui_ranges_label(r, (size_t)r->k, t->ascii, lab, sizeof lab);
    const model_range_name *e = &r->m->names[r->k];
    long i = tui_ranges_jump(r, how, t->dv.cursor);
    if (i < 0) {
        tui_set_status(t, TUI_C_WARN, "'%s': %s", lab,
                       how == TUI_RANGE_SLOWEST ? "no closed instance"
                       : how > 0                ? "no later instance"
                                                : "no earlier instance");
        return;
    }
    const model_range_inst *in = &r->m->inst[i];
    tui_dash_goto(t, in->start_ns / NS);
    r->sel_at = t->dv.cursor;   /* clamped to the history: step on from here */
    char at[24], dur[16], rank[48] = "";
    clock_ms(in->start_ns, at, sizeof at);
    if (model_range_closed(in))
        tui_format_ns((double)in->dur_ns, dur, sizeof dur);
    else
        snprintf(dur, sizeof dur, "%s", model_range_open(in) ? "open" : "point");
    if (r->slow_rank >= 0)
        snprintf(rank, sizeof rank, " (slowest #%ld of %llu)", r->slow_rank + 1,
                 (unsigned long long)e->count);
    tui_set_status(t, TUI_C_OK, "'%s' #%zu of %zu at %s, %s%s", lab, tui_ranges_nth(r, i),
                   e->ntime, at, dur, rank);
}

static void mark_selection(tui *t)
{
    tui_ranges *r = &t->rv;
    if (!ranges_ready(t))
        return;
    uint64_t from, to;
    if (r->sel < 0) {
        tui_set_status(t, TUI_C_WARN, "no range instance selected: n, N or s selects one");
        return;
    }
    if (tui_ranges_window(r, sess_last_ns(t), &from, &to) != 0) {
        tui_set_status(t, TUI_C_WARN, "an instantaneous mark has no window: select a range");
        return;
    }
    char name[sizeof t->dv.sel_mark];
    tui_ranges_mark_name(r, name, sizeof name);
    if (!tui_prompt(t, "Mark name: ", name, sizeof name) || !name[0]) {
        tui_set_status(t, TUI_C_DIM, "mark cancelled");
        return;
    }
    int rc = tui_mark_put_ns(t, name, from, to);
    if (rc != 0) {
        tui_set_status(t, TUI_C_BAD, "mark not stored: %s", cupstore_strerror(rc));
        return;
    }
    snprintf(t->dv.sel_mark, sizeof t->dv.sel_mark, "%s", name);
    char a[24], b[24];
    clock_ms(from, a, sizeof a);
    clock_ms(to, b, sizeof b);
    tui_set_status(t, TUI_C_OK, "mark '%s' stored: %s - %s (e exports it)", name, a, b);
    (void)tui_screen_ops(TUI_SCR_DASH)->sample(t);
}

bool tui_dash_ranges_key(tui *t, int key)
{
    switch (key) {
    case 'r':
        choose_name(t);
        return true;
    case 'n':
        jump(t, TUI_RANGE_NEXT);
        return true;
    case 'N':
        jump(t, TUI_RANGE_PREV);
        return true;
    case 's':
        jump(t, TUI_RANGE_SLOWEST);
        return true;
    case 'w':
        mark_selection(t);
        return true;
    }
    return false;
}

void tui_dash_ranges_info(tui *t, WINDOW *w)
{
    const tui_ranges *r = &t->rv;
    if (!w || !r->name)
        return;
    char lab[64], item[160];
    if (r->k < 0) {
        tui_draw_text(w, 0, 0, tui_color_attr(TUI_C_DIM), "nvtx: the chosen name is gone");
        return;
    }
    const model_range_name *e = &r->m->names[r->k];
    tui_ranges_label(r, (size_t)r->k, t->ascii, lab, sizeof lab);
    int x = tui_draw_textf(w, 0, 0, A_BOLD, "nvtx %s:", lab);
    char p50[16], p90[16], mx[16];
    tui_format_ns((double)e->p50_ns, p50, sizeof p50);
    tui_format_ns((double)e->p90_ns, p90, sizeof p90);
    tui_format_ns((double)e->max_ns, mx, sizeof mx);
    snprintf(item, sizeof item, " %llu range%s", (unsigned long long)e->count,
             e->count == 1 ? "" : "s");
    x = tui_draw_text(w, 0, x, 0, item);
    if (e->open) {
        snprintf(item, sizeof item, " +%llu open", (unsigned long long)e->open);
        x = tui_draw_text(w, 0, x, tui_color_attr(TUI_C_WARN), item);
    }
    if (e->points) {
        snprintf(item, sizeof item, " +%llu points", (unsigned long long)e->points);
        x = tui_draw_text(w, 0, x, 0, item);
    }
    if (e->count) {
        snprintf(item, sizeof item, "  p50 %s p90 %s max %s", p50, p90, mx);
        x = tui_draw_text(w, 0, x, tui_color_attr(TUI_C_DIM), item);
    }
    if (r->sel < 0) {
        tui_draw_text(w, 0, x, tui_color_attr(TUI_C_DIM), "  (n/N next/prev, s slowest)");
        return;
    }
    const model_range_inst *in = &r->m->inst[r->sel];
    char at[24], dur[16];
    clock_ms(in->start_ns, at, sizeof at);
    if (model_range_closed(in))
        tui_format_ns((double)in->dur_ns, dur, sizeof dur);
    else
        snprintf(dur, sizeof dur, "%s", model_range_open(in) ? "open" : "point");
    snprintf(item, sizeof item, "  | #%zu %s %s tid %u depth %u (w: mark)",
             tui_ranges_nth(r, r->sel), at, dur, in->tid, in->depth);
    tui_draw_text(w, 0, x, tui_color_attr(TUI_C_CURSOR), item);
}

void tui_dash_ranges_band(tui *t, WINDOW *w, int y, const tui_axis *a, int ppc, int x0,
                          int width)
{
    const tui_ranges *r = &t->rv;
    if (!w || r->k < 0 || width <= 0 || y >= getmaxy(w))
        return;
    int ncols = (int)((a->points + (size_t)ppc - 1) / (size_t)ppc);
    if (ncols > width)
        ncols = width;
    uint8_t *cells = malloc((size_t)ncols + 1);
    if (!cells)
        return;
    tui_ranges_lane(r, a, ppc, sess_last_ns(t), cells, ncols);
    int lead = width - ncols;   /* right-aligned, as the plots */
    for (int c = 0; c < ncols; c++) {
        uint8_t k = (uint8_t)(cells[c] & ~TUI_LANE_SEL);
        if (k == TUI_LANE_NONE)
            continue;
        attr_t at = cells[c] & TUI_LANE_SEL ? tui_color_attr(TUI_C_CURSOR) | A_BOLD
                                            : tui_color_attr(TUI_C_SERIES1);
        int x = x0 + lead + c;
        if (t->ascii) {
            chtype ch = k == TUI_LANE_RANGE ? '=' : k == TUI_LANE_OPEN ? '~' : '*';
            mvwaddch(w, y, x, ch | at);
        } else {
            static const wchar_t glyph[][2] = {{L' ', 0}, {0x2022, 0}, {0x2504, 0}, {0x2501, 0}};
            cchar_t cc;
            setcchar(&cc, glyph[k], at, 0, NULL);
            mvwadd_wch(w, y, x, &cc);
        }
    }
    free(cells);
}
