/* cmd_top.c - `cuptop top`: options for the live monitor (tui/), which it
 * starts with the export writer and the fatal-signal guard's cleanup slot. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuptop.h"
#include "export.h"
#include "tui_main.h"

static void top_usage(FILE *f)
{
    fprintf(f, "usage: cuptop [top] [--store DIR] [--session ID] [--ascii] [--mono]\n\n"
               "The live monitor: sessions, per-second plots of records and losses,\n"
               "the kind panel, epochs, marks and export.  F1 or ? inside for keys.\n\n"
               "  --store DIR    store directory (default: $CUPTOP_STORE or\n"
               "                 ${XDG_STATE_HOME:-~/.local/state}/cuptop)\n"
               "  --session ID   open this session's dashboard (id or unique prefix)\n"
               "  --ascii        ASCII plots instead of Braille\n"
               "  --mono         no colours\n");
}

int cmd_top(int argc, char **argv)
{
    static const struct option opts[] = {
        {"store", required_argument, NULL, 's'}, {"session", required_argument, NULL, 'S'},
        {"ascii", no_argument, NULL, 'A'},       {"mono", no_argument, NULL, 'M'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
    };
    tui_opts o;
    memset(&o, 0, sizeof o);
    o.export_fn = export_run;
    o.set_fatal_cleanup = cli_set_fatal_cleanup;
    o.attach_list = cli_attach_list;
    o.attach_pid = cli_attach_pid;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
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
