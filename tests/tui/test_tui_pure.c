/* test_tui_pure.c - the TUI's pure functions: scaling, braille encoding,
 * time axis, layout, sanitising, number formats, epoch baseline,
 * suggestion, summary cache policy, the history arrays and the NVTX range
 * lane (stepping, slowest, marks' windows, reload policy). */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tui_int.h"

static void test_scale(void **state)
{
    (void)state;
    double v[] = {1, 9, 3, 100};
    bool valid[] = {true, true, true, false};
    assert_true(tui_scale_max(v, valid, 4) == 9.0);
    assert_true(tui_scale_max(v, NULL, 4) == 100.0);
    assert_true(tui_scale_max(v, valid, 0) == 0.0);
    assert_true(tui_scale_nice(0.0) == 1.0);
    assert_true(tui_scale_nice(7.0) == 10.0);
    assert_true(tui_scale_nice(10.0) == 10.0);
    assert_true(tui_scale_nice(12.0) == 20.0);
    assert_true(tui_scale_nice(1500.0) == 2000.0);
    assert_true(tui_scale_nice(50.0) == 50.0);
    assert_true(tui_scale_nice(50001.0) == 100000.0);
    assert_int_equal(tui_scale_level(0.0, 100.0, 20), 0);
    assert_int_equal(tui_scale_level(-5.0, 100.0, 20), 0);
    assert_int_equal(tui_scale_level(0.001, 100.0, 20), 1);   /* one drop stays visible */
    assert_int_equal(tui_scale_level(50.0, 100.0, 20), 10);
    assert_int_equal(tui_scale_level(100.0, 100.0, 20), 20);
    assert_int_equal(tui_scale_level(1e9, 100.0, 20), 20);
}

static void test_bucket(void **state)
{
    (void)state;
    double v[] = {1, 5, 2, 0, 0, 7, 3};
    bool valid[] = {true, true, true, false, false, true, false};
    double out[4];
    bool ov[4];
    assert_int_equal(tui_series_bucket(v, valid, 7, 2, out, ov), 4);
    assert_true(out[0] == 5.0 && ov[0]);
    assert_true(out[1] == 2.0 && ov[1]);
    assert_true(out[2] == 7.0 && ov[2]);
    assert_true(out[3] == 0.0 && !ov[3]);   /* 3 is invalid */
    assert_int_equal(tui_series_bucket(v, NULL, 7, 7, out, ov), 1);
    assert_true(out[0] == 7.0);
}

static void test_braille(void **state)
{
    (void)state;
    /* Unicode dot numbering: 1,2,3,7 left column; 4,5,6,8 right. */
    assert_int_equal(tui_braille_bit(0, 0), 0x01);
    assert_int_equal(tui_braille_bit(0, 2), 0x04);
    assert_int_equal(tui_braille_bit(0, 3), 0x40);
    assert_int_equal(tui_braille_bit(1, 0), 0x08);
    assert_int_equal(tui_braille_bit(1, 3), 0x80);
    assert_int_equal(tui_braille_bit(2, 0), 0);
    assert_int_equal(tui_braille_char(0), 0x2800);
    assert_int_equal(tui_braille_char(0xff), 0x28ff);
    assert_int_equal(tui_braille_fill(0, 1), 0x40);
    assert_int_equal(tui_braille_fill(0, 4), 0x47);
    assert_int_equal(tui_braille_fill(1, 2), 0xa0);
    assert_int_equal(tui_braille_fill(0, 4) | tui_braille_fill(1, 4), 0xff);
    assert_int_equal(tui_plot_points_per_col(false), 2);
    assert_int_equal(tui_plot_points_per_col(true), 1);
    /* ASCII fallback: exact counts and estimates never share a glyph. */
    assert_true(tui_plot_ascii_glyph(TUI_PLOT_AREA, 4) == '#');
    assert_true(tui_plot_ascii_glyph(TUI_PLOT_DOTS, 4) != tui_plot_ascii_glyph(TUI_PLOT_AREA, 4));
    for (int f = 1; f <= 4; f++)
        assert_true(tui_plot_ascii_glyph(TUI_PLOT_DOTS, f) !=
                    tui_plot_ascii_glyph(TUI_PLOT_AREA, f));
    assert_true(tui_plot_ascii_glyph(TUI_PLOT_LINE, 0) == ' ');
}

static void test_axis(void **state)
{
    (void)state;
    tui_axis a = tui_axis_ending(1000, 100, 1);
    assert_int_equal(a.first, 901);
    assert_int_equal(tui_axis_point(&a, 901), 0);
    assert_int_equal(tui_axis_point(&a, 1000), 99);
    assert_int_equal(tui_axis_point(&a, 1001), -1);
    assert_int_equal(tui_axis_point(&a, 900), -1);
    /* Zoomed: buckets aligned to the span, last second in the last point. */
    a = tui_axis_ending(1007, 10, 5);
    assert_int_equal(a.first % 5, 0);
    assert_int_equal(tui_axis_point(&a, 1007), 9);
    assert_int_equal(tui_axis_point(&a, 1005), 9);
    assert_int_equal(tui_axis_point(&a, 1004), 8);
    assert_int_equal(a.first, 960);
    /* No underflow near zero. */
    a = tui_axis_ending(3, 100, 1);
    assert_int_equal(a.first, 0);
    assert_int_equal(tui_axis_col(0, 2), 0);
    assert_int_equal(tui_axis_col(5, 2), 2);
    assert_int_equal(tui_axis_col(5, 1), 5);
    assert_int_equal(tui_axis_col(-1, 2), -1);
}

