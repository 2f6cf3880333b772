/* test_tui_render.c - the plot functions drawing into real curses windows
 * on a dummy terminal (output to /dev/null): braille cells, ASCII fallback,
 * right alignment, gaps, the cursor column, estimates vs exact counts, the
 * NVTX range lane (ranges, open ranges, points, the selection), the
 * dashboard header's device (whole or in a shorter form, never cut), the
 * time axis's clock labels (the time of the column they sit in). */
#include "config.h"

#include <locale.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tui_int.h"

struct term_fixture {
    SCREEN *scr;
    FILE *out, *in;
};

static int setup(void **state)
{
    struct term_fixture *f = calloc(1, sizeof *f);
    setlocale(LC_ALL, "C.UTF-8");
    f->out = fopen("/dev/null", "w");
    f->in = fopen("/dev/null", "r");
    if (!f->out || !f->in)
        return -1;
    f->scr = newterm("xterm-256color", f->out, f->in);
    if (!f->scr)
        return -1;
    set_term(f->scr);
    tui_colors_init(true);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct term_fixture *f = *state;
    endwin();
    delscreen(f->scr);
    fclose(f->out);
    fclose(f->in);
    free(f);
    return 0;
}

static unsigned cell(WINDOW *w, int y, int x)
{
    cchar_t cc;
    wchar_t wc[CCHARW_MAX + 1];
    attr_t a;
    short pair;
    if (mvwin_wch(w, y, x, &cc) == ERR)
        return 0;
    getcchar(&cc, wc, &a, &pair, NULL);
    return (unsigned)wc[0];
}

static attr_t cell_attr(WINDOW *w, int y, int x)
{
    cchar_t cc;
    wchar_t wc[CCHARW_MAX + 1];
    attr_t a;
    short pair;
    mvwin_wch(w, y, x, &cc);
    getcchar(&cc, wc, &a, &pair, NULL);
    return a;
}

static void test_braille_area(void **state)
{
    (void)state;
    WINDOW *w = newwin(2, 4, 0, 0);   /* 8 points wide, 8 dots high */
    double v[4] = {8, 4, 1, 0};
    bool valid[4] = {true, true, true, true};
    tui_plot_opts o = {.ascii = false, .top = 8.0, .cursor = -1};
    tui_plot_line(w, v, valid, 4, TUI_C_SERIES0, TUI_PLOT_AREA, &o);
    /* Right-aligned: 4 points fill the last 2 columns (cols 2 and 3). */
    assert_int_equal(cell(w, 0, 0), ' ');
    assert_int_equal(cell(w, 1, 1), ' ');
    /* col 2: left point 8 (full), right point 4 (bottom row full). */
    assert_int_equal(cell(w, 0, 2), 0x2800 + 0x47);
    assert_int_equal(cell(w, 1, 2), 0x2800 + 0xff);
    /* col 3: left point 1 (one dot), right point 0 (nothing). */
    assert_int_equal(cell(w, 0, 3), ' ');
    assert_int_equal(cell(w, 1, 3), 0x2800 + 0x40);
    delwin(w);
}

static void test_ascii_and_gaps(void **state)
{
    (void)state;
    WINDOW *w = newwin(2, 4, 0, 0);
    double v[4] = {8, 8, 2, 8};
    bool valid[4] = {true, false, true, true};
    tui_plot_opts o = {.ascii = true, .top = 8.0, .cursor = -1};
    tui_plot_line(w, v, valid, 4, TUI_C_SERIES0, TUI_PLOT_AREA, &o);
    assert_int_equal(cell(w, 0, 0), '#');
    assert_int_equal(cell(w, 1, 0), '#');
    assert_int_equal(cell(w, 0, 1), ' ');   /* invalid point: a gap, not a zero bar */
    assert_int_equal(cell(w, 1, 1), ' ');
    assert_int_equal(cell(w, 0, 2), ' ');
    assert_int_equal(cell(w, 1, 2), '-');   /* level 2 of 4 in the bottom row */
    werase(w);
    /* Estimates are drawn with another glyph than exact counts. */
    tui_plot_line(w, v, valid, 4, TUI_C_ESTIMATE, TUI_PLOT_DOTS, &o);
    assert_int_equal(cell(w, 0, 0), 'o');
    assert_int_equal(cell(w, 1, 0), ' ');
    delwin(w);
}

