/*
 * agent_graphs.c - the instantiated CUDA graphs the launch ledger knows
 * (see agent_graphs.h).
 */
#include "config.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "agent_graphs.h"
#include "agent_int.h"

#define GONE ((uintptr_t)1)   /* a destroyed exec's entry: probes go on  */
#define MASK ((uintptr_t)AGENT_GRAPHS_MAX - 1)

/* Where an exec's probe starts. */
static uintptr_t exec_hash(uintptr_t exec)
{
    return (exec >> 4) * UINT64_C(0x9e3779b97f4a7c15) >> 20;
}

/* The leading parameters every instantiate and update variant shares. */
typedef struct {
    CUgraphExec *phGraphExec;
    CUgraph hGraph;
} instantiate_head;
typedef struct {
    CUgraphExec hGraphExec;
    CUgraph hGraph;
} update_head;

static const CUpti_CallbackId graph_cbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate,
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2,
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams,
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate,
    CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2,
    CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled,
    CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy,
};

const CUpti_CallbackId *agent_graphs_cbids(unsigned *n)
{
    *n = (unsigned)(sizeof graph_cbids / sizeof *graph_cbids);
    return graph_cbids;
}

void agent_graphs_reset(agent_graphs_state *g)
{
    pthread_mutex_lock(&g->lock);
    agent_graph_exec *tab = atomic_load(&g->tab);
    for (size_t i = 0; tab && i < AGENT_GRAPHS_MAX; i++) {
        atomic_store(&tab[i].exec, 0);
        atomic_store(&tab[i].counts, 0);
    }
    atomic_store(&g->known, 0);
    atomic_store(&g->unknowable, 0);
    atomic_store(&g->untracked, 0);
    atomic_store(&g->launches_unknown, 0);
    pthread_mutex_unlock(&g->lock);
}

void *agent_driver_fn(agent *a, const char *name)
{
    void *f = dlsym(RTLD_DEFAULT, name);
    if (!f) {
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (h) {
            f = dlsym(h, name);
            dlclose(h);
        }
    }
    if (!f && a->cupti.handle)
        f = dlsym(a->cupti.handle, name);
    return f;
}

static void find_queries(agent *a, agent_graphs_state *g)
{
    if (g->tried)
        return;
    g->tried = true;
    *(void **)&g->get_nodes = agent_driver_fn(a, "cuGraphGetNodes");
    *(void **)&g->node_type = agent_driver_fn(a, "cuGraphNodeGetType");
    *(void **)&g->child_graph = agent_driver_fn(a, "cuGraphChildGraphNodeGetGraph");
}

static uint64_t pack(const uint32_t n[3])
{
    for (int k = 0; k < 3; k++)
        if (n[k] > UINT16_MAX)
            return AGENT_GRAPHS_UNKNOWABLE;
    return (uint64_t)n[0] | (uint64_t)n[1] << 16 | (uint64_t)n[2] << 32;
}

/* Add the records one launch of `graph` makes to n[kernel, memcpy,
 * memset].  -1: not countable. */
static int count_graph(agent_graphs_state *g, CUgraph graph, uint32_t n[3], int depth)
{
    size_t cnt = 0;
    if (depth > AGENT_GRAPHS_DEPTH || g->get_nodes(graph, NULL, &cnt) != CUDA_SUCCESS)
        return -1;
    if (!cnt)
        return 0;
    void **nodes = malloc(cnt * sizeof *nodes);
    if (!nodes)
        return -1;
    int rc = g->get_nodes(graph, nodes, &cnt) == CUDA_SUCCESS ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < cnt; i++) {
        int type = -1;
        void *child = NULL;
        if (g->node_type(nodes[i], &type) != CUDA_SUCCESS) {
            rc = -1;
            break;
        }
        switch (type) {
        case CU_GRAPH_NODE_TYPE_KERNEL: n[0]++; break;
        case CU_GRAPH_NODE_TYPE_MEMCPY: n[1]++; break;
        case CU_GRAPH_NODE_TYPE_MEMSET: n[2]++; break;
        case CU_GRAPH_NODE_TYPE_GRAPH:
            if (!g->child_graph || g->child_graph(nodes[i], &child) != CUDA_SUCCESS || !child)
                rc = -1;
            else
                rc = count_graph(g, (CUgraph)child, n, depth + 1);
            break;
        case CU_GRAPH_NODE_TYPE_HOST:
        case CU_GRAPH_NODE_TYPE_EMPTY:
        case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
        case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
        case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
        case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        case CU_GRAPH_NODE_TYPE_MEM_FREE:
        case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
            break;   /* no kernel, memcpy or memset record */
        default:
            rc = -1;   /* conditional, or a type newer than this agent */
        }
    }
    free(nodes);
    return rc;
}

static uint64_t counts_of(agent_graphs_state *g, CUgraph graph)
{
    uint32_t n[3] = {0, 0, 0};
    if (!g->get_nodes || !g->node_type || count_graph(g, graph, n, 0) != 0)
        return AGENT_GRAPHS_UNKNOWABLE;
    return pack(n);
}

