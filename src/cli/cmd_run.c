/*
 * cmd_run.c - cuptop run: start a program with the agent injected.
 *
 *   cuptop run [--store DIR] [--kinds LIST] [--pool N] [--buffer-size B]
 *              [--queue N] [--device-buffer-size B] [--device-buffer-pool-limit N]
 *              [--flush-period MS] [--stop-timeout MS] [--config FILE] [--label NAME]
 *              [--job ID]
 *              [--dormant] [--devices LIST] [--only-if VAR=VALUE]
 *              [--capture-range cudaProfilerApi|nvtx:NAME[@DOMAIN]|every:P/W]
 *              [--capture-range-end stop|repeat[:N]]
 *              [--api all|gpu|none] [--api-include NAMES] [--api-exclude NAMES]
 *              [--on-detach finalize|keep] [--count-only] [--log] -- CMD [ARGS...]
 *
 * Every value is checked with the agent's own parser (agent_config.c):
 * what the agent would refuse (and replace by its default) is a usage
 * error here, one line and exit 2.
 * Sets CUDA_INJECTION64_PATH to libcuptop-agent.so and the CUPTOP_*
 * variables, runs CMD and waits for it: the exit status is CMD's own.  At
 * exit, when no session was created for CMD (not a CUDA program, a store
 * the agent could not open), one line on stderr says so and why: the agent
 * reports each session it creates, or why it could not, in a file named by
 * CUPTOP_RUN_REPORT.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_config.h"
#include "cli_opts.h"
#include "cupstore.h"
#include "cuptop.h"
#include "model.h"

/* The options, in --help's order.  Values from RO_FIRST set one agent
 * variable each (run_vars); the rest are cli_agent_option's or cmd_run's. */
enum {
    RO_STORE = 's', RO_LABEL = 'l', RO_JOB = 'J', RO_CONFIG = 'c', RO_DORMANT = 'd',
    RO_COUNT_ONLY = 'n', RO_LEDGER = 'L', RO_LOG = 'g', RO_HELP = 'h',
    RO_FIRST = 256,
    RO_KINDS = RO_FIRST, RO_POOL, RO_BUFFER_SIZE, RO_QUEUE, RO_DEVICE_BUFFER_SIZE,
    RO_DEVICE_BUFFER_POOL_LIMIT, RO_FLUSH_PERIOD, RO_STOP_TIMEOUT, RO_DEVICES, RO_ONLY_IF,
    RO_CAPTURE_RANGE, RO_CAPTURE_RANGE_END, RO_API, RO_API_INCLUDE, RO_API_EXCLUDE,
    RO_ON_DETACH, RO_END
};

/* run's options (cli_opts.h): parsed from this table by hand (cmd_run:
 * CMD and its arguments follow them; cli_agent_option, which cuptop
 * attach shares) and its --help's options part.  A left column wider
 * than the text's keeps its own spacing in shown. */
