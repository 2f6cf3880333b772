/*
 * cmd_attach.c - cuptop attach PID: start watching a CUDA process that is
 * already running.
 *
 *   cuptop attach [RUN OPTIONS] [--wait S] PID
 *
 * Checks the target (a live process, not a zombie, not cuptop itself, an
 * x86-64 program), then either
 *   - the agent is loaded there already (cuptop run, an earlier attach):
 *     finds its session in the store and turns its kinds on with a control
 *     request, as `cuptop control SESSION --kinds` would; or
 *   - loads libcuptop-agent.so with the project's ptrace injector
 *     (cli_inject.c) and calls cuptop_agent_attach with the options as
 *     CUPTOP_* lines; the agent reports its session and the control
 *     request it made for the kinds in a report file, and cuptop attach
 *     waits for the acknowledgement: from then on everything is collected.
 * A concurrent cuptop attach of the same process is waited for (its
 * ptrace, then its session's first heartbeat); a target that ends while
 * cuptop attach waits is said at once.
 * Exit status: 0 attached (or the agent waits for CUDA), 1 the injection
 * failed (the target restored), the request was not applied in time, or
 * the process ended first, 2
 * usage, a PID that cannot be attached (none, zombie, cuptop itself,
 * another architecture, ptrace refused).
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_inject.h"
#include "cupstore.h"
#include "cli_opts.h"
#include "cuptop.h"
#include "model.h"

extern char **environ;

/* attach's own options (cli_opts.h), parsed from this table by hand
 * (cmd_attach); every other option is one of cuptop run's table that
 * cli_agent_option takes (--only-if and --capture-range* refused: they
 * choose a process at its start). */
const cli_cmd cli_cmd_attach = {
    .name = "attach",
    .shortopts = "h",
    .column = 20,
    .opts = (const cli_opt[]){
        {"wait", "S", 'w', "wait up to S seconds for the session and its attach\n(default 30)\n",
         NULL},
        {"help", NULL, 'h', NULL, NULL},
        {NULL, NULL, 0, NULL, NULL},
    },
};

static void attach_usage(FILE *f)
{
    fprintf(f,
            "usage: cuptop attach [OPTIONS] PID\n\n"
            "Load the cuptop agent into the running process PID (ptrace, x86-64) and start\n"
            "a session collecting from the moment of the attach.  A process that has the\n"
            "agent already (cuptop run, an earlier attach) gets a control request that\n"
            "turns its kinds on instead.  A process that has not loaded CUDA yet: the agent\n"
            "waits for it (300 s, or CUPTOP_ATTACH_CUDA_WAIT seconds; cuptop sessions lists\n"
            "the wait) and starts then, or gives up and stays loaded, idle.\n\n"
            "  --store DIR, --kinds LIST, --label NAME, --pool N, --buffer-size B, --queue N,\n"
            "  --device-buffer-size B, --device-buffer-pool-limit N, --flush-period MS,\n"
            "  --stop-timeout MS, --config FILE, --dormant, --devices LIST, --api MODE,\n"
            "  --api-include NAMES, --api-exclude NAMES, --on-detach finalize|keep,\n"
            "  --count-only, --ledger, --log  as for cuptop run (see cuptop run --help)\n");
    cli_opts_help(&cli_cmd_attach, f);
    fprintf(f,
            "\nNeeds the right to ptrace PID: the same user (and Yama ptrace_scope 0) or root.\n"
            "Records before the attach were never in scope: check and report judge the\n"
            "attached span.  `cuptop control SESSION --detach` turns collection off and tears\n"
            "CUPTI down at the process's next CUDA call (unless --on-detach keep); the\n"
            "library stays loaded, dormant.\n"
            "Exit status: 0 attached, 1 the injection failed (the process was restored) or\n"
            "the attach was not acknowledged in time, 2 usage error or a PID that cannot be\n"
            "attached.\n");
}

static uint64_t attach_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

