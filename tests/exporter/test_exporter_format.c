/*
 * test_exporter_format.c - the exporter's pure parts: label escaping, the
 * shortened command, Accept negotiation and the exposition itself (names,
 * HELP/TYPE, families written whole, labels, both formats).
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "exporter.h"
#include "exporter_int.h"

static void test_label_escape(void **state)
{
    (void)state;
    char out[64];
    exp_label_escape(out, sizeof out, "a\"b\\c\nd");
    assert_string_equal(out, "a\\\"b\\\\c\\nd");
    /* cut whole characters only: "xx" + a 2-byte u-umlaut does not fit in 4 */
    exp_label_escape(out, 4, "xx\xc3\xbc");
    assert_string_equal(out, "xx");
    exp_label_escape(out, 5, "xx\xc3\xbc");
    assert_string_equal(out, "xx\xc3\xbc");
    /* an escape is not split either */
    exp_label_escape(out, 3, "x\"");
    assert_string_equal(out, "x");
}

static void test_command_short(void **state)
{
    (void)state;
    char out[EXP_COMMAND_MAX];
    exp_command_short(out, sizeof out, "/usr/bin/python3 /home/me/train.py --lr 0.1");
    assert_string_equal(out, "python3 /home/me/train.py --lr 0.1");
    exp_command_short(out, sizeof out, "./app \x1b[31mred");
    assert_string_equal(out, "app \\x1b[31mred");
    char longcmd[400];
    memset(longcmd, 'a', sizeof longcmd - 1);
    longcmd[sizeof longcmd - 1] = '\0';
    exp_command_short(out, sizeof out, longcmd);
    assert_int_equal(strlen(out), sizeof out - 1);
    assert_string_equal(out + strlen(out) - 3, "...");
}

static void test_accept(void **state)
{
    (void)state;
    /* what Prometheus 2.42 sends */
    assert_true(exporter_wants_openmetrics(
        "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
        "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"));
    assert_true(exporter_wants_openmetrics("application/openmetrics-text; version=1.0.0"));
    assert_false(exporter_wants_openmetrics("text/plain;version=0.0.4"));
    assert_false(exporter_wants_openmetrics("*/*"));
    assert_false(exporter_wants_openmetrics(NULL));
    assert_false(exporter_wants_openmetrics(""));
    assert_false(exporter_wants_openmetrics("application/openmetrics-text;q=0"));
    assert_false(exporter_wants_openmetrics(
        "application/openmetrics-text;q=0.2, text/plain;q=0.9"));
    assert_false(exporter_wants_openmetrics("application/openmetrics-textual"));
    assert_string_equal(exporter_content_type(false), "text/plain; version=0.0.4; charset=utf-8");
}

static void fill(exp_sess *s, const char *id, model_state st)
{
    memset(s, 0, sizeof *s);
    snprintf(s->id, sizeof s->id, "%s", id);
    s->pid = 42;
    snprintf(s->host, sizeof s->host, "node\"7");
    snprintf(s->command, sizeof s->command, "train.py --x");
    s->state = st;
    s->complete = st != MODEL_STATE_CRASHED;
    s->start_ns = 1700000000ull * 1000000000u;
    s->end_ns = s->start_ns + 5000000000ull;
    s->heartbeat_ns = s->end_ns;
    s->records_by_kind[CUPSTORE_KIND_KERNEL] = 12345;
    s->loss[CUPSTORE_LOSS_CUPTI_DROPPED] = 7;
    s->device_mask = 1u << 3;
    s->records_by_device[3] = 12345;
    s->device_listed[3] = true;
    s->loss_by_device[3][CUPSTORE_LOSS_CUPTI_DROPPED] = 5;
    s->device_listed[CUPSTORE_DEVICE_MAX] = true;   /* device none */
    s->loss_by_device[CUPSTORE_DEVICE_MAX][CUPSTORE_LOSS_CUPTI_DROPPED] = 2;
    s->have_last = true;
    s->last.pool_limit = 64;
    s->last.req_lat = (cupstore_lat){10, 1000, 2000, 5000};
    s->req_lat_count = 99;
}

