/* tui_dash.c - the session dashboard: per-second plots on a scrollable time
 * axis, loss-class counters, control state, epochs and marks. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui_int.h"

/* A panel's first row: its title, "name value" legend items, the scale
 * label at the right.  Collected first, placed once the scale is known. */
#define LEGEND_MAX (CUPSTORE_DEVICE_MAX + 2)
typedef struct legend_item {
    tui_color c;
    const char *name;
    char value[40];
} legend_item;

typedef struct panel_head {
    const char *title, *abbr;     /* abbr: the title when space is short     */
    legend_item item[LEGEND_MAX];
    int n;
} panel_head;

/* What every panel of one frame shares: the view on the time axis. */
typedef struct dash_frame {
    tui_axis axis;
    int ppc;              /* points per column                              */
    long cursor;          /* cursor point, -1 outside                       */
    double *v;            /* scratch: view of one series                    */
    bool *valid;
    size_t scratch;       /* series slots in v/valid                        */
    panel_head head;      /* the panel being drawn                          */
    WINDOW *tmp_plot;     /* plot below a two-row legend (freed per panel)  */
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

/* Short names for legends in narrow panels; kinds keep a readable stem. */
static const char *legend_abbr(const char *name)
{
    static const char *const map[][2] = {
        {"kernel", "kern"},   {"memcpy", "cpy"},       {"memset", "set"},
        {"runtime", "rt"},    {"driver", "drv"},       {"overhead", "ovh"},
        {"marker", "mark"},   {"other", "oth"},        {"outstanding", "out"},
        {"requests declined", "req.decl"}, {"high-water", "hw"}, {"capacity", "cap"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(map[i][0], name) == 0)
            return map[i][1];
    return name;
}

static void head_begin(dash_frame *f, const char *title, const char *abbr)
{
    memset(&f->head, 0, sizeof f->head);
    f->head.title = title;
    f->head.abbr = abbr ? abbr : title;
}

static void legend_add(dash_frame *f, tui_color c, const char *name, const char *value)
{
    panel_head *p = &f->head;
    if (p->n >= LEGEND_MAX)
        return;
    legend_item *it = &p->item[p->n++];
    it->c = c;
    it->name = name;
    snprintf(it->value, sizeof it->value, "%s", value);
}

static int item_len(const legend_item *it, bool abbr)
{
    return (int)(strlen(abbr ? legend_abbr(it->name) : it->name) + 1 + strlen(it->value));
}

/* Place the items after the title on up to `rows` rows of a panel `width`
 * wide whose row 0 ends at `limit0`, keeping `reserve` columns free at the
 * end of the last row.  x[i], y[i]: where item i goes.  Returns how many
 * items were placed (they are placed in order, none skipped). */
static int legend_place(const panel_head *p, bool abbr, int rows, int width, int limit0,
                        int reserve, int *x, int *y)
{
    int cx = (int)strlen(abbr ? p->abbr : p->title) + 1, cy = 0;
    for (int i = 0; i < p->n; i++) {
        int len = item_len(&p->item[i], abbr);
        for (;;) {
            int limit = cy == 0 ? limit0 : width - 1;
            if (cy == rows - 1)
                limit -= reserve;
            if (cx + len <= limit)
                break;
            if (++cy >= rows)
                return i;
            cx = 0;
        }
        x[i] = cx;
        y[i] = cy;
        cx += len + 1;
    }
    return p->n;
}

/* Draw the panel's first row (and a second one when the legend needs it,
 * the plot giving up that row); returns the window to plot into.  Nothing
 * overlaps: the scale label has its place at the right of row 0, and items
 * that find no room are counted as "+N", never drawn over. */
static WINDOW *head_draw(WINDOW *pw, WINDOW *plot, dash_frame *f, double top, bool ns)
{
    const panel_head *p = &f->head;
    int width = getmaxx(pw);
    char buf[16], lab[20];
    if (ns)
        tui_format_ns(top, buf, sizeof buf);
    else
        tui_format_count(top, buf, sizeof buf);
    snprintf(lab, sizeof lab, "^%s", buf);
    int lab_x = width - 1 - (int)strlen(lab);
    int limit0 = lab_x > 0 ? lab_x - 1 : width - 1;
    int maxrows = getmaxy(plot) >= 3 ? 2 : 1;
    int x[LEGEND_MAX], y[LEGEND_MAX];
    bool abbr = false;
    int rows = 1, placed = 0, reserve = 0;
    /* Full names on one row; then, where the plot can spare a row, full
     * names on two; short names on one; short names on two. */
    typedef struct { bool abbr; int rows; } try_t;
    static const try_t tall[] = {{false, 1}, {false, 2}, {true, 1}, {true, 2}};
    static const try_t low[] = {{false, 1}, {true, 1}, {false, 2}, {true, 2}};
    const try_t *tries = getmaxy(plot) >= 5 ? tall : low;
    for (size_t k = 0; k < 4; k++) {
        if (tries[k].rows > maxrows)
            continue;
        abbr = tries[k].abbr;
        rows = tries[k].rows;
        placed = legend_place(p, abbr, rows, width, limit0, 0, x, y);
        if (placed == p->n)
            break;
    }
    if (placed < p->n) {   /* room for "+N" at the end of the last row */
        reserve = 4;
        placed = legend_place(p, abbr, rows, width, limit0, reserve, x, y);
    }
    int used = 1;
    for (int i = 0; i < placed; i++)
        if (y[i] + 1 > used)
            used = y[i] + 1;
    tui_draw_text(pw, 0, 0, A_BOLD, abbr ? p->abbr : p->title);
    for (int i = 0; i < placed; i++)
        tui_draw_textf(pw, y[i], x[i], tui_color_attr(p->item[i].c), "%s %s",
                       abbr ? legend_abbr(p->item[i].name) : p->item[i].name,
                       p->item[i].value);
    if (placed < p->n) {
        int ly = rows - 1, lx = (ly == 0 ? limit0 : width - 1) - reserve + 1;
        if (placed > 0 && y[placed - 1] == ly && x[placed - 1] + item_len(&p->item[placed - 1], abbr) + 1 > lx)
            lx = x[placed - 1] + item_len(&p->item[placed - 1], abbr) + 1;
        tui_draw_textf(pw, ly, lx, tui_color_attr(TUI_C_DIM), "+%d", p->n - placed);
        if (ly + 1 > used)
            used = ly + 1;
    }
    if (lab_x > 0)
        tui_draw_text(pw, 0, lab_x, tui_color_attr(TUI_C_DIM), lab);
    if (used < 2)
        return plot;
    f->tmp_plot = derwin(pw, getmaxy(pw) - used, getmaxx(plot), used, 0);
    return f->tmp_plot ? f->tmp_plot : plot;
}

static tui_plot_opts plot_opts(tui *t, dash_frame *f, double top)
{
    tui_plot_opts o = {.ascii = t->ascii, .top = top, .cursor = (int)f->cursor};
    return o;
}

/* Scale, head and plot of a panel with one band. */
static void panel_plot(tui *t, WINDOW *pw, WINDOW *plot, dash_frame *f, const tui_series_ref *s,
                       size_t ns, double top, bool ns_scale)
{
    tui_plot_opts o = plot_opts(t, f, top);
    o.top = tui_plot_top(s, ns, f->axis.points, getmaxx(plot), &o);
    WINDOW *pl = head_draw(pw, plot, f, o.top, ns_scale);
    tui_plot_series(pl, s, ns, f->axis.points, &o);
}

static void panel_records(tui *t, WINDOW *pw, WINDOW *plot, dash_frame *f)
{
    head_begin(f, "records/s", "rec/s");
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
        legend_add(f, c, cupstore_kind_name((unsigned)k), val);
    }
    panel_plot(t, pw, plot, f, s, ns, 0.0, false);
}

static void panel_drops(tui *t, WINDOW *pw, WINDOW *plot, dash_frame *f)
{
    head_begin(f, "drops", NULL);
    /* Exact counts by device (CUPTI-reported and agent-side), filled. */
    tui_series_ref s[CUPSTORE_DEVICE_MAX + 1];
    static const char *const dev_names[CUPSTORE_DEVICE_MAX] = {
        "dev0", "dev1", "dev2",  "dev3",  "dev4",  "dev5",  "dev6",  "dev7",
        "dev8", "dev9", "dev10", "dev11", "dev12", "dev13", "dev14", "dev15"};
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
        char val[16];
        tui_format_count(cursor_value(t, id), val, sizeof val);
        legend_add(f, c, d < CUPSTORE_DEVICE_MAX ? dev_names[d] : "host", val);
    }
    if (ns == 0) {
        char val[16];
        tui_format_count(exact_now, val, sizeof val);
        legend_add(f, TUI_C_OK, "exact", val);
    }
    int w = getmaxx(plot);
    tui_plot_opts o = plot_opts(t, f, 0.0);
    o.top = tui_plot_top(s, ns, f->axis.points, w, &o);
    plot = head_draw(pw, plot, f, o.top, false);
    int h = getmaxy(plot);
    int h1 = h >= 2 ? (h + 1) / 2 : h, h2 = h - h1;
    WINDOW *top_band = derwin(plot, h1, w, 0, 0);
    if (top_band) {
        tui_plot_series(top_band, s, ns, f->axis.points, &o);
        delwin(top_band);
    }
    if (h2 <= 0)
        return;
    /* Per-kind estimates: dotted, own band, labelled "est.". */
    WINDOW *est = derwin(plot, h2, w, h1, 0);
    if (!est)
        return;
    tui_series_ref e[CUPSTORE_KIND_MAX];
    char item[CUPSTORE_KIND_MAX][2][40];   /* full and short "kind~value" */
    size_t ne = 0;
    for (int k = 0; k < CUPSTORE_KIND_MAX; k++) {
        const bool *va;
        const double *v = view_series(t, f, (int)(ns + ne), TUI_S_EST_KIND + k, &va);
        if (tui_scale_max(v, va, f->axis.points) <= 0.0)
            continue;
        char val[16];
        tui_format_count(cursor_value(t, TUI_S_EST_KIND + k), val, sizeof val);
        const char *name = cupstore_kind_name((unsigned)k);
        snprintf(item[ne][0], sizeof item[ne][0], " %s~%s", name, val);
        snprintf(item[ne][1], sizeof item[ne][1], " %s~%s", legend_abbr(name), val);
        e[ne++] = (tui_series_ref){v, va, TUI_C_ESTIMATE, TUI_PLOT_DOTS};
    }
    tui_plot_opts eo = plot_opts(t, f, 0.0);
    tui_plot_series(est, e, ne, f->axis.points, &eo);
    /* The label over the band: every kind in full, else short names, else
     * as many as fit and "+N" -- never cut in the middle of a value. */
    char lab[256];
    int room = getmaxx(est);
    for (int form = 0; form < 3; form++) {
        size_t ll = (size_t)snprintf(lab, sizeof lab, "est. by kind:%s", ne ? "" : " none");
        size_t shown = 0;
        for (; shown < ne; shown++) {
            const char *it = item[shown][form ? 1 : 0];
            size_t more = form == 2 && shown + 1 < ne ? 4 : 0;
            if ((int)(ll + strlen(it) + more) > room)
                break;
            ll += (size_t)snprintf(lab + ll, sizeof lab - ll, "%s", it);
        }
        if (shown < ne && form < 2)
            continue;
        if (shown < ne)
            snprintf(lab + ll, sizeof lab - ll, " +%zu", ne - shown);
        break;
    }
    tui_draw_text(est, 0, 0, tui_color_attr(TUI_C_ESTIMATE) | A_DIM, lab);
    delwin(est);
}

