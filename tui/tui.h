/*
 * tui.h - the pure parts of the live monitor: plotting, scaling, layout,
 * time-axis mapping, text sanitising, epoch analysis.  Nothing here knows
 * about CUPTI or LMDB; the functions take plain arrays with validity bits
 * and draw into a curses WINDOW (or compute numbers), so they are unit
 * tested on their own (tests/tui/test_tui_pure.c).
 */
#ifndef CUPTOP_TUI_H
#define CUPTOP_TUI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef NCURSES_WIDECHAR
#define NCURSES_WIDECHAR 1
#endif
#include <curses.h>

/* ---- Colours: one named enum, mapped to pairs in tui_colors.c -------- */
typedef enum tui_color {
    TUI_C_DEFAULT = 0,
    TUI_C_HEADER,       /* title bar                                    */
    TUI_C_BANNER,       /* demo hint                                    */
    TUI_C_FKEY,         /* footer key labels                            */
    TUI_C_FKEY_TEXT,    /* footer key descriptions                      */
    TUI_C_SELECTED,     /* cursor row                                   */
    TUI_C_DIM,          /* secondary text, axis                         */
    TUI_C_OK,           /* complete, running, applied                   */
    TUI_C_WARN,         /* pending, estimates                           */
    TUI_C_BAD,          /* incomplete, crashed, drops                   */
    TUI_C_SERIES0,      /* plot series colours, cycled                  */
    TUI_C_SERIES1,
    TUI_C_SERIES2,
    TUI_C_SERIES3,
    TUI_C_SERIES4,
    TUI_C_SERIES5,
    TUI_C_ESTIMATE,     /* per-kind drop estimates                      */
    TUI_C_EPOCH,        /* epoch boundary marks                         */
    TUI_C_MARK,         /* mark window                                  */
    TUI_C_CURSOR,       /* time cursor column                           */
    TUI_C_DIALOG,       /* dialogs and help                             */
    TUI_C_MAX
} tui_color;
#define TUI_SERIES_COLORS 6

/** Set up colour pairs (no-op in monochrome).  mono: force monochrome. */
void tui_colors_init(bool mono);
/** Attributes for a named colour (a pair, or a mono fallback attribute). */
attr_t tui_color_attr(tui_color c);
/** True when colours are in use. */
bool tui_colors_enabled(void);

/* ---- Scaling ------------------------------------------------------------ */
/** Largest valid value in v[0..n) (0 when none is valid). */
double tui_scale_max(const double *v, const bool *valid, size_t n);
/** Round a maximum up to a "nice" axis top: 1, 2, 5 x 10^k (>= 1). */
double tui_scale_nice(double max);
/** Map a value to a level in [0, levels]: 0 means nothing drawn; any
 *  value > 0 maps to at least 1 so that a single drop stays visible. */
int tui_scale_level(double value, double top, int levels);

/** Reduce src (n points) into dst (n / factor points, rounding up) by the
 *  maximum of each bucket; a bucket is valid when any point in it is.
 *  Returns the number of points written. */
size_t tui_series_bucket(const double *src, const bool *valid, size_t n, size_t factor,
                         double *dst, bool *dvalid);

/* ---- Braille cells ---------------------------------------------------- */
/** Dot bit for column x (0 left, 1 right) and row y (0 top .. 3 bottom) of
 *  a braille cell (Unicode dot numbering 1-8). */
unsigned tui_braille_bit(int x, int y);
/** Code point of a braille cell with the given dot bits. */
unsigned tui_braille_char(unsigned bits);
/** Bits for a column filled from the bottom up to `fill` dots (0..4). */
unsigned tui_braille_fill(int x, int fill);

/* ---- Plots -------------------------------------------------------------- */
typedef enum tui_plot_style {
    TUI_PLOT_AREA = 0,   /* filled from the bottom (exact counts)           */
    TUI_PLOT_LINE,       /* the top point only                              */
    TUI_PLOT_DOTS,       /* sparse points: estimates (never mistaken for AREA) */
} tui_plot_style;

typedef struct tui_series_ref {
    const double *v;
    const bool *valid;
    tui_color color;
    tui_plot_style style;
} tui_series_ref;

typedef struct tui_plot_opts {
    bool ascii;          /* ASCII glyphs instead of braille                  */
    double top;          /* value at the top row (<= 0: nice max of the data) */
    int cursor;          /* point index highlighted, -1 for none             */
} tui_plot_opts;

/** Points one window column shows: 2 with braille, 1 with ASCII. */
int tui_plot_points_per_col(bool ascii);

/** Draw series (each n points, oldest first, right-aligned so the newest
 *  point is in the last column) into the whole of window w from (0, 0).
 *  Several series overlay: dots are merged per cell and the cell takes the
 *  colour of the first series that has dots in it.  Returns the top used. */