static bool inside(tui_rect r, int rows, int cols)
{
    return r.h >= 0 && r.w >= 0 && r.y >= 0 && r.x >= 0 && r.y + r.h <= rows && r.x + r.w <= cols;
}

static bool overlap(tui_rect a, tui_rect b)
{
    if (!a.h || !a.w || !b.h || !b.w)
        return false;
    return a.y < b.y + b.h && b.y < a.y + a.h && a.x < b.x + b.w && b.x < a.x + a.w;
}

static void test_layout(void **state)
{
    (void)state;
    tui_dash_layout l;
    assert_false(tui_layout_dash(9, 80, false, &l));
    assert_false(tui_layout_dash(24, 39, false, &l));
    assert_true(tui_layout_dash(24, 80, false, &l));
    assert_int_equal(l.npanels, 6);           /* every panel at 80x24 */
    assert_int_equal(l.banner.h, 0);
    assert_true(tui_layout_dash(24, 80, 1, &l));
    assert_int_equal(l.banner.h, 1);
    assert_true(l.npanels >= 4);
    /* A banner wrapped over 3 rows (the demo's at 80 columns) keeps them. */
    assert_true(tui_layout_dash(24, 80, 3, &l));
    assert_int_equal(l.banner.h, 3);
    assert_int_equal(l.counters.y, 4);
    assert_true(l.npanels >= 4);
    for (int rows = 10; rows <= 120; rows += 7) {
        for (int cols = 40; cols <= 320; cols += 23) {
            for (int b = 0; b < 4; b++) {
                assert_true(tui_layout_dash(rows, cols, b, &l));
                tui_rect all[6 + TUI_DASH_PANELS] = {l.header, l.banner, l.counters,
                                                     l.axis,   l.status, l.footer};
                int n = 6;
                for (int i = 0; i < l.npanels; i++) {
                    all[n++] = l.panels[i];
                    assert_true(l.panels[i].h >= 4);
                }
                for (int i = 0; i < n; i++) {
                    assert_true(inside(all[i], rows, cols));
                    for (int j = i + 1; j < n; j++)
                        assert_false(overlap(all[i], all[j]));
                }
                assert_int_equal(l.footer.y, rows - 1);
            }
        }
    }
    /* Wide terminals use three columns of panels. */
    assert_true(tui_layout_dash(50, 200, false, &l));
    assert_int_equal(l.npanels, 6);
    assert_int_equal(l.panels[0].y, l.panels[2].y);
    /* With the launch ledger's panel: seven at 120x40 in four rows of two,
     * none overlapping; fewer where they do not fit, never more. */
    assert_true(tui_layout_dash_panels(40, 120, 0, 0, TUI_DASH_PANELS, &l));
    assert_int_equal(l.npanels, 7);
    assert_int_equal(l.panels[6].x, 0);
    assert_true(l.panels[6].y > l.panels[4].y);
    for (int i = 0; i < 7; i++)
        for (int j = i + 1; j < 7; j++)
            assert_false(overlap(l.panels[i], l.panels[j]));
    assert_true(tui_layout_dash_panels(24, 80, 0, 0, TUI_DASH_PANELS, &l));
    assert_true(l.npanels >= 4 && l.npanels <= 7);
    assert_true(tui_layout_dash_panels(24, 80, 0, 0, 99, &l));   /* out of range: the base */
    assert_true(l.npanels <= TUI_DASH_PANELS_BASE);
}

/* Lines of a wrap, as strings, for the assertions below. */
static size_t wrap_lines(const char *s, int width, char out[][96], size_t max)
{
    tui_line l[16];
    size_t n = tui_wrap(s, width, l, max < 16 ? max : 16);
    for (size_t i = 0; i < n; i++)
        snprintf(out[i], 96, "%.*s", (int)l[i].len, s + l[i].start);
    return n;
}

static void test_wrap(void **state)
{
    (void)state;
    char o[8][96];
    /* Breaks at spaces, never inside a word; each line fits the width. */
    const char *hint = "Press k for the kind panel and turn runtime off (space): the drops stop.";
    size_t n = wrap_lines(hint, 30, o, 8);
    assert_int_equal(n, 3);
    assert_string_equal(o[0], "Press k for the kind panel and");
    assert_string_equal(o[1], "turn runtime off (space): the");
    assert_string_equal(o[2], "drops stop.");
    for (size_t i = 0; i < n; i++)
        assert_true(strlen(o[i]) <= 30);
    /* Fits on one line: one line, unchanged. */
    assert_int_equal(wrap_lines("short text", 30, o, 8), 1);
    assert_string_equal(o[0], "short text");
    /* A word longer than the line is cut, the rest goes on. */
    n = wrap_lines("abcdefghij xy", 4, o, 8);
    assert_int_equal(n, 4);
    assert_string_equal(o[0], "abcd");
    assert_string_equal(o[2], "ij");
    assert_string_equal(o[3], "xy");
    /* UTF-8 counts one column per code point (braille, ellipsis). */
    n = wrap_lines("\xe2\xa3\xbf\xe2\xa3\xbf\xe2\xa3\xbf ab", 3, o, 8);
    assert_int_equal(n, 2);
    assert_string_equal(o[0], "\xe2\xa3\xbf\xe2\xa3\xbf\xe2\xa3\xbf");
    /* max bounds the lines; empty text has none. */
    assert_int_equal(wrap_lines(hint, 10, o, 2), 2);
    assert_int_equal(wrap_lines("", 10, o, 2), 0);
    assert_int_equal(wrap_lines("   ", 10, o, 2), 0);
}

