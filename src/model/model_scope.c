/*
 * model_scope.c - the words for an epoch's scope, said once for every front
 * end: `cuptop report` prints the sentences (model_scope_lines), the
 * monitor's kind panel the brief form (model_scope_brief).  What a scope
 * flag means lives here only.
 */
#include "config.h"

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

size_t model_scope_lines(const cupstore_epoch *e, const char *capture, char (*lines)[200],
                         size_t max)
{
    size_t n = 0;
#define LINE(...) (n < max ? (void)snprintf(lines[n++], sizeof lines[0], __VA_ARGS__) : (void)0)
    bool cap = e->flags & CUPSTORE_EPOCH_CAPTURE;
    if ((e->flags & CUPSTORE_EPOCH_OUT_OF_SCOPE) && cap)
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
             cap                                     ? "at the first capture range"
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
    if (cap) {
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
