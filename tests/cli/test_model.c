/*
 * test_model.c - unit tests of the pure parts of the model and the export
 * writers: time parsing, terminal-safe escaping, JSON string escaping and
 * microsecond formatting.  Verdicts on whole stores are tested by the
 * test_cli_*.sh scripts on stores written by fill_store.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "export.h"
#include "export_int.h"
#include "model.h"

static void test_parse_time(void **state)
{
    uint64_t t;
    (void)state;
    const uint64_t start = 1735732800, end = 1735732810;
    assert_int_equal(model_parse_time("start", start, end, &t), 0);
    assert_int_equal(t, start);
    assert_int_equal(model_parse_time("end", start, end, &t), 0);
    assert_int_equal(t, end);
    assert_int_equal(model_parse_time("+3", start, end, &t), 0);
    assert_int_equal(t, start + 3);
    assert_int_equal(model_parse_time("-4", start, end, &t), 0);
    assert_int_equal(t, end - 4);
    assert_int_equal(model_parse_time("1735732805", start, end, &t), 0);
    assert_int_equal(t, 1735732805);
    assert_int_equal(model_parse_time("2025-01-01T12:00:07Z", start, end, &t), 0);
    assert_int_equal(t, start + 7);
    assert_int_equal(model_parse_time("2025-01-01 12:00:08", start, end, &t), 0);
    assert_int_equal(t, start + 8);
    assert_int_equal(model_parse_time("2025-01-01T12:00:09+00:00", start, end, &t), 0);
    assert_int_equal(t, start + 9);
    const char *bad[] = {"", "+", "-", "yesterday", "12x", "2025-13-01T00:00:00Z",
                         "2025-01-01T25:00:00Z", "2025-01-01T12:00:00+02:00", "+-3",
                         "2026-02-30T00:00:00Z", "2026-02-29T00:00:00Z", "2025-04-31T00:00:00Z",
                         "2100-02-29T00:00:00Z",
                         "99999999999999999999999", "-99999999999", NULL};
    for (int i = 0; bad[i]; i++)
        assert_int_equal(model_parse_time(bad[i], start, end, &t), CUPSTORE_EINVAL);
    assert_int_equal(model_parse_time(NULL, start, end, &t), CUPSTORE_EINVAL);
    /* The last day of each month is accepted, the 29th of February in leap
     * years only. */
    assert_int_equal(model_parse_time("2024-02-29T00:00:00Z", start, end, &t), 0);
    assert_int_equal(t, 1709164800);
    assert_int_equal(model_parse_time("2000-02-29T00:00:00Z", start, end, &t), 0);
    assert_int_equal(model_parse_time("2026-12-31T23:59:59Z", start, end, &t), 0);
    assert_int_equal(model_parse_time("2025-04-30T00:00:00Z", start, end, &t), 0);
}

static void test_escape(void **state)
{
    char buf[128];
    (void)state;
    const char in[] = "a\x1b[2J\n\t\\\"\xff\xc3\xbc\xc2\x9b\x7f\xe2\x82";
    model_escape(buf, sizeof buf, in, sizeof in - 1);
    assert_string_equal(buf, "a\\x1b[2J\\n\\t\\\\\"\\xff\xc3\xbc\\xc2\\x9b\\x7f\\xe2\\x82");
    /* truncation never splits an escape and always terminates */
    model_escape(buf, 6, "\x1b\x1b\x1b", 3);
    assert_string_equal(buf, "\\x1b");
    model_escape(buf, 1, "abc", 3);
    assert_string_equal(buf, "");
}

