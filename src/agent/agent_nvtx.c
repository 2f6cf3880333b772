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
 * with the marker kind off they record nothing - and since they would run
 * on a torn-down CUPTI, a detach does not call cuptiFinalize once a table
 * was handed (agent_nvtx_given).
 *
 * Handles made while dormant: the no-op makes every domain and registered
 * string NULL (the default domain, no name), and CUPTI, attached later,
 * would never learn their names.  So every table gets thin wrappers in the
 * slots that make or take those handles (see NV_SET_XLATE below): the
 * agent hands out handles of its own that keep the name, and gives CUPTI
 * the handle CUPTI makes for that name once it is attached.
 *
 * Capture range nvtx:NAME[@DOMAIN] (CUPTOP_CAPTURE_RANGE): the agent must
 * see the range while dormant, so for this mode it also wraps the push/pop
 * slots (RangePushA, RangePushEx, RangePop, DomainRangePushEx,
 * DomainRangePop): a wrapper compares the name (O(length), no allocation)
 * and the domain (its name, kept with the agent's handle), enters or
 * leaves the capture range (agent_scope_nvtx), and calls what sits in its
 * shadow slot: nothing while dormant, CUPTI's handler once attached.  The
 * per-thread view of pushes and pops (the match, and the ranges CUPTI
 * never saw open, which the agent makes itself) is agent_nvtx_track.c's.
 * CUPTI is handed a shadow export
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
#include <unistd.h>
#include <wchar.h>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtSync.h>

#include "agent_int.h"
#include "agent_nvtx.h"
#include "agent_nvtx_track.h"

#define AGENT_NVTX_TABLES 64   /* libraries with their own NVTX instance */

typedef NvtxGetExportTableFunc_t agent_nvtx_get_fn;
typedef CUptiResult (*agent_nvtx_init_fn)(agent_nvtx_get_fn get);

static struct agent_nvtx {
    pthread_mutex_t lock;
    agent_nvtx_get_fn tables[AGENT_NVTX_TABLES];
    unsigned sets[AGENT_NVTX_TABLES];   /* NV_SET_*: wrappers installed      */
    bool handed[AGENT_NVTX_TABLES];
    unsigned n;
    _Atomic unsigned long inits;   /* InitializeInjectionNvtx2 calls      */
    unsigned long refused;         /* tables CUPTI refused or none kept   */
    _Atomic unsigned given;        /* tables CUPTI accepted: its handlers
                                      stay in them (no cuptiFinalize)     */
    int last_rc;
} agent_nvtx_g = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- wrappers and shadow slots ------------------------------------------
 *
 * Two sets of wrappers go into a library's table (nv_install):
 *  - NV_SET_XLATE, for every library (also one whose table arrives while
 *    CUPTI is attached: handles are process-wide and may cross libraries,
 *    so CUPTI must never be given one of ours): the calls that make or
 *    take a domain or registered-string handle.  While dormant the no-op would hand out NULL handles (the
 *    default domain, no name), so the wrappers hand out the agent's own
 *    (a slot in nv_doms / nv_strs, with the name) and, once CUPTI is
 *    attached, give CUPTI the handle CUPTI made for that name (created at
 *    first use).  A handle that is not one of ours (made by CUPTI for a
 *    library handed while attached, passed across) goes through untouched:
 *    ours are recognised by address range, never by dereferencing.
 *  - NV_SET_CAPTURE, with capture nvtx:NAME[@DOMAIN]: the push/pop calls,
 *    which enter and leave the capture range.
 * Each wrapper calls what sits in its shadow slot: nothing while dormant,
 * CUPTI's handler once a table was handed (CUPTI writes into the shadow
 * slots, through the shadow export table of nv_shadow_get). */