double tui_plot_series(WINDOW *w, const tui_series_ref *s, size_t ns, size_t n,
                       const tui_plot_opts *o);
/** The value at the top row tui_plot_series would use for these series in
 *  a plot `cols` columns wide (o->top when > 0, else the nice maximum of the
 *  points shown), so that a scale label can be placed before plotting. */
double tui_plot_top(const tui_series_ref *s, size_t ns, size_t n, int cols,
                    const tui_plot_opts *o);
/** Convenience: one series. */
double tui_plot_line(WINDOW *w, const double *v, const bool *valid, size_t n,
                     tui_color color, tui_plot_style style, const tui_plot_opts *o);

/** The ASCII glyph used for a level (1..4 of a row) in a style. */
chtype tui_plot_ascii_glyph(tui_plot_style style, int fill);

/* ---- Time axis ---------------------------------------------------------- */
typedef struct tui_axis {
    uint64_t first;      /* second at point 0 of the view                   */
    uint64_t span;       /* seconds per point (zoom; >= 1)                  */
    size_t points;       /* points in the view                              */
} tui_axis;

/** View whose last point holds second `last`, with `points` points of
 *  `span` seconds each, aligned to whole buckets (first % span == 0) so
 *  that zoomed points do not shift as time advances inside a bucket. */
tui_axis tui_axis_ending(uint64_t last, size_t points, uint64_t span);
/** Point index of a second in the view, or -1 outside. */
long tui_axis_point(const tui_axis *a, uint64_t second);
/** Window column of a point index (points_per_col points per column). */
int tui_axis_col(long point, int points_per_col);
/** Format hh:mm:ss (UTC=false: local time) into buf. */
void tui_format_clock(uint64_t second, char *buf, size_t len);

/* ---- Layout ------------------------------------------------------------- */
typedef struct tui_rect {
    int y, x, h, w;
} tui_rect;

#define TUI_DASH_PANELS 7        /* at most: 6, and the launch ledger's   */
#define TUI_DASH_PANELS_BASE 6   /* without the launch ledger             */
typedef struct tui_dash_layout {
    tui_rect header;     /* title + state                                  */
    tui_rect banner;     /* demo hint (h = 0 when none)                    */
    tui_rect counters;   /* loss-class counters and control state          */
    tui_rect panels[TUI_DASH_PANELS];  /* h = 0: not shown at this size     */
    int npanels;         /* panels shown                                    */
    tui_rect lane;       /* NVTX ranges above the axis (h = 0: none)        */
    tui_rect axis;       /* time axis                                      */
    tui_rect status;     /* prompts, progress                              */
    tui_rect footer;     /* key bar                                        */
} tui_dash_layout;

/** Lay out the dashboard on a rows x cols screen, with banner_rows rows for
 *  the demo banner (0: none).  Panels go in a grid of 1-3 columns, each at
 *  least 4 rows; panels that do not fit are dropped from the end (first =
 *  most important).  Returns false if the screen is too small to show
 *  anything useful (< 40x10). */
bool tui_layout_dash(int rows, int cols, int banner_rows, tui_dash_layout *l);
/** The same with lane_rows rows for the NVTX range lane just above the
 *  time axis (taken from the panels). */
bool tui_layout_dash_lane(int rows, int cols, int banner_rows, int lane_rows,
                          tui_dash_layout *l);
/** The same for want panels (TUI_DASH_PANELS_BASE, or TUI_DASH_PANELS
 *  with the launch ledger's). */
bool tui_layout_dash_panels(int rows, int cols, int banner_rows, int lane_rows, int want,
                            tui_dash_layout *l);

/* ---- Text --------------------------------------------------------------- */
/* Text from the trace goes through model_sanitize (src/model/model.h), the
 * sanitiser the CLI's model_escape shares. */
/** One line of wrapped text: bytes [start, start + len) of the string. */
typedef struct tui_line {
    size_t start, len;
} tui_line;
/** Break s into lines of at most width display columns (UTF-8: one column
 *  a code point) at spaces; a word longer than a line is cut.  Spaces at
 *  the breaks are dropped.  Returns the number of lines, at most max. */
size_t tui_wrap(const char *s, int width, tui_line *lines, size_t max);
/** Human number: 999, 1.2k, 34k, 5.6M, 7.8G (fits in 5 chars). */
void tui_format_count(double v, char *buf, size_t len);
/** Human duration from nanoseconds: 850ns, 12us, 3.4ms, 1.2s. */
void tui_format_ns(double ns, char *buf, size_t len);
/** Human duration from seconds: 45s, 12m03s, 3h05m. */
void tui_format_secs(uint64_t s, char *buf, size_t len);

#endif /* CUPTOP_TUI_H */
