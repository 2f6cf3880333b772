/*
 * agent_ledger.c - the launch ledger (agent_ledger.h says who calls what).
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "agent_ledger.h"

#define RLX memory_order_relaxed
#define ACQ memory_order_acquire
#define REL memory_order_release

/* A reader retries a slot being written this many times (the writer holds
 * it for a few stores), then takes it as overwritten. */
#define READ_TRIES 64
/* A consumer that must know (a record with no launch in its slot) waits
 * this many yields for a launcher in the middle of a few stores: one
 * rewriting the record's slot, or one pushing a launch out of the window
 * ahead of it in the queue. */
#define WAIT_YIELDS 100000

/* one bitmap per kind, back to back */
#define GONE_WORDS (((size_t)1 << AGENT_LEDGER_GONE_BITS) / 64 * AGENT_LEDGER_KINDS)
#define GONE_MULTI ((size_t)1 << AGENT_LEDGER_GONE_MULTI_BITS)

static unsigned evq_bits(unsigned bits)
{
    return bits < AGENT_LEDGER_EVICT_BITS ? bits : AGENT_LEDGER_EVICT_BITS;
}

/* Every cell free for its first position. */
static void evq_clear(agent_ledger *l)
{
    for (uint64_t i = 0; i <= l->evq_mask; i++)
        atomic_store_explicit(&l->evq[i].seq, i, RLX);
    atomic_store_explicit(&l->evq_head, 0, RLX);
    l->evq_tail = 0;
}

int agent_ledger_init(agent_ledger *l, unsigned bits)
{
    memset(l, 0, sizeof *l);
    if (bits < AGENT_LEDGER_BITS_MIN || bits > AGENT_LEDGER_BITS_MAX)
        return EINVAL;
    size_t n = (size_t)1 << bits, q = (size_t)1 << evq_bits(bits);
    l->slot = calloc(n, sizeof *l->slot);
    l->seen = calloc(n, sizeof *l->seen);
    l->evq = calloc(q, sizeof *l->evq);
    l->gone = calloc(GONE_WORDS, sizeof *l->gone);
    l->gone_multi = calloc(GONE_MULTI, sizeof *l->gone_multi);
    if (!l->slot || !l->seen || !l->evq || !l->gone || !l->gone_multi) {
        agent_ledger_free(l);
        return ENOMEM;
    }
    l->mask = (uint32_t)(n - 1);
    l->evq_mask = (uint32_t)(q - 1);
    evq_clear(l);
    return 0;
}

void agent_ledger_free(agent_ledger *l)
{
    free(l->slot);
    free(l->seen);
    free(l->evq);
    free(l->gone);
    free(l->gone_multi);
    l->slot = NULL;
    l->seen = NULL;
    l->evq = NULL;
    l->gone = NULL;
    l->gone_multi = NULL;
}

void agent_ledger_on_evict(agent_ledger *l, agent_ledger_lost_fn fn, void *arg)
{
    l->evict_fn = fn;
    l->evict_arg = arg;
}

void agent_ledger_reset(agent_ledger *l)
{
    if (!l->slot)
        return;
    memset(l->slot, 0, ((size_t)l->mask + 1) * sizeof *l->slot);
    memset(l->seen, 0, ((size_t)l->mask + 1) * sizeof *l->seen);
    memset(l->gone, 0, GONE_WORDS * sizeof *l->gone);
    memset(l->gone_multi, 0, GONE_MULTI * sizeof *l->gone_multi);
    evq_clear(l);
    l->evicted = l->gone_forgot = 0;
    atomic_store(&l->launches, 0);
    atomic_store(&l->cancelled, 0);
    atomic_store(&l->overrun, 0);
    atomic_store(&l->busy, 0);
    atomic_store(&l->unknowable, 0);
    for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++) {
        atomic_store(&l->expected[k], 0);
        atomic_store(&l->cancelled_expect[k], 0);
        l->matched[k] = l->extra[k] = l->late[k] = l->orphan[k] = l->lost[k] = 0;
    }
}