enum {
    NV_PUSH_A, NV_POP,                                 /* capture only    */
    NV_PUSH_EX, NV_MARK_EX, NV_START_EX,               /* from here: xlate */
    NV_DMARK, NV_DSTART, NV_DEND, NV_DPUSH, NV_DPOP, NV_DRES, NV_DCAT_A, NV_DCAT_W,
    NV_DREG_A, NV_DREG_W, NV_DCREATE_A, NV_DCREATE_W, NV_DDESTROY, NV_SYNC_CREATE,
    NV_NWRAP
};
#define NV_FIRST_XLATE NV_PUSH_EX
#define NV_SET_CAPTURE 1u
#define NV_SET_XLATE 2u

/* What CUPTI installed for each wrapped entry (written by CUPTI into
 * nv_sh during cuptiNvtxInitialize2 under our lock, published to nv_next;
 * a wrapper that still sees NULL behaves as the no-op it replaced). */
static NvtxFunctionPointer nv_sh[NV_NWRAP];
static _Atomic(NvtxFunctionPointer) nv_next[NV_NWRAP];
#define NV_NEXT(i) atomic_load_explicit(&nv_next[i], memory_order_relaxed)
#define NV_NOTRACK (-2)   /* the no-op's answer: NVTX_NO_PUSH_POP_TRACKING */

typedef int (*nv_push_a_fn)(const char *);
typedef int (*nv_attr_int_fn)(const nvtxEventAttributes_t *);
typedef void (*nv_attr_void_fn)(const nvtxEventAttributes_t *);
typedef nvtxRangeId_t (*nv_attr_id_fn)(const nvtxEventAttributes_t *);
typedef int (*nv_pop_fn)(void);
typedef int (*nv_dattr_int_fn)(nvtxDomainHandle_t, const nvtxEventAttributes_t *);
typedef void (*nv_dattr_void_fn)(nvtxDomainHandle_t, const nvtxEventAttributes_t *);
typedef nvtxRangeId_t (*nv_dattr_id_fn)(nvtxDomainHandle_t, const nvtxEventAttributes_t *);
typedef void (*nv_dend_fn)(nvtxDomainHandle_t, nvtxRangeId_t);
typedef int (*nv_dpop_fn)(nvtxDomainHandle_t);
typedef nvtxResourceHandle_t (*nv_dres_fn)(nvtxDomainHandle_t, nvtxResourceAttributes_t *);
typedef void (*nv_dcat_a_fn)(nvtxDomainHandle_t, uint32_t, const char *);
typedef void (*nv_dcat_w_fn)(nvtxDomainHandle_t, uint32_t, const wchar_t *);
typedef nvtxStringHandle_t (*nv_dreg_a_fn)(nvtxDomainHandle_t, const char *);
typedef nvtxStringHandle_t (*nv_dreg_w_fn)(nvtxDomainHandle_t, const wchar_t *);
typedef nvtxDomainHandle_t (*nv_dcreate_a_fn)(const char *);
typedef nvtxDomainHandle_t (*nv_dcreate_w_fn)(const wchar_t *);
typedef void (*nv_ddestroy_fn)(nvtxDomainHandle_t);
typedef nvtxSyncUser_t (*nv_sync_create_fn)(nvtxDomainHandle_t, const nvtxSyncUserAttributes_t *);

/* ---- the agent's own domain and string handles ----------------------- */
#define NV_DOM_MAX 256
#define NV_STR_MAX 4096
typedef struct nv_dom {
    char *name;                          /* ASCII (a W name: '?' for the rest) */
    wchar_t *wname;                      /* made by DomainCreateW             */
    _Atomic(nvtxDomainHandle_t) real;    /* CUPTI's, once made                */
} nv_dom;
typedef struct nv_str {
    nvtxDomainHandle_t dom;              /* as the application passed it      */
    char *s;
    wchar_t *ws;
    _Atomic(nvtxStringHandle_t) real;
} nv_str;
static nv_dom nv_doms[NV_DOM_MAX];
static nv_str nv_strs[NV_STR_MAX];
static unsigned nv_ndoms, nv_nstrs;       /* under nv_hlock                  */
static _Atomic unsigned long nv_passed;   /* tables full: CUPTI's or NULL    */
static pthread_mutex_t nv_hlock = PTHREAD_MUTEX_INITIALIZER;

