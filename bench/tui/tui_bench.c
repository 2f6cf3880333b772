/* tui_bench.c - frame CPU time of the live monitor (sample + update + draw)
 * on a store with 8 sessions of one hour of per-second history each,
 * drawing to a dummy terminal (output to /dev/null).
 *
 *   tui-bench [--frames N] [--rows R --cols C]
 *
 * Prints a table: CPU time per frame (CLOCK_PROCESS_CPUTIME_ID, mean and
 * max over N frames) per scenario.  Target: <= 2 ms per frame. */
#include "config.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fill_lib.h"
#include "tui_int.h"

#define SESSIONS 8
#define HISTORY 3600

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

struct result {
    const char *name;
    double mean, max;
    int frames;
};

static void print_row(const struct result *r)
{
    printf("| %-44s | %6d | %8.3f | %8.3f | %s |\n", r->name, r->frames, r->mean, r->max,
           r->mean <= 2.0 ? "yes" : "NO");
}

/* Run n frames; before each, `prep` may change the state (not timed). */
static struct result run(tui *t, const char *name, int n, void (*prep)(tui *, int, void *),
                         void *arg)
{
    struct result r = {name, 0, 0, n};
    double sum = 0;
    for (int i = 0; i < n; i++) {
        if (prep)
            prep(t, i, arg);
        char *cause = NULL;
        double a = cpu_ms();
        if (tui_frame_sample(t, &cause) != 0) {
            fprintf(stderr, "tui-bench: %s\n", cause ? cause : "sample failed");
            exit(1);
        }
        tui_frame_draw(t);
        double d = cpu_ms() - a;
        sum += d;
        if (d > r.max)
            r.max = d;
    }
    r.mean = sum / n;
    return r;
}

struct live {
    cupstore_env *env;
    uint64_t second;
    unsigned t;
};

/* Not timed: the writer appends one health row (and its losses) per frame,
 * as the agent does once per second. */
static void prep_live(tui *t, int i, void *arg)
{
    struct live *l = arg;
    (void)t;
    (void)i;
    cupstore_txn *txn;
    if (cupstore_txn_begin(l->env, true, &txn) != 0)
        return;
    cupstore_health h;
    fill_health_row(FILL_RUNNING, l->t++, 1u << 30, CUPSTORE_KINDS_DEFAULT, ++l->second, &h);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    h.heartbeat_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    h.epoch = 3;
    h.ctl_gen_applied = 2;
    if (cupstore_health_put(txn, &h) != 0) {
        cupstore_txn_abort(txn);
        return;
    }
    (void)cupstore_txn_commit(txn);
}

/* Not timed: forget the model's cached judgement so that every frame
 * re-judges the running sessions (the worst case, once per 2 s live). */
static void prep_rejudge(tui *t, int i, void *arg)
{
    (void)i;
    (void)arg;
    for (size_t k = 0; k < t->store.n; k++)
        if (tui_sess_state_of(&t->store.s[k]) == TUI_ST_RUNNING) {
            model_summary_free(&t->store.s[k].sum);
            t->store.s[k].have_sum = false;
        }
}

/* Not timed: make every running session due for its periodic re-judge, as
 * with many live sessions; the store refresh re-judges one per frame. */
static void prep_periodic(tui *t, int i, void *arg)
{
    (void)i;
    (void)arg;
    for (size_t k = 0; k < t->store.n; k++)
        if (tui_sess_state_of(&t->store.s[k]) == TUI_ST_RUNNING) {
            t->store.s[k].sum_at -= 10;
            t->store.s[k].sum_hb = 0;
        }
}

