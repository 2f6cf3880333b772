/*
 * cmd_compare.c - `cuptop compare A B`: prints what model_compare_run
 * decided: comparability first, then losses, key durations and event order.
 */
#include "config.h"

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

/* compare's options: parsing and --help (cli_opts.h).  The defaults in the
 * help are the model's. */
_Static_assert(MODEL_CMP_ORDER_WINDOW == 65536u, "--order-window's help says 65536");
_Static_assert(MODEL_CMP_EDIT_CAP == 4096u, "--edit-cap's help says 4096");
const cli_cmd cli_cmd_compare = {
    .name = "compare",
    .shortopts = "h",
    .column = 20,
    .opts = (const cli_opt[]){
        {"top", "N", 'n',
         "duration rows shown (default 20; 0: all)\n", NULL},
        {"json", NULL, 'j',
         "one JSON object instead of text (a side that runs to\n"
         "the end: to_ns the session's last time; an open range's\n"
         "side also \"open\":true)\n", NULL},
        {"mangled", NULL, 'm',
         "kernel names as CUPTI gave them\n", NULL},
        {"order-window", "N", 'w',
         "kernels per stream compared for order (default 65536)\n", NULL},
        {"edit-cap", "N", 'e',
         "most insertions+deletions searched (default 4096); beyond\n"
         "it the agreement is an upper bound\n", NULL},
        {"store", "DIR", 's',
         "the store (default $CUPTOP_STORE); again for more stores,\n"
         "or a directory of stores: A and B are each looked up in\n"
         "all of them (with two --store, a session in both is read\n"
         "from the first for A and from the second for B)\n", NULL},
        {"help", NULL, 'h', NULL, NULL},
        {NULL, NULL, 0, NULL, NULL},
    },
};

static void usage(FILE *f)
{
    fputs("usage: cuptop compare [--store DIR]... [--json] [--top N] [--mangled]\n"
          "                      [--order-window N] [--edit-cap N] A B\n\n"
          "Set two windows of traced work side by side.  A and B are each a session\n"
          "(ID or unique prefix), an epoch of one (ID@EPOCH), a mark (ID:MARK) or an\n"
          "NVTX range instance (ID/range:NAME#N, N from 1 in time order as in\n"
          "`cuptop export --range NAME --nth N`; ID/range:NAME#slowest the longest):\n"
          "its start to its end; an open range to the session's last time (said so).\n"
          "An unknown range name or an N past its instances is an error (exit 2).\n\n"
          "Prints, in this order: comparability (workload label or command, kinds\n"
          "collected, every config.* setting, sink, versions, host and devices; each\n"
          "difference, then \"comparable\" or \"not comparable: ...\"); losses per class\n"
          "on each side (an INCOMPLETE side is unusable for timing attribution); key\n"
          "durations per kernel name and memcpy kind (count, total, p50, p90, p99 on\n"
          "each side and B/A ratios; percentiles within 1/128 of a recorded duration),\n"
          "largest change in total first; event order per stream (longest common\n"
          "subsequence of the kernel names over the shorter length, first divergence).\n\n",
          f);
    cli_opts_help(&cli_cmd_compare, f);
    fputs("\nExit status: 0 comparable and neither side lossy; 1 not comparable or a side\n"
          "INCOMPLETE; 2 usage error or unreadable store.\n",
          f);
}

static double ratio(uint64_t b, uint64_t a)
{
    return a ? (double)b / (double)a : 0;
}

static void put_ratio(xout *o, uint64_t b, uint64_t a)
{
    if (!a && !b)
        xout_puts(o, "     -");
    else if (!a)
        xout_puts(o, "   new");
    else if (!b)
        xout_puts(o, "  gone");
    else
        xout_printf(o, "%6.2f", ratio(b, a));
}

static void put_json_ratio(xout *o, const char *key, uint64_t b, uint64_t a)
{
    if (a && b)
        xout_printf(o, ",\"%s\":%.6g", key, ratio(b, a));
    else
        xout_printf(o, ",\"%s\":null", key);
}

