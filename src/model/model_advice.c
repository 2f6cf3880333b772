/*
 * model_advice.c - facts -> ranked recommendations, each with the exact
 * setting (a CUPTOP_* variable, the matching `cuptop run` option, and a
 * runtime `cuptop control` request where one exists) and the evidence.
 * DESIGN invariant 9: the first recommendation, applied in a rerun, must
 * remove the loss or at least 90% of it (tests/agent/advice_proof.sh).
 *
 * Where records are lost at the source (CUPTI drops, declined requests),
 * what to change follows from the buffer supply, in this order:
 *
 *  1. Small buffers (< 1 MiB): CUPTI's cost per buffer bounds what it can
 *     deliver (H200: 64 KiB buffers lost records at ~200k launches/s with
 *     any pool; 1 MiB lost none).  Raise the buffer size.
 *  2. The pool at its own per-second limit in the lossy seconds, with a
 *     limit the buffer-holding threads can exhaust (each CUDA-calling
 *     thread holds a buffer per device on CUPTI 13): the pool starves,
 *     whatever the kinds.  Raise the pool, to what the threads need.  A
 *     pool smaller than twice what the threads hold comes first, before
 *     small buffers.
 *  3. The pool at its limit although it is far larger than the threads
 *     hold: the buffers wait in CUPTI for delivery, and a bigger pool
 *     only queues more of them.  Bigger buffers (fewer deliveries), else
 *     narrow the kinds.
 *  4. The queue full or buffers completed faster than consumed: the
 *     consumer or the store falls behind; narrow the kinds (and, with a
 *     slow commit, a faster store).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#define MIB (UINT64_C(1) << 20)
#define SMALL_BUFFER MIB                  /* below this, buffers are small  */
#define DEFAULT_BUFFER (4 * MIB)          /* the agent's default            */
#define MAX_BUFFER (256 * MIB)            /* the agent's maximum            */
#define DEFAULT_STOP_TIMEOUT_MS 3000u
#define SLOW_COMMIT_NS 100000000u         /* commit p99 of 100 ms           */

static const char *const advice_names[MODEL_ADVICE_MAX] = {
    "raise_pool", "buffer_size", "narrow", "faster_store", "device_buffers",
    "stop_timeout", "conflict", "crash", "parse", "disabled", "damaged", "cupti_start",
};

const char *model_advice_name(unsigned code)
{
    return code < MODEL_ADVICE_MAX ? advice_names[code] : "?";
}

typedef struct adv_list {
    model_advice *v;
    size_t n;
    int rc;
} adv_list;

static model_advice *adv_new(adv_list *l, unsigned code)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].code == code)
            return NULL;   /* one recommendation per kind of fix */
    model_advice *v = realloc(l->v, (l->n + 1) * sizeof *v);
    if (!v) {
        l->rc = ENOMEM;
        return NULL;
    }
    l->v = v;
    v += l->n++;
    memset(v, 0, sizeof *v);
    v->code = code;
    return v;
}

static void setf(char *dst, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void setf(char *dst, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, len, fmt, ap);
    va_end(ap);
}

/* "64K", "4M": the agent's size syntax. */
static void size_text(uint64_t b, char *buf, size_t len)
{
    if (b >= MIB && b % MIB == 0)
        snprintf(buf, len, "%" PRIu64 "M", b / MIB);
    else if (b >= 1024 && b % 1024 == 0)
        snprintf(buf, len, "%" PRIu64 "K", b / 1024);
    else
        snprintf(buf, len, "%" PRIu64, b);
}

static uint64_t pow2_at_least(uint64_t x)
{
    uint64_t p = 1;
    while (p < x && p < (UINT64_C(1) << 40))
        p <<= 1;
    return p;
}

static unsigned popcount32(uint32_t x)
{
    unsigned n = 0;
    for (; x; x &= x - 1)
        n++;
    return n;
}

static uint64_t lost_at_source(const model_summary *s)
{
    return s->loss[CUPSTORE_LOSS_CUPTI_DROPPED] + s->loss[CUPSTORE_LOSS_DECLINED];
}

/* The buffer size that carries the lossy seconds' demand: the bytes CUPTI
 * would have delivered (delivered bytes scaled by records produced over
 * records parsed) at the number of deliveries it managed, twice over; at
 * least the default.  0 when it would not be larger than now. */
