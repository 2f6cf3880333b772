/*
 * model_baseline.c - the baseline's verdict: the seed's two control runs
 * per configuration, their wall times and what they conclude
 * (model_compare.h, "baseline").
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* ---- baseline: the seed's two control runs ------------------------------------------------- */

static int dbl_cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

void model_bl_walls(model_bl_config *c, const double *wall_s, size_t n)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    c->wall_median_s = c->wall_min_s = c->wall_max_s = c->spread = 0;
    if (!v || !n) {
        free(v);
        return;
    }
    memcpy(v, wall_s, n * sizeof *v);
    qsort(v, n, sizeof *v, dbl_cmp);
    c->wall_median_s = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    c->wall_min_s = v[0];
    c->wall_max_s = v[n - 1];
    c->spread = c->wall_median_s > 0 ? (v[n - 1] - v[0]) / c->wall_median_s : 0;
    free(v);
}

const char *model_bl_name(model_bl_conclusion c)
{
    static const char *const names[] = {"usable_baseline", "record_pressure", "buffer_supply",
                                        "narrowed_only",   "untraced",        "command_failed"};
    return (unsigned)c < sizeof names / sizeof *names ? names[c] : "?";
}

model_bl_conclusion model_bl_conclude(model_bl_config cfg[MODEL_BL_CONFIGS], char *text,
                                      size_t len)
{
    const model_bl_config *n = &cfg[MODEL_BL_NARROW], *f = &cfg[MODEL_BL_FULL];
    for (int i = 0; i < MODEL_BL_CONFIGS; i++)
        if (cfg[i].failed) {
            snprintf(text, len, "the command failed in %zu of %zu runs (%s): fix the "
                     "workload first; nothing is concluded", cfg[i].failed, cfg[i].runs,
                     i == MODEL_BL_OFF ? "collection off" : i == MODEL_BL_NARROW ? "narrowed"
                                                                                  : "full");
            return MODEL_BL_FAILED;
        }
    if (n->sessions < n->runs || f->sessions < f->runs) {
        snprintf(text, len, "%zu traced runs left no session (the agent was not loaded or "
                 "could not open the store): nothing is concluded",
                 (n->runs - n->sessions) + (f->runs - f->sessions));
        return MODEL_BL_UNTRACED;
    }
    if (!n->lossy && !f->lossy) {
        snprintf(text, len, "no loss anywhere: the full run is a usable baseline (compare "
                 "later runs against it with cuptop compare)");
        return MODEL_BL_USABLE;
    }
    if (!n->lossy) {
        snprintf(text, len, "loss only at full collection and none narrowed: the loss is "
                 "caused by record pressure; narrowing clears it, but that does not make the "
                 "full trace right: do not use the full runs for timing attribution");
        return MODEL_BL_PRESSURE;
    }
    if (f->lossy) {
        snprintf(text, len, "loss both narrowed and at full collection: not record pressure "
                 "alone; look at the buffer supply (pool, buffer size) or the store "
                 "(cuptop report on a lossy session)");
        return MODEL_BL_SUPPLY;
    }
    snprintf(text, len, "loss narrowed but none at full collection: not caused by record "
             "pressure and not reproducible here; look at the buffer supply or the store and "
             "run more runs");
    return MODEL_BL_NARROW_ONLY;
}