/* The entry of exec, or (insert) the first free one on its probe; NULL
 * when absent (or the table is full).  The caller holds the lock. */
static agent_graph_exec *slot_of(agent_graphs_state *g, uintptr_t exec, bool insert)
{
    agent_graph_exec *spare = NULL, *tab = atomic_load_explicit(&g->tab, memory_order_relaxed);
    uintptr_t h = exec_hash(exec);
    for (uintptr_t i = 0; i <= MASK; i++) {
        agent_graph_exec *e = &tab[(h + i) & MASK];
        uintptr_t k = atomic_load_explicit(&e->exec, memory_order_relaxed);
        if (k == exec)
            return e;
        if (k == GONE && !spare)
            spare = e;
        if (k == 0) {
            if (!spare)
                spare = e;
            break;
        }
    }
    return insert ? spare : NULL;
}

static void put(agent_graphs_state *g, uintptr_t exec, uint64_t counts)
{
    agent_graph_exec *e = slot_of(g, exec, true);
    if (!e) {
        atomic_fetch_add(&g->untracked, 1);
        return;
    }
    atomic_store_explicit(&e->counts, counts, memory_order_relaxed);
    atomic_store_explicit(&e->exec, exec, memory_order_release);
    atomic_fetch_add(counts & AGENT_GRAPHS_UNKNOWABLE ? &g->unknowable : &g->known, 1);
}

void agent_graphs_api(agent *a, CUpti_CallbackId cbid, const CUpti_CallbackData *cd)
{
    agent_graphs_state *g = &a->launches.graphs;
    const CUresult *ret = cd->functionReturnValue;
    if (cd->callbackSite != CUPTI_API_EXIT || !cd->functionParams || (ret && *ret != CUDA_SUCCESS))
        return;
    pthread_mutex_lock(&g->lock);
    if (!atomic_load(&g->tab)) {
        agent_graph_exec *tab = calloc(AGENT_GRAPHS_MAX, sizeof *tab);
        if (!tab) {
            atomic_fetch_add(&g->untracked, 1);
            pthread_mutex_unlock(&g->lock);
            return;
        }
        atomic_store_explicit(&g->tab, tab, memory_order_release);
    }
    find_queries(a, g);
    switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy: {
        const cuGraphExecDestroy_params *p = cd->functionParams;
        agent_graph_exec *e = slot_of(g, (uintptr_t)p->hGraphExec, false);
        if (e)
            atomic_store_explicit(&e->exec, GONE, memory_order_release);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled: {
        const cuGraphNodeSetEnabled_params *p = cd->functionParams;
        agent_graph_exec *e = slot_of(g, (uintptr_t)p->hGraphExec, false);
        if (e && !(atomic_load(&e->counts) & AGENT_GRAPHS_UNKNOWABLE)) {
            atomic_store(&e->counts, AGENT_GRAPHS_UNKNOWABLE);
            atomic_fetch_add(&g->unknowable, 1);
        }
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2: {
        const update_head *p = cd->functionParams;
        if (p->hGraphExec)
            put(g, (uintptr_t)p->hGraphExec, counts_of(g, p->hGraph));
        break;
    }
    default: {   /* the instantiate calls */
        const instantiate_head *p = cd->functionParams;
        unsigned long long flags = 0;
        if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags)
            flags = ((const cuGraphInstantiateWithFlags_params *)cd->functionParams)->flags;
        else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams ||
                 cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz) {
            const CUDA_GRAPH_INSTANTIATE_PARAMS *ip =
                ((const cuGraphInstantiateWithParams_params *)cd->functionParams)->instantiateParams;
            flags = ip ? ip->flags : 0;
        }
        if (!p->phGraphExec || !*p->phGraphExec)
            break;
        /* a graph that may be launched from the device makes records no
         * host call announces */
        put(g, (uintptr_t)*p->phGraphExec,
            flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH ? AGENT_GRAPHS_UNKNOWABLE
                                                              : counts_of(g, p->hGraph));
    }
    }
    pthread_mutex_unlock(&g->lock);
}

bool agent_graphs_lookup(agent_graphs_state *g, const void *exec,
                         uint16_t expect[AGENT_LEDGER_KINDS])
{
    agent_graph_exec *tab = atomic_load_explicit(&g->tab, memory_order_acquire);
    if (!tab || !exec)
        return false;
    uintptr_t key = (uintptr_t)exec;
    uintptr_t h = exec_hash(key);
    for (uintptr_t i = 0; i <= MASK; i++) {
        agent_graph_exec *e = &tab[(h + i) & MASK];
        uintptr_t k = atomic_load_explicit(&e->exec, memory_order_acquire);
        if (k == 0)
            return false;
        if (k != key)
            continue;
        uint64_t c = atomic_load_explicit(&e->counts, memory_order_relaxed);
        if (c & AGENT_GRAPHS_UNKNOWABLE)
            return false;
        expect[AGENT_LEDGER_KERNEL] = (uint16_t)c;
        expect[AGENT_LEDGER_MEMCPY] = (uint16_t)(c >> 16);
        expect[AGENT_LEDGER_MEMSET] = (uint16_t)(c >> 32);
        return true;
    }
    return false;
}
