/*
 * cmd_baseline.c - `cuptop baseline -- CMD ARGS`: the seed's two control
 * runs beside the full one.  CMD runs N times in each of three
 * configurations, interleaved (off, narrowed, full, off, ...): collection
 * off (the agent injected but dormant: no CUPTI call), narrowed (kernel
 * records only by default) and full (the configured kinds), all under one
 * workload label.  The runs go through `cuptop run`'s own path
 * (cli_run_traced); the verdict on the three is the model's
 * (model_bl_conclude).  The sessions stay in the store for `compare`.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cupstore.h"
#include "cuptop.h"
#include "export.h"
#include "model.h"

static void usage(FILE *f)
{
    fputs("usage: cuptop baseline [--runs N] [--narrow KINDS] [--kinds KINDS] [--label NAME]\n"
          "                       [--json] [--store DIR] -- CMD [ARGS...]\n\n"
          "Run CMD N times (default 3) in each of three configurations, interleaved:\n"
          "collection off (agent dormant), narrowed (--narrow, default kernel) and full\n"
          "(--kinds, default the agent's default kinds), all with one workload label\n"
          "(--label, default baseline-CMD-TIME).  Prints each configuration's wall time\n"
          "(median, min-max, spread) and its ratio to collection off (the perturbation),\n"
          "the losses per configuration, and the conclusion: loss only at full and none\n"
          "narrowed = caused by record pressure; loss in both = look at buffer supply or\n"
          "the store; no loss anywhere = the full run is a usable baseline.  The sessions\n"
          "stay in the store: compare them with cuptop compare.  --json prints the same\n"
          "table, sessions and conclusion (its id and text) as one JSON object.\n\n"
          "Exit status: 0 usable baseline; 1 any other conclusion; 2 usage error.\n",
          f);
}

static const char *const cfg_name[MODEL_BL_CONFIGS] = {"off", "narrowed", "full"};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct bl_run {
    double wall;
    int status;
    char session[128];
} bl_run;

static void print_text(const char *label, unsigned long runs, const char *const *kind_text,
                       const model_bl_config *cfg, const bl_run *r, model_bl_conclusion conc,
                       const char *text)
{
    char esc[600];
    model_escape(esc, sizeof esc, label, strlen(label));
    printf("baseline: %lu runs of each configuration, interleaved; label %s\n", runs, esc);
    printf("%-9s %-28s %9s %19s %7s %8s %6s %12s\n", "config", "kinds", "median s",
           "min-max s", "spread", "vs off", "lossy", "lost records");
    for (int c = 0; c < MODEL_BL_CONFIGS; c++) {
        const model_bl_config *m = &cfg[c];
        const char *k = kind_text[c];
        char mm[40], lossy[16];
        snprintf(mm, sizeof mm, "%.3f-%.3f", m->wall_min_s, m->wall_max_s);
        snprintf(lossy, sizeof lossy, "%zu/%zu", m->lossy, m->sessions);
        model_escape(esc, sizeof esc, k, strlen(k));
        printf("%-9s %-28s %9.3f %19s %6.1f%% %8.3f %6s %12" PRIu64 "\n", cfg_name[c], esc,
               m->wall_median_s, mm, m->spread * 100, m->ratio, lossy, m->lost);
    }
    printf("sessions:");
    for (unsigned long k = 0; k < runs; k++)
        for (int c = 0; c < MODEL_BL_CONFIGS; c++) {
            const bl_run *x = &r[k * MODEL_BL_CONFIGS + (unsigned)c];
            printf(" %s=%s", cfg_name[c], x->session[0] ? x->session : "(none)");
        }
    printf("\nconclusion (%s): %s\n", model_bl_name(conc), text);
}

static void print_json(const char *label, unsigned long runs, const char *const *kind_text,
                       const model_bl_config *cfg, const bl_run *r, model_bl_conclusion conc,
                       const char *text)
{
    xout o;
    if (cli_xout_begin("baseline", &o) != 0)
        return;
    xout_puts(&o, "{\"label\":");
    xout_json_str(&o, label, strlen(label));
    xout_printf(&o, ",\"runs\":%lu,\"configs\":[", runs);
    for (int c = 0; c < MODEL_BL_CONFIGS; c++) {
        const model_bl_config *m = &cfg[c];
        xout_printf(&o, "%s{\"config\":\"%s\",\"kinds\":", c ? "," : "", cfg_name[c]);
        xout_json_str(&o, kind_text[c], strlen(kind_text[c]));
        xout_printf(&o, ",\"runs\":%zu,\"sessions\":%zu,\"failed\":%zu,\"lossy\":%zu"
                        ",\"lost_records\":%" PRIu64 ",\"wall_median_s\":%.6f"
                        ",\"wall_min_s\":%.6f,\"wall_max_s\":%.6f,\"spread\":%.6f"
                        ",\"ratio_to_off\":%.6f,\"session_ids\":[",
                    m->runs, m->sessions, m->failed, m->lossy, m->lost, m->wall_median_s,
                    m->wall_min_s, m->wall_max_s, m->spread, m->ratio);
        for (unsigned long k = 0; k < runs; k++) {
            const bl_run *x = &r[k * MODEL_BL_CONFIGS + (unsigned)c];
            xout_puts(&o, k ? "," : "");
            if (x->session[0])
                xout_json_str(&o, x->session, strlen(x->session));
            else
                xout_puts(&o, "null");
        }
        xout_puts(&o, "]}");
    }
    xout_printf(&o, "],\"conclusion\":{\"id\":\"%s\",\"text\":", model_bl_name(conc));
    xout_json_str(&o, text, strlen(text));
    xout_puts(&o, "}}\n");
    cli_xout_end(&o);
}

int cmd_baseline(int argc, char **argv)
{
    const char *cmd = argv[0], *narrow = "kernel", *kinds = NULL, *label = NULL, *store = NULL;
    unsigned long runs = 3;
    bool json = false;
    int i;

    for (i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--")) {
            i++;
            break;
        }
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            usage(stdout);
            return CUPTOP_EXIT_OK;
        }
        if (o[0] != '-')
            break;
        if (!strcmp(o, "--json")) {
            json = true;
            continue;
        }
        if (strcmp(o, "--runs") && strcmp(o, "--narrow") && strcmp(o, "--kinds") &&
            strcmp(o, "--label") && strcmp(o, "--store"))
            return cli_usage_error(cmd, "unknown option \"%s\"", o);
        if (!v)
            return cli_usage_error(cmd, "%s needs a value", o);
        i++;
        if (!strcmp(o, "--runs")) {
            char *end;
            runs = strtoul(v, &end, 10);
            if (*v == '-' || *end || runs < 1 || runs > 100)
                return cli_usage_error(cmd, "--runs: give a count from 1 to 100");
        } else if (!strcmp(o, "--narrow") || !strcmp(o, "--kinds")) {
            uint32_t mask;
            const char *bad;
            if (!cli_run_accepts("CUPTOP_KINDS", v) ||
                cupstore_kinds_parse(v, &mask, &bad) != 0 || !mask)
                return cli_usage_error(cmd, "%s: \"%s\" is not a non-empty list of kinds", o, v);
            if (!strcmp(o, "--narrow"))
                narrow = v;
            else
                kinds = v;
        } else if (!strcmp(o, "--label")) {
            if (!*v || strlen(v) > 255)
                return cli_usage_error(cmd, "--label: give 1 to 255 bytes");
            label = v;
        } else {
            store = v;
        }
    }
    if (i >= argc)
        return cli_usage_error(cmd, "no command given (cuptop baseline [OPTIONS] -- CMD [ARGS...])");
    char **args = argv + i;

    char *dir = cli_store_dir(cmd, store);
    if (!dir)
        return CUPTOP_EXIT_USAGE;
    char deflabel[256];
    if (!label) {
        const char *base = strrchr(args[0], '/');
        time_t t = time(NULL);
        struct tm tm;
        char stamp[32];
        gmtime_r(&t, &tm);
        strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);
        snprintf(deflabel, sizeof deflabel, "baseline-%.200s-%s", base ? base + 1 : args[0],
                 stamp);
        label = deflabel;
    }
    setenv("CUPTOP_STORE", dir, 1);
    setenv("CUPTOP_LABEL", label, 1);
    unsetenv("CUPTOP_DORMANT");

    bl_run *r = calloc(runs * MODEL_BL_CONFIGS, sizeof *r);
    double *walls = calloc(runs, sizeof *walls);
    if (!r || !walls) {
        free(r);
        free(walls);
        free(dir);
        cli_error(cmd, "out of memory");
        return CUPTOP_EXIT_USAGE;
    }
    for (unsigned long k = 0; k < runs; k++)
        for (int c = 0; c < MODEL_BL_CONFIGS; c++) {
            bl_run *x = &r[k * MODEL_BL_CONFIGS + (unsigned)c];
            cli_run_result res;
            unsetenv("CUPTOP_DORMANT");
            if (c == MODEL_BL_OFF)
                setenv("CUPTOP_DORMANT", "1", 1);
            if (c == MODEL_BL_NARROW)
                setenv("CUPTOP_KINDS", narrow, 1);
            else if (kinds)
                setenv("CUPTOP_KINDS", kinds, 1);
            else
                unsetenv("CUPTOP_KINDS");
            fprintf(stderr, "cuptop baseline: run %lu/%lu %s\n", k + 1, runs, cfg_name[c]);
            double t0 = now_s();
            x->status = cli_run_traced(cmd, args, &res);
            x->wall = now_s() - t0;
            snprintf(x->session, sizeof x->session, "%s", res.session);
            if (x->status < 0) {
                free(r);
                free(walls);
                free(dir);
                return CUPTOP_EXIT_USAGE;
            }
        }

    model_bl_config cfg[MODEL_BL_CONFIGS];
    memset(cfg, 0, sizeof cfg);
    for (int c = 0; c < MODEL_BL_CONFIGS; c++) {
        model_bl_config *m = &cfg[c];
        for (unsigned long k = 0; k < runs; k++) {
            bl_run *x = &r[k * MODEL_BL_CONFIGS + (unsigned)c];
            walls[k] = x->wall;
            m->runs++;
            if (x->status != 0)
                m->failed++;
            if (!x->session[0])
                continue;
            model_summary s;
            char *cause = NULL;
            if (model_summarize_id(dir, x->session, 0, UINT64_MAX, &s, &cause) != 0) {
                cli_error(cmd, "%s", cause ? cause : "cannot read a session");
                free(cause);
                continue;
            }
            m->sessions++;
            if (!s.complete && !s.skipped[0])
                m->lossy++;
            m->lost += s.loss_total;
            model_summary_free(&s);
        }
        model_bl_walls(m, walls, runs);
    }
    for (int c = 0; c < MODEL_BL_CONFIGS; c++)
        cfg[c].ratio = cfg[MODEL_BL_OFF].wall_median_s > 0
                           ? cfg[c].wall_median_s / cfg[MODEL_BL_OFF].wall_median_s
                           : 0;
    char text[600];
    model_bl_conclusion conc = model_bl_conclude(cfg, text, sizeof text);

    const char *kind_text[MODEL_BL_CONFIGS] = {"none (agent dormant)", narrow,
                                               kinds ? kinds : "default"};
    if (json)
        print_json(label, runs, kind_text, cfg, r, conc, text);
    else
        print_text(label, runs, kind_text, cfg, r, conc, text);
    free(r);
    free(walls);
    free(dir);
    return conc == MODEL_BL_USABLE ? CUPTOP_EXIT_OK : CUPTOP_EXIT_NO;
}
