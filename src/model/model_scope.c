/*
 * model_scope.c - the words for an epoch's scope, said once for every front
 * end: `cuptop report` prints the sentences (model_scope_lines), the
 * monitor's kind panel the brief form (model_scope_brief).  What a scope
 * flag means lives here only.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "model.h"

/* "0,2" for a device mask. */
static void device_list(uint32_t mask, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX && off < len; d++)
        if (mask & (1u << d))
            off += (size_t)snprintf(buf + off, len - off, "%s%u", off ? "," : "", d);
}

/* The capture range as people know it: "nvtx:NAME", else the profiler API. */
static const char *capture_words(const char *capture)
{
    return capture && !strncmp(capture, "nvtx:", 5) ? capture
                                                     : "cudaProfilerStart to cudaProfilerStop";
}

/* The sentence of a periodic window's epoch (e->window_ms set). */
static void window_words(const cupstore_epoch *e, char *buf, size_t len)
{
    char ev[40], at[32];
    cupstore_every_format(e->period_ms, e->window_ms, ev, sizeof ev);
    if (e->flags & CUPSTORE_EPOCH_OUT_OF_SCOPE) {
        snprintf(buf, len, "out of scope (between periodic windows every:%s); its time is "
                 "neither loss nor evidence", ev);
    } else if (e->sched_ns) {
        uint64_t s = e->sched_ns / 1000000000u;
        model_format_second(s, at, sizeof at);
        snprintf(buf, len, "in scope: a periodic window (every:%s, due %.19s.%03uZ, opened %.1f ms "
                 "after its boundary)", ev, at, (unsigned)(e->sched_ns % 1000000000u / 1000000u),
                 e->start_ns >= e->sched_ns ? (double)(e->start_ns - e->sched_ns) / 1e6 : 0.0);
    } else {
        snprintf(buf, len, "in scope: a periodic window (every:%s)", ev);
    }
}

size_t model_scope_lines(const cupstore_epoch *e, const char *capture, char (*lines)[200],
                         size_t max)
{
    size_t n = 0;
#define LINE(...) (n < max ? (void)snprintf(lines[n++], sizeof lines[0], __VA_ARGS__) : (void)0)
    bool cap = e->flags & CUPSTORE_EPOCH_CAPTURE;
    if (e->window_ms && n < max)
        window_words(e, lines[n++], sizeof lines[0]);
    else if ((e->flags & CUPSTORE_EPOCH_OUT_OF_SCOPE) && cap)
        LINE("out of scope (outside the capture range%s%s); its time is neither loss nor "
             "evidence", capture && !strncmp(capture, "nvtx:", 5) ? " " : "",
             capture && !strncmp(capture, "nvtx:", 5) ? capture : "");
    else if (e->flags & CUPSTORE_EPOCH_OUT_OF_SCOPE)
        LINE("out of scope (dormant: CUPTI not attached); its time is neither loss nor "
             "evidence");
    else if (cap)
        LINE("in scope: a capture range (%s)", capture_words(capture));
    if (e->attach_ns)
        LINE("CUPTI attached %s (attach took %.1f ms)",
             e->window_ms                            ? "at this window"
             : cap                                   ? "at the first capture range"
             : e->flags & CUPSTORE_EPOCH_LATE_ATTACH ? "late, by a control request"
                                                     : "at the start",
             (double)e->attach_cost_ns / 1e6);
    if (e->flags & CUPSTORE_EPOCH_DROPS_UNATTRIBUTED)
        LINE("%u context(s) existed before the attach: CUPTI's drops for them are under "
             "device none, not attributed per device", e->pre_contexts);
    if (e->flags & CUPSTORE_EPOCH_NO_CALLBACKS)
        LINE("another CUPTI client held the subscriber slot: activity records only, no "
             "per-device drops");
    if (e->devices) {
        char list[80];
        device_list(e->devices, list, sizeof list);
        LINE("device scope %s (other devices out of scope)", list);
    }
    if (e->api_mode && (e->kinds & CUPSTORE_KINDS_API)) {
        if (e->flags & CUPSTORE_EPOCH_API_UNFILTERED)
            LINE("API records %.100s asked, but this CUPTI cannot mute calls one by one: every "
                 "API call recorded", e->api_policy);
        else if (e->api_muted[0] || e->api_muted[1])
            LINE("API records %.120s: %u runtime and %u driver call ids muted (not recorded, not "
                 "loss)", e->api_policy, e->api_muted[0], e->api_muted[1]);
        else
            LINE("API records %.120s: every call recorded", e->api_policy);
    }
#undef LINE
    return n;
}