bool cli_pid_gone(int pid)
{
    char p[64], buf[512];
    snprintf(p, sizeof p, "/proc/%d/stat", pid);
    FILE *f = fopen(p, "re");
    if (!f)
        return true;
    char *rp = fgets(buf, sizeof buf, f) ? strrchr(buf, ')') : NULL;
    fclose(f);
    return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

/* Field 22 of /proc/PID/stat (the start time, clock ticks after boot) and
 * the comm; 0 when the process is gone. */
static unsigned long long attach_start_time(int pid, char *comm, size_t clen)
{
    char p[64], buf[1024];
    unsigned long long t = 0;
    snprintf(p, sizeof p, "/proc/%d/stat", pid);
    FILE *f = fopen(p, "re");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *lp = strchr(buf, '('), *rp = strrchr(buf, ')'), *q = rp;
    if (comm && clen) {
        comm[0] = '\0';
        if (lp && rp && rp > lp)
            snprintf(comm, clen, "%.*s", (int)(rp - lp - 1), lp + 1);
    }
    for (int fld = 2; q && fld < 22; fld++)
        q = strchr(q + 1, ' ');
    if (q)
        t = strtoull(q + 1, NULL, 10);
    return t;
}

/* STORE/.attach-PID (agent_remote.c): an attach that waits for CUDA. */
struct attach_pending {
    int pid;
    unsigned long long start_time, since_ns, until_ns;
    char state[16];
};

/* 0: read, and the process that wrote it still lives; -1 otherwise. */
static int attach_pending_read(const char *dir, const char *name, struct attach_pending *p)
{
    char path[PATH_MAX], line[128];
    memset(p, 0, sizeof *p);
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return -1;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0)
        return -1;
    FILE *f = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? fdopen(fd, "r") : NULL;
    if (!f) {
        close(fd);
        return -1;
    }
    for (int i = 0; i < 8 && fgets(line, sizeof line, f); i++) {
        char *v = strchr(line, '=');
        if (!v)
            continue;
        *v++ = '\0';
        v[strcspn(v, "\n")] = '\0';
        if (!strcmp(line, "pid"))
            p->pid = atoi(v);
        else if (!strcmp(line, "start_time"))
            p->start_time = strtoull(v, NULL, 10);
        else if (!strcmp(line, "since_ns"))
            p->since_ns = strtoull(v, NULL, 10);
        else if (!strcmp(line, "until_ns"))
            p->until_ns = strtoull(v, NULL, 10);
        else if (!strcmp(line, "state"))
            snprintf(p->state, sizeof p->state, "%s", v);
    }
    fclose(f);
    if (p->pid <= 0 || !p->state[0] || cli_pid_gone(p->pid) ||
        attach_start_time(p->pid, NULL, 0) != p->start_time ||
        !cli_inject_has_mapping(p->pid, "/libcuptop-agent.so"))
        return -1;   /* that process ended (its pid may be another's now) or
                        exec'd another program (the agent went with the old) */
    return 0;
}

static void attach_pending_text(const struct attach_pending *p, char *buf, size_t len)
{
    char since[32], until[32];
    model_format_second(p->since_ns / 1000000000u, since, sizeof since);
    model_format_second(p->until_ns / 1000000000u, until, sizeof until);
    if (!strcmp(p->state, "waiting"))
        snprintf(buf, len, "process %d: attached at %s, no session yet: it has not loaded "
                           "CUDA; the agent waits for it until %s", p->pid, since, until);
    else
        snprintf(buf, len, "process %d: attached at %s, no session: it did not load CUDA by "
                           "%s; the agent gave up and stays loaded, idle", p->pid, since, until);
}