int main(int argc, char **argv)
{
    int frames = 200, rows = 30, cols = 100;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--frames") == 0)
            frames = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--rows") == 0)
            rows = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--cols") == 0)
            cols = atoi(argv[i + 1]);
    }
    if (frames < 1)
        frames = 1;
    setlocale(LC_ALL, "C.UTF-8");
    char dir[] = "/tmp/tui-bench.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char store[64];
    snprintf(store, sizeof store, "%s/store", dir);
    uint64_t now = (uint64_t)time(NULL);
    char *running_id = NULL;
    for (int i = 0; i < SESSIONS; i++) {
        fill_session s;
        memset(&s, 0, sizeof s);
        s.kind = (fill_kind)(i % 4);
        s.seconds = HISTORY;
        s.pid = s.kind == FILL_RUNNING ? (int)getpid() : 999999 - i;
        s.end_s = s.kind == FILL_RUNNING ? now - 1 : s.kind == FILL_CRASHED ? now - 600 : now - 60;
        int rc = fill_session_write(store, &s);
        if (rc) {
            fprintf(stderr, "tui-bench: fill: %s\n", cupstore_strerror(rc));
            return 1;
        }
        if (!running_id && s.kind == FILL_RUNNING)
            running_id = s.id;
        else
            free(s.id);
        usleep(2000);
    }

    FILE *out = fopen("/dev/null", "w"), *in = fopen("/dev/null", "r");
    SCREEN *scr = newterm("xterm-256color", out, in);
    if (!scr) {
        fprintf(stderr, "tui-bench: no terminal description for xterm-256color\n");
        return 1;
    }
    set_term(scr);
    resizeterm(rows, cols);
    tui_colors_init(false);

    tui_opts o = {.store_dir = store};
    tui t;
    char *cause = NULL;
    if (tui_init(&t, &o, &cause) != 0) {
        endwin();
        fprintf(stderr, "tui-bench: %s\n", cause);
        return 1;
    }
    t.ascii = false;
    struct result res[8];
    int nres = 0;

    tui_set_screen(&t, TUI_SCR_SESSIONS);
    res[nres++] = run(&t, "sessions screen, 8 sessions", frames, NULL, NULL);
    res[nres++] = run(&t, "sessions, worst case: model re-judges 2 live", frames / 4 + 1,
                      prep_rejudge, NULL);

    res[nres++] = run(&t, "sessions, live: periodic re-judge 1/frame", frames / 4 + 1,
                      prep_periodic, NULL);

    long ri = tui_store_find(&t.store, running_id);
    double a = cpu_ms();
    tui_open_session(&t, (size_t)ri);   /* first open: loads the whole hour */
    tui_frame_draw(&t);
    double first = cpu_ms() - a;
    res[nres++] = run(&t, "dashboard, 1 h history, braille", frames, NULL, NULL);

    struct live l = {NULL, now - 1, 0};
    if (cupstore_session_open(&l.env, store, running_id, 0) == 0) {
        /* The bench is one process: the writer shares the TUI's env. */
        cupstore_env_close(l.env);
        l.env = tui_store_env(&t.store, (size_t)ri, true, NULL);
        res[nres++] = run(&t, "dashboard, live (+1 health row per frame)", frames, prep_live, &l);
    }
    t.dv.span = 60;
    res[nres++] = run(&t, "dashboard, zoomed to 60 s/point (whole hour)", frames, NULL, NULL);
    t.dv.span = 1;
    t.ascii = true;
    res[nres++] = run(&t, "dashboard, ASCII plots", frames, NULL, NULL);
    t.ascii = false;
    tui_set_screen(&t, TUI_SCR_KINDS);
    res[nres++] = run(&t, "kinds + epoch table", frames, NULL, NULL);

    tui_free(&t);
    endwin();
    delscreen(scr);
    fclose(out);
    fclose(in);

    printf("tui-bench: %d sessions x %d s of per-second history, terminal %dx%d\n", SESSIONS,
           HISTORY, cols, rows);
    printf("| %-44s | %6s | %8s | %8s | %s |\n", "scenario (sample + update + draw)", "frames",
           "mean ms", "max ms", "<= 2 ms");
    printf("|%s|--------|----------|----------|---------|\n",
           "----------------------------------------------");
    for (int i = 0; i < nres; i++)
        print_row(&res[i]);
    printf("first open of the dashboard (loads 3600 s): %.3f ms CPU\n", first);
    free(running_id);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "tui-bench: could not remove %s\n", dir);
    return 0;
}
