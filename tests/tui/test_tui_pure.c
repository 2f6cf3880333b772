/* test_tui_pure.c - the TUI's pure functions: scaling, braille encoding,
 * time axis, layout, sanitising, number formats, epoch baseline,
 * suggestion, summary cache policy and the history arrays. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
    const uint64_t s = 1000000000u;
    /* Never computed, or the final status appeared: recompute now. */
    assert_int_equal(tui_summary_stale(false, MODEL_STATE_RUNNING, 0, 0, false, 100, 0, false),
                     TUI_SUM_REQUIRED);
    assert_int_equal(
        tui_summary_stale(true, MODEL_STATE_RUNNING, 100, 99 * s, false, 100, 99 * s, true),
        TUI_SUM_REQUIRED);
    /* Ended sessions never change. */
    assert_int_equal(
        tui_summary_stale(true, MODEL_STATE_ENDED, 100, 99 * s, true, 5000, 99 * s, true),
        TUI_SUM_FRESH);
    /* Running with a new heartbeat: periodically, every 2 s. */
    assert_int_equal(
        tui_summary_stale(true, MODEL_STATE_RUNNING, 100, 99 * s, false, 101, 100 * s, false),
        TUI_SUM_FRESH);
    assert_int_equal(
        tui_summary_stale(true, MODEL_STATE_RUNNING, 100, 99 * s, false, 102, 101 * s, false),
        TUI_SUM_PERIODIC);
    /* Running, heartbeat stopped: required once stale (-> crashed). */
    assert_int_equal(
        tui_summary_stale(true, MODEL_STATE_RUNNING, 100, 99 * s, false, 103, 99 * s, false),
        TUI_SUM_FRESH);
    assert_int_equal(
        tui_summary_stale(true, MODEL_STATE_RUNNING, 100, 99 * s, false, 110, 99 * s, false),
        TUI_SUM_REQUIRED);
    /* A crashed session that comes back to life; one that stays dead. */
    assert_int_equal(
        tui_summary_stale(true, MODEL_STATE_CRASHED, 100, 50 * s, false, 101, 100 * s, false),
        TUI_SUM_REQUIRED);
    assert_int_equal(
        tui_summary_stale(true, MODEL_STATE_CRASHED, 100, 50 * s, false, 500, 50 * s, false),
        TUI_SUM_FRESH);
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

/* The kind panel's CUPTI and scope lines, from flags and the open epoch. */
static void test_scope_text(void **state)
{
    char a[96], b[96];
    (void)state;
    tui_scope_text(CUPSTORE_HF_DORMANT, NULL, a, sizeof a, b, sizeof b);
    assert_string_equal(a, "CUPTI: dormant, not attached (no CUPTI call); a kind on attaches");
    assert_string_equal(b, "scope: all devices");
    cupstore_epoch e = {.id = 2, .kinds = 1, .flags = CUPSTORE_EPOCH_ATTACHED |
                        CUPSTORE_EPOCH_LATE_ATTACH | CUPSTORE_EPOCH_DROPS_UNATTRIBUTED,
                        .attach_ns = 1, .attach_cost_ns = 420000, .devices = 0x5,
                        .pre_contexts = 2};
    tui_scope_text(CUPSTORE_HF_ATTACHED | CUPSTORE_HF_SCOPED, &e, a, sizeof a, b, sizeof b);
    assert_string_equal(a, "CUPTI: attached (late, 0.4 ms)");
    assert_string_equal(b, "scope: devices 0,2; drops of 2 earlier context(s): device none");
    cupstore_epoch c = {.id = 3, .flags = CUPSTORE_EPOCH_OUT_OF_SCOPE | CUPSTORE_EPOCH_CAPTURE};
    tui_scope_text(CUPSTORE_HF_SCOPED, &c, a, sizeof a, b, sizeof b);
    assert_string_equal(a, "CUPTI: waiting for cudaProfilerStart (subscribed only)");
    assert_string_equal(b, "scope: all devices, capture range (outside a range)");
    c.flags = CUPSTORE_EPOCH_ATTACHED | CUPSTORE_EPOCH_CAPTURE;
    tui_scope_text(CUPSTORE_HF_ATTACHED, &c, a, sizeof a, b, sizeof b);
    assert_string_equal(a, "CUPTI: attached");
    assert_string_equal(b, "scope: all devices, capture range (in a range)");
    /* the API record policy: what was muted, or that CUPTI could not */
    cupstore_epoch p = {.id = 4, .kinds = CUPSTORE_KINDS_API, .flags = CUPSTORE_EPOCH_ATTACHED,
                        .api_mode = CUPSTORE_API_GPU, .api_muted = {360, 570},
                        .api_policy = "gpu include=cudaGetDevice"};
    tui_scope_text(CUPSTORE_HF_ATTACHED, &p, a, sizeof a, b, sizeof b);
    assert_string_equal(b, "scope: all devices; API gpu include=cudaGetDevice, 930 call ids muted");
    p.flags |= CUPSTORE_EPOCH_API_UNFILTERED;
    tui_scope_text(CUPSTORE_HF_ATTACHED, &p, a, sizeof a, b, sizeof b);
    assert_string_equal(b, "scope: all devices; API gpu include=cudaGetDevice: every call "
                           "(CUPTI cannot mute)");
    p.kinds = 1;   /* no API kind on: nothing to say */
    tui_scope_text(CUPSTORE_HF_ATTACHED, &p, a, sizeof a, b, sizeof b);
    assert_string_equal(b, "scope: all devices");
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
