/*
 * sim_nvtx.c - the NVTX side of the simulated CUPTI: cuptiNvtxInitialize2
 * (what libcupti's InitializeInjectionNvtx2 calls) fills the calling NVTX
 * instance's function table, through the same export table the real
 * loader offers (nvtxDetail/nvtxInit.h), with handlers that produce the
 * MARKER records real CUPTI makes of NVTX calls: START with name and
 * domain, END with the id only, INSTANTANEOUS for marks; push/pop nest
 * per thread.  A pop with nothing pushed makes an END of an id never
 * started (the simulator's model of an unbalanced pop).  Every range is
 * also appended to the ground truth file $CUPTOPSIM_NVTX_TRUTH, one line
 * "start|end|mark ID TID TIMESTAMP DOMAIN NAME-as-hex" per record, and
 * "data ID COLOR PAYLOAD CATEGORY -" per MARKER_DATA record (Ex calls with a
 * colour, a u64 payload or a category): what CUPTI saw.
 *
 * What CUPTI saw is not what the application did: a push made before
 * CUPTI's handlers are in the NVTX table (before CUDA, while dormant, or
 * on a thread that calls the agent's wrapper while another thread's first
 * NVTX call is still handing the table to CUPTI) reaches no handler here,
 * and the agent makes that range itself.  So the simulated application
 * (simdrive, cuptop-simapp) also tells the truth of each push it made and
 * each pop it is about to make (cuptopsim_nvtx_app): "apush TID TIMESTAMP IN
 * ON DOMAIN NAME-as-hex" and "apop TID TIMESTAMP IN ON DOMAIN -", TID the
 * kernel's thread id, IN 1 once CUPTI's handlers are in an NVTX table (the
 * simulated applications have one NVTX instance), ON 1 while a MARKER
 * record would be made (sim_marker_on).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wchar.h>

#include <nvtx3/nvToolsExt.h>

#include "sim_int.h"

#define SIM_NVTX_DEPTH 256

/* Names and domains must outlive the record (the client reads them when
 * the buffer completes): copied once each, kept for the process. */
static pthread_mutex_t nv_lock = PTHREAD_MUTEX_INITIALIZER;
static char *nv_strs[1024];
static size_t nv_nstrs;
static FILE *nv_truth;
static bool nv_truth_tried;

static const char *nv_keep(const char *s)
{
    if (!s)
        return NULL;
    pthread_mutex_lock(&nv_lock);
    for (size_t i = 0; i < nv_nstrs; i++)
        if (!strcmp(nv_strs[i], s)) {
            pthread_mutex_unlock(&nv_lock);
            return nv_strs[i];
        }
    char *c = strdup(s);
    if (c && nv_nstrs < sizeof nv_strs / sizeof nv_strs[0])
        nv_strs[nv_nstrs++] = c;
    pthread_mutex_unlock(&nv_lock);
    return c;
}

/* One truth line "HEAD DOMAIN NAME-as-hex" (the file opened at first use). */
static void nv_line(const char *head, const char *dom, const char *name)
{
    pthread_mutex_lock(&nv_lock);
    if (!nv_truth_tried) {
        const char *p = getenv("CUPTOPSIM_NVTX_TRUTH");
        nv_truth_tried = true;
        nv_truth = p && *p ? fopen(p, "a") : NULL;
    }
    if (nv_truth) {
        fprintf(nv_truth, "%s %s ", head, dom && *dom ? dom : "-");
        for (const unsigned char *p = (const unsigned char *)(name ? name : ""); *p; p++)
            fprintf(nv_truth, "%02x", *p);
        fputs(name && *name ? "\n" : "-\n", nv_truth);
        fflush(nv_truth);
    }
    pthread_mutex_unlock(&nv_lock);
}

/* What CUPTI saw: "WHAT ID TID TS DOMAIN NAME-as-hex". */
static void nv_record(const char *what, uint32_t id, uint64_t ts, const char *dom, const char *name)
{
    char head[96];
    snprintf(head, sizeof head, "%s %u %u %llu", what, id, sim_thread_self()->tid,
             (unsigned long long)ts);
    nv_line(head, dom, name);
}

