/*
 * simapp.c - cuptop-simapp: plays a CUDA application on the simulated
 * CUPTI.  It loads libcuptop-simcupti.so, loads the agent the way libcuda
 * does (CUDA_INJECTION64_PATH, then InitializeInjection), creates
 * contexts, produces records for a while, and ends through the chosen
 * exit path.  See doc/sim.md.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

#include "cuptopsim.h"
#include "sim_args.h"

enum simapp_exit {
    EX_RETURN, EX_EXIT, EX__EXIT, EX_SIGTERM, EX_SIGINT, EX_SIGHUP, EX_ABORT, EX_KILL,
};
static const char *const simapp_exit_names[] = {
    "return", "exit", "_exit", "sigterm", "sigint", "sighup", "abort", "kill",
};
enum simapp_destroy { DESTROY_DEFAULT, DESTROY_BEFORE, DESTROY_ATEXIT, DESTROY_NEVER };

/* Everything the program keeps (one struct, as everywhere in cuptop). */
static struct simapp {
    double seconds;
    double cuda_after;   /* --cuda-after: seconds before "CUDA" loads */
    int exit_path;
    int destroy;
    int handler, fork, exec;
    const char *handler_file, *child_scenario, *ready_file;
    char lib[PATH_MAX];
    cuptopsim_contexts_create_fn contexts_create;
    cuptopsim_contexts_destroy_fn contexts_destroy;
    cuptopsim_app_run_fn app_run;
    cuptopsim_truth_write_fn truth_write;
    cuptopsim_nvtx_app_fn nvtx_app;   /* the NVTX truth of what we push */
    const char *exit_name;
    double nvtx_ms;      /* --nvtx: a "step" range every MS, 0: none */
    pthread_mutex_t nvtx_lock;
    pthread_cond_t nvtx_cond;
    int nvtx_stop;
} app = {.seconds = 2.0, .exit_path = EX_RETURN, .nvtx_lock = PTHREAD_MUTEX_INITIALIZER,
         .nvtx_cond = PTHREAD_COND_INITIALIZER};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: cuptop-simapp [--seconds S] [--scenario NAME] [--exit PATH]\n"
            "         [--destroy before|atexit|never] [--handler [--handler-file FILE]]\n"
            "         [--fork [--exec] [--child-scenario NAME]] [--ready-file FILE]\n"
            "         [--threads T] [--devices N] [--streams M] [--rate R] [--rates SPEC]\n"
            "         [--scale F] [--max-rate] [--ops N] [--faults SPEC] [--truth FILE]\n"
            "         [--api-version V] [--seed N] [--cuda-after S] [--nvtx MS]\n"
            "PATH: return exit _exit sigterm sigint sighup abort kill\n"
            "Plays a CUDA application on the simulated CUPTI; the agent is loaded from\n"
            "CUDA_INJECTION64_PATH when set.  See doc/sim.md.\n");
}

static int misuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* CLI misuse: one clear message, exit status 2. */
static int misuse(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "cuptop-simapp: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(try 'cuptop-simapp --help')\n");
    return 2;
}

/* The app's own signal handler (--handler): leave a marker, then die of
 * the signal as the application would without a handler. */