const cli_cmd cli_cmd_run = {
    .name = "run",
    .shortopts = "h",
    .column = 21,
    .opts = (const cli_opt[]){
        {"store", "DIR", RO_STORE,
         "store directory (default $CUPTOP_STORE or ~/.local/state/cuptop)\n", NULL},
        {"kinds", "LIST", RO_KINDS,
         "activity kinds: kernel,memcpy,memset,runtime,driver,sync,\n"
         "overhead,marker,other (records cuptop does not classify;\n"
         "turns no CUPTI kind on), or all / none / default\n", NULL},
        {"pool", "N", RO_POOL, "most buffers handed to CUPTI at once, 1..4096\n"
                               "(default: grows with threads)\n", NULL},
        {"buffer-size", "B", RO_BUFFER_SIZE,
         "bytes per buffer, e.g. 4M (64K..256M, a multiple of 8)\n", NULL},
        {"queue", "N", RO_QUEUE, "completed-buffer queue capacity, 1..1048576\n", NULL},
        {"device-buffer-size", "B", RO_DEVICE_BUFFER_SIZE,
         "CUPTI's device buffer size, 0..4G (0: CUPTI's)\n", "--device-buffer-size B      "},
        {"device-buffer-pool-limit", "N", RO_DEVICE_BUFFER_POOL_LIMIT,
         "CUPTI's device buffer count, 0..1048576\n", NULL},
        {"flush-period", "MS", RO_FLUSH_PERIOD,
         "periodic flush, 0..60000 ms (0: off; default 200)\n", NULL},
        {"stop-timeout", "MS", RO_STOP_TIMEOUT,
         "time limit of each stop step, 10..600000 ms (default 3000)\n", NULL},
        {"label", "NAME", RO_LABEL, "workload label kept with the session (CUPTOP_LABEL;\n"
                                    "at most 255 bytes), shown by sessions, report, export\n",
         NULL},
        {"job", "ID", RO_JOB,
         "the job id every process of CMD shares (CUPTOP_JOB; default\n"
         "CUPTOP_JOB if set, else a new job-YYYYmmddTHHMMSS-PID);\n"
         "ranks come from RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID\n"
         "or LOCAL_RANK (cuptop sessions/check/export --job)\n", NULL},
        {"config", "FILE", RO_CONFIG, "key=value settings, checked like the options\n"
                                      "(the environment wins)\n", NULL},
        {"dormant", NULL, RO_DORMANT, "no CUPTI call until a request turns kinds on (from the\n"
                                      "monitor or cuptop control --attach)\n", NULL},
        {"devices", "LIST", RO_DEVICES, "collect the device kinds only on these devices (0,2 or\n"
                                        "0-3); the others are reported out of scope\n", NULL},
        {"only-if", "VAR=VALUE", RO_ONLY_IF,
         "in a process where VAR is not VALUE the agent steps\n"
         "aside before any CUPTI call (e.g. LOCAL_RANK=0)\n", NULL},
        {"capture-range", "MODE", RO_CAPTURE_RANGE, "collect only between cudaProfilerStart\n"
                                                    "and cudaProfilerStop\n",
         "--capture-range cudaProfilerApi"},
        {"capture-range", "MODE", RO_CAPTURE_RANGE,
         "collect only while an NVTX range named\n"
         "NAME is open (any domain; @DOMAIN: that domain only;\n"
         "NAME@: the default domain; dormant outside it)\n",
         "--capture-range nvtx:NAME[@DOMAIN]"},
        {"capture-range", "MODE", RO_CAPTURE_RANGE,
         "collect for WINDOW at every multiple of\n"
         "PERIOD on the wall clock (every:60s/5s; units ms s m h;\n"
         "100ms <= WINDOW < PERIOD <= 24h); dormant in between\n",
         "--capture-range every:PERIOD/WINDOW"},
        {"capture-range-end", "stop|repeat|repeat:N", RO_CAPTURE_RANGE_END,
         "after the first range, stop for\n"
         "good (default), or collect every range (at most N)\n", NULL},
        {"api", "all|gpu|none", RO_API,
         "which runtime and driver API calls are recorded (default\n"
         "gpu: those that launch, copy, set, synchronize, allocate\n"
         "or free, create or destroy streams, events and graphs;\n"
         "the others are muted per call id, which is not loss)\n", NULL},
        {"api-include", "NAMES", RO_API_INCLUDE,
         "also record these calls (function-name globs, comma\n"
         "list: cudaGetDevice,cuCtx*)\n", NULL},
        {"api-exclude", "NAMES", RO_API_EXCLUDE, "do not record these calls (applied last)\n",
         NULL},
        {"on-detach", "finalize|keep", RO_ON_DETACH,
         "when every kind is turned off: tear CUPTI down\n"
         "at the next CUDA call so the program runs as fast as\n"
         "before the attach (default finalize), or keep CUPTI\n"
         "initialised (keep)\n", NULL},
        {"count-only", NULL, RO_COUNT_ONLY,
         "parse and count records but store none (CUPTOP_SINK=null)\n", NULL},
        {"ledger", NULL, RO_LEDGER,
         "the launch ledger: every kernel, copy and set launched is\n"
         "expected until its record arrives; what never arrives is\n"
         "counted per stream, and as `unrecorded` where no other\n"
         "class counted it (CUPTOP_LEDGER=1)\n", NULL},
        {"log", NULL, RO_LOG, "agent messages on stderr\n", NULL},
        {"help", NULL, RO_HELP, NULL, NULL},
        {NULL, NULL, 0, NULL, NULL},
    },
};