static void put_us(xout *o, uint64_t ns)
{
    xout_printf(o, "%10.1f", (double)ns / 1000.0);
}

static void text_name(const model_cmp_group *g, char *buf, size_t len)
{
    model_escape(buf, len, g->name, g->name_len);
    if (!buf[0])
        snprintf(buf, len, "(empty name)");
}

/* The key durations table: the top groups (all: top 0), B/A ratios. */
static void text_durations(xout *o, const model_compare *c, size_t top)
{
    char buf[512];
    xout_printf(o, "\nkey durations (us; B/A ratios; %zu of %zu, largest change in total first)\n",
                top && top < c->ngroups ? top : c->ngroups, c->ngroups);
    xout_puts(o, "  count A    count B  total A ms total B ms  ratio     p50 A     p50 B  "
                 "ratio     p90 A     p90 B  ratio     p99 A     p99 B  ratio  name\n");
    for (size_t i = 0; i < c->ngroups && (!top || i < top); i++) {
        const model_cmp_group *g = &c->groups[i];
        const model_cmp_stat *a = &g->s[0], *b = &g->s[1];
        xout_printf(o, "  %7" PRIu64 " %10" PRIu64 " %10.3f %10.3f ", a->count, b->count,
                    (double)a->total_ns / 1e6, (double)b->total_ns / 1e6);
        put_ratio(o, b->total_ns, a->total_ns);
        const uint64_t pa[3] = {a->p50_ns, a->p90_ns, a->p99_ns};
        const uint64_t pb[3] = {b->p50_ns, b->p90_ns, b->p99_ns};
        for (int k = 0; k < 3; k++) {
            put_us(o, pa[k]);
            put_us(o, pb[k]);
            xout_putc(o, ' ');
            put_ratio(o, pb[k], pa[k]);
        }
        text_name(g, buf, sizeof buf);
        xout_printf(o, "  %s\n", buf);
    }
    if (!c->ngroups)
        xout_puts(o, "  (no kernel, memcpy or graph records in either window)\n");
}

/* Event order per stream: agreement, and where the order first diverged. */
static void text_order(xout *o, const model_compare *c)
{
    static const char *const ab[2] = {"A", "B"};
    char buf[512];
    xout_printf(o, "\nevent order per stream (the first %" PRIu32 " kernels of each; "
                   "longest common subsequence / shorter)\n", c->order_window);
    for (size_t i = 0; i < c->nstreams; i++) {
        const model_cmp_stream *st = &c->streams[i];
        xout_printf(o, "  device %u stream %" PRIu32 ": %" PRIu64 " vs %" PRIu64 " kernels",
                    st->device, st->stream, st->kernels[0], st->kernels[1]);
        if (st->compared[0] < st->kernels[0] || st->compared[1] < st->kernels[1])
            xout_printf(o, " (compared %" PRIu64 " vs %" PRIu64 ")", st->compared[0],
                        st->compared[1]);
        xout_printf(o, ", agreement %s%.4f (%" PRIu64 ")", st->lcs_bound ? "at most " : "",
                    st->agreement, st->lcs);
        if (!st->diverged) {
            xout_puts(o, ", same order\n");
            continue;
        }
        xout_printf(o, "; first divergence at kernel %" PRIu64 ":", st->diverge_index);
        for (int s = 0; s < 2; s++) {
            if (st->diverge_group[s] < 0) {
                xout_printf(o, " %s ends", ab[s]);
            } else {
                const model_cmp_group *g = &c->groups[st->diverge_group[s]];
                text_name(g, buf, 120);
                char t[32];
                model_format_second(st->diverge_ns[s] / 1000000000u, t, sizeof t);
                xout_printf(o, " %s %s at %s +%.6f s%s", ab[s], buf, t,
                            (double)(st->diverge_ns[s] % 1000000000u) / 1e9,
                            s == 0 ? ";" : "");
            }
        }
        xout_putc(o, '\n');
    }
    if (c->streams_untracked)
        xout_printf(o, "  %" PRIu64 " kernels on streams beyond the first %u not compared\n",
                    c->streams_untracked, MODEL_CMP_STREAMS);
    if (!c->nstreams)
        xout_puts(o, "  (no kernels with times in either window)\n");
}

