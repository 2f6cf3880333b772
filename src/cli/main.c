/* main.c - the cuptop program: dispatch to subcommands. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cuptop.h"

struct subcommand {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
};

static const struct subcommand subcommands[] = {
    {"top", cmd_top, "live monitor (the default when no subcommand is given)"},
    {"demo", cmd_demo, "run the simulated CUPTI application and watch it"},
    {"run", cmd_run, "run a program with the agent injected"},
    {"sessions", cmd_sessions, "list the sessions in a store"},
    {"check", cmd_check, "judge sessions: exit 0 only when COMPLETE"},
    {"report", cmd_report, "human summary of a session, with advice"},
    {"export", cmd_export, "export a window: chrome, jsonl, csv or store"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: cuptop [--store DIR] [SUBCOMMAND [ARGS...]]\n\n"
               "Watch a CUPTI activity trace for holes, second by second.\n\n"
               "subcommands:\n");
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(f, "  %-9s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(f, "\n'cuptop SUBCOMMAND --help' for details; man cuptop for everything.\n");
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
                      strcmp(argv[1], "help") == 0)) {
        usage(stdout);
        return CUPTOP_EXIT_OK;
    }
    if (argc >= 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
        printf("cuptop %s\n", PACKAGE_VERSION);
        return CUPTOP_EXIT_OK;
    }
    /* No subcommand, or only options: the live monitor. */
    if (argc < 2 || argv[1][0] == '-') {
        argv[0] = (char *)"top";
        return cmd_top(argc, argv);
    }
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (strcmp(argv[1], subcommands[i].name) == 0)
            return subcommands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "cuptop: unknown subcommand '%s' (try 'cuptop --help')\n", argv[1]);
    return CUPTOP_EXIT_USAGE;
}
