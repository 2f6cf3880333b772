/*
 * agent_remote.c - the agent brought into a running process (cuptop
 * attach): the exported entry point cuptop_agent_attach, which the
 * injector calls on a thread it borrowed from the application, right
 * after dlopen.
 *
 * The entry point copies its argument (the injector's memory is given
 * back at once), starts a thread of its own and returns: the borrowed
 * thread must not wait on anything.  That thread:
 *   1. waits for CUDA when the process has not loaded it yet (libcuda.so.1
 *      mapped, or the configured CUPTI library: the simulator), polling
 *      every 100 ms, as an injected agent would wait for cuInit; at most
 *      CUPTOP_ATTACH_CUDA_WAIT seconds (default 300), then it gives up
 *      and stays loaded, idle.  Meanwhile STORE/.attach-PID says so
 *      (`cuptop sessions` lists it; see remote_pending);
 *   2. loads the configuration from the argument (CUPTOP_* lines, as
 *      `cuptop run` would put them in the environment; a variable the
 *      argument does not set comes from the process's environment);
 *   3. starts the session dormant (no CUPTI call) and records that it was
 *      attached (meta attached_ns, attached_uid, attached_by_pid);
 *   4. puts the control request for the kinds asked for into its own
 *      session: the health thread attaches CUPTI late (agent_attach.c,
 *      the same path as `cuptop control --attach`), acknowledges it and
 *      opens the attached epoch.  `cuptop attach` waits for that ack.
 * Progress goes to CUPTOP_RUN_REPORT (a file cuptop attach created): one
 * line per step ("waiting cuda SECONDS", "session ID", "request GEN",
 * "error WHY").
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_int.h"

/* The attach argument, copied: "NAME=VALUE" lines. */
static struct {
    char *text;       /* owned; lines split in place   */
    char *line[64];
    unsigned n;
    bool on;          /* set before any reader starts  */
} remote_g;

const char *agent_env(const char *name)
{
    size_t len = strlen(name);
    for (unsigned i = 0; remote_g.on && i < remote_g.n; i++)
        if (!strncmp(remote_g.line[i], name, len) && remote_g.line[i][len] == '=')
            return remote_g.line[i] + len + 1;
    return getenv(name);
}

static const char *remote_getenv(const char *name, void *arg)
{
    (void)arg;
    return agent_env(name);
}

/* CUDA is in the process: the driver, or the CUPTI library configured
 * (the simulator plays both).  RTLD_NOLOAD: never loads anything. */
static bool remote_cuda_present(void)
{
    const char *names[] = {"libcuda.so.1", agent_env("CUPTOP_CUPTI_LIBRARY")};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        void *h = names[i] && *names[i] ? dlopen(names[i], RTLD_LAZY | RTLD_NOLOAD) : NULL;
        if (h) {
            dlclose(h);   /* drops the reference NOLOAD took */
            return true;
        }
    }
    return false;
}

#define REMOTE_CUDA_WAIT_S 300      /* default bound of the wait for CUDA */
#define REMOTE_CUDA_WAIT_MAX 86400

/* CUPTOP_ATTACH_CUDA_WAIT: seconds, 0..86400; anything else the default. */
static unsigned remote_cuda_wait_s(void)
{
    const char *v = agent_env("CUPTOP_ATTACH_CUDA_WAIT");
    char *end;
    if (!v || !*v)
        return REMOTE_CUDA_WAIT_S;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    return *end || errno || n > REMOTE_CUDA_WAIT_MAX || v[0] == '-' ? REMOTE_CUDA_WAIT_S
                                                                    : (unsigned)n;
}

/* STORE/.attach-PID, the attach that has no session yet: "key=value"
 * lines pid, start_time, since_ns, until_ns, state (waiting, gave_up).
 * `cuptop sessions` lists it while the process lives; removed when the
 * session starts.  Written whole to a temporary name, then renamed. */