size_t agent_ledger_bytes(unsigned bits)
{
    return ((size_t)1 << bits) * (sizeof(agent_ledger_slot) + sizeof(agent_ledger_seen)) +
           ((size_t)1 << evq_bits(bits)) * sizeof(agent_ledger_evict_cell) +
           GONE_WORDS * sizeof(uint64_t) + GONE_MULTI * sizeof(agent_ledger_gone_multi);
}

/* ---- launches pushed out of the window ---------------------------------- */

/* A launcher, holding the slot of `in`: hand it to the consumer.  false
 * when the queue is full. */
static bool evq_push(agent_ledger *l, const agent_launch *in)
{
    uint64_t pos = atomic_load_explicit(&l->evq_head, RLX);
    for (;;) {
        agent_ledger_evict_cell *c = &l->evq[pos & l->evq_mask];
        uint64_t seq = atomic_load_explicit(&c->seq, ACQ);
        if (seq == pos) {
            if (atomic_compare_exchange_weak_explicit(&l->evq_head, &pos, pos + 1, RLX, RLX)) {
                c->launch = *in;
                atomic_store_explicit(&c->seq, pos + 1, REL);
                return true;
            }
        } else if (seq < pos) {
            return false;   /* full: the consumer has not taken this cell yet */
        } else {
            pos = atomic_load_explicit(&l->evq_head, RLX);
        }
    }
}

static bool evq_pop(agent_ledger *l, agent_launch *out)
{
    agent_ledger_evict_cell *c = &l->evq[l->evq_tail & l->evq_mask];
    if (atomic_load_explicit(&c->seq, ACQ) != l->evq_tail + 1)
        return false;
    *out = c->launch;
    atomic_store_explicit(&c->seq, l->evq_tail + l->evq_mask + 1, REL);
    l->evq_tail++;
    return true;
}

static uint64_t *gone_word(agent_ledger *l, uint32_t corr, unsigned k, uint64_t *bit)
{
    uint32_t i = corr & (((uint32_t)1 << AGENT_LEDGER_GONE_BITS) - 1);
    *bit = (uint64_t)1 << (i % 64);
    return &l->gone[((size_t)k << AGENT_LEDGER_GONE_BITS) / 64 + i / 64];
}

/* Was a record of kind k of corr declared lost at eviction?  Forgotten
 * once asked, or, for a launch pushed out with several records of the
 * kind outstanding (a graph launch's nodes), once each of them has come. */
static bool gone_take(agent_ledger *l, uint32_t corr, unsigned k)
{
    uint64_t bit, *w = gone_word(l, corr, k, &bit);
    if (!(*w & bit))
        return false;
    agent_ledger_gone_multi *m = &l->gone_multi[corr & (GONE_MULTI - 1)];
    if (m->corr == corr && m->left[k] > 1) {
        m->left[k]--;
        return true;   /* more of them may come: the bit stays */
    }
    if (m->corr == corr)
        m->left[k] = 0;
    *w &= ~bit;
    return true;
}

/* Remember a launch pushed out with several records of a kind missing. */
static void gone_multi_put(agent_ledger *l, uint32_t corr, const uint32_t missing[])
{
    agent_ledger_gone_multi *m = &l->gone_multi[corr & (GONE_MULTI - 1)];
    for (unsigned k = 0; m->corr && m->corr != corr && k < AGENT_LEDGER_KINDS; k++)
        if (m->left[k] > 1) {
            /* its later records are taken for orphans: no longer whole */
            l->gone_forgot++;
            break;
        }
    m->corr = corr;
    for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++)
        m->left[k] = missing[k] > UINT16_MAX ? UINT16_MAX : (uint16_t)missing[k];
}

/* Declare one launch pushed out of the window lost (consumer). */
static void evicted_take(agent_ledger *l, const agent_launch *in)
{
    const agent_ledger_seen *e = &l->seen[in->corr & l->mask];
    bool seen = e->corr == in->corr;
    uint32_t missing[AGENT_LEDGER_KINDS], total = 0;
    if (seen && e->lost)
        return;   /* a sweep declared it already */
    for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++) {
        uint32_t got = seen ? e->arrived[k] : 0;
        missing[k] = in->expect[k] > got ? in->expect[k] - got : 0;
        total += missing[k];
        l->lost[k] += missing[k];
    }
    if (!total)
        return;   /* its last record came while it was pushed out */
    bool multi = false;
    for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++) {
        uint64_t bit, *w = gone_word(l, in->corr, k, &bit);
        if (missing[k])
            *w |= bit;
        multi |= missing[k] > 1;
    }
    if (multi)
        gone_multi_put(l, in->corr, missing);
    l->evicted++;
    if (l->evict_fn)
        l->evict_fn(in, missing, l->evict_arg);
}