int cli_pending_print(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (!d)
        return 0;
    while ((e = readdir(d))) {
        struct attach_pending p;
        char line[300], comm[64] = "", cmd[64];
        size_t l = strlen(e->d_name);
        if (strncmp(e->d_name, ".attach-", 8) || l < 9 || !isdigit((unsigned char)e->d_name[l - 1]) ||
            attach_pending_read(dir, e->d_name, &p))
            continue;
        attach_pending_text(&p, line, sizeof line);
        attach_start_time(p.pid, comm, sizeof comm);
        model_escape(cmd, sizeof cmd, comm, strlen(comm));
        printf("%s%s (%s)\n", n ? "" : "\nattached, no session yet:\n", line, cmd);
        n++;
    }
    closedir(d);
    return n;
}

/* The pending attach of pid in dir, if it is there (0). */
static int attach_pending_of(const char *dir, int pid, struct attach_pending *p)
{
    char name[32];
    snprintf(name, sizeof name, ".attach-%d", pid);
    return attach_pending_read(dir, name, p);
}

/* Another cuptop attach holds pid's thread (ptrace): its pid, else 0. */
static int attach_other_injector(int pid)
{
    char p[64], line[256], comm[64];
    int tracer = 0;
    snprintf(p, sizeof p, "/proc/%d/status", pid);
    FILE *f = fopen(p, "re");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "TracerPid: %d", &tracer) == 1)
            break;
    fclose(f);
    if (tracer <= 0 || tracer == getpid() || !attach_start_time(tracer, comm, sizeof comm))
        return 0;
    return !strcmp(comm, "cuptop") ? tracer : 0;
}

/* Another cuptop attach holds the thread right now (its state reads
 * "traced", PTRACE_SEIZE fails): wait for it to finish.  0 when none holds
 * it (any more); -1 with the line printed when it still does. */
static int attach_wait_other(const char *cmd, int pid, double wait_s)
{
    int other = attach_other_injector(pid);
    if (!other)
        return 0;
    printf("process %d: another cuptop attach (pid %d) is loading the agent; waiting for it\n",
           pid, other);
    fflush(stdout);
    uint64_t until = attach_mono_ms() + (uint64_t)(wait_s * 1000);
    while (attach_other_injector(pid) && attach_mono_ms() < until) {
        struct timespec nap = {0, 20000000};
        nanosleep(&nap, NULL);
    }
    if ((other = attach_other_injector(pid))) {
        cli_error(cmd, "another cuptop attach (pid %d) still holds process %d after %g s", other,
                  pid, wait_s);
        return -1;
    }
    return 0;
}

/* The target can be attached: one line and exit status 2 when not. */
static int attach_check_pid(const char *cmd, const char *arg, pid_t *out)
{
    char *end, p[64], buf[512];
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (!isdigit((unsigned char)arg[0]) || *end || errno || v <= 0 || v > INT32_MAX)
        return cli_usage_error(cmd, "\"%s\" is not a process id", arg);
    pid_t pid = (pid_t)v;
    if (pid == getpid())
        return cli_usage_error(cmd, "%d is cuptop itself", (int)pid);
    snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(p, "re");
    if (!f)
        return cli_usage_error(cmd, "no process %d", (int)pid);
    char *rp = fgets(buf, sizeof buf, f) ? strrchr(buf, ')') : NULL;
    fclose(f);
    if (!rp || rp[1] != ' ')
        return cli_usage_error(cmd, "cannot read the state of process %d", (int)pid);
    if (rp[2] == 'Z' || rp[2] == 'X')
        return cli_usage_error(cmd, "process %d is a zombie (it has exited)", (int)pid);
    /* traced: by a debugger, refused; by another cuptop attach that took
     * the thread since attach_wait_other looked, waited for (attach_inject
     * waits when PTRACE_SEIZE fails) */
    if (rp[2] == 't' && !attach_other_injector((int)pid))
        return cli_usage_error(cmd, "process %d is traced by a debugger already", (int)pid);
    snprintf(p, sizeof p, "/proc/%d/exe", (int)pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        Elf64_Ehdr eh;
        ssize_t n = read(fd, &eh, sizeof eh);
        close(fd);
        if (n == (ssize_t)sizeof eh && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
            (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64))
            return cli_usage_error(cmd, "process %d is not an x86-64 program: cuptop attach "
                                        "injects into x86-64 processes only", (int)pid);
    }
#if !defined(__x86_64__)
    return cli_usage_error(cmd, "cuptop attach works on x86-64 Linux only; start the program "
                                "under 'cuptop run --dormant' instead");
#endif
    *out = pid;
    return 0;
}