static bool nv_in(const void *p, const void *base, size_t size)
{
    uintptr_t a = (uintptr_t)p, b = (uintptr_t)base;
    return a >= b && a < b + size;
}

static nv_dom *nv_dom_of(nvtxDomainHandle_t h)
{
    return h && nv_in(h, nv_doms, sizeof nv_doms) ? (nv_dom *)(void *)h : NULL;
}

static nv_str *nv_str_of(nvtxStringHandle_t h)
{
    return h && nv_in(h, nv_strs, sizeof nv_strs) ? (nv_str *)(void *)h : NULL;
}

/* The handle to give CUPTI for h: CUPTI's for one of ours (made now when
 * CUPTI is there and it was not made yet), h itself otherwise. */
static nvtxDomainHandle_t nv_dom_real(nvtxDomainHandle_t h)
{
    nv_dom *d = nv_dom_of(h);
    if (!d)
        return h;
    nvtxDomainHandle_t r = atomic_load_explicit(&d->real, memory_order_acquire);
    NvtxFunctionPointer fa = NV_NEXT(NV_DCREATE_A), fw = NV_NEXT(NV_DCREATE_W);
    if (r || (!fa && !fw))
        return r;
    pthread_mutex_lock(&nv_hlock);
    r = atomic_load_explicit(&d->real, memory_order_relaxed);
    if (!r) {
        r = d->wname && fw ? ((nv_dcreate_w_fn)fw)(d->wname)
            : fa           ? ((nv_dcreate_a_fn)fa)(d->name)
                           : NULL;
        atomic_store_explicit(&d->real, r, memory_order_release);
    }
    pthread_mutex_unlock(&nv_hlock);
    return r;
}

static nvtxStringHandle_t nv_str_real(nvtxStringHandle_t h)
{
    nv_str *x = nv_str_of(h);
    if (!x)
        return h;
    nvtxStringHandle_t r = atomic_load_explicit(&x->real, memory_order_acquire);
    NvtxFunctionPointer fa = NV_NEXT(NV_DREG_A), fw = NV_NEXT(NV_DREG_W);
    if (r || (!fa && !fw))
        return r;
    nvtxDomainHandle_t dom = nv_dom_real(x->dom);
    pthread_mutex_lock(&nv_hlock);
    r = atomic_load_explicit(&x->real, memory_order_relaxed);
    if (!r) {
        r = x->ws && fw ? ((nv_dreg_w_fn)fw)(dom, x->ws)
            : fa        ? ((nv_dreg_a_fn)fa)(dom, x->s)
                        : NULL;
        atomic_store_explicit(&x->real, r, memory_order_release);
    }
    pthread_mutex_unlock(&nv_hlock);
    return r;
}

static char *nv_ascii(const wchar_t *w)
{
    size_t n = wcslen(w);
    char *c = malloc(n + 1);
    for (size_t i = 0; c && i <= n; i++)
        c[i] = w[i] >= 0 && w[i] < 128 ? (char)w[i] : '?';
    return c;
}

/* Copies of a name given as ASCII (a) or wide (w): false when memory is
 * short (nothing kept). */
static bool nv_copy(const char *a, const wchar_t *w, char **name, wchar_t **wname)
{
    *name = w ? nv_ascii(w) : strdup(a);
    *wname = w ? wcsdup(w) : NULL;
    if (*name && (*wname || !w))
        return true;
    free(*name);
    free(*wname);
    return false;
}

/* A new handle of ours for a domain name (the same one for the same
 * name), or NULL when the table is full or memory short. */
static nv_dom *nv_dom_new(const char *a, const wchar_t *w)
{
    nv_dom *d = NULL;
    pthread_mutex_lock(&nv_hlock);
    for (unsigned i = 0; i < nv_ndoms && !d; i++)
        if (w ? nv_doms[i].wname && !wcscmp(nv_doms[i].wname, w)
              : !nv_doms[i].wname && !strcmp(nv_doms[i].name, a))
            d = &nv_doms[i];
    char *name;
    wchar_t *wname;
    if (!d && nv_ndoms < NV_DOM_MAX && nv_copy(a, w, &name, &wname)) {
        d = &nv_doms[nv_ndoms++];
        d->name = name;
        d->wname = wname;
    }
    pthread_mutex_unlock(&nv_hlock);
    return d;
}