void agent_ledger_drain(agent_ledger *l)
{
    agent_launch in;
    while (l->evq && evq_pop(l, &in))
        evicted_take(l, &in);
}

/* Drain every launch pushed out so far, waiting for a launcher that has
 * taken its place in the queue but not filled it yet (a few stores): a
 * record whose launch is not in its slot may be of the launch behind it. */
static void drain_all(agent_ledger *l)
{
    agent_launch in;
    uint64_t head = atomic_load_explicit(&l->evq_head, ACQ);
    for (int i = 0; l->evq_tail < head && i < WAIT_YIELDS; i++) {
        while (evq_pop(l, &in))
            evicted_take(l, &in);
        if (l->evq_tail < head)
            sched_yield();
    }
}

/* The launch in slot s (held by this launcher: its seq is odd) still
 * expects records: out of the window, to the consumer; overwritten unseen
 * only when the queue is full. */
static void slot_evict(agent_ledger *l, agent_ledger_slot *s, uint32_t old)
{
    agent_launch out = {.corr = old};
    out.stream = atomic_load_explicit(&s->stream, RLX);
    out.tid = atomic_load_explicit(&s->tid, RLX);
    out.name_id = atomic_load_explicit(&s->name_id, RLX);
    out.device = atomic_load_explicit(&s->device, RLX);
    out.launch_ns = atomic_load_explicit(&s->launch_ns, RLX);
    for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++)
        out.expect[k] = atomic_load_explicit(&s->expect[k], RLX);
    if (!evq_push(l, &out))
        atomic_fetch_add_explicit(&l->overrun, 1, RLX);
}

bool agent_ledger_launch(agent_ledger *l, const agent_launch *in)
{
    uint32_t total = 0;
    for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++)
        total += in->expect[k];
    if (in->corr == 0 || (total == 0 && !in->unknowable))
        return true;   /* nothing to keep */
    agent_ledger_slot *s = &l->slot[in->corr & l->mask];
    uint32_t q = atomic_load_explicit(&s->seq, RLX);
    if ((q & 1) || !atomic_compare_exchange_strong_explicit(&s->seq, &q, q + 1,
                                                            memory_order_acq_rel, RLX)) {
        atomic_fetch_add_explicit(&l->busy, 1, RLX);
        return false;
    }
    uint32_t old = atomic_load_explicit(&s->corr, RLX);
    if (old && atomic_load_explicit(&s->closed, ACQ) != old &&
        !atomic_load_explicit(&s->unknowable, RLX))
        slot_evict(l, s, old);
    atomic_store_explicit(&s->corr, in->corr, RLX);
    atomic_store_explicit(&s->stream, in->stream, RLX);
    atomic_store_explicit(&s->tid, in->tid, RLX);
    atomic_store_explicit(&s->name_id, in->name_id, RLX);
    atomic_store_explicit(&s->device, in->device, RLX);
    atomic_store_explicit(&s->unknowable, in->unknowable, RLX);
    atomic_store_explicit(&s->launch_ns, in->launch_ns, RLX);
    for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++)
        atomic_store_explicit(&s->expect[k], in->expect[k], RLX);
    atomic_store_explicit(&s->seq, q + 2, REL);

    atomic_fetch_add_explicit(&l->launches, 1, RLX);
    if (in->unknowable)
        atomic_fetch_add_explicit(&l->unknowable, 1, RLX);
    else
        for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++)
            if (in->expect[k])
                atomic_fetch_add_explicit(&l->expected[k], in->expect[k], RLX);
    return true;
}