/* The newest session of pid in dir ("...-PID", maybe with a suffix). */
static char *attach_find_session(const char *dir, pid_t pid)
{
    char tail[32];
    char *best = NULL;
    int n = snprintf(tail, sizeof tail, "-%d", (int)pid);
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d)
        return NULL;
    while ((e = readdir(d))) {
        const char *m = strstr(e->d_name, tail);
        if (!m || isdigit((unsigned char)m[n]) || m == e->d_name)
            continue;
        if (!best || strcmp(e->d_name, best) > 0) {
            free(best);
            best = strdup(e->d_name);
        }
    }
    closedir(d);
    return best;
}

/* The agent is in the process already: a control request turns its kinds
 * on (cuptop control SESSION --kinds LIST | --attach). */
static int attach_control(const char *cmd, const char *dir, pid_t pid, double wait_s)
{
    struct attach_pending pend;
    char line[300];
    if (attach_pending_of(dir, (int)pid, &pend) == 0) {
        attach_pending_text(&pend, line, sizeof line);
        if (!strcmp(pend.state, "waiting")) {
            printf("%s (an earlier cuptop attach); its session starts then, with the kinds "
                   "that attach asked for\n", line);
            return CUPTOP_EXIT_OK;
        }
        cli_error(cmd, "%s; restart the program under cuptop run to trace it", line);
        return CUPTOP_EXIT_NO;
    }
    /* An attach that has just loaded it (a concurrent cuptop attach): its
     * session appears, and opens, within moments. */
    uint64_t deadline = attach_mono_ms() + (uint64_t)(wait_s * 1000);
    char *id = NULL;
    for (;;) {
        id = attach_find_session(dir, pid);
        /* ready once its agent writes heartbeats (a session just started
         * has none yet and reads as crashed) */
        model_summary sum;
        char *why = NULL;
        if (id && model_summarize_id(dir, id, 0, UINT64_MAX, &sum, &why) == 0) {
            bool live = sum.state == MODEL_STATE_RUNNING;
            model_summary_free(&sum);
            if (live)
                break;
        }
        free(why);
        if (attach_pending_of(dir, (int)pid, &pend) == 0) {
            free(id);
            return attach_control(cmd, dir, pid, wait_s);
        }
        if (cli_pid_gone((int)pid)) {
            free(id);
            cli_error(cmd, "process %d ended", (int)pid);
            return CUPTOP_EXIT_NO;
        }
        if (attach_mono_ms() >= deadline)
            break;
        free(id);
        id = NULL;
        struct timespec nap = {0, 50000000};
        nanosleep(&nap, NULL);
    }
    if (!id) {
        cli_error(cmd, "process %d has the agent already but no session of it is in %s (it "
                       "writes to another store: give that one with --store)",
                  (int)pid, dir);
        return CUPTOP_EXIT_USAGE;
    }
    printf("process %d has the agent already (session %s): turning its kinds on with a "
           "control request, not loading it twice\n", (int)pid, id);
    fflush(stdout);
    char w[32], a_control[] = "control", a_store[] = "--store", a_kinds[] = "--kinds",
         a_attach[] = "--attach", a_wait[] = "--wait";
    char *kinds = getenv("CUPTOP_KINDS");
    snprintf(w, sizeof w, "%g", wait_s);
    char *av[9] = {a_control, a_store, (char *)dir, id};
    int ac = 4;
    if (kinds) {
        av[ac++] = a_kinds;
        av[ac++] = kinds;
    } else {
        av[ac++] = a_attach;
    }
    av[ac++] = a_wait;
    av[ac++] = w;
    int rc = cmd_control(ac, av);
    free(id);
    return rc;
}