static void panel_buffers(tui *t, WINDOW *pw, WINDOW *plot, dash_frame *f)
{
    head_begin(f, "buffers", NULL);
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
    legend_add(f, TUI_C_SERIES0, "outstanding", val);
    tui_format_count(cursor_value(t, TUI_S_BUF_DECLINED), c, sizeof c);
    /* buffer requests (not records: the loss line's "declined" counts
     * those), named apart */
    legend_add(f, TUI_C_BAD, "requests declined", c);
    tui_format_count(cursor_value(t, TUI_S_OVERHEAD), c, sizeof c);
    legend_add(f, TUI_C_SERIES1, "overhead", c);
    tui_series_ref s[3] = {{v1, va[1], TUI_C_BAD, TUI_PLOT_AREA},
                           {v0, va[0], TUI_C_SERIES0, TUI_PLOT_LINE},
                           {v2, va[2], TUI_C_SERIES1, TUI_PLOT_DOTS}};
    panel_plot(t, pw, plot, f, s, 3, top, false);
}

static void panel_queue(tui *t, WINDOW *pw, WINDOW *plot, dash_frame *f)
{
    head_begin(f, "queue", NULL);
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
    legend_add(f, TUI_C_SERIES1, "depth", a);
    tui_format_count(cursor_value(t, TUI_S_Q_HW), a, sizeof a);
    legend_add(f, TUI_C_WARN, "high-water", a);
    tui_format_count(cursor_value(t, TUI_S_Q_CAP), b, sizeof b);
    legend_add(f, TUI_C_DIM, "capacity", b);
    tui_series_ref s[2] = {{d, va[0], TUI_C_SERIES1, TUI_PLOT_AREA},
                           {hw, va[1], TUI_C_WARN, TUI_PLOT_LINE}};
    panel_plot(t, pw, plot, f, s, 2, top, false);
}