static void test_overflow_and_cursor(void **state)
{
    (void)state;
    WINDOW *w = newwin(1, 3, 0, 0);
    double v[10];
    for (int i = 0; i < 10; i++)
        v[i] = i < 4 ? 100.0 : 1.0;
    /* 10 points, room for 6: only the newest 6 (all 1.0) are drawn; the
     * auto scale follows the visible points. */
    tui_plot_opts o = {.ascii = false, .top = 0.0, .cursor = 9};
    double top = tui_plot_line(w, v, NULL, 10, TUI_C_SERIES0, TUI_PLOT_AREA, &o);
    assert_true(top == 1.0);
    assert_int_equal(cell(w, 0, 0), 0x28ff);
    assert_int_equal(cell(w, 0, 2), 0x28ff);
    assert_true(cell_attr(w, 0, 2) & A_REVERSE);   /* the cursor column */
    assert_false(cell_attr(w, 0, 0) & A_REVERSE);
    delwin(w);
}

static void test_overlay(void **state)
{
    (void)state;
    WINDOW *w = newwin(1, 1, 0, 0);
    double a[2] = {4, 0}, b[2] = {0, 4};
    tui_series_ref s[2] = {{a, NULL, TUI_C_SERIES0, TUI_PLOT_AREA},
                           {b, NULL, TUI_C_SERIES1, TUI_PLOT_AREA}};
    tui_plot_opts o = {.ascii = false, .top = 4.0, .cursor = -1};
    tui_plot_series(w, s, 2, 2, &o);
    assert_int_equal(cell(w, 0, 0), 0x28ff);   /* dots of both series merge */
    delwin(w);
}

static void test_mono_attrs(void **state)
{
    (void)state;
    /* Monochrome: no colour pairs; distinctions by attributes and glyphs. */
    assert_false(tui_colors_enabled());
    assert_int_equal(PAIR_NUMBER(tui_color_attr(TUI_C_BAD)), 0);
    assert_true(tui_color_attr(TUI_C_SELECTED) & A_REVERSE);
}

/* The NVTX lane: a closed range (selected), a point and an open range of
 * one name, built by hand, drawn right-aligned into a window. */
static void test_range_lane(void **state)
{
    (void)state;
    const uint64_t ns = 1000000000ull, base = 1700000000ull;
    model_range_inst inst[3] = {
        {.id = 1, .flags = CUPSTORE_RANGE_START | CUPSTORE_RANGE_END,
         .start_ns = (base + 2) * ns, .end_ns = (base + 4) * ns + 1, .dur_ns = 2 * ns + 1},
        {.id = 2, .flags = CUPSTORE_RANGE_START | CUPSTORE_RANGE_POINT,
         .start_ns = (base + 7) * ns, .end_ns = (base + 7) * ns},
        {.id = 3, .flags = CUPSTORE_RANGE_START, .start_ns = (base + 9) * ns},
    };
    size_t by_dur[1] = {0}, by_time[3] = {0, 1, 2}, open[1] = {2};
    char name[] = "x", dom[] = "";
    model_range_name nm = {.name = name, .name_len = 1, .domain = dom, .count = 1, .open = 1,
                           .points = 1, .max_ns = 2 * ns + 1, .by_dur = by_dur,
                           .by_time = by_time, .ntime = 3};
    model_ranges m = {.inst = inst, .ninst = 3, .names = &nm, .nnames = 1, .open = 1,
                      .points = 1};
    static tui t;   /* large: not on the stack */
    memset(&t, 0, sizeof t);
    t.ascii = true;
    t.now_ns = (base + 10) * ns + 500000000u;   /* the session's last second: 10 */
    t.rv.m = &m;
    t.rv.name = name;
    t.rv.k = 0;
    t.rv.sel = 0;
    t.rv.slow_rank = -1;
    t.rv.open = open;
    t.rv.nopen = 1;
    WINDOW *w = newwin(1, 14, 0, 0);
    tui_axis a = {base, 1, 12};   /* 12 columns, right-aligned in 14 */
    tui_dash_ranges_band(&t, w, 0, &a, 1, 0, 14);
    static const char want[] = "    ===  * ~~ ";   /* open: to second 10 */
    for (int c = 0; c < 14; c++)
        assert_int_equal(cell(w, 0, c) ? cell(w, 0, c) : ' ', want[c]);
    for (int c = 0; c < 14; c++)   /* the selection only is highlighted */
        assert_int_equal((cell_attr(w, 0, c) & A_REVERSE) != 0, c >= 4 && c <= 6);
    /* braille terminals: box-drawing glyphs, two points per column */
    werase(w);
    t.ascii = false;
    tui_dash_ranges_band(&t, w, 0, &a, 2, 0, 14);
    assert_int_equal(cell(w, 0, 9), 0x2501);    /* seconds 2, 3 -> column 1 of 6 */
    assert_int_equal(cell(w, 0, 11), 0x2022);   /* second 7: the point */
    assert_int_equal(cell(w, 0, 12), 0x2504);   /* seconds 8, 9: open from 9 */
    assert_int_equal(cell(w, 0, 13), 0x2504);   /* to the last second */
    assert_int_equal(cell(w, 0, 8), ' ');
    delwin(w);
}

