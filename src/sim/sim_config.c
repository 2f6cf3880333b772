/*
 * sim_config.c - the simulator's configuration: a named scenario preset
 * (CUPTOPSIM_SCENARIO), then the individual CUPTOPSIM_* variables on top.
 * Every variable is documented in doc/sim.md.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_args.h"
#include "sim_int.h"

_Static_assert(SIM_ARGS_DEVICES_MAX == SIM_DEV_MAX,
               "one device range for cuptop demo and the simulator");

static const char *const sim_kind_names[SIM_KINDS] = {
    "kernel", "memcpy", "memset", "runtime", "driver", "sync", "overhead", "marker", "graph",
};

const char *sim_kind_name(unsigned k)
{
    return k < SIM_KINDS ? sim_kind_names[k] : NULL;
}

static int sim_kind_parse(const char *s, size_t n)
{
    for (unsigned k = 0; k < SIM_KINDS; k++)
        if (strlen(sim_kind_names[k]) == n && !strncmp(s, sim_kind_names[k], n))
            return (int)k;
    if (n == 15 && !strncmp(s, "synchronization", n))
        return SIM_K_SYNC;
    return -1;
}

/* A scenario: rates (operations per second per device) and faults. */
typedef struct sim_scenario {
    const char *name;
    const char *rates;
    const char *faults;
    uint32_t api_version;         /* 0: keep the default */
    unsigned api_mix;             /* noise API calls per GPU operation */
} sim_scenario;

static const sim_scenario sim_scenarios[] = {
    {"clean", "kernel=20000,memcpy=2000,memset=500,runtime=1000,driver=1000,sync=200,"
              "overhead=10,marker=100", "", 0},
    {"drops", "kernel=200000,memcpy=20000,memset=5000,runtime=20000,driver=20000,sync=2000,"
              "overhead=100,marker=1000", "slow=20", 0},
    {"burst", "kernel=10000,memcpy=1000,memset=200,runtime=500,driver=500,sync=100,"
              "overhead=10,marker=50", "burst=30,burst_ms=200,burst_every=1000", 0},
    {"slow-consumer", "kernel=50000,memcpy=5000,memset=1000,runtime=2000,driver=2000,"
                      "sync=500,overhead=20,marker=200", "slow=50", 0},
    {"crash", "kernel=100000,memcpy=10000,runtime=5000,driver=5000", "slow=20", 26},
    {"conflict", "kernel=20000,memcpy=2000,runtime=1000,driver=1000",
                 "subscriber=1,foreign=8", 0},
    {"invalid", "kernel=20000,memcpy=2000,memset=500,runtime=1000,driver=1000",
                "invalid=997", 0},
    {"zero-ts", "kernel=20000,memcpy=2000,memset=500,runtime=1000,driver=1000",
                "zero_ts=101,zero_ts_need=4096", 0},
    {"dup", "kernel=20000,memcpy=2000,runtime=1000,driver=1000", "dup=5", 0},
    /* Several kinds, mostly API calls (as a framework makes them): the
     * completion thread returns one buffer per 28 ms, which keeps up with
     * the GPU kinds alone but not with runtime and driver on (arithmetic in
     * doc/sim.md). */
    {"demo", "kernel=5000,memcpy=500,memset=100,sync=100,runtime=40000,driver=40000,"
             "overhead=20,marker=50", "slow=28", 0},
    /* A framework's loop: launches with device queries, capture checks,
     * attribute and error reads between them (7 API calls per GPU
     * operation, as PyTorch makes them on the H200: doc/benchmarks.md). */
    {"pytorch", "kernel=20000,memcpy=200,memset=100,sync=50", "", 0, 5},
    /* Compiled inference or training: CUDA graph launches (10 kernel nodes
     * each, CUPTOPSIM_GRAPH_NODES), a few plain launches and copies. */
    {"graph", "graph=2000,kernel=500,memcpy=200,runtime=100,driver=100", "", 0},
};

/* Parse "k=v,k=v" rates into c->rate[]; a kind not named keeps its value. */
static int sim_parse_rates(sim_config *c, const char *s, char *why, size_t whylen)
{
    while (s && *s) {
        const char *eq = strchr(s, '='), *comma = strchr(s, ',');
        if (!comma)
            comma = s + strlen(s);
        if (!eq || eq > comma) {
            snprintf(why, whylen, "rates: \"%.*s\" is not kind=value", (int)(comma - s), s);
            return -1;
        }
        int k = sim_kind_parse(s, (size_t)(eq - s));
        double v = 0;
        if (k < 0 || sim_args_rate(eq + 1, (size_t)(comma - eq - 1), &v)) {
            snprintf(why, whylen, "rates: bad entry \"%.*s\" (a kind=rate, the rate %s)",
                     (int)(comma - s), s, SIM_ARGS_RATE_TEXT);
            return -1;
        }
        c->rate[k] = v;
        s = *comma ? comma + 1 : comma;
    }
    return 0;
}

