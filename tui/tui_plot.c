/* tui_plot.c - pure plotting: scaling, braille cells, series into a WINDOW. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tui.h"

double tui_scale_max(const double *v, const bool *valid, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++)
        if ((!valid || valid[i]) && v[i] > m)
            m = v[i];
    return m;
}

double tui_scale_nice(double max)
{
    if (!(max > 1.0))
        return 1.0;
    double p = pow(10.0, floor(log10(max)));
    static const double steps[] = {1.0, 2.0, 5.0, 10.0};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (max <= steps[i] * p * (1.0 + 1e-12))
            return steps[i] * p;
    return 10.0 * p;
}

int tui_scale_level(double value, double top, int levels)
{
    if (!(value > 0.0) || levels <= 0)
        return 0;
    if (!(top > 0.0))
        return levels;
    double l = value / top * (double)levels;
    int lv = (int)lround(l);
    if (lv < 1)
        lv = 1;
    if (lv > levels)
        lv = levels;
    return lv;
}

size_t tui_series_bucket(const double *src, const bool *valid, size_t n, size_t factor,
                         double *dst, bool *dvalid)
{
    if (factor == 0)
        factor = 1;
    size_t out = 0;
    for (size_t i = 0; i < n; i += factor, out++) {
        double m = 0.0;
        bool any = false;
        for (size_t j = i; j < n && j < i + factor; j++) {
            if (valid && !valid[j])
                continue;
            if (!any || src[j] > m)
                m = src[j];
            any = true;
        }
        dst[out] = any ? m : 0.0;
        dvalid[out] = any;
    }
    return out;
}

unsigned tui_braille_bit(int x, int y)
{
    static const unsigned bits[2][4] = {{0x01, 0x02, 0x04, 0x40}, {0x08, 0x10, 0x20, 0x80}};
    if (x < 0 || x > 1 || y < 0 || y > 3)
        return 0;
    return bits[x][y];
}

unsigned tui_braille_char(unsigned bits)
{
    return 0x2800u + (bits & 0xffu);
}

unsigned tui_braille_fill(int x, int fill)
{
    unsigned b = 0;
    for (int i = 0; i < fill && i < 4; i++)
        b |= tui_braille_bit(x, 3 - i);
    return b;
}

int tui_plot_points_per_col(bool ascii)
{
    return ascii ? 1 : 2;
}

chtype tui_plot_ascii_glyph(tui_plot_style style, int fill)
{
    static const chtype area[5] = {' ', '_', '-', '=', '#'};
    if (fill <= 0)
        return ' ';
    if (fill > 4)
        fill = 4;
    switch (style) {
    case TUI_PLOT_AREA:
        return area[fill];
    case TUI_PLOT_LINE:
        return '*';
    case TUI_PLOT_DOTS:
        return 'o';
    }
    return '?';
}

/* A scratch grid: per cell the braille bits (or ASCII glyph) and colour. */
struct plot_grid {
    int rows, cols;
    unsigned *bits;      /* braille bits, or ASCII glyph                    */
    signed char *color;  /* series colour, -1 for empty                     */
};

static void grid_set(struct plot_grid *g, int row, int col, unsigned bits, tui_color c,
                     bool ascii)
{
    if (row < 0 || row >= g->rows || col < 0 || col >= g->cols || bits == 0)
        return;
    size_t i = (size_t)row * (size_t)g->cols + (size_t)col;
    if (ascii) {
        if (g->bits[i] == 0)   /* first series wins the cell                 */
            g->bits[i] = bits;
    } else {
        g->bits[i] |= bits;
    }
    if (g->color[i] < 0)
        g->color[i] = (signed char)c;
}

/* Dots from level lo to hi (1-based, inclusive) in dot column dc. */
static void grid_dots(struct plot_grid *g, int dc, int lo, int hi, tui_color c)
{
    int col = dc / 2, x = dc % 2;
    for (int l = lo; l <= hi; l++) {
        int from_bottom = l - 1;               /* 0 = lowest dot row        */
        int row = g->rows - 1 - from_bottom / 4;
        int y = 3 - from_bottom % 4;
        grid_set(g, row, col, tui_braille_bit(x, y), c, false);
    }
}