/* The CUPTOP_* lines the agent gets (the options, as cuptop run would set
 * them, and this cuptop's own CUPTOP_* environment). */
static char *attach_args(const char *dir, const char *report)
{
    size_t cap = 4096, len = 0;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    s[0] = '\0';
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, "CUPTOP_", 7) || !strncmp(*e, "CUPTOP_AGENT=", 13) ||
            !strncmp(*e, "CUPTOP_INJECT_", 14) || !strncmp(*e, "CUPTOP_STORE=", 13) ||
            !strncmp(*e, "CUPTOP_RUN_REPORT=", 18) || strchr(*e, '\n'))
            continue;
        size_t l = strlen(*e);
        if (len + l + 2 > 60000)
            break;
        if (len + l + 2 > cap) {
            char *t = realloc(s, cap = (len + l + 2) * 2);
            if (!t) {
                free(s);
                return NULL;
            }
            s = t;
        }
        memcpy(s + len, *e, l);
        len += l;
        s[len++] = '\n';
        s[len] = '\0';
    }
    char *out;
    if (asprintf(&out, "%sCUPTOP_STORE=%s\nCUPTOP_RUN_REPORT=%s\nCUPTOP_ATTACH_UID=%u\n"
                       "CUPTOP_ATTACH_PID=%d\n",
                 s, dir, report, (unsigned)getuid(), (int)getpid()) < 0)
        out = NULL;
    free(s);
    return out;
}

struct attach_report {
    bool waiting, gave_up;
    unsigned wait_bound;   /* s the agent waits for CUDA */
    char session[800];
    long long gen;      /* -1: not yet */
    char error[800];
};

static void attach_read_report(const char *path, struct attach_report *r)
{
    FILE *f = fopen(path, "re");
    char line[800];
    r->waiting = r->gave_up = false;
    r->wait_bound = 0;
    r->session[0] = r->error[0] = '\0';
    r->gen = -1;
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!strncmp(line, "waiting cuda", 12)) {
            r->waiting = true;
            r->wait_bound = (unsigned)strtoul(line + 12, NULL, 10);
        } else if (!strcmp(line, "gave up"))
            r->gave_up = true;
        else if (!strncmp(line, "session ", 8))
            snprintf(r->session, sizeof r->session, "%s", line + 8);
        else if (!strncmp(line, "request ", 8))
            r->gen = atoll(line + 8);
        else if (!strncmp(line, "error ", 6) && !r->error[0])
            snprintf(r->error, sizeof r->error, "%s", line + 6);
    }
    fclose(f);
}

/* Wait for the agent's report in the file report: -1 when its session
 * and control generation are in *r, else the exit status (said: an
 * error, CUDA never loaded, the process gone, the time up; the time up
 * while the agent still waits for CUDA is no failure). */
