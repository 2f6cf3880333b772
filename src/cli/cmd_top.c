/* cmd_top.c - `cuptop top`: options for the live monitor (tui/), which it
 * starts with the export writer and the fatal-signal guard's cleanup slot. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_opts.h"
#include "cuptop.h"
#include "export.h"
#include "tui_main.h"

/* top's options: parsing and --help (cli_opts.h). */
const cli_cmd cli_cmd_top = {
    .name = "top",
    .shortopts = "+:h",
    .column = 17,
    .opts = (const cli_opt[]){
        {"store", "DIR", 's',
         "store directory (default: $CUPTOP_STORE or\n"
         "${XDG_STATE_HOME:-~/.local/state}/cuptop)\n", NULL},
        {"session", "ID", 'S',
         "open this session's dashboard (id or unique prefix)\n", NULL},
        {"ascii", NULL, 'A',
         "ASCII plots instead of Braille\n", NULL},
        {"mono", NULL, 'M',
         "no colours\n", NULL},
        {"help", NULL, 'h', NULL, NULL},
        {NULL, NULL, 0, NULL, NULL},
    },
};

static void top_usage(FILE *f)
{
    fprintf(f, "usage: cuptop [top] [--store DIR] [--session ID] [--ascii] [--mono]\n\n"
               "The live monitor: sessions, per-second plots of records and losses,\n"
               "the kind panel, epochs, marks and export.  F1 or ? inside for keys.\n\n");
    cli_opts_help(&cli_cmd_top, f);
}

int cmd_top(int argc, char **argv)
{
    struct option opts[CLI_OPTS_MAX];
    tui_opts o;
    memset(&o, 0, sizeof o);
    o.export_fn = export_run;
    o.set_fatal_cleanup = cli_set_fatal_cleanup;
    o.attach_list = cli_attach_list;
    o.attach_pid = cli_attach_pid;
    cli_opts_begin(&cli_cmd_top, opts);
    int c;
    while ((c = getopt_long(argc, argv, cli_cmd_top.shortopts, opts, NULL)) != -1) {
        switch (c) {
        case 's':
            o.store_dir = optarg;
            break;
        case 'S':
            o.session = optarg;
            break;
        case 'A':
            o.ascii = true;
            break;
        case 'M':
            o.mono = true;
            break;
        case 'h':
            top_usage(stdout);
            return CUPTOP_EXIT_OK;
        case ':':
            return cli_usage_error(argv[0], "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);
    char *cause = NULL;
    int rc = tui_main(&o, &cause);
    if (rc != 0 && cause)
        cli_error(argv[0], "%s", cause);
    free(cause);
    return rc;
}
