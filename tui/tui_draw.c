/* tui_draw.c - drawing helpers shared by the screens, and the help screen. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tui_int.h"

bool tui_agent_disabled(const tui_hist *h)
{
    return (h->have_last && (h->last.flags & CUPSTORE_HF_DISABLED)) ||
           (h->have_final && h->fin.exit_path == CUPSTORE_EXIT_DETACH);
}

uint32_t tui_kinds_on(const tui_hist *h)
{
    if (!h->have_last || tui_agent_disabled(h))
        return 0;
    return h->last.kinds_enabled;
}

WINDOW *tui_window(WINDOW *old, tui_rect r)
{
    if (old)
        delwin(old);
    if (r.h <= 0 || r.w <= 0)
        return NULL;
    return newwin(r.h, r.w, r.y, r.x);
}

void tui_window_free(WINDOW **w)
{
    if (*w)
        delwin(*w);
    *w = NULL;
}

/* Text cut at the window's right edge.  Returns the column after it, or
 * the window's width when it was cut (nothing more fits on the row): a
 * caller that appends must use this, not getcurx, which stays on the last
 * column after a cut and lets the next text overwrite its last character. */
int tui_draw_text(WINDOW *w, int y, int x, attr_t a, const char *s)
{
    if (!w)
        return 0;
    int maxx = getmaxx(w);
    int room = maxx - x;
    if (room <= 0 || y < 0 || y >= getmaxy(w))
        return maxx;
    wattron(w, a);
    mvwaddnstr(w, y, x, s, room);
    wattroff(w, a);
    /* Display columns: the text is ASCII or already sanitised (UTF-8). */
    int cols = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        cols += (*p & 0xc0) != 0x80;
    return cols >= room ? maxx : x + cols;
}

int tui_draw_textf(WINDOW *w, int y, int x, attr_t a, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return tui_draw_text(w, y, x, a, buf);
}

int tui_draw_wrapped(WINDOW *w, int y, int x, attr_t a, const char *s, int maxrows)
{
    if (!w || maxrows <= 0)
        return 0;
    tui_line lines[16];
    int width = getmaxx(w) - x;
    if (width <= 0)
        return 0;
    size_t n = tui_wrap(s, width, lines, sizeof lines / sizeof lines[0]);
    int rows = (int)n < maxrows ? (int)n : maxrows;
    wattron(w, a);
    for (int i = 0; i < rows && y + i < getmaxy(w); i++)
        mvwaddnstr(w, y + i, x, s + lines[i].start, (int)lines[i].len);
    wattroff(w, a);
    return rows;
}

#define TUI_BANNER_MAX_ROWS 3

/* The banner's text now: the demo's hint while records are being lost (or
 * before any was), its "clear" text once the session on screen lost
 * records and then none for TUI_BANNER_CLEAR_S seconds (the model's
 * series, tui_hist). */
static const char *banner_text(const tui *t)
{
    const char *hint = t->opts ? t->opts->demo_hint : NULL;
    const char *clear = t->opts ? t->opts->demo_hint_clear : NULL;
    const tui_hist *h = &t->hist;
    if (!hint || !clear || !h->len || h->len < TUI_BANNER_CLEAR_S)
        return hint;
    const double *v = tui_hist_v(h, TUI_S_LOSS_TOTAL);
    const bool *va = tui_hist_valid(h, TUI_S_LOSS_TOTAL);
    bool before = false, recent = false;
    for (size_t i = 0; i < h->len; i++)
        if (va[i] && v[i] > 0) {
            if (i + TUI_BANNER_CLEAR_S >= h->len)
                recent = true;
            else
                before = true;
        }
    return before && !recent ? clear : hint;
}

static int banner_rows_of(const char *text, int cols)
{
    if (!text || !text[0])
        return 0;
    tui_line lines[TUI_BANNER_MAX_ROWS];
    int n = (int)tui_wrap(text, cols - 2, lines, TUI_BANNER_MAX_ROWS);
    return n > 0 ? n : 1;
}

int tui_banner_rows(const tui *t, int cols)
{
    /* the larger of the two texts: the layout stays when the text changes */
    int a = banner_rows_of(t->opts ? t->opts->demo_hint : NULL, cols);
    int b = banner_rows_of(t->opts ? t->opts->demo_hint_clear : NULL, cols);
    return a > b ? a : b;
}

