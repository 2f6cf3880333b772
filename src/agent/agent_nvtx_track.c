/*
 * agent_nvtx_track.c - the agent's own view of NVTX push/pop, per thread
 * (agent_nvtx_track.h says who calls what): the capture range
 * nvtx:NAME[@DOMAIN] entered and left by the push and pop that match it,
 * and the ranges CUPTI never saw open, made by the agent when they close.
 * agent_nvtx.c's wrappers call it; it knows nothing of NVTX's tables.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent_int.h"
#include "agent_nvtx_track.h"

/* The capture range nvtx:NAME[@DOMAIN] (written once, before any wrapper
 * is installed: agent_nvtx_track_config). */
static bool nv_wrap;                 /* capture nvtx:... in this process  */
static char nv_name[256];
static size_t nv_name_len;
static bool nv_dom_filter;           /* @DOMAIN given ("@": the default)  */
static char nv_domain[256];

/* Per thread and domain (up to 4 domains), the open pushes: which matched
 * the capture range, and which CUPTI never saw (pushed before its
 * handlers were installed: before CUDA, before an attach, while dormant)
 * with their name and start, kept for the first NV_KEEP levels. */
#define NV_DOMS 4
#define NV_KEEP 16
#define NV_NAME 64
static _Thread_local struct {
    const void *dom[NV_DOMS];
    uint32_t depth[NV_DOMS];
    uint64_t match[NV_DOMS];   /* bit d: the push at depth d matched      */
    uint64_t unseen[NV_DOMS];  /* bit d: ... went to no CUPTI handler     */
    uint16_t keep[NV_DOMS][NV_KEEP];   /* its nv_kept slot + 1; 0: none   */
} nv_tls;   /* small: the agent's TLS lives in glibc's static surplus     */

/* The name and start of pushes CUPTI never saw (only before it is
 * attached: rare), in one table for every thread, under nv_kept_lock. */
#define NV_KEPT 1024
static struct {
    uint64_t start;
    char name[NV_NAME];
    bool used;
} nv_kept[NV_KEPT];
static pthread_mutex_t nv_kept_lock = PTHREAD_MUTEX_INITIALIZER;

/* Ranges CUPTI never saw open, closed since CUPTI's handlers are in: the
 * agent makes them itself (agent_nvtx_take, the consumer stores them). */
#define NV_RING 256
static agent_nvtx_range nv_ring[NV_RING];
static unsigned nv_ring_n;
static pthread_mutex_t nv_ring_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic unsigned long nv_ring_lost;   /* the ring was full            */
static _Atomic long nv_unseen_open;          /* pushes CUPTI never saw, open */
static _Atomic unsigned long nv_unbalanced;  /* pops with no push open       */
static _Atomic uint32_t nv_range_seq;        /* ids of the agent's ranges    */
static char nv_unseen_first[NV_NAME];        /* the first such push's name   */
static _Atomic int nv_unseen_named;

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

void agent_nvtx_track_config(void)
{
    const char *cr = getenv("CUPTOP_CAPTURE_RANGE");
    if (cr && !strncmp(cr, "nvtx:", 5) &&
        agent_config_nvtx_range(cr + 5, nv_name, nv_domain, &nv_dom_filter) == 0) {
        nv_name_len = strlen(nv_name);
        nv_wrap = true;
    }
}

bool agent_nvtx_track_capturing(void)
{
    return nv_wrap;
}

bool agent_nvtx_track_match(const char *m, const void *dom, const char *dom_name)
{
    if (!nv_wrap || !m || strncmp(m, nv_name, nv_name_len + 1) != 0)
        return false;
    if (!nv_dom_filter)
        return true;
    return dom ? dom_name && !strcmp(dom_name, nv_domain) : !nv_domain[0];
}

void agent_nvtx_track_pushed(const void *dom, bool match, bool unseen, const char *name)
{
    int s = nv_slot(dom);
    if (s < 0)
        return;
    uint32_t d = nv_tls.depth[s]++;
    if (d >= 64)
        return;
    if (match)
        nv_tls.match[s] |= 1ull << d;
    else
        nv_tls.match[s] &= ~(1ull << d);
    if (!unseen) {
        nv_tls.unseen[s] &= ~(1ull << d);
        return;
    }
    nv_tls.unseen[s] |= 1ull << d;
    atomic_fetch_add_explicit(&nv_unseen_open, 1, memory_order_relaxed);
    if (!name)
        name = "";
    if (!atomic_exchange_explicit(&nv_unseen_named, 1, memory_order_relaxed))
        snprintf(nv_unseen_first, sizeof nv_unseen_first, "%s", name);
    if (d >= NV_KEEP)
        return;
    nv_tls.keep[s][d] = 0;
    pthread_mutex_lock(&nv_kept_lock);
    for (unsigned k = 0; k < NV_KEPT; k++)
        if (!nv_kept[k].used) {
            nv_kept[k].used = true;
            nv_kept[k].start = agent_real_ns();
            snprintf(nv_kept[k].name, NV_NAME, "%s", name);
            nv_tls.keep[s][d] = (uint16_t)(k + 1);
            break;
        }
    pthread_mutex_unlock(&nv_kept_lock);
}

