/* tui_dash.c - the session dashboard: per-second plots on a scrollable time
 * axis, loss-class counters, control state, epochs and marks. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui_int.h"

/* What every panel of one frame shares: the view on the time axis. */
typedef struct dash_frame {
    tui_axis axis;
    int ppc;              /* points per column                              */
    long cursor;          /* cursor point, -1 outside                       */
    double *v;            /* scratch: view of one series                    */
    bool *valid;
    size_t scratch;       /* series slots in v/valid                        */
} dash_frame;

struct tui_panel_ops {
    const char *title;
    void (*draw)(tui *t, WINDOW *panel, WINDOW *plot, dash_frame *f);
};

/* Copy series `id` into scratch slot `slot`, bucketed to the view. */
static const double *view_series(tui *t, dash_frame *f, int slot, int id, const bool **valid)
{
    const tui_hist *h = &t->hist;
    double *out = f->v + (size_t)slot * f->axis.points;
    bool *ov = f->valid + (size_t)slot * f->axis.points;
    const double *src = tui_hist_v(h, id);
    const bool *sv = tui_hist_valid(h, id);
    for (size_t p = 0; p < f->axis.points; p++) {
        uint64_t a = f->axis.first + p * f->axis.span, b = a + f->axis.span;
        if (h->len == 0 || b <= h->base || a >= h->base + h->len) {
            out[p] = 0.0;
            ov[p] = false;
            continue;
        }
        size_t ia = a > h->base ? (size_t)(a - h->base) : 0;
        size_t ib = b - h->base < h->len ? (size_t)(b - h->base) : h->len;
        tui_series_bucket(src + ia, sv + ia, ib - ia, ib - ia, out + p, ov + p);
    }
    *valid = ov;
    return out;
}

static double cursor_value(tui *t, int id)
{
    return tui_hist_at(&t->hist, id, t->dv.cursor, NULL);
}

/* "name value" legend items after the title; stops at the edge. */
static void legend(WINDOW *w, int *x, tui_color c, const char *name, const char *value)
{
    int room = getmaxx(w) - *x;
    int need = (int)(strlen(name) + strlen(value)) + 2;
    if (need > room)
        return;
    tui_draw_textf(w, 0, *x, tui_color_attr(c), "%s %s", name, value);
    *x += need;
}

static void title(WINDOW *w, const char *t, int *x)
{
    tui_draw_text(w, 0, 0, A_BOLD, t);
    *x = (int)strlen(t) + 1;
}

static void top_label(WINDOW *w, double top, bool ns)
{
    char buf[16], lab[20];
    if (ns)
        tui_format_ns(top, buf, sizeof buf);
    else
        tui_format_count(top, buf, sizeof buf);
    snprintf(lab, sizeof lab, "^%s", buf);
    int x = getmaxx(w) - 1 - (int)strlen(lab);
    if (x > 0)
        tui_draw_text(w, 0, x, tui_color_attr(TUI_C_DIM), lab);
}

static tui_plot_opts plot_opts(tui *t, dash_frame *f, double top)
{
    tui_plot_opts o = {.ascii = t->ascii, .top = top, .cursor = (int)f->cursor};
    return o;
}

static void panel_records(tui *t, WINDOW *pw, WINDOW *plot, dash_frame *f)
{
    int x;
    title(pw, "records/s", &x);
    tui_series_ref s[CUPSTORE_KIND_MAX];
    size_t ns = 0;
    for (int k = 0; k < CUPSTORE_KIND_MAX; k++) {
        const bool *va;
        const double *v = view_series(t, f, (int)ns, TUI_S_REC_KIND + k, &va);
        if (tui_scale_max(v, va, f->axis.points) <= 0.0)
            continue;
        tui_color c = (tui_color)(TUI_C_SERIES0 + (int)ns % TUI_SERIES_COLORS);
        s[ns++] = (tui_series_ref){v, va, c, TUI_PLOT_LINE};
        char val[16];
        tui_format_count(cursor_value(t, TUI_S_REC_KIND + k), val, sizeof val);
        legend(pw, &x, c, cupstore_kind_name((unsigned)k), val);
    }
    tui_plot_opts o = plot_opts(t, f, 0.0);
    double top = tui_plot_series(plot, s, ns, f->axis.points, &o);
    top_label(pw, top, false);
}