static void panel_latency(tui *t, WINDOW *pw, WINDOW *plot, dash_frame *f, const char *name,
                          const char *abbr, int first)
{
    head_begin(f, name, abbr);
    static const char *const q[3] = {"p50", "p99", "max"};
    static const tui_color col[3] = {TUI_C_SERIES0, TUI_C_SERIES3, TUI_C_BAD};
    tui_series_ref s[3];
    for (int i = 0; i < 3; i++) {
        const bool *va;
        const double *v = view_series(t, f, i, first + i, &va);
        s[2 - i] = (tui_series_ref){v, va, col[i], i == 2 ? TUI_PLOT_DOTS : TUI_PLOT_LINE};
        char val[16];
        tui_format_ns(cursor_value(t, first + i), val, sizeof val);
        legend_add(f, col[i], q[i], val);
    }
    panel_plot(t, pw, plot, f, s, 3, 0.0, true);
}

static void panel_cmp_lat(tui *t, WINDOW *pw, WINDOW *plot, dash_frame *f)
{
    panel_latency(t, pw, plot, f, "callback latency", "callback", TUI_S_CMP_P50);
}

static void panel_commit_lat(tui *t, WINDOW *pw, WINDOW *plot, dash_frame *f)
{
    panel_latency(t, pw, plot, f, "store commit", "commit", TUI_S_COMMIT_P50);
}

