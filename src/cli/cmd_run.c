/* cmd_run.c - placeholder until the agent issue lands. */
#include "config.h"
#include "cuptop.h"

int cmd_run(int argc, char **argv)
{
    (void)argc;
    cli_error(argv[0], "not built yet (agent issue #4)");
    return CUPTOP_EXIT_USAGE;
}