static void panel_drops(tui *t, WINDOW *pw, WINDOW *plot, dash_frame *f)
{
    int x;
    title(pw, "drops", &x);
    int h = getmaxy(plot), w = getmaxx(plot);
    int h1 = h >= 2 ? (h + 1) / 2 : h, h2 = h - h1;
    /* Exact counts by device (CUPTI-reported and agent-side), filled. */
    tui_series_ref s[CUPSTORE_DEVICE_MAX + 1];
    size_t ns = 0;
    double exact_now = 0.0;
    for (int d = 0; d <= CUPSTORE_DEVICE_MAX; d++) {
        int id = d < CUPSTORE_DEVICE_MAX ? TUI_S_DROP_DEV + d : TUI_S_DROP_HOST;
        const bool *va;
        const double *v = view_series(t, f, (int)ns, id, &va);
        exact_now += cursor_value(t, id);
        if (tui_scale_max(v, va, f->axis.points) <= 0.0)
            continue;
        tui_color c = ns == 0 ? TUI_C_BAD : (tui_color)(TUI_C_SERIES0 + (int)ns % TUI_SERIES_COLORS);
        s[ns++] = (tui_series_ref){v, va, c, TUI_PLOT_AREA};
        char val[16], name[12];
        tui_format_count(cursor_value(t, id), val, sizeof val);
        if (d < CUPSTORE_DEVICE_MAX)
            snprintf(name, sizeof name, "dev%d", d);
        else
            snprintf(name, sizeof name, "host");
        legend(pw, &x, c, name, val);
    }
    if (ns == 0) {
        char val[16];
        tui_format_count(exact_now, val, sizeof val);
        legend(pw, &x, TUI_C_OK, "exact", val);
    }
    WINDOW *top_band = derwin(plot, h1, w, 0, 0);
    if (top_band) {
        tui_plot_opts o = plot_opts(t, f, 0.0);
        double top = tui_plot_series(top_band, s, ns, f->axis.points, &o);
        top_label(pw, top, false);
        delwin(top_band);
    }
    if (h2 <= 0)
        return;
    /* Per-kind estimates: dotted, own band, labelled "est.". */
    WINDOW *est = derwin(plot, h2, w, h1, 0);
    if (!est)
        return;
    tui_series_ref e[CUPSTORE_KIND_MAX];
    size_t ne = 0;
    char lab[128] = "est. by kind:";
    size_t ll = strlen(lab);
    for (int k = 0; k < CUPSTORE_KIND_MAX; k++) {
        const bool *va;
        const double *v = view_series(t, f, (int)(ns + ne), TUI_S_EST_KIND + k, &va);
        if (tui_scale_max(v, va, f->axis.points) <= 0.0)
            continue;
        e[ne++] = (tui_series_ref){v, va, TUI_C_ESTIMATE, TUI_PLOT_DOTS};
        char val[16];
        tui_format_count(cursor_value(t, TUI_S_EST_KIND + k), val, sizeof val);
        ll += (size_t)snprintf(lab + ll, ll < sizeof lab ? sizeof lab - ll : 0, " %s~%s",
                               cupstore_kind_name((unsigned)k), val);
        if (ll >= sizeof lab)
            break;
    }
    if (ne == 0)
        snprintf(lab + strlen("est. by kind:"), sizeof lab - strlen("est. by kind:"), " none");
    tui_plot_opts o = plot_opts(t, f, 0.0);
    tui_plot_series(est, e, ne, f->axis.points, &o);
    tui_draw_text(est, 0, 0, tui_color_attr(TUI_C_ESTIMATE) | A_DIM, lab);
    delwin(est);
}