/* Read a slot's launch, never torn.  false: empty, or being rewritten. */
static bool slot_read(const agent_ledger_slot *cs, agent_launch *out)
{
    agent_ledger_slot *s = (agent_ledger_slot *)cs;
    for (int i = 0; i < READ_TRIES; i++) {
        uint32_t q1 = atomic_load_explicit(&s->seq, ACQ);
        if (q1 & 1)
            continue;
        out->corr = atomic_load_explicit(&s->corr, RLX);
        out->stream = atomic_load_explicit(&s->stream, RLX);
        out->tid = atomic_load_explicit(&s->tid, RLX);
        out->name_id = atomic_load_explicit(&s->name_id, RLX);
        out->device = atomic_load_explicit(&s->device, RLX);
        out->unknowable = atomic_load_explicit(&s->unknowable, RLX);
        out->launch_ns = atomic_load_explicit(&s->launch_ns, RLX);
        for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++)
            out->expect[k] = atomic_load_explicit(&s->expect[k], RLX);
        atomic_thread_fence(ACQ);
        if (atomic_load_explicit(&s->seq, RLX) == q1)
            return out->corr != 0;
    }
    return false;
}

void agent_ledger_cancel(agent_ledger *l, uint32_t corr)
{
    agent_ledger_slot *s = &l->slot[corr & l->mask];
    agent_launch in;
    if (!corr || !slot_read(s, &in) || in.corr != corr)
        return;   /* not kept (nothing expected, busy) or overwritten */
    if (atomic_load_explicit(&s->closed, ACQ) == corr)
        return;
    atomic_store_explicit(&s->closed, corr, REL);
    atomic_fetch_add_explicit(&l->cancelled, 1, RLX);
    if (in.unknowable)
        return;
    for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++)
        if (in.expect[k])
            atomic_fetch_add_explicit(&l->cancelled_expect[k], in.expect[k], RLX);
}

/* The consumer's counts for the launch `corr` in slot i (reset when the
 * slot now holds a launch it has not seen). */
static agent_ledger_seen *seen_for(agent_ledger *l, uint32_t corr)
{
    agent_ledger_seen *e = &l->seen[corr & l->mask];
    if (e->corr != corr) {
        /* (the sweeps: the consumer, or the stop thread after it) */
        agent_ledger_drain(l);
        memset(e, 0, sizeof *e);
        e->corr = corr;
    }
    return e;
}

static bool all_arrived(const agent_launch *in, const agent_ledger_seen *e)
{
    for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++)
        if (e->arrived[k] < in->expect[k])
            return false;
    return true;
}

agent_ledger_match agent_ledger_arrive(agent_ledger *l, uint32_t corr, agent_ledger_kind kind)
{
    agent_ledger_slot *s = &l->slot[corr & l->mask];
    agent_launch in;
    unsigned k = (unsigned)kind;
    if (k >= AGENT_LEDGER_KINDS)
        return AGENT_LEDGER_ORPHAN;
    bool got = corr && slot_read(s, &in);
    /* a launcher rewriting the slot right now may be pushing this very
     * launch out: wait for it (it holds the slot for a few stores) */
    for (int i = 0; corr && !got && i < WAIT_YIELDS && (atomic_load_explicit(&s->seq, ACQ) & 1);
         i++) {
        sched_yield();
        got = slot_read(s, &in);
    }
    if (!got || in.corr != corr) {
        drain_all(l);   /* its launch may be on its way out */
        if (corr && gone_take(l, corr, k)) {
            l->late[k]++;
            return AGENT_LEDGER_LATE;
        }
        l->orphan[k]++;
        return AGENT_LEDGER_ORPHAN;
    }
    bool was_seen = l->seen[corr & l->mask].corr == corr;
    if (!was_seen && atomic_load_explicit(&s->closed, ACQ) == corr) {
        l->extra[k]++;   /* a cancelled launch: its call failed */
        return AGENT_LEDGER_EXTRA;
    }
    agent_ledger_seen *e = &l->seen[corr & l->mask];
    if (!was_seen) {
        /* the launch whose counts these are may be on its way out of the
         * window, and so may this one since its slot was read: take them
         * in (the first while its counts are here); this one pushed out
         * with nothing arrived, its record is late */
        drain_all(l);
        if (gone_take(l, corr, k)) {
            l->late[k]++;
            return AGENT_LEDGER_LATE;
        }
        memset(e, 0, sizeof *e);
        e->corr = corr;
    }
    if (e->lost) {
        if (e->arrived[k] < UINT16_MAX)
            e->arrived[k]++;
        l->late[k]++;
        return AGENT_LEDGER_LATE;
    }
    if (!in.unknowable && e->arrived[k] >= in.expect[k]) {
        l->extra[k]++;
        return AGENT_LEDGER_EXTRA;
    }
    if (e->arrived[k] < UINT16_MAX)
        e->arrived[k]++;
    l->matched[k]++;
    if (!in.unknowable && all_arrived(&in, e))
        atomic_store_explicit(&s->closed, corr, REL);
    return AGENT_LEDGER_MATCHED;
}