static char *render(const exp_sess *s, size_t n, bool om)
{
    exp_buf b = {0};
    exp_self self = {.version = "9.9", .now_ns = 1700000010ull * 1000000000u,
                     .exported = n, .omitted = 3, .max_sessions = 100, .retention_s = 600};
    exp_format(&b, s, n, &self, om);
    assert_false(b.oom);
    return b.p;
}

/* Every sample's family must be contiguous: once a family's samples end,
 * no sample of it may come back (both formats require it). */
static void assert_families_whole(const char *text)
{
    char seen[200][96];
    size_t nseen = 0;
    char cur[96] = "";
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len > 7 && strncmp(p, "# TYPE ", 7) == 0) {
            const char *sp = memchr(p + 7, ' ', len - 7);
            size_t fl = (size_t)(sp - (p + 7));
            char fam[96];
            snprintf(fam, sizeof fam, "%.*s", (int)fl, p + 7);
            for (size_t i = 0; i < nseen; i++)
                assert_string_not_equal(seen[i], fam);
            snprintf(seen[nseen++], sizeof seen[0], "%s", fam);
            snprintf(cur, sizeof cur, "%s", fam);
        } else if (len && p[0] != '#') {
            /* a sample belongs to the family above it */
            assert_true(strncmp(p, cur, strlen(cur)) == 0);
        }
        p = nl ? nl + 1 : p + len;
    }
    assert_true(nseen > 30);
}

static void test_format_text(void **state)
{
    (void)state;
    exp_sess s[2];
    fill(&s[0], "20250101T120000-1", MODEL_STATE_ENDED);
    fill(&s[1], "20250101T120001-2", MODEL_STATE_CRASHED);
    snprintf(s[1].label, sizeof s[1].label, "resnet");
    snprintf(s[1].rank, sizeof s[1].rank, "3");
    s[1].loss_at_most[CUPSTORE_LOSS_TAIL] = 131072;
    char *t = render(s, 2, false);
    assert_non_null(strstr(t, "# TYPE cuptop_records_total counter\n"));
    assert_non_null(strstr(t, "# TYPE cuptop_session_info gauge\n"));
    assert_non_null(strstr(t, "cuptop_records_total{session=\"20250101T120000-1\",pid=\"42\","
                              "host=\"node\\\"7\",kind=\"kernel\"} 12345\n"));
    assert_non_null(strstr(t, "cuptop_records_lost_total{session=\"20250101T120000-1\",pid=\"42\","
                              "host=\"node\\\"7\",class=\"cupti_dropped\"} 7\n"));
    /* label and rank only where known */
    assert_non_null(strstr(t, "host=\"node\\\"7\",label=\"resnet\",rank=\"3\",kind=\"kernel\"} 12345"));
    assert_null(strstr(t, "job=\""));
    /* per-device losses: every class of a listed device, "none" too */
    assert_non_null(strstr(t, "# TYPE cuptop_device_records_lost_total counter\n"));
    assert_non_null(strstr(t, "cuptop_device_records_lost_total{session=\"20250101T120000-1\","
                              "pid=\"42\",host=\"node\\\"7\",device=\"3\",class=\"cupti_dropped\"} 5\n"));
    assert_non_null(strstr(t, "host=\"node\\\"7\",device=\"3\",class=\"conflict\"} 0\n"));
    assert_non_null(strstr(t, "host=\"node\\\"7\",device=\"none\",class=\"cupti_dropped\"} 2\n"));
    assert_null(strstr(t, "device=\"0\",class="));
    /* bounds and estimates: a family only where some session has one */
    assert_non_null(strstr(t, "# TYPE cuptop_records_lost_at_most gauge\n"));
    assert_non_null(strstr(t, "cuptop_records_lost_at_most{session=\"20250101T120001-2\","));
    assert_non_null(strstr(t, "class=\"tail\"} 131072\n"));
    assert_null(strstr(t, "cuptop_records_lost_at_most{session=\"20250101T120000-1\""));
    assert_null(strstr(t, "cuptop_records_lost_estimate"));
    assert_null(strstr(t, "cuptop_records_lost_at_least"));
    free(t);
    /* a job: the label is cuptop_job (job is Prometheus' scrape-job label) */
    snprintf(s[0].job, sizeof s[0].job, "job-1");
    snprintf(s[0].rank, sizeof s[0].rank, "0");
    t = render(s, 2, false);
    assert_non_null(strstr(t, "cuptop_session_info{session=\"20250101T120000-1\",pid=\"42\","
                              "host=\"node\\\"7\",cuptop_job=\"job-1\",rank=\"0\",command="));
    assert_null(strstr(t, ",job=\""));
    free(t);
    s[0].job[0] = s[0].rank[0] = '\0';
    t = render(s, 2, false);
    assert_non_null(strstr(t, "command=\"train.py --x\",state=\"crashed\",verdict=\"INCOMPLETE\"} 1"));
    assert_non_null(strstr(t, "state=\"crashed\"} 1\n"));
    assert_non_null(strstr(t, "device=\"3\"} 12345\n"));
    /* an end time for the ended session only */
    assert_non_null(strstr(t, "cuptop_session_end_time_seconds{session=\"20250101T120000-1\""));
    assert_null(strstr(t, "cuptop_session_end_time_seconds{session=\"20250101T120001-2\""));
    /* heartbeat 5 s before the scrape; timestamps to the millisecond */
    assert_non_null(strstr(t, "cuptop_heartbeat_age_seconds{session=\"20250101T120000-1\","
                              "pid=\"42\",host=\"node\\\"7\"} 5\n"));
    assert_non_null(strstr(t, "cuptop_session_start_time_seconds{session=\"20250101T120000-1\","
                              "pid=\"42\",host=\"node\\\"7\"} 1700000000\n"));
    /* latency quantiles in seconds, the count cumulative */
    assert_non_null(strstr(t, "callback=\"request\",quantile=\"0.99\"} 2e-06\n"));
    assert_non_null(strstr(t, "cuptop_callback_latency_seconds_count{session=\"20250101T120000-1\","
                              "pid=\"42\",host=\"node\\\"7\",callback=\"request\"} 99\n"));
    assert_non_null(strstr(t, "\ncuptop_exporter_sessions_omitted 3\n"));
    assert_non_null(strstr(t, "cuptop_exporter_build_info{version=\"9.9\"} 1\n"));
    assert_null(strstr(t, "# EOF"));
    assert_families_whole(t);
    free(t);
}

