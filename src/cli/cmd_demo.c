/*
 * cmd_demo.c - cuptop demo: the simulated CUPTI application with the agent
 * injected, for a first look without a GPU.
 *
 *   cuptop demo [--store DIR] [--ascii] [--mono]         live monitor
 *   cuptop demo --headless --seconds N [--scenario NAME] [--store DIR]
 *               [--rate R] [--devices N]                 verdict only
 *
 * Both run on a fresh temporary store unless --store is given, and say
 * where it is: the live demo removes its temporary store at exit, headless
 * keeps it (the verdict is about it).  Headless: runs cuptop-simapp for N
 * seconds, then prints the session's verdict and exits 0 COMPLETE / 1
 * INCOMPLETE.  The live demo checks for a terminal before it starts
 * anything.  --seconds, --rate and --devices are checked by the
 * simulator's own parser (src/sim_args): one range, refused here (exit 2).
 */
#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cupstore.h"
#include "cli_opts.h"
#include "cuptop.h"
#include "export.h"
#include "model.h"
#include "sim_args.h"
#include "tui_main.h"

static const char *const demo_scenarios[] = {
    "clean", "drops", "slow-consumer", "crash", "conflict", "demo", "pytorch", "nvtx",
};

/* demo's options (cli_opts.h): parsed from this table by hand (cmd_demo);
 * --store, --headless and --scenario are said in the usage lines. */
const cli_cmd cli_cmd_demo = {
    .name = "demo",
    .shortopts = "h",
    .column = 17,
    .opts = (const cli_opt[]){
        {"store", "DIR", 's', NULL, NULL},
        {"headless", NULL, 'H', NULL, NULL},
        {"scenario", "NAME", 'S', NULL, NULL},
        {"seconds", "N", 'n', "run length, 0.." SIM_ARGS_STR(SIM_ARGS_SECONDS_MAX) " s\n", NULL},
        {"rate", "R", 'r',
         "kernel launches per second per device, 0..1e9 (the\nscenario's otherwise)\n", NULL},
        {"devices", "N", 'd', "simulated devices, 1.." SIM_ARGS_STR(SIM_ARGS_DEVICES_MAX) "\n",
         NULL},
        {"ascii", NULL, 'a', "plots without Braille characters\n", NULL},
        {"mono", NULL, 'm', "no colours\n", NULL},
        {"help", NULL, 'h', NULL, NULL},
        {NULL, NULL, 0, NULL, NULL},
    },
};

static void demo_usage(FILE *f)
{
    fprintf(f,
            "usage: cuptop demo [--store DIR] [--ascii] [--mono]\n"
            "       cuptop demo --headless --seconds N [--scenario NAME] [--store DIR]\n"
            "                   [--rate R] [--devices N]\n\n"
            "Run the simulated CUPTI application with the agent injected.\n"
            "Without --headless: the live monitor on it (scenario \"demo\": drops that clear\n"
            "when you narrow the activity kinds).  With --headless: run N seconds, print\n"
            "the verdict, exit 0 when COMPLETE and 1 when INCOMPLETE.\n\n"
            "A fresh temporary store unless --store DIR is given: the live monitor\n"
            "removes it at exit, --headless keeps it; both say where it is.\n\n"
            "scenarios: clean (no loss), drops (CUPTI drops: the agent's pool is too small),\n"
            "  slow-consumer (declined buffer requests: discard buffers, CUPTI API < 27),\n"
            "  crash (the application is killed), conflict (a second CUPTI client),\n"
            "  demo (drops that clear when the kinds are narrowed), pytorch (a framework's\n"
            "  API mix: 7 API calls per GPU operation, 2 of them kept by --api gpu),\n"
            "  nvtx (clean, with NVTX ranges: a \"step\" every 100 ms holding \"forward\"\n"
            "  and \"backward\", the marker kind on; see them with cuptop ranges)\n");
    cli_opts_help(&cli_cmd_demo, f);
}

static bool demo_known_scenario(const char *s)
{
    for (size_t i = 0; i < sizeof demo_scenarios / sizeof *demo_scenarios; i++)
        if (!strcmp(s, demo_scenarios[i]))
            return true;
    return false;
}