static void panel_buffers(tui *t, WINDOW *pw, WINDOW *plot, dash_frame *f)
{
    int x;
    title(pw, "buffers", &x);
    const bool *va[3];
    const double *v0 = view_series(t, f, 0, TUI_S_BUF_OUT, &va[0]);
    const double *v1 = view_series(t, f, 1, TUI_S_BUF_DECLINED, &va[1]);
    const double *v2 = view_series(t, f, 2, TUI_S_OVERHEAD, &va[2]);
    const bool *lva;
    const double *lim = view_series(t, f, 3, TUI_S_POOL_LIMIT, &lva);
    double top = tui_scale_max(lim, lva, f->axis.points);
    double m = tui_scale_max(v0, va[0], f->axis.points);
    double m1 = tui_scale_max(v1, va[1], f->axis.points);
    double m2 = tui_scale_max(v2, va[2], f->axis.points);
    if (m1 > m)
        m = m1;
    if (m2 > m)
        m = m2;
    if (m > top)
        top = tui_scale_nice(m);
    char a[16], b[16], c[16], val[40];
    tui_format_count(cursor_value(t, TUI_S_BUF_OUT), a, sizeof a);
    tui_format_count(cursor_value(t, TUI_S_POOL_LIMIT), b, sizeof b);
    snprintf(val, sizeof val, "%s/%s", a, b);
    legend(pw, &x, TUI_C_SERIES0, "outstanding", val);
    tui_format_count(cursor_value(t, TUI_S_BUF_DECLINED), c, sizeof c);
    legend(pw, &x, TUI_C_BAD, "declined", c);
    tui_format_count(cursor_value(t, TUI_S_OVERHEAD), c, sizeof c);
    legend(pw, &x, TUI_C_SERIES1, "overhead", c);
    tui_series_ref s[3] = {{v1, va[1], TUI_C_BAD, TUI_PLOT_AREA},
                           {v0, va[0], TUI_C_SERIES0, TUI_PLOT_LINE},
                           {v2, va[2], TUI_C_SERIES1, TUI_PLOT_DOTS}};
    tui_plot_opts o = plot_opts(t, f, top);
    top = tui_plot_series(plot, s, 3, f->axis.points, &o);
    top_label(pw, top, false);
}

static void panel_queue(tui *t, WINDOW *pw, WINDOW *plot, dash_frame *f)
{
    int x;
    title(pw, "queue", &x);
    const bool *va[3];
    const double *d = view_series(t, f, 0, TUI_S_Q_DEPTH, &va[0]);
    const double *hw = view_series(t, f, 1, TUI_S_Q_HW, &va[1]);
    const double *cap = view_series(t, f, 2, TUI_S_Q_CAP, &va[2]);
    double top = tui_scale_max(cap, va[2], f->axis.points);
    double m = tui_scale_max(hw, va[1], f->axis.points);
    if (m > top)
        top = tui_scale_nice(m);
    char a[16], b[16];
    tui_format_count(cursor_value(t, TUI_S_Q_DEPTH), a, sizeof a);
    legend(pw, &x, TUI_C_SERIES1, "depth", a);
    tui_format_count(cursor_value(t, TUI_S_Q_HW), a, sizeof a);
    legend(pw, &x, TUI_C_WARN, "high-water", a);
    tui_format_count(cursor_value(t, TUI_S_Q_CAP), b, sizeof b);
    legend(pw, &x, TUI_C_DIM, "capacity", b);
    tui_series_ref s[2] = {{d, va[0], TUI_C_SERIES1, TUI_PLOT_AREA},
                           {hw, va[1], TUI_C_WARN, TUI_PLOT_LINE}};
    tui_plot_opts o = plot_opts(t, f, top);
    top = tui_plot_series(plot, s, 2, f->axis.points, &o);
    top_label(pw, top, false);
}