static void print_text(xout *o, const model_compare *c, size_t top, const char *const st[2])
{
    static const char *const ab[2] = {"A", "B"};
    char buf[512];
    for (int s = 0; s < 2; s++) {
        xout_printf(o, "%s: %s (%s)", ab[s], c->side[s].what, c->side[s].verdict);
        if (st[s]) {   /* several stores: where each side was read */
            model_escape(buf, sizeof buf, st[s], strlen(st[s]));
            xout_printf(o, " in %s", buf);
        }
        xout_putc(o, '\n');
    }
    xout_puts(o, "\ncomparability\n");
    for (size_t i = 0; i < c->ndiffs; i++) {
        const model_cmp_diff *d = &c->diffs[i];
        char a[400], b[400];
        model_escape(a, sizeof a, d->a, strlen(d->a));
        model_escape(b, sizeof b, d->b, strlen(d->b));
        xout_printf(o, "  %-22s A: %s\n  %-22s B: %s%s\n", d->what, a, "", b,
                    d->fatal ? "" : "   (noted, not against comparability)");
    }
    if (!c->ndiffs)
        xout_puts(o, "  no difference in workload, kinds, configuration, versions or devices\n");
    xout_printf(o, "verdict: %s\n", c->verdict);

    xout_puts(o, "\nlosses\n");
    for (int s = 0; s < 2; s++) {
        const model_cmp_side *sd = &c->side[s];
        xout_printf(o, "  %s: %" PRIu64 " records lost", ab[s], sd->loss_total);
        for (unsigned k = 0; k < CUPSTORE_LOSS_MAX; k++)
            if (sd->loss[k])
                xout_printf(o, ", %s %" PRIu64, cupstore_loss_name(k), sd->loss[k]);
        if (sd->lossy) {
            model_escape(buf, sizeof buf, sd->reason, strlen(sd->reason));
            xout_printf(o, "; INCOMPLETE: unusable for timing attribution (%s)", buf);
        }
        if (sd->running)
            xout_puts(o, "; still running: figures so far");
        xout_putc(o, '\n');
        if (sd->ledger)
            xout_printf(o, "  %s: launch ledger: %s%" PRIu64 " kernel, %" PRIu64 " memcpy, %" PRIu64
                           " memset, %" PRIu64 " graph records missing among the launches in "
                           "the window\n",
                        ab[s], sd->ledger_capped ? "at least " : "", sd->ledger_missing[0],
                        sd->ledger_missing[1], sd->ledger_missing[2], sd->ledger_missing[3]);
    }

    text_durations(o, c, top);
    text_order(o, c);
    if (c->side[0].lossy || c->side[1].lossy)
        xout_puts(o, "\nnote: a lossy side has holes that look like idle time: its durations "
                     "and order are not evidence\n");
}

static void json_stat(xout *o, const model_cmp_stat *s)
{
    xout_printf(o, "{\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"p50_ns\":%" PRIu64
                   ",\"p90_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64 ",\"min_ns\":%" PRIu64
                   ",\"max_ns\":%" PRIu64 "}",
                s->count, s->total_ns, s->p50_ns, s->p90_ns, s->p99_ns, s->min_ns, s->max_ns);
}