/* Set once CUPTI's handlers are in an NVTX table (cuptiNvtxInitialize2). */
static _Atomic bool nv_in;

SIM_EXPORT void cuptopsim_nvtx_app(int push, const char *domain, const char *name)
{
    /* the kernel's tid: no simulator thread record is made for the
     * application's thread here (with shared buffers every thread is one) */
    char head[96];
    snprintf(head, sizeof head, "%s %u %llu %d %d", push ? "apush" : "apop",
             (uint32_t)syscall(SYS_gettid), (unsigned long long)sim_now(),
             atomic_load(&nv_in) ? 1 : 0, sim_marker_on() ? 1 : 0);
    nv_line(head, domain, push ? name : NULL);
}

/* The thread's push stack, per domain slot (0: the default domain). */
#define SIM_NVTX_DOMAINS 8
static _Thread_local uint32_t nv_stack[SIM_NVTX_DOMAINS][SIM_NVTX_DEPTH];
static _Thread_local unsigned nv_depth[SIM_NVTX_DOMAINS];

/* A domain handle is a pointer to one of these (never freed). */
typedef struct sim_nvtx_domain {
    const char *name;
    unsigned slot;
} sim_nvtx_domain;
static sim_nvtx_domain nv_domains[SIM_NVTX_DOMAINS];
static unsigned nv_ndomains = 1;

static uint32_t nv_next_id(void)
{
    return atomic_fetch_add_explicit(&sim.corr, 1, memory_order_relaxed) + 1;
}

static uint32_t nv_start(const char *name, const sim_nvtx_domain *d, bool push, uint32_t flags)
{
    uint32_t id = nv_next_id();
    uint64_t ts = sim_now();
    const char *n = nv_keep(name), *dn = d ? d->name : NULL;
    if (!sim_produce_marker(flags, id, n, dn, ts))
        return id;   /* marker off: like CUPTI, nothing recorded */
    nv_record(flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS ? "mark" : "start", id, ts, dn, n);
    unsigned s = d ? d->slot : 0;
    if (push && nv_depth[s] < SIM_NVTX_DEPTH)
        nv_stack[s][nv_depth[s]] = id;
    if (push)
        nv_depth[s]++;
    return id;
}

static void nv_end(uint32_t id, const sim_nvtx_domain *d)
{
    uint64_t ts = sim_now();
    if (sim_produce_marker(CUPTI_ACTIVITY_FLAG_MARKER_END, id, NULL, d ? d->name : NULL, ts))
        nv_record("end", id, ts, d ? d->name : NULL, NULL);
}

static int nv_pop(const sim_nvtx_domain *d)
{
    unsigned s = d ? d->slot : 0;
    if (nv_depth[s] == 0) {
        nv_end(nv_next_id(), d);   /* unbalanced: an end of nothing */
        return -1;
    }
    unsigned lvl = --nv_depth[s];
    if (lvl < SIM_NVTX_DEPTH)
        nv_end(nv_stack[s][lvl], d);
    return (int)lvl;
}

/* A registered string handle is a pointer to one of these (never freed);
 * CUPTI's records carry the string, as for an ASCII message. */
typedef struct sim_nvtx_string {
    const char *s;
} sim_nvtx_string;

static const char *nv_msg(const nvtxEventAttributes_t *a)
{
    if (a && a->messageType == NVTX_MESSAGE_TYPE_REGISTERED && a->message.registered)
        return ((const sim_nvtx_string *)(const void *)a->message.registered)->s;
    return a && a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : NULL;
}

/* An Ex call with a colour or payload: its MARKER_DATA record (after the
 * START, as CUPTI writes them), and a truth line "data ID COLOR PAYLOAD". */
