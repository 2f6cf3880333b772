/*
 * simdrive.c - plays the CUDA application for the agent's integration tests
 * over the simulated CUPTI (src/sim), through the same path libcuda uses:
 * dlopen the CUPTI library (RTLD_GLOBAL), dlopen the agent, call
 * InitializeInjection.  Afterwards it writes the simulator's ground truth
 * (cuptopsim_truth_get) as key=value lines, for tests/agent/check_truth.py.
 *
 *   simdrive SIMLIB AGENT TRUTH_FILE WORK EXIT
 *
 * WORK: emit:N      N operations of every kind but graph on every device, from this
 *                   thread (deterministic)
 *       run:SECONDS the simulator's producer threads at the configured rates
 *       seq:STEP,STEP,...  steps in order (contexts are then created only
 *                   by a ctx step):
 *                     ctx        create the contexts (resource callbacks)
 *                     destroy    destroy them
 *                     emit:N     N operations of every kind but graph on every device
 *                     graph:N    N graph launches on every device
 *                     run:S      the producer threads for S seconds
 *                     mark:NAME  write DIR/NAME (DIR: the truth file's
 *                                directory) holding CLOCK_REALTIME ns
 *                     wait:NAME  wait (at most 60 s) until DIR/NAME exists
 *                     sub        subscribe as a second CUPTI client; the
 *                                result code goes to DIR/sub.N (N = 1, 2..)
 *                     unsub      unsubscribe it
 *                     sleep:MS   sleep MS milliseconds
 *                     init       with SIMDRIVE_LATE_INIT=1: call the agent's
 *                                InitializeInjection only now (CUDA
 *                                initialised late: NVTX steps before it
 *                                run before CUDA, as torch.cuda.nvtx can)
 *                     pstart     cudaProfilerStart (cuptopsim_profiler)
 *                     pstop      cudaProfilerStop
 *                   NVTX, real calls through the toolkit's nvtx3 headers (so
 *                   the NVTX loader and NVTX_INJECTION64_PATH are exercised):
 *                     push:NAME  nvtxRangePushA     pop   nvtxRangePop
 *                     xpush:HEX  nvtxRangePushA of the bytes HEX spells
 *                     dpush:DOM:NAME  nvtxDomainRangePushEx in domain DOM
 *                     dpop:DOM   nvtxDomainRangePop
 *                     dcreate:DOM  nvtxDomainCreateA now (else at first use)
 *                     reg:DOM:NAME nvtxDomainRegisterStringA (DOM "-": default)
 *                     rpush:DOM:NAME push with that registered string
 *                     wreg:DOM:NAME, wrpush:DOM:NAME, wdpop:DOM  the same
 *                       through nvtxDomainCreateW / RegisterStringW
 *                     oinit, ocreate:DOM, odpush:DOM:NAME, odpop:DOM,
 *                     xodpush:DOM:NAME, xodpop:DOM  a second NVTX instance
 *                       ($CUPTOPSIM_NVTX_OTHER), handles passed across
 *                     rstart:NAME nvtxRangeStartA (id kept)  rend  nvtxRangeEnd
 *                     nmark:NAME nvtxMarkA
 *                     cpush:NAME:ARGB:PAYLOAD  nvtxRangePushEx with a colour
 *                                (hex) and a u64 payload
 *                     nvtx:T:R   T threads, each R times: push step, push
 *                                forward, pop, dpush io:load, dpop, push
 *                                backward, pop, pop (sleeps in between;
 *                                thread i starts 10 i ms after the first,
 *                                and, but the first, holds its first step
 *                                100 ms longer)
 *                   every push (after it) and pop (before it) is told to
 *                   the simulator's NVTX truth (cuptopsim_nvtx_app): what
 *                   the application did, whether or not CUPTI sees it
 *                     read:NAME  open the FIFO DIR/NAME and block in read(2)
 *                                for one byte; DIR/NAME.got gets "N BYTE
 *                                ERRNO" (cuptop attach during a blocking
 *                                system call: it must return as if nothing
 *                                had happened)
 *                     usr1       install a SIGUSR1 handler (SA_RESTART) that
 *                                counts; usr1count writes the count to
 *                                DIR/usr1 (a signal during cuptop attach
 *                                must reach the program exactly once)
 *                     exitthread another thread calls exit(0) (exit_group
 *                                from a thread that is not main: atexit
 *                                handlers run on that thread)
 *                     raise:SIG  raise(SIG) (TERM, INT or HUP) on this thread
 *                     threads:N  N more threads that run until the end,
 *                                blocked in nanosleep (a many-thread target)
 *                     stdio:NAME the application's own I/O on fds 0-2: write
 *                                a line to fd 1 and to fd 2, read fd 0 (at
 *                                most 64 KiB, to its end); DIR/NAME gets
 *                                "w1=N e1=ERRNO w2=N e2=ERRNO r0=N e0=ERRNO"
 *                                (N -1 when the call failed)
 *                     fds:NAME   every open descriptor: DIR/NAME gets one
 *                                line per fd, "FD CLOEXEC(0|1) TARGET"
 *                     exec:NAME  fork + exec /bin/sh, which writes the
 *                                descriptors it inherited ("FD TARGET"
 *                                lines, its own 0-2 left out) to DIR/NAME
 * EXIT: return, exit, _exit, term, int, hup (the host's own handler is
 *       installed first: it writes the truth, notes "host_handler=SIG" and
 *       _exits 128+SIG), term-dfl (no host handler: dies of the signal),
 *       abort, kill, ctxdestroy (all contexts destroyed, then return),
 *       count (the host's handler of SIGTERM, SIGINT and SIGHUP, installed
 *       first, counts each delivery and returns: the program carries on;
 *       the truth's host_handler_runs says how many ran, host_handler the
 *       last signal), bus (the host's SIGBUS handler, installed first, then a real fault:
 *       a read past the end of a file the application mapped), bus-dfl
 *       (the same fault without a handler: dies of SIGBUS),
 *       fork (after the work, a child makes a context, emits 1000 kernels
 *       on device 0, and exits; its truth goes to TRUTH_FILE.child).
 *
 * AGENT "none": no agent at the start (cuptop attach brings it later);
 * then simdrive also allows any tracer (prctl PR_SET_PTRACER), so the
 * attach tests run under Yama ptrace_scope 1 as well, as an application
 * prepared for cuptop attach could.
 * SIMDRIVE_AGENT_CUPTI=PATH: the agent loads PATH as CUPTI instead of SIMLIB.
 *
 * The truth is written after the agent's stop protocol: from an atexit
 * handler registered before the agent's (handlers run in reverse order), or
 * from the host signal handler the agent chains to.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include <cupti.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>

#include "cuptopsim.h"

static cuptopsim_truth_get_fn truth_get;
static cuptopsim_call_name_fn call_name;
static cuptopsim_nvtx_app_fn nvtx_app;   /* the application's NVTX truth */
static const char *truth_path;
static char truth_child[4096];
static int host_signal;
static volatile sig_atomic_t host_runs;

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