/* The two sides' objects of the "sides" array. */
static void json_sides(xout *o, const model_compare *c, const char *const st[2])
{
    for (int s = 0; s < 2; s++) {
        const model_cmp_side *sd = &c->side[s];
        char kinds[160];
        cupstore_kinds_format(sd->kinds, kinds, sizeof kinds);
        xout_puts(o, s ? ",{\"id\":" : "{\"id\":");
        xout_json_str(o, sd->id, strlen(sd->id));
        if (st[s]) {
            xout_puts(o, ",\"store\":");
            xout_json_str(o, st[s], strlen(st[s]));
        }
        xout_puts(o, ",\"what\":");
        xout_json_str(o, sd->what, strlen(sd->what));
        xout_printf(o, ",\"from_ns\":%" PRIu64 ",\"to_ns\":%" PRIu64 ",\"open\":%s,\"kinds\":\"%s\""
                       ",\"verdict\":\"%s\",\"lossy\":%s,\"running\":%s,\"records\":%" PRIu64
                       ",\"kernels\":%" PRIu64 ",\"memcpys\":%" PRIu64 ",\"graphs\":%" PRIu64
                       ",\"no_duration\":%" PRIu64 ",\"loss_total\":%" PRIu64 ",\"loss\":{",
                    sd->from_ns, sd->end_ns == UINT64_MAX ? 0 : sd->end_ns,
                    sd->open ? "true" : "false", kinds, sd->verdict,
                    sd->lossy ? "true" : "false", sd->running ? "true" : "false", sd->records,
                    sd->kernels, sd->memcpys, sd->graphs, sd->no_duration, sd->loss_total);
        for (unsigned k = 0; k < CUPSTORE_LOSS_MAX; k++)
            xout_printf(o, "%s\"%s\":%" PRIu64, k ? "," : "", cupstore_loss_name(k), sd->loss[k]);
        xout_puts(o, "},\"reason\":");
        xout_json_str(o, sd->reason, strlen(sd->reason));
        if (sd->ledger)
            xout_printf(o, ",\"ledger_missing\":{\"kernel\":%" PRIu64 ",\"memcpy\":%" PRIu64
                           ",\"memset\":%" PRIu64 ",\"graph\":%" PRIu64 ",\"at_least\":%s}",
                        sd->ledger_missing[0], sd->ledger_missing[1], sd->ledger_missing[2],
                        sd->ledger_missing[3], sd->ledger_capped ? "true" : "false");
        xout_putc(o, '}');
    }
}

/* The "order" array: one object per stream compared. */
static void json_order(xout *o, const model_compare *c)
{
    for (size_t i = 0; i < c->nstreams; i++) {
        const model_cmp_stream *st = &c->streams[i];
        xout_printf(o, "%s{\"device\":%u,\"stream\":%" PRIu32 ",\"kernels\":[%" PRIu64 ",%" PRIu64
                       "],\"compared\":[%" PRIu64 ",%" PRIu64 "],\"lcs\":%" PRIu64
                       ",\"lcs_upper_bound\":%s,\"agreement\":%.6g,\"diverged\":%s",
                    i ? "," : "", st->device, st->stream, st->kernels[0], st->kernels[1],
                    st->compared[0], st->compared[1], st->lcs, st->lcs_bound ? "true" : "false",
                    st->agreement, st->diverged ? "true" : "false");
        if (st->diverged) {
            xout_printf(o, ",\"diverge_index\":%" PRIu64 ",\"diverge\":[", st->diverge_index);
            for (int s = 0; s < 2; s++) {
                xout_puts(o, s ? "," : "");
                if (st->diverge_group[s] < 0) {
                    xout_puts(o, "null");
                    continue;
                }
                const model_cmp_group *g = &c->groups[st->diverge_group[s]];
                xout_printf(o, "{\"start_ns\":%" PRIu64 ",\"name\":", st->diverge_ns[s]);
                xout_json_str(o, g->name, g->name_len);
                xout_putc(o, '}');
            }
            xout_putc(o, ']');
        }
        xout_putc(o, '}');
    }
}