static void test_sanitize(void **state)
{
    (void)state;
    char out[64];
    model_sanitize("ls \x1b[31mred\x1b[0m", 16, out, sizeof out, false);
    assert_string_equal(out, "ls ?[31mred?[0m");
    model_sanitize("a\tb\nc\r\x07\x7f", 9, out, sizeof out, false);
    assert_string_equal(out, "a?b?c???");
    /* C1 CSI (U+009B), RLO (U+202E), invalid and overlong UTF-8. */
    model_sanitize("x\xc2\x9by", 4, out, sizeof out, false);
    assert_string_equal(out, "x?y");
    model_sanitize("\xe2\x80\xae" "abc", 6, out, sizeof out, false);
    assert_string_equal(out, "?abc");
    model_sanitize("\xff\xc0\xaf", 3, out, sizeof out, false);
    assert_string_equal(out, "???");
    /* Valid UTF-8 stays (unless ASCII only). */
    model_sanitize("caf\xc3\xa9", 5, out, sizeof out, false);
    assert_string_equal(out, "caf\xc3\xa9");
    model_sanitize("caf\xc3\xa9", 5, out, sizeof out, true);
    assert_string_equal(out, "caf?");
    /* Truncated multibyte sequence at the end of the input. */
    model_sanitize("ab\xe2\x80", 4, out, sizeof out, false);
    assert_string_equal(out, "ab??");
    /* Bounded by len and by the output size; never splits a character. */
    model_sanitize("abcdef", 3, out, sizeof out, false);
    assert_string_equal(out, "abc");
    char small[4];
    model_sanitize("\xc3\xa9\xc3\xa9", 4, small, sizeof small, false);
    assert_string_equal(small, "\xc3\xa9");
    assert_int_equal(model_sanitize("x", 1, small, 0, false), 0);
}

/* The same refusals in both styles: bidi overrides and isolates, zero-width
 * characters, LRM/RLM and the BOM are invisible controls, not text. */
static void test_escape_invisible(void **state)
{
    char buf[128];
    (void)state;
    const char in[] = "ab\xe2\x80\xae" "cd\xe2\x81\xa6" "e\xe2\x80\x8b" "f\xe2\x80\x8f" "g\xef\xbb\xbf" "h";
    model_escape(buf, sizeof buf, in, sizeof in - 1);
    assert_string_equal(buf, "ab\\xe2\\x80\\xaecd\\xe2\\x81\\xa6e\\xe2\\x80\\x8b"
                             "f\\xe2\\x80\\x8fg\\xef\\xbb\\xbfh");
    model_sanitize(in, sizeof in - 1, buf, sizeof buf, false);
    assert_string_equal(buf, "ab?cd?e?f?g?h");
    /* Harmless non-ASCII is kept by both (U+2028 included: it is text). */
    model_escape(buf, sizeof buf, "\xc3\xa9\xe2\x82\xac", 5);
    assert_string_equal(buf, "\xc3\xa9\xe2\x82\xac");
    /* An escape is never cut: 12 bytes do not fit in 11. */
    model_escape(buf, 12, "x\xe2\x80\xae", 4);
    assert_string_equal(buf, "x");
}

static char *json_of(const char *s, size_t n)
{
    char *out;
    assert_true(json_escape_dup(s, n, &out) >= 0);
    return out;
}

static void test_json_escape(void **state)
{
    (void)state;
    char *j = json_of("q\"b\\n\n\x01\x1b", 8);
    assert_string_equal(j, "q\\\"b\\\\n\\n\\u0001\\u001b");
    free(j);
    /* invalid UTF-8 (stray, overlong, surrogate, truncated) -> U+FFFD */
    j = json_of("\xff\xc0\xaf\xed\xa0\x80\xe2\x82", 8);
    assert_string_equal(j, "\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd");
    free(j);
    /* valid UTF-8 kept, C1 controls and DEL escaped */
    j = json_of("\xc3\xbc\xe2\x80\xa8\xf0\x9f\x98\x80\xc2\x85\x7f", 12);
    assert_string_equal(j, "\xc3\xbc\xe2\x80\xa8\xf0\x9f\x98\x80\\u0085\\u007f");
    free(j);
}

