/*
 * simclient.c - a minimal CUPTI client injected into cuptop-simapp by the
 * simapp tests (CUDA_INJECTION64_PATH), so the simapp's mechanics (loading,
 * contexts, exit paths, fork) are tested without the agent.  It counts the
 * records it receives and writes "records N" / "buffers N" to
 * $SIMCLIENT_OUT (".child" appended in a forked child) after its final
 * forced flush: at context destruction, at exit, or in its SIGTERM handler
 * (which then chains to the previous handler).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cupti.h>

static struct simclient {
    __typeof__(cuptiActivityFlushAll) *flush;
    __typeof__(cuptiActivityGetNextRecord) *next;
    _Atomic unsigned long records, buffers;
    pid_t pid;
    struct sigaction old_term;
} sc;

static void CUPTIAPI sc_requested(uint8_t **buffer, size_t *size, size_t *max)
{
    *size = 256 * 1024;
    *buffer = aligned_alloc(8, *size);
    *max = 0;
}

static void CUPTIAPI sc_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                  size_t valid)
{
    CUpti_Activity *r = NULL;
    unsigned long n = 0;
    (void)ctx;
    (void)stream;
    (void)size;
    while (sc.next(buf, valid, &r) == CUPTI_SUCCESS)
        n++;
    atomic_fetch_add(&sc.records, n);
    atomic_fetch_add(&sc.buffers, 1);
    free(buf);
}

static void sc_write(void)
{
    const char *out = getenv("SIMCLIENT_OUT");
    char path[4096], msg[96];
    if (!out || !*out)
        return;
    snprintf(path, sizeof path, "%s%s", out, getpid() != sc.pid ? ".child" : "");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    int n = snprintf(msg, sizeof msg, "records %lu\nbuffers %lu\n",
                     (unsigned long)atomic_load(&sc.records),
                     (unsigned long)atomic_load(&sc.buffers));
    if (write(fd, msg, (size_t)n) < 0) {
        /* test helper: nothing to do */
    }
    close(fd);
}

static void sc_final(void)
{
    sc.flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    sc_write();
}

static void sc_on_term(int sig)
{
    sc_final();
    sigaction(sig, &sc.old_term, NULL);
    raise(sig);
}

static void CUPTIAPI sc_resource(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                                 const void *data)
{
    (void)ud;
    (void)data;
    if (dom == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)
        sc_final();
}

__attribute__((visibility("default"))) int InitializeInjection(void);

__attribute__((visibility("default"))) int InitializeInjection(void)
{
    static const CUpti_ActivityKind kinds[] = {
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
        CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_OVERHEAD,
        CUPTI_ACTIVITY_KIND_MARKER,
    };
    const char *lib = getenv("CUPTOP_CUPTI_LIBRARY");
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;
    CUpti_SubscriberHandle sub;
    struct sigaction sa;
    if (!h)
        return 0;
    __typeof__(cuptiActivityRegisterCallbacks) *reg;
    __typeof__(cuptiActivityEnable) *enable;
    __typeof__(cuptiSubscribe) *subscribe;
    __typeof__(cuptiEnableDomain) *domain;
    *(void **)&reg = dlsym(h, "cuptiActivityRegisterCallbacks");
    *(void **)&enable = dlsym(h, "cuptiActivityEnable");
    *(void **)&subscribe = dlsym(h, "cuptiSubscribe");
    *(void **)&domain = dlsym(h, "cuptiEnableDomain");
    *(void **)&sc.flush = dlsym(h, "cuptiActivityFlushAll");
    *(void **)&sc.next = dlsym(h, "cuptiActivityGetNextRecord");
    if (!reg || !enable || !subscribe || !domain || !sc.flush || !sc.next)
        return 0;
    sc.pid = getpid();
    reg(sc_requested, sc_completed);
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        enable(kinds[i]);
    if (subscribe(&sub, sc_resource, NULL) == CUPTI_SUCCESS)
        domain(1, sub, CUPTI_CB_DOMAIN_RESOURCE);
    atexit(sc_final);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = sc_on_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, &sc.old_term);
    return 1;
}