static uint64_t buffer_needed(const model_facts *f)
{
    uint64_t now = f->buffer_size ? f->buffer_size : DEFAULT_BUFFER;
    uint64_t want = DEFAULT_BUFFER;
    if (f->loss_seconds && f->loss_completed && f->loss_bytes) {
        double produced = (double)(f->loss_records + f->loss_lost);
        double got = f->loss_records ? (double)f->loss_records : 1.0;
        double need_bps = (double)f->loss_bytes / (double)f->loss_seconds * produced / got;
        double per_s = (double)f->loss_completed / (double)f->loss_seconds;
        double b = 2.0 * need_bps / per_s;
        if (b > (double)MAX_BUFFER)
            b = (double)MAX_BUFFER;
        if ((uint64_t)b > want)
            want = pow2_at_least((uint64_t)b);
    }
    if (want > MAX_BUFFER)
        want = MAX_BUFFER;
    return want > now ? want : 0;
}

/* Kinds to keep when narrowing: without runtime and driver when they are
 * a large share (API records are not GPU timing), else without the kind
 * that makes the most records.  0 when nothing can go. */
static uint32_t kinds_narrowed(const model_summary *s, const model_facts *f, char *why,
                               size_t len)
{
    uint32_t on = f->kinds_now ? f->kinds_now : s->kinds_enabled;
    uint64_t total = 0, api = 0;
    unsigned top = CUPSTORE_KIND_MAX;
    for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++) {
        if (!(on & (1u << k)))
            continue;
        total += s->records_by_kind[k];
        if (k == CUPSTORE_KIND_RUNTIME || k == CUPSTORE_KIND_DRIVER)
            api += s->records_by_kind[k];
        if (top == CUPSTORE_KIND_MAX || s->records_by_kind[k] > s->records_by_kind[top])
            top = k;
    }
    if (popcount32(on) < 2 || !total)
        return 0;
    uint32_t api_mask = (1u << CUPSTORE_KIND_RUNTIME) | (1u << CUPSTORE_KIND_DRIVER);
    if ((on & api_mask) && (on & ~api_mask) && api * 10 >= total * 3) {
        setf(why, len, "runtime and driver API records are %.0f%% of the records",
             100.0 * (double)api / (double)total);
        return on & ~api_mask;
    }
    setf(why, len, "%s makes %.0f%% of the records (peak %" PRIu64 "/s)", cupstore_kind_name(top),
         100.0 * (double)s->records_by_kind[top] / (double)total, f->peak_kind[top]);
    return on & ~(1u << top);
}

/* The loss is over: the window's last epoch collected records and lost
 * nothing, after seconds that lost some.  That epoch, else NULL. */
static const model_epoch_stat *loss_over(const model_facts *f)
{
    const model_epoch_stat *last = NULL;
    for (size_t i = 0; i < f->nepochs; i++)
        if (!last || f->epochs[i].id > last->id)
            last = &f->epochs[i];
    if (!last || !f->loss_seconds || last->losses || !last->records || !last->kinds)
        return NULL;
    return last;
}

/* The loss stopped after the kinds were narrowed at runtime: for a rerun,
 * collect from the start what the loss-free epoch collects (proven by the
 * session itself); nothing to do now. */
static void advise_keep_narrowed(adv_list *l, const model_facts *f, const model_epoch_stat *cur,
                                 const char *because)
{
    char kinds[160], off[160];
    model_advice *a = adv_new(l, MODEL_ADVICE_NARROW);
    if (!a)
        return;
    cupstore_kinds_format(cur->kinds, kinds, sizeof kinds);
    cupstore_kinds_format(f->loss_kinds & ~cur->kinds, off, sizeof off);
    a->kinds = cur->kinds;
    setf(a->setting, sizeof a->setting, "CUPTOP_KINDS");
    setf(a->value, sizeof a->value, "%s", kinds);
    setf(a->run_option, sizeof a->run_option, "--kinds %s", kinds);
    setf(a->brief, sizeof a->brief, "Start with the kinds now on: %s", kinds);
    setf(a->text, sizeof a->text, "Collect %s from the start in a rerun: the loss stopped when "
         "%s went off at runtime.", kinds, off);
    setf(a->evidence, sizeof a->evidence, "%s; epoch %u (%s) lost nothing in %.0f s and %" PRIu64
         " records", because, cur->id, kinds, cur->seconds, cur->records);
}