static int sim_u(const char *v, unsigned long max, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long u = strtoul(v, &end, 10);
    if (errno || end == v || *end || u > max)
        return -1;
    *out = (unsigned)u;
    return 0;
}

/* Parse CUPTOPSIM_FAULTS-style "key=value,..." into c. */
static int sim_parse_faults(sim_config *c, const char *s, char *why, size_t whylen)
{
    char buf[512], *save = NULL;
    snprintf(buf, sizeof buf, "%s", s ? s : "");
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        const char *v = eq ? eq + 1 : "1";
        unsigned u = 0;
        int bad = 0;
        if (eq)
            *eq = '\0';
        if (!strcmp(tok, "slow"))
            bad = sim_u(v, 60000, &c->slow_ms);
        else if (!strcmp(tok, "burst")) {
            bad = sim_u(v, 10000, &u);
            c->burst_k = u;
        } else if (!strcmp(tok, "burst_ms"))
            bad = sim_u(v, 3600000, &c->burst_ms);
        else if (!strcmp(tok, "burst_every"))
            bad = sim_u(v, 3600000, &c->burst_every_ms);
        else if (!strcmp(tok, "invalid"))
            bad = sim_u(v, 1u << 30, &c->invalid_every);
        else if (!strcmp(tok, "zero_ts"))
            bad = sim_u(v, 1u << 30, &c->zero_ts_every);
        else if (!strcmp(tok, "zero_ts_need"))
            bad = sim_u(v, 1u << 30, &c->zero_ts_need_mib);
        else if (!strcmp(tok, "subscriber")) {
            bad = sim_u(v, 1, &u);
            c->subscriber = u;
        } else if (!strcmp(tok, "foreign"))
            bad = sim_u(v, 1u << 30, &c->foreign_every);
        else if (!strcmp(tok, "steal"))
            bad = sim_u(v, 1u << 30, &c->steal_every);
        else if (!strcmp(tok, "dup"))
            bad = sim_u(v, 1u << 30, &c->dup_every);
        else if (!strcmp(tok, "silent"))
            bad = sim_u(v, 1u << 30, &c->silent_every);
        else if (!strcmp(tok, "sync_copy"))
            bad = sim_u(v, 1u << 30, &c->sync_copy_every);
        else if (!strcmp(tok, "slow_kernel")) {
            bad = sim_u(v, SIM_KERNEL_NAMES - 1, &u);
            c->slow_kernel = u + 1;
        } else if (!strcmp(tok, "slow_kernel_x"))
            bad = sim_u(v, 1000, &c->slow_kernel_x) || !c->slow_kernel_x;
        else if (!strcmp(tok, "no_api_filter")) {
            bad = sim_u(v, 1, &u);
            c->no_api_filter = u;
        } else if (!strcmp(tok, "enable_fail"))
            bad = sim_u(v, 0x7fffffff, &c->enable_fail);
        else if (!strcmp(tok, "nvtx_init_slow"))
            bad = sim_u(v, 10000, &c->nvtx_init_ms);
        else if (!strcmp(tok, "enable_slow"))
            bad = sim_u(v, 10000, &c->enable_slow_ms);
        else if (!strcmp(tok, "graph_strict")) {
            bad = sim_u(v, 1, &u);
            c->graph_strict = u;
        }
        else
            bad = -1;
        if (bad) {
            snprintf(why, whylen, "CUPTOPSIM_FAULTS: bad or unknown entry \"%s%s%s\"", tok,
                     eq ? "=" : "", eq ? v : "");
            return -1;
        }
    }
    if (c->burst_k > 0 && (!c->burst_ms || !c->burst_every_ms)) {
        if (!c->burst_ms)
            c->burst_ms = 200;
        if (!c->burst_every_ms)
            c->burst_every_ms = 1000;
    }
    return 0;
}

static const char *sim_env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static int sim_env_u(const char *name, unsigned lo, unsigned long hi, unsigned *out, char *why,
                     size_t whylen)
{
    const char *v = sim_env(name);
    unsigned u;
    if (!v)
        return 0;
    if (sim_u(v, hi, &u) || u < lo) {
        snprintf(why, whylen, "%s=\"%.40s\": not a number from %u to %lu", name, v, lo, hi);
        return -1;
    }
    *out = u;
    return 0;
}