static nv_str *nv_str_new(nvtxDomainHandle_t dom, const char *a, const wchar_t *w)
{
    nv_str *x = NULL;
    pthread_mutex_lock(&nv_hlock);
    char *str;
    wchar_t *wstr;
    if (nv_nstrs < NV_STR_MAX && nv_copy(a, w, &str, &wstr)) {
        x = &nv_strs[nv_nstrs++];
        x->dom = dom;
        x->s = str;
        x->ws = wstr;
    }
    pthread_mutex_unlock(&nv_hlock);
    return x;
}

/* at with a registered string of ours replaced by CUPTI's (copied into
 * tmp), or at itself. */
static const nvtxEventAttributes_t *nv_xattr(const nvtxEventAttributes_t *at,
                                             nvtxEventAttributes_t *tmp)
{
    if (!at || at->messageType != NVTX_MESSAGE_TYPE_REGISTERED ||
        !nv_str_of(at->message.registered))
        return at;
    size_t n = at->size < sizeof *tmp ? at->size : sizeof *tmp;
    memset(tmp, 0, sizeof *tmp);
    memcpy(tmp, at, n);
    tmp->size = (uint16_t)n;
    tmp->message.registered = nv_str_real(at->message.registered);
    return tmp;
}

static const char *nv_attr_name(const nvtxEventAttributes_t *at)
{
    if (!at)
        return NULL;
    if (at->messageType == NVTX_MESSAGE_TYPE_ASCII)
        return at->message.ascii;
    nv_str *x = at->messageType == NVTX_MESSAGE_TYPE_REGISTERED
                    ? nv_str_of(at->message.registered) : NULL;
    return x ? x->s : NULL;
}

/* The agent's name for domain h, NULL when h is not one of its handles. */
static const char *nv_dom_name(nvtxDomainHandle_t h)
{
    nv_dom *d = nv_dom_of(h);
    return d ? d->name : NULL;
}

/* A push: enter the capture range first when it matches (so the range's
 * own START is recorded); then note whether CUPTI will see it (slot i's
 * handler is in) and return that handler, read once: the push is
 * forwarded exactly when it is noted as seen (CUPTI's handlers can come
 * in between two reads - another thread's first NVTX call hands the table
 * over - and a push forwarded but noted unseen had its pop kept from
 * CUPTI: a range open in CUPTI's records and made again by the agent;
 * found by the truth matrix, seed 9101031457). */
static NvtxFunctionPointer nv_push_seen(const char *m, nvtxDomainHandle_t h, size_t i)
{
    bool hit = agent_nvtx_track_match(m, h, nv_dom_name(h));
    if (hit)
        agent_scope_nvtx(&agent_g, true);
    NvtxFunctionPointer f = NV_NEXT(i);
    agent_nvtx_track_pushed(h, hit, !f, m);
    return f;
}

/* The same for an Ex push: its message is read only when needed. */
static NvtxFunctionPointer nv_push_seen_at(const nvtxEventAttributes_t *at,
                                           nvtxDomainHandle_t h, size_t i)
{
    return nv_push_seen(agent_nvtx_track_capturing() || !NV_NEXT(i) ? nv_attr_name(at) : NULL,
                        h, i);
}

/* A pop: forward it to CUPTI's handler (slot i) unless CUPTI never saw
 * its push (then the agent makes the range itself); then leave the
 * capture range when the pop closes it. */
static int nv_pop_seen(nvtxDomainHandle_t h, size_t i)
{
    bool match;
    uint32_t d = 0;
    NvtxFunctionPointer f = NV_NEXT(i);
    int rc = NV_NOTRACK;
    if (agent_nvtx_track_popped(h, &match, &d))
        agent_nvtx_track_closed(h, nv_dom_name(h), d);
    else if (f)
        rc = i == NV_POP ? ((nv_pop_fn)f)() : ((nv_dpop_fn)f)(nv_dom_real(h));
    if (match)
        agent_scope_nvtx(&agent_g, false);
    return rc;
}

