/*
 * simdrive.c - plays the CUDA application for the agent's integration tests
 * over the simulated CUPTI (src/sim), through the same path libcuda uses:
 * dlopen the CUPTI library (RTLD_GLOBAL), dlopen the agent, call
 * InitializeInjection.  Afterwards it writes the simulator's ground truth
 * (cuptopsim_truth_get) as key=value lines, for tests/agent/check_truth.py.
 *
 *   simdrive SIMLIB AGENT TRUTH_FILE WORK EXIT
 *
 * WORK: emit:N      N operations of every kind on every device, from this
 *                   thread (deterministic)
 *       run:SECONDS the simulator's producer threads at the configured rates
 * EXIT: return, exit, _exit, term, int, hup (the host's own handler is
 *       installed first: it writes the truth, notes "host_handler=SIG" and
 *       _exits 128+SIG), term-dfl (no host handler: dies of the signal),
 *       abort, kill, ctxdestroy (all contexts destroyed, then return),
 *       fork (after the work, a child makes a context, emits 1000 kernels
 *       on device 0, and exits; its truth goes to TRUTH_FILE.child).
 *
 * SIMDRIVE_AGENT_CUPTI=PATH: the agent loads PATH as CUPTI instead of SIMLIB.
 *
 * The truth is written after the agent's stop protocol: from an atexit
 * handler registered before the agent's (handlers run in reverse order), or
 * from the host signal handler the agent chains to.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuptopsim.h"

static cuptopsim_truth_get_fn truth_get;
static const char *truth_path;
static char truth_child[4096];
static int host_signal;

/* Format the truth with async-signal-safe calls only (the signal paths). */
static void put_u64(char **p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *(*p)++ = tmp[--n];
}

static void put_s(char **p, const char *s)
{
    while (*s)
        *(*p)++ = *s++;
}

static const char *const kinds[CUPTOPSIM_KINDS] = {
    "kernel", "memcpy", "memset", "runtime", "driver", "sync", "overhead", "marker",
};

static void put_matrix(char **p, const char *name, uint64_t m[CUPTOPSIM_DEV_MAX][CUPTOPSIM_KINDS],
                       unsigned devs)
{
    for (unsigned d = 0; d < devs; d++)
        for (unsigned k = 0; k < CUPTOPSIM_KINDS; k++) {
            put_s(p, name);
            put_s(p, ".");
            put_s(p, kinds[k]);
            put_s(p, ".");
            put_u64(p, d);
            put_s(p, "=");
            put_u64(p, m[d][k]);
            put_s(p, "\n");
        }
}

static void write_truth(const char *path)
{
    static cuptopsim_truth t;
    static char buf[1 << 16];
    char *p = buf;
    truth_get(&t);
    put_s(&p, "devices=");
    put_u64(&p, t.devices);
    put_s(&p, "\nhost_handler=");
    put_u64(&p, (uint64_t)host_signal);
    put_s(&p, "\n");
    put_matrix(&p, "produced", t.produced, t.devices);
    put_matrix(&p, "delivered", t.delivered, t.devices);
    put_matrix(&p, "dropped", t.dropped, t.devices);
    put_matrix(&p, "held", t.held, t.devices);
    put_matrix(&p, "stolen", t.stolen, t.devices);
    put_matrix(&p, "zero_ts", t.zero_ts, t.devices);
    put_matrix(&p, "invalid", t.invalid, t.devices);
    put_matrix(&p, "foreign", t.foreign, t.devices);
    for (unsigned d = 0; d < t.devices; d++) {
        put_s(&p, "reported_dropped.");
        put_u64(&p, d);
        put_s(&p, "=");
        put_u64(&p, t.reported_dropped[d]);
        put_s(&p, "\nreported_via_null.");
        put_u64(&p, d);
        put_s(&p, "=");
        put_u64(&p, t.reported_via_null[d]);
        put_s(&p, "\nunreported_dropped.");
        put_u64(&p, d);
        put_s(&p, "=");
        put_u64(&p, t.unreported_dropped[d]);
        put_s(&p, "\n");
    }
    put_s(&p, "buffers_requested=");
    put_u64(&p, t.buffers_requested);
    put_s(&p, "\nbuffers_null=");
    put_u64(&p, t.buffers_null);
    put_s(&p, "\nbuffers_completed=");
    put_u64(&p, t.buffers_completed);
    put_s(&p, "\nbuffers_dup=");
    put_u64(&p, t.buffers_dup);
    put_s(&p, "\nbuffers_foreign=");
    put_u64(&p, t.buffers_foreign);
    put_s(&p, "\nbuffers_stolen=");
    put_u64(&p, t.buffers_stolen);
    put_s(&p, "\n");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        ssize_t w = write(fd, buf, (size_t)(p - buf));
        (void)w;
        close(fd);
    }
}

