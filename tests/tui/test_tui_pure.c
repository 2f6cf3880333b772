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
    assert_true(tui_layout_dash(24, 80, true, &l));
    assert_int_equal(l.banner.h, 1);
    assert_true(l.npanels >= 4);
    for (int rows = 10; rows <= 120; rows += 7) {
        for (int cols = 40; cols <= 320; cols += 23) {
            for (int b = 0; b < 2; b++) {
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

static void test_baseline(void **state)
{
    (void)state;
    tui_epoch_stat e[4];
    memset(e, 0, sizeof e);
    e[0] = (tui_epoch_stat){.id = 1, .seconds = 600, .losses = 10};
    e[1] = (tui_epoch_stat){.id = 2, .seconds = 300, .losses = 0};
    e[2] = (tui_epoch_stat){.id = 3, .seconds = 400, .losses = 0};
    e[3] = (tui_epoch_stat){.id = 4, .seconds = 0, .losses = 0};
    assert_int_equal(tui_epoch_baseline(e, 4), 2);   /* widest zero-loss */
    e[1].seconds = 400;
    assert_int_equal(tui_epoch_baseline(e, 4), 2);   /* tie: the later one */
    e[1].losses = e[2].losses = 1;
    assert_int_equal(tui_epoch_baseline(e, 4), -1);  /* all lost (or empty) */
    assert_int_equal(tui_epoch_baseline(e, 0), -1);
}

static void test_suggest(void **state)
{
    (void)state;
    tui_suggest_in in;
    memset(&in, 0, sizeof in);
    in.nkinds = CUPSTORE_KIND_MAX;
    in.nloss = CUPSTORE_LOSS_MAX;
    in.kinds_enabled = CUPSTORE_KINDS_DEFAULT;
    in.rate_by_kind[CUPSTORE_KIND_KERNEL] = 20000;
    in.rate_by_kind[CUPSTORE_KIND_RUNTIME] = 30000;
    in.rate_by_kind[CUPSTORE_KIND_MEMCPY] = 5000;
    in.rate_by_kind[CUPSTORE_KIND_SYNC] = 90000;   /* not enabled: ignored */
    char buf[256];
    assert_int_equal(tui_suggest(&in, cupstore_kind_name, cupstore_loss_name, buf, sizeof buf), -1);
    assert_non_null(strstr(buf, "No losses"));
    in.loss_rate[CUPSTORE_LOSS_DECLINED] = 100;
    in.buf_outstanding = 3; /* buffers wait in the queue: narrowing helps */
    in.pool_limit = 8;
    assert_int_equal(tui_suggest(&in, cupstore_kind_name, cupstore_loss_name, buf, sizeof buf),
                     CUPSTORE_KIND_RUNTIME);
    assert_non_null(strstr(buf, "Narrow runtime"));
    assert_non_null(strstr(buf, "buffer pool"));
    in.buf_outstanding = 8; /* CUPTI holds the whole pool: only a bigger pool helps */
    assert_int_equal(tui_suggest(&in, cupstore_kind_name, cupstore_loss_name, buf, sizeof buf), -1);
    assert_non_null(strstr(buf, "double the buffer pool"));
    in.loss_rate[CUPSTORE_LOSS_DECLINED] = 0;
    in.loss_rate[CUPSTORE_LOSS_CUPTI_DROPPED] = 100; /* CUPTI >= 27 reports declines as drops */
    assert_int_equal(tui_suggest(&in, cupstore_kind_name, cupstore_loss_name, buf, sizeof buf), -1);
    assert_non_null(strstr(buf, "double the buffer pool"));
    in.loss_rate[CUPSTORE_LOSS_CUPTI_DROPPED] = 0;
    in.loss_rate[CUPSTORE_LOSS_DECLINED] = 100;
    in.buf_outstanding = 3;
    in.loss_rate[CUPSTORE_LOSS_QUEUE_OVERFLOW] = 1000;
    in.queue_capacity = 64;
    tui_suggest(&in, cupstore_kind_name, cupstore_loss_name, buf, sizeof buf);
    assert_non_null(strstr(buf, "queue"));
    in.loss_rate[CUPSTORE_LOSS_STORE_REFUSED] = 5000;
    assert_int_equal(tui_suggest(&in, cupstore_kind_name, cupstore_loss_name, buf, sizeof buf), -1);
    assert_non_null(strstr(buf, "store"));
    in.loss_rate[CUPSTORE_LOSS_STORE_REFUSED] = 0;
    in.kinds_enabled = 1u << CUPSTORE_KIND_KERNEL;
    assert_int_equal(tui_suggest(&in, cupstore_kind_name, cupstore_loss_name, buf, sizeof buf), -1);
    assert_non_null(strstr(buf, "Only kernel"));
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scale),        cmocka_unit_test(test_bucket),
        cmocka_unit_test(test_braille),      cmocka_unit_test(test_axis),
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_format),       cmocka_unit_test(test_baseline),
        cmocka_unit_test(test_suggest),      cmocka_unit_test(test_summary_cache),
        cmocka_unit_test(test_hist),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