static void run_usage(FILE *f)
{
    fputs("usage: cuptop run [OPTIONS] -- CMD [ARGS...]\n\n"
          "Run CMD with the cuptop agent injected (CUDA_INJECTION64_PATH), NVTX routed\n"
          "to it (NVTX_INJECTION64_PATH, unless already set) for the marker kind.\n\n",
          f);
    cli_opts_help(&cli_cmd_run, f);
    fputs("\nThe exit status is CMD's.  See man cuptop (ENVIRONMENT) for every CUPTOP_* "
          "variable.\n", f);
}

/* What each option from RO_FIRST sets.  The value is checked by the
 * agent's own parser (agent_config_set), so cuptop run refuses exactly
 * what the agent would refuse (and silently replace by its default). */
typedef struct run_var {
    const char *var, *what;
} run_var;

#define API_GLOBS_WHAT "a comma list of function-name globs (letters, digits, _, *, ?, [...]), " \
                       "under 96 characters"

static const run_var run_vars[RO_END - RO_FIRST] = {
    [RO_KINDS - RO_FIRST] = {"CUPTOP_KINDS", "a comma list of kernel, memcpy, memset, runtime, "
                                             "driver, sync, overhead, marker, other, or all, "
                                             "none, default"},
    [RO_POOL - RO_FIRST] = {"CUPTOP_POOL", "a buffer count from 1 to 4096"},
    [RO_BUFFER_SIZE - RO_FIRST] = {"CUPTOP_BUFFER_SIZE",
                                   "a size from 64K to 256M, a multiple of 8"},
    [RO_QUEUE - RO_FIRST] = {"CUPTOP_QUEUE", "a queue capacity from 1 to 1048576"},
    [RO_DEVICE_BUFFER_SIZE - RO_FIRST] = {"CUPTOP_DEVICE_BUFFER_SIZE", "a size from 0 to 4G"},
    [RO_DEVICE_BUFFER_POOL_LIMIT - RO_FIRST] = {"CUPTOP_DEVICE_BUFFER_POOL_LIMIT",
                                                "a count from 0 to 1048576"},
    [RO_FLUSH_PERIOD - RO_FIRST] = {"CUPTOP_FLUSH_PERIOD_MS", "a period from 0 to 60000 ms"},
    [RO_STOP_TIMEOUT - RO_FIRST] = {"CUPTOP_STOP_TIMEOUT_MS", "a timeout from 10 to 600000 ms"},
    [RO_DEVICES - RO_FIRST] = {"CUPTOP_DEVICES",
                               "a device list such as 0,2 or 0-3 (devices 0 to 15), or all"},
    [RO_ONLY_IF - RO_FIRST] = {"CUPTOP_ONLY_IF",
                               "VAR=VALUE (a variable name, '=', the value it must have)"},
    [RO_CAPTURE_RANGE - RO_FIRST] = {"CUPTOP_CAPTURE_RANGE", "cudaProfilerApi, "
                                     "nvtx:NAME[@DOMAIN] (NAME 1 to 255 bytes), "
                                     "every:PERIOD/WINDOW (units ms, s, m, h; 100ms <= WINDOW "
                                     "< PERIOD <= 24h) or none"},
    [RO_CAPTURE_RANGE_END - RO_FIRST] = {"CUPTOP_CAPTURE_RANGE_END",
                                         "stop, repeat or repeat:N (N 1..1000000)"},
    [RO_API - RO_FIRST] = {"CUPTOP_API", "all, gpu or none"},
    [RO_API_INCLUDE - RO_FIRST] = {"CUPTOP_API_INCLUDE", API_GLOBS_WHAT},
    [RO_API_EXCLUDE - RO_FIRST] = {"CUPTOP_API_EXCLUDE", API_GLOBS_WHAT},
    [RO_ON_DETACH - RO_FIRST] = {"CUPTOP_ON_DETACH", "finalize or keep"},
};

