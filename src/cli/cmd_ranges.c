/*
 * cmd_ranges.c - `cuptop ranges SESSION`: NVTX ranges per name (and
 * domain): count, total, p50, p90, p99 and max duration, open ranges and
 * points, and the slowest instances with their times (model_ranges.h).
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_opts.h"
#include "cupstore.h"
#include "cuptop.h"
#include "export.h"
#include "model.h"

/* ranges' options: parsing and --help (cli_opts.h). */
const cli_cmd cli_cmd_ranges = {
    .name = "ranges",
    .shortopts = "h",
    .column = 17,
    .opts = (const cli_opt[]){
        {"name", "GLOB", 'n',
         "only names matching GLOB (fnmatch, e.g. 'step*')\n", NULL},
        {"domain", "NAME", 'd',
         "only ranges of that NVTX domain ('' = the default domain)\n", NULL},
        {"slowest", "N", 'S',
         "instances listed per name (0-1000)\n", NULL},
        {"json", NULL, 'j',
         "one JSON object: names[] with the figures and slowest[]\n", NULL},
        {"store", "DIR", 's', NULL, NULL},
        {"help", NULL, 'h', NULL, NULL},
        {NULL, NULL, 0, NULL, NULL},
    },
};

static void usage(FILE *f)
{
    fputs("usage: cuptop ranges [--store DIR] [--name GLOB] [--domain NAME] [--slowest N]\n"
          "                     [--json] SESSION\n\n"
          "NVTX ranges of a session (marker kind), one line per range name and domain,\n"
          "largest total first: count (closed ranges), open (still open at the end or\n"
          "at a crash), total, p50, p90, p99 and max duration (nearest rank), then the\n"
          "N slowest instances of each name (default 3) with start (UTC), duration,\n"
          "thread and nesting depth.  Range ends that matched no start (unbalanced\n"
          "pops) are counted on the last line.\n",
          f);
    cli_opts_help(&cli_cmd_ranges, f);
    fputs("Exit status: 0; 2 on a usage error or an unreadable store.\n",
          f);
}

/* Duration in the unit that keeps 3-4 digits. */
static void fmt_dur(uint64_t ns, char *buf, size_t len)
{
    if (ns >= 10000000000ull)
        snprintf(buf, len, "%.1fs", (double)ns / 1e9);
    else if (ns >= 10000000)
        snprintf(buf, len, "%.1fms", (double)ns / 1e6);
    else if (ns >= 10000)
        snprintf(buf, len, "%.1fus", (double)ns / 1e3);
    else
        snprintf(buf, len, "%" PRIu64 "ns", ns);
}

static void fmt_time(uint64_t ns, char *buf, size_t len)
{
    char sec[32];
    model_format_second(ns / 1000000000u, sec, sizeof sec);
    size_t n = strlen(sec);
    if (n && sec[n - 1] == 'Z')
        sec[--n] = '\0';
    snprintf(buf, len, "%s.%06" PRIu64 "Z", sec, ns % 1000000000u / 1000u);
}

static void inst_json(xout *o, const model_range_inst *r)
{
    xout_printf(o, "{\"id\":%u,\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64
                   ",\"duration_ns\":%" PRIu64 ",\"pid\":%u,\"tid\":%u,\"depth\":%u",
                r->id, r->start_ns, r->end_ns, r->dur_ns, r->pid, r->tid, r->depth);
    if (r->flags & CUPSTORE_RANGE_COLOR)
        xout_printf(o, ",\"color\":%u", r->color);
    if (r->flags & CUPSTORE_RANGE_PAYLOAD)
        xout_printf(o, ",\"payload_kind\":%u,\"payload\":%" PRIu64, r->payload_kind, r->payload);
    xout_putc(o, '}');
}

static int print_json(const model_ranges *m, unsigned slowest)
{
    xout o;
    fflush(stdout);
    if (xout_init(&o, STDOUT_FILENO) != 0)
        return ENOMEM;
    xout_puts(&o, "{\"names\":[");
    for (size_t k = 0; k < m->nnames; k++) {
        const model_range_name *e = &m->names[k];
        xout_puts(&o, k ? ",\n{\"name\":" : "\n{\"name\":");
        xout_json_str(&o, e->name, e->name_len);
        xout_puts(&o, ",\"domain\":");
        xout_json_str(&o, e->domain, e->domain_len);
        xout_printf(&o, ",\"count\":%" PRIu64 ",\"open\":%" PRIu64 ",\"points\":%" PRIu64
                        ",\"total_ns\":%" PRIu64 ",\"min_ns\":%" PRIu64 ",\"p50_ns\":%" PRIu64
                        ",\"p90_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64
                        ",\"slowest\":[",
                    e->count, e->open, e->points, e->total_ns, e->min_ns, e->p50_ns, e->p90_ns,
                    e->p99_ns, e->max_ns);
        for (size_t i = 0; i < e->count && i < slowest; i++) {
            if (i)
                xout_putc(&o, ',');
            inst_json(&o, &m->inst[e->by_dur[i]]);
        }
        xout_puts(&o, "]}");
    }
    xout_printf(&o, "\n],\"open\":%" PRIu64 ",\"points\":%" PRIu64 ",\"unbalanced\":%" PRIu64
                    ",\"rows\":%zu}\n",
                m->open, m->points, m->unbalanced, m->ninst);
    return cli_xout_end(&o);
}