void agent_ledger_sweep(agent_ledger *l, uint64_t pending_before_ns, uint64_t lost_before_ns,
                        agent_ledger_lost_fn fn, void *arg,
                        uint64_t pending[AGENT_LEDGER_KINDS])
{
    agent_ledger_drain(l);
    for (uint32_t i = 0; i <= l->mask; i++) {
        agent_ledger_slot *s = &l->slot[i];
        agent_launch in;
        if (!slot_read(s, &in) || atomic_load_explicit(&s->closed, ACQ) == in.corr)
            continue;
        agent_ledger_seen *e = &l->seen[i];
        bool seen = e->corr == in.corr;
        if (seen && e->lost)
            continue;
        if (in.unknowable) {
            if (lost_before_ns == UINT64_MAX)   /* the end: judged by no one */
                atomic_store_explicit(&s->closed, in.corr, REL);
            continue;
        }
        uint32_t missing[AGENT_LEDGER_KINDS], total = 0;
        for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++) {
            uint32_t got = seen ? e->arrived[k] : 0;
            missing[k] = in.expect[k] > got ? in.expect[k] - got : 0;
            total += missing[k];
        }
        if (total == 0)
            continue;
        if (in.launch_ns < lost_before_ns) {
            e = seen_for(l, in.corr);
            e->lost = 1;
            for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++)
                l->lost[k] += missing[k];
            atomic_store_explicit(&s->closed, in.corr, REL);
            if (fn)
                fn(&in, missing, arg);
        } else if (pending && in.launch_ns < pending_before_ns) {
            for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++)
                pending[k] += missing[k];
        }
    }
}

void agent_ledger_totals_launched(agent_ledger *l, agent_ledger_totals *t)
{
    memset(t, 0, sizeof *t);
    t->launches = atomic_load_explicit(&l->launches, RLX);
    t->cancelled = atomic_load_explicit(&l->cancelled, RLX);
    t->overrun = atomic_load_explicit(&l->overrun, RLX) + l->gone_forgot;
    t->busy = atomic_load_explicit(&l->busy, RLX);
    t->unknowable = atomic_load_explicit(&l->unknowable, RLX);
    t->evicted = l->evicted;
    for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++) {
        uint64_t e = atomic_load_explicit(&l->expected[k], RLX);
        uint64_t c = atomic_load_explicit(&l->cancelled_expect[k], RLX);
        t->expected[k] = e > c ? e - c : 0;
    }
}

void agent_ledger_totals_get(agent_ledger *l, agent_ledger_totals *t)
{
    agent_ledger_totals_launched(l, t);
    for (unsigned k = 0; k < AGENT_LEDGER_KINDS; k++) {
        t->matched[k] = l->matched[k];
        t->extra[k] = l->extra[k];
        t->late[k] = l->late[k];
        t->orphan[k] = l->orphan[k];
        t->lost[k] = l->lost[k];
    }
}

uint64_t agent_ledger_unattributed(const agent_ledger_totals *t, agent_ledger_kind kind)
{
    unsigned k = (unsigned)kind;
    if (k >= AGENT_LEDGER_KINDS || !t->overrun)
        return 0;
    uint64_t accounted = t->matched[k] + t->lost[k] + t->orphan[k];
    return t->expected[k] > accounted ? t->expected[k] - accounted : 0;
}