/* ---- the wrappers ------------------------------------------------------ */
static int NVTX_API nv_push_a(const char *m)
{
    NvtxFunctionPointer f = nv_push_seen(m, NULL, NV_PUSH_A);
    return f ? ((nv_push_a_fn)f)(m) : NV_NOTRACK;
}

static int NVTX_API nv_push_ex(const nvtxEventAttributes_t *at)
{
    nvtxEventAttributes_t tmp;
    NvtxFunctionPointer f = nv_push_seen_at(at, NULL, NV_PUSH_EX);
    return f ? ((nv_attr_int_fn)f)(nv_xattr(at, &tmp)) : NV_NOTRACK;
}

static int NVTX_API nv_pop(void)
{
    return nv_pop_seen(NULL, NV_POP);
}

static void NVTX_API nv_mark_ex(const nvtxEventAttributes_t *at)
{
    nvtxEventAttributes_t tmp;
    NvtxFunctionPointer f = NV_NEXT(NV_MARK_EX);
    if (f)
        ((nv_attr_void_fn)f)(nv_xattr(at, &tmp));
}

static nvtxRangeId_t NVTX_API nv_start_ex(const nvtxEventAttributes_t *at)
{
    nvtxEventAttributes_t tmp;
    NvtxFunctionPointer f = NV_NEXT(NV_START_EX);
    return f ? ((nv_attr_id_fn)f)(nv_xattr(at, &tmp)) : 0;
}

static void NVTX_API nv_dmark(nvtxDomainHandle_t h, const nvtxEventAttributes_t *at)
{
    nvtxEventAttributes_t tmp;
    NvtxFunctionPointer f = NV_NEXT(NV_DMARK);
    if (f)
        ((nv_dattr_void_fn)f)(nv_dom_real(h), nv_xattr(at, &tmp));
}

static nvtxRangeId_t NVTX_API nv_dstart(nvtxDomainHandle_t h, const nvtxEventAttributes_t *at)
{
    nvtxEventAttributes_t tmp;
    NvtxFunctionPointer f = NV_NEXT(NV_DSTART);
    return f ? ((nv_dattr_id_fn)f)(nv_dom_real(h), nv_xattr(at, &tmp)) : 0;
}

static void NVTX_API nv_dend(nvtxDomainHandle_t h, nvtxRangeId_t id)
{
    NvtxFunctionPointer f = NV_NEXT(NV_DEND);
    if (f)
        ((nv_dend_fn)f)(nv_dom_real(h), id);
}

static int NVTX_API nv_dpush(nvtxDomainHandle_t h, const nvtxEventAttributes_t *at)
{
    nvtxEventAttributes_t tmp;
    NvtxFunctionPointer f = nv_push_seen_at(at, h, NV_DPUSH);
    return f ? ((nv_dattr_int_fn)f)(nv_dom_real(h), nv_xattr(at, &tmp)) : NV_NOTRACK;
}

static int NVTX_API nv_dpop(nvtxDomainHandle_t h)
{
    return nv_pop_seen(h, NV_DPOP);
}

static nvtxResourceHandle_t NVTX_API nv_dres(nvtxDomainHandle_t h, nvtxResourceAttributes_t *at)
{
    NvtxFunctionPointer f = NV_NEXT(NV_DRES);
    return f ? ((nv_dres_fn)f)(nv_dom_real(h), at) : NULL;
}

static void NVTX_API nv_dcat_a(nvtxDomainHandle_t h, uint32_t cat, const char *name)
{
    NvtxFunctionPointer f = NV_NEXT(NV_DCAT_A);
    if (f)
        ((nv_dcat_a_fn)f)(nv_dom_real(h), cat, name);
}

static void NVTX_API nv_dcat_w(nvtxDomainHandle_t h, uint32_t cat, const wchar_t *name)
{
    NvtxFunctionPointer f = NV_NEXT(NV_DCAT_W);
    if (f)
        ((nv_dcat_w_fn)f)(nv_dom_real(h), cat, name);
}