static void print_text(const model_ranges *m, unsigned slowest)
{
    if (!m->nnames)
        printf("no NVTX ranges%s\n", m->ninst ? " match" : " in this session");
    else
        printf("%-32s %-12s %8s %6s %10s %10s %10s %10s %10s\n", "RANGE", "DOMAIN", "COUNT",
               "OPEN", "TOTAL", "P50", "P90", "P99", "MAX");
    for (size_t k = 0; k < m->nnames; k++) {
        const model_range_name *e = &m->names[k];
        char name[200], dom[80], t[5][24];
        model_escape(name, sizeof name, e->name, e->name_len);
        model_escape(dom, sizeof dom, e->domain, e->domain_len);
        fmt_dur(e->total_ns, t[0], sizeof t[0]);
        fmt_dur(e->p50_ns, t[1], sizeof t[1]);
        fmt_dur(e->p90_ns, t[2], sizeof t[2]);
        fmt_dur(e->p99_ns, t[3], sizeof t[3]);
        fmt_dur(e->max_ns, t[4], sizeof t[4]);
        printf("%-32s %-12s %8" PRIu64 " %6" PRIu64 " %10s %10s %10s %10s %10s\n", name,
               e->domain_len ? dom : "-", e->count, e->open, t[0], t[1], t[2], t[3], t[4]);
        if (e->points)
            printf("  %" PRIu64 " instantaneous mark(s)\n", e->points);
        for (size_t i = 0; i < e->count && i < slowest; i++) {
            const model_range_inst *r = &m->inst[e->by_dur[i]];
            char st[48], d[24];
            fmt_time(r->start_ns, st, sizeof st);
            fmt_dur(r->dur_ns, d, sizeof d);
            printf("  #%zu slowest: %s  %10s  tid %u  depth %u  (id %u)\n", i + 1, st, d, r->tid,
                   r->depth, r->id);
        }
    }
    if (m->open || m->unbalanced)
        printf("open ranges: %" PRIu64 "   unbalanced ends (pop without push): %" PRIu64 "\n",
               m->open, m->unbalanced);
}

int cmd_ranges(int argc, char **argv)
{
    struct option longopts[CLI_OPTS_MAX];
    const char *cmd = argv[0], *store = NULL;
    model_ranges_opts ro = {0};
    unsigned slowest = 3;
    bool json = false;
    int c;

    cli_opts_begin(&cli_cmd_ranges, longopts);
    while ((c = getopt_long(argc, argv, cli_cmd_ranges.shortopts, longopts, NULL)) != -1) {
        switch (c) {
        case 's': store = optarg; break;
        case 'n': ro.name_glob = optarg; break;
        case 'd': ro.domain = optarg; break;
        case 'S': {
            char *end;
            errno = 0;
            unsigned long v = strtoul(optarg, &end, 10);
            if (errno || end == optarg || *end || v > 1000 || optarg[0] == '-')
                return cli_usage_error(cmd, "--slowest wants 0-1000, not '%s'", optarg);
            slowest = (unsigned)v;
            break;
        }
        case 'j': json = true; break;
        case 'h': usage(stdout); return CUPTOP_EXIT_OK;
        default:
            return cli_bad_option(cmd, argv);
        }
    }
    if (optind + 1 != argc)
        return cli_one_session(cmd, argc, argv);

    cupstore_env *env;
    cupstore_txn *txn;
    model_ranges *m = NULL;
    int rc = cli_store_session_open(cmd, store, argv[optind], CUPSTORE_RDONLY, &env);
    if (rc)
        return rc;
    rc = cupstore_txn_begin(env, false, &txn);
    if (rc == 0) {
        rc = model_ranges_load(txn, &ro, &m);
        cupstore_txn_abort(txn);
    }
    int status = CUPTOP_EXIT_OK;
    if (rc) {
        cli_error(cmd, "session %s: %s", argv[optind], cli_open_error(rc));
        status = CUPTOP_EXIT_USAGE;
    } else if (json) {
        if (print_json(m, slowest))
            status = CUPTOP_EXIT_USAGE;
    } else {
        print_text(m, slowest);
    }
    model_ranges_free(m);
    cupstore_env_close(env);
    return status;
}