static void print_json(xout *o, const model_compare *c, size_t top, const char *const st[2])
{
    xout_printf(o, "{\"comparable\":%s,\"verdict\":", c->comparable ? "true" : "false");
    xout_json_str(o, c->verdict, strlen(c->verdict));
    xout_printf(o, ",\"config_differs\":%s,\"exit_status\":%d,\"sides\":[",
                c->config_differs ? "true" : "false", c->exit_status);
    json_sides(o, c, st);
    xout_puts(o, "],\"differences\":[");
    for (size_t i = 0; i < c->ndiffs; i++) {
        const model_cmp_diff *d = &c->diffs[i];
        xout_puts(o, i ? ",{\"what\":" : "{\"what\":");
        xout_json_str(o, d->what, strlen(d->what));
        xout_puts(o, ",\"a\":");
        xout_json_str(o, d->a, strlen(d->a));
        xout_puts(o, ",\"b\":");
        xout_json_str(o, d->b, strlen(d->b));
        xout_printf(o, ",\"fatal\":%s}", d->fatal ? "true" : "false");
    }
    xout_printf(o, "],\"percentile_relative_error\":%.6g,\"durations\":[", MODEL_CMP_REL_ERROR);
    for (size_t i = 0; i < c->ngroups && (!top || i < top); i++) {
        const model_cmp_group *g = &c->groups[i];
        xout_printf(o, "%s{\"kind\":\"%s\",\"name\":", i ? "," : "", model_cmp_gkind_name(g->kind));
        xout_json_str(o, g->name, g->name_len);
        xout_puts(o, ",\"a\":");
        json_stat(o, &g->s[0]);
        xout_puts(o, ",\"b\":");
        json_stat(o, &g->s[1]);
        xout_printf(o, ",\"change_ns\":%" PRIu64, g->change_ns);
        put_json_ratio(o, "count_ratio", g->s[1].count, g->s[0].count);
        put_json_ratio(o, "total_ratio", g->s[1].total_ns, g->s[0].total_ns);
        put_json_ratio(o, "p50_ratio", g->s[1].p50_ns, g->s[0].p50_ns);
        put_json_ratio(o, "p90_ratio", g->s[1].p90_ns, g->s[0].p90_ns);
        put_json_ratio(o, "p99_ratio", g->s[1].p99_ns, g->s[0].p99_ns);
        xout_putc(o, '}');
    }
    xout_printf(o, "],\"durations_total\":%zu,\"order_window\":%" PRIu32 ",\"edit_cap\":%" PRIu32
                   ",\"streams_untracked\":%" PRIu64 ",\"order\":[",
                c->ngroups, c->order_window, c->edit_cap, c->streams_untracked);
    json_order(o, c);
    xout_puts(o, "]}\n");
}

static size_t demangle(const char *s, size_t n, char *out, size_t cap)
{
    return export_demangle(s, n, out, cap);
}

static bool parse_count(const char *s, unsigned long max, unsigned long *v)
{
    char *end;
    if (!*s || *s == '-')
        return false;
    *v = strtoul(s, &end, 10);
    return !*end && *v <= max;
}

/* compare's command line. */
struct compare_args {
    const char *cmd;
    cli_stores stores;
    bool json, mangled;
    unsigned long top, window, cap;
};

/* Parse and check the options and operands: -1 to go on, else the exit
 * status (the misuse said on stderr, or --help printed). */
