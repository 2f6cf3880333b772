/* agent_names.c - name interning (see agent_names.h). */
#include "agent_names.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint32_t names_hash(const char *s, size_t len)
{
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (uint8_t)s[i];
        h *= 16777619u;
    }
    return h;
}

int agent_names_init(agent_names *nm)
{
    memset(nm, 0, sizeof *nm);
    nm->tmask = 1023;
    nm->table = calloc(nm->tmask + 1, sizeof *nm->table);
    nm->batch = 1;
    nm->api = calloc(2 * (size_t)AGENT_CBID_MAX, sizeof *nm->api);
    if (!nm->table || !nm->api) {
        free(nm->table);
        free(nm->api);
        memset(nm, 0, sizeof *nm);
        return ENOMEM;
    }
    return 0;
}

void agent_names_free(agent_names *nm)
{
    for (uint32_t i = 0; i < nm->n; i++)
        free(nm->v[i].str);
    free(nm->v);
    free(nm->table);
    free(nm->pending);
    free(nm->api);
    memset(nm, 0, sizeof *nm);
}

static int names_rehash(agent_names *nm)
{
    uint32_t nmask = nm->tmask * 2 + 1;
    uint32_t *t = calloc((size_t)nmask + 1, sizeof *t);
    if (!t)
        return ENOMEM;
    for (uint32_t id = 1; id <= nm->n; id++) {
        uint32_t i = nm->v[id - 1].hash & nmask;
        while (t[i])
            i = (i + 1) & nmask;
        t[i] = id;
    }
    free(nm->table);
    nm->table = t;
    nm->tmask = nmask;
    return 0;
}

static void names_mark_pending(agent_names *nm, uint32_t id)
{
    agent_name *e = &nm->v[id - 1];
    if (e->stored || e->batch == nm->batch)
        return;
    if (nm->npending == nm->pcap) {
        uint32_t ncap = nm->pcap ? nm->pcap * 2 : 64;
        uint32_t *p = realloc(nm->pending, ncap * sizeof *p);
        if (!p)
            return;   /* retried when the name is next used */
        nm->pending = p;
        nm->pcap = ncap;
    }
    nm->pending[nm->npending++] = id;
    e->batch = nm->batch;
}

uint32_t agent_names_intern(agent_names *nm, const char *s, size_t len)
{
    if (!s)
        return 0;
    if (len == SIZE_MAX)
        len = strnlen(s, AGENT_NAME_MAX_LEN);
    if (len > AGENT_NAME_MAX_LEN)
        len = AGENT_NAME_MAX_LEN;
    if (len == 0)
        return 0;
    uint32_t h = names_hash(s, len), i = h & nm->tmask, id;
    while ((id = nm->table[i])) {
        agent_name *e = &nm->v[id - 1];
        if (e->hash == h && e->len == len && !memcmp(e->str, s, len)) {
            names_mark_pending(nm, id);
            return id;
        }
        i = (i + 1) & nm->tmask;
    }
    if (nm->n >= AGENT_NAMES_MAX || nm->n + 1 >= nm->tmask)
        return 0;   /* full (or a rehash failed): no id */
    if (nm->n == nm->cap) {
        uint32_t ncap = nm->cap ? nm->cap * 2 : 256;
        agent_name *v = realloc(nm->v, ncap * sizeof *v);
        if (!v)
            return 0;
        nm->v = v;
        nm->cap = ncap;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return 0;
    memcpy(copy, s, len);
    copy[len] = '\0';
    id = ++nm->n;
    nm->v[id - 1] = (agent_name){.str = copy, .len = (uint32_t)len, .hash = h};
    nm->table[i] = id;
    if (nm->n * 2 > nm->tmask)
        (void)names_rehash(nm);   /* on ENOMEM the table just gets fuller */
    names_mark_pending(nm, id);
    return id;
}

void agent_names_touch(agent_names *nm, uint32_t id)
{
    if (id >= 1 && id <= nm->n)
        names_mark_pending(nm, id);
}

size_t agent_names_api_strip(const char *s, size_t len)
{
    size_t d = 0;
    while (d < len && d < 6 && s[len - 1 - d] >= '0' && s[len - 1 - d] <= '9')
        d++;
    if ((d == 4 || d == 5) && len > d + 2 && s[len - d - 1] == 'v' && s[len - d - 2] == '_')
        return len - d - 2;
    return len;
}

uint32_t agent_names_api_resolve(agent_names *nm, unsigned domain, uint32_t cbid,
                                 agent_api_name_fn fn, void *arg)
{
    const char *s = fn ? fn(domain, cbid, arg) : NULL;
    uint32_t id = 0;
    if (s) {
        size_t len = strnlen(s, AGENT_NAME_MAX_LEN);
        id = agent_names_intern(nm, s, agent_names_api_strip(s, len));
        if (id == 0)
            return 0;   /* out of room: asked again next time */
    }
    nm->api[domain * AGENT_CBID_MAX + cbid] = id ? id : AGENT_API_UNNAMED;
    return id;
}

const agent_name *agent_names_get(const agent_names *nm, uint32_t id)
{
    return id >= 1 && id <= nm->n ? &nm->v[id - 1] : NULL;
}

size_t agent_names_pending(const agent_names *nm, const uint32_t **ids)
{
    *ids = nm->pending;
    return nm->npending;
}

void agent_names_batch_end(agent_names *nm, bool committed)
{
    for (uint32_t i = 0; i < nm->npending; i++)
        if (committed)
            nm->v[nm->pending[i] - 1].stored = true;
    nm->npending = 0;
    nm->batch++;
}