static void advise_narrow(adv_list *l, const model_summary *s, const model_facts *f,
                          const char *because)
{
    char why[160], kinds[160];
    /* Advice judges the current epoch: a loss that is over is not fixed
     * by dropping more kinds now.  Where a runtime narrowing ended it,
     * keep that narrowing in a rerun; else advise no narrowing. */
    const model_epoch_stat *cur = loss_over(f);
    if (cur) {
        if (f->loss_kinds && (cur->kinds & ~f->loss_kinds) == 0 && cur->kinds != f->loss_kinds)
            advise_keep_narrowed(l, f, cur, because);
        return;
    }
    uint32_t keep = kinds_narrowed(s, f, why, sizeof why);
    if (!keep)
        return;
    model_advice *a = adv_new(l, MODEL_ADVICE_NARROW);
    if (!a)
        return;
    cupstore_kinds_format(keep, kinds, sizeof kinds);
    a->kinds = keep;
    setf(a->setting, sizeof a->setting, "CUPTOP_KINDS");
    setf(a->value, sizeof a->value, "%s", kinds);
    setf(a->run_option, sizeof a->run_option, "--kinds %s", kinds);
    setf(a->control, sizeof a->control, "--kinds %s", kinds);
    setf(a->brief, sizeof a->brief, "Narrow the kinds to %s", kinds);
    setf(a->text, sizeof a->text, "Narrow the kinds collected to %s: less to deliver, parse "
         "and store.", kinds);
    setf(a->evidence, sizeof a->evidence, "%s; %s", because, why);
}

static void advise_buffer(adv_list *l, const model_facts *f, uint64_t want, const char *because)
{
    char now[32], to[32];
    model_advice *a = adv_new(l, MODEL_ADVICE_BUFFER_SIZE);
    if (!a)
        return;
    size_text(f->buffer_size ? f->buffer_size : DEFAULT_BUFFER, now, sizeof now);
    size_text(want, to, sizeof to);
    setf(a->setting, sizeof a->setting, "CUPTOP_BUFFER_SIZE");
    setf(a->value, sizeof a->value, "%s", to);
    setf(a->run_option, sizeof a->run_option, "--buffer-size %s", to);
    setf(a->brief, sizeof a->brief, "Raise the buffer size to %s (rerun: %s=%s)", to,
         a->setting, a->value);
    setf(a->text, sizeof a->text, "Raise the buffer size from %s to %s in a rerun (it cannot "
         "change at runtime): fewer, larger buffers for CUPTI to deliver.", now, to);
    setf(a->evidence, sizeof a->evidence, "%s; in the %" PRIu64 " lossy seconds CUPTI "
         "delivered %.0f buffers/s (%.1f MB/s) while %.0f%% of the records were lost",
         because, f->loss_seconds, f->loss_seconds ? (double)f->loss_completed / (double)f->loss_seconds : 0,
         f->loss_seconds ? (double)f->loss_bytes / (double)f->loss_seconds / 1e6 : 0,
         f->loss_records + f->loss_lost
             ? 100.0 * (double)f->loss_lost / (double)(f->loss_records + f->loss_lost) : 0);
}

