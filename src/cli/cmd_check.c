/* cmd_check.c - placeholder until the export issue lands. */
#include "config.h"
#include "cuptop.h"

int cmd_check(int argc, char **argv)
{
    (void)argc;
    cli_error(argv[0], "not built yet (export issue #6)");
    return CUPTOP_EXIT_USAGE;
}
