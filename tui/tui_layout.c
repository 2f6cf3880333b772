/* tui_layout.c - pure layout and time-axis arithmetic. */
#include "config.h"

#include <string.h>

#include "tui.h"

tui_axis tui_axis_ending(uint64_t last, size_t points, uint64_t span)
{
    tui_axis a;
    if (span == 0)
        span = 1;
    if (points == 0)
        points = 1;
    /* Align the view to whole buckets so that zoomed points do not shift
     * content between frames as `last` advances within a bucket. */
    uint64_t last_bucket = last / span;
    uint64_t first_bucket = last_bucket + 1 >= points ? last_bucket + 1 - points : 0;
    a.first = first_bucket * span;
    a.span = span;
    a.points = points;
    return a;
}

long tui_axis_point(const tui_axis *a, uint64_t second)
{
    if (second < a->first)
        return -1;
    uint64_t p = (second - a->first) / a->span;
    if (p >= a->points)
        return -1;
    return (long)p;
}

int tui_axis_col(long point, int points_per_col)
{
    if (point < 0 || points_per_col <= 0)
        return -1;
    return (int)(point / points_per_col);
}

static tui_rect rect(int y, int x, int h, int w)
{
    tui_rect r = {y, x, h, w};
    return r;
}

bool tui_layout_dash(int rows, int cols, int banner_rows, tui_dash_layout *l)
{
    return tui_layout_dash_lane(rows, cols, banner_rows, 0, l);
}

bool tui_layout_dash_lane(int rows, int cols, int banner_rows, int lane_rows,
                          tui_dash_layout *l)
{
    return tui_layout_dash_panels(rows, cols, banner_rows, lane_rows, TUI_DASH_PANELS_BASE, l);
}

bool tui_layout_dash_panels(int rows, int cols, int banner_rows, int lane_rows, int want,
                            tui_dash_layout *l)
{
    if (want < 1 || want > TUI_DASH_PANELS)
        want = TUI_DASH_PANELS_BASE;
    memset(l, 0, sizeof *l);
    if (rows < 10 || cols < 40)
        return false;
    if (banner_rows > (rows - 7) / 2)   /* the banner never takes the panels' place */
        banner_rows = (rows - 7) / 2;
    if (banner_rows < 0)
        banner_rows = 0;
    int y = 0;
    l->header = rect(y++, 0, 1, cols);
    if (banner_rows) {
        l->banner = rect(y, 0, banner_rows, cols);
        y += banner_rows;
    }
    int counter_rows = cols >= 140 ? 2 : 3;
    l->counters = rect(y, 0, counter_rows, cols);
    y += counter_rows;
    l->footer = rect(rows - 1, 0, 1, cols);
    l->status = rect(rows - 2, 0, 1, cols);
    l->axis = rect(rows - 3, 0, 1, cols);
    if (lane_rows > rows - 3 - y - 4)   /* one row of panels stays */
        lane_rows = rows - 3 - y - 4;
    if (lane_rows > 0)
        l->lane = rect(rows - 3 - lane_rows, 0, lane_rows, cols);
    else
        lane_rows = 0;

    int avail = rows - 3 - lane_rows - y;
    int ncols = cols >= 180 ? 3 : cols >= 70 ? 2 : 1;
    int nrows = (want + ncols - 1) / ncols;
    if (nrows > avail / 4)
        nrows = avail / 4;
    if (nrows <= 0) {
        l->npanels = 0;
        return true;
    }
    int n = nrows * ncols;
    if (n > want)
        n = want;
    l->npanels = n;
    for (int i = 0; i < n; i++) {
        int r = i / ncols, c = i % ncols;
        int y0 = y + avail * r / nrows, y1 = y + avail * (r + 1) / nrows;
        int x0 = cols * c / ncols, x1 = cols * (c + 1) / ncols;
        l->panels[i] = rect(y0, x0, y1 - y0, x1 - x0);
    }
    return true;
}