static void panel_latency(tui *t, WINDOW *pw, WINDOW *plot, dash_frame *f, const char *name,
                          int first)
{
    int x;
    title(pw, name, &x);
    static const char *const q[3] = {"p50", "p99", "max"};
    static const tui_color col[3] = {TUI_C_SERIES0, TUI_C_SERIES3, TUI_C_BAD};
    tui_series_ref s[3];
    for (int i = 0; i < 3; i++) {
        const bool *va;
        const double *v = view_series(t, f, i, first + i, &va);
        s[2 - i] = (tui_series_ref){v, va, col[i], i == 2 ? TUI_PLOT_DOTS : TUI_PLOT_LINE};
        char val[16];
        tui_format_ns(cursor_value(t, first + i), val, sizeof val);
        legend(pw, &x, col[i], q[i], val);
    }
    tui_plot_opts o = plot_opts(t, f, 0.0);
    double top = tui_plot_series(plot, s, 3, f->axis.points, &o);
    top_label(pw, top, true);
}

static void panel_cmp_lat(tui *t, WINDOW *pw, WINDOW *plot, dash_frame *f)
{
    panel_latency(t, pw, plot, f, "callback latency", TUI_S_CMP_P50);
}

static void panel_commit_lat(tui *t, WINDOW *pw, WINDOW *plot, dash_frame *f)
{
    panel_latency(t, pw, plot, f, "store commit", TUI_S_COMMIT_P50);
}

/* In order of importance: at small sizes the last ones are left out. */
static const struct tui_panel_ops dash_panels[TUI_DASH_PANELS] = {
    {.title = "records/s", .draw = panel_records},
    {.title = "drops", .draw = panel_drops},
    {.title = "buffers", .draw = panel_buffers},
    {.title = "queue", .draw = panel_queue},
    {.title = "callback latency", .draw = panel_cmp_lat},
    {.title = "store commit", .draw = panel_commit_lat},
};

/* ---- Header, counters, axis ------------------------------------------ */

static void draw_header(tui *t, WINDOW *w)
{
    werase(w);
    wbkgdset(w, ' ' | tui_color_attr(TUI_C_HEADER));
    werase(w);
    const tui_sess *s = t->cur >= 0 && (size_t)t->cur < t->store.n ? &t->store.s[t->cur] : NULL;
    if (s) {
        tui_sess_state st = tui_sess_state_of(s);
        bool ok = st == TUI_ST_COMPLETE || (st == TUI_ST_RUNNING && s->sum.complete);
        char id[40];
        model_sanitize(s->id, strlen(s->id), id, sizeof id, true);
        tui_draw_textf(w, 0, 0, A_BOLD, "%s  pid %d  %s  %s  ", id, s->have_sum ? s->sum.pid : 0,
                       tui_sess_state_name(st),
                       ok ? (st == TUI_ST_RUNNING ? "ok so far" : "COMPLETE") : "INCOMPLETE");
        tui_draw_text(w, 0, getcurx(w), 0, s->cmd);
    }
    wbkgdset(w, ' ');
    wnoutrefresh(w);
}