static int compare_parse(int argc, char **argv, struct compare_args *a)
{
    struct option longopts[CLI_OPTS_MAX];
    int c;
    memset(a, 0, sizeof *a);
    a->cmd = argv[0];
    a->top = 20;
    cli_opts_begin(&cli_cmd_compare, longopts);
    while ((c = getopt_long(argc, argv, cli_cmd_compare.shortopts, longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (cli_stores_arg(a->cmd, &a->stores, optarg) >= 0)
                return CUPTOP_EXIT_USAGE;
            break;
        case 'j': a->json = true; break;
        case 'm': a->mangled = true; break;
        case 'n':
            if (!parse_count(optarg, 1000000, &a->top))
                return cli_usage_error(a->cmd, "--top: give a count from 0 (all) to 1000000");
            break;
        case 'w':
            if (!parse_count(optarg, 100000000, &a->window) || !a->window)
                return cli_usage_error(a->cmd, "--order-window: give a count from 1 to "
                                               "100000000");
            break;
        case 'e':
            if (!parse_count(optarg, 10000000, &a->cap) || !a->cap)
                return cli_usage_error(a->cmd, "--edit-cap: give a count from 1 to 10000000");
            break;
        case 'h': usage(stdout); return CUPTOP_EXIT_OK;
        default: return cli_bad_option(a->cmd, argv);
        }
    }
    if (argc - optind != 2)
        return cli_usage_error(a->cmd, "give two operands: A B (SESSION, SESSION@EPOCH, "
                                       "SESSION:MARK or SESSION/range:NAME#N)");
    for (int i = 0; i < 2; i++) {
        model_operand op;
        char *cause = NULL;
        if (model_operand_parse(argv[optind + i], &op, &cause) != 0) {
            int rc = cli_usage_error(a->cmd, "%s", cause ? cause : "bad operand");
            free(cause);
            return rc;
        }
    }
    return -1;
}

/* The store of side s (operand arg) among several: the one holding its
 * session; with exactly two stores and the session in both, the first for
 * A and the second for B.  NULL when none can be chosen (said). */
static const model_store *compare_place(const char *cmd, const model_stores *ss, int s,
                                        const char *arg)
{
    model_operand op;
    size_t ix = 0, found = 0;
    if (model_operand_parse(arg, &op, NULL) != 0)
        return NULL;   /* parsed once already */
    int rc = model_stores_find(ss, op.session, &ix, &found);
    if (rc == 0)
        return &ss->v[ix];
    if (found > 1 && ss->n == 2)
        return &ss->v[s];
    if (found > 1)
        cli_error(cmd, "session %s is in %zu of the stores: name the stores of A and B "
                       "(two --store)", op.session, found);
    else if (rc == CUPSTORE_ENOTFOUND)
        cli_error(cmd, "session %s: in none of the %zu stores", op.session, ss->n);
    else
        cli_error(cmd, "session %s: %s", op.session, model_strerror(rc));
    return NULL;
}

/* Compare and print, A and B read from the stores. */
static int compare_stores(const struct compare_args *a, const model_stores *ss, char **ab)
{
    model_compare_opts mo = {.store_dir = ss->v[0].dir,
                             .name_fn = a->mangled ? NULL : demangle,
                             .order_window = (uint32_t)a->window, .edit_cap = (uint32_t)a->cap};
    const char *st[2] = {NULL, NULL};
    for (int s = 0; ss->several && s < 2; s++) {
        const model_store *where = compare_place(a->cmd, ss, s, ab[s]);
        if (!where)
            return CUPTOP_EXIT_USAGE;
        mo.side_dir[s] = where->dir;
        st[s] = where->label;
    }
    model_compare r;
    char *cause = NULL;
    int rc = model_compare_run(&mo, ab[0], ab[1], &r, &cause);
    if (rc) {
        cli_error(a->cmd, "%s", cause ? cause : model_strerror(rc));
        free(cause);
        return CUPTOP_EXIT_USAGE;
    }
    xout o;
    int status = r.exit_status;
    if (cli_xout_begin(a->cmd, &o) != 0) {
        model_compare_free(&r);
        return CUPTOP_EXIT_USAGE;
    }
    if (a->json)
        print_json(&o, &r, a->top, st);
    else
        print_text(&o, &r, a->top, st);
    cli_xout_end(&o);
    model_compare_free(&r);
    return status;
}

int cmd_compare(int argc, char **argv)
{
    struct compare_args a;
    model_stores ss;
    size_t bad;
    int status = compare_parse(argc, argv, &a);
    if (status < 0 && (status = cli_stores_open(a.cmd, &a.stores, &ss, &bad)) == 0) {
        status = compare_stores(&a, &ss, argv + optind);
        model_stores_free(&ss);
    }
    cli_stores_free(&a.stores);
    return status;
}