static void advise_pool(adv_list *l, const model_summary *s, const model_facts *f)
{
    uint32_t limit = f->loss_limit_max ? f->loss_limit_max : f->pool_limit;
    uint32_t threads = f->threads, devs = f->devices ? f->devices : 1;
    uint64_t want = 4u * (uint64_t)(limit ? limit : 1);
    uint64_t by_threads = 32u + 2u * (uint64_t)(threads ? threads : 1) * devs;
    if (by_threads > want)
        want = by_threads;
    if (want > CUPSTORE_CONTROL_POOL_MAX)
        want = CUPSTORE_CONTROL_POOL_MAX;
    model_advice *a = adv_new(l, MODEL_ADVICE_RAISE_POOL);
    if (!a)
        return;
    a->pool = (uint32_t)want;
    setf(a->setting, sizeof a->setting, "CUPTOP_POOL");
    setf(a->value, sizeof a->value, "%u", a->pool);
    setf(a->run_option, sizeof a->run_option, "--pool %u", a->pool);
    setf(a->control, sizeof a->control, "--pool %u", a->pool);
    setf(a->brief, sizeof a->brief, "Raise the pool %u -> %u buffers (at its limit in %" PRIu64
         "/%" PRIu64 " lossy s)", limit, a->pool, f->loss_at_limit, f->loss_seconds);
    setf(a->text, sizeof a->text, "Raise the pool from %u to %u buffers: CUPTI holds every "
         "buffer, so requests are declined whatever the kinds; narrowing would not free one.",
         limit, a->pool);
    char thr[96] = "";
    if (threads)
        setf(thr, sizeof thr, "; %u thread%s request%s buffers (each holds one per device, "
             "%u device%s)", threads, threads == 1 ? "" : "s", threads == 1 ? "s" : "", devs,
             devs == 1 ? "" : "s");
    char lim[64];
    if (f->loss_limit_min != f->loss_limit_max)
        setf(lim, sizeof lim, "%u..%u", f->loss_limit_min, f->loss_limit_max);
    else
        setf(lim, sizeof lim, "%u", limit);
    setf(a->evidence, sizeof a->evidence, "the pool (limit %s in those seconds, high-water %u) "
         "was at its limit in %" PRIu64 " of %" PRIu64 " lossy seconds%s; the queue reached %u "
         "of %u and %" PRIu64 " of %" PRIu64 " completed buffers were consumed: the consumer "
         "kept up", lim, f->pool_hw, f->loss_at_limit, f->loss_seconds, thr, f->loss_q_hw_max,
         f->loss_q_cap, f->loss_consumed, f->loss_completed);
    (void)s;
}

/* Loss at the source: which link of the buffer supply gave out. */
static void advise_source(adv_list *l, const model_summary *s, const model_facts *f)
{
    char because[200];
    bool starving = f->loss_seconds && f->loss_at_limit * 2 >= f->loss_seconds;
    uint32_t limit = f->loss_limit_max ? f->loss_limit_max : f->pool_limit;
    uint32_t holders = f->threads ? f->threads * (f->devices ? f->devices : 1) : 0;
    bool queued_in_cupti = holders && limit > 2 * holders + 2;
    /* fewer buffers than the threads hold, plus one each in delivery: the
     * pool starves whatever the buffer size */
    bool below_holders = holders && limit < 2 * holders;
    if (starving && below_holders) {
        advise_pool(l, s, f);
        if (f->buffer_size && f->buffer_size < SMALL_BUFFER) {
            char now[32];
            size_text(f->buffer_size, now, sizeof now);
            setf(because, sizeof because, "then: the buffers are small (%s)", now);
            uint64_t want = buffer_needed(f);
            advise_buffer(l, f, want ? want : DEFAULT_BUFFER, because);
        }
        return;
    }
    if (f->buffer_size && f->buffer_size < SMALL_BUFFER) {
        char now[32];
        size_text(f->buffer_size, now, sizeof now);
        setf(because, sizeof because, "the buffers are small (%s): CUPTI's cost per buffer "
             "bounds what it delivers", now);
        uint64_t want = buffer_needed(f);
        advise_buffer(l, f, want ? want : DEFAULT_BUFFER, because);
        advise_narrow(l, s, f, "the alternative that needs no rerun: a running session can be narrowed now");
        return;
    }
    if (starving && !queued_in_cupti) {
        advise_pool(l, s, f);
        return;
    }
    if (starving) {
        setf(because, sizeof because, "the pool of %u was at its limit although %u thread%s "
             "hold%s only %u: the buffers wait in CUPTI to be delivered, so a bigger pool "
             "would only queue more", limit, f->threads, f->threads == 1 ? "" : "s",
             f->threads == 1 ? "s" : "", holders);
        uint64_t want = buffer_needed(f);
        if (want)
            advise_buffer(l, f, want, because);
        advise_narrow(l, s, f, because);
        return;
    }
    setf(because, sizeof because, "the pool was never exhausted (high-water %u of %u) and "
         "the queue kept up: CUPTI produced records faster than its buffers came back",
         f->pool_hw, f->pool_limit);
    uint64_t want = buffer_needed(f);
    if (want)
        advise_buffer(l, f, want, because);
    advise_narrow(l, s, f, because);
}

static bool has_reason(const model_summary *s, unsigned r)
{
    for (size_t i = 0; i < s->nreasons; i++)
        if (s->reasons[i].reason == r)
            return true;
    return false;
}

