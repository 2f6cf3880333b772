/* cmd_export.c - placeholder until the export issue lands. */
#include "config.h"
#include "cuptop.h"

int cmd_export(int argc, char **argv)
{
    (void)argc;
    cli_error(argv[0], "not built yet (export issue #6)");
    return CUPTOP_EXIT_USAGE;
}

int export_run(const export_opts *o, export_progress_fn progress, void *arg, char **cause)
{
    (void)o; (void)progress; (void)arg; (void)cause;
    return CUPTOP_EXIT_USAGE;
}