/* One truth line "KEY=V", or "KEY.DEV=V" with dev >= 0. */
static void put_kv(char **p, const char *key, long dev, uint64_t v)
{
    put_s(p, key);
    if (dev >= 0) {
        put_s(p, ".");
        put_u64(p, (uint64_t)dev);
    }
    put_s(p, "=");
    put_u64(p, v);
    put_s(p, "\n");
}

static const char *const kinds[CUPTOPSIM_KINDS] = {
    "kernel", "memcpy", "memset", "runtime", "driver", "sync", "overhead", "marker", "graph",
};

/* The simulator's graph-launch kind, and the kinds before it: emit:N
 * makes N operations of each of those (graph launches only when asked,
 * graph:N, so the older steps' counts stay what they were). */
#define GRAPH_KIND 8u
#define PLAIN_KINDS GRAPH_KIND

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
    put_kv(&p, "devices", -1, t.devices);
    put_kv(&p, "host_handler", -1, (uint64_t)host_signal);
    put_kv(&p, "host_handler_runs", -1, (uint64_t)host_runs);
    put_matrix(&p, "produced", t.produced, t.devices);
    put_matrix(&p, "delivered", t.delivered, t.devices);
    put_matrix(&p, "dropped", t.dropped, t.devices);
    put_matrix(&p, "held", t.held, t.devices);
    put_matrix(&p, "stolen", t.stolen, t.devices);
    put_matrix(&p, "silent", t.silent, t.devices);
    put_matrix(&p, "zero_ts", t.zero_ts, t.devices);
    put_matrix(&p, "invalid", t.invalid, t.devices);
    put_matrix(&p, "foreign", t.foreign, t.devices);
    put_matrix(&p, "ops", t.ops, t.devices);
    /* graph launches (ops.graph): the nodes each has, and the per-node
     * kernel records they made (in produced.kernel; 0 while GRAPH_TRACE
     * is on, as on CUPTI 13) */
    put_kv(&p, "graph_nodes", -1, t.graph_nodes);
    for (unsigned d = 0; d < t.devices; d++)
        put_kv(&p, "graph_node_records", (long)d, t.graph_node_records[d]);
    for (unsigned d = 0; d < t.devices; d++) {
        put_kv(&p, "reported_dropped", (long)d, t.reported_dropped[d]);
        put_kv(&p, "reported_via_null", (long)d, t.reported_via_null[d]);
        put_kv(&p, "unreported_dropped", (long)d, t.unreported_dropped[d]);
    }
    for (unsigned d = 0; d < t.devices; d++)
        put_kv(&p, "dumped_contexts", (long)d, t.dumped_contexts[d]);
    for (unsigned c = 0; c < CUPTOPSIM_CALLS; c++) {
        const char *nm = call_name ? call_name(c) : NULL;
        if (!nm || !t.call_count[c])
            continue;
        put_s(&p, "call.");
        put_s(&p, nm);
        put_s(&p, "=");
        put_u64(&p, t.call_count[c]);
        put_s(&p, " ");
        put_u64(&p, t.call_first_ns[c]);
        put_s(&p, " ");
        put_u64(&p, t.call_last_ns[c]);
        put_s(&p, "\n");
    }
    put_kv(&p, "buffers_requested", -1, t.buffers_requested);
    put_kv(&p, "buffers_null", -1, t.buffers_null);
    put_kv(&p, "buffers_completed", -1, t.buffers_completed);
    put_kv(&p, "buffers_dup", -1, t.buffers_dup);
    put_kv(&p, "buffers_foreign", -1, t.buffers_foreign);
    put_kv(&p, "buffers_stolen", -1, t.buffers_stolen);
    put_kv(&p, "api_callbacks", -1, t.api_callbacks);
    put_kv(&p, "finalize_in_api_exit", -1, t.finalize_in_api_exit);
    put_kv(&p, "finalize_outside", -1, t.finalize_outside);
    put_kv(&p, "subscribed", -1, (uint64_t)t.subscribed);
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