/* The launch ledger (--ledger): records expected and arrived per second,
 * all kinds, as lines; pending (launched over the grace period ago, not
 * arrived) filled below them: a gap between the lines that stays is a
 * hole in the trace. */
static void panel_ledger(tui *t, WINDOW *pw, WINDOW *plot, dash_frame *f)
{
    head_begin(f, "launch ledger", "ledger");
    const bool *va[3];
    const double *e = view_series(t, f, 0, TUI_S_LEDGER_EXP, &va[0]);
    const double *a = view_series(t, f, 1, TUI_S_LEDGER_ARR, &va[1]);
    const double *p = view_series(t, f, 2, TUI_S_LEDGER_PEND, &va[2]);
    char val[16];
    tui_format_count(cursor_value(t, TUI_S_LEDGER_EXP), val, sizeof val);
    legend_add(f, TUI_C_SERIES0, "expected", val);
    tui_format_count(cursor_value(t, TUI_S_LEDGER_ARR), val, sizeof val);
    legend_add(f, TUI_C_SERIES1, "arrived", val);
    tui_format_count(cursor_value(t, TUI_S_LEDGER_PEND), val, sizeof val);
    legend_add(f, TUI_C_BAD, "pending", val);
    tui_series_ref s[3] = {{p, va[2], TUI_C_BAD, TUI_PLOT_AREA},
                           {e, va[0], TUI_C_SERIES0, TUI_PLOT_LINE},
                           {a, va[1], TUI_C_SERIES1, TUI_PLOT_DOTS}};
    panel_plot(t, pw, plot, f, s, 3, 0.0, false);
}

/* In order of importance: at small sizes the last ones are left out; the
 * launch ledger's only while the session has one (dash_panel). */
static const struct tui_panel_ops dash_panels[TUI_DASH_PANELS] = {
    {.title = "records/s", .draw = panel_records},
    {.title = "drops", .draw = panel_drops},
    {.title = "launch ledger", .draw = panel_ledger},
    {.title = "buffers", .draw = panel_buffers},
    {.title = "queue", .draw = panel_queue},
    {.title = "callback latency", .draw = panel_cmp_lat},
    {.title = "store commit", .draw = panel_commit_lat},
};

/* The i-th panel shown: the ledger's (index 2) skipped without a ledger. */
static const struct tui_panel_ops *dash_panel(const tui_dash_view *v, int i)
{
    return &dash_panels[!v->ledger && i >= 2 ? i + 1 : i];
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
    tui_window_free(&v->win_lane);
    tui_window_free(&v->win_status);
    tui_window_free(&v->win_foot);
}

static void dash_layout(tui *t)
{
    tui_dash_view *v = &t->dv;
    dash_destroy(t);
    v->ledger = tui_ledger_shown(&t->hist);
    v->too_small = !tui_layout_dash_panels(LINES, COLS, tui_banner_rows(t, COLS),
                                           tui_dash_ranges_rows(t),
                                           v->ledger ? TUI_DASH_PANELS : TUI_DASH_PANELS_BASE,
                                           &v->lay);
    if (v->too_small)
        return;
    v->win_header = tui_window(NULL, v->lay.header);
    v->win_banner = tui_window(NULL, v->lay.banner);
    v->win_counters = tui_window(NULL, v->lay.counters);
    v->win_axis = tui_window(NULL, v->lay.axis);
    v->win_lane = tui_window(NULL, v->lay.lane);
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
    int rc = tui_hist_sample(&t->hist, env);
    return rc ? rc : tui_dash_ranges_sample(t, env);
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
    if (v->follow && v->cursor_live)
        v->cursor = last;
    return tui_axis_ending(last, points, v->span);
}