static void draw_counters(tui *t, WINDOW *w)
{
    werase(w);
    const tui_hist *h = &t->hist;
    int rows = getmaxy(w), cols = getmaxx(w);
    int y = 0, x = 0;
    tui_draw_text(w, y, x, A_BOLD, "loss:");
    x = 6;
    for (unsigned c = 0; c < CUPSTORE_LOSS_MAX; c++) {
        char val[16], item[48];
        tui_format_count((double)h->loss_sum[c], val, sizeof val);
        int n = snprintf(item, sizeof item, "%s %s", cupstore_loss_name(c), val);
        if (x + n >= cols && y + 2 < rows) {
            y++;
            x = 6;
        }
        tui_draw_text(w, y, x,
                      h->loss_sum[c] ? tui_color_attr(TUI_C_BAD) : tui_color_attr(TUI_C_DIM),
                      item);
        x += n + 2;
    }
    y = rows - 1;
    char kinds[128];
    x = 0;
    if (h->have_ctl) {
        cupstore_kinds_format(h->ctl.kinds, kinds, sizeof kinds);
        bool applied = h->have_last && h->last.ctl_gen_applied >= h->ctl.gen;
        tui_draw_textf(w, y, x, 0, "control gen %llu [%s] ", (unsigned long long)h->ctl.gen,
                       kinds);
        x = getcurx(w);
        if (applied && h->ctl.result != 0)
            tui_draw_textf(w, y, x, tui_color_attr(TUI_C_BAD), "failed (%d)", (int)h->ctl.result);
        else
            tui_draw_text(w, y, x, tui_color_attr(applied ? TUI_C_OK : TUI_C_WARN),
                          applied ? "applied" : "pending");
        x = getcurx(w) + 2;
    } else {
        tui_draw_text(w, y, x, tui_color_attr(TUI_C_DIM), "control: no requests");
        x = getcurx(w) + 2;
    }
    if (h->have_last) {
        cupstore_kinds_format(h->last.kinds_enabled, kinds, sizeof kinds);
        tui_draw_textf(w, y, x, 0, "epoch %u  kinds %s  ", h->last.epoch, kinds);
        x = getcurx(w);
    }
    if (t->dv.mark_from_set) {
        char c[16];
        tui_format_clock(t->dv.mark_from, c, sizeof c);
        tui_draw_textf(w, y, x, tui_color_attr(TUI_C_MARK), "mark from %s (M: end)", c);
    } else if (h->nmarks) {
        tui_draw_textf(w, y, x, tui_color_attr(TUI_C_DIM), "marks %zu", h->nmarks);
    }
    wnoutrefresh(w);
}

static void axis_put(WINDOW *w, int x0, int width, int col, chtype ch, attr_t a)
{
    if (col >= 0 && col < width)
        mvwaddch(w, 0, x0 + col, ch | a);
}

static void draw_axis(tui *t, WINDOW *w, dash_frame *f, int x0, int width)
{
    const tui_hist *h = &t->hist;
    char lab[32];
    wattron(w, tui_color_attr(TUI_C_DIM));
    if (t->ascii) {
        mvwhline(w, 0, x0, '-', width);
    } else {
        wmove(w, 0, x0);
        whline_set(w, WACS_HLINE, width);
    }
    wattroff(w, tui_color_attr(TUI_C_DIM));
    /* The view is right-aligned: the last point is in the last column. */
    int lead = width - (int)((f->axis.points + (size_t)f->ppc - 1) / (size_t)f->ppc);
    tui_format_clock(f->axis.first, lab, sizeof lab);
    tui_draw_text(w, 0, x0 + (lead > 0 ? lead : 0), tui_color_attr(TUI_C_DIM), lab);
    uint64_t last = f->axis.first + f->axis.points * f->axis.span - 1;
    tui_format_clock(last, lab, sizeof lab);
    if (width > 20)
        tui_draw_text(w, 0, x0 + width - 1 - (int)strlen(lab), tui_color_attr(TUI_C_DIM), lab);
    for (size_t i = 0; i < h->nepochs; i++) {
        long p = tui_axis_point(&f->axis, h->epochs[i].start_ns / 1000000000u);
        if (p < 0)
            continue;
        int col = lead + tui_axis_col(p, f->ppc);
        axis_put(w, x0, width, col, '|', tui_color_attr(TUI_C_EPOCH));
        char e[12];
        snprintf(e, sizeof e, "E%u", h->epochs[i].id);
        for (int k = 0; e[k] && col + 1 + k < width; k++)
            axis_put(w, x0, width, col + 1 + k, (chtype)(unsigned char)e[k],
                     tui_color_attr(TUI_C_EPOCH));
    }
    for (size_t i = 0; i < h->nmarks; i++) {
        long a = tui_axis_point(&f->axis, h->marks[i].from_ns / 1000000000u);
        long b = tui_axis_point(&f->axis, h->marks[i].to_ns / 1000000000u);
        if (a >= 0)
            axis_put(w, x0, width, lead + tui_axis_col(a, f->ppc), '[', tui_color_attr(TUI_C_MARK));
        if (b >= 0)
            axis_put(w, x0, width, lead + tui_axis_col(b, f->ppc), ']', tui_color_attr(TUI_C_MARK));
    }
    if (t->dv.mark_from_set) {
        long a = tui_axis_point(&f->axis, t->dv.mark_from);
        if (a >= 0)
            axis_put(w, x0, width, lead + tui_axis_col(a, f->ppc), '[', tui_color_attr(TUI_C_MARK));
    }
    if (f->cursor >= 0)
        axis_put(w, x0, width, lead + tui_axis_col(f->cursor, f->ppc), '^',
                 tui_color_attr(TUI_C_CURSOR));
}