static void test_xout(void **state)
{
    (void)state;
    char path[] = "/tmp/cuptop-test-xout.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    xout o;
    assert_int_equal(xout_init(&o, fd), 0);
    xout_us(&o, 0);
    xout_putc(&o, ' ');
    xout_us(&o, 1234567);
    xout_putc(&o, ' ');
    xout_i64(&o, -42);
    xout_putc(&o, ' ');
    xout_u64(&o, UINT64_MAX);
    xout_putc(&o, ' ');
    /* a long string crosses the escape blocks without splitting UTF-8 */
    char big[3000];
    for (size_t i = 0; i + 2 <= sizeof big; i += 2)
        big[i] = '\xc3', big[i + 1] = '\xbc';
    xout_json_str(&o, big, sizeof big);
    assert_int_equal(xout_flush(&o), 0);
    xout_free(&o);
    char got[8192];
    ssize_t n = pread(fd, got, sizeof got - 1, 0);
    assert_true(n > 0);
    got[n] = '\0';
    close(fd);
    unlink(path);
    const char *want = "0.000 1234.567 -42 18446744073709551615 \"";
    assert_memory_equal(got, want, strlen(want));
    assert_null(strstr(got, "\\ufffd"));
    assert_int_equal((size_t)n, strlen(want) + sizeof big + 1);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(model_reason_name(CUPSTORE_LOSS_CUPTI_DROPPED), "cupti_dropped");
    assert_string_equal(model_reason_name(MODEL_REASON_UNCONSUMED), "unconsumed");
    assert_string_equal(model_reason_name(MODEL_REASON_DISABLED), "disabled");
    assert_string_equal(model_reason_name(MODEL_REASON_MAX), "?");
    assert_string_equal(model_state_name(MODEL_STATE_CRASHED), "crashed");
    char buf[32];
    model_format_second(1735732800, buf, sizeof buf);
    assert_string_equal(buf, "2025-01-01T12:00:00Z");
}

/* Periodic windows judged from the epochs alone: how late each edge came,
 * a window cut short by the session's end, one with a loss, the words. */
static void test_windows(void **state)
{
    (void)state;
    const uint64_t S = 1000000000ull, MS = 1000000ull;
    model_epoch_stat ep[5];
    memset(ep, 0, sizeof ep);
    for (unsigned i = 0; i < 5; i++) {
        ep[i].id = i + 1;
        ep[i].known = true;
        ep[i].row.id = i + 1;
        ep[i].row.period_ms = 1000;
        ep[i].row.window_ms = 300;
        ep[i].row.flags = CUPSTORE_EPOCH_CAPTURE | (i % 2 ? 0 : CUPSTORE_EPOCH_OUT_OF_SCOPE);
    }
    /* 1 before, 2 a window [10 s + 2 ms, 10.3 s + 1 ms), 3 between, 4 a
     * window from 11 s + 0.5 ms that the session's end cut at 11.1 s */
    ep[1].row.sched_ns = 10 * S, ep[1].row.start_ns = 10 * S + 2 * MS;
    ep[1].row.end_ns = 10 * S + 301 * MS;
    ep[2].row.sched_ns = 10 * S + 300 * MS, ep[2].row.start_ns = 10 * S + 301 * MS;
    ep[2].row.end_ns = 11 * S;
    ep[3].row.sched_ns = 11 * S, ep[3].row.start_ns = 11 * S + MS / 2;
    ep[3].row.end_ns = 11 * S + 100 * MS;
    ep[3].losses = 7;
    model_facts r;
    memset(&r, 0, sizeof r);
    r.epochs = ep;
    r.nepochs = 4;
    model_windows w;
    assert_int_equal(model_windows_judge(&r, &w), 2);
    assert_int_equal(w.timed, 2);
    assert_int_equal(w.closes, 1);
    assert_int_equal(w.cut_short, 1);
    assert_int_equal(w.lossy, 1);
    assert_true(w.open_late_ms > 1.99 && w.open_late_ms < 2.01);
    assert_true(w.close_late_ms > 0.99 && w.close_late_ms < 1.01);
    char line[400];
    model_windows_line(&w, line, sizeof line);
    assert_string_equal(line, "2 periodic windows every:1s/300ms, opened at most 2.0 ms and "
                              "closed at most 1.0 ms after their boundary (wall clock); 1 ended "
                              "before its close (judged as far as it went); 1 with a loss; the "
                              "time between them was out of scope");
    char lines[8][200];
    assert_true(model_scope_lines(&ep[1].row, NULL, lines, 8) >= 1);
    assert_string_equal(lines[0], "in scope: a periodic window (every:1s/300ms, due "
                                  "1970-01-01T00:00:10.000Z, opened 2.0 ms after its boundary)");
    assert_true(model_scope_lines(&ep[2].row, NULL, lines, 8) >= 1);
    assert_string_equal(lines[0], "out of scope (between periodic windows every:1s/300ms); its "
                                  "time is neither loss nor evidence");
    r.nepochs = 1;   /* no window: nothing to say */
    assert_int_equal(model_windows_judge(&r, &w), 0);
    model_windows_line(&w, line, sizeof line);
    assert_string_equal(line, "");
}