static int attach_await(const char *cmd, const char *report, pid_t pid, double wait_s,
                        uint64_t deadline, struct attach_report *r)
{
    bool said_waiting = false;
    for (;;) {
        attach_read_report(report, r);
        if (r->error[0]) {
            cli_error(cmd, "the agent was loaded into process %d but: %s", (int)pid, r->error);
            return CUPTOP_EXIT_NO;
        }
        if (r->session[0] && r->gen >= 0)
            return -1;
        if (r->waiting && !said_waiting) {
            printf("process %d has not loaded CUDA yet (is it a CUDA program?): the agent is "
                   "loaded and waits up to %u s for it; its session starts then, else it "
                   "gives up and stays loaded, idle (cuptop sessions lists the wait)\n",
                   (int)pid, r->wait_bound);
            fflush(stdout);
            said_waiting = true;
        }
        if (r->gave_up) {
            cli_error(cmd, "process %d did not load CUDA within %u s: the agent gave up and "
                           "stays loaded, idle", (int)pid, r->wait_bound);
            return CUPTOP_EXIT_NO;
        }
        if (cli_pid_gone((int)pid)) {
            cli_error(cmd, "process %d ended before the agent %s", (int)pid,
                      r->session[0] ? "acknowledged the attach" : "started its session");
            return CUPTOP_EXIT_NO;
        }
        if (attach_mono_ms() >= deadline) {
            if (r->waiting && !r->session[0]) {
                printf("process %d: still no CUDA after %g s; the agent goes on waiting (up "
                       "to %u s from the attach)\n", (int)pid, wait_s, r->wait_bound);
                return CUPTOP_EXIT_OK;
            }
            cli_error(cmd, "the agent in process %d did not report its session within %g s",
                      (int)pid, wait_s);
            return CUPTOP_EXIT_NO;
        }
        struct timespec nap = {0, 20000000};
        nanosleep(&nap, NULL);
    }
}

/* The agent is mapped in pid and started there: a session of it is in
 * dir, an earlier attach is pending, or another cuptop attach is loading
 * it.  Mapped without any of these, it may be there for NVTX only
 * (NVTX_INJECTION64_PATH loads it at the first NVTX call, before CUDA: no
 * InitializeInjection, no session); the injection then starts it, and
 * answers "already" (a control request) when it had started after all.
 * Known.txt 29.8: such a process was refused, "has the agent already but
 * no session of it is in STORE". */
static bool attach_agent_started(const char *dir, pid_t pid)
{
    struct attach_pending pend;
    if (!cli_inject_has_mapping(pid, "/libcuptop-agent.so"))
        return false;
    if (attach_pending_of(dir, (int)pid, &pend) == 0 || attach_other_injector((int)pid))
        return true;
    char *id = attach_find_session(dir, pid);
    bool found = id != NULL;
    free(id);
    return found;
}

/* Load the agent into pid and see its session attached.  long: the
 * attach's steps in their order (inject, another injector first, the
 * agent's answer, its report, the acknowledgement), each ending at out. */