/* Would the agent take value v for var?  (Its parser warns when not.) */
static bool run_agent_accepts(const char *var, const char *v)
{
    agent_config *c = malloc(sizeof *c);
    bool ok;
    if (!c)
        return false;
    agent_config_defaults(c);
    ok = *v && agent_config_set(c, var, v) && c->nwarn == 0;
    free(c);
    return ok;
}

static const char *run_config_get(const char *name, void *arg)
{
    return !strcmp(name, "CUPTOP_CONFIG") ? arg : NULL;
}

/* Read the --config file as the agent will; the first thing it would
 * ignore or replace by a default, as one line (NULL: the file is good). */
static char *run_config_check(const char *path)
{
    agent_config *c = malloc(sizeof *c);
    char *bad = NULL;
    if (!c)
        return strdup("out of memory");
    agent_config_load(c, run_config_get, (void *)path);
    if (c->nwarn) {
        char *w = c->warn[0], *tail;
        /* The agent says what it does instead; cuptop run refuses. */
        if ((tail = strstr(w, "; using the default")) || (tail = strstr(w, "; ignored")))
            *tail = '\0';
        bad = strdup(w);
    }
    free(c);
    return bad;
}

/* Absolute form of a path (the program may chdir before CUDA starts). */
static char *run_abspath(const char *p)
{
    char cwd[PATH_MAX], *out;
    if (p[0] == '/' || !getcwd(cwd, sizeof cwd))
        return strdup(p);
    if (asprintf(&out, "%s/%s", cwd, p) < 0)
        return NULL;
    return out;
}

/* The job every process of this run belongs to (CUPTOP_JOB, inherited by
 * whatever CMD starts): --job, else a CUPTOP_JOB already set (a launcher
 * giving every node's cuptop run one id), else a new one,
 * job-YYYYmmddTHHMMSS-PID (UTC, cuptop run's pid). */
static int run_job_env(const char *cmd)
{
    const char *j = getenv("CUPTOP_JOB");
    char id[CUPSTORE_JOB_MAX + 1];
    if (j) {
        if (cupstore_job_valid(j))
            return 0;
        return cli_usage_error(cmd, "CUPTOP_JOB: give 1 to %d of A-Z a-z 0-9 . _ : @ + -",
                               CUPSTORE_JOB_MAX);
    }
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    snprintf(id, sizeof id, "job-%04d%02d%02dT%02d%02d%02d-%d", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)getpid());
    setenv("CUPTOP_JOB", id, 1);
    return 0;
}

/* ---- running the command ------------------------------------------------- */

/* The command's pid, for the forwarding handler (0: none yet, or in the
 * child before exec). */
static volatile sig_atomic_t run_child;

/* A stop signal a process sent to cuptop run (a supervisor's SIGTERM) goes
 * on to the command, once.  Not passed on: one the terminal sent to the
 * process group (Ctrl-C, si_code SI_KERNEL: the command got it too), and
 * one the command sent itself (kill(0, ...) or to its parent).  A sender
 * may also have signalled the command directly (kill -- -PGID of a setsid
 * cuptop run, systemd's control-group kill, kill RUNPID APPPID): cuptop
 * run cannot see that, so the copy goes on marked as forwarded, with the
 * original sender (rt_sigqueueinfo: SI_QUEUE, si_pid, AGENT_FORWARD_MAGIC),
 * and the agent in the command delivers a direct copy and a forwarded one
 * of the same sender's signal once (doc/agent.md, "Stop protocol").
 * Async-signal-safe: memset, getpid, getuid, syscall, kill. */