/* ---- The widget --------------------------------------------------------- */

static void dash_destroy(tui *t)
{
    tui_dash_view *v = &t->dv;
    for (int i = 0; i < TUI_DASH_PANELS; i++) {
        tui_window_free(&v->win_plot[i]);
        tui_window_free(&v->win_panel[i]);
    }
    tui_window_free(&v->win_header);
    tui_window_free(&v->win_banner);
    tui_window_free(&v->win_counters);
    tui_window_free(&v->win_axis);
    tui_window_free(&v->win_status);
    tui_window_free(&v->win_foot);
}

static void dash_layout(tui *t)
{
    tui_dash_view *v = &t->dv;
    dash_destroy(t);
    v->too_small = !tui_layout_dash(LINES, COLS, t->opts->demo_hint != NULL, &v->lay);
    if (v->too_small)
        return;
    v->win_header = tui_window(NULL, v->lay.header);
    v->win_banner = tui_window(NULL, v->lay.banner);
    v->win_counters = tui_window(NULL, v->lay.counters);
    v->win_axis = tui_window(NULL, v->lay.axis);
    v->win_status = tui_window(NULL, v->lay.status);
    v->win_foot = tui_window(NULL, v->lay.footer);
    for (int i = 0; i < v->lay.npanels; i++) {
        v->win_panel[i] = tui_window(NULL, v->lay.panels[i]);
        if (v->win_panel[i] && v->lay.panels[i].h > 1)
            v->win_plot[i] = derwin(v->win_panel[i], v->lay.panels[i].h - 1,
                                    v->lay.panels[i].w - 1, 1, 0);
    }
}

static void dash_enter(tui *t)
{
    tui_dash_view *v = &t->dv;
    if (v->span == 0)
        v->span = 1;
}

static int dash_sample(tui *t)
{
    int err = 0;
    cupstore_env *env = tui_store_env(&t->store, (size_t)t->cur, false, &err);
    if (!env)
        return err;
    return tui_hist_sample(&t->hist, env);
}

/* Points shown: the narrowest plot decides so that all panels align. */
static size_t dash_points(tui *t)
{
    tui_dash_view *v = &t->dv;
    int w = COLS;
    for (int i = 0; i < v->lay.npanels; i++)
        if (v->win_plot[i] && getmaxx(v->win_plot[i]) < w)
            w = getmaxx(v->win_plot[i]);
    return (size_t)(w > 1 ? w : 1) * (size_t)tui_plot_points_per_col(t->ascii);
}

static uint64_t dash_newest(tui *t)
{
    const tui_hist *h = &t->hist;
    return h->len ? h->base + h->len - 1 : t->now_ns / 1000000000u;
}

