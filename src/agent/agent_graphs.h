/*
 * agent_graphs.h - the instantiated CUDA graphs the launch ledger knows:
 * for each CUgraphExec, the GPU records one launch of it makes per ledger
 * kind (its kernel, memcpy and memset nodes, child graphs counted in),
 * learned at the instantiate call's exit by asking the driver for the
 * graph's nodes (issue 31: "for graph launches the kernel/copy/set nodes
 * of the instantiated graph").
 *
 * Why at instantiate: CUPTI has no per-launch node count, and the driver's
 * graph queries (cuGraphGetNodes, cuGraphNodeGetType,
 * cuGraphChildGraphNodeGetGraph) answer for a CUgraph, not an exec.  The
 * instantiate call names both; a later cuGraphExecUpdate gives the exec
 * the topology of another graph (counted again from it).  Whatever the
 * counts cannot follow makes the exec's launches unknowable (matched,
 * never called missing): a conditional node (how often its body runs is
 * decided on the GPU), a graph instantiated for device launch, a node
 * enabled or disabled in the exec (cuGraphNodeSetEnabled), more than
 * 65,535 records of a kind, nesting deeper than AGENT_GRAPHS_DEPTH, a
 * driver that does not answer.  A graph instantiated before the agent
 * attached is not known at all: its launches are unknowable too.
 *
 * Threads: agent_graphs_api from application threads (the instantiate,
 * update, enable and destroy calls: rare, under a mutex);
 * agent_graphs_lookup from launching threads (lock-free: an entry's
 * counts are one atomic word, published before its key).  Memory: a fixed
 * table of AGENT_GRAPHS_MAX execs; an exec that finds it full is not
 * known (counted `untracked`).
 *
 * The queries are driver calls made inside the instantiate's callback: a
 * session with the driver API kind on stores them as API records of the
 * application's thread (a handful per instantiate).
 */
#ifndef AGENT_GRAPHS_H
#define AGENT_GRAPHS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent_cupti.h"
#include "agent_ledger.h"

#define AGENT_GRAPHS_MAX 4096   /* execs known at once (power of two)  */
#define AGENT_GRAPHS_DEPTH 8    /* child graphs within child graphs    */

/* An exec's counts, packed into one word: kernel, memcpy and memset
 * records in 16 bits each; AGENT_GRAPHS_UNKNOWABLE: not countable. */
#define AGENT_GRAPHS_UNKNOWABLE (UINT64_C(1) << 63)

typedef struct agent_graph_exec {
    _Atomic uintptr_t exec;     /* 0: free; AGENT_GRAPHS_GONE: destroyed */
    _Atomic uint64_t counts;
} agent_graph_exec;

typedef struct agent_graphs_state {
    pthread_mutex_t lock;       /* writers (instantiate, update, destroy) */
    /* AGENT_GRAPHS_MAX entries, allocated at first use (release), never
     * freed while the process lives */
    agent_graph_exec *_Atomic tab;
    bool tried;                 /* the driver's queries were looked up   */
    int (*get_nodes)(void *graph, void **nodes, size_t *n);
    int (*node_type)(void *node, int *type);
    int (*child_graph)(void *node, void **graph);
    _Atomic uint64_t known;       /* execs counted                       */
    _Atomic uint64_t unknowable;  /* execs whose counts cannot be known  */
    _Atomic uint64_t untracked;   /* execs not kept: the table was full   */
    _Atomic uint64_t launches_unknown;   /* launches of an exec not known
                                            or unknowable                */
} agent_graphs_state;

struct agent;

/** A driver function by name: the process's libcuda (linked or loaded),
 *  else what the loaded CUPTI library offers (the simulated one does);
 *  NULL when neither has it. */
void *agent_driver_fn(struct agent *a, const char *name);
/** Empty the table for a new session (its memory kept). */
void agent_graphs_reset(agent_graphs_state *g);
/** The graph-management call ids the ledger enables beside the launches
 *  (instantiate, update, enable, destroy); *n set to their number. */
const CUpti_CallbackId *agent_graphs_cbids(unsigned *n);
/** A driver API callback of one of those ids (API exit only). */
void agent_graphs_api(struct agent *a, CUpti_CallbackId cbid, const CUpti_CallbackData *cd);
/** What one launch of exec makes per ledger kind.  false: not known, or
 *  not countable (then its launches are unknowable). */
bool agent_graphs_lookup(agent_graphs_state *g, const void *exec,
                         uint16_t expect[AGENT_LEDGER_KINDS]);

#endif
