/*
 * bench_exporter.c - the cost of one scrape of `cuptop exporter`: a store
 * of N live sessions (fresh heartbeats, this process's pid, H seconds of
 * health history each), scraped R times in the text format and in
 * OpenMetrics, through the same exporter_scrape the HTTP server calls.
 * A child process keeps every session live as an agent would: one new
 * health row per session per second, with a fresh heartbeat.
 * Prints a markdown table (the scrape's CPU time, median and p95, and its
 * wall time: on a shared machine the CPU time is the cost), for the
 * incremental summaries (model_live, what the exporter does) and, in the
 * same run, for a full model_summarize of every running session at every
 * scrape (what it would cost without them).  Target (issue 18): a scrape of
 * 64 live sessions <= 5 ms.
 *
 *   exporter-bench [--sessions N] [--seconds H] [--rounds R]
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exporter.h"
#include "fill_lib.h"

static double clk(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double run(exporter *e, bool om, unsigned rounds, unsigned n, unsigned secs,
                  const char *how)
{
    double *t = calloc(rounds, sizeof *t), *wall = calloc(rounds, sizeof *wall);
    size_t bytes = 0;
    if (!t || !wall)
        exit(1);
    for (unsigned r = 0; r < rounds; r++) {
        char *text;
        size_t len;
        double a = clk(CLOCK_THREAD_CPUTIME_ID), w = clk(CLOCK_MONOTONIC);
        if (exporter_scrape(e, om, &text, &len) != 0) {
            fprintf(stderr, "exporter-bench: scrape failed\n");
            exit(1);
        }
        t[r] = clk(CLOCK_THREAD_CPUTIME_ID) - a;
        wall[r] = clk(CLOCK_MONOTONIC) - w;
        bytes = len;
        free(text);
    }
    qsort(t, rounds, sizeof *t, dcmp);
    qsort(wall, rounds, sizeof *wall, dcmp);
    double med = t[rounds / 2];
    printf("| %8u | %6u s | %-15s | %-11s | %8zu | %9.2f | %9.2f | %10.2f | %-7s |\n", n,
           secs, how, om ? "OpenMetrics" : "text 0.0.4", bytes, med * 1e3,
           t[rounds * 95 / 100] * 1e3, wall[rounds / 2] * 1e3, med * 1e3 <= 5.0 ? "yes" : "NO");
    free(t);
    free(wall);
    return med;
}

/* The child: one row per session per second until killed. */
static void keep_live(const char *dir, char **ids, unsigned n, unsigned secs, uint64_t last)
{
    cupstore_env **env = calloc(n, sizeof *env);
    if (!env)
        _exit(1);
    for (unsigned i = 0; i < n; i++)
        if (cupstore_session_open(&env[i], dir, ids[i], 0) != 0)
            _exit(1);
    for (unsigned t = secs;; t++) {
        sleep(1);
        last++;
        for (unsigned i = 0; i < n; i++) {
            cupstore_health h;
            cupstore_txn *txn;
            struct timespec ts;
            fill_health_row(FILL_RUNNING, t, secs + 100000, CUPSTORE_KINDS_DEFAULT, last, &h);
            clock_gettime(CLOCK_REALTIME, &ts);
            h.heartbeat_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
            if (cupstore_txn_begin(env[i], true, &txn) == 0) {
                if (cupstore_health_put(txn, &h) == 0)
                    (void)cupstore_txn_commit(txn);
                else
                    cupstore_txn_abort(txn);
            }
        }
    }
}

static exporter *make(const char *dir, unsigned n, bool full)
{
    const char *stores[] = {dir};
    exporter_opts o = {.stores = stores, .nstores = 1, .retention_s = 600,
                       .max_sessions = n, .full_rejudge = full};
    exporter *e;
    char *text;
    size_t len;
    if (exporter_new(&e, &o) != 0)
        exit(1);
    /* warm up: the first scrapes open every env and fold the history */
    for (int w = 0; w < 5; w++) {
        if (exporter_scrape(e, false, &text, &len) != 0)
            exit(1);
        free(text);
    }
    return e;
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
    char **ids = calloc(n, sizeof *ids);
    if (!ids)
        return 1;
    for (unsigned i = 0; i < n; i++) {
        fill_session s = {.kind = FILL_RUNNING, .seconds = secs, .pid = (int)getpid(),
                          .end_s = now};
        if (fill_session_write(dir, &s) != 0) {
            fprintf(stderr, "exporter-bench: cannot fill %s\n", dir);
            return 1;
        }
        ids[i] = s.id;
    }
    fflush(stdout);
    pid_t child = fork();
    if (child < 0)
        return 1;
    if (child == 0)
        keep_live(dir, ids, n, secs, now);
    sleep(2); /* every session has a fresh row now */
    printf("| sessions | history | summaries       | format      | bytes    | CPU ms p50 | CPU ms p95 | wall ms p50 | <= 5 ms |\n");
    printf("|----------|---------|-----------------|-------------|----------|-----------|-----------|------------|---------|\n");
    exporter *inc = make(dir, n, false), *full = make(dir, n, true);
    double a = run(inc, false, rounds, n, secs, "incremental");
    run(inc, true, rounds, n, secs, "incremental");
    double b = run(full, false, rounds / 4 ? rounds / 4 : 1, n, secs, "full, each time");
    printf("\nfull / incremental (text, medians): %.1fx\n", a > 0 ? b / a : 0.0);
    exporter_free(inc);
    exporter_free(full);
    kill(child, SIGTERM);
    waitpid(child, NULL, 0);
    for (unsigned i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