static tui_axis dash_axis(tui *t)
{
    tui_dash_view *v = &t->dv;
    size_t points = dash_points(t);
    uint64_t last = v->follow ? dash_newest(t) : v->last;
    if (v->follow)
        v->cursor = last;
    return tui_axis_ending(last, points, v->span);
}

static void dash_draw(tui *t)
{
    tui_dash_view *v = &t->dv;
    if (v->too_small) {
        erase();
        mvaddstr(0, 0, "Terminal too small (need 40x10). q quits.");
        wnoutrefresh(stdscr);
        return;
    }
    draw_header(t, v->win_header);
    if (v->win_banner) {
        werase(v->win_banner);
        wbkgdset(v->win_banner, ' ' | tui_color_attr(TUI_C_BANNER));
        werase(v->win_banner);
        tui_draw_text(v->win_banner, 0, 1, tui_color_attr(TUI_C_BANNER), t->opts->demo_hint);
        wbkgdset(v->win_banner, ' ');
        wnoutrefresh(v->win_banner);
    }
    draw_counters(t, v->win_counters);

    dash_frame f;
    memset(&f, 0, sizeof f);
    f.axis = dash_axis(t);
    f.ppc = tui_plot_points_per_col(t->ascii);
    f.cursor = tui_axis_point(&f.axis, v->cursor);
    f.scratch = CUPSTORE_DEVICE_MAX + CUPSTORE_KIND_MAX + 2;
    f.v = malloc(f.scratch * f.axis.points * sizeof *f.v);
    f.valid = malloc(f.scratch * f.axis.points * sizeof *f.valid);
    werase(v->win_axis);
    for (int i = 0; i < v->lay.npanels && f.v && f.valid; i++) {
        werase(v->win_panel[i]);
        if (v->win_plot[i])
            dash_panels[i].draw(t, v->win_panel[i], v->win_plot[i], &f);
        wnoutrefresh(v->win_panel[i]);
        if (v->lay.panels[i].y == v->lay.panels[0].y)   /* first row: one axis per column */
            draw_axis(t, v->win_axis, &f, v->lay.panels[i].x, v->lay.panels[i].w - 1);
    }
    free(f.v);
    free(f.valid);
    wnoutrefresh(v->win_axis);
    tui_draw_status(t, v->win_status);
    static const char *const keys[] = {"F1", "Help ", "<- ->", "Time ", "+-", "Zoom ",
                                       "m/M", "Mark ", "e", "Export ", "k", "Kinds ",
                                       "Esc", "Back ", "F10", "Quit "};
    tui_draw_footer(v->win_foot, keys, sizeof keys / sizeof keys[0]);
}

static uint64_t clamp_add(uint64_t x, int64_t d, uint64_t lo, uint64_t hi)
{
    uint64_t r;
    if (d < 0)
        r = x > lo + (uint64_t)-d ? x - (uint64_t)-d : lo;
    else
        r = x + (uint64_t)d;
    if (r < lo)
        r = lo;
    return r > hi ? hi : r;
}

/* Move the cursor (and the view when the cursor leaves it), or scroll the
 * view by whole pages with the cursor keeping its place. */
static void dash_scroll(tui *t, long delta_points, bool move_cursor)
{
    tui_dash_view *v = &t->dv;
    tui_axis a = dash_axis(t);
    uint64_t newest = dash_newest(t);
    uint64_t oldest = t->hist.len ? t->hist.base : newest;
    uint64_t view_last = a.first + a.points * a.span - 1;
    int64_t d = (int64_t)delta_points * (int64_t)v->span;
    uint64_t cur = clamp_add(v->cursor, d, oldest, newest);
    uint64_t last = view_last;
    if (!move_cursor)
        last = clamp_add(view_last, d, oldest, newest);
    else if (cur < a.first)
        last = view_last - (a.first - cur);
    else if (cur > view_last)
        last = cur;
    if (last >= newest)
        last = newest;
    v->follow = last >= newest && cur >= newest;
    v->last = last;
    v->cursor = cur;
}

