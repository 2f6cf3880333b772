/*
 * bench_exporter.c - the cost of one scrape of `cuptop exporter`: a store
 * of N live sessions (fresh heartbeats, this process's pid, H seconds of
 * health history each), scraped R times in the text format and in
 * OpenMetrics, through the same exporter_scrape the HTTP server calls.
 * Prints a markdown table (median, p95, max per scrape).  Target (issue
 * 18): a scrape of 64 live sessions <= 5 ms.
 *
 *   exporter-bench [--sessions N] [--seconds H] [--rounds R]
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exporter.h"
#include "fill_lib.h"

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void run(exporter *e, bool om, unsigned rounds, unsigned n, unsigned secs)
{
    double *t = calloc(rounds, sizeof *t);
    size_t bytes = 0;
    if (!t)
        exit(1);
    for (unsigned r = 0; r < rounds; r++) {
        char *text;
        size_t len;
        double a = mono();
        if (exporter_scrape(e, om, &text, &len) != 0) {
            fprintf(stderr, "exporter-bench: scrape failed\n");
            exit(1);
        }
        t[r] = mono() - a;
        bytes = len;
        free(text);
    }
    qsort(t, rounds, sizeof *t, dcmp);
    printf("| %8u | %6u s | %-11s | %8zu | %7.2f | %7.2f | %7.2f | %s |\n", n, secs,
           om ? "OpenMetrics" : "text 0.0.4", bytes, t[rounds / 2] * 1e3,
           t[rounds * 95 / 100] * 1e3, t[rounds - 1] * 1e3,
           t[rounds / 2] * 1e3 <= 5.0 ? "yes" : "NO");
    free(t);
}

int main(int argc, char **argv)
{
    unsigned n = 64, secs = 600, rounds = 200;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--sessions"))
            n = (unsigned)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds"))
            secs = (unsigned)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds"))
            rounds = (unsigned)atoi(argv[i + 1]);
    }
    if (!n || !secs || !rounds) {
        fprintf(stderr, "usage: exporter-bench [--sessions N] [--seconds H] [--rounds R]\n");
        return 2;
    }
    char dir[] = "/tmp/cuptop-exporter-bench.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    uint64_t now = (uint64_t)time(NULL);
    for (unsigned i = 0; i < n; i++) {
        fill_session s = {.kind = FILL_RUNNING, .seconds = secs, .pid = (int)getpid(),
                          .end_s = now};
        if (fill_session_write(dir, &s) != 0) {
            fprintf(stderr, "exporter-bench: cannot fill %s\n", dir);
            return 1;
        }
        free(s.id);
    }
    const char *stores[] = {dir};
    exporter_opts o = {.stores = stores, .nstores = 1, .retention_s = 600,
                       .max_sessions = n};
    exporter *e;
    if (exporter_new(&e, &o) != 0)
        return 1;
    printf("| sessions | history | format      | bytes    | median ms | p95 ms | max ms | <= 5 ms |\n");
    printf("|----------|---------|-------------|----------|-----------|--------|--------|---------|\n");
    char *text;
    size_t len;
    /* warm up: the first scrapes open every env and fold the history */
    for (int w = 0; w < 5; w++) {
        if (exporter_scrape(e, false, &text, &len) != 0)
            return 1;
        free(text);
    }
    run(e, false, rounds, n, secs);
    run(e, true, rounds, n, secs);
    exporter_free(e);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