static int attach_inject(const char *cmd, const char *dir, pid_t pid, double wait_s)
{
    char report[PATH_MAX];
    const char *t = getenv("TMPDIR");
    snprintf(report, sizeof report, "%s/cuptop-attach.XXXXXX", t && *t == '/' ? t : "/tmp");
    int fd = mkstemp(report);
    if (fd < 0) {
        cli_error(cmd, "cannot create a report file: %s", strerror(errno));
        return CUPTOP_EXIT_NO;
    }
    (void)fchmod(fd, 0622);   /* the target may run as another user (root attaches) */
    close(fd);
    char *agent = cli_locate("libcuptop-agent.so");
    char *args = attach_args(dir, report);
    int status = CUPTOP_EXIT_NO, result = -1;
    char *cause = NULL;
    if (!agent) {
        cli_error(cmd, "libcuptop-agent.so not found: the agent was not built (no CUPTI "
                       "headers at configure time?) or set CUPTOP_AGENT");
        status = CUPTOP_EXIT_USAGE;
        goto out;
    }
    if (!args) {
        cli_error(cmd, "out of memory");
        goto out;
    }
    int rc = cli_inject(pid, agent, "cuptop_agent_attach", args, &result, &cause);
    if (rc == -2 && attach_other_injector((int)pid)) {
        /* another cuptop attach seized it first: let it finish, then turn
         * the kinds on through the agent it loaded */
        if (attach_wait_other(cmd, (int)pid, wait_s) == 0)
            status = cli_inject_has_mapping(pid, "/libcuptop-agent.so")
                         ? attach_control(cmd, dir, pid, wait_s)
                         : attach_inject(cmd, dir, pid, wait_s);
        goto out;
    }
    if (rc) {
        cli_error(cmd, "%s%s", cause ? cause : "the injection failed",
                  rc == -2 ? "" : " (the process was restored and runs on)");
        status = rc == -2 ? CUPTOP_EXIT_USAGE : CUPTOP_EXIT_NO;
        goto out;
    }
    if (result == 1) {
        /* the agent was there already: started by CUDA, or loaded by a
         * cuptop attach that ran at the same time; its session takes a
         * control request */
        status = attach_control(cmd, dir, pid, wait_s);
        goto out;
    }
    if (result != 0) {
        cli_error(cmd, "the agent could not start its thread in process %d", (int)pid);
        goto out;
    }
    /* The agent reports: [waiting cuda] session ID, request GEN | error WHY */
    uint64_t deadline = attach_mono_ms() + (uint64_t)(wait_s * 1000);
    struct attach_report r;
    if ((status = attach_await(cmd, report, pid, wait_s, deadline, &r)) >= 0)
        goto out;
    status = CUPTOP_EXIT_NO;
    printf("process %d: agent loaded, session %s (store %s)\n", (int)pid, r.session, dir);
    fflush(stdout);
    if (r.gen == 0) {   /* --dormant, or no kinds */
        printf("session %s: dormant (no CUPTI call until cuptop control --attach)\n",
               r.session);
        status = CUPTOP_EXIT_OK;
        goto out;
    }
    cupstore_env *env;
    if ((rc = cli_session_open(cmd, dir, r.session, 0, &env)) != 0)
        goto out;
    double left = (double)(deadline > attach_mono_ms() ? deadline - attach_mono_ms() : 0) / 1e3;
    status = cli_control_wait_pid(cmd, env, (uint64_t)r.gen, 0, left > 1 ? left : 1, (int)pid,
                                  true);
    if (status == CUPTOP_EXIT_OK)
        printf("session %s: attached; collecting from now on (records before the attach "
               "were never in scope)\n", r.session);
    cupstore_env_close(env);
out:
    unlink(report);
    free(cause);
    free(agent);
    free(args);
    return status;
}

/* ---- for the monitor (tui_opts.attach_list / attach_pid) ---------------- */

int cli_attach_list(char ***items)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0, cap = 0;
    *items = NULL;
    if (!d)
        return -1;
    while ((e = readdir(d))) {
        char p[64], cmd[200] = "";
        long pid = strtol(e->d_name, NULL, 10);
        if (pid <= 0 || pid == getpid() || !isdigit((unsigned char)e->d_name[0]))
            continue;
        /* CUDA mapped (the driver, or the simulator's CUPTI), no agent yet */
        if ((!cli_inject_has_mapping((pid_t)pid, "/libcuda.so.1") &&
             !cli_inject_has_mapping((pid_t)pid, "/libcuptop-simcupti.so")) ||
            cli_inject_has_mapping((pid_t)pid, "/libcuptop-agent.so"))
            continue;
        snprintf(p, sizeof p, "/proc/%ld/cmdline", pid);
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        ssize_t len = fd >= 0 ? read(fd, cmd, sizeof cmd - 1) : 0;
        if (fd >= 0)
            close(fd);
        for (ssize_t i = 0; i < len; i++)
            if (cmd[i] == '\0' || (unsigned char)cmd[i] < 32)
                cmd[i] = ' ';
        cmd[len > 0 ? len : 0] = '\0';
        /* the program's base name, then its arguments */
        char *sp = strchr(cmd, ' '), *prog = cmd;
        for (char *q = cmd; *q && (!sp || q < sp); q++)
            if (*q == '/')
                prog = q + 1;
        if (n == cap) {
            char **t = realloc(*items, sizeof *t * (size_t)(cap = cap ? cap * 2 : 16));
            if (!t)
                break;
            *items = t;
        }
        char *line;
        if (asprintf(&line, "%ld  %.100s", pid, prog) < 0)
            break;
        (*items)[n++] = line;
    }
    closedir(d);
    return n;
}