/* Registering a string: a handle of ours, with CUPTI's made now when
 * CUPTI is there; a full table passes CUPTI's (or the no-op's NULL). */
static nvtxStringHandle_t nv_reg(nvtxDomainHandle_t h, const char *a, const wchar_t *w)
{
    nv_str *x = a || w ? nv_str_new(h, a, w) : NULL;
    if (x) {
        (void)nv_str_real((nvtxStringHandle_t)(void *)x);
        return (nvtxStringHandle_t)(void *)x;
    }
    atomic_fetch_add_explicit(&nv_passed, 1, memory_order_relaxed);
    NvtxFunctionPointer f = NV_NEXT(w ? NV_DREG_W : NV_DREG_A);
    return !f ? NULL : w ? ((nv_dreg_w_fn)f)(nv_dom_real(h), w) : ((nv_dreg_a_fn)f)(nv_dom_real(h), a);
}

static nvtxStringHandle_t NVTX_API nv_dreg_a(nvtxDomainHandle_t h, const char *s)
{
    return nv_reg(h, s, NULL);
}

static nvtxStringHandle_t NVTX_API nv_dreg_w(nvtxDomainHandle_t h, const wchar_t *s)
{
    return nv_reg(h, NULL, s);
}

static nvtxDomainHandle_t nv_create(const char *a, const wchar_t *w)
{
    nv_dom *d = a || w ? nv_dom_new(a, w) : NULL;
    if (d) {
        (void)nv_dom_real((nvtxDomainHandle_t)(void *)d);
        return (nvtxDomainHandle_t)(void *)d;
    }
    atomic_fetch_add_explicit(&nv_passed, 1, memory_order_relaxed);
    NvtxFunctionPointer f = NV_NEXT(w ? NV_DCREATE_W : NV_DCREATE_A);
    return !f ? NULL : w ? ((nv_dcreate_w_fn)f)(w) : ((nv_dcreate_a_fn)f)(a);
}

static nvtxDomainHandle_t NVTX_API nv_dcreate_a(const char *name)
{
    return nv_create(name, NULL);
}

static nvtxDomainHandle_t NVTX_API nv_dcreate_w(const wchar_t *name)
{
    return nv_create(NULL, name);
}

/* Our slot stays (a handle may still be in use on another thread). */
static void NVTX_API nv_ddestroy(nvtxDomainHandle_t h)
{
    NvtxFunctionPointer f = NV_NEXT(NV_DDESTROY);
    nvtxDomainHandle_t r = nv_dom_of(h) ? atomic_load(&nv_dom_of(h)->real) : h;
    if (f && r)
        ((nv_ddestroy_fn)f)(r);
}

static nvtxSyncUser_t NVTX_API nv_sync_create(nvtxDomainHandle_t h,
                                             const nvtxSyncUserAttributes_t *at)
{
    NvtxFunctionPointer f = NV_NEXT(NV_SYNC_CREATE);
    if (!f)
        return NULL;
    nvtxSyncUserAttributes_t tmp;
    if (at && at->messageType == NVTX_MESSAGE_TYPE_REGISTERED &&
        nv_str_of(at->message.registered)) {
        size_t n = at->size < sizeof tmp ? at->size : sizeof tmp;
        memset(&tmp, 0, sizeof tmp);
        memcpy(&tmp, at, n);
        tmp.size = (uint16_t)n;
        tmp.message.registered = nv_str_real(at->message.registered);
        at = &tmp;
    }
    return ((nv_sync_create_fn)f)(nv_dom_real(h), at);
}