static void grid_ascii(struct plot_grid *g, int col, int level, tui_plot_style st, tui_color c)
{
    int full = level / 4, part = level % 4;
    if (st == TUI_PLOT_AREA) {
        for (int r = 0; r < full; r++)
            grid_set(g, g->rows - 1 - r, col, tui_plot_ascii_glyph(st, 4), c, true);
        if (part)
            grid_set(g, g->rows - 1 - full, col, tui_plot_ascii_glyph(st, part), c, true);
    } else {
        int row = g->rows - 1 - (level - 1) / 4;
        grid_set(g, row, col, tui_plot_ascii_glyph(st, 4), c, true);
    }
}

double tui_plot_top(const tui_series_ref *s, size_t ns, size_t n, int cols,
                    const tui_plot_opts *o)
{
    if (o->top > 0.0)
        return o->top;
    size_t cap = (size_t)(cols > 0 ? cols : 0) * (size_t)tui_plot_points_per_col(o->ascii);
    size_t skip = n > cap ? n - cap : 0;
    double m = 0.0;
    for (size_t k = 0; k < ns; k++) {
        double mk = tui_scale_max(s[k].v + skip, s[k].valid ? s[k].valid + skip : NULL, n - skip);
        if (mk > m)
            m = mk;
    }
    return tui_scale_nice(m);
}

double tui_plot_series(WINDOW *w, const tui_series_ref *s, size_t ns, size_t n,
                       const tui_plot_opts *o)
{
    int rows = getmaxy(w), cols = getmaxx(w);
    if (rows <= 0 || cols <= 0)
        return 0.0;
    int ppc = tui_plot_points_per_col(o->ascii);
    size_t cap = (size_t)cols * (size_t)ppc;
    size_t skip = n > cap ? n - cap : 0;          /* oldest points not shown */
    size_t shown = n - skip;
    size_t offset = cap - shown;                  /* right-aligned           */

    double top = tui_plot_top(s, ns, n, cols, o);

    struct plot_grid g = {rows, cols, NULL, NULL};
    size_t cells = (size_t)rows * (size_t)cols;
    g.bits = calloc(cells, sizeof *g.bits);
    g.color = malloc(cells);
    if (!g.bits || !g.color) {
        free(g.bits);
        free(g.color);
        return top;
    }
    memset(g.color, -1, cells);

    int levels = rows * 4;
    for (size_t k = 0; k < ns; k++) {
        int prev = -1;
        for (size_t p = 0; p < shown; p++) {
            size_t i = skip + p;
            if (s[k].valid && !s[k].valid[i]) {
                prev = -1;
                continue;
            }
            int lv = tui_scale_level(s[k].v[i], top, levels);
            int dc = (int)(offset + p);
            if (lv > 0) {
                if (o->ascii) {
                    grid_ascii(&g, dc, lv, s[k].style, s[k].color);
                } else if (s[k].style == TUI_PLOT_AREA) {
                    grid_dots(&g, dc, 1, lv, s[k].color);
                } else if (s[k].style == TUI_PLOT_LINE && prev > 0) {
                    /* connect to the previous point vertically            */
                    grid_dots(&g, dc, prev < lv ? prev : lv, prev > lv ? prev : lv,
                              s[k].color);
                } else {
                    grid_dots(&g, dc, lv, lv, s[k].color);
                }
            }
            prev = lv;
        }
    }

    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++) {
            size_t i = (size_t)r * (size_t)cols + (size_t)c;
            if (!g.bits[i])
                continue;
            attr_t a = tui_color_attr((tui_color)g.color[i]);
            if (o->ascii) {
                mvwaddch(w, r, c, (chtype)g.bits[i] | a);
            } else {
                wchar_t wc[2] = {(wchar_t)tui_braille_char(g.bits[i]), L'\0'};
                cchar_t cc;
                setcchar(&cc, wc, a, 0, NULL);
                mvwadd_wch(w, r, c, &cc);
            }
        }
    }
    if (o->cursor >= 0 && (size_t)o->cursor >= skip && (size_t)o->cursor < n) {
        int col = (int)(offset + ((size_t)o->cursor - skip)) / ppc;
        for (int r = 0; r < rows; r++)
            mvwchgat(w, r, col, 1, A_REVERSE, 0, NULL);
    }
    free(g.bits);
    free(g.color);
    return top;
}

double tui_plot_line(WINDOW *w, const double *v, const bool *valid, size_t n,
                     tui_color color, tui_plot_style style, const tui_plot_opts *o)
{
    tui_series_ref s = {v, valid, color, style};
    return tui_plot_series(w, &s, 1, n, o);
}
