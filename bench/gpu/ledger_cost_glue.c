/*
 * ledger_cost_glue.c - the real launch ledger (src/agent/agent_ledger.c)
 * behind a plain C interface for ledger_cost.cu (C++ has no C11 _Atomic).
 */
#include <string.h>

#include "agent_ledger.h"

static agent_ledger ledger;
static uint64_t missing_total;

int lc_init(void)
{
    return agent_ledger_init(&ledger, AGENT_LEDGER_BITS_DEFAULT);
}

void lc_launch(uint32_t corr, uint32_t stream, uint64_t ns, uint32_t tid)
{
    agent_launch in;
    memset(&in, 0, sizeof in);
    in.corr = corr;
    in.stream = stream;
    in.launch_ns = ns;
    in.tid = tid;
    in.expect[AGENT_LEDGER_KERNEL] = 1;
    (void)agent_ledger_launch(&ledger, &in);
}

void lc_cancel(uint32_t corr)
{
    agent_ledger_cancel(&ledger, corr);
}

void lc_arrive(uint32_t corr)
{
    (void)agent_ledger_arrive(&ledger, corr, AGENT_LEDGER_KERNEL);
}

static void count_lost(const agent_launch *in, const uint32_t m[AGENT_LEDGER_KINDS], void *arg)
{
    (void)in;
    (void)arg;
    for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++)
        missing_total += m[k];
}

/* The final sweep: records still missing (0 when every record came). */
unsigned long long lc_final(void)
{
    agent_ledger_sweep(&ledger, UINT64_MAX, UINT64_MAX, count_lost, NULL, NULL);
    return (unsigned long long)missing_total;
}