int cli_attach_pid(const char *store_dir, int pid, char **msg)
{
    int pfd[2], st = 0;
    char pids[24], buf[4096] = "", wait_s[] = "15";
    size_t len = 0;
    *msg = NULL;
    snprintf(pids, sizeof pids, "%d", pid);
    if (pipe2(pfd, O_CLOEXEC))
        return CUPTOP_EXIT_NO;
    pid_t c = fork();
    if (c == 0) {
        dup2(pfd[1], STDOUT_FILENO);
        dup2(pfd[1], STDERR_FILENO);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, STDIN_FILENO);
        execl("/proc/self/exe", "cuptop", "attach", "--store", store_dir, "--wait", wait_s,
              pids, (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    if (c < 0) {
        close(pfd[0]);
        return CUPTOP_EXIT_NO;
    }
    ssize_t r;
    while ((r = read(pfd[0], buf + len, sizeof buf - 1 - len)) > 0 ||
           (r < 0 && errno == EINTR))
        if (r > 0)
            len += (size_t)r;
    close(pfd[0]);
    while (waitpid(c, &st, 0) < 0 && errno == EINTR)
        ;
    buf[len] = '\0';
    while (len && buf[len - 1] == '\n')
        buf[--len] = '\0';
    char *last = strrchr(buf, '\n');
    *msg = strdup(last ? last + 1 : buf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : CUPTOP_EXIT_NO;
}

int cmd_attach(int argc, char **argv)
{
    const char *cmd = argv[0], *pid_arg = NULL;
    double wait_s = 30;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        int rc = 0, took;
        const cli_opt *op = cli_opts_find(&cli_cmd_attach, o);
        if (op && op->val == 'h') {
            attach_usage(stdout);
            return CUPTOP_EXIT_OK;
        }
        if (op && op->val == 'w') {
            char *end;
            if (i + 1 >= argc)
                return cli_usage_error(cmd, "--wait needs a value");
            wait_s = strtod(argv[++i], &end);
            if (*end || end == argv[i] || !(wait_s >= 0 && wait_s <= 3600))
                return cli_usage_error(cmd, "--wait takes seconds from 0 to 3600, not '%s'",
                                       argv[i]);
            continue;
        }
        if (!strcmp(o, "--only-if") || !strncmp(o, "--capture-range", 15))
            return cli_usage_error(cmd, "%s is for cuptop run (a process chosen at its "
                                        "start); attach names the process", o);
        if ((took = cli_agent_option(cmd, argc, argv, &i, &rc)) < 0)
            return rc;
        if (took)
            continue;
        if (o[0] == '-')
            return cli_usage_error(cmd, "unknown option \"%s\"", o);
        if (pid_arg)
            return cli_usage_error(cmd, "give one PID (got \"%s\" and \"%s\")", pid_arg, o);
        pid_arg = o;
    }
    if (!pid_arg)
        return cli_usage_error(cmd, "no PID given (cuptop attach [OPTIONS] PID)");
    pid_t pid = 0;
    long pv = strtol(pid_arg, NULL, 10);
    if (pv > 0 && pv <= INT32_MAX && attach_wait_other(cmd, (int)pv, wait_s))
        return CUPTOP_EXIT_NO;
    int rc = attach_check_pid(cmd, pid_arg, &pid);
    if (rc)
        return rc;
    char *dir = cli_store_dir(cmd, getenv("CUPTOP_STORE"));
    if (!dir)
        return CUPTOP_EXIT_USAGE;
    if (cupstore_dir_prepare(dir) != 0) {
        cli_error(cmd, "cannot use the store %s", dir);
        free(dir);
        return CUPTOP_EXIT_USAGE;
    }
    int status = attach_agent_started(dir, pid) ? attach_control(cmd, dir, pid, wait_s)
                                                : attach_inject(cmd, dir, pid, wait_s);
    free(dir);
    return status;
}