static void dash_draw(tui *t)
{
    tui_dash_view *v = &t->dv;
    if (tui_ledger_shown(&t->hist) != v->ledger)
        dash_layout(t);   /* the launch ledger's panel comes or goes */
    if (v->too_small) {
        erase();
        mvaddstr(0, 0, "Terminal too small (need 40x10). q quits.");
        wnoutrefresh(stdscr);
        return;
    }
    tui_dash_header(t, v->win_header);
    if (v->win_banner) {
        werase(v->win_banner);
        wbkgdset(v->win_banner, ' ' | tui_color_attr(TUI_C_BANNER));
        werase(v->win_banner);
        tui_draw_banner(t, v->win_banner, 0, getmaxy(v->win_banner));
        wbkgdset(v->win_banner, ' ');
        wnoutrefresh(v->win_banner);
    }
    tui_dash_counters(t, v->win_counters);

    dash_frame f;
    memset(&f, 0, sizeof f);
    f.axis = dash_axis(t);
    f.ppc = tui_plot_points_per_col(t->ascii);
    f.cursor = tui_axis_point(&f.axis, v->cursor);
    f.scratch = CUPSTORE_DEVICE_MAX + CUPSTORE_KIND_MAX + 2;
    f.v = malloc(f.scratch * f.axis.points * sizeof *f.v);
    f.valid = malloc(f.scratch * f.axis.points * sizeof *f.valid);
    werase(v->win_axis);
    if (v->win_lane) {
        werase(v->win_lane);
        tui_dash_ranges_info(t, v->win_lane);
    }
    for (int i = 0; i < v->lay.npanels && f.v && f.valid; i++) {
        werase(v->win_panel[i]);
        if (v->win_plot[i])
            dash_panel(v, i)->draw(t, v->win_panel[i], v->win_plot[i], &f);
        if (f.tmp_plot) {
            delwin(f.tmp_plot);
            f.tmp_plot = NULL;
        }
        wnoutrefresh(v->win_panel[i]);
        if (v->lay.panels[i].y != v->lay.panels[0].y)   /* first row: one axis per column */
            continue;
        tui_dash_axis(t, v->win_axis, &f.axis, f.ppc, f.cursor, v->lay.panels[i].x,
                      v->lay.panels[i].w - 1);
        if (v->win_lane)   /* the lane's last row, aligned with the axis */
            tui_dash_ranges_band(t, v->win_lane, getmaxy(v->win_lane) - 1, &f.axis, f.ppc,
                                 v->lay.panels[i].x, v->lay.panels[i].w - 1);
    }
    free(f.v);
    free(f.valid);
    wnoutrefresh(v->win_axis);
    if (v->win_lane)
        wnoutrefresh(v->win_lane);
    tui_draw_status(t, v->win_status);
    static const char *const keys[] = {"F1", "Help ", "<- ->", "Time ", "+-", "Zoom ",
                                       "m/M", "Mark ", "e", "Export ", "r", "Ranges ",
                                       "k", "Kinds ",
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
    v->follow = last >= newest;
    v->cursor_live = v->follow && cur >= newest;
    v->last = last;
    v->cursor = cur;
}

void tui_dash_goto(tui *t, uint64_t s)
{
    tui_dash_view *v = &t->dv;
    uint64_t newest = dash_newest(t);
    uint64_t oldest = t->hist.len ? t->hist.base : newest;
    if (s < oldest)
        s = oldest;
    if (s > newest)
        s = newest;
    tui_axis a = dash_axis(t);
    uint64_t view_last = a.first + a.points * a.span - 1, last = view_last;
    if (s < a.first || s > view_last)   /* out of view: centre it */
        last = s + a.points * a.span / 2;
    if (last >= newest)
        last = newest;
    v->follow = last >= newest;
    v->cursor_live = false;
    v->last = last;
    v->cursor = s;
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
        /* The cursor goes to the oldest second; when the whole session
         * fits in the view, the view keeps following (nothing to scroll). */
        if (t->hist.len) {
            v->cursor = t->hist.base;
            v->cursor_live = false;
            v->last = t->hist.base + dash_points(t) * v->span - 1;
            v->follow = v->last >= dash_newest(t);
        }
        return true;
    case KEY_END:
        v->follow = true;
        v->cursor_live = true;
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
    case 'r':
    case 'n':
    case 'N':
    case 's':
    case 'w':
        return tui_dash_ranges_key(t, key);
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
