/*
 * cmd_baseline.c - `cuptop baseline -- CMD ARGS`: the seed's two control
 * runs beside the full one.  CMD runs once without the agent to warm up
 * (caches, imports, the driver; not counted), then N times in each of
 * three configurations, interleaved and in rotated order (off, narrowed,
 * full; narrowed, full, off; ...) so that no configuration always runs
 * first: collection off (the agent injected but dormant: no CUPTI call),
 * narrowed (kernel records only by default) and full (the configured
 * kinds), all under one workload label.  Under --json the workload's own
 * standard output goes to standard error, so that the JSON parses.  Where
 * a configuration's effect on the wall time (its ratio to off) is smaller
 * than the spread of the runs, the output says so.  The runs go through
 * `cuptop run`'s own path (cli_run_traced); the verdict on the three is
 * the model's (model_bl_conclude).  The sessions stay in the store for
 * `compare`.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cupstore.h"
#include "cli_opts.h"
#include "cuptop.h"
#include "export.h"
#include "model.h"

/* baseline's options (cli_opts.h): parsed from this table by hand
 * (cmd_baseline: CMD and its arguments follow them); --help says them in
 * its usage lines and prose. */
const cli_cmd cli_cmd_baseline = {
    .name = "baseline",
    .shortopts = "h",
    .opts = (const cli_opt[]){
        {"runs", "N", 'r', NULL, NULL},
        {"narrow", "KINDS", 'n', NULL, NULL},
        {"kinds", "KINDS", 'k', NULL, NULL},
        {"label", "NAME", 'l', NULL, NULL},
        {"json", NULL, 'j', NULL, NULL},
        {"store", "DIR", 's', NULL, NULL},
        {"help", NULL, 'h', NULL, NULL},
        {NULL, NULL, 0, NULL, NULL},
    },
};