void model_scope_brief(uint32_t health_flags, const cupstore_epoch *open, const char *capture,
                       model_scope_words *out)
{
    bool attached = health_flags & CUPSTORE_HF_ATTACHED;
    bool cap = open && (open->flags & CUPSTORE_EPOCH_CAPTURE);
    bool nvtx = capture && !strncmp(capture, "nvtx:", 5);
    memset(out, 0, sizeof *out);
    if (attached && open && open->attach_ns)
        snprintf(out->cupti, sizeof out->cupti, "CUPTI: attached (%s, %.1f ms)",
                 open->flags & CUPSTORE_EPOCH_LATE_ATTACH ? "late" : "at start",
                 (double)open->attach_cost_ns / 1e6);
    else if (attached)
        snprintf(out->cupti, sizeof out->cupti, "CUPTI: attached");
    else if (open && open->window_ms)
        snprintf(out->cupti, sizeof out->cupti,
                 "CUPTI: waiting for the first window (nothing attached)");
    else if (cap && nvtx)
        snprintf(out->cupti, sizeof out->cupti, "CUPTI: waiting for the range %s", capture);
    else if (cap)
        snprintf(out->cupti, sizeof out->cupti,
                 "CUPTI: waiting for cudaProfilerStart (subscribed only)");
    else
        snprintf(out->cupti, sizeof out->cupti,
                 "CUPTI: dormant, not attached (no CUPTI call); a kind on attaches");
    char devs[64] = "all devices";
    if (open && open->devices) {
        char list[48];
        device_list(open->devices, list, sizeof list);
        snprintf(devs, sizeof devs, "devices %s", list);
    }
    if (open && open->window_ms) {
        char ev[40];
        cupstore_every_format(open->period_ms, open->window_ms, ev, sizeof ev);
        snprintf(out->scope, sizeof out->scope, "scope: %s, windows every:%s (%s)", devs, ev,
                 open->flags & CUPSTORE_EPOCH_OUT_OF_SCOPE ? "between windows" : "in a window");
    } else if (cap) {
        const char *where = open->flags & CUPSTORE_EPOCH_OUT_OF_SCOPE ? "outside a range"
                                                                      : "in a range";
        if (nvtx)
            snprintf(out->scope, sizeof out->scope, "scope: %s, capture range %s (%s)", devs,
                     capture, where);
        else
            snprintf(out->scope, sizeof out->scope, "scope: %s, capture range (%s)", devs,
                     where);
    } else if (open && (open->flags & CUPSTORE_EPOCH_DROPS_UNATTRIBUTED)) {
        snprintf(out->scope, sizeof out->scope,
                 "scope: %s; drops of %u earlier context(s): device none", devs,
                 open->pre_contexts);
    } else {
        snprintf(out->scope, sizeof out->scope, "scope: %s", devs);
    }
    if (open && open->api_mode && (open->kinds & CUPSTORE_KINDS_API)) {
        /* the API record policy: muted calls are a choice, not loss */
        if (open->flags & CUPSTORE_EPOCH_API_UNFILTERED)
            snprintf(out->api, sizeof out->api, "API %.100s: every call (CUPTI cannot mute)",
                     open->api_policy);
        else
            snprintf(out->api, sizeof out->api, "API %.100s, %u call ids muted", open->api_policy,
                     open->api_muted[0] + open->api_muted[1]);
    }
}

/* "42 s", "12m05s", "3h20m": a wait as people read it. */
static void wait_words(uint64_t ns, char *buf, size_t len)
{
    uint64_t s = ns / 1000000000u;
    if (s < 60)
        snprintf(buf, len, "%.1f s", (double)ns / 1e9);
    else if (s < 3600)
        snprintf(buf, len, "%um%02us", (unsigned)(s / 60), (unsigned)(s % 60));
    else
        snprintf(buf, len, "%uh%02um", (unsigned)(s / 3600), (unsigned)(s % 3600 / 60));
}

void model_window_next(const cupstore_epoch *open, uint64_t now_ns, char *buf, size_t len)
{
    char w[32];
    if (len)
        buf[0] = '\0';
    if (!open || !open->window_ms || !open->period_ms)
        return;
    /* windows sit at multiples of the period: the schedule alone says */
    uint64_t p = (uint64_t)open->period_ms * 1000000u, win = (uint64_t)open->window_ms * 1000000u;
    uint64_t phase = now_ns % p;
    if (phase < win) {
        wait_words(win - phase, w, sizeof w);
        snprintf(buf, len, "window closes in %s", w);
    } else {
        wait_words(p - phase, w, sizeof w);
        snprintf(buf, len, "next window in %s", w);
    }
}