/* Another CUPTI client took buffers or records: run it separately. */
static void advise_conflict(adv_list *l, const model_summary *s, const model_facts *f)
{
    model_advice *a;
    uint64_t taken = s->loss_bound[CUPSTORE_LOSS_CONFLICT];
    if (s->loss[CUPSTORE_LOSS_CONFLICT] || f->foreign || taken) {
        if ((a = adv_new(l, MODEL_ADVICE_CONFLICT))) {
            setf(a->brief, sizeof a->brief, "Another CUPTI client: run it separately");
            setf(a->text, sizeof a->text, "Run the other CUPTI client (torch.profiler, Nsight, "
                 "compute-sanitizer) separately from cuptop: only one can own the buffers.");
            if (taken)
                setf(a->evidence, sizeof a->evidence, "%" PRIu64 " buffers completed that the "
                     "agent never handed out; %" PRIu64 " of its own never came back (at "
                     "least %" PRIu64 " records, a lower bound); %" PRIu64 " records lost to "
                     "the other client", f->foreign, s->buffers_unreturned, taken,
                     s->loss[CUPSTORE_LOSS_CONFLICT]);
            else
                setf(a->evidence, sizeof a->evidence, "%" PRIu64 " buffers completed that the "
                     "agent never handed out; %" PRIu64 " records lost to the other client",
                     f->foreign, s->loss[CUPSTORE_LOSS_CONFLICT]);
        }
    }
}

/* The consumer fell behind: narrow the kinds; a slow store is named too. */
static void advise_behind(adv_list *l, const model_summary *s, const model_facts *f)
{
    model_advice *a;
    char because[240];
    bool behind = s->loss[CUPSTORE_LOSS_QUEUE_OVERFLOW] ||
                  has_reason(s, MODEL_REASON_UNCONSUMED) ||
                  (f->loss_seconds && f->loss_q_full * 2 >= f->loss_seconds && f->loss_q_cap > 1);
    if (behind) {
        setf(because, sizeof because, "the consumer fell behind: the queue reached %u of %u "
             "and %" PRIu64 " buffers completed against %" PRIu64 " consumed in the lossy "
             "seconds (a bigger queue only moves the loss into memory)", f->loss_q_hw_max,
             f->loss_q_cap, f->loss_completed, f->loss_consumed);
        advise_narrow(l, s, f, because);
        if (f->loss_commit_p99_max >= SLOW_COMMIT_NS &&
            (a = adv_new(l, MODEL_ADVICE_FASTER_STORE))) {
            setf(a->brief, sizeof a->brief, "Put the store on a faster local disk");
            setf(a->text, sizeof a->text, "Put the store on a faster local disk "
                 "(CUPTOP_STORE): its commits hold the consumer up.");
            setf(a->evidence, sizeof a->evidence, "commit p99 reached %.0f ms in the lossy "
                 "seconds", f->loss_commit_p99_max / 1e6);
            setf(a->setting, sizeof a->setting, "CUPTOP_STORE");
        }
    }
}

/* Records with zero timestamps: CUPTI's device buffers ran out. */
static void advise_zero_ts(adv_list *l, const model_summary *s, const model_facts *f)
{
    model_advice *a;
    if (s->loss[CUPSTORE_LOSS_ZERO_TS] && (a = adv_new(l, MODEL_ADVICE_DEVICE_BUFFERS))) {
        uint64_t now = f->device_buffer_size;
        uint64_t want = now ? 2 * now : 32 * MIB;
        char to[32], nowt[32] = "CUPTI's default";
        size_text(want, to, sizeof to);
        if (now)
            size_text(now, nowt, sizeof nowt);
        setf(a->setting, sizeof a->setting, "CUPTOP_DEVICE_BUFFER_SIZE");
        setf(a->value, sizeof a->value, "%s", to);
        setf(a->run_option, sizeof a->run_option, "--device-buffer-size %s", to);
        setf(a->brief, sizeof a->brief, "Zero timestamps: raise the device buffer size to %s", to);
        setf(a->text, sizeof a->text, "Raise CUPTI's device buffer size to %s (and its pool "
             "limit, CUPTOP_DEVICE_BUFFER_POOL_LIMIT) in a rerun.", to);
        setf(a->evidence, sizeof a->evidence, "%" PRIu64 " records came with zero timestamps: "
             "CUPTI's device-side buffers ran out (device buffer size %s)",
             s->loss[CUPSTORE_LOSS_ZERO_TS], nowt);
    }
}