static void test_format_openmetrics(void **state)
{
    (void)state;
    exp_sess s[1];
    fill(&s[0], "x", MODEL_STATE_RUNNING);
    char *t = render(s, 1, true);
    assert_non_null(strstr(t, "# TYPE cuptop_records counter\n"));
    assert_non_null(strstr(t, "# HELP cuptop_records "));
    assert_non_null(strstr(t, "\ncuptop_records_total{session=\"x\""));
    assert_non_null(strstr(t, "# TYPE cuptop_session info\n"));
    assert_non_null(strstr(t, "\ncuptop_session_info{session=\"x\""));
    assert_non_null(strstr(t, "# TYPE cuptop_exporter_build info\n"));
    size_t len = strlen(t);
    assert_true(len > 6);
    assert_string_equal(t + len - 6, "# EOF\n");
    assert_families_whole(t);
    free(t);
}

static void test_format_empty(void **state)
{
    (void)state;
    char *t = render(NULL, 0, false);
    assert_non_null(strstr(t, "\ncuptop_exporter_sessions_exported 0\n"));
    assert_null(strstr(t, "session=\""));
    free(t);
}

/* A workload label of the agent's longest (255 bytes) is exported whole,
 * never cut (it used to stop at 63 bytes without a word). */
static void test_label_whole(void **state)
{
    (void)state;
    exp_sess s[1];
    char want[600], lab[300];
    fill(&s[0], "20250101T120000-1", MODEL_STATE_ENDED);
    memset(lab, 'a', 255);
    lab[0] = '"';        /* escaped as \" in the exposition */
    lab[254] = 'z';
    lab[255] = '\0';
    snprintf(s[0].label, sizeof s[0].label, "%s", lab);
    char *t = render(s, 1, false);
    snprintf(want, sizeof want, "label=\"\\\"%s\",kind=\"kernel\"} 12345\n", lab + 1);
    assert_non_null(strstr(t, want));
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_label_escape),   cmocka_unit_test(test_command_short),
        cmocka_unit_test(test_accept),         cmocka_unit_test(test_format_text),
        cmocka_unit_test(test_format_openmetrics), cmocka_unit_test(test_format_empty),
        cmocka_unit_test(test_label_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