static void nv_data(uint32_t id, const nvtxEventAttributes_t *a)
{
    if (!a)
        return;
    bool argb = a->colorType == NVTX_COLOR_ARGB;
    uint64_t pl = a->payloadType == NVTX_PAYLOAD_TYPE_UNSIGNED_INT64 ? a->payload.ullValue : 0;
    if (!argb && !pl && !a->category)
        return;
    if (!sim_produce_marker_data(id, argb, argb ? a->color : 0, a->category, pl))
        return;
    pthread_mutex_lock(&nv_lock);
    if (nv_truth)
        fprintf(nv_truth, "data %u %u %llu %u -\n", id, argb ? a->color : 0,
                (unsigned long long)pl, a->category);
    pthread_mutex_unlock(&nv_lock);
}

/* Every push (A, Ex, domain): START (and DATA for attributes a, NULL for
 * none); returns the zero-based level pushed, as nvtxRangePush does. */
static int nv_push(const char *m, const sim_nvtx_domain *d, const nvtxEventAttributes_t *a)
{
    nv_data(nv_start(m, d, true, CUPTI_ACTIVITY_FLAG_MARKER_START), a);
    return (int)nv_depth[d ? d->slot : 0] - 1;
}

static int NVTX_API h_push_a(const char *m) { return nv_push(m, NULL, NULL); }
static int NVTX_API h_push_ex(const nvtxEventAttributes_t *a)
{
    return nv_push(nv_msg(a), NULL, a);
}
static int NVTX_API h_pop(void) { return nv_pop(NULL); }
static nvtxRangeId_t NVTX_API h_start_a(const char *m) { return nv_start(m, NULL, false, CUPTI_ACTIVITY_FLAG_MARKER_START); }
static nvtxRangeId_t NVTX_API h_start_ex(const nvtxEventAttributes_t *a) { return h_start_a(nv_msg(a)); }
static void NVTX_API h_end(nvtxRangeId_t id) { nv_end((uint32_t)id, NULL); }
static void NVTX_API h_mark_a(const char *m) { (void)nv_start(m, NULL, false, CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS); }
static void NVTX_API h_mark_ex(const nvtxEventAttributes_t *a) { h_mark_a(nv_msg(a)); }

static nvtxDomainHandle_t NVTX_API h_domain_create(const char *name)
{
    pthread_mutex_lock(&nv_lock);
    sim_nvtx_domain *d = NULL;
    for (unsigned i = 1; i < nv_ndomains; i++)
        if (!strcmp(nv_domains[i].name, name ? name : ""))
            d = &nv_domains[i];
    if (!d && nv_ndomains < SIM_NVTX_DOMAINS) {
        d = &nv_domains[nv_ndomains];
        d->slot = nv_ndomains++;
        d->name = strdup(name ? name : "");
    }
    pthread_mutex_unlock(&nv_lock);
    return (nvtxDomainHandle_t)d;
}

static nvtxStringHandle_t NVTX_API h_register_a(nvtxDomainHandle_t h, const char *str)
{
    (void)h;
    sim_nvtx_string *x = str ? malloc(sizeof *x) : NULL;
    if (x)
        x->s = nv_keep(str);
    return (nvtxStringHandle_t)(void *)x;
}

/* Wide names: kept as ASCII ('?' for the rest), as the records carry char. */
static void nv_narrow(const wchar_t *w, char *out, size_t len)
{
    size_t n = 0;
    for (; w && w[n] && n + 1 < len; n++)
        out[n] = w[n] >= 0 && w[n] < 128 ? (char)w[n] : '?';
    out[n] = '\0';
}

static nvtxDomainHandle_t NVTX_API h_domain_create_w(const wchar_t *name)
{
    char a[256];
    nv_narrow(name, a, sizeof a);
    return h_domain_create(a);
}

static nvtxStringHandle_t NVTX_API h_register_w(nvtxDomainHandle_t h, const wchar_t *str)
{
    char a[256];
    nv_narrow(str, a, sizeof a);
    return str ? h_register_a(h, a) : NULL;
}

/* CUPTI only knows the domain handles it made: one it did not make (a
 * client passing its own) is logged to the truth as "badhandle" and
 * treated as the default domain, so a test can see it never happens. */