static void test_format(void **state)
{
    (void)state;
    char b[16];
    tui_format_count(0, b, sizeof b);
    assert_string_equal(b, "0");
    tui_format_count(999, b, sizeof b);
    assert_string_equal(b, "999");
    tui_format_count(1234, b, sizeof b);
    assert_string_equal(b, "1.2k");
    tui_format_count(34000, b, sizeof b);
    assert_string_equal(b, "34k");
    tui_format_count(5.6e6, b, sizeof b);
    assert_string_equal(b, "5.6M");
    tui_format_count(999999, b, sizeof b);
    assert_string_equal(b, "1.0M");
    tui_format_ns(850, b, sizeof b);
    assert_string_equal(b, "850ns");
    tui_format_ns(2000, b, sizeof b);
    assert_string_equal(b, "2.0us");
    tui_format_ns(3.4e6, b, sizeof b);
    assert_string_equal(b, "3.4ms");
    tui_format_ns(1.2e9, b, sizeof b);
    assert_string_equal(b, "1.2s");
    tui_format_secs(45, b, sizeof b);
    assert_string_equal(b, "45s");
    tui_format_secs(723, b, sizeof b);
    assert_string_equal(b, "12m03s");
    tui_format_secs(3 * 3600 + 5 * 60, b, sizeof b);
    assert_string_equal(b, "3h05m");
}

/* The suggestion line prints the model's first recommendation and adds
 * the kind panel's key only when the session runs and a key applies it. */
static void test_suggest_line(void **state)
{
    (void)state;
    model_summary s;
    model_advice a[2];
    char buf[192];
    memset(&s, 0, sizeof s);
    memset(a, 0, sizeof a);
    s.complete = true;
    tui_suggest_line(&s, a, 0, true, buf, sizeof buf);
    assert_string_equal(buf, "No losses now: nothing to change.");
    tui_suggest_line(&s, a, 0, false, buf, sizeof buf);
    assert_string_equal(buf, "Nothing lost: a zero-loss baseline.");
    s.complete = false;
    tui_suggest_line(&s, a, 0, false, buf, sizeof buf);
    assert_non_null(strstr(buf, "INCOMPLETE"));
    a[0].code = MODEL_ADVICE_RAISE_POOL;
    a[0].pool = 36;
    snprintf(a[0].brief, sizeof a[0].brief, "Raise the pool 2 -> 36 buffers");
    a[1].code = MODEL_ADVICE_NARROW;
    snprintf(a[1].brief, sizeof a[1].brief, "Narrow the kinds to kernel");
    tui_suggest_line(&s, a, 2, true, buf, sizeof buf);
    assert_string_equal(buf, "Raise the pool 2 -> 36 buffers.\nPress + to double the pool until it reaches 36.");
    tui_suggest_line(&s, a, 2, false, buf, sizeof buf);
    assert_string_equal(buf, "Raise the pool 2 -> 36 buffers.");
    tui_suggest_line(&s, a + 1, 1, true, buf, sizeof buf);
    assert_string_equal(buf, "Narrow the kinds to kernel.\nSpace turns the selected kind off.");
    a[0].code = MODEL_ADVICE_BUFFER_SIZE;   /* no key changes the buffer size */
    snprintf(a[0].brief, sizeof a[0].brief, "Raise the buffer size 64K -> 4M");
    tui_suggest_line(&s, a, 1, true, buf, sizeof buf);
    assert_string_equal(buf, "Raise the buffer size 64K -> 4M.");
    /* a rerun first, then what a key does now */
    tui_suggest_line(&s, a, 2, true, buf, sizeof buf);
    assert_string_equal(buf, "Raise the buffer size 64K -> 4M.\nNow: Narrow the kinds to kernel. "
                             "Space turns the selected kind off.");
    tui_suggest_line(&s, a, 2, false, buf, sizeof buf);
    assert_string_equal(buf, "Raise the buffer size 64K -> 4M.");
}