/* ---- export_lost: where a lost record is drawn ---- */
struct placed {
    uint32_t corr[8];
    uint64_t from[8], to[8];
    int n;
};

static int on_placed(const cupstore_lost *l, uint64_t from_ns, uint64_t to_ns, void *arg)
{
    struct placed *p = arg;
    assert_true(p->n < 8);
    p->corr[p->n] = l->corr;
    p->from[p->n] = from_ns;
    p->to[p->n++] = to_ns;
    return 0;
}

static void test_lost_between(void **state)
{
    (void)state;
    export_lost L = {0};
    /* stream 7: ids 5 and 6 lost between 4 and 9; 12 after the last;
     * stream 3 (another device) id 2 lost before its first record */
    static const struct { uint32_t dev, stream, corr; uint64_t launch; } rows[] = {
        {0, 7, 12, 1200}, {0, 7, 6, 600}, {0, 7, 5, 500}, {1, 3, 2, 100},
    };
    L.n = L.cap = 4;
    L.v = calloc(4, sizeof *L.v);
    assert_non_null(L.v);
    for (int i = 0; i < 4; i++)
        L.v[i] = (cupstore_lost){.launch_ns = rows[i].launch, .corr = rows[i].corr,
                                 .device = rows[i].dev, .stream = rows[i].stream,
                                 .missing = {1}};
    assert_int_equal(export_lost_index(&L), 0);
    assert_int_equal(L.ns, 2);
    struct placed p = {0};
    /* a stream with no lost row: nothing, and no state */
    assert_int_equal(export_lost_before(&L, 0, 8, 7, 700, 800, on_placed, &p), 0);
    assert_int_equal(p.n, 0);
    /* id 4 ran 1000..2000: nothing lost before it */
    assert_int_equal(export_lost_before(&L, 0, 7, 4, 1000, 2000, on_placed, &p), 0);
    assert_int_equal(p.n, 0);
    /* id 9 at 3000: 5 and 6 share 2000..3000 in id order */
    assert_int_equal(export_lost_before(&L, 0, 7, 9, 3000, 3500, on_placed, &p), 0);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.corr[0], 5);
    assert_int_equal(p.from[0], 2000);
    assert_int_equal(p.to[0], 2500);
    assert_int_equal(p.corr[1], 6);
    assert_int_equal(p.from[1], 2500);
    assert_int_equal(p.to[1], 3000);
    /* device 1 stream 3: id 2 before id 3 at 400, no record before: from
     * its launch (100) */
    assert_int_equal(export_lost_before(&L, 1, 3, 3, 400, 450, on_placed, &p), 0);
    assert_int_equal(p.n, 3);
    assert_int_equal(p.from[2], 100);
    assert_int_equal(p.to[2], 400);
    /* the rest: 12 after stream 7's last record (3500), a point */
    assert_int_equal(export_lost_rest(&L, on_placed, &p), 0);
    assert_int_equal(p.n, 4);
    assert_int_equal(p.corr[3], 12);
    assert_int_equal(p.from[3], 3500);
    assert_int_equal(p.to[3], 3500);
    /* all placed: nothing twice */
    assert_int_equal(export_lost_rest(&L, on_placed, &p), 0);
    assert_int_equal(p.n, 4);
    export_lost_free(&L);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_time), cmocka_unit_test(test_escape),
        cmocka_unit_test(test_sanitize), cmocka_unit_test(test_escape_invisible),
        cmocka_unit_test(test_json_escape), cmocka_unit_test(test_xout),
        cmocka_unit_test(test_names), cmocka_unit_test(test_windows),
        cmocka_unit_test(test_lost_between),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
