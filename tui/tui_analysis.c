/* tui_analysis.c - pure epoch analysis: the baseline and the suggestion. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cupstore.h"
#include "tui.h"

int tui_epoch_baseline(const tui_epoch_stat *e, size_t n)
{
    int best = -1;
    for (size_t i = 0; i < n; i++) {
        if (e[i].losses != 0 || e[i].seconds == 0)
            continue;
        if (best < 0 || e[i].seconds >= e[best].seconds)
            best = (int)i;
    }
    return best;
}

/* Where the pressure is, in words, for the dominant loss class. */
static void pressure_text(const tui_suggest_in *in, unsigned cls,
                          const char *(*loss_name)(unsigned), char *buf, size_t len)
{
    switch (cls) {
    case CUPSTORE_LOSS_DECLINED:
        snprintf(buf, len, "buffer pool exhausted (%.0f/%.0f outstanding)",
                 in->buf_outstanding, in->pool_limit);
        break;
    case CUPSTORE_LOSS_QUEUE_OVERFLOW:
        snprintf(buf, len, "consumer queue full (%.0f/%.0f)", in->queue_depth,
                 in->queue_capacity);
        break;
    case CUPSTORE_LOSS_CUPTI_DROPPED:
        snprintf(buf, len, "CUPTI dropped records (buffers not back in time)");
        break;
    case CUPSTORE_LOSS_ZERO_TS:
        snprintf(buf, len, "device buffers ran out (zero timestamps)");
        break;
    default:
        snprintf(buf, len, "%s", loss_name(cls));
        break;
    }
}

int tui_suggest(const tui_suggest_in *in, const char *(*kind_name)(unsigned),
                const char *(*loss_name)(unsigned), char *buf, size_t len)
{
    double total = 0.0, loss = 0.0, worst = 0.0;
    int top = -1, enabled = 0;
    unsigned cls = 0;
    for (unsigned k = 0; k < in->nkinds && k < 16; k++) {
        if (!(in->kinds_enabled & (1u << k)))
            continue;
        enabled++;
        total += in->rate_by_kind[k];
        if (in->rate_by_kind[k] > 0.0 && (top < 0 || in->rate_by_kind[k] > in->rate_by_kind[top]))
            top = (int)k;
    }
    for (unsigned c = 0; c < in->nloss && c < 16; c++) {
        loss += in->loss_rate[c];
        if (in->loss_rate[c] > worst) {
            worst = in->loss_rate[c];
            cls = c;
        }
    }
    if (!(loss > 0.0)) {
        if (top >= 0)
            snprintf(buf, len, "No losses now: nothing to narrow (%s makes most records).",
                     kind_name((unsigned)top));
        else
            snprintf(buf, len, "No losses now: nothing to narrow.");
        return -1;
    }
    char where[96];
    pressure_text(in, cls, loss_name, where, sizeof where);
    if (cls == CUPSTORE_LOSS_STORE_REFUSED) {
        snprintf(buf, len, "The store refuses writes: free disk space first; narrowing "
                           "kinds helps less.");
        return -1;
    }
    if (top < 0) {
        snprintf(buf, len, "Losses (%s) but no records: see the session notes.", where);
        return -1;
    }
    /* Pool starvation: CUPTI holds every buffer (outstanding = limit), so
     * requests are declined whatever the kinds; on the H200 narrowing cut
     * such drops by 60-65% only, a bigger pool ended them. */
    if ((cls == CUPSTORE_LOSS_DECLINED || cls == CUPSTORE_LOSS_CUPTI_DROPPED) &&
        in->pool_limit > 0.0 && in->buf_outstanding >= in->pool_limit) {
        snprintf(buf, len, "Press + to double the buffer pool: CUPTI holds %s %.0f buffer%s, "
                           "so narrowing kinds would not free one (%s).",
                 in->pool_limit == 1.0 ? "its" : "all", in->pool_limit,
                 in->pool_limit == 1.0 ? "" : "s", where);
        return -1;
    }
    if (enabled <= 1) {
        snprintf(buf, len, "Only %s is left; enlarge the buffer pool instead (+) (%s).",
                 kind_name((unsigned)top), where);
        return -1;
    }
    char rate[16];
    tui_format_count(in->rate_by_kind[top], rate, sizeof rate);
    snprintf(buf, len, "Narrow %s next: %.0f%% of records (%s/s); pressure: %s.",
             kind_name((unsigned)top), 100.0 * in->rate_by_kind[top] / total, rate, where);
    return top;
}