/* Paths of the three pieces; false (with a message) when not built. */
static bool demo_locate(const char *cmd, char **agent, char **sim, char **app)
{
    *agent = cli_locate("libcuptop-agent.so");
    *sim = cli_locate("libcuptop-simcupti.so");
    *app = cli_locate("cuptop-simapp");
    if (*agent && *sim && *app)
        return true;
    cli_error(cmd, "the demo needs%s%s%s, not built here (configure found no CUPTI headers? "
                   "use --with-cuda=DIR)", *agent ? "" : " libcuptop-agent.so",
              *sim ? "" : " libcuptop-simcupti.so", *app ? "" : " cuptop-simapp");
    free(*agent);
    free(*sim);
    free(*app);
    return false;
}

/* Start the simulated application in the background on the store. */
static pid_t demo_spawn(const char *store, const char *agent, const char *sim, const char *app,
                        const char *scenario, const char *secs, const char *rate,
                        const char *devices, bool quiet)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    setenv("CUPTOP_STORE", store, 1);
    setenv("CUPTOP_CUPTI_LIBRARY", sim, 1);
    setenv("CUDA_INJECTION64_PATH", agent, 1);
    /* The loss scenarios need an agent that is short of something; the
     * user's own CUPTOP_* settings win (setenv without overwrite). */
    bool slow = !strcmp(scenario, "slow-consumer");
    if (!strcmp(scenario, "demo")) {
        /* drops with every kind on, none once runtime and driver records
         * are off (they are most of the volume: tests/tui/tmux_sim.sh) */
        setenv("CUPTOP_POOL", "4", 0);
        setenv("CUPTOP_BUFFER_SIZE", "64K", 0);
    }
    if (!strcmp(scenario, "drops") || slow)
        setenv("CUPTOP_POOL", slow ? "4" : "2", 0);   /* too small a pool */
    bool nvtx = !strcmp(scenario, "nvtx");
    if (nvtx)   /* the ranges are made of MARKER records */
        setenv("CUPTOP_KINDS", "default,marker", 0);
    if (slow) {
        setenv("CUPTOP_QUEUE", "1", 0);               /* a queue of one */
        setenv("CUPTOP_BUFFER_SIZE", "64K", 0);
    }
    if (quiet) {
        /* the TUI owns the terminal: the simulator's output goes nowhere */
        FILE *n = freopen("/dev/null", "w", stdout);
        n = freopen("/dev/null", "w", stderr);
        (void)n;
    }
    /* "crash": the application is killed mid-run (no stop protocol) */
    const char *exit_path = strcmp(scenario, "crash") ? "return" : "kill";
    const char *args[16];
    int n = 0;
    args[n++] = app;
    args[n++] = "--scenario";
    args[n++] = nvtx ? "clean" : scenario;   /* nvtx: clean, with ranges */
    args[n++] = "--seconds";
    args[n++] = secs;
    args[n++] = "--exit";
    args[n++] = exit_path;
    if (rate) {
        args[n++] = "--rate";
        args[n++] = rate;
    }
    if (nvtx) {
        args[n++] = "--nvtx";
        args[n++] = "100";
    }
    if (devices) {
        args[n++] = "--devices";
        args[n++] = devices;
    }
    if (slow) {
        /* a CUPTI older than API version 27: declined requests get discard
         * buffers, so the loss shows as "declined", not as CUPTI drops */
        args[n++] = "--api-version";
        args[n++] = "26";
    }
    args[n] = NULL;
    execv(app, (char *const *)args);
    _exit(127);
}

/* The session the child created: the newest one whose pid is the child's. */
static char *demo_find_session(const char *store, pid_t pid, double timeout_s)
{
    struct timespec nap = {0, 50000000};
    for (double waited = 0; waited <= timeout_s; waited += 0.05) {
        char **ids;
        size_t n;
        if (cupstore_dir_sessions(store, &ids, &n) == 0) {
            char suffix[32];
            snprintf(suffix, sizeof suffix, "-%d", (int)pid);
            for (size_t i = n; i-- > 0;)
                if (strstr(ids[i], suffix)) {
                    char *id = strdup(ids[i]);
                    cupstore_ids_free(ids, n);
                    return id;
                }
            cupstore_ids_free(ids, n);
        }
        nanosleep(&nap, NULL);
    }
    return NULL;
}