/* EXIT count: the host's handler counts and returns (the program goes on) */
static void host_count_handler(int sig)
{
    host_signal = sig;
    host_runs = host_runs + 1;
}

static void host_handler(int sig)
{
    host_signal = sig;
    write_truth(truth_path);
    _exit(128 + sig);
}

#define SYM(h, name) dlsym(h, name)

/* ---- seq: steps (late attach, detach, a second client) ---------------- */
static char seq_dir[4096];

static void seq_path(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", seq_dir, name);
}

static uint64_t seq_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void seq_write(const char *name, unsigned long long v)
{
    char path[4200], tmp[4300];
    seq_path(path, sizeof path, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    fprintf(f, "%llu\n", v);
    fclose(f);
    rename(tmp, path);
}

static void CUPTIAPI seq_other_cb(void *ud, CUpti_CallbackDomain d, CUpti_CallbackId id,
                                  const void *data)
{
    (void)ud;
    (void)d;
    (void)id;
    (void)data;
}

/* Tell the simulator's NVTX truth of a push (NAME in DOM, NULL: the
 * default domain) just made, or a pop about to be made: what the
 * application did, whether or not CUPTI's handlers see the call.  A push
 * is told after it is made (the process's first NVTX call may itself put
 * CUPTI's handlers in, and then that push reached them), a pop before (the
 * state it finds). */
static void nvtx_told(int push, const char *dom, const char *name)
{
    if (nvtx_app)
        nvtx_app(push, dom, name);
}

/* NVTX handles made once per key: make(a, b) under the cache's lock. */
struct nvtx_cache {
    pthread_mutex_t lock;
    unsigned n;
    struct { char key[128]; void *h; } e[16];
};

static void *nvtx_cached(struct nvtx_cache *c, const char *key,
                         void *(*make)(const char *a, const char *b), const char *a, const char *b)
{
    void *h = NULL;
    pthread_mutex_lock(&c->lock);
    for (unsigned i = 0; i < c->n && !h; i++)
        if (!strcmp(c->e[i].key, key))
            h = c->e[i].h;
    if (!h && c->n < sizeof c->e / sizeof c->e[0]) {
        snprintf(c->e[c->n].key, sizeof c->e[c->n].key, "%s", key);
        h = c->e[c->n++].h = make(a, b);
    }
    pthread_mutex_unlock(&c->lock);
    return h;
}

static void *nvtx_make_domain(const char *name, const char *unused)
{
    (void)unused;
    return nvtxDomainCreateA(name);
}

static nvtxDomainHandle_t nvtx_domain(const char *name)
{
    static struct nvtx_cache c = {.lock = PTHREAD_MUTEX_INITIALIZER};
    return nvtx_cached(&c, name, nvtx_make_domain, name, NULL);
}

/* Event attributes with an ASCII message, or a registered one when reg. */
static nvtxEventAttributes_t nvtx_attr(const char *ascii, nvtxStringHandle_t reg)
{
    nvtxEventAttributes_t at;
    memset(&at, 0, sizeof at);
    at.version = NVTX_VERSION;
    at.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    if (reg) {
        at.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
        at.message.registered = reg;
    } else {
        at.messageType = NVTX_MESSAGE_TYPE_ASCII;
        at.message.ascii = ascii;
    }
    return at;
}

static void nvtx_dpush_h(nvtxDomainHandle_t h, const char *dom, const char *name)
{
    nvtxEventAttributes_t at = nvtx_attr(name, NULL);
    (void)nvtxDomainRangePushEx(h, &at);
    nvtx_told(1, dom, name);
}

static void nvtx_dpush(const char *dom, const char *name)
{
    nvtx_dpush_h(nvtx_domain(dom), dom, name);
}

static void nvtx_dpop(nvtxDomainHandle_t h, const char *dom)
{
    nvtx_told(0, dom, NULL);
    (void)nvtxDomainRangePop(h);
}

static void nvtx_push(const char *name)
{
    nvtxRangePushA(name);
    nvtx_told(1, NULL, name);
}

static void nvtx_pop(void)
{
    nvtx_told(0, NULL, NULL);
    nvtxRangePop();
}

static void *nvtx_make_registered(const char *dom, const char *name)
{
    return nvtxDomainRegisterStringA(strcmp(dom, "-") ? nvtx_domain(dom) : NULL, name);
}

/* A string registered in a domain ("-": the default one), registered once. */
static nvtxStringHandle_t nvtx_registered(const char *dom, const char *name)
{
    static struct nvtx_cache c = {.lock = PTHREAD_MUTEX_INITIALIZER};
    char key[128];
    snprintf(key, sizeof key, "%s:%s", dom, name);
    return nvtx_cached(&c, key, nvtx_make_registered, dom, name);
}

static void nvtx_rpush(const char *dom, const char *name)
{
    nvtxEventAttributes_t at = nvtx_attr(NULL, nvtx_registered(dom, name));
    if (strcmp(dom, "-"))
        (void)nvtxDomainRangePushEx(nvtx_domain(dom), &at);
    else
        (void)nvtxRangePushEx(&at);
    nvtx_told(1, strcmp(dom, "-") ? dom : NULL, name);
}

/* The wide-character side: domain DOM made by nvtxDomainCreateW and NAME
 * registered by nvtxDomainRegisterStringW (each once); push with it. */
static nvtxDomainHandle_t nvtx_wdomain(const char *name, const char *str, nvtxStringHandle_t *reg)
{
    static struct { char name[64], str[64]; nvtxDomainHandle_t h; nvtxStringHandle_t s; } w[4];
    static unsigned n;
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    wchar_t wn[64], ws[64];
    unsigned i;
    pthread_mutex_lock(&lock);
    for (i = 0; i < n; i++)
        if (!strcmp(w[i].name, name) && (!str || !strcmp(w[i].str, str)))
            break;
    if (i == n && n < 4) {
        snprintf(w[n].name, sizeof w[n].name, "%s", name);
        snprintf(w[n].str, sizeof w[n].str, "%s", str ? str : "");
        swprintf(wn, 64, L"%s", name);
        swprintf(ws, 64, L"%s", str ? str : "");
        w[n].h = nvtxDomainCreateW(wn);
        w[n].s = nvtxDomainRegisterStringW(w[n].h, ws);
        n++;
    }
    nvtxDomainHandle_t h = i < n ? w[i].h : NULL;
    if (reg)
        *reg = i < n ? w[i].s : NULL;
    pthread_mutex_unlock(&lock);
    return h;
}

/* The second NVTX instance (nvtx_other.so, $CUPTOPSIM_NVTX_OTHER) and the
 * domains it made, by name. */
static struct {
    void (*init)(void);
    void *(*create)(const char *);
    void (*dpush)(void *, const char *);
    void (*dpop)(void *);
} nvtx_o;

static bool nvtx_other_load(void)
{
    static void *h;
    const char *p = getenv("CUPTOPSIM_NVTX_OTHER");
    if (!h && p && (h = dlopen(p, RTLD_NOW | RTLD_LOCAL)) != NULL) {
        *(void **)&nvtx_o.init = dlsym(h, "nvtx_other_init");
        *(void **)&nvtx_o.create = dlsym(h, "nvtx_other_create");
        *(void **)&nvtx_o.dpush = dlsym(h, "nvtx_other_dpush");
        *(void **)&nvtx_o.dpop = dlsym(h, "nvtx_other_dpop");
    }
    return h && nvtx_o.init && nvtx_o.create && nvtx_o.dpush && nvtx_o.dpop;
}

static void *nvtx_make_other(const char *name, const char *unused)
{
    (void)unused;
    return nvtx_o.create(name);
}

static void *nvtx_other_domain(const char *name)
{
    static struct nvtx_cache c = {.lock = PTHREAD_MUTEX_INITIALIZER};
    return nvtx_cached(&c, name, nvtx_make_other, name, NULL);
}

static void nvtx_sleep_us(long us)
{
    struct timespec ts = {0, us * 1000L};
    nanosleep(&ts, NULL);
}

struct nvtx_job { unsigned idx, reps; };

static void *nvtx_thread(void *arg)
{
    const struct nvtx_job *j = arg;
    /* thread i starts 10 ms after thread i-1: when the first thread's call
     * is the process's first NVTX call, the others call while its hand-
     * over to CUPTI may still run (the simulator's nvtx_init_slow=50
     * widens that window): their first ranges reach the agent's wrapper
     * alone, the inner ones closed in that window, the step 100 ms later */
    nvtx_sleep_us(10000L * (long)j->idx);
    for (unsigned r = 0; r < j->reps; r++) {
        nvtx_push("step");
        nvtx_push("forward");
        nvtx_sleep_us(200 + 50 * (long)j->idx);
        nvtx_pop();
        nvtx_dpush("io", "load");
        nvtx_sleep_us(100);
        nvtx_dpop(nvtx_domain("io"), "io");
        nvtx_push("backward");
        nvtx_sleep_us(300 + 100 * (long)(r % 3));
        nvtx_pop();
        if (r == 0 && j->idx > 0)   /* past that window: a step pushed in it */
            nvtx_sleep_us(100000);  /* is popped with CUPTI's handlers in   */
        nvtx_pop();
    }
    return NULL;
}

static volatile sig_atomic_t seq_usr1;

static void seq_on_usr1(int sig)
{
    (void)sig;
    seq_usr1++;
}

static void *seq_exiter(void *arg)
{
    (void)arg;
    exit(0);
}

static void *seq_sleeper(void *arg)
{
    (void)arg;
    for (;;) {
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void nvtx_threads(unsigned t, unsigned reps)
{
    pthread_t th[16];
    struct nvtx_job jobs[16];
    if (t > 16)
        t = 16;
    for (unsigned i = 0; i < t; i++) {
        jobs[i] = (struct nvtx_job){i, reps};
        if (pthread_create(&th[i], NULL, nvtx_thread, &jobs[i]))
            t = i;
    }
    for (unsigned i = 0; i < t; i++)
        pthread_join(th[i], NULL);
}

/* One NVTX step; false when st is not one. */
static bool nvtx_step(const char *st)
{
    static nvtxRangeId_t rid;
    if (!strncmp(st, "push:", 5)) {
        nvtx_push(st + 5);
    } else if (!strncmp(st, "xpush:", 6)) {
        char name[1024];
        size_t n = 0;
        for (const char *p = st + 6; p[0] && p[1] && n + 1 < sizeof name; p += 2) {
            unsigned v;
            if (sscanf(p, "%2x", &v) != 1)
                break;
            name[n++] = (char)v;
        }
        name[n] = '\0';
        nvtx_push(name);
    } else if (!strcmp(st, "pop")) {
        nvtx_pop();
    } else if (!strncmp(st, "dpush:", 6)) {
        char dom[64];
        const char *c = strchr(st + 6, ':');
        if (!c)
            return false;
        snprintf(dom, sizeof dom, "%.*s", (int)(c - (st + 6)), st + 6);
        nvtx_dpush(dom, c + 1);
    } else if (!strncmp(st, "dcreate:", 8)) {
        (void)nvtx_domain(st + 8);
    } else if (!strncmp(st, "reg:", 4) || !strncmp(st, "rpush:", 6)) {
        char dom[64];
        const char *a = st + (st[0] == 'r' && st[1] == 'e' ? 4 : 6), *c = strchr(a, ':');
        if (!c)
            return false;
        snprintf(dom, sizeof dom, "%.*s", (int)(c - a), a);
        if (st[1] == 'e')
            (void)nvtx_registered(dom, c + 1);
        else
            nvtx_rpush(dom, c + 1);
    } else if (!strncmp(st, "wreg:", 5) || !strncmp(st, "wrpush:", 7)) {
        char dom[64];
        bool push = !strncmp(st, "wrpush:", 7);
        const char *a = st + (push ? 7 : 5), *c = strchr(a, ':');
        if (!c)
            return false;
        snprintf(dom, sizeof dom, "%.*s", (int)(c - a), a);
        nvtxStringHandle_t reg = NULL;
        nvtxDomainHandle_t h = nvtx_wdomain(dom, c + 1, &reg);
        if (push) {
            nvtxEventAttributes_t at = nvtx_attr(NULL, reg);
            (void)nvtxDomainRangePushEx(h, &at);
            nvtx_told(1, dom, c + 1);
        }
    } else if (!strcmp(st, "oinit") || !strncmp(st, "ocreate:", 8) ||
               !strncmp(st, "odpush:", 7) || !strncmp(st, "odpop:", 6) ||
               !strncmp(st, "xodpush:", 8) || !strncmp(st, "xodpop:", 7)) {
        /* the second instance: its first call; a domain it makes; a push
         * or pop through it in a domain simdrive made (odpush, odpop), or
         * through simdrive in a domain it made (xodpush, xodpop) */
        char dom[64];
        const char *a = strchr(st, ':'), *c = a ? strchr(a + 1, ':') : NULL;
        if (!nvtx_other_load())
            return false;
        if (a)
            snprintf(dom, sizeof dom, "%.*s", (int)(c ? c - a - 1 : (long)strlen(a + 1)), a + 1);
        if (!strcmp(st, "oinit"))
            nvtx_o.init();
        else if (st[0] == 'o' && st[1] == 'c')
            (void)nvtx_other_domain(dom);
        else if (!strncmp(st, "odpush:", 7) && c) {
            nvtx_o.dpush(nvtx_domain(dom), c + 1);
            nvtx_told(1, dom, c + 1);
        } else if (!strncmp(st, "odpop:", 6)) {
            nvtx_told(0, dom, NULL);
            nvtx_o.dpop(nvtx_domain(dom));
        } else if (!strncmp(st, "xodpush:", 8) && c)
            nvtx_dpush_h((nvtxDomainHandle_t)nvtx_other_domain(dom), dom, c + 1);
        else if (!strncmp(st, "xodpop:", 7))
            nvtx_dpop((nvtxDomainHandle_t)nvtx_other_domain(dom), dom);
        else
            return false;
    } else if (!strncmp(st, "wdpop:", 6)) {
        nvtx_dpop(nvtx_wdomain(st + 6, NULL, NULL), st + 6);
    } else if (!strncmp(st, "dpop:", 5)) {
        nvtx_dpop(nvtx_domain(st + 5), st + 5);
    } else if (!strncmp(st, "rstart:", 7)) {
        rid = nvtxRangeStartA(st + 7);
    } else if (!strcmp(st, "rend")) {
        nvtxRangeEnd(rid);
    } else if (!strncmp(st, "cpush:", 6)) {
        char name[128];
        unsigned color = 0;
        unsigned long long pl = 0;
        if (sscanf(st + 6, "%127[^:]:%x:%llu", name, &color, &pl) != 3)
            return false;
        nvtxEventAttributes_t at = nvtx_attr(name, NULL);
        at.colorType = NVTX_COLOR_ARGB;
        at.color = color;
        at.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
        at.payload.ullValue = pl;
        nvtxRangePushEx(&at);
        nvtx_told(1, NULL, name);
    } else if (!strncmp(st, "nmark:", 6)) {
        nvtxMarkA(st + 6);
    } else if (!strncmp(st, "nvtx:", 5)) {
        unsigned t = 0, r = 0;
        if (sscanf(st + 5, "%u:%u", &t, &r) != 2)
            return false;
        nvtx_threads(t, r);
    } else {
        return false;
    }
    return true;
}

/* stdio:NAME - what the application's own I/O on fds 0-2 gives. */
static void seq_stdio(const char *name)
{
    char path[4200], line[200], buf[4096];
    static const char msg[] = "simdrive: the application's own line\n";
    long w1, w2, r0 = 0;
    int e1, e2, e0 = 0;
    ssize_t n;

    errno = 0;
    w1 = (long)write(1, msg, sizeof msg - 1);
    e1 = errno;
    errno = 0;
    w2 = (long)write(2, msg, sizeof msg - 1);
    e2 = errno;
    do {
        errno = 0;
        n = read(0, buf, sizeof buf);
        if (n > 0)
            r0 += n;
    } while (n > 0 && r0 < 65536);
    if (n < 0) {
        e0 = errno;
        if (r0 == 0)
            r0 = -1;
    }
    seq_path(path, sizeof path, name);
    snprintf(line, sizeof line, "w1=%ld e1=%d w2=%ld e2=%d r0=%ld e0=%d\n", w1, e1, w2, e2, r0,
             e0);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(line, f);
        fclose(f);
    }
}

/* fds:NAME - every open descriptor, its close-on-exec flag and target. */
static void seq_fds(const char *name)
{
    char path[4200];
    seq_path(path, sizeof path, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    int self = fileno(f);
    for (int fd = 0; fd < 4096; fd++) {
        char link[64], target[4200];
        int fl = fcntl(fd, F_GETFD);
        if (fl < 0 || fd == self)
            continue;
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        target[n < 0 ? 0 : n] = '\0';
        fprintf(f, "%d %d %s\n", fd, (fl & FD_CLOEXEC) ? 1 : 0, target);
    }
    fclose(f);
}

/* exec:NAME - what a program the application execs inherits. */
static void seq_exec(const char *name)
{
    char path[4200];
    seq_path(path, sizeof path, name);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c",
              "for f in /proc/$$/fd/*; do n=${f##*/}; case $n in 0|1|2) continue;; esac; "
              "t=$(readlink \"$f\") && echo \"$n $t\"; done > \"$0.tmp\" && mv \"$0.tmp\" \"$0\"",
              path, (char *)NULL);
        _exit(127);
    }
    if (pid > 0)
        waitpid(pid, NULL, 0);
}

/* InitializeInjection, kept for the "init" step (SIMDRIVE_LATE_INIT). */
static int (*late_init)(void);

/* n operations of kinds [k0, k1) on each of the nctx devices. */
static void emit_all(cuptopsim_emit_fn emit, int nctx, unsigned k0, unsigned k1, uint64_t n)
{
    for (int d = 0; d < nctx; d++)
        for (unsigned k = k0; k < k1; k++)
            if (emit((unsigned)d, k, n) < 0)
                fprintf(stderr, "simdrive: emit %d %u failed\n", d, k);
}

static int seq_run(void *sim, const char *steps, cuptopsim_emit_fn emit,
                   cuptopsim_contexts_create_fn ctx_create,
                   cuptopsim_contexts_destroy_fn ctx_destroy, cuptopsim_app_run_fn app_run)
{
    __typeof__(cuptiSubscribe) *sub = (__typeof__(cuptiSubscribe) *)SYM(sim, "cuptiSubscribe");
    __typeof__(cuptiUnsubscribe) *unsub =
        (__typeof__(cuptiUnsubscribe) *)SYM(sim, "cuptiUnsubscribe");
    cuptopsim_profiler_fn prof = (cuptopsim_profiler_fn)SYM(sim, "cuptopsim_profiler");
    CUpti_SubscriberHandle other = NULL;
    char buf[4096], *save = NULL;
    unsigned nsub = 0;
    int nctx = 0;

    snprintf(buf, sizeof buf, "%s", steps);
    for (char *st = strtok_r(buf, ",", &save); st; st = strtok_r(NULL, ",", &save)) {
        if (!strcmp(st, "init")) {
            /* SIMDRIVE_LATE_INIT: CUDA (the agent) initialised only now */
            if (late_init && late_init() != 1)
                fprintf(stderr, "simdrive: InitializeInjection failed\n");
            late_init = NULL;
        } else if (!strcmp(st, "ctx")) {
            nctx = ctx_create();
        } else if (!strcmp(st, "destroy")) {
            ctx_destroy();
            nctx = 0;
        } else if (!strncmp(st, "emit:", 5)) {
            emit_all(emit, nctx, 0, PLAIN_KINDS, strtoull(st + 5, NULL, 10));
        } else if (!strncmp(st, "graph:", 6)) {
            emit_all(emit, nctx, GRAPH_KIND, GRAPH_KIND + 1, strtoull(st + 6, NULL, 10));
        } else if (!strncmp(st, "run:", 4)) {
            app_run(atof(st + 4));
        } else if (!strncmp(st, "mark:", 5)) {
            seq_write(st + 5, (unsigned long long)seq_now());
        } else if (!strncmp(st, "wait:", 5)) {
            char path[4200];
            seq_path(path, sizeof path, st + 5);
            for (int i = 0; i < 3000 && access(path, F_OK) != 0; i++) {
                struct timespec ts = {0, 20000000};
                nanosleep(&ts, NULL);
            }
            if (access(path, F_OK) != 0)
                fprintf(stderr, "simdrive: %s never came\n", path);
        } else if (!strcmp(st, "sub") && sub) {
            char name[32];
            CUptiResult r = sub(&other, seq_other_cb, NULL);
            snprintf(name, sizeof name, "sub.%u", ++nsub);
            seq_write(name, (unsigned long long)r);
            if (r != CUPTI_SUCCESS)
                other = NULL;
        } else if (!strncmp(st, "sleep:", 6)) {
            long ms = atol(st + 6);
            struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        } else if ((!strcmp(st, "pstart") || !strcmp(st, "pstop")) && prof) {
            prof(!strcmp(st, "pstart"));
        } else if (!strncmp(st, "read:", 5)) {
            char path[4200], got[64];
            unsigned char c = 0;
            seq_path(path, sizeof path, st + 5);
            int fd = open(path, O_RDONLY);
            errno = 0;
            ssize_t n = fd >= 0 ? read(fd, &c, 1) : -1;
            snprintf(got, sizeof got, "%s.got", st + 5);
            seq_write(got, (unsigned long long)((n < 0 ? 0 : (uint64_t)n) * 1000000 +
                                                 (uint64_t)c * 1000 + (uint64_t)errno));
            if (fd >= 0)
                close(fd);
        } else if (!strcmp(st, "exitthread")) {
            pthread_t t;
            if (pthread_create(&t, NULL, seq_exiter, NULL) == 0)
                pthread_detach(t);
        } else if (!strcmp(st, "usr1")) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = seq_on_usr1;
            sa.sa_flags = SA_RESTART;
            sigemptyset(&sa.sa_mask);
            sigaction(SIGUSR1, &sa, NULL);
        } else if (!strcmp(st, "usr1count")) {
            seq_write("usr1", (unsigned long long)seq_usr1);
        } else if (!strncmp(st, "raise:", 6)) {
            raise(!strcmp(st + 6, "INT") ? SIGINT : !strcmp(st + 6, "HUP") ? SIGHUP : SIGTERM);
        } else if (!strncmp(st, "stdio:", 6)) {
            seq_stdio(st + 6);
        } else if (!strncmp(st, "fds:", 4)) {
            seq_fds(st + 4);
        } else if (!strncmp(st, "exec:", 5)) {
            seq_exec(st + 5);
        } else if (!strncmp(st, "threads:", 8)) {
            for (int i = atoi(st + 8); i > 0; i--) {
                pthread_t t;
                if (pthread_create(&t, NULL, seq_sleeper, NULL) == 0)
                    pthread_detach(t);
            }
        } else if (!strcmp(st, "unsub") && unsub) {
            if (other)
                (void)unsub(other);
            other = NULL;
        } else if (nvtx_step(st)) {
            /* done */
        } else {
            fprintf(stderr, "simdrive: unknown step \"%s\"\n", st);
            return -1;
        }
    }
    return 0;
}

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
    call_name = (cuptopsim_call_name_fn)SYM(sim, "cuptopsim_call_name");
    nvtx_app = (cuptopsim_nvtx_app_fn)SYM(sim, "cuptopsim_nvtx_app");
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
        !strcmp(how, "abort") || !strcmp(how, "bus")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = host_handler;
        sigemptyset(&sa.sa_mask);
        sigaction(!strcmp(how, "term") ? SIGTERM : !strcmp(how, "int") ? SIGINT
                  : !strcmp(how, "hup") ? SIGHUP : !strcmp(how, "bus") ? SIGBUS : SIGABRT,
                  &sa, NULL);
    }
    if (!strcmp(how, "count")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = host_count_handler;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
    }
    if (!strcmp(argv[2], "none"))
        (void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    else {
        void *agent = dlopen(argv[2], RTLD_NOW);
        if (!agent) {
            fprintf(stderr, "simdrive: %s\n", dlerror());
            return 2;
        }
        int (*init)(void) = (int (*)(void))SYM(agent, "InitializeInjection");
        if (!init)
            return 2;
        const char *late = getenv("SIMDRIVE_LATE_INIT");
        if (late && !strcmp(late, "1"))
            late_init = init;   /* NVTX before CUDA: the seq step "init" */
        else
            init();
    }
    if (!strncmp(argv[4], "seq:", 4)) {
        char *slash;
        snprintf(seq_dir, sizeof seq_dir, "%s", truth_path);
        slash = strrchr(seq_dir, '/');
        if (slash)
            *slash = '\0';
        else
            snprintf(seq_dir, sizeof seq_dir, ".");
        if (seq_run(sim, argv[4] + 4, emit, ctx_create, ctx_destroy, app_run))
            return 2;
    }
    int nctx = strncmp(argv[4], "seq:", 4) ? ctx_create() : 0;
    (void)nctx;
    if (!strncmp(argv[4], "emit:", 5)) {
        emit_all(emit, nctx, 0, PLAIN_KINDS, strtoull(argv[4] + 5, NULL, 10));
    } else if (!strncmp(argv[4], "graph:", 6)) {
        emit_all(emit, nctx, GRAPH_KIND, GRAPH_KIND + 1, strtoull(argv[4] + 6, NULL, 10));
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
    if (!strcmp(how, "bus") || !strcmp(how, "bus-dfl")) {
        /* a fault that is the application's own, not the agent's */
        char path[4200];
        seq_path(path, sizeof path, "bus.map");
        if (!seq_dir[0])
            snprintf(path, sizeof path, "%s.bus", truth_path);
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        volatile char *m = fd >= 0 && ftruncate(fd, 4096) == 0
                               ? mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0)
                               : MAP_FAILED;
        if (m == MAP_FAILED || ftruncate(fd, 0) != 0)
            return 3;
        if (!strcmp(how, "bus-dfl"))   /* the truth first: the default action leaves none */
            write_truth(truth_path);
        return m[0] == 0 ? 4 : 5;   /* never reached: the read faults */
    }
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