/* The header's device with a 7-digit pid: at 80 columns "GPU 0: NVIDIA
 * H200 (simulated)" does not fit after the id, pid, state and verdict (58
 * columns); a shorter form that fits whole is drawn, never "(simulat". */
static void header_row(int cols, int pid, char *out, size_t len)
{
    static tui t;
    static tui_sess s;
    static model_prov p;
    static char id[40];
    memset(&t, 0, sizeof t);
    memset(&s, 0, sizeof s);
    memset(&p, 0, sizeof p);
    snprintf(id, sizeof id, "20261204T150627-%d", pid);
    s.id = id;
    snprintf(s.cmd, sizeof s.cmd, "/bin/app --x");
    s.have_sum = true;
    s.sum.pid = pid;
    s.sum.state = MODEL_STATE_ENDED;
    s.sum.complete = true;
    s.sum.prov = &p;
    p.dev[0].known = p.dev[0].simulated = true;
    snprintf(p.dev[0].name, sizeof p.dev[0].name, "NVIDIA H200 (simulated)");
    t.store.s = &s;
    t.store.n = 1;
    t.cur = 0;
    WINDOW *w = newwin(1, cols, 0, 0);
    tui_dash_header(&t, w);
    size_t n = 0;
    for (int x = 0; x < cols && n + 4 < len; x++) {
        unsigned c = cell(w, 0, x);
        out[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    out[n] = 0;
    delwin(w);
}

static void test_header_device(void **state)
{
    (void)state;
    char row[256];
    header_row(120, 1234567, row, sizeof row);
    assert_non_null(strstr(row, "GPU 0: NVIDIA H200 (simulated)  /bin/app"));
    header_row(80, 454, row, sizeof row);
    assert_non_null(strstr(row, "GPU 0: NVIDIA H200 (simulated)"));
    header_row(84, 1234567, row, sizeof row);
    assert_non_null(strstr(row, "COMPLETE  NVIDIA H200 (simulated)"));
    header_row(80, 1234567, row, sizeof row);
    assert_non_null(strstr(row, "COMPLETE  GPU 0 (simulated)"));
    header_row(70, 1234567, row, sizeof row);
    assert_null(strstr(row, "(sim"));
    assert_non_null(strstr(row, "COMPLETE"));
}

/* An epoch marker ("|E1") at the view's first column pushes the left clock
 * label 4 columns right; at 5 s a column it names the second 20 s after the
 * view's first (it named the first, 20 s away from where it sat). */
static void test_axis_clock(void **state)
{
    (void)state;
    static tui t;
    memset(&t, 0, sizeof t);
    setenv("TZ", "UTC", 1);
    tzset();
    const uint64_t base = 1700000000ull;   /* 22:13:20 UTC */
    tui_axis a = tui_axis_ending(base + 499, 500, 1);
    assert_int_equal(a.first, base);
    t.hist.epochs[0].id = 1;
    t.hist.epochs[0].start_ns = base * 1000000000ull;
    t.hist.nepochs = 1;
    WINDOW *w = newwin(1, 100, 0, 0);
    tui_dash_axis(&t, w, &a, 5, -1, 0, 100);
    char row[128];
    int n = 0;
    for (int x = 0; x < 100; x++) {
        unsigned c = cell(w, 0, x);
        row[n++] = c >= 0x20 && c < 0x7f ? (char)c : '-';
    }
    row[n] = 0;
    assert_int_equal(strncmp(row, "|E1-22:13:40-", 13), 0);   /* base + 4 columns x 5 s */
    assert_int_equal(strcmp(row + 90, "-22:21:39-"), 0);   /* the last second, unmoved */
    delwin(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_braille_area), cmocka_unit_test(test_ascii_and_gaps),
        cmocka_unit_test(test_overflow_and_cursor), cmocka_unit_test(test_overlay),
        cmocka_unit_test(test_mono_attrs), cmocka_unit_test(test_range_lane),
        cmocka_unit_test(test_header_device), cmocka_unit_test(test_axis_clock),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
