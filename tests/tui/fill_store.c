/* fill_store.c - tui-fill-store: fill a store with realistic sessions for
 * the TUI tests (one of each state: running, complete, incomplete,
 * crashed), optionally keeping the running one alive like an agent.
 *
 *   tui-fill-store --store DIR [--seconds N] [--sessions N]
 *                  [--live SECONDS] [--running-pid PID] [--pending]
 *                  [--no-cupti] [--ranges]
 *
 * Prints "STATE ID" per session.  With --live, writes a health row every
 * second for the running session (drops while kernel is on) and
 * acknowledges control requests, until SIGTERM or SECONDS (0: forever).
 * --no-cupti adds one more session whose CUPTI failed to start.
 * --ranges gives the complete session NVTX ranges (fill_range_row) and
 * prints each as "range ID NAME START_NS END_NS" (NAME: "-" when it is not
 * printable; END_NS 0: open) after the complete session's line; with
 * --live, the running session gets one 200 ms "step" range a second. */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fill_lib.h"

static struct fill_signals {
    volatile int stop;
} fill_signals;

static void on_term(int sig)
{
    (void)sig;
    fill_signals.stop = 1;
}

static int dead_pid(void)
{
    pid_t p = fork();
    if (p == 0)
        _exit(0);
    if (p > 0)
        waitpid(p, NULL, 0);
    return p > 0 ? (int)p : 999999;
}

static void usage(void)
{
    fprintf(stderr, "usage: tui-fill-store --store DIR [--seconds N] [--sessions N] "
                    "[--live SECONDS] [--running-pid PID] [--pending] [--no-cupti] "
                    "[--ranges]\n");
}

int main(int argc, char **argv)
{
    const char *dir = NULL;
    unsigned seconds = 3600, nsessions = 4, live = 0;
    bool do_live = false, pending = false, no_cupti = false, ranges = false;
    int running_pid = (int)getppid();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--store") == 0 && v)
            dir = v, i++;
        else if (strcmp(a, "--seconds") == 0 && v)
            seconds = (unsigned)strtoul(v, NULL, 10), i++;
        else if (strcmp(a, "--sessions") == 0 && v)
            nsessions = (unsigned)strtoul(v, NULL, 10), i++;
        else if (strcmp(a, "--live") == 0 && v)
            live = (unsigned)strtoul(v, NULL, 10), do_live = true, i++;
        else if (strcmp(a, "--running-pid") == 0 && v)
            running_pid = atoi(v), i++;
        else if (strcmp(a, "--pending") == 0)
            pending = true;
        else if (strcmp(a, "--no-cupti") == 0)
            no_cupti = true;
        else if (strcmp(a, "--ranges") == 0)
            ranges = true;
        else {
            usage();
            return 2;
        }
    }
    if (!dir || seconds < 10 || nsessions < 1) {
        usage();
        return 2;
    }
    if (do_live)
        running_pid = (int)getpid();
    uint64_t now = (uint64_t)time(NULL);
    static const char *const names[] = {"running", "complete", "incomplete", "crashed"};
    char *running_id = NULL;
    for (unsigned i = 0; i < nsessions; i++) {
        fill_session s;
        memset(&s, 0, sizeof s);
        s.kind = (fill_kind)(i % 4);
        s.seconds = seconds;
        s.pending_ctl = pending;
        s.ranges = ranges && s.kind == FILL_COMPLETE;
        switch (s.kind) {
        case FILL_RUNNING:
            s.pid = running_pid;
            s.end_s = now - 1;
            break;
        case FILL_COMPLETE:
        case FILL_INCOMPLETE:
            s.pid = dead_pid();
            s.end_s = now - 120 - i;
            break;
        case FILL_CRASHED:
        case FILL_NO_CUPTI:
            s.pid = dead_pid();
            s.end_s = now - 600;
            break;
        }
        int rc = fill_session_write(dir, &s);
        if (rc) {
            fprintf(stderr, "tui-fill-store: %s\n", cupstore_strerror(rc));
            return 1;
        }
        printf("%s %s\n", names[s.kind], s.id);
        for (unsigned k = 0; s.ranges && k < FILL_RANGES; k++) {
            cupstore_range r;
            size_t len;
            fill_range_row(k, s.end_s + 1 - s.seconds, s.seconds, &r);
            const char *name = fill_range_name(r.name_id, &len);
            bool plain = name && len && strspn(name, "abcdefghijklmnopqrstuvwxyz") == len;
            printf("range %u %s %llu %llu\n", r.id, plain ? name : "-",
                   (unsigned long long)r.start_ns, (unsigned long long)r.end_ns);
        }
        if (s.kind == FILL_RUNNING && !running_id)
            running_id = s.id;
        else
            free(s.id);
        /* Session ids carry the second: keep them distinct and ordered. */
        if (i + 1 < nsessions)
            usleep(5000);
    }
    if (no_cupti) {
        fill_session s;
        memset(&s, 0, sizeof s);
        s.kind = FILL_NO_CUPTI;
        s.seconds = 10;
        s.pid = dead_pid();
        s.end_s = now - 60;
        usleep(5000);
        int rc = fill_session_write(dir, &s);
        if (rc) {
            fprintf(stderr, "tui-fill-store: %s\n", cupstore_strerror(rc));
            return 1;
        }
        printf("no_cupti %s\n", s.id);
        free(s.id);
    }
    fflush(stdout);
    int rc = 0;
    if (do_live && running_id) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_term;
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        rc = fill_live(dir, running_id, live, ranges, &fill_signals.stop);
        if (rc)
            fprintf(stderr, "tui-fill-store: live: %s\n", cupstore_strerror(rc));
    }
    free(running_id);
    return rc ? 1 : 0;
}