static void simapp_on_signal(int sig)
{
    if (app.handler_file) {
        int fd = open(app.handler_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0) {
            char msg[32];
            int n = snprintf(msg, sizeof msg, "signal %d\n", sig);
            if (write(fd, msg, (size_t)n) < 0) {
                /* nothing to do: the marker is best effort */
            }
            close(fd);
        }
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void simapp_truth_atexit(void)
{
    (void)app.truth_write(NULL, 1, app.exit_name);
}

static void simapp_destroy_atexit(void)
{
    app.contexts_destroy();
}

static int simapp_sym(void *h, const char *name, void *out)
{
    void *p = dlsym(h, name);
    if (!p) {
        fprintf(stderr, "cuptop-simapp: %s lacks %s\n", app.lib, name);
        return -1;
    }
    memcpy(out, &p, sizeof p);
    return 0;
}

/* Load the simulated CUPTI (RTLD_GLOBAL: the agent opening the same path
 * gets this very instance). */
static int simapp_load_sim(void)
{
    const char *env = getenv("CUPTOP_CUPTI_LIBRARY");
    if (env && *env) {
        snprintf(app.lib, sizeof app.lib, "%s", env);
    } else {
        static const char name[] = "/libcuptop-simcupti.so";
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        char *slash;
        if (n <= 0) {
            fprintf(stderr, "cuptop-simapp: cannot read /proc/self/exe: %s\n", strerror(errno));
            return 1;
        }
        exe[n] = '\0';
        slash = strrchr(exe, '/');
        *slash = '\0';
        if (strlen(exe) + sizeof name > sizeof app.lib) {
            fprintf(stderr, "cuptop-simapp: path too long: %s\n", exe);
            return 1;
        }
        memcpy(app.lib, exe, strlen(exe));
        memcpy(app.lib + strlen(exe), name, sizeof name);
        setenv("CUPTOP_CUPTI_LIBRARY", app.lib, 1);
    }
    void *h = dlopen(app.lib, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        fprintf(stderr, "cuptop-simapp: %s\n", dlerror());
        return 1;
    }
    cuptopsim_reset_fn reset;
    if (simapp_sym(h, "cuptopsim_reset", &reset) ||
        simapp_sym(h, "cuptopsim_contexts_create", &app.contexts_create) ||
        simapp_sym(h, "cuptopsim_contexts_destroy", &app.contexts_destroy) ||
        simapp_sym(h, "cuptopsim_app_run", &app.app_run) ||
        simapp_sym(h, "cuptopsim_truth_write", &app.truth_write))
        return 1;
    void *nv = dlsym(h, "cuptopsim_nvtx_app");   /* optional */
    memcpy(&app.nvtx_app, &nv, sizeof nv);
    /* Validates CUPTOPSIM_* (the library prints the reason). */
    if (reset()) {
        fprintf(stderr, "cuptop-simapp: bad simulator configuration\n");
        return 2;
    }
    return 0;
}

/* What libcuda does with CUDA_INJECTION64_PATH: dlopen, InitializeInjection.
 * A library that cannot be loaded is skipped, as the driver skips it. */
static void simapp_inject(void)
{
    const char *path = getenv("CUDA_INJECTION64_PATH");
    if (!path || !*path)
        return;
    void *h = dlopen(path, RTLD_NOW);
    if (!h) {
        fprintf(stderr, "cuptop-simapp: injection: %s\n", dlerror());
        return;
    }
    int (*init)(void);
    void *p = dlsym(h, "InitializeInjection");
    if (!p) {
        fprintf(stderr, "cuptop-simapp: injection: %s has no InitializeInjection\n", path);
        return;
    }
    memcpy(&init, &p, sizeof p);
    (void)init();
}

static void simapp_touch(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        char msg[32];
        int n = snprintf(msg, sizeof msg, "%ld\n", (long)getpid());
        if (write(fd, msg, (size_t)n) < 0) {
            /* best effort */
        }
        close(fd);
    }
}

/* The forked child: a new CUDA user (contexts anew), producing too. */
static void simapp_child(char **argv0)
{
    if (app.exec) {
        char secs[32], a_seconds[] = "--seconds", a_exit[] = "--exit", a_return[] = "return",
             a_scen[] = "--scenario", scen[64];
        const char *truth = getenv("CUPTOPSIM_TRUTH");
        if (truth && *truth) {
            char t[PATH_MAX];
            snprintf(t, sizeof t, "%s.child", truth);
            setenv("CUPTOPSIM_TRUTH", t, 1);
        }
        snprintf(secs, sizeof secs, "%g", app.seconds);
        const char *sc = app.child_scenario ? app.child_scenario : getenv("CUPTOPSIM_SCENARIO");
        snprintf(scen, sizeof scen, "%s", sc && *sc ? sc : "clean");
        char *args[] = {argv0[0], a_seconds, secs, a_exit, a_return, a_scen, scen, NULL};
        execv("/proc/self/exe", args);
        fprintf(stderr, "cuptop-simapp: exec: %s\n", strerror(errno));
        _exit(127);
    }
    app.exit_name = "child-exit";
    app.contexts_create();
    (void)app.app_run(app.seconds);
    app.contexts_destroy();
    exit(0);
}

/* Wait up to ms, or until the run ends; 1 when it ended. */
static int simapp_nvtx_wait(double ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long ns = (long long)ts.tv_nsec + (long long)(ms * 1e6);
    ts.tv_sec += (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    pthread_mutex_lock(&app.nvtx_lock);
    while (!app.nvtx_stop && pthread_cond_timedwait(&app.nvtx_cond, &app.nvtx_lock, &ts) == 0)
        ;
    int stop = app.nvtx_stop;
    pthread_mutex_unlock(&app.nvtx_lock);
    return stop;
}

/* A push (name) or pop (NULL) of the default domain, told to the NVTX
 * truth: a push after it is made, a pop before (simdrive's nvtx_told). */
static void simapp_nvtx(const char *name)
{
    if (name)
        nvtxRangePushA(name);
    if (app.nvtx_app)
        app.nvtx_app(name != NULL, NULL, name);
    if (!name)
        nvtxRangePop();
}

/* --nvtx MS: the application's training loop, as NVTX sees it: a "step"
 * range every MS holding "forward" and "backward" (real nvtx3 calls, so
 * with NVTX_INJECTION64_PATH they reach the agent and CUPTI's MARKER
 * records, as a framework's annotations do).  The range still open when
 * the run ends is closed first. */
static void *simapp_nvtx_main(void *arg)
{
    (void)arg;
    for (;;) {
        simapp_nvtx("step");
        simapp_nvtx("forward");
        int stop = simapp_nvtx_wait(app.nvtx_ms * 0.3);
        simapp_nvtx(NULL);
        simapp_nvtx("backward");
        if (!stop)
            stop = simapp_nvtx_wait(app.nvtx_ms * 0.5);
        simapp_nvtx(NULL);
        simapp_nvtx(NULL);
        if (stop || simapp_nvtx_wait(app.nvtx_ms * 0.2))
            return NULL;
    }
}

/* The run, with the NVTX loop beside it when asked. */
static void simapp_run(void)
{
    pthread_t th;
    int nvtx = app.nvtx_ms > 0 && pthread_create(&th, NULL, simapp_nvtx_main, NULL) == 0;
    (void)app.app_run(app.seconds);
    if (nvtx) {
        pthread_mutex_lock(&app.nvtx_lock);
        app.nvtx_stop = 1;
        pthread_cond_broadcast(&app.nvtx_cond);
        pthread_mutex_unlock(&app.nvtx_lock);
        pthread_join(th, NULL);
    }
}

static int simapp_setenv_opt(const char *var, const char *val)
{
    return setenv(var, val, 1);
}

static int simapp_parse(int argc, char **argv)
{
    static const struct { const char *opt, *var; } envopts[] = {
        {"--scenario", "CUPTOPSIM_SCENARIO"}, {"--threads", "CUPTOPSIM_THREADS"},
        {"--devices", "CUPTOPSIM_DEVICES"},   {"--streams", "CUPTOPSIM_STREAMS"},
        {"--rates", "CUPTOPSIM_RATES"},       {"--ops", "CUPTOPSIM_OPS"},
        {"--scale", "CUPTOPSIM_SCALE"},
        {"--faults", "CUPTOPSIM_FAULTS"},     {"--truth", "CUPTOPSIM_TRUTH"},
        {"--api-version", "CUPTOPSIM_API_VERSION"}, {"--seed", "CUPTOPSIM_SEED"},
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        size_t e;
        for (e = 0; e < sizeof envopts / sizeof *envopts; e++)
            if (!strcmp(a, envopts[e].opt))
                break;
        if (e < sizeof envopts / sizeof *envopts) {
            if (!v)
                return misuse("%s needs a value", a);
            simapp_setenv_opt(envopts[e].var, v);
            i++;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--seconds")) {
            if (!v)
                return misuse("%s needs a value", a);
            if (sim_args_seconds(v, &app.seconds))
                return misuse("--seconds \"%s\": not %s", v, SIM_ARGS_SECONDS_TEXT);
            i++;
        } else if (!strcmp(a, "--cuda-after")) {
            if (!v)
                return misuse("%s needs a value", a);
            if (sim_args_seconds(v, &app.cuda_after))
                return misuse("--cuda-after \"%s\": not %s", v, SIM_ARGS_SECONDS_TEXT);
            i++;
        } else if (!strcmp(a, "--exit")) {
            size_t k;
            if (!v)
                return misuse("%s needs a value", a);
            for (k = 0; k < sizeof simapp_exit_names / sizeof *simapp_exit_names; k++)
                if (!strcmp(v, simapp_exit_names[k]))
                    break;
            if (k == sizeof simapp_exit_names / sizeof *simapp_exit_names)
                return misuse("--exit \"%s\": return, exit, _exit, sigterm, sigint, sighup, "
                              "abort or kill", v);
            app.exit_path = (int)k;
            i++;
        } else if (!strcmp(a, "--destroy")) {
            if (!v)
                return misuse("%s needs a value", a);
            if (!strcmp(v, "before"))
                app.destroy = DESTROY_BEFORE;
            else if (!strcmp(v, "atexit"))
                app.destroy = DESTROY_ATEXIT;
            else if (!strcmp(v, "never"))
                app.destroy = DESTROY_NEVER;
            else
                return misuse("--destroy \"%s\": before, atexit or never", v);
            i++;
        } else if (!strcmp(a, "--rate")) {
            char spec[64];
            if (!v)
                return misuse("%s needs a value", a);
            snprintf(spec, sizeof spec, "+kernel=%s", v);
            simapp_setenv_opt("CUPTOPSIM_RATES", spec);
            i++;
        } else if (!strcmp(a, "--nvtx")) {
            char *end;
            if (!v)
                return misuse("%s needs a value", a);
            app.nvtx_ms = strtod(v, &end);
            if (*end || end == v || !(app.nvtx_ms >= 1 && app.nvtx_ms <= 60000))
                return misuse("--nvtx \"%s\": milliseconds from 1 to 60000", v);
            i++;
        } else if (!strcmp(a, "--max-rate")) {
            simapp_setenv_opt("CUPTOPSIM_MAX_RATE", "1");
        } else if (!strcmp(a, "--handler")) {
            app.handler = 1;
        } else if (!strcmp(a, "--handler-file") || !strcmp(a, "--child-scenario") ||
                   !strcmp(a, "--ready-file")) {
            if (!v)
                return misuse("%s needs a value", a);
            if (a[2] == 'h')
                app.handler_file = v;
            else if (a[2] == 'c')
                app.child_scenario = v;
            else
                app.ready_file = v;
            i++;
        } else if (!strcmp(a, "--fork")) {
            app.fork = 1;
        } else if (!strcmp(a, "--exec")) {
            app.exec = 1;
        } else {
            return misuse("unknown option \"%s\"", a);
        }
    }
    if (app.exec && !app.fork)
        return misuse("%s needs --fork", "--exec");
    if (app.destroy == DESTROY_DEFAULT)
        app.destroy = app.exit_path <= EX__EXIT ? DESTROY_BEFORE : DESTROY_NEVER;
    app.exit_name = simapp_exit_names[app.exit_path];
    return 0;
}

int main(int argc, char **argv)
{
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
    pid_t child = -1;
    int rc;

    if ((rc = simapp_parse(argc, argv)))
        return rc;
    /* The application's handlers come first; CUDA (and the agent) later. */
    if (app.handler)
        for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = simapp_on_signal;
            sigemptyset(&sa.sa_mask);
            sigaction(sigs[i], &sa, NULL);
        }
    /* --cuda-after: a program that loads CUDA late (cuptop attach before
     * that: the agent waits for it) */
    if (app.cuda_after > 0) {
        struct timespec ts = {(time_t)app.cuda_after,
                              (long)((app.cuda_after - (double)(time_t)app.cuda_after) * 1e9)};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
    }
    if ((rc = simapp_load_sim()))
        return rc;
    /* Registered before the agent loads, so it runs after the agent's own
     * atexit handler: the final truth includes the agent's last flush. */
    atexit(simapp_truth_atexit);
    simapp_inject();
    app.contexts_create();
    /* Registered after the agent: CUDA's teardown then runs before the
     * agent's atexit, as it can in real applications. */
    if (app.destroy == DESTROY_ATEXIT)
        atexit(simapp_destroy_atexit);
    if (app.fork) {
        child = fork();
        if (child == 0)
            simapp_child(argv);
        if (child < 0)
            fprintf(stderr, "cuptop-simapp: fork: %s\n", strerror(errno));
    }
    if (app.ready_file)
        simapp_touch(app.ready_file);
    simapp_run();
    if (child > 0) {
        int st = 0;
        while (waitpid(child, &st, 0) < 0 && errno == EINTR)
            ;
        if (!WIFEXITED(st) || WEXITSTATUS(st))
            fprintf(stderr, "cuptop-simapp: child %ld ended with status 0x%x\n", (long)child,
                    (unsigned)st);
    }
    if (app.destroy == DESTROY_BEFORE)
        app.contexts_destroy();

    switch (app.exit_path) {
    case EX_RETURN: return 0;
    case EX_EXIT: exit(0);
    case EX__EXIT:
        (void)app.truth_write(NULL, 1, app.exit_name);
        _exit(0);
    case EX_SIGTERM:
    case EX_SIGINT:
    case EX_SIGHUP: {
        int sig = app.exit_path == EX_SIGTERM ? SIGTERM : app.exit_path == EX_SIGINT ? SIGINT
                                                                                    : SIGHUP;
        /* Not final: a handler (the agent's) may still flush, and the
         * simulator rewrites the file after each forced flush. */
        (void)app.truth_write(NULL, 0, app.exit_name);
        raise(sig);
        /* Only reached when a handler swallowed the signal. */
        return 0;
    }
    case EX_ABORT:
        (void)app.truth_write(NULL, 0, app.exit_name);
        abort();
    case EX_KILL:
        (void)app.truth_write(NULL, 0, app.exit_name);
        kill(getpid(), SIGKILL);
        return 1;
    }
    return 0;
}
