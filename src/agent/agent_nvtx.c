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
 * Capture range nvtx:NAME (CUPTOP_CAPTURE_RANGE): the agent must see the
 * range while dormant, so for this mode it installs its own thin wrappers
 * in the push/pop slots of each library's table (RangePushA, RangePushEx,
 * RangePop, DomainRangePushEx, DomainRangePop): a wrapper compares the
 * name (O(length), no allocation), enters or leaves the capture range
 * (agent_scope_nvtx), and calls what sits in its shadow slot: nothing while
 * dormant, CUPTI's handler once attached.  CUPTI is handed a shadow export
 * table whose function table lists the shadow slots for the wrapped
 * entries and the library's own slots for every other one, so CUPTI
 * installs itself around the wrappers.  The range's own START is recorded
 * (the wrapper attaches before it forwards the push) and its END too (the
 * pop is forwarded before the range is left).
 *
 * Calls come from application threads (first NVTX call of a library) and
 * from the attach (control or start-up thread): one mutex, never held
 * across anything that can block on the application.
 */
#include "config.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <nvtx3/nvToolsExt.h>

#include "agent_int.h"

#define AGENT_NVTX_TABLES 64   /* libraries with their own NVTX instance */

typedef NvtxGetExportTableFunc_t agent_nvtx_get_fn;
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

/* ---- capture range nvtx:NAME: wrappers and shadow slots --------------- */
typedef int (*nv_push_a_fn)(const char *);
typedef int (*nv_push_ex_fn)(const nvtxEventAttributes_t *);
typedef int (*nv_pop_fn)(void);
typedef int (*nv_dpush_fn)(nvtxDomainHandle_t, const nvtxEventAttributes_t *);
typedef int (*nv_dpop_fn)(nvtxDomainHandle_t);

/* What CUPTI installs for the wrapped entries (written by CUPTI during
 * cuptiNvtxInitialize2 under our lock, read by the wrappers: a plain
 * pointer store CUPTI makes; relaxed is enough, a wrapper that still sees
 * NULL behaves as the no-op it replaced). */
static struct {
    _Atomic(NvtxFunctionPointer) push_a, push_ex, pop, dpush, dpop;
} nv_shadow;
static bool nv_wrap;                 /* capture nvtx:NAME in this process */
static char nv_name[256];
static size_t nv_name_len;

/* Per thread and domain (up to 4 domains), which open pushes matched. */
#define NV_DOMS 4
static _Thread_local struct {
    const void *dom[NV_DOMS];
    uint32_t depth[NV_DOMS];
    uint64_t match[NV_DOMS];   /* bit d: the push at depth d matched      */
} nv_tls;

static int nv_slot(const void *dom)
{
    for (int i = 0; i < NV_DOMS; i++)
        if (nv_tls.dom[i] == dom && (dom || i == 0))
            return i;
    if (!dom)
        return 0;
    for (int i = 1; i < NV_DOMS; i++)
        if (!nv_tls.dom[i] && !nv_tls.depth[i]) {
            nv_tls.dom[i] = dom;
            return i;
        }
    return -1;
}

static bool nv_match(const char *m)
{
    return m && strncmp(m, nv_name, nv_name_len + 1) == 0;
}

static void nv_pushed(const void *dom, bool match)
{
    int s = nv_slot(dom);
    if (s < 0)
        return;
    uint32_t d = nv_tls.depth[s]++;
    if (d < 64) {
        if (match)
            nv_tls.match[s] |= 1ull << d;
        else
            nv_tls.match[s] &= ~(1ull << d);
    }
}

/* true when the pop closes a matching range */
static bool nv_popped(const void *dom)
{
    int s = nv_slot(dom);
    if (s < 0 || nv_tls.depth[s] == 0)
        return false;
    uint32_t d = --nv_tls.depth[s];
    return d < 64 && (nv_tls.match[s] >> d & 1);
}

static const char *nv_attr_name(const nvtxEventAttributes_t *at)
{
    return at && at->messageType == NVTX_MESSAGE_TYPE_ASCII ? at->message.ascii : NULL;
}

#define NV_NOTRACK (-2)   /* the no-op's answer: NVTX_NO_PUSH_POP_TRACKING */
#define NV_NEXT(f) atomic_load_explicit(&nv_shadow.f, memory_order_relaxed)

static int NVTX_API nv_push_a(const char *m)
{
    bool hit = nv_match(m);
    if (hit)
        agent_scope_nvtx(&agent_g, true);
    nv_pushed(NULL, hit);
    NvtxFunctionPointer f = NV_NEXT(push_a);
    return f ? ((nv_push_a_fn)f)(m) : NV_NOTRACK;
}

static int NVTX_API nv_push_ex(const nvtxEventAttributes_t *at)
{
    bool hit = nv_match(nv_attr_name(at));
    if (hit)
        agent_scope_nvtx(&agent_g, true);
    nv_pushed(NULL, hit);
    NvtxFunctionPointer f = NV_NEXT(push_ex);
    return f ? ((nv_push_ex_fn)f)(at) : NV_NOTRACK;
}

static int NVTX_API nv_pop(void)
{
    NvtxFunctionPointer f = NV_NEXT(pop);
    int rc = f ? ((nv_pop_fn)f)() : NV_NOTRACK;
    if (nv_popped(NULL))
        agent_scope_nvtx(&agent_g, false);
    return rc;
}

static int NVTX_API nv_dpush(nvtxDomainHandle_t dom, const nvtxEventAttributes_t *at)
{
    bool hit = nv_match(nv_attr_name(at));
    if (hit)
        agent_scope_nvtx(&agent_g, true);
    nv_pushed(dom, hit);
    NvtxFunctionPointer f = NV_NEXT(dpush);
    return f ? ((nv_dpush_fn)f)(dom, at) : NV_NOTRACK;
}

