/* model_prov.c - a session's provenance (see model_prov.h). */
#include "model_prov.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const vkey[MODEL_V_MAX] = {
    "driver_version", "cuda_driver_version", "cuda_runtime_version", "cupti_version",
    "cupti_api_version", "cuptop_version", "kernel_release",
};
static const char *const vname[MODEL_V_MAX] = {
    "driver", "cuda_driver", "cuda_runtime", "cupti", "cupti_api", "cuptop", "kernel",
};
static const char *const vlabel[MODEL_V_MAX] = {
    "driver", "CUDA driver API", "CUDA runtime", "CUPTI", "CUPTI API", "cuptop", "kernel",
};

const char *model_prov_vname(unsigned i)
{
    return i < MODEL_V_MAX ? vname[i] : "?";
}

const char *model_prov_vlabel(unsigned i)
{
    return i < MODEL_V_MAX ? vlabel[i] : "?";
}

static char *meta(cupstore_txn *txn, const char *key)
{
    char *v = NULL;
    if (cupstore_meta_get(txn, key, &v) != 0)
        return NULL;
    if (v && !v[0]) {
        free(v);
        return NULL;
    }
    return v;
}

/* value of "key=" in a block of key=value lines, copied into buf */
static bool line_val(const char *block, const char *key, char *buf, size_t len)
{
    size_t kl = strlen(key);
    for (const char *l = block; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, key, kl) == 0 && l[kl] == '=') {
            const char *v = l + kl + 1;
            size_t n = strcspn(v, "\n");
            if (n >= len)
                n = len - 1;
            memcpy(buf, v, n);
            buf[n] = '\0';
            return true;
        }
    }
    return false;
}

static void read_device(cupstore_txn *txn, unsigned d, model_device *o)
{
    char key[32], tmp[64];
    snprintf(key, sizeof key, "device.%u", d);
    char *v = meta(txn, key);
    o->mig = -1;
    if (!v)
        return;
    o->known = o->from_cupti = true;
    if (!line_val(v, "name", o->name, sizeof o->name))
        snprintf(o->name, sizeof o->name, "unknown");
    (void)line_val(v, "uuid", o->uuid, sizeof o->uuid);
    (void)line_val(v, "cc", o->cc, sizeof o->cc);
    if (line_val(v, "sm", tmp, sizeof tmp))
        o->sm = (uint32_t)strtoul(tmp, NULL, 10);
    if (line_val(v, "memory", tmp, sizeof tmp))
        o->memory = strtoull(tmp, NULL, 10);
    if (line_val(v, "mig", tmp, sizeof tmp))
        o->mig = atoi(tmp) != 0;
    o->simulated = line_val(v, "simulated", tmp, sizeof tmp) && strcmp(tmp, "1") == 0;
    free(v);
}

/* Sessions before DEVICE records: "devices" holds "index:name" lines, with
 * "device" standing for a name the agent could not find. */
static void read_old_devices(cupstore_txn *txn, model_prov *p)
{
    char *v = meta(txn, "devices");
    for (const char *l = v; l && *l;) {
        char *end;
        unsigned long d = strtoul(l, &end, 10);
        const char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - end - 1) : strlen(end) - 1;
        if (end != l && *end == ':' && d < CUPSTORE_DEVICE_MAX && !p->dev[d].known) {
            model_device *o = &p->dev[d];
            if (n >= sizeof o->name)
                n = sizeof o->name - 1;
            if (n && !(n == 6 && strncmp(end + 1, "device", 6) == 0)) {
                memcpy(o->name, end + 1, n);
                o->name[n] = '\0';
                o->known = true;
            }
        }
        l = nl ? nl + 1 : NULL;
    }
    free(v);
}

int model_prov_read(cupstore_txn *txn, model_prov *p)
{
    memset(p, 0, sizeof *p);
    char *unknown = meta(txn, "unknown");
    char *sim = meta(txn, "simulated");
    p->recorded = sim != NULL;
    p->simulated = sim && strcmp(sim, "1") == 0;
    free(sim);
    for (unsigned i = 0; i < MODEL_V_MAX; i++) {
        p->v[i] = meta(txn, vkey[i]);
        if (!p->v[i] && i == MODEL_V_CUPTOP) {
            /* older agents: "cuptop-agent 0.2.0" */
            char *a = meta(txn, "agent_version");
            if (a && strncmp(a, "cuptop-agent ", 13) == 0)
                memmove(a, a + 13, strlen(a + 13) + 1);
            p->v[i] = a;
        }
        if (!p->v[i] && i == MODEL_V_CUDA_DRIVER)
            p->v[i] = meta(txn, "cuda_version");   /* older agents */
        if (p->v[i])
            continue;
        char why[256];
        if (unknown && line_val(unknown, vkey[i], why, sizeof why))
            p->why[i] = strdup(why);
        else
            p->why[i] = strdup(p->recorded ? "not found" : "not recorded by this agent version");
        if (!p->why[i])
            goto oom;
    }
    free(unknown);
    p->label = meta(txn, "label");
    p->host = meta(txn, "host");
    p->os = meta(txn, "os");
    p->virt = meta(txn, "virt");
    p->config = meta(txn, "config");
    for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX; d++)
        read_device(txn, d, &p->dev[d]);
    read_old_devices(txn, p);
    return 0;
oom:
    free(unknown);
    model_prov_free(p);
    return ENOMEM;
}

void model_prov_free(model_prov *p)
{
    if (!p)
        return;
    for (unsigned i = 0; i < MODEL_V_MAX; i++) {
        free(p->v[i]);
        free(p->why[i]);
    }
    free(p->label);
    free(p->host);
    free(p->os);
    free(p->virt);
    free(p->config);
    memset(p, 0, sizeof *p);
}

void model_prov_device_label(const model_prov *p, unsigned index, char *buf, size_t len)
{
    if (p && index < CUPSTORE_DEVICE_MAX && p->dev[index].known)
        snprintf(buf, len, "GPU %u: %s", index, p->dev[index].name);
    else
        snprintf(buf, len, "GPU %u", index);
}
