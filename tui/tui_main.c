/* tui_main.c - placeholder until the TUI issue lands. */
#include "config.h"
#include <stdio.h>
#include "cuptop.h"

int cmd_top(int argc, char **argv)
{
    (void)argc;
    cli_error(argv[0], "the live monitor is not built yet (TUI issue #5)");
    return CUPTOP_EXIT_USAGE;
}

int tui_main(const tui_opts *o, char **cause)
{
    (void)o; (void)cause;
    return CUPTOP_EXIT_USAGE;
}