/* The tail was lost at stop: a longer stop timeout. */
static void advise_tail(adv_list *l, const model_summary *s, const model_facts *f)
{
    model_advice *a;
    uint64_t tail_bound = s->loss_bound[CUPSTORE_LOSS_TAIL];
    bool tail = s->loss[CUPSTORE_LOSS_TAIL] || tail_bound || f->steps_timed_out;
    if (tail && s->state == MODEL_STATE_ENDED && (a = adv_new(l, MODEL_ADVICE_STOP_TIMEOUT))) {
        uint32_t now = f->stop_timeout_ms ? f->stop_timeout_ms : DEFAULT_STOP_TIMEOUT_MS;
        uint32_t want = now >= 300000u ? 600000u : 2 * now;
        setf(a->setting, sizeof a->setting, "CUPTOP_STOP_TIMEOUT_MS");
        setf(a->value, sizeof a->value, "%u", want);
        setf(a->run_option, sizeof a->run_option, "--stop-timeout %u", want);
        setf(a->brief, sizeof a->brief, "Tail lost: a stop timeout of %u ms", want);
        setf(a->text, sizeof a->text, "Give the stop protocol more time: stop timeout %u ms "
             "instead of %u, so the last buffers are flushed and drained.", want, now);
        uint64_t most = s->loss_at_most[CUPSTORE_LOSS_TAIL];
        char upto[48] = "";
        if (most)
            setf(upto, sizeof upto, " (up to %" PRIu64 ")", most);
        if (!tail_bound && s->buffers_unreturned && f->steps_timed_out)
            /* nothing known of the held buffers but that they were out */
            setf(a->evidence, sizeof a->evidence, "%u stop step%s timed out; %" PRIu64
                 " records counted lost at stop and an unknown number more%s in the %" PRIu64
                 " buffers CUPTI still held", f->steps_timed_out,
                 f->steps_timed_out == 1 ? "" : "s", s->loss[CUPSTORE_LOSS_TAIL], upto,
                 s->buffers_unreturned);
        else if (tail_bound)
            /* the flush did not finish: never "0 records lost at stop" */
            setf(a->evidence, sizeof a->evidence, "%u stop step%s timed out; at least %" PRIu64
                 " records lost at stop (a lower bound: %" PRIu64 " counted, %" PRIu64
                 " more in the %" PRIu64 " buffers CUPTI still held%s)", f->steps_timed_out,
                 f->steps_timed_out == 1 ? "" : "s", s->loss[CUPSTORE_LOSS_TAIL] + tail_bound,
                 s->loss[CUPSTORE_LOSS_TAIL], tail_bound, s->buffers_unreturned, upto);
        else
            setf(a->evidence, sizeof a->evidence, "%u stop step%s timed out; %" PRIu64
                 " records lost at stop", f->steps_timed_out,
                 f->steps_timed_out == 1 ? "" : "s", s->loss[CUPSTORE_LOSS_TAIL]);
    }
}

