/* tui_draw.c - drawing helpers shared by the screens, and the help screen. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tui_int.h"

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

void tui_draw_text(WINDOW *w, int y, int x, attr_t a, const char *s)
{
    if (!w)
        return;
    int room = getmaxx(w) - x;
    if (room <= 0 || y < 0 || y >= getmaxy(w))
        return;
    wattron(w, a);
    mvwaddnstr(w, y, x, s, room);
    wattroff(w, a);
}

void tui_draw_textf(WINDOW *w, int y, int x, attr_t a, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    /* Cut by display columns: the text is ASCII or already sanitised. */
    if (!w)
        return;
    int room = getmaxx(w) - x;
    if (room <= 0 || y < 0 || y >= getmaxy(w))
        return;
    wattron(w, a);
    wmove(w, y, x);
    waddnstr(w, buf, -1);
    wattroff(w, a);
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

/* At most 22 lines: the box fits an 80x24 terminal. */
static const char *const help_lines[] = {
    "cuptop - CUPTI activity trace loss monitor",
    "Everywhere",
    "  F1 ?        this help (Esc closes)      q F10     quit",
    "  Esc         close a dialog / go back    a         aggregate view per device",
    "Sessions screen",
    "  Up Down     select a session            Enter     open its dashboard",
    "  F6 < >      sort column (again: invert) /         filter (Esc clears)",
    "Session dashboard",
    "  Left Right  move the time cursor        PgUp PgDn scroll a page",
    "  Home End    oldest / follow live data   + -       zoom the time axis",
    "  m           mark window start at cursor M         mark end, name it",
    "  e           export the marked window    k         kind panel + epochs",
    "Kind panel",
    "  Up Down     select a kind               Space     turn it on/off",
    "  + -         double / halve the buffer pool (CUPTI holds one per thread)",
    "  Changes are control requests: 'pending' until the agent acknowledges",
    "  them in a health row, then 'applied' (a new epoch starts).",
    "Plots: filled = exact counts; dotted 'est.' = per-kind estimates",
    "(CUPTI does not report drops per kind). '|' on the axis: epoch start.",
    "States: running, complete, incomplete, crashed (stale heartbeat).",
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
    for (int i = 0; i < n && i + 1 < h - 1; i++)
        tui_draw_text(win, i + 1, 1, help_heading(i) ? A_BOLD : 0, help_lines[i]);
    tui_draw_text(win, h - 1, w - 16 > 0 ? w - 16 : 0, 0, " Esc: close ");
    wnoutrefresh(win);
    delwin(win);
}
