/*
 * agent_ranges.c - pair MARKER records into range rows (agent_ranges.h).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent_ranges.h"

int agent_ranges_init(agent_ranges *r, uint32_t cap)
{
    memset(r, 0, sizeof *r);
    r->pend = malloc((size_t)cap * sizeof *r->pend);
    r->stacks = calloc(AGENT_RANGE_THREADS, sizeof *r->stacks);
    if (!r->pend || !r->stacks) {
        agent_ranges_free(r);
        return ENOMEM;
    }
    r->cap = cap;
    return 0;
}

void agent_ranges_free(agent_ranges *r)
{
    free(r->pend);
    free(r->stacks);
    memset(r, 0, sizeof *r);
}

/* The stack of thread tid (created when create); NULL when the table is
 * full or the thread has none. */
static agent_range_stack *stack_of(agent_ranges *r, uint32_t tid, bool create)
{
    uint32_t key = tid ? tid : 0xffffffffu;
    size_t h = (key * 2654435761u) % AGENT_RANGE_THREADS;
    for (size_t i = 0; i < AGENT_RANGE_THREADS; i++) {
        agent_range_stack *s = &r->stacks[(h + i) % AGENT_RANGE_THREADS];
        if (s->tid == key)
            return s;
        if (s->tid == 0) {
            if (!create)
                return NULL;
            s->tid = key;
            return s;
        }
    }
    return NULL;
}

/* Remove id from s (wherever it is: an end may close a range that is not
 * the innermost).  true when found. */
static bool stack_remove(agent_range_stack *s, uint32_t id)
{
    uint32_t kept = s->n < AGENT_RANGE_DEPTH ? s->n : AGENT_RANGE_DEPTH;
    for (uint32_t i = kept; i-- > 0;)
        if (s->ids[i] == id) {
            memmove(&s->ids[i], &s->ids[i + 1], (kept - i - 1) * sizeof s->ids[0]);
            s->n--;
            return true;
        }
    return false;
}

bool agent_ranges_add(agent_ranges *r, const CUpti_ActivityMarker2 *m, const cupstore_record *rec,
                      uint32_t name_id, uint32_t domain_id)
{
    if (r->n >= r->cap || m->id == 0)
        return false;
    r->seen++;
    cupstore_range *o = &r->pend[r->n++];
    memset(o, 0, sizeof *o);
    o->id = m->id;
    uint32_t fl = (uint32_t)m->flags;
    if (fl & CUPTI_ACTIVITY_FLAG_MARKER_END) {
        o->end_ns = m->timestamp;
        o->end_tid = rec->tid;
        o->flags = CUPSTORE_RANGE_END;
        agent_range_stack *s = stack_of(r, rec->tid, false);
        bool found = s && stack_remove(s, m->id);
        for (size_t i = 0; !found && i < AGENT_RANGE_THREADS; i++)
            if (r->stacks[i].tid && r->stacks[i].n)
                found = stack_remove(&r->stacks[i], m->id);
        if (!found)
            r->unbalanced++;
        return true;
    }
    o->name_id = name_id;
    o->domain_id = domain_id;
    o->pid = rec->pid;
    o->tid = rec->tid;
    o->start_ns = m->timestamp;
    o->flags = CUPSTORE_RANGE_START;
    agent_range_stack *s = stack_of(r, rec->tid, true);
    o->depth = s ? s->n : 0;
    if (fl & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
        o->flags |= CUPSTORE_RANGE_END | CUPSTORE_RANGE_POINT;
        o->end_ns = m->timestamp;
    } else if (s) {
        if (s->n < AGENT_RANGE_DEPTH)
            s->ids[s->n] = m->id;
        s->n++;
    }
    return true;
}

bool agent_ranges_add_whole(agent_ranges *r, uint32_t id, uint32_t pid, uint32_t tid,
                            uint32_t depth, uint64_t start_ns, uint64_t end_ns,
                            uint32_t name_id, uint32_t domain_id)
{
    if (r->n >= r->cap || id == 0)
        return false;
    cupstore_range *o = &r->pend[r->n++];
    memset(o, 0, sizeof *o);
    o->id = id;
    o->name_id = name_id;
    o->domain_id = domain_id;
    o->pid = pid;
    o->tid = tid;
    o->depth = depth;
    o->start_ns = start_ns;
    o->end_ns = end_ns;
    o->flags = CUPSTORE_RANGE_START | CUPSTORE_RANGE_END | CUPSTORE_RANGE_AGENT;
    return true;
}

bool agent_ranges_add_data(agent_ranges *r, const CUpti_ActivityMarkerData2 *m)
{
    if (r->n >= r->cap || m->id == 0)
        return false;
    cupstore_range *o = &r->pend[r->n++];
    memset(o, 0, sizeof *o);
    o->id = m->id;
    if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB) {
        o->color = m->color;
        o->flags |= CUPSTORE_RANGE_COLOR;
    }
    o->category = m->category;
    if (m->payload.metricValueUint64) {   /* NVTX gives no "none" kind: 0 is none */
        o->payload_kind = (uint32_t)m->payloadKind + 1;
        o->payload = m->payload.metricValueUint64;
        o->flags |= CUPSTORE_RANGE_PAYLOAD;
    }
    return true;
}

int agent_ranges_put(cupstore_txn *txn, const agent_ranges *r)
{
    int rc = 0;
    for (uint32_t i = 0; i < r->n && rc == 0; i++)
        rc = cupstore_range_merge(txn, &r->pend[i], NULL);
    return rc;
}
