/*
 * export_prov.c - a session's provenance (model_prov.h) as JSON: the
 * fields `cuptop sessions --json` carries and the first line of a jsonl
 * export repeats.  Values are the agent's strings, escaped; an unknown
 * item is null, with its reason under "unknown".
 */
#include "config.h"

#include <inttypes.h>
#include <string.h>

#include "export.h"
#include "model_prov.h"

static void json_str_or_null(xout *o, const char *s)
{
    if (s)
        xout_json_str(o, s, strlen(s));
    else
        xout_puts(o, "null");
}

void prov_json(xout *o, const model_prov *p, uint32_t device_mask)
{
    if (!p) {
        xout_puts(o, ",\"label\":null,\"simulated\":false,\"versions\":null,\"devices\":null");
        return;
    }
    xout_puts(o, ",\"label\":");
    json_str_or_null(o, p->label);
    xout_printf(o, ",\"simulated\":%s,\"versions\":{", p->simulated ? "true" : "false");
    for (unsigned i = 0; i < MODEL_V_MAX; i++) {
        xout_printf(o, "%s\"%s\":", i ? "," : "", model_prov_vname(i));
        json_str_or_null(o, p->v[i]);
    }
    xout_puts(o, ",\"unknown\":{");
    for (unsigned i = 0, n = 0; i < MODEL_V_MAX; i++)
        if (p->why[i]) {
            xout_printf(o, "%s\"%s\":", n++ ? "," : "", model_prov_vname(i));
            xout_json_str(o, p->why[i], strlen(p->why[i]));
        }
    xout_puts(o, "}},\"system\":{\"os\":");
    json_str_or_null(o, p->os);
    xout_puts(o, ",\"virt\":");
    json_str_or_null(o, p->virt);
    xout_puts(o, "},\"devices\":[");
    unsigned n = 0;
    for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX; d++) {
        const model_device *v = &p->dev[d];
        if (!v->known && !(device_mask & (1u << d)))
            continue;
        xout_printf(o, "%s{\"index\":%u,\"name\":", n++ ? "," : "", d);
        json_str_or_null(o, v->known ? v->name : NULL);
        if (v->from_cupti) {
            xout_puts(o, ",\"uuid\":");
            json_str_or_null(o, v->uuid[0] ? v->uuid : NULL);
            xout_puts(o, ",\"compute_capability\":");
            json_str_or_null(o, v->cc[0] ? v->cc : NULL);
            xout_printf(o, ",\"sm_count\":%" PRIu32 ",\"memory_bytes\":%" PRIu64 ",\"mig\":%s",
                        v->sm, v->memory, v->mig < 0 ? "null" : v->mig ? "true" : "false");
            xout_printf(o, ",\"source\":\"cupti\",\"simulated\":%s}",
                        v->simulated ? "true" : "false");
        } else {
            xout_puts(o, ",\"uuid\":null,\"compute_capability\":null,\"sm_count\":null,"
                         "\"memory_bytes\":null,\"mig\":null,\"source\":");
            xout_puts(o, v->known ? "\"name only (older agent)\"" : "null");
            xout_puts(o, ",\"unknown\":\"no DEVICE record from CUPTI\"}");
        }
    }
    xout_puts(o, "]");
}
