/*
 * agent_holes.c - the launch ledger's holes (agent_launches.h): each launch
 * with records missing added to its stream's hole and kept as a `lost`
 * row (the trace's markers), and a late record taken back from both.
 * Called from the consumer thread (launches pushed out of the ledger's
 * window, and their late records) and from the stop thread once the
 * consumer has stopped (the final sweep, the rows stored).
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent_launches.h"

/* The `lost` rows by correlation id (a late record finds its launch's
 * row): open addressing with linear probing, twice as many slots as rows. */
#define ROW_SLOTS (2u * CUPSTORE_LOST_MAX)

static agent_row_slot *row_slot_of(agent_launches_state *s, uint32_t corr, bool for_insert)
{
    for (uint32_t i = (corr * 2654435761u) & (ROW_SLOTS - 1);; i = (i + 1) & (ROW_SLOTS - 1)) {
        agent_row_slot *e = &s->row_of[i];
        if (!e->row1)
            return for_insert ? e : NULL;
        if (e->corr == corr && !for_insert)
            return e;
    }
}

/* Remove slot e, shifting back the entries after it that probed past it
 * (linear probing's deletion: no tombstones). */
static void row_slot_del(agent_launches_state *s, agent_row_slot *e)
{
    uint32_t i = (uint32_t)(e - s->row_of), j = i;
    for (;;) {
        s->row_of[i].row1 = 0;
        for (;;) {
            j = (j + 1) & (ROW_SLOTS - 1);
            if (!s->row_of[j].row1)
                return;
            uint32_t home = (s->row_of[j].corr * 2654435761u) & (ROW_SLOTS - 1);
            /* j's entry may fill i when its home is not in (i, j] */
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break;
        }
        s->row_of[i] = s->row_of[j];
        i = j;
    }
}

/* Drop row r (nothing missing any more): the last row takes its place. */
static void row_drop(agent_launches_state *s, agent_row_slot *e)
{
    uint32_t r = e->row1 - 1;
    row_slot_del(s, e);
    if (r != --s->nlost) {
        s->lost[r] = s->lost[s->nlost];
        s->lost_name[r] = s->lost_name[s->nlost];
        agent_row_slot *m = row_slot_of(s, s->lost[r].corr, false);
        if (m)
            m->row1 = r + 1;
    }
}

static agent_launch_hole *hole_find(agent_launches_state *s, uint16_t device, uint32_t stream)
{
    for (unsigned i = 0; i < s->nholes; i++)
        if (s->hole[i].device == device && s->hole[i].stream == stream)
            return &s->hole[i];
    return NULL;
}

/* A record of a launch already made a hole (pushed out of the window,
 * live) came after all: one record less missing on its stream, and in its
 * `lost` row (searched from the newest: such a record is late by about a
 * window's worth of launches).  The record says its device and stream, the
 * launch's own. */
void agent_holes_take_back(agent_launches_state *s, const cupstore_record *r, agent_ledger_kind k)
{
    unsigned d = r->device < CUPSTORE_DEVICE_MAX ? r->device : CUPSTORE_DEVICE_MAX;
    agent_launch_hole *h = hole_find(s, r->device, r->stream);
    if (!h && s->other.missing[k])
        h = &s->other;
    if (h && h->missing[k])
        h->missing[k]--;
    if (s->missing[d][k])
        s->missing[d][k]--;
    agent_row_slot *e = s->row_of ? row_slot_of(s, r->correlation, false) : NULL;
    bool back = true;   /* the launch has nothing missing any more */
    bool named = false;
    if (e) {
        cupstore_lost *l = &s->lost[e->row1 - 1];
        if (l->missing[k])
            l->missing[k]--;
        for (unsigned i = 0; i < AGENT_LEDGER_KINDS; i++)
            back = back && !l->missing[i];
        named = s->lost_name[e->row1 - 1] != 0;
        if (back)
            row_drop(s, e);
    } else if (s->lost_unkept) {
        s->lost_unkept--;   /* a launch made a hole when the rows were full
                             * (one record each: graphs are not evicted) */
    }
    if (back && h && h->launches)
        h->launches--;
    if (back && named && h && h->named)
        h->named--;
}

void agent_holes_clear(agent_launches_state *s)
{
    free(s->lost);
    free(s->row_of);
    free(s->lost_name);
    s->lost = NULL;
    s->row_of = NULL;
    s->lost_name = NULL;
    s->lost_tried = false;
    s->nlost = 0;
    s->lost_unkept = 0;
}

/* Sweep and eviction callback: one launch with records missing -> its
 * stream's hole, and its row. */
void agent_holes_add(const agent_launch *in, const uint32_t missing[AGENT_LEDGER_KINDS], void *arg)
{
    agent_launches_state *s = arg;
    unsigned d = in->device < CUPSTORE_DEVICE_MAX ? in->device : CUPSTORE_DEVICE_MAX;
    agent_launch_hole *h = NULL;
    for (unsigned i = 0; i < s->nholes && !h; i++)
        if (s->hole[i].device == in->device && s->hole[i].stream == in->stream)
            h = &s->hole[i];
    if (!h && s->nholes < AGENT_LAUNCH_STREAMS) {
        h = &s->hole[s->nholes++];
        h->device = in->device;
        h->stream = in->stream;
    }
    if (!h)
        h = &s->other;
    for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++) {
        h->missing[k] += missing[k];
        s->missing[d][k] += missing[k];
    }
    if (!s->lost && !s->lost_tried) {
        /* the launches for the trace's holes, at the first one (an
         * eviction, live, or the final sweep); without the memory, counts
         * only */
        s->lost_tried = true;
        s->lost = malloc(CUPSTORE_LOST_MAX * sizeof *s->lost);
        s->row_of = calloc(ROW_SLOTS, sizeof *s->row_of);
        s->lost_name = calloc(CUPSTORE_LOST_MAX, sizeof *s->lost_name);
        if (!s->row_of || !s->lost_name) {
            free(s->lost);
            free(s->row_of);
            free(s->lost_name);
            s->lost = NULL;
            s->row_of = NULL;
            s->lost_name = NULL;
        }
    }
    if (!h->first_ns || in->launch_ns < h->first_ns)
        h->first_ns = in->launch_ns;
    if (in->launch_ns > h->last_ns)
        h->last_ns = in->launch_ns;
    h->tid = in->tid;
    h->launches++;
    h->named += in->name_id != 0;
    if (s->lost && s->nlost < CUPSTORE_LOST_MAX) {
        agent_row_slot *e = row_slot_of(s, in->corr, true);
        *e = (agent_row_slot){.corr = in->corr, .row1 = s->nlost + 1};
        s->lost_name[s->nlost] = in->name_id;
        cupstore_lost *l = &s->lost[s->nlost++];
        *l = (cupstore_lost){.launch_ns = in->launch_ns, .corr = in->corr, .device = in->device,
                             .stream = in->stream, .tid = in->tid};
        for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++)
            l->missing[k] = missing[k];
    } else {
        s->lost_unkept++;
    }
}