#define C1 NVTX_CB_MODULE_CORE
#define C2 NVTX_CB_MODULE_CORE2
#define C6 NVTX_CB_MODULE_SYNC
static const struct {
    int module, id;
    NvtxFunctionPointer wrapper;
} nv_wrapped[NV_NWRAP] = {
    [NV_PUSH_A] = {C1, NVTX_CBID_CORE_RangePushA, (NvtxFunctionPointer)nv_push_a},
    [NV_POP] = {C1, NVTX_CBID_CORE_RangePop, (NvtxFunctionPointer)nv_pop},
    [NV_DPOP] = {C2, NVTX_CBID_CORE2_DomainRangePop, (NvtxFunctionPointer)nv_dpop},
    [NV_PUSH_EX] = {C1, NVTX_CBID_CORE_RangePushEx, (NvtxFunctionPointer)nv_push_ex},
    [NV_MARK_EX] = {C1, NVTX_CBID_CORE_MarkEx, (NvtxFunctionPointer)nv_mark_ex},
    [NV_START_EX] = {C1, NVTX_CBID_CORE_RangeStartEx, (NvtxFunctionPointer)nv_start_ex},
    [NV_DMARK] = {C2, NVTX_CBID_CORE2_DomainMarkEx, (NvtxFunctionPointer)nv_dmark},
    [NV_DSTART] = {C2, NVTX_CBID_CORE2_DomainRangeStartEx, (NvtxFunctionPointer)nv_dstart},
    [NV_DEND] = {C2, NVTX_CBID_CORE2_DomainRangeEnd, (NvtxFunctionPointer)nv_dend},
    [NV_DPUSH] = {C2, NVTX_CBID_CORE2_DomainRangePushEx, (NvtxFunctionPointer)nv_dpush},
    [NV_DRES] = {C2, NVTX_CBID_CORE2_DomainResourceCreate, (NvtxFunctionPointer)nv_dres},
    [NV_DCAT_A] = {C2, NVTX_CBID_CORE2_DomainNameCategoryA, (NvtxFunctionPointer)nv_dcat_a},
    [NV_DCAT_W] = {C2, NVTX_CBID_CORE2_DomainNameCategoryW, (NvtxFunctionPointer)nv_dcat_w},
    [NV_DREG_A] = {C2, NVTX_CBID_CORE2_DomainRegisterStringA, (NvtxFunctionPointer)nv_dreg_a},
    [NV_DREG_W] = {C2, NVTX_CBID_CORE2_DomainRegisterStringW, (NvtxFunctionPointer)nv_dreg_w},
    [NV_DCREATE_A] = {C2, NVTX_CBID_CORE2_DomainCreateA, (NvtxFunctionPointer)nv_dcreate_a},
    [NV_DCREATE_W] = {C2, NVTX_CBID_CORE2_DomainCreateW, (NvtxFunctionPointer)nv_dcreate_w},
    [NV_DDESTROY] = {C2, NVTX_CBID_CORE2_DomainDestroy, (NvtxFunctionPointer)nv_ddestroy},
    [NV_SYNC_CREATE] = {C6, NVTX_CBID_SYNC_DomainSyncUserCreate,
                        (NvtxFunctionPointer)nv_sync_create},
};
#undef C1
#undef C2
#undef C6

/* (capture is always installed with xlate: its push wrappers are there) */
static bool nv_in_set(size_t i, unsigned set)
{
    return (set & NV_SET_XLATE && i >= NV_FIRST_XLATE) ||
           (set & NV_SET_CAPTURE && i < NV_FIRST_XLATE);
}

/* The library being handed to CUPTI and its wrapper sets (lock held
 * during the hand-over). */
static agent_nvtx_get_fn nv_real_get;
static unsigned nv_real_set;
#define NV_TABLE_MAX 128
static NvtxFunctionPointer *nv_table[3][NV_TABLE_MAX];   /* CORE, CORE2, SYNC */

static int nv_module_index(int mod)
{
    return mod == NVTX_CB_MODULE_CORE ? 0 : mod == NVTX_CB_MODULE_CORE2 ? 1
         : mod == NVTX_CB_MODULE_SYNC ? 2 : -1;
}