int model_advise(const model_summary *s, const model_facts *f, model_advice **out, size_t *n)
{
    adv_list l = {NULL, 0, 0};
    const uint64_t *L = s->loss;
    model_advice *a;

    *out = NULL;
    *n = 0;
    if (s->cupti_advice) {
        /* nothing was traced: any other advice would be about nothing */
        if ((a = adv_new(&l, MODEL_ADVICE_CUPTI_START))) {
            setf(a->brief, sizeof a->brief, "CUPTI could not start: see cuptop report");
            setf(a->text, sizeof a->text, "CUPTI could not start, so nothing was traced. What "
                 "to do: %s.", s->cupti_advice);
            setf(a->evidence, sizeof a->evidence, "the agent's CUPTI calls failed (the reason "
                 "above names the call and CUPTI's error)");
        }
        *out = l.v;
        *n = l.n;
        return l.rc;
    }
    if (has_reason(s, MODEL_REASON_DISABLED) && (a = adv_new(&l, MODEL_ADVICE_DISABLED))) {
        setf(a->brief, sizeof a->brief, "The agent stepped aside: read its notes");
        setf(a->text, sizeof a->text, "Read the agent's notes: it stepped aside and collected "
             "nothing after that; fix what they name and run again.");
        setf(a->evidence, sizeof a->evidence, "the session was disabled by the agent");
    }
    advise_conflict(&l, s, f);
    if (lost_at_source(s))
        advise_source(&l, s, f);
    advise_behind(&l, s, f);
    if ((L[CUPSTORE_LOSS_STORE_REFUSED] || f->store_refused) &&
        (a = adv_new(&l, MODEL_ADVICE_FASTER_STORE))) {
        setf(a->brief, sizeof a->brief, "The store refuses writes: free disk space");
        setf(a->text, sizeof a->text, "Give the store room: free disk space or put it on "
             "another local filesystem (CUPTOP_STORE), or raise CUPTOP_MAP_MAX.");
        setf(a->evidence, sizeof a->evidence, "%" PRIu64 " records refused by the store (%" PRIu64
             " write transactions), commit p99 up to %.1f ms", L[CUPSTORE_LOSS_STORE_REFUSED],
             f->store_refused, f->commit_p99_max / 1e6);
        setf(a->setting, sizeof a->setting, "CUPTOP_STORE");
    }
    advise_zero_ts(&l, s, f);
    if (L[CUPSTORE_LOSS_PARSE_ERROR] && (a = adv_new(&l, MODEL_ADVICE_PARSE))) {
        setf(a->brief, sizeof a->brief, "Unparsable records: check the CUPTI version");
        setf(a->text, sizeof a->text, "Check that the CUPTI loaded (cuptop report: its CUPTI "
             "line, with the API version) is the one of the CUDA toolkit cuptop was built with.");
        setf(a->evidence, sizeof a->evidence, "%" PRIu64 " records could not be parsed",
             L[CUPSTORE_LOSS_PARSE_ERROR]);
    }
    if (has_reason(s, MODEL_REASON_STORE_DAMAGED) && (a = adv_new(&l, MODEL_ADVICE_DAMAGED))) {
        setf(a->brief, sizeof a->brief, "Stored records are missing: check the disk");
        setf(a->text, sizeof a->text, "Do not trust this copy of the trace: records the agent "
             "stored cannot be read back; check the disk and keep the original.");
        setf(a->evidence, sizeof a->evidence, "check --verify found stored records missing or "
             "unreadable");
    }
    if (s->state == MODEL_STATE_CRASHED && (a = adv_new(&l, MODEL_ADVICE_CRASH))) {
        setf(a->brief, sizeof a->brief, "Crashed: end the app normally or with SIGTERM");
        setf(a->text, sizeof a->text, "Let the application end normally (or with SIGTERM / "
             "SIGINT, which the agent handles): it died without the stop protocol, so the "
             "tail of the trace is missing.");
        setf(a->evidence, sizeof a->evidence, "no final status and a stale heartbeat");
    }
    advise_tail(&l, s, f);
    if (l.rc) {
        free(l.v);
        return l.rc;
    }
    *out = l.v;
    *n = l.n;
    return 0;
}

int model_judge(cupstore_env *env, uint64_t from_s, uint64_t to_s, model_summary *s,
                model_facts *f, model_advice **advice, size_t *nadvice, char **cause)
{
    int rc = model_summarize(env, from_s, to_s, s, cause);
    if (rc)
        return rc;
    if ((rc = model_facts_read(env, from_s, to_s, f, cause)) != 0) {
        model_summary_free(s);
        return rc;
    }
    if ((rc = model_advise(s, f, advice, nadvice)) != 0) {
        model_facts_free(f);
        model_summary_free(s);
    }
    return rc;
}

struct advise_one {
    cupstore_env *env;
    uint64_t from_s, to_s;
    const model_summary *s;
    model_advice **out;
    size_t *n;
    char **cause;
};

static int advise_one_read(void *arg)
{
    struct advise_one *a = arg;
    model_facts f;
    int rc = model_facts_read(a->env, a->from_s, a->to_s, &f, a->cause);
    if (rc == 0) {
        rc = model_advise(a->s, &f, a->out, a->n);
        model_facts_free(&f);
    }
    return rc;
}

int model_advise_read(cupstore_env *env, uint64_t from_s, uint64_t to_s,
                      const model_summary *s, model_advice **out, size_t *n, char **cause)
{
    *out = NULL;
    *n = 0;
    char *why = NULL;
    struct advise_one a = {env, from_s, to_s, s, out, n, &why};
    int rc = cupstore_guarded(advise_one_read, &a); /* a damaged session stays one */
    if (cause && rc && rc != CUPSTORE_EFAULT) {
        *cause = why;
    } else {
        if (cause)
            *cause = NULL;
        free(why);
    }
    if (rc == CUPSTORE_EFAULT) {
        *out = NULL;
        *n = 0;
    }
    return rc;
}