static int NVTX_API nv_dpop(nvtxDomainHandle_t dom)
{
    NvtxFunctionPointer f = NV_NEXT(dpop);
    int rc = f ? ((nv_dpop_fn)f)(dom) : NV_NOTRACK;
    if (nv_popped(dom))
        agent_scope_nvtx(&agent_g, false);
    return rc;
}

/* Shadow slots CUPTI writes into (then copied into nv_shadow). */
static NvtxFunctionPointer sh_push_a, sh_push_ex, sh_pop, sh_dpush, sh_dpop;

static const struct {
    int module, id;
    NvtxFunctionPointer wrapper, *shadow;
} nv_wrapped[] = {
    {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushA, (NvtxFunctionPointer)nv_push_a, &sh_push_a},
    {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushEx, (NvtxFunctionPointer)nv_push_ex, &sh_push_ex},
    {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePop, (NvtxFunctionPointer)nv_pop, &sh_pop},
    {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx, (NvtxFunctionPointer)nv_dpush,
     &sh_dpush},
    {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePop, (NvtxFunctionPointer)nv_dpop, &sh_dpop},
};
#define NV_NWRAP (sizeof nv_wrapped / sizeof nv_wrapped[0])

/* The library being handed to CUPTI (lock held during the hand-over). */
static agent_nvtx_get_fn nv_real_get;
#define NV_TABLE_MAX 128
static NvtxFunctionPointer *nv_table[2][NV_TABLE_MAX];   /* CORE, CORE2 */

static int NVTX_API nv_module_table(NvtxCallbackModule mod, NvtxFunctionTable *out,
                                    unsigned int *size)
{
    const NvtxExportTableCallbacks *real =
        nv_real_get ? (const NvtxExportTableCallbacks *)nv_real_get(NVTX_ETID_CALLBACKS) : NULL;
    if (!real || !real->GetModuleFunctionTable)
        return 0;
    int ok = real->GetModuleFunctionTable(mod, out, size);
    int t = mod == NVTX_CB_MODULE_CORE ? 0 : mod == NVTX_CB_MODULE_CORE2 ? 1 : -1;
    if (!ok || t < 0 || !*out || *size > NV_TABLE_MAX)
        return ok;
    /* the library's own slots, except the wrapped ones: ours */
    memcpy(nv_table[t], *out, *size * sizeof nv_table[t][0]);
    for (size_t i = 0; i < NV_NWRAP; i++)
        if ((nv_wrapped[i].module == NVTX_CB_MODULE_CORE) == (t == 0) &&
            (unsigned)nv_wrapped[i].id < *size)
            nv_table[t][nv_wrapped[i].id] = nv_wrapped[i].shadow;
    *out = nv_table[t];
    return ok;
}

static const NvtxExportTableCallbacks nv_callbacks = {
    .struct_size = sizeof(NvtxExportTableCallbacks),
    .GetModuleFunctionTable = nv_module_table,
};

static const void *NVTX_API nv_shadow_get(uint32_t id)
{
    if (id == NVTX_ETID_CALLBACKS)
        return &nv_callbacks;
    return nv_real_get ? nv_real_get(id) : NULL;
}

/* Put the wrappers in one library's table (at its InitializeInjectionNvtx2). */
static void nv_install(agent_nvtx_get_fn get)
{
    const NvtxExportTableCallbacks *cb =
        (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable)
        return;
    for (size_t i = 0; i < NV_NWRAP; i++) {
        NvtxFunctionTable t = NULL;
        unsigned n = 0;
        if (cb->GetModuleFunctionTable((NvtxCallbackModule)nv_wrapped[i].module, &t, &n) && t &&
            (unsigned)nv_wrapped[i].id < n && t[nv_wrapped[i].id])
            *t[nv_wrapped[i].id] = nv_wrapped[i].wrapper;
    }
}

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
        CUptiResult r = CUPTI_ERROR_NOT_SUPPORTED;
        if (init && nv_wrap) {
            nv_real_get = v->tables[i];
            r = init(nv_shadow_get);
            nv_real_get = NULL;
            /* publish what CUPTI put in the shadow slots */
            atomic_store_explicit(&nv_shadow.push_a, sh_push_a, memory_order_relaxed);
            atomic_store_explicit(&nv_shadow.push_ex, sh_push_ex, memory_order_relaxed);
            atomic_store_explicit(&nv_shadow.pop, sh_pop, memory_order_relaxed);
            atomic_store_explicit(&nv_shadow.dpush, sh_dpush, memory_order_relaxed);
            atomic_store_explicit(&nv_shadow.dpop, sh_dpop, memory_order_relaxed);
        } else if (init) {
            r = init(v->tables[i]);
        }
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
    char abs[PATH_MAX];
    if (getenv("NVTX_INJECTION64_PATH"))
        return;
    if (dladdr((void *)agent_nvtx_setenv, &info) && info.dli_fname &&
        realpath(info.dli_fname, abs))   /* loaded by a relative path: absolute */
        (void)setenv("NVTX_INJECTION64_PATH", abs, 0);
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
    if (!v->n) {
        /* the first library: the agent's configuration may not be loaded
         * yet (NVTX before CUDA), so read the one variable that matters */
        const char *cr = getenv("CUPTOP_CAPTURE_RANGE");
        if (cr && !strncmp(cr, "nvtx:", 5) && cr[5] && !strchr(cr + 5, '@') &&
            strlen(cr + 5) < sizeof nv_name) {
            strcpy(nv_name, cr + 5);
            nv_name_len = strlen(nv_name);
            nv_wrap = true;
        }
    }
    if (nv_wrap)
        nv_install(get);
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