static void dash_mark_end(tui *t)
{
    tui_dash_view *v = &t->dv;
    uint64_t a = v->mark_from_set ? v->mark_from : v->cursor, b = v->cursor;
    if (a > b) {
        uint64_t x = a;
        a = b, b = x;
    }
    char name[64];
    snprintf(name, sizeof name, "mark-%zu", t->hist.nmarks + 1);
    if (!tui_prompt(t, "Mark name: ", name, sizeof name) || !name[0]) {
        tui_set_status(t, TUI_C_DIM, "mark cancelled");
        return;
    }
    int rc = tui_mark_put(t, name, a, b);
    if (rc != 0) {
        tui_set_status(t, TUI_C_BAD, "mark not stored: %s", cupstore_strerror(rc));
        return;
    }
    v->mark_from_set = false;
    snprintf(v->sel_mark, sizeof v->sel_mark, "%s", name);
    char ca[16], cb[16];
    tui_format_clock(a, ca, sizeof ca);
    tui_format_clock(b, cb, sizeof cb);
    tui_set_status(t, TUI_C_OK, "mark '%s' stored: %s - %s (e exports it)", name, ca, cb);
    (void)dash_sample(t);
}

static bool dash_on_key(tui *t, int key)
{
    tui_dash_view *v = &t->dv;
    long page = (long)dash_points(t) * 3 / 4;
    switch (key) {
    case KEY_LEFT:
        dash_scroll(t, -1, true);
        return true;
    case KEY_RIGHT:
        dash_scroll(t, 1, true);
        return true;
    case KEY_PPAGE:
        dash_scroll(t, -page, false);
        return true;
    case KEY_NPAGE:
        dash_scroll(t, page, false);
        return true;
    case KEY_HOME:
        if (t->hist.len) {
            v->follow = false;
            v->cursor = t->hist.base;
            v->last = t->hist.base + dash_points(t) * v->span - 1;
            if (v->last >= dash_newest(t))
                v->follow = true;
        }
        return true;
    case KEY_END:
        v->follow = true;
        return true;
    case '+':
    case '=':
    case '-': {
        static const uint64_t spans[] = {1, 2, 5, 10, 30, 60, 300};
        size_t n = sizeof spans / sizeof spans[0], i = 0;
        while (i + 1 < n && spans[i] < v->span)
            i++;
        if (key == '-' && i + 1 < n)
            i++;
        else if (key != '-' && i > 0)
            i--;
        v->span = spans[i];
        tui_set_status(t, TUI_C_DIM, "zoom: %llu s per point", (unsigned long long)v->span);
        return true;
    }
    case 'm':
        v->mark_from = v->cursor;
        v->mark_from_set = true;
        tui_set_status(t, TUI_C_WARN, "mark start set; move the cursor and press M for the end");
        return true;
    case 'M':
        dash_mark_end(t);
        return true;
    case 'e':
        tui_export(t, v->sel_mark[0] ? v->sel_mark : NULL);
        return true;
    case 'k':
    case KEY_F(2):
        tui_set_screen(t, TUI_SCR_KINDS);
        return true;
    case 27:
    case KEY_BACKSPACE:
        if (v->mark_from_set) {
            v->mark_from_set = false;
            tui_set_status(t, TUI_C_DIM, "mark cancelled");
            return true;
        }
        tui_set_screen(t, TUI_SCR_SESSIONS);
        return true;
    }
    return false;
}

const struct tui_widget_ops tui_dash_ops = {
    .name = "dashboard",
    .enter = dash_enter,
    .layout = dash_layout,
    .sample = dash_sample,
    .draw = dash_draw,
    .on_key = dash_on_key,
    .destroy = dash_destroy,
};