static void truth_atexit(void)
{
    write_truth(truth_path);
}

static void host_handler(int sig)
{
    host_signal = sig;
    write_truth(truth_path);
    _exit(128 + sig);
}

#define SYM(h, name) dlsym(h, name)

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: simdrive SIMLIB AGENT TRUTH_FILE WORK EXIT\n");
        return 2;
    }
    const char *how = argv[5];
    truth_path = argv[3];
    snprintf(truth_child, sizeof truth_child, "%s.child", truth_path);
    /* SIMDRIVE_AGENT_CUPTI: the agent is told to load another library (a
     * missing one: CUPTI that cannot be loaded) */
    const char *agent_cupti = getenv("SIMDRIVE_AGENT_CUPTI");
    setenv("CUPTOP_CUPTI_LIBRARY", agent_cupti && *agent_cupti ? agent_cupti : argv[1], 1);
    void *sim = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    if (!sim) {
        fprintf(stderr, "simdrive: %s\n", dlerror());
        return 2;
    }
    truth_get = (cuptopsim_truth_get_fn)SYM(sim, "cuptopsim_truth_get");
    cuptopsim_emit_fn emit = (cuptopsim_emit_fn)SYM(sim, "cuptopsim_emit");
    cuptopsim_contexts_create_fn ctx_create =
        (cuptopsim_contexts_create_fn)SYM(sim, "cuptopsim_contexts_create");
    cuptopsim_contexts_destroy_fn ctx_destroy =
        (cuptopsim_contexts_destroy_fn)SYM(sim, "cuptopsim_contexts_destroy");
    cuptopsim_app_run_fn app_run = (cuptopsim_app_run_fn)SYM(sim, "cuptopsim_app_run");
    if (!truth_get || !emit || !ctx_create || !ctx_destroy || !app_run) {
        fprintf(stderr, "simdrive: the simulator lacks cuptopsim_* entry points\n");
        return 2;
    }
    /* the host's own handlers and atexit come first, like an application's */
    atexit(truth_atexit);
    if (!strcmp(how, "term") || !strcmp(how, "int") || !strcmp(how, "hup") ||
        !strcmp(how, "abort")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = host_handler;
        sigemptyset(&sa.sa_mask);
        sigaction(!strcmp(how, "term") ? SIGTERM : !strcmp(how, "int") ? SIGINT
                  : !strcmp(how, "hup") ? SIGHUP : SIGABRT, &sa, NULL);
    }
    void *agent = dlopen(argv[2], RTLD_NOW);
    if (!agent) {
        fprintf(stderr, "simdrive: %s\n", dlerror());
        return 2;
    }
    int (*init)(void) = (int (*)(void))SYM(agent, "InitializeInjection");
    if (!init)
        return 2;
    init();
    int nctx = ctx_create();
    if (!strncmp(argv[4], "emit:", 5)) {
        uint64_t n = strtoull(argv[4] + 5, NULL, 10);
        for (int d = 0; d < nctx; d++)
            for (unsigned k = 0; k < CUPTOPSIM_KINDS; k++)
                if (emit((unsigned)d, k, n) < 0)
                    fprintf(stderr, "simdrive: emit %d %u failed\n", d, k);
    } else if (!strncmp(argv[4], "run:", 4)) {
        app_run(atof(argv[4] + 4));
    }
    if (!strcmp(how, "exit"))
        exit(0);
    if (!strcmp(how, "_exit")) {
        write_truth(truth_path);
        _exit(0);
    }
    if (!strcmp(how, "term") || !strcmp(how, "term-dfl"))
        raise(SIGTERM);
    if (!strcmp(how, "int"))
        raise(SIGINT);
    if (!strcmp(how, "hup"))
        raise(SIGHUP);
    if (!strcmp(how, "abort"))
        abort();
    if (!strcmp(how, "kill")) {
        write_truth(truth_path);
        raise(SIGKILL);
    }
    if (!strcmp(how, "ctxdestroy"))
        ctx_destroy();
    if (!strcmp(how, "fork")) {
        pid_t pid = fork();
        if (pid == 0) {
            truth_path = truth_child;
            ctx_create();
            emit(0, 0, 1000);
            exit(0);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            return 3;
    }
    return 0;
}