/* How late an edge came after its boundary, in ms (never negative). */
static double late_ms(uint64_t at, uint64_t due)
{
    return at > due ? (double)(at - due) / 1e6 : 0.0;
}

uint32_t model_windows_judge(const model_facts *r, model_windows *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < r->nepochs; i++) {
        const model_epoch_stat *s = &r->epochs[i];
        const cupstore_epoch *e = &s->row;
        if (!s->known || !e->window_ms || (e->flags & CUPSTORE_EPOCH_OUT_OF_SCOPE))
            continue;
        out->n++;
        out->period_ms = e->period_ms;
        out->window_ms = e->window_ms;
        out->lossy += s->losses > 0;
        if (!e->sched_ns)
            continue;
        uint64_t close = e->sched_ns + (uint64_t)e->window_ms * 1000000u;
        out->timed++;
        double l = late_ms(e->start_ns, e->sched_ns);
        if (l > out->open_late_ms)
            out->open_late_ms = l;
        /* the close: the next epoch starts at it when it was on time */
        const cupstore_epoch *nx = i + 1 < r->nepochs && r->epochs[i + 1].known
                                       ? &r->epochs[i + 1].row : NULL;
        if (nx && nx->sched_ns == close) {
            out->closes++;
            if ((l = late_ms(nx->start_ns, close)) > out->close_late_ms)
                out->close_late_ms = l;
        } else if (e->end_ns && e->end_ns < close) {
            out->cut_short++;   /* the session ended (or a request closed it) first */
        }
    }
    return out->n;
}

void model_windows_line(const model_windows *w, char *buf, size_t len)
{
    char ev[40], cut[120] = "", loss[80] = "";
    if (!w->n) {
        if (len)
            buf[0] = '\0';
        return;
    }
    cupstore_every_format(w->period_ms, w->window_ms, ev, sizeof ev);
    if (w->cut_short)
        snprintf(cut, sizeof cut, "; %u ended before its close (judged as far as it went)",
                 w->cut_short);
    if (w->lossy)
        snprintf(loss, sizeof loss, "; %u with a loss", w->lossy);
    snprintf(buf, len, "%u periodic window%s every:%s, opened at most %.1f ms and closed at "
             "most %.1f ms after their boundary (wall clock)%s%s; the time between them was "
             "out of scope", w->n, w->n == 1 ? "" : "s", ev, w->open_late_ms, w->close_late_ms,
             cut, loss);
}

/* One window that lost records: "window 3 (epoch 7, due 10:32:01.000Z):
 * INCOMPLETE, 120 records lost (dropped 120)". */
static void window_loss_line(unsigned nth, const model_epoch_stat *s, char *buf, size_t len)
{
    char at[32] = "?", why[120] = "";
    size_t off = 0;
    uint64_t t = s->row.sched_ns ? s->row.sched_ns : s->start_ns;
    model_format_second(t / 1000000000u, at, sizeof at);
    for (unsigned c = 0; c < CUPSTORE_LOSS_MAX && off < sizeof why; c++)
        if (s->loss[c])
            off += (size_t)snprintf(why + off, sizeof why - off, "%s%s %" PRIu64,
                                    off ? ", " : "", cupstore_loss_name(c), s->loss[c]);
    snprintf(buf, len, "window %u (epoch %u, %s %.19s.%03uZ): INCOMPLETE, %" PRIu64
             " records lost (%s)", nth, s->id, s->row.sched_ns ? "due" : "opened", at,
             (unsigned)(t % 1000000000u / 1000000u), s->losses, why[0] ? why : "unclassified");
}

size_t model_windows_lossy_lines(const model_facts *r, char (*lines)[200], size_t max,
                                 size_t *more)
{
    size_t n = 0;
    unsigned nth = 0;
    *more = 0;
    for (size_t i = 0; i < r->nepochs; i++) {
        const model_epoch_stat *s = &r->epochs[i];
        if (!s->known || !s->row.window_ms || (s->row.flags & CUPSTORE_EPOCH_OUT_OF_SCOPE))
            continue;
        nth++;
        if (!s->losses)
            continue;
        if (n < max)
            window_loss_line(nth, s, lines[n++], sizeof lines[0]);
        else
            (*more)++;
    }
    return n;
}