static const sim_nvtx_domain *nv_dom_check(nvtxDomainHandle_t h)
{
    uintptr_t p = (uintptr_t)h, b = (uintptr_t)nv_domains;
    if (!h || (p >= b && p < b + sizeof nv_domains))
        return (const sim_nvtx_domain *)h;
    nv_record("badhandle", 0, 0, NULL, NULL);
    return NULL;
}

static int NVTX_API h_dpush(nvtxDomainHandle_t h, const nvtxEventAttributes_t *a)
{
    return nv_push(nv_msg(a), nv_dom_check(h), a);
}
static int NVTX_API h_dpop(nvtxDomainHandle_t h) { return nv_pop(nv_dom_check(h)); }
static nvtxRangeId_t NVTX_API h_dstart(nvtxDomainHandle_t h, const nvtxEventAttributes_t *a)
{
    return nv_start(nv_msg(a), nv_dom_check(h), false, CUPTI_ACTIVITY_FLAG_MARKER_START);
}
static void NVTX_API h_dend(nvtxDomainHandle_t h, nvtxRangeId_t id)
{
    nv_end((uint32_t)id, nv_dom_check(h));
}
static void NVTX_API h_dmark(nvtxDomainHandle_t h, const nvtxEventAttributes_t *a)
{
    (void)nv_start(nv_msg(a), nv_dom_check(h), false,
                   CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS);
}

#define SET(tab, size, idx, fn)                                                                  \
    do {                                                                                         \
        if ((idx) < (size) && (tab)[idx])                                                        \
            *(tab)[idx] = (NvtxFunctionPointer)(fn);                                             \
    } while (0)

/* Not in CUPTI's headers: libcupti.so.13 exports it, and its own
 * InitializeInjectionNvtx2(getExportTable) returns
 * cuptiNvtxInitialize2(getExportTable) == CUPTI_SUCCESS. */
SIM_EXPORT CUptiResult cuptiNvtxInitialize2(NvtxGetExportTableFunc_t get);
SIM_EXPORT CUptiResult cuptiNvtxInitialize2(NvtxGetExportTableFunc_t get)
{
    sim_init();
    sim_call(SIM_C_NvtxInitialize2);
    if (!get)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (sim.cfg.nvtx_init_ms)   /* fault: a slow hand-over (nvtx_init_slow) */
        sim_sleep_ms(sim.cfg.nvtx_init_ms);
    const NvtxExportTableCallbacks *cb = (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable)
        return CUPTI_ERROR_NOT_INITIALIZED;
    NvtxFunctionTable t = NULL;
    unsigned n = 0;
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) && t) {
        SET(t, n, NVTX_CBID_CORE_MarkEx, h_mark_ex);
        SET(t, n, NVTX_CBID_CORE_MarkA, h_mark_a);
        SET(t, n, NVTX_CBID_CORE_RangeStartEx, h_start_ex);
        SET(t, n, NVTX_CBID_CORE_RangeStartA, h_start_a);
        SET(t, n, NVTX_CBID_CORE_RangeEnd, h_end);
        SET(t, n, NVTX_CBID_CORE_RangePushEx, h_push_ex);
        SET(t, n, NVTX_CBID_CORE_RangePushA, h_push_a);
        SET(t, n, NVTX_CBID_CORE_RangePop, h_pop);
    }
    t = NULL;
    n = 0;
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n) && t) {
        SET(t, n, NVTX_CBID_CORE2_DomainMarkEx, h_dmark);
        SET(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, h_dstart);
        SET(t, n, NVTX_CBID_CORE2_DomainRangeEnd, h_dend);
        SET(t, n, NVTX_CBID_CORE2_DomainRangePushEx, h_dpush);
        SET(t, n, NVTX_CBID_CORE2_DomainRangePop, h_dpop);
        SET(t, n, NVTX_CBID_CORE2_DomainCreateA, h_domain_create);
        SET(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, h_register_a);
        SET(t, n, NVTX_CBID_CORE2_DomainCreateW, h_domain_create_w);
        SET(t, n, NVTX_CBID_CORE2_DomainRegisterStringW, h_register_w);
    }
    atomic_store(&nv_in, true);
    return CUPTI_SUCCESS;
}