static int NVTX_API nv_module_table(NvtxCallbackModule mod, NvtxFunctionTable *out,
                                    unsigned int *size)
{
    const NvtxExportTableCallbacks *real =
        nv_real_get ? (const NvtxExportTableCallbacks *)nv_real_get(NVTX_ETID_CALLBACKS) : NULL;
    if (!real || !real->GetModuleFunctionTable)
        return 0;
    int ok = real->GetModuleFunctionTable(mod, out, size);
    int t = nv_module_index(mod);
    if (!ok || t < 0 || !*out || *size > NV_TABLE_MAX)
        return ok;
    /* the library's own slots, except the wrapped ones: ours */
    memcpy(nv_table[t], *out, *size * sizeof nv_table[t][0]);
    for (size_t i = 0; i < NV_NWRAP; i++)
        if (nv_module_index(nv_wrapped[i].module) == t &&
            (unsigned)nv_wrapped[i].id < *size && nv_in_set(i, nv_real_set))
            nv_table[t][nv_wrapped[i].id] = &nv_sh[i];
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

/* Put the wrappers of set in one library's table (at its
 * InitializeInjectionNvtx2, before its first call goes through). */
static void nv_install(agent_nvtx_get_fn get, unsigned set)
{
    const NvtxExportTableCallbacks *cb =
        (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable)
        return;
    for (size_t i = 0; i < NV_NWRAP; i++) {
        NvtxFunctionTable t = NULL;
        unsigned n = 0;
        if (nv_in_set(i, set) &&
            cb->GetModuleFunctionTable((NvtxCallbackModule)nv_wrapped[i].module, &t, &n) && t &&
            (unsigned)nv_wrapped[i].id < n && t[nv_wrapped[i].id])
            *t[nv_wrapped[i].id] = nv_wrapped[i].wrapper;
    }
}

/* Hand the tables not yet handed to CUPTI (lock held). */
static void nvtx_hand(agent *a)
{
    struct agent_nvtx *v = &agent_nvtx_g;
    if (!agent_attach_loaded(a) || !a->cupti.handle)
        return;
    agent_nvtx_init_fn init = (agent_nvtx_init_fn)dlsym(a->cupti.handle, "cuptiNvtxInitialize2");
    for (unsigned i = 0; i < v->n; i++) {
        if (v->handed[i])
            continue;
        v->handed[i] = true;
        CUptiResult r = CUPTI_ERROR_NOT_SUPPORTED;
        if (init && v->sets[i]) {
            nv_real_get = v->tables[i];
            nv_real_set = v->sets[i];
            r = init(nv_shadow_get);
            nv_real_get = NULL;
            /* publish what CUPTI put in the shadow slots */
            for (size_t k = 0; k < NV_NWRAP; k++)
                if (nv_sh[k])
                    atomic_store_explicit(&nv_next[k], nv_sh[k], memory_order_relaxed);
        } else if (init) {
            r = init(v->tables[i]);
        }
        if (r != CUPTI_SUCCESS) {
            v->refused++;
            v->last_rc = (int)r;
        } else {
            atomic_fetch_add_explicit(&v->given, 1, memory_order_relaxed);
        }
    }
}

unsigned agent_nvtx_given(void)
{
    return atomic_load_explicit(&agent_nvtx_g.given, memory_order_relaxed);
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
        agent_nvtx_track_config();
    }
    bool known = false;
    for (unsigned i = 0; i < v->n; i++)
        known |= v->tables[i] == get;
    /* the wrappers: capture sees the range; every table translates
     * handles, also one that arrives while CUPTI is attached: a handle is
     * process-wide, so one made by a library's wrapper (ours) may be
     * passed to another library's NVTX calls, and CUPTI must never see
     * one of ours */
    /* push/pop always: a range CUPTI never saw open (pushed before it was
     * attached) is made by the agent */
    unsigned set = NV_SET_CAPTURE | NV_SET_XLATE;
    if (!known)
        nv_install(get, set);
    if (!known && v->n < AGENT_NVTX_TABLES) {
        v->sets[v->n] = set;
        v->tables[v->n] = get;
        v->handed[v->n++] = false;
    } else if (!known) {
        v->refused++;
    }
    if (agent_attached(a))
        nvtx_hand(a);
    pthread_mutex_unlock(&v->lock);
    return 1;
}