static void run_forward(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    pid_t child = (pid_t)run_child;
    if (child <= 0 || (info && info->si_code > 0))
        return;
    if (info && info->si_pid == child)
        return;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = sig;
    si.si_code = SI_QUEUE;
    si.si_pid = info && info->si_pid > 0 ? info->si_pid : getpid();
    si.si_uid = info ? info->si_uid : getuid();
    si.si_value.sival_int = AGENT_FORWARD_MAGIC;
    if (syscall(SYS_rt_sigqueueinfo, child, sig, &si) != 0)
        kill(child, sig);
}

/* Why no session was created, from what the agents wrote into the report
 * file; NULL when one was.  Caller frees. */
static char *run_untraced_why(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[800], *why = NULL;
    bool session = false;
    if (!f)
        return strdup("cuptop run lost its report file");
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!strncmp(line, "session ", 8))
            session = true;
        else if (!strncmp(line, "error ", 6) && !why)
            why = strdup(line + 6);
    }
    fclose(f);
    if (session) {
        free(why);
        return NULL;
    }
    if (!why)
        why = strdup("the agent was never loaded: the command made no CUDA call (not a CUDA "
                     "program?), or CUDA did not read CUDA_INJECTION64_PATH");
    return why;
}

/* The first session the agents reported into the report file ("" none). */
static void run_report_session(const char *path, char *id, size_t len)
{
    FILE *f = fopen(path, "r");
    char line[800];
    id[0] = '\0';
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "session ", 8) && !id[0]) {
            size_t n = strcspn(line + 8, "\n");
            if (n >= len)
                n = len - 1;
            memcpy(id, line + 8, n);
            id[n] = '\0';
        }
    if (f)
        fclose(f);
}

/* Stop signals sent to cuptop run go on to the command (run_forward),
 * except those ignored (nohup: the command inherits that). */