static int demo_verdict(const char *cmd, const char *store, const char *id)
{
    model_summary s;
    char *cause = NULL;
    int rc = model_summarize_id(store, id, 0, UINT64_MAX, &s, &cause);
    if (rc) {
        cli_model_error(cmd, id, rc, cause);
        return CUPTOP_EXIT_USAGE;
    }
    printf("session %s: %s (%s), %llu records, %llu lost\n", s.id,
           s.complete ? "COMPLETE" : "INCOMPLETE", model_state_name(s.state),
           (unsigned long long)s.records_total, (unsigned long long)s.loss_total);
    /* Each reason's text starts with its class already. */
    for (size_t i = 0; i < s.nreasons; i++)
        printf("  - %s\n", s.reasons[i].text);
    bool complete = s.complete;
    model_summary_free(&s);
    return complete ? CUPTOP_EXIT_OK : CUPTOP_EXIT_NO;
}

static int demo_headless(const char *cmd, const char *store_opt, const char *seconds,
                         const char *scenario, const char *rate, const char *devices)
{
    char *agent, *sim, *app, *store = NULL;
    char tmpl[4096];
    int rc = CUPTOP_EXIT_USAGE;

    if (!demo_locate(cmd, &agent, &sim, &app))
        return CUPTOP_EXIT_USAGE;
    if (store_opt) {
        store = strdup(store_opt);
    } else {
        const char *t = getenv("TMPDIR");
        snprintf(tmpl, sizeof tmpl, "%s/cuptop-demo.XXXXXX", t && *t ? t : "/tmp");
        if (mkdtemp(tmpl))
            store = strdup(tmpl);
        else
            cli_error(cmd, "cannot create a temporary store: %s", strerror(errno));
    }
    if (!store)
        goto out;
    if (store_opt)
        printf("store: %s\n", store);
    else
        printf("store: %s (temporary, kept: remove it when done)\n", store);
    fflush(stdout);
    pid_t pid = demo_spawn(store, agent, sim, app, scenario, seconds, rate, devices, false);
    if (pid < 0) {
        cli_error(cmd, "fork: %s", strerror(errno));
        goto out;
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (WIFSIGNALED(st))
        printf("simulated application killed by signal %d\n", WTERMSIG(st));
    else if (WIFEXITED(st) && WEXITSTATUS(st) == 127) {
        cli_error(cmd, "cannot run %s", app);
        goto out;
    }
    char *id = demo_find_session(store, pid, 2.0);
    if (!id) {
        cli_error(cmd, "the simulated application left no session in %s", store);
        rc = CUPTOP_EXIT_NO;
        goto out;
    }
    rc = demo_verdict(cmd, store, id);
    free(id);
out:
    free(store);
    free(agent);
    free(sim);
    free(app);
    return rc;
}

static int demo_rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

/* Remove the demo's own temporary store (depth first, links not followed). */
static int demo_rm_store(const char *dir)
{
    return nftw(dir, demo_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The live demo's store: --store's, prepared, or a fresh temporary one
 * (never the user's default store: removed at exit).  NULL when neither
 * can be had (said). */
static char *demo_live_store(const char *cmd, const char *store_opt)
{
    char *store = NULL, tmpl[4096];
    if (store_opt) {
        if (cupstore_dir_resolve(store_opt, &store) || cupstore_dir_prepare(store)) {
            cli_error(cmd, "cannot use the store %s", store ? store : store_opt);
            free(store);
            return NULL;
        }
        return store;
    }
    const char *t = getenv("TMPDIR");
    snprintf(tmpl, sizeof tmpl, "%s/cuptop-demo.XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmpl) || !(store = strdup(tmpl))) {
        cli_error(cmd, "cannot create a temporary store: %s", strerror(errno));
        return NULL;
    }
    return store;
}

static int demo_live(const char *cmd, const char *store_opt, bool ascii, bool mono)
{
    char *agent, *sim, *app, *store = NULL, *cause = NULL;
    int rc;

    /* First: without a terminal nothing is started, nothing written. */
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        cli_error(cmd, "the live monitor needs a terminal (without one: cuptop demo "
                       "--headless --seconds N)");
        return CUPTOP_EXIT_USAGE;
    }
    if (!demo_locate(cmd, &agent, &sim, &app))
        return CUPTOP_EXIT_USAGE;
    if (!(store = demo_live_store(cmd, store_opt))) {
        free(agent);
        free(sim);
        free(app);
        return CUPTOP_EXIT_USAGE;
    }
    /* Said before the monitor takes the screen (it is back after it). */
    fprintf(stderr, "cuptop %s: store %s (%s)\n", cmd, store,
            store_opt ? "yours: kept" : "temporary: removed at exit");
    pid_t pid = demo_spawn(store, agent, sim, app, "demo", SIM_ARGS_STR(SIM_ARGS_SECONDS_MAX),
                           NULL, NULL, true);
    char *id = pid > 0 ? demo_find_session(store, pid, 10.0) : NULL;
    tui_opts o = {
        .store_dir = store,
        .session = id,
        .ascii = ascii,
        .mono = mono,
        .demo_hint = "demo: CUPTI is dropping records (the agent's pool is too small for "
                     "this rate). Press k for the kind panel and turn runtime and driver records "
                     "off (space): the drops stop, in a new epoch.",
        .demo_hint_clear = "demo: no records lost in the last 5 s: the drops stopped. The "
                           "kind panel (k) compares the epochs; m and M mark a window, e "
                           "exports it.",
        .export_fn = export_run,
        .set_fatal_cleanup = cli_set_fatal_cleanup,
    };
    rc = tui_main(&o, &cause);
    if (pid > 0) {
        kill(pid, SIGTERM);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    if (cause) {
        cli_error(cmd, "%s", cause);
        free(cause);
    }
    if (!store_opt) {
        if (demo_rm_store(store) == 0)
            fprintf(stderr, "cuptop %s: temporary store %s removed\n", cmd, store);
        else
            cli_error(cmd, "could not remove the temporary store %s: %s", store,
                      strerror(errno));
    } else {
        fprintf(stderr, "cuptop %s: store %s kept\n", cmd, store);
    }
    free(id);
    free(store);
    free(agent);
    free(sim);
    free(app);
    return rc;
}

int cmd_demo(int argc, char **argv)
{
    const char *cmd = argv[0], *store = NULL, *scenario = "clean", *rate = NULL, *devices = NULL;
    const char *seconds = "10";
    bool headless = false, ascii = false, mono = false, have_seconds = false;

    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const cli_opt *op = cli_opts_find(&cli_cmd_demo, o);
        if (!op)
            return cli_usage_error(cmd, "unknown option \"%s\"", o);
        if (op->arg && !v)
            return cli_usage_error(cmd, "%s needs a value", o);
        i += op->arg != NULL;
        /* the simulator's own parser: what it would refuse is misuse here */
        char esc[80] = "";
        if (v)
            model_escape(esc, sizeof esc, v, strlen(v));
        double d;
        unsigned u;
        switch (op->val) {
        case 'h':
            demo_usage(stdout);
            return CUPTOP_EXIT_OK;
        case 'H': headless = true; break;
        case 'a': ascii = true; break;
        case 'm': mono = true; break;
        case 's': store = v; break;
        case 'S':
            if (!demo_known_scenario(v))
                return cli_usage_error(cmd, "unknown scenario \"%s\"", esc);
            scenario = v;
            break;
        case 'n':
            if (sim_args_seconds(v, &d))
                return cli_usage_error(cmd, "--seconds: \"%s\" is not %s", esc,
                                       SIM_ARGS_SECONDS_TEXT);
            seconds = v;
            have_seconds = true;
            break;
        case 'r':
            if (sim_args_rate(v, strlen(v), &d))
                return cli_usage_error(cmd, "--rate: \"%s\" is not %s", esc, SIM_ARGS_RATE_TEXT);
            rate = v;
            break;
        default:   /* 'd' */
            if (sim_args_devices(v, &u))
                return cli_usage_error(cmd, "--devices: \"%s\" is not %s", esc,
                                       SIM_ARGS_DEVICES_TEXT);
            devices = v;
            break;
        }
    }
    if (headless)
        return demo_headless(cmd, store, seconds, scenario, rate, devices);
    if (have_seconds || rate || devices || strcmp(scenario, "clean"))
        return cli_usage_error(cmd, "--seconds, --scenario, --rate and --devices need --headless");
    return demo_live(cmd, store, ascii, mono);
}