static void usage(FILE *f)
{
    fputs("usage: cuptop baseline [--runs N] [--narrow KINDS] [--kinds KINDS] [--label NAME]\n"
          "                       [--json] [--store DIR] -- CMD [ARGS...]\n\n"
          "Run CMD once without the agent to warm up (not counted), then N times\n"
          "(default 3) in each of three configurations, interleaved, the order rotated\n"
          "each round: collection off (agent dormant), narrowed (--narrow, default\n"
          "kernel) and full (--kinds, default the agent's default kinds), all with one\n"
          "workload label (--label, default baseline-CMD-TIME).  Prints each\n"
          "configuration's wall time (median, min-max, spread) and its ratio to\n"
          "collection off (the perturbation), a note where that effect is smaller than\n"
          "the spread (noise: more --runs), the losses per configuration, and the\n"
          "conclusion: loss only at full and none narrowed = caused by record pressure;\n"
          "loss in both = look at buffer supply or the store; no loss anywhere = the\n"
          "full run is a usable baseline.  The sessions stay in the store: compare them\n"
          "with cuptop compare.  --json prints the same table, sessions, notes and\n"
          "conclusion (its id and text) as one JSON object; CMD's own standard output\n"
          "then goes to standard error.\n\n"
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
    unsigned place;             /* 0-based place in its round (rotation)  */
    char session[128];
} bl_run;

/* What the runs say beside the table: the warm-up, and where the effect of
 * a configuration on the wall time is within the spread of the runs. */
typedef struct bl_notes {
    double warm_wall;
    int warm_status;
    bool within[MODEL_BL_CONFIGS];   /* |ratio - 1| below the spread      */
    char text[MODEL_BL_CONFIGS][240];
    size_t n;
} bl_notes;

/* The warm-up: CMD once without the agent (nothing stored, not counted),
 * its standard output where the counted runs' goes.  The exit status
 * (128 + N for signal N, 127 when it could not start). */
static int bl_warmup(char **args, double *wall)
{
    double t0 = now_s();
    *wall = 0;
    pid_t pid = fork();
    if (pid < 0)
        return 127;
    if (pid == 0) {
        unsetenv("CUDA_INJECTION64_PATH");
        unsetenv("NVTX_INJECTION64_PATH");
        execvp(args[0], args);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return 127;
    *wall = now_s() - t0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Is each configuration's effect (its ratio to off) more than the noise
 * (the larger spread of it and of off)?  A note where it is not. */
static void bl_judge_noise(const model_bl_config *cfg, unsigned long runs, bl_notes *n)
{
    if (runs < 2) {
        snprintf(n->text[n->n++], sizeof n->text[0], "one run of each configuration: the "
                 "spread, and so whether the effect is more than noise, is unknown "
                 "(--runs 3 or more)");
        return;
    }
    for (int c = MODEL_BL_NARROW; c < MODEL_BL_CONFIGS; c++) {
        double effect = cfg[c].ratio - 1.0;
        double mag = effect < 0 ? -effect : effect;
        double noise = cfg[c].spread > cfg[MODEL_BL_OFF].spread ? cfg[c].spread
                                                                 : cfg[MODEL_BL_OFF].spread;
        if (cfg[c].ratio <= 0 || mag >= noise)
            continue;
        n->within[c] = true;
        snprintf(n->text[n->n++], sizeof n->text[0], "%s: the effect (%+.1f%% vs off) is "
                 "smaller than the spread of the runs (%.1f%%): within the noise, more --runs "
                 "to tell", cfg_name[c], effect * 100, noise * 100);
    }
}

static void print_text(const char *label, unsigned long runs, const char *const *kind_text,
                       const model_bl_config *cfg, const bl_run *r, const bl_notes *notes,
                       model_bl_conclusion conc, const char *text)
{
    char esc[600];
    model_escape(esc, sizeof esc, label, strlen(label));
    printf("baseline: %lu runs of each configuration, interleaved in rotated order; label %s\n",
           runs, esc);
    printf("warm-up: 1 run without the agent, %.3f s (exit %d), not counted\n",
           notes->warm_wall, notes->warm_status);
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
    printf("\n");
    for (size_t i = 0; i < notes->n; i++)
        printf("note: %s\n", notes->text[i]);
    printf("conclusion (%s): %s\n", model_bl_name(conc), text);
}

static void print_json(const char *label, unsigned long runs, const char *const *kind_text,
                       const model_bl_config *cfg, const bl_run *r, const bl_notes *notes,
                       model_bl_conclusion conc, const char *text)
{
    xout o;
    if (cli_xout_begin("baseline", &o) != 0)
        return;
    xout_puts(&o, "{\"label\":");
    xout_json_str(&o, label, strlen(label));
    xout_printf(&o, ",\"runs\":%lu,\"warmup\":{\"wall_s\":%.6f,\"status\":%d,\"counted\":false}",
                runs, notes->warm_wall, notes->warm_status);
    xout_puts(&o, ",\"order\":[");
    for (unsigned long k = 0; k < runs; k++) {
        xout_puts(&o, k ? ",[" : "[");
        for (unsigned j = 0; j < MODEL_BL_CONFIGS; j++)
            for (int c = 0; c < MODEL_BL_CONFIGS; c++)
                if (r[k * MODEL_BL_CONFIGS + (unsigned)c].place == j)
                    xout_printf(&o, "%s\"%s\"", j ? "," : "", cfg_name[c]);
        xout_puts(&o, "]");
    }
    xout_puts(&o, "],\"configs\":[");

    for (int c = 0; c < MODEL_BL_CONFIGS; c++) {
        const model_bl_config *m = &cfg[c];
        xout_printf(&o, "%s{\"config\":\"%s\",\"kinds\":", c ? "," : "", cfg_name[c]);
        xout_json_str(&o, kind_text[c], strlen(kind_text[c]));
        xout_printf(&o, ",\"runs\":%zu,\"sessions\":%zu,\"failed\":%zu,\"lossy\":%zu"
                        ",\"lost_records\":%" PRIu64 ",\"wall_median_s\":%.6f"
                        ",\"wall_min_s\":%.6f,\"wall_max_s\":%.6f,\"spread\":%.6f"
                        ",\"ratio_to_off\":%.6f,\"within_spread\":%s,\"session_ids\":[",
                    m->runs, m->sessions, m->failed, m->lossy, m->lost, m->wall_median_s,
                    m->wall_min_s, m->wall_max_s, m->spread, m->ratio,
                    notes->within[c] ? "true" : "false");
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
    xout_puts(&o, "],\"notes\":[");
    for (size_t i = 0; i < notes->n; i++) {
        xout_puts(&o, i ? "," : "");
        xout_json_str(&o, notes->text[i], strlen(notes->text[i]));
    }
    xout_printf(&o, "],\"conclusion\":{\"id\":\"%s\",\"text\":", model_bl_name(conc));
    xout_json_str(&o, text, strlen(text));
    xout_puts(&o, "}}\n");
    cli_xout_end(&o);
}

/* baseline's command line. */
struct bl_args {
    const char *cmd, *narrow, *kinds, *label, *store;
    unsigned long runs;
    bool json;
    char **args;                /* CMD [ARGS...]                          */
    char deflabel[256];         /* the label when --label is not given    */
};

/* Parse the options: -1 to go on (a->args set), else the exit status (the
 * misuse said on stderr, or --help printed). */
static int bl_parse(int argc, char **argv, struct bl_args *a)
{
    int i;
    memset(a, 0, sizeof *a);
    a->cmd = argv[0];
    a->narrow = "kernel";
    a->runs = 3;
    for (i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--")) {
            i++;
            break;
        }
        const cli_opt *op = cli_opts_find(&cli_cmd_baseline, o);
        if (op && op->val == 'h') {
            usage(stdout);
            return CUPTOP_EXIT_OK;
        }
        if (o[0] != '-')
            break;
        if (!op)
            return cli_usage_error(a->cmd, "unknown option \"%s\"", o);
        if (op->arg && !v)
            return cli_usage_error(a->cmd, "%s needs a value", o);
        i += op->arg != NULL;
        uint32_t mask;
        const char *bad;
        char *end;
        switch (op->val) {
        case 'j': a->json = true; break;
        case 'r':
            a->runs = strtoul(v, &end, 10);
            if (*v == '-' || *end || a->runs < 1 || a->runs > 100)
                return cli_usage_error(a->cmd, "--runs: give a count from 1 to 100");
            break;
        case 'n':
        case 'k':
            if (!cli_run_accepts("CUPTOP_KINDS", v) ||
                cupstore_kinds_parse(v, &mask, &bad) != 0 || !mask)
                return cli_usage_error(a->cmd, "%s: \"%s\" is not a non-empty list of kinds", o,
                                       v);
            *(op->val == 'n' ? &a->narrow : &a->kinds) = v;
            break;
        case 'l':
            if (!*v || strlen(v) > 255)
                return cli_usage_error(a->cmd, "--label: give 1 to 255 bytes");
            a->label = v;
            break;
        default:   /* 's' */
            a->store = v;
            break;
        }
    }
    if (i >= argc)
        return cli_usage_error(a->cmd, "no command given (cuptop baseline [OPTIONS] -- CMD "
                                       "[ARGS...])");
    a->args = argv + i;
    if (!a->label) {
        const char *base = strrchr(a->args[0], '/');
        time_t t = time(NULL);
        struct tm tm;
        char stamp[32];
        gmtime_r(&t, &tm);
        strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);
        snprintf(a->deflabel, sizeof a->deflabel, "baseline-%.200s-%s",
                 base ? base + 1 : a->args[0], stamp);
        a->label = a->deflabel;
    }
    return -1;
}

/* The warm-up, then the runs (r: runs x MODEL_BL_CONFIGS), each round in
 * its rotated order.  false when CMD could not be run traced (said). */
static bool bl_run_all(const struct bl_args *a, bl_run *r, bl_notes *notes)
{
    /* --json: the workload's standard output to standard error, so that
     * the JSON on standard output parses */
    int saved_out = -1;
    if (a->json) {
        fflush(stdout);
        saved_out = dup(STDOUT_FILENO);
        if (saved_out >= 0 && dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
            close(saved_out);
            saved_out = -1;
        }
    }
    fprintf(stderr, "cuptop baseline: warm-up run (without the agent, not counted)\n");
    notes->warm_status = bl_warmup(a->args, &notes->warm_wall);
    int failed = 0;
    /* round k runs the configurations from k mod 3 on: each comes first,
     * second and third equally often over every 3 rounds */
    for (unsigned long k = 0; k < a->runs && !failed; k++)
        for (unsigned j = 0; j < MODEL_BL_CONFIGS && !failed; j++) {
            int c = (int)((k + j) % MODEL_BL_CONFIGS);
            bl_run *x = &r[k * MODEL_BL_CONFIGS + (unsigned)c];
            cli_run_result res;
            x->place = j;
            unsetenv("CUPTOP_DORMANT");
            if (c == MODEL_BL_OFF)
                setenv("CUPTOP_DORMANT", "1", 1);
            if (c == MODEL_BL_NARROW)
                setenv("CUPTOP_KINDS", a->narrow, 1);
            else if (a->kinds)
                setenv("CUPTOP_KINDS", a->kinds, 1);
            else
                unsetenv("CUPTOP_KINDS");
            fprintf(stderr, "cuptop baseline: run %lu/%lu %s\n", k + 1, a->runs, cfg_name[c]);
            double t0 = now_s();
            x->status = cli_run_traced(a->cmd, a->args, &res);
            x->wall = now_s() - t0;
            snprintf(x->session, sizeof x->session, "%s", res.session);
            if (x->status < 0)
                failed = 1;
        }
    fflush(stdout);
    if (saved_out >= 0) {
        dup2(saved_out, STDOUT_FILENO);
        close(saved_out);
    }
    return !failed;
}

/* Each configuration's figures from its runs and their sessions (walls:
 * room for a->runs), and its ratio to collection off. */
static void bl_configs(const struct bl_args *a, const char *dir, const bl_run *r, double *walls,
                       model_bl_config cfg[MODEL_BL_CONFIGS])
{
    memset(cfg, 0, MODEL_BL_CONFIGS * sizeof *cfg);
    for (int c = 0; c < MODEL_BL_CONFIGS; c++) {
        model_bl_config *m = &cfg[c];
        for (unsigned long k = 0; k < a->runs; k++) {
            const bl_run *x = &r[k * MODEL_BL_CONFIGS + (unsigned)c];
            walls[k] = x->wall;
            m->runs++;
            if (x->status != 0)
                m->failed++;
            if (!x->session[0])
                continue;
            model_summary s;
            char *cause = NULL;
            if (model_summarize_id(dir, x->session, 0, UINT64_MAX, &s, &cause) != 0) {
                cli_error(a->cmd, "%s", cause ? cause : "cannot read a session");
                free(cause);
                continue;
            }
            m->sessions++;
            if (!s.complete && !s.skipped[0])
                m->lossy++;
            m->lost += s.loss_total;
            model_summary_free(&s);
        }
        model_bl_walls(m, walls, a->runs);
    }
    for (int c = 0; c < MODEL_BL_CONFIGS; c++)
        cfg[c].ratio = cfg[MODEL_BL_OFF].wall_median_s > 0
                           ? cfg[c].wall_median_s / cfg[MODEL_BL_OFF].wall_median_s
                           : 0;
}

int cmd_baseline(int argc, char **argv)
{
    struct bl_args a;
    int status = bl_parse(argc, argv, &a);
    if (status >= 0)
        return status;
    char *dir = cli_store_dir(a.cmd, a.store);
    if (!dir)
        return CUPTOP_EXIT_USAGE;
    setenv("CUPTOP_STORE", dir, 1);
    setenv("CUPTOP_LABEL", a.label, 1);
    unsetenv("CUPTOP_DORMANT");

    bl_run *r = calloc(a.runs * MODEL_BL_CONFIGS, sizeof *r);
    double *walls = calloc(a.runs, sizeof *walls);
    bl_notes notes;
    memset(&notes, 0, sizeof notes);
    if (!r || !walls) {
        cli_error(a.cmd, "out of memory");
        status = CUPTOP_EXIT_USAGE;
    } else if (!bl_run_all(&a, r, &notes)) {
        status = CUPTOP_EXIT_USAGE;
    } else {
        model_bl_config cfg[MODEL_BL_CONFIGS];
        bl_configs(&a, dir, r, walls, cfg);
        char text[600];
        model_bl_conclusion conc = model_bl_conclude(cfg, text, sizeof text);
        bl_judge_noise(cfg, a.runs, &notes);
        const char *kind_text[MODEL_BL_CONFIGS] = {"none (agent dormant)", a.narrow,
                                                   a.kinds ? a.kinds : "default"};
        if (a.json)
            print_json(a.label, a.runs, kind_text, cfg, r, &notes, conc, text);
        else
            print_text(a.label, a.runs, kind_text, cfg, r, &notes, conc, text);
        status = conc == MODEL_BL_USABLE ? CUPTOP_EXIT_OK : CUPTOP_EXIT_NO;
    }
    free(r);
    free(walls);
    free(dir);
    return status;
}