static void run_forward_install(void)
{
    static const int fwd[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t k = 0; k < sizeof fwd / sizeof *fwd; k++) {
        struct sigaction sa, cur;
        if (sigaction(fwd[k], NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
            cur.sa_handler == SIG_IGN)
            continue;   /* ignored (nohup): the command inherits that */
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = run_forward;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(fwd[k], &sa, NULL);
    }
}

/* After the command: the first session the agents reported (into res,
 * when given), and when none was created, one line saying why. */
static void run_report_read(const char *cmd, const char *report, const char *prog0,
                            cli_run_result *res)
{
    if (res)
        run_report_session(report, res->session, sizeof res->session);
    char *why = run_untraced_why(report);
    if (why) {
        char esc[900], prog[200];
        model_escape(esc, sizeof esc, why, strlen(why));
        model_escape(prog, sizeof prog, prog0, strlen(prog0));
        cli_error(cmd, "nothing was traced: no session was created for %s (%s)", prog, esc);
        free(why);
    }
}

/* Fork, exec the command with the agent injected, wait; then, when no
 * session was created for it, say so and why (one line on stderr).  The
 * exit status is the command's: a death by signal is passed on as one,
 * unless res is given (cuptop baseline): then it is 128 + the signal, and
 * the first session created is copied into res->session. */
static int run_command(const char *cmd, char **args, cli_run_result *res)
{
    char report[PATH_MAX];
    const char *t = getenv("TMPDIR");
    int pfd[2], st = 0, fd;

    snprintf(report, sizeof report, "%s/cuptop-run.XXXXXX", t && *t == '/' ? t : "/tmp");
    if ((fd = mkstemp(report)) < 0) {
        report[0] = '\0';
    } else {
        close(fd);
        setenv("CUPTOP_RUN_REPORT", report, 1);
    }
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        cli_error(cmd, "cannot run %s: %s", args[0], strerror(errno));
        if (report[0])
            unlink(report);
        return 126;
    }
    run_forward_install();
    pid_t pid = fork();
    if (pid == 0) {
        int e;
        close(pfd[0]);
        execvp(args[0], args);
        e = errno;
        if (write(pfd[1], &e, sizeof e) < 0) {
            /* the parent then sees no error and reports the exit status */
        }
        _exit(e == ENOENT ? 127 : 126);
    }
    close(pfd[1]);
    if (pid < 0) {
        cli_error(cmd, "cannot run %s: %s", args[0], strerror(errno));
        close(pfd[0]);
        if (report[0])
            unlink(report);
        return 126;
    }
    run_child = pid;
    int e = 0;
    ssize_t n;
    while ((n = read(pfd[0], &e, sizeof e)) < 0 && errno == EINTR)
        ;
    close(pfd[0]);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    run_child = 0;
    if (n == (ssize_t)sizeof e) {
        cli_error(cmd, "cannot run %s: %s", args[0], strerror(e));
    } else if (report[0]) {
        run_report_read(cmd, report, args[0], res);
    }
    if (report[0])
        unlink(report);
    fflush(stderr);
    if (res && WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    if (WIFSIGNALED(st)) {
        /* die of the same signal, so a shell sees what it would have */
        int sig = WTERMSIG(st);
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
        raise(sig);
        return 128 + sig;
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int cli_agent_option(const char *cmd, int argc, char **argv, int *ip, int *rc)
{
    int i = *ip;
    const char *o = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    const cli_opt *op = cli_opts_find(&cli_cmd_run, o);
    if (!op || op->val == RO_JOB || op->val == RO_HELP)
        return 0;   /* cuptop run's own (attach: unknown) */
    switch (op->val) {
    case RO_DORMANT: setenv("CUPTOP_DORMANT", "1", 1); return 1;
    case RO_COUNT_ONLY: setenv("CUPTOP_SINK", "null", 1); return 1;
    case RO_LEDGER: setenv("CUPTOP_LEDGER", "1", 1); return 1;
    case RO_LOG: setenv("CUPTOP_LOG", "1", 1); return 1;
    default: break;
    }
    const run_var *ro = op->val >= RO_FIRST ? &run_vars[op->val - RO_FIRST] : NULL;
    if (!v) {
        *rc = cli_usage_error(cmd, "%s needs a value", o);
        return -1;
    }
    *ip = i + 1;
    if (ro) {
        if (!run_agent_accepts(ro->var, v)) {
            char esc[160];
            model_escape(esc, sizeof esc, v, strlen(v));
            *rc = cli_usage_error(cmd, "%s: \"%s\" is not %s", o, esc, ro->what);
            return -1;
        }
        /* the option wins over the environment (a "rerun: CUPTOP_X=V" line
         * set there, say): never silently */
        const char *was = getenv(ro->var);
        if (was && strcmp(was, v)) {
            char e1[160], e2[160];
            model_escape(e1, sizeof e1, v, strlen(v));
            model_escape(e2, sizeof e2, was, strlen(was));
            cli_error(cmd, "%s %s wins over %s=%s from the environment", o, e1, ro->var, e2);
        }
        setenv(ro->var, v, 1);
    } else if (op->val == RO_LABEL) {
        if (!*v || strlen(v) > 255) {
            *rc = cli_usage_error(cmd, "--label: give 1 to 255 bytes");
            return -1;
        }
        setenv("CUPTOP_LABEL", v, 1);
    } else if (op->val == RO_STORE) {
        char *abs = run_abspath(v);
        if (!abs) {
            *rc = cli_usage_error(cmd, "--store: out of memory");
            return -1;
        }
        setenv("CUPTOP_STORE", abs, 1);
        free(abs);
    } else {
        char *abs = run_abspath(v);
        if (!abs || access(abs, R_OK) != 0) {
            free(abs);
            *rc = cli_usage_error(cmd, "--config: cannot read \"%s\"", v);
            return -1;
        }
        char *bad = run_config_check(abs);
        if (bad) {
            char esc[600];
            model_escape(esc, sizeof esc, bad, strlen(bad));
            *rc = cli_usage_error(cmd, "--config: %s", esc);
            free(bad);
            free(abs);
            return -1;
        }
        setenv("CUPTOP_CONFIG", abs, 1);
        free(abs);
    }
    return 1;
}

int cmd_run(int argc, char **argv)
{
    const char *cmd = argv[0];
    int i;

    for (i = 1; i < argc; i++) {
        const char *o = argv[i];
        int rc = 0, took;
        if (!strcmp(o, "--")) {
            i++;
            break;
        }
        const cli_opt *op = cli_opts_find(&cli_cmd_run, o);
        if (op && op->val == RO_HELP) {
            run_usage(stdout);
            return CUPTOP_EXIT_OK;
        }
        if ((took = cli_agent_option(cmd, argc, argv, &i, &rc)) < 0)
            return rc;
        if (took)
            continue;
        if (op && op->val == RO_JOB) {   /* cuptop run only: the job of every process */
            if (i + 1 >= argc)
                return cli_usage_error(cmd, "--job needs a value");
            const char *v = argv[++i];
            if (!cupstore_job_valid(v))
                return cli_usage_error(cmd, "--job: give 1 to %d of A-Z a-z 0-9 . _ : @ + -",
                                       CUPSTORE_JOB_MAX);
            setenv("CUPTOP_JOB", v, 1);
            continue;
        }
        if (o[0] != '-')
            break;   /* the command itself, without "--" */
        if (i + 1 >= argc)
            return cli_usage_error(cmd, "%s needs a value", o);
        return cli_usage_error(cmd, "unknown option \"%s\"", o);
    }
    if (i >= argc)
        return cli_usage_error(cmd, "no command given (cuptop run [OPTIONS] -- CMD [ARGS...])");

    char *agent = cli_locate("libcuptop-agent.so");
    if (!agent) {
        cli_error(cmd, "libcuptop-agent.so not found: the agent was not built (no CUPTI "
                       "headers at configure time?) or set CUPTOP_AGENT");
        return CUPTOP_EXIT_USAGE;
    }
    setenv("CUDA_INJECTION64_PATH", agent, 1);
    /* NVTX is read once, at each library's first NVTX call: route it to
     * the agent before the program starts (doc/agent.md, "NVTX").  A
     * value the user set (another tool) is kept, and said. */
    const char *nv = getenv("NVTX_INJECTION64_PATH");
    if (!nv || !*nv)
        setenv("NVTX_INJECTION64_PATH", agent, 1);
    else if (strcmp(nv, agent) != 0)
        fprintf(stderr, "cuptop run: NVTX_INJECTION64_PATH is set to %s: kept, so NVTX ranges "
                        "go there, not to cuptop\n", nv);
    free(agent);
    if (run_job_env(cmd) != 0)
        return CUPTOP_EXIT_USAGE;
    return run_command(cmd, argv + i, NULL);
}

int cli_run_traced(const char *cmd, char **args, cli_run_result *res)
{
    char *agent = cli_locate("libcuptop-agent.so");
    res->session[0] = '\0';
    if (!agent) {
        cli_error(cmd, "libcuptop-agent.so not found: the agent was not built (no CUPTI "
                       "headers at configure time?) or set CUPTOP_AGENT");
        return -1;
    }
    setenv("CUDA_INJECTION64_PATH", agent, 1);
    free(agent);
    return run_command(cmd, args, res);
}

bool cli_run_accepts(const char *var, const char *value)
{
    return run_agent_accepts(var, value);
}