static void remote_pending(const char *state, uint64_t since_ns, uint64_t until_ns)
{
    const char *store = agent_env("CUPTOP_STORE");
    char path[4096], tmp[4200], text[256];
    if (!store || store[0] != '/' ||
        snprintf(path, sizeof path, "%s/.attach-%d", store, (int)getpid()) >= (int)sizeof path)
        return;
    if (!state) {
        (void)unlink(path);
        return;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int n = snprintf(text, sizeof text, "pid=%d\nstart_time=%llu\nsince_ns=%llu\nuntil_ns=%llu\n"
                     "state=%s\n", (int)getpid(), agent_health_start_ticks(),
                     (unsigned long long)since_ns, (unsigned long long)until_ns, state);
    agent_fd_hold();   /* never the host's 0-2 */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    agent_fd_release();
    if (fd < 0)
        return;
    bool ok = n > 0 && write(fd, text, (size_t)n) == n;
    close(fd);
    if (!ok || rename(tmp, path))
        (void)unlink(tmp);
}

static int put_attached(cupstore_txn *txn, void *arg)
{
    char v[32];
    int rc;
    snprintf(v, sizeof v, "%llu", (unsigned long long)*(uint64_t *)arg);
    rc = cupstore_meta_put(txn, "attached_ns", v);
    const char *uid = agent_env("CUPTOP_ATTACH_UID"), *by = agent_env("CUPTOP_ATTACH_PID");
    if (rc == 0)
        rc = cupstore_meta_put(txn, "attached_uid", uid && *uid ? uid : "unknown");
    if (rc == 0 && by && *by)
        rc = cupstore_meta_put(txn, "attached_by_pid", by);
    return rc;
}

struct remote_req {
    uint32_t kinds;
    uint64_t gen;
};

static int put_request(cupstore_txn *txn, void *arg)
{
    struct remote_req *r = arg;
    return cupstore_control_request(txn, r->kinds, &r->gen);
}

static void *remote_main(void *arg)
{
    agent *a = &agent_g;
    (void)arg;
    if (!remote_cuda_present()) {
        unsigned bound = remote_cuda_wait_s();
        uint64_t since = agent_real_ns(), until = since + (uint64_t)bound * 1000000000u;
        remote_pending("waiting", since, until);
        agent_run_report(a, "waiting cuda %u", bound);
        while (!remote_cuda_present()) {
            if (agent_real_ns() >= until) {
                /* not a CUDA program, or not yet after all this time: stay
                 * loaded (unloading a library is not safe), idle */
                remote_pending("gave_up", since, until);
                agent_run_report(a, "gave up");
                return NULL;
            }
            struct timespec ts = {0, 100000000L};
            nanosleep(&ts, NULL);
        }
        remote_pending(NULL, 0, 0);
    }
    agent_fd_hold();   /* CUPTOP_CONFIG's file: never the host's 0-2 */
    agent_config_load(&a->cfg, remote_getenv, NULL);
    agent_fd_release();
    /* the API record policy, as InitializeInjection sets it: without it
     * every runtime and driver call id stays muted (issue 27) */
    (void)agent_api_set_policy(a, a->cfg.api_mode, a->cfg.api_include, a->cfg.api_exclude);
    uint32_t want = a->cfg.dormant || a->cfg.capture ? 0 : a->cfg.kinds;
    a->cfg.dormant = true;   /* kinds come on through the request below */
    uint64_t now = agent_real_ns();
    if (agent_session_start(a) || !a->env) {
        agent_run_report(a, "error the agent could not start its session (see the "
                            "session's notes, or run with --log)");
        return NULL;
    }
    (void)agent_store_put(a, put_attached, &now, AGENT_PUT_TRIES);
    agent_note(a, 0, "attached to the running process %d by uid %s: records before the "
               "attach were never in scope", (int)getpid(),
               agent_env("CUPTOP_ATTACH_UID") ? agent_env("CUPTOP_ATTACH_UID") : "unknown");
    agent_run_report(a, "session %s", a->session_id);
    if (!want) {
        agent_run_report(a, "request 0");
        return NULL;
    }
    struct remote_req r = {want, 0};
    int rc = agent_store_put(a, put_request, &r, AGENT_PUT_TRIES);
    if (rc)
        agent_run_report(a, "error cannot write the control request: %s", cupstore_strerror(rc));
    else
        agent_run_report(a, "request %llu", (unsigned long long)r.gen);
    return NULL;
}

/** The entry point `cuptop attach` calls after loading the agent into a
 *  running process.  args: CUPTOP_* settings, "NAME=VALUE" per line (at
 *  most 64 KiB; copied).  Returns 0 when the agent's thread was started,
 *  1 when the agent is already in this process (started by CUDA or by an
 *  earlier attach: cuptop attach then sends a control request), -1 on a
 *  failure (no memory, no thread).  Never blocks. */
__attribute__((visibility("default"))) int cuptop_agent_attach(const char *args);

__attribute__((visibility("default"))) int cuptop_agent_attach(const char *args)
{
    pthread_t t;
    pthread_attr_t attr;
    sigset_t all, old;
    size_t len = args ? strnlen(args, 65536) : 0;

    if (!agent_enter_once())
        return 1;
    remote_g.text = malloc(len + 1);
    if (!remote_g.text)
        return -1;
    memcpy(remote_g.text, args ? args : "", len);
    remote_g.text[len] = '\0';
    for (char *p = remote_g.text; *p && remote_g.n < 64;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        if (strchr(p, '='))
            remote_g.line[remote_g.n++] = p;
        if (!nl)
            break;
        p = nl + 1;
    }
    remote_g.on = true;
    const char *rr = agent_env("CUPTOP_RUN_REPORT");
    if (rr && rr[0] == '/' && strlen(rr) < sizeof agent_g.run_report)
        memcpy(agent_g.run_report, rr, strlen(rr) + 1);
    /* Its threads inherit this mask: the stop signals reach the
     * application's threads, never the agent's. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, remote_main, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc ? -1 : 0;
}
