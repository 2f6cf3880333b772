/*
 * agent_nvtx.c - NVTX routed through the agent (doc/agent.md, "NVTX").
 *
 * The NVTX loader (nvtxDetail/nvtxInit.h) of every library that makes NVTX
 * calls reads NVTX_INJECTION64_PATH once, at that library's first NVTX
 * call, dlopens it and calls its InitializeInjectionNvtx2(getExportTable).
 * `cuptop run` points the variable at this library.  We keep the export
 * table function and return success: the loader then sets that library's
 * NVTX functions to no-ops, so a dormant agent costs an NVTX call one
 * indirect call and still makes no CUPTI call.  When CUPTI is attached
 * (now or later), each kept table is handed to CUPTI's
 * cuptiNvtxInitialize2 (what libcupti's own InitializeInjectionNvtx2
 * does), which writes CUPTI's handlers into that library's function
 * table: from then on NVTX calls become MARKER records.  CUPTI's handlers
 * stay installed after a detach (CUPTI offers no way to take them out);
 * with the marker kind off they record nothing.
 *
 * Calls come from application threads (first NVTX call of a library) and
 * from the attach (control or start-up thread): one mutex, never held
 * across anything that can block on the application.
 */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"

#define AGENT_NVTX_TABLES 64   /* libraries with their own NVTX instance */

typedef const void *(*agent_nvtx_get_fn)(uint32_t id);
typedef CUptiResult (*agent_nvtx_init_fn)(agent_nvtx_get_fn get);

static struct agent_nvtx {
    pthread_mutex_t lock;
    agent_nvtx_get_fn tables[AGENT_NVTX_TABLES];
    bool handed[AGENT_NVTX_TABLES];
    unsigned n;
    _Atomic unsigned long inits;   /* InitializeInjectionNvtx2 calls      */
    unsigned long refused;         /* tables CUPTI refused or none kept   */
    int last_rc;
} agent_nvtx_g = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Hand the tables not yet handed to CUPTI (lock held). */
static void nvtx_hand(agent *a)
{
    struct agent_nvtx *v = &agent_nvtx_g;
    if (!a->loaded_cupti || !a->cupti.handle)
        return;
    agent_nvtx_init_fn init = (agent_nvtx_init_fn)dlsym(a->cupti.handle, "cuptiNvtxInitialize2");
    for (unsigned i = 0; i < v->n; i++) {
        if (v->handed[i])
            continue;
        v->handed[i] = true;
        CUptiResult r = init ? init(v->tables[i]) : CUPTI_ERROR_NOT_SUPPORTED;
        if (r != CUPTI_SUCCESS) {
            v->refused++;
            v->last_rc = (int)r;
        }
    }
}

void agent_nvtx_attached(agent *a)
{
    pthread_mutex_lock(&agent_nvtx_g.lock);
    nvtx_hand(a);
    pthread_mutex_unlock(&agent_nvtx_g.lock);
}

unsigned long agent_nvtx_inits(void)
{
    return atomic_load_explicit(&agent_nvtx_g.inits, memory_order_relaxed);
}

/* Best effort for CUDA_INJECTION64_PATH set by hand: route the NVTX of
 * libraries whose first NVTX call is still to come (those that made one
 * already have read the variable). */
void agent_nvtx_setenv(void)
{
    Dl_info info;
    if (getenv("NVTX_INJECTION64_PATH"))
        return;
    if (dladdr((void *)agent_nvtx_setenv, &info) && info.dli_fname && info.dli_fname[0] == '/')
        (void)setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
}

/** The NVTX loader's entry point (nvtxInit.h): keep the library's export
 *  table; hand it to CUPTI now when attached.  Returns 1 (success). */
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(agent_nvtx_get_fn get);

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(agent_nvtx_get_fn get)
{
    struct agent_nvtx *v = &agent_nvtx_g;
    agent *a = &agent_g;
    atomic_fetch_add_explicit(&v->inits, 1, memory_order_relaxed);
    if (!get)
        return 0;
    pthread_mutex_lock(&v->lock);
    bool known = false;
    for (unsigned i = 0; i < v->n; i++)
        known |= v->tables[i] == get;
    if (!known && v->n < AGENT_NVTX_TABLES) {
        v->tables[v->n] = get;
        v->handed[v->n++] = false;
    } else if (!known) {
        v->refused++;
    }
    if (atomic_load(&a->attached))
        nvtx_hand(a);
    pthread_mutex_unlock(&v->lock);
    return 1;
}