bool agent_nvtx_track_popped(const void *dom, bool *match, uint32_t *d)
{
    int s = nv_slot(dom);
    *match = false;
    if (s < 0)
        return false;
    if (nv_tls.depth[s] == 0) {
        atomic_fetch_add_explicit(&nv_unbalanced, 1, memory_order_relaxed);
        return false;
    }
    *d = --nv_tls.depth[s];
    if (*d >= 64)
        return false;
    *match = nv_tls.match[s] >> *d & 1;
    if (!(nv_tls.unseen[s] >> *d & 1))
        return false;
    nv_tls.unseen[s] &= ~(1ull << *d);
    atomic_fetch_sub_explicit(&nv_unseen_open, 1, memory_order_relaxed);
    return true;
}

/* A range CUPTI never saw open closes now: while the marker kind is on
 * (the session is in scope), the agent makes it itself from what its push
 * kept - a range whose start the agent saw.  CUPTI's handlers need not be
 * in yet: a thread can push and pop through our wrapper while another
 * thread's first NVTX call is still handing the table to CUPTI, inside the
 * session (found by the truth matrix, 29.11: such ranges were lost). */
void agent_nvtx_track_closed(const void *dom, const char *dom_name, uint32_t d)
{
    agent *a = &agent_g;
    int s = nv_slot(dom);
    agent_nvtx_range r = {.end_ns = agent_real_ns(), .tid = (uint32_t)syscall(SYS_gettid),
                          .depth = d};
    unsigned k = s >= 0 && d < NV_KEEP ? nv_tls.keep[s][d] : 0;
    if (k) {   /* what its push kept, given back */
        nv_tls.keep[s][d] = 0;
        pthread_mutex_lock(&nv_kept_lock);
        r.start_ns = nv_kept[k - 1].start;
        memcpy(r.name, nv_kept[k - 1].name, sizeof r.name);
        nv_kept[k - 1].used = false;
        pthread_mutex_unlock(&nv_kept_lock);
    }
    if (s < 0 || atomic_load_explicit(&a->state, memory_order_acquire) !=
        AGENT_RUNNING || !((uint32_t)atomic_load(&a->kinds) & (1u << CUPSTORE_KIND_MARKER)))
        return;
    if (!k) {   /* too deep, or the table was full: the agent keeps no name */
        atomic_fetch_add_explicit(&nv_ring_lost, 1, memory_order_relaxed);
        return;
    }
    if (dom_name)
        snprintf(r.domain, sizeof r.domain, "%s", dom_name);
    r.id = UINT32_MAX - atomic_fetch_add_explicit(&nv_range_seq, 1, memory_order_relaxed);
    pthread_mutex_lock(&nv_ring_lock);
    if (nv_ring_n < NV_RING)
        nv_ring[nv_ring_n++] = r;
    else
        atomic_fetch_add_explicit(&nv_ring_lost, 1, memory_order_relaxed);
    pthread_mutex_unlock(&nv_ring_lock);
}

size_t agent_nvtx_take(agent_nvtx_range *out, size_t max)
{
    pthread_mutex_lock(&nv_ring_lock);
    size_t n = nv_ring_n < max ? nv_ring_n : max;
    memcpy(out, nv_ring, n * sizeof *out);
    memmove(nv_ring, nv_ring + n, (nv_ring_n - n) * sizeof *nv_ring);
    nv_ring_n -= (unsigned)n;
    pthread_mutex_unlock(&nv_ring_lock);
    return n;
}

void agent_nvtx_unseen(long *open, unsigned long *unbalanced, unsigned long *lost, char *first,
                       size_t len)
{
    *open = atomic_load_explicit(&nv_unseen_open, memory_order_relaxed);
    *unbalanced = atomic_load_explicit(&nv_unbalanced, memory_order_relaxed);
    *lost = atomic_load_explicit(&nv_ring_lost, memory_order_relaxed);
    snprintf(first, len, "%s", atomic_load(&nv_unseen_named) ? nv_unseen_first : "");
}