static void test_summary_cache(void **state)
{
    (void)state;
    enum { S = 1000000000 };
    static const struct {
        bool have_sum;
        model_state state;
        uint64_t sum_at, sum_hb;
        bool sum_final;
        uint64_t now_s, hb_ns;
        bool has_final;
        int want;
    } c[] = {
        /* Never computed, or the final status appeared: recompute now. */
        {false, MODEL_STATE_RUNNING, 0, 0, false, 100, 0, false, TUI_SUM_REQUIRED},
        {true, MODEL_STATE_RUNNING, 100, 99ull * S, false, 100, 99ull * S, true,
         TUI_SUM_REQUIRED},
        /* Ended sessions never change. */
        {true, MODEL_STATE_ENDED, 100, 99ull * S, true, 5000, 99ull * S, true, TUI_SUM_FRESH},
        /* Running with a new heartbeat: periodically, every 2 s. */
        {true, MODEL_STATE_RUNNING, 100, 99ull * S, false, 101, 100ull * S, false,
         TUI_SUM_FRESH},
        {true, MODEL_STATE_RUNNING, 100, 99ull * S, false, 102, 101ull * S, false,
         TUI_SUM_PERIODIC},
        /* Running, heartbeat stopped: required once stale (-> crashed). */
        {true, MODEL_STATE_RUNNING, 100, 99ull * S, false, 103, 99ull * S, false, TUI_SUM_FRESH},
        {true, MODEL_STATE_RUNNING, 100, 99ull * S, false, 110, 99ull * S, false,
         TUI_SUM_REQUIRED},
        /* A crashed session that comes back to life; one that stays dead. */
        {true, MODEL_STATE_CRASHED, 100, 50ull * S, false, 101, 100ull * S, false,
         TUI_SUM_REQUIRED},
        {true, MODEL_STATE_CRASHED, 100, 50ull * S, false, 500, 50ull * S, false, TUI_SUM_FRESH},
        /* Stopped: continued (a new heartbeat) at once; else looked at every
         * 2 s, since its process may end without a heartbeat (crashed). */
        {true, MODEL_STATE_STOPPED, 100, 50ull * S, false, 101, 100ull * S, false,
         TUI_SUM_REQUIRED},
        {true, MODEL_STATE_STOPPED, 100, 50ull * S, false, 101, 50ull * S, false, TUI_SUM_FRESH},
        {true, MODEL_STATE_NOT_RESPONDING, 100, 50ull * S, false, 102, 50ull * S, false,
         TUI_SUM_PERIODIC},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        assert_int_equal(tui_summary_stale(c[i].have_sum, c[i].state, c[i].sum_at, c[i].sum_hb,
                                           c[i].sum_final, c[i].now_s, c[i].hb_ns,
                                           c[i].has_final),
                         c[i].want);
}

static void test_hist(void **state)
{
    (void)state;
    tui_hist h;
    assert_int_equal(tui_hist_init(&h), 0);
    bool va;
    tui_hist_set(&h, TUI_S_REC_TOTAL, 1000, 5.0);
    tui_hist_set(&h, TUI_S_REC_TOTAL, 1003, 7.0);
    assert_int_equal(h.base, 1000);
    assert_int_equal(h.len, 4);
    assert_true(tui_hist_at(&h, TUI_S_REC_TOTAL, 1000, &va) == 5.0 && va);
    assert_true(tui_hist_at(&h, TUI_S_REC_TOTAL, 1001, &va) == 0.0 && !va);   /* gap */
    assert_true(tui_hist_at(&h, TUI_S_REC_TOTAL, 1003, &va) == 7.0 && va);
    assert_true(tui_hist_at(&h, TUI_S_REC_TOTAL, 999, &va) == 0.0 && !va);
    /* Past the capacity the oldest seconds go; the window stays contiguous. */
    uint64_t far = 1000 + 2 * (uint64_t)TUI_HIST_KEEP + 10;
    tui_hist_set(&h, TUI_S_REC_TOTAL, far, 9.0);
    assert_int_equal(h.base + h.len - 1, far);
    assert_true(h.len <= h.cap);
    assert_true(tui_hist_at(&h, TUI_S_REC_TOTAL, far, &va) == 9.0 && va);
    assert_false(tui_hist_at(&h, TUI_S_REC_TOTAL, 1003, &va) != 0.0 || va);
    /* Shift that keeps data: fill to the edge then step past it. */
    tui_hist_reset(&h);
    for (uint64_t i = 0; i < h.cap; i++)
        tui_hist_set(&h, TUI_S_LOSS_TOTAL, 5000 + i, (double)i);
    tui_hist_set(&h, TUI_S_LOSS_TOTAL, 5000 + h.cap, 1.5);
    assert_int_equal(h.len, TUI_HIST_KEEP);
    assert_true(tui_hist_at(&h, TUI_S_LOSS_TOTAL, 5000 + h.cap - 1, &va) == (double)(h.cap - 1));
    assert_true(va);
    assert_true(tui_hist_at(&h, TUI_S_LOSS_TOTAL, 5000 + h.cap, &va) == 1.5);
    tui_hist_free(&h);
}

/* The kind panel's CUPTI and scope lines: the model's words, from the
 * flags, the open epoch and the capture range configured. */
static void test_scope_text(void **state)
{
    model_scope_words w;
    (void)state;
    model_scope_brief(CUPSTORE_HF_DORMANT, NULL, NULL, &w);
    assert_string_equal(w.cupti, "CUPTI: dormant, not attached (no CUPTI call); a kind on attaches");
    assert_string_equal(w.scope, "scope: all devices");
    assert_string_equal(w.api, "");
    cupstore_epoch e = {.id = 2, .kinds = 1, .flags = CUPSTORE_EPOCH_ATTACHED |
                        CUPSTORE_EPOCH_LATE_ATTACH | CUPSTORE_EPOCH_DROPS_UNATTRIBUTED,
                        .attach_ns = 1, .attach_cost_ns = 420000, .devices = 0x5,
                        .pre_contexts = 2};
    model_scope_brief(CUPSTORE_HF_ATTACHED | CUPSTORE_HF_SCOPED, &e, NULL, &w);
    assert_string_equal(w.cupti, "CUPTI: attached (late, 0.4 ms)");
    assert_string_equal(w.scope, "scope: devices 0,2; drops of 2 earlier context(s): device none");
    cupstore_epoch c = {.id = 3, .flags = CUPSTORE_EPOCH_OUT_OF_SCOPE | CUPSTORE_EPOCH_CAPTURE};
    model_scope_brief(CUPSTORE_HF_SCOPED, &c, "cudaProfilerApi", &w);
    assert_string_equal(w.cupti, "CUPTI: waiting for cudaProfilerStart (subscribed only)");
    assert_string_equal(w.scope, "scope: all devices, capture range (outside a range)");
    model_scope_brief(CUPSTORE_HF_SCOPED, &c, "nvtx:step", &w);
    assert_string_equal(w.cupti, "CUPTI: waiting for the range nvtx:step");
    assert_string_equal(w.scope, "scope: all devices, capture range nvtx:step (outside a range)");
    c.flags = CUPSTORE_EPOCH_ATTACHED | CUPSTORE_EPOCH_CAPTURE;
    model_scope_brief(CUPSTORE_HF_ATTACHED, &c, NULL, &w);
    assert_string_equal(w.cupti, "CUPTI: attached");
    assert_string_equal(w.scope, "scope: all devices, capture range (in a range)");
    /* periodic windows: the schedule, where we are in it, the countdown */
    cupstore_epoch wd = {.id = 5, .flags = CUPSTORE_EPOCH_OUT_OF_SCOPE | CUPSTORE_EPOCH_CAPTURE,
                         .period_ms = 60000, .window_ms = 5000};
    char next[64];
    model_scope_brief(CUPSTORE_HF_SCOPED, &wd, "every:60s/5s", &w);
    assert_string_equal(w.cupti, "CUPTI: waiting for the first window (nothing attached)");
    assert_string_equal(w.scope, "scope: all devices, windows every:1m/5s (between windows)");
    model_window_next(&wd, 600ull * 1000000000u + 18000000000ull, next, sizeof next);
    assert_string_equal(next, "next window in 42.0 s");
    model_window_next(&wd, 600ull * 1000000000u + 3500000000ull, next, sizeof next);
    assert_string_equal(next, "window closes in 1.5 s");
    wd.period_ms = 3600000;
    model_window_next(&wd, 3600ull * 1000000000u + 60000000000ull, next, sizeof next);
    assert_string_equal(next, "next window in 59m00s");
    wd.flags = CUPSTORE_EPOCH_ATTACHED | CUPSTORE_EPOCH_CAPTURE;
    wd.period_ms = 1000;
    wd.window_ms = 300;
    model_scope_brief(CUPSTORE_HF_ATTACHED, &wd, NULL, &w);
    assert_string_equal(w.scope, "scope: all devices, windows every:1s/300ms (in a window)");
    model_window_next(&e, 1, next, sizeof next);   /* no schedule: nothing */
    assert_string_equal(next, "");
    /* the API record policy: what was muted, or that CUPTI could not */
    cupstore_epoch p = {.id = 4, .kinds = CUPSTORE_KINDS_API, .flags = CUPSTORE_EPOCH_ATTACHED,
                        .api_mode = CUPSTORE_API_GPU, .api_muted = {360, 570},
                        .api_policy = "gpu include=cudaGetDevice"};
    model_scope_brief(CUPSTORE_HF_ATTACHED, &p, NULL, &w);
    assert_string_equal(w.scope, "scope: all devices");
    assert_string_equal(w.api, "API gpu include=cudaGetDevice, 930 call ids muted");
    p.flags |= CUPSTORE_EPOCH_API_UNFILTERED;
    model_scope_brief(CUPSTORE_HF_ATTACHED, &p, NULL, &w);
    assert_string_equal(w.api, "API gpu include=cudaGetDevice: every call (CUPTI cannot mute)");
    p.kinds = 1;   /* no API kind on: nothing to say */
    model_scope_brief(CUPSTORE_HF_ATTACHED, &p, NULL, &w);
    assert_string_equal(w.api, "");

    /* the report's sentences: an NVTX capture range by its name */
    char lines[8][200];
    cupstore_epoch r = {.id = 2, .kinds = 1, .flags = CUPSTORE_EPOCH_CAPTURE |
                        CUPSTORE_EPOCH_ATTACHED, .attach_ns = 1, .attach_cost_ns = 1500000};
    assert_int_equal(model_scope_lines(&r, "nvtx:step", lines, 8), 2);
    assert_string_equal(lines[0], "in scope: a capture range (nvtx:step)");
    assert_string_equal(lines[1], "CUPTI attached at the first capture range (attach took 1.5 ms)");
    assert_int_equal(model_scope_lines(&r, "cudaProfilerApi", lines, 8), 2);
    assert_string_equal(lines[0], "in scope: a capture range (cudaProfilerStart to cudaProfilerStop)");
    r.flags = CUPSTORE_EPOCH_CAPTURE | CUPSTORE_EPOCH_OUT_OF_SCOPE;
    r.attach_ns = 0;
    assert_int_equal(model_scope_lines(&r, "nvtx:step", lines, 8), 1);
    assert_string_equal(lines[0], "out of scope (outside the capture range nvtx:step); its time is "
                                  "neither loss nor evidence");
}

/* ---- NVTX ranges on the dashboard (tui_ranges.c) ------------------------ */
#define RNS 1000000000ull
#define RBASE 1700000000ull   /* the session's first second */

/* One range row: name id, domain id, flags, thread, start and end offsets
 * from RBASE in milliseconds. */
static void range_row(cupstore_txn *txn, uint32_t id, uint32_t name, uint32_t dom, uint32_t flags,
                      uint32_t tid, uint64_t start_ms, uint64_t end_ms)
{
    cupstore_range r;
    memset(&r, 0, sizeof r);
    r.id = id;
    r.name_id = name;
    r.domain_id = dom;
    r.flags = flags;
    r.pid = 77;
    r.tid = tid;
    if (flags & CUPSTORE_RANGE_START)
        r.start_ns = RBASE * RNS + start_ms * 1000000u;
    if (flags & (CUPSTORE_RANGE_END | CUPSTORE_RANGE_POINT))
        r.end_ns = RBASE * RNS + end_ms * 1000000u;
    assert_int_equal(cupstore_range_put(txn, &r), 0);
}

#define SE (CUPSTORE_RANGE_START | CUPSTORE_RANGE_END)

/* A session whose ranges are known: "step" (default domain) six times --
 * closed ones of 100, 900, 300 and 500 ms (two starting in one second, on
 * two threads), a point, one left open --, an unbalanced end, "phase",
 * "step" again in domain "torch", and a hostile name. */
static cupstore_env *ranges_store(char *dir, size_t len)
{
    snprintf(dir, len, "/tmp/cuptop-tui-ranges.XXXXXX");
    assert_non_null(mkdtemp(dir));
    cupstore_env *env;
    assert_int_equal(cupstore_session_create(&env, NULL, dir, (int)getpid(), NULL), 0);
    cupstore_txn *txn;
    assert_int_equal(cupstore_txn_begin(env, true, &txn), 0);
    assert_int_equal(cupstore_name_put(txn, 1, "step", 4), 0);
    assert_int_equal(cupstore_name_put(txn, 2, "phase", 5), 0);
    static const char evil[] = "\x1b]0;pwned\x07\x1b[2Jstep\xff";
    assert_int_equal(cupstore_name_put(txn, 3, evil, sizeof evil - 1), 0);
    assert_int_equal(cupstore_name_put(txn, 4, "torch", 5), 0);
    range_row(txn, 10, 1, 0, SE, 1, 10000, 10100);
    range_row(txn, 11, 1, 0, SE, 1, 20000, 20900);
    range_row(txn, 12, 1, 0, SE, 2, 20500, 20800);
    range_row(txn, 13, 1, 0, SE, 1, 40000, 40500);
    range_row(txn, 14, 1, 0, CUPSTORE_RANGE_START, 1, 50000, 0);
    range_row(txn, 15, 1, 0, CUPSTORE_RANGE_POINT | CUPSTORE_RANGE_START, 1, 45000, 45000);
    range_row(txn, 16, 0, 0, CUPSTORE_RANGE_END, 1, 0, 47000);
    range_row(txn, 20, 2, 0, SE, 1, 5000, 65000);
    range_row(txn, 30, 1, 4, SE, 3, 60000, 62000);
    range_row(txn, 40, 3, 0, SE, 1, 70000, 70001);
    assert_int_equal(cupstore_txn_commit(txn), 0);
    return env;
}

static void ranges_done(cupstore_env *env, const char *dir)
{
    char cmd[128];
    cupstore_env_close(env);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void ranges_load(tui_ranges *r, cupstore_env *env)
{
    cupstore_txn *txn;
    assert_int_equal(cupstore_txn_begin(env, false, &txn), 0);
    assert_int_equal(tui_ranges_load(r, txn, 1), 0);
    cupstore_txn_abort(txn);
}

/* The ranges tests' fixture: the store above, a tui_ranges not loaded yet
 * (freeing one that never loaded is safe). */
struct ranges_fix {
    char dir[64];
    cupstore_env *env;
    tui_ranges r;
};

static int ranges_setup(void **state)
{
    struct ranges_fix *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->env = ranges_store(f->dir, sizeof f->dir);
    tui_ranges_free(&f->r);
    *state = f;
    return 0;
}

static int ranges_teardown(void **state)
{
    struct ranges_fix *f = *state;
    tui_ranges_free(&f->r);
    ranges_done(f->env, f->dir);
    free(f);
    return 0;
}

static long name_index(const tui_ranges *r, const char *label)
{
    for (size_t k = 0; k < r->m->nnames; k++) {
        char buf[96];
        tui_ranges_label(r, k, true, buf, sizeof buf);
        if (strcmp(buf, label) == 0)
            return (long)k;
    }
    return -1;
}

static uint32_t sel_id(const tui_ranges *r)
{
    return r->sel >= 0 ? r->m->inst[r->sel].id : 0;
}

static void test_ranges_step(void **state)
{
    struct ranges_fix *f = *state;
    tui_ranges *r = &f->r;
    assert_true(tui_ranges_stale(r, false, 0, 0, 0));   /* never loaded */
    ranges_load(r, f->env);
    assert_int_equal(r->m->nnames, 4);
    long step = name_index(r, "step"), torch = name_index(r, "torch/step");
    assert_true(step >= 0 && torch >= 0 && step != torch);
    /* Hostile bytes never reach the screen: no control character left. */
    for (size_t k = 0; k < r->m->nnames; k++) {
        char buf[96];
        tui_ranges_label(r, k, false, buf, sizeof buf);
        for (const unsigned char *p = (const unsigned char *)buf; *p; p++)
            assert_true(*p >= 0x20 && *p != 0x7f);
    }
    assert_int_equal(tui_ranges_jump(r, TUI_RANGE_NEXT, RBASE), -1);   /* nothing chosen */
    assert_int_equal(tui_ranges_choose(r, step), 0);
    assert_int_equal(r->nopen, 1);
    /* next, from the cursor at the first second, through every instance in
     * time order: the two that start in second 20 one after the other. */
    static const uint32_t order[] = {10, 11, 12, 13, 15, 14};
    for (size_t i = 0; i < 6; i++) {
        uint64_t cur = i == 0 ? RBASE : r->m->inst[r->sel].start_ns / RNS;
        assert_true(tui_ranges_jump(r, TUI_RANGE_NEXT, cur) >= 0);
        assert_int_equal(sel_id(r), order[i]);
        assert_int_equal(tui_ranges_nth(r, r->sel), i + 1);
    }
    assert_int_equal(tui_ranges_jump(r, TUI_RANGE_NEXT, RBASE + 50), -1);   /* the last */
    assert_int_equal(sel_id(r), 14);
    for (size_t i = 6; i-- > 1;) {   /* and back */
        assert_true(tui_ranges_jump(r, TUI_RANGE_PREV, r->m->inst[r->sel].start_ns / RNS) >= 0);
        assert_int_equal(sel_id(r), order[i - 1]);
    }
    assert_int_equal(tui_ranges_jump(r, TUI_RANGE_PREV, RBASE + 10), -1);
    /* The cursor moved away from the selection: from the cursor. */
    assert_true(tui_ranges_jump(r, TUI_RANGE_NEXT, RBASE + 30) >= 0);
    assert_int_equal(sel_id(r), 13);
    assert_true(tui_ranges_jump(r, TUI_RANGE_PREV, RBASE + 30) >= 0);
    assert_int_equal(sel_id(r), 12);
    /* the cursor in the selection's second: its neighbour in time */
    assert_true(tui_ranges_jump(r, TUI_RANGE_NEXT, RBASE + 20) >= 0);
    assert_int_equal(sel_id(r), 13);
    /* no selection, the cursor on second 20: the first that starts in it */
    assert_int_equal(tui_ranges_choose(r, step), 0);
    assert_true(tui_ranges_jump(r, TUI_RANGE_NEXT, RBASE + 20) >= 0);
    assert_int_equal(sel_id(r), 11);
    /* slowest, again and again: 900, 500, 300, 100 ms, then round. */
    static const uint32_t slow[] = {11, 13, 12, 10, 11};
    for (size_t i = 0; i < 5; i++) {
        assert_true(tui_ranges_jump(r, TUI_RANGE_SLOWEST, RBASE) >= 0);
        assert_int_equal(sel_id(r), slow[i]);
        assert_int_equal(r->slow_rank, (long)(i % 4));
    }
    /* its window and mark name (= export --range step --nth 2) */
    uint64_t from = 0, to = 0;
    assert_int_equal(tui_ranges_window(r, 0, &from, &to), 0);
    assert_true(from == RBASE * RNS + 20000000000ull && to == RBASE * RNS + 20900000000ull);
    char mark[64];
    tui_ranges_mark_name(r, mark, sizeof mark);
    assert_string_equal(mark, "step-2");
    /* a reload keeps the choice and the selection */
    ranges_load(r, f->env);
    assert_int_equal(sel_id(r), 11);
    assert_int_equal(r->k, step);
    /* the open one ends at the session's last time; a point has no window */
    assert_true(tui_ranges_jump(r, TUI_RANGE_PREV, RBASE + 51) >= 0);
    assert_int_equal(sel_id(r), 14);
    assert_int_equal(tui_ranges_window(r, (RBASE + 59) * RNS, &from, &to), 0);
    assert_true(from == (RBASE + 50) * RNS && to == (RBASE + 59) * RNS);
    assert_true(tui_ranges_jump(r, TUI_RANGE_PREV, RBASE + 50) >= 0);
    assert_int_equal(sel_id(r), 15);
    assert_int_equal(tui_ranges_window(r, 0, &from, &to), EINVAL);
    /* the cursor could not reach the selection (clamped to the history's
     * last second): stepping goes on from the selection, not the cursor */
    assert_true(tui_ranges_jump(r, TUI_RANGE_PREV, RBASE + 41) >= 0);
    assert_int_equal(sel_id(r), 13);
    r->sel_at = RBASE + 30;
    assert_true(tui_ranges_jump(r, TUI_RANGE_NEXT, RBASE + 30) >= 0);
    assert_int_equal(sel_id(r), 15);
    /* the other domain's "step" is its own name: one instance */
    assert_int_equal(tui_ranges_choose(r, torch), 0);
    assert_true(tui_ranges_jump(r, TUI_RANGE_NEXT, RBASE) >= 0);
    assert_int_equal(sel_id(r), 30);
    assert_int_equal(tui_ranges_jump(r, TUI_RANGE_NEXT, RBASE + 60), -1);
}

static void test_ranges_lane(void **state)
{
    struct ranges_fix *f = *state;
    tui_ranges *r = &f->r;
    ranges_load(r, f->env);
    assert_int_equal(tui_ranges_choose(r, name_index(r, "step")), 0);
    uint8_t cells[64];
    tui_axis a = {RBASE, 1, 60};   /* seconds 0..59, one per column */
    tui_ranges_lane(r, &a, 1, (RBASE + 57) * RNS, cells, 60);
    assert_int_equal(cells[0], TUI_LANE_NONE);
    assert_int_equal(cells[10], TUI_LANE_RANGE);
    assert_int_equal(cells[11], TUI_LANE_NONE);   /* 100 ms: its second only */
    assert_int_equal(cells[20], TUI_LANE_RANGE);
    assert_int_equal(cells[40], TUI_LANE_RANGE);
    assert_int_equal(cells[45], TUI_LANE_POINT);
    assert_int_equal(cells[49], TUI_LANE_NONE);
    for (int c = 50; c <= 57; c++)                /* open: to the session's end */
        assert_int_equal(cells[c], TUI_LANE_OPEN);
    assert_int_equal(cells[58], TUI_LANE_NONE);
    assert_int_equal(cells[5], TUI_LANE_NONE);    /* "phase" is another name */
    /* the selection is flagged; a range wins over a point in one column */
    assert_true(tui_ranges_jump(r, TUI_RANGE_SLOWEST, RBASE) >= 0);
    tui_axis z = {RBASE, 5, 12};   /* zoomed: 5 s per point, 2 points per column */
    tui_ranges_lane(r, &z, 2, (RBASE + 57) * RNS, cells, 6);
    assert_int_equal(cells[0], TUI_LANE_NONE);                   /* 0..9 s   */
    assert_int_equal(cells[1], TUI_LANE_RANGE);                  /* 10..19 s */
    assert_int_equal(cells[2], TUI_LANE_RANGE | TUI_LANE_SEL);   /* 20..29 s */
    assert_int_equal(cells[4], TUI_LANE_RANGE);                  /* 40..49 s: range + point */
    assert_int_equal(cells[5], TUI_LANE_OPEN);                   /* 50..59 s */
    /* a view after the data, and one before: nothing, nothing read past */
    tui_axis late = {RBASE + 100, 1, 20}, early = {RBASE - 100, 1, 20};
    tui_ranges_lane(r, &late, 1, (RBASE + 57) * RNS, cells, 20);
    for (int c = 0; c < 20; c++)
        assert_int_equal(cells[c], TUI_LANE_NONE);
    tui_ranges_lane(r, &early, 1, (RBASE + 57) * RNS, cells, 20);
    for (int c = 0; c < 20; c++)
        assert_int_equal(cells[c], TUI_LANE_NONE);
    /* a range that covers the whole view fills it */
    assert_int_equal(tui_ranges_choose(r, name_index(r, "phase")), 0);
    tui_axis mid = {RBASE + 20, 1, 10};
    tui_ranges_lane(r, &mid, 1, 0, cells, 10);
    for (int c = 0; c < 10; c++)
        assert_int_equal(cells[c], TUI_LANE_RANGE);
}

/* When the monitor reads the range table again. */
static void test_ranges_stale(void **state)
{
    struct ranges_fix *f = *state;
    tui_ranges *r = &f->r;
    ranges_load(r, f->env);   /* loaded_at = 1 ns, 10 rows, one open */
    assert_int_equal(r->rows, 10);
    assert_false(tui_ranges_stale(r, false, 11, 1 + 10 * RNS, 0));  /* ended: once */
    assert_false(tui_ranges_stale(r, true, 10, 1 + RNS / 2, 0));    /* not twice a second */
    assert_true(tui_ranges_stale(r, true, 10, 1 + RNS, 0));          /* open: may have closed */
    assert_false(tui_ranges_stale(r, true, 10, 1 + 4 * RNS, RNS / 2)); /* 10 x its cost */
    assert_true(tui_ranges_stale(r, true, 10, 1 + 5 * RNS, RNS / 2));
    r->m->open = 0;
    assert_false(tui_ranges_stale(r, true, 10, 1 + 10 * RNS, 0));    /* nothing new */
    assert_true(tui_ranges_stale(r, true, 11, 1 + 10 * RNS, 0));     /* new rows */
}

/* The lane takes its rows from the panels, just above the axis. */
static void test_layout_lane(void **state)
{
    (void)state;
    tui_dash_layout l;
    assert_true(tui_layout_dash_lane(24, 80, 0, 2, &l));
    assert_int_equal(l.lane.y, 19);
    assert_int_equal(l.lane.h, 2);
    assert_int_equal(l.lane.w, 80);
    assert_int_equal(l.axis.y, 21);
    assert_int_equal(l.npanels, 6);   /* 80x24 still shows all six */
    for (int i = 0; i < l.npanels; i++)
        assert_true(l.panels[i].y + l.panels[i].h <= l.lane.y);
    assert_true(tui_layout_dash(24, 80, 0, &l));
    assert_int_equal(l.lane.h, 0);
    /* small: a row of panels stays, the lane shrinks */
    assert_true(tui_layout_dash_lane(10, 40, 0, 2, &l));
    assert_true(l.lane.h <= 2);
    assert_true(l.npanels >= 1 || l.lane.h == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scale),        cmocka_unit_test(test_bucket),
        cmocka_unit_test(test_braille),      cmocka_unit_test(test_axis),
        cmocka_unit_test(test_layout),       cmocka_unit_test(test_wrap),
        cmocka_unit_test(test_format),       cmocka_unit_test(test_suggest_line),
        cmocka_unit_test(test_summary_cache),
        cmocka_unit_test(test_hist),         cmocka_unit_test(test_scope_text),
        cmocka_unit_test_setup_teardown(test_ranges_step, ranges_setup, ranges_teardown),
        cmocka_unit_test_setup_teardown(test_ranges_lane, ranges_setup, ranges_teardown),
        cmocka_unit_test_setup_teardown(test_ranges_stale, ranges_setup, ranges_teardown),
        cmocka_unit_test(test_layout_lane),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