void tui_draw_banner(const tui *t, WINDOW *w, int y, int rows)
{
    const char *hint = banner_text(t);
    if (!w || !hint || rows <= 0)
        return;
    attr_t a = tui_color_attr(TUI_C_BANNER);
    wattron(w, a);
    for (int r = 0; r < rows && y + r < getmaxy(w); r++)
        mvwhline(w, y + r, 0, ' ', getmaxx(w));
    wattroff(w, a);
    tui_draw_wrapped(w, y, 1, a, hint, rows);
}

void tui_draw_footer(WINDOW *w, const char *const *keys, size_t n)
{
    if (!w)
        return;
    werase(w);
    wbkgdset(w, ' ' | tui_color_attr(TUI_C_FKEY_TEXT));
    wmove(w, 0, 0);
    int cols = getmaxx(w);
    for (size_t i = 0; i + 1 < n; i += 2) {
        int x = getcurx(w);
        if (x + (int)strlen(keys[i]) + (int)strlen(keys[i + 1]) >= cols)
            break;
        wattrset(w, tui_color_attr(TUI_C_FKEY));
        waddstr(w, keys[i]);
        wattrset(w, tui_color_attr(TUI_C_FKEY_TEXT));
        waddstr(w, keys[i + 1]);
    }
    wattrset(w, tui_color_attr(TUI_C_FKEY_TEXT));
    for (int x = getcurx(w); x < cols - 1; x++)
        waddch(w, ' ');
    wattrset(w, 0);
    wbkgdset(w, ' ');
    wnoutrefresh(w);
}

void tui_draw_status(tui *t, WINDOW *w)
{
    if (!w)
        return;
    werase(w);
    if (t->status[0])
        tui_draw_text(w, 0, 0, tui_color_attr((tui_color)t->status_attr), t->status);
    wnoutrefresh(w);
}

/* At most 22 lines of at most 76 columns: the box (78 wide, borders
 * included) fits an 80x24 terminal. */
static const char *const help_lines[] = {
    "cuptop - CUPTI activity trace loss monitor",
    "Everywhere",
    "  F1 ?        this help (Esc closes)      q F10     quit",
    "  Esc         close a dialog / go back    a         devices (sums per device)",
    "Sessions screen",
    "  Up Down     select a session            Enter     open its dashboard",
    "  F6 < >      sort column   I invert      /         new filter (Esc clears)",
    "  A           attach to a CUDA process that has no session (cuptop attach)",
    "Session dashboard",
    "  Left Right  move the time cursor        PgUp PgDn scroll a page",
    "  Home End    cursor to oldest / live     + -       zoom the time axis",
    "  m           mark window start at cursor M         mark end, name it",
    "  e           export the marked window    k         kind panel + epochs",
    "  r           choose an NVTX range name   n N       next / previous range",
    "  s           slowest range (again: next) w         mark the range (for e)",
    "Kind panel",
    "  Up Down     select a kind               Space     turn it on/off",
    "  + -         double / halve the buffer pool (CUPTI holds one per thread)",
    "  Changes are requests: 'pending', then 'applied' once acknowledged (epoch)",
    "Plots: filled = exact counts; dotted 'est.' = per-kind estimates",
    "(CUPTI does not report drops per kind). '|' on the axis: epoch start.",
    "States: running, complete, incomplete, crashed (no heartbeat, process gone),",
    "stopped / not resp. (no heartbeat, process still there or not visible here).",
};

/* The title and the section headings ("Kind panel") are bold. */
static bool help_heading(int i)
{
    const char *l = help_lines[i];
    return i == 0 || (l[0] != ' ' && l[0] != '(' && !strchr(l, ':'));
}

void tui_help_draw(tui *t)
{
    (void)t;
    int n = (int)(sizeof help_lines / sizeof help_lines[0]);
    int h = n + 2, w = 78;
    if (h > LINES)
        h = LINES;
    if (w > COLS)
        w = COLS;
    WINDOW *win = newwin(h, w, (LINES - h) / 2, (COLS - w) / 2);
    if (!win)
        return;
    wbkgd(win, ' ' | tui_color_attr(TUI_C_DIALOG));
    werase(win);
    box(win, 0, 0);
    tui_draw_text(win, 0, 2, A_BOLD, " Help ");
    /* Inside the borders only: a long line must not overwrite the right one. */
    for (int i = 0; i < n && i + 1 < h - 1; i++) {
        wattron(win, help_heading(i) ? A_BOLD : 0);
        mvwaddnstr(win, i + 1, 1, help_lines[i], w - 2 > 0 ? w - 2 : 0);
        wattroff(win, A_BOLD);
    }
    tui_draw_text(win, h - 1, w - 16 > 0 ? w - 16 : 0, 0, " Esc: close ");
    wnoutrefresh(win);
    delwin(win);
}
