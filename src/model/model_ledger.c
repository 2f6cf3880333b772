/*
 * model_ledger.c - the launch ledger's result read back (model_ledger.h).
 * The agent writes it as "key=value ..." metadata (agent_launches.c);
 * unknown keys are skipped, so a newer agent's additions read fine.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model_ledger.h"

static const char *const kind_names[MODEL_LEDGER_KINDS] = {"kernel", "memcpy", "memset",
                                                                   "graph"};

const char *model_ledger_kind_name(unsigned k)
{
    return k < MODEL_LEDGER_KINDS ? kind_names[k] : "?";
}

void model_ledger_hole_text(const model_ledger_stream *h, char *buf, size_t len)
{
    char what[160] = "", t0[40], t1[40], names[64] = "";
    size_t n = 0;
    if (h->named_known && h->missing[0])   /* kernel launches carry a name */
        snprintf(names, sizeof names, ", names known for %" PRIu32, h->named);
    for (unsigned k = 0; k < MODEL_LEDGER_KINDS; k++)
        if (h->missing[k] && n < sizeof what)
            n += (size_t)snprintf(what + n, sizeof what - n, "%s%" PRIu64 " %s", n ? ", " : "",
                                  h->missing[k], kind_names[k]);
    model_format_second(h->first_ns / 1000000000u, t0, sizeof t0);
    model_format_second(h->last_ns / 1000000000u, t1, sizeof t1);
    if (h->other)
        snprintf(buf, len, "other streams: %s records missing, launched %s..%s (%" PRIu32
                 " launches%s)", what, t0, t1, h->launches, names);
    else
        snprintf(buf, len, "stream %" PRIu32 " on device %" PRIu32 ": %s records missing, "
                 "launched %s..%s by thread %" PRIu32 " (%" PRIu32 " launches%s)", h->stream,
                 h->device, what, t0, t1, h->tid, h->launches, names);
}

/* The value of `key` in a "k=v k=v" text, or NULL. */
static const char *field(const char *text, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = text; p && *p;) {
        while (*p == ' ')
            p++;
        if (!strncmp(p, key, n) && p[n] == '=')
            return p + n + 1;
        p = strchr(p, ' ');
    }
    return NULL;
}

static uint64_t u64(const char *text, const char *key)
{
    const char *v = field(text, key);
    return v ? strtoull(v, NULL, 10) : 0;
}

static uint64_t kind_u64(const char *text, unsigned k, const char *what)
{
    char key[48];
    snprintf(key, sizeof key, "%s.%s", kind_names[k], what);
    return u64(text, key);
}

static void read_totals(const char *v, model_ledger *l)
{
    l->launches = u64(v, "launches");
    l->cancelled = u64(v, "cancelled");
    l->ambiguous = u64(v, "ambiguous");
    l->capturing = u64(v, "capturing");
    l->overrun = u64(v, "overrun");
    l->busy = u64(v, "busy");
    l->unknowable = u64(v, "unknowable");
    l->graphs = u64(v, "graphs");
    l->graphs_unknowable = u64(v, "graphs_unknowable");
    l->exact = u64(v, "exact") != 0;
    l->partial = u64(v, "partial") != 0;
    l->unjudged = u64(v, "unjudged") != 0;
    l->switches = (uint32_t)u64(v, "switches");
    for (unsigned k = 0; k < MODEL_LEDGER_KINDS; k++) {
        l->expected[k] = kind_u64(v, k, "expected");
        l->matched[k] = kind_u64(v, k, "matched");
        l->missing[k] = kind_u64(v, k, "missing");
        l->unrecorded[k] = kind_u64(v, k, "unrecorded");
        l->orphan[k] = kind_u64(v, k, "orphan");
        l->extra[k] = kind_u64(v, k, "extra");
    }
}

static void read_stream(const char *v, bool other, model_ledger_stream *s)
{
    memset(s, 0, sizeof *s);
    s->other = other;
    s->device = (uint32_t)u64(v, "device");
    s->stream = (uint32_t)u64(v, "stream");
    s->tid = (uint32_t)u64(v, "tid");
    s->launches = (uint32_t)u64(v, "launches");
    s->named_known = field(v, "named") != NULL;
    s->named = (uint32_t)u64(v, "named");
    s->first_ns = u64(v, "first_ns");
    s->last_ns = u64(v, "last_ns");
    for (unsigned k = 0; k < MODEL_LEDGER_KINDS; k++)
        s->missing[k] = u64(v, kind_names[k]);
}

/* One `lost` row into the per-second table. */
static int on_lost(const cupstore_lost *r, void *arg)
{
    model_ledger *l = arg;
    uint64_t sec = r->launch_ns / 1000000000u;
    l->lost_rows++;
    if (!l->nseconds || l->second[l->nseconds - 1].second != sec) {
        if (l->nseconds == MODEL_LEDGER_SECONDS) {
            if (l->seconds_more == 0 || l->more_last != sec)
                l->seconds_more++;
            l->more_last = sec;
            return 0;
        }
        l->second[l->nseconds].second = sec;
        memset(l->second[l->nseconds].missing, 0, sizeof l->second[0].missing);
        l->nseconds++;
    }
    for (unsigned k = 0; k < MODEL_LEDGER_KINDS; k++)
        l->second[l->nseconds - 1].missing[k] += r->missing[k];
    return 0;
}

int model_ledger_read(cupstore_txn *txn, model_ledger *l)
{
    char *v = NULL;
    memset(l, 0, sizeof *l);
    int rc = cupstore_meta_get(txn, "ledger", &v);
    if (rc == CUPSTORE_ENOTFOUND)
        return 0;
    if (rc)
        return rc;
    l->present = true;
    read_totals(v, l);
    free(v);
    for (unsigned i = 0; i < MODEL_LEDGER_STREAMS; i++) {
        char key[32];
        bool other = i == MODEL_LEDGER_STREAMS - 1;
        if (other)
            snprintf(key, sizeof key, "ledger.stream.other");
        else
            snprintf(key, sizeof key, "ledger.stream.%u", i);
        v = NULL;
        rc = cupstore_meta_get(txn, key, &v);
        if (rc == CUPSTORE_ENOTFOUND)
            continue;
        if (rc)
            return rc;
        read_stream(v, other, &l->stream[l->nstreams++]);
        free(v);
    }
    return cupstore_lost_scan(txn, 0, UINT64_MAX, on_lost, l);
}

void model_ledger_partial_text(const model_ledger *l, char *buf, size_t len)
{
    if (l->unjudged) {
        snprintf(buf, len, "ledger: not judged (the consumer was still in a store commit when "
                 "the session stopped): launches are counted, arrived only as last counted "
                 "live; no record is called missing or unrecorded (the tail class counts "
                 "what was not stored)");
        return;
    }
    snprintf(buf, len, "ledger: partial (switched on or off %" PRIu32 " time%s at runtime): "
             "launches outside its spans were not expected, so records CUPTI lost of them "
             "silently cannot be seen; unrecorded is a lower bound",
             l->switches, l->switches == 1 ? "" : "s");
}