int sim_config_load(sim_config *c, char *why, size_t whylen)
{
    const sim_scenario *sc = &sim_scenarios[0];
    const char *v;
    unsigned u;

    memset(c, 0, sizeof *c);
    c->devices = 1;
    c->streams = 4;
    c->threads = 2;
    c->api_version = CUPTI_API_VERSION;
    c->null_signal = SIGSEGV;
    c->seed = 1;
    c->graph_nodes = 10;
    if ((v = sim_env("CUPTOPSIM_SCENARIO"))) {
        sc = NULL;
        for (size_t i = 0; i < sizeof sim_scenarios / sizeof *sim_scenarios; i++)
            if (!strcmp(v, sim_scenarios[i].name))
                sc = &sim_scenarios[i];
        if (!sc) {
            snprintf(why, whylen, "CUPTOPSIM_SCENARIO=\"%.40s\": unknown scenario", v);
            return -1;
        }
    }
    snprintf(c->scenario, sizeof c->scenario, "%s", sc->name);
    if (sim_parse_rates(c, sc->rates, why, whylen) || sim_parse_faults(c, sc->faults, why, whylen))
        return -1;
    c->api_mix = sc->api_mix;
    if (sc->api_version)
        c->api_version = sc->api_version;

    if ((v = sim_env("CUPTOPSIM_DEVICES")) && sim_args_devices(v, &c->devices)) {
        snprintf(why, whylen, "CUPTOPSIM_DEVICES=\"%.40s\": not %s", v, SIM_ARGS_DEVICES_TEXT);
        return -1;
    }
    if (sim_env_u("CUPTOPSIM_STREAMS", 1, SIM_STREAM_MAX, &c->streams, why, whylen) ||
        sim_env_u("CUPTOPSIM_THREADS", 0, SIM_THREAD_MAX, &c->threads, why, whylen))
        return -1;
    if ((v = sim_env("CUPTOPSIM_RATES"))) {
        /* Replaces the scenario's rates (a kind not named is not produced);
         * a leading '+' overrides only the kinds named. */
        if (*v == '+')
            v++;
        else
            memset(c->rate, 0, sizeof c->rate);
        if (sim_parse_rates(c, v, why, whylen))
            return -1;
    }
    if ((v = sim_env("CUPTOPSIM_SCALE"))) {
        char *end;
        errno = 0;
        double f = strtod(v, &end);
        if (errno || *end || !(f >= 0 && f <= 1e6)) {
            snprintf(why, whylen, "CUPTOPSIM_SCALE=\"%.40s\": not a factor from 0 to 1e6", v);
            return -1;
        }
        for (unsigned k = 0; k < SIM_KINDS; k++)
            c->rate[k] *= f;
    }
    for (unsigned d = 0; d < SIM_DEV_MAX; d++)
        c->dev_scale[d] = 1.0;
    if ((v = sim_env("CUPTOPSIM_DEVICE_SCALE"))) {
        /* "F0,F1,...": device d's rates are multiplied by Fd (missing: 1). */
        const char *p = v;
        for (unsigned d = 0; d < SIM_DEV_MAX && *p; d++) {
            char *end;
            errno = 0;
            double f = strtod(p, &end);
            if (errno || end == p || (*end && *end != ',') || !(f >= 0 && f <= 1e6)) {
                snprintf(why, whylen, "CUPTOPSIM_DEVICE_SCALE=\"%.40s\": not a list of factors", v);
                return -1;
            }
            c->dev_scale[d] = f;
            p = *end ? end + 1 : end;
        }
    }
    if (sim_env_u("CUPTOPSIM_DEVICE_BASE", 0, SIM_DEV_MAX - 1, &c->device_base, why, whylen))
        return -1;
    if ((v = sim_env("CUPTOPSIM_FAULTS")) && sim_parse_faults(c, v, why, whylen))
        return -1;
    if (sim_env_u("CUPTOPSIM_API_MIX", 0, 64, &c->api_mix, why, whylen) ||
        sim_env_u("CUPTOPSIM_GRAPH_NODES", 1, 1000, &c->graph_nodes, why, whylen))
        return -1;
    u = 0;
    if (sim_env_u("CUPTOPSIM_MAX_RATE", 0, 1, &u, why, whylen))
        return -1;
    c->max_rate = u;
    if ((v = sim_env("CUPTOPSIM_OPS"))) {
        char *end;
        errno = 0;
        c->ops = strtoull(v, &end, 10);
        if (errno || *end) {
            snprintf(why, whylen, "CUPTOPSIM_OPS=\"%.40s\": not a number", v);
            return -1;
        }
    }
    u = c->api_version;
    if (sim_env_u("CUPTOPSIM_API_VERSION", 1, 0xffffffffUL, &u, why, whylen))
        return -1;
    c->api_version = u;
    if ((v = sim_env("CUPTOPSIM_NULL_CRASH"))) {
        if (!strcmp(v, "segv"))
            c->null_signal = SIGSEGV;
        else if (!strcmp(v, "abort"))
            c->null_signal = SIGABRT;
        else {
            snprintf(why, whylen, "CUPTOPSIM_NULL_CRASH=\"%.40s\": segv or abort", v);
            return -1;
        }
    }
    if ((v = sim_env("CUPTOPSIM_SEED"))) {
        char *end;
        c->seed = strtoull(v, &end, 0);
        if (*end) {
            snprintf(why, whylen, "CUPTOPSIM_SEED=\"%.40s\": not a number", v);
            return -1;
        }
    }
    if ((v = sim_env("CUPTOPSIM_TRUTH")))
        snprintf(c->truth, sizeof c->truth, "%s", v);
    return 0;
}
