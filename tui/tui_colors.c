/* tui_colors.c - the one place where named colours become curses pairs. */
#include "config.h"

#include "tui.h"

/* The colour table's state: the only mutable file-scope data of tui/. */
static struct tui_palette {
    bool enabled;
    attr_t attr[TUI_C_MAX];
} tui_palette;

struct color_def {
    short fg, bg;
    attr_t extra;       /* added in colour mode                             */
    attr_t mono;        /* used in monochrome                               */
};

static const struct color_def color_defs[TUI_C_MAX] = {
    [TUI_C_DEFAULT] = {-1, -1, 0, 0},
    [TUI_C_HEADER] = {COLOR_BLACK, COLOR_CYAN, 0, A_REVERSE},
    [TUI_C_BANNER] = {COLOR_BLACK, COLOR_YELLOW, 0, A_BOLD | A_UNDERLINE},
    [TUI_C_FKEY] = {COLOR_WHITE, -1, A_BOLD, A_BOLD},
    [TUI_C_FKEY_TEXT] = {COLOR_BLACK, COLOR_CYAN, 0, A_REVERSE},
    [TUI_C_SELECTED] = {COLOR_BLACK, COLOR_GREEN, 0, A_REVERSE},
    [TUI_C_DIM] = {COLOR_BLUE, -1, A_BOLD, A_DIM},
    [TUI_C_OK] = {COLOR_GREEN, -1, A_BOLD, 0},
    [TUI_C_WARN] = {COLOR_YELLOW, -1, A_BOLD, A_UNDERLINE},
    [TUI_C_BAD] = {COLOR_RED, -1, A_BOLD, A_BOLD},
    [TUI_C_SERIES0] = {COLOR_GREEN, -1, 0, 0},
    [TUI_C_SERIES1] = {COLOR_CYAN, -1, 0, 0},
    [TUI_C_SERIES2] = {COLOR_MAGENTA, -1, 0, 0},
    [TUI_C_SERIES3] = {COLOR_YELLOW, -1, 0, 0},
    [TUI_C_SERIES4] = {COLOR_BLUE, -1, A_BOLD, 0},
    [TUI_C_SERIES5] = {COLOR_WHITE, -1, 0, 0},
    [TUI_C_ESTIMATE] = {COLOR_YELLOW, -1, 0, A_DIM},
    [TUI_C_EPOCH] = {COLOR_MAGENTA, -1, A_BOLD, A_BOLD},
    [TUI_C_MARK] = {COLOR_BLACK, COLOR_YELLOW, 0, A_REVERSE},
    [TUI_C_CURSOR] = {COLOR_BLACK, COLOR_WHITE, 0, A_REVERSE},
    [TUI_C_DIALOG] = {COLOR_WHITE, COLOR_BLUE, 0, 0},
};

void tui_colors_init(bool mono)
{
    tui_palette.enabled = !mono && has_colors();
    if (tui_palette.enabled) {
        start_color();
        use_default_colors();
    }
    for (int c = 0; c < TUI_C_MAX; c++) {
        const struct color_def *d = &color_defs[c];
        if (!tui_palette.enabled || c == TUI_C_DEFAULT) {
            tui_palette.attr[c] = d->mono;
            continue;
        }
        init_pair((short)c, d->fg, d->bg);
        tui_palette.attr[c] = COLOR_PAIR(c) | d->extra;
    }
}

attr_t tui_color_attr(tui_color c)
{
    if ((int)c < 0 || c >= TUI_C_MAX)
        return 0;
    return tui_palette.attr[c];
}

bool tui_colors_enabled(void)
{
    return tui_palette.enabled;
}
