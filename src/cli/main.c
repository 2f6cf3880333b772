/* main.c - the cuptop program: dispatch to subcommands. */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cupstore.h"
#include "cuptop.h"
#include "export.h"
#include "exporter.h"

/* The commands whose options are declared in a table (cli_opts.h):
 * tests/cli/test_cli_opts.sh checks each against --help and the man page. */
const cli_cmd *const cli_opts_commands[] = {
    &cli_cmd_top,     &cli_cmd_sessions, &cli_cmd_check, &cli_cmd_control,
    &cli_cmd_compare, &cli_cmd_ranges,   &cli_cmd_report,  &cli_cmd_export, &cli_cmd_demo,
    &cli_cmd_baseline, &cli_cmd_run, &cli_cmd_attach, &cli_cmd_exporter,
    NULL,
};

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
    {"export", cmd_export, "export a window: chrome, perfetto, jsonl, csv or store"},
    {"ranges", cmd_ranges, "NVTX ranges per name: count, p50/p90/p99, slowest instances"},
    {"control", cmd_control, "change a running session's kinds or buffer pool"},
    {"compare", cmd_compare, "set two sessions, epochs or marks side by side"},
    {"baseline", cmd_baseline, "the control runs: collection off, narrowed, full"},
    {"attach", cmd_attach, "load the agent into a running CUDA process (ptrace)"},
    {"exporter", cmd_exporter, "serve Prometheus metrics of every session (fleet view)"},
};

/* LMDB trusts the pages of the file it maps: damage deep inside a data page
 * (past the meta pages the store validates before mapping) can make a read
 * fault or trip one of LMDB's assertions.  Reads that cover many sessions
 * run each session under the store's guard (cupstore_guarded): there the
 * handler jumps back and only that session is left out (DESIGN invariant
 * 11).  Anywhere else cuptop only reads the store, so a fault ends in one
 * line and exit 2 instead of a core dump (doc/reliability.md, row 8).  In
 * sanitizer builds a fault outside a guard goes to the sanitizer, whose
 * report must win. */
/* What the guard calls before it prints (the monitor restores the
 * terminal); set through cli_set_fatal_cleanup. */
static void (*volatile fatal_cleanup)(void);

void cli_set_fatal_cleanup(void (*fn)(void))
{
    fatal_cleanup = fn;
}

/* Before any fatal exit: the monitor's terminal, an export's temp file. */
static void fatal_tidy(void)
{
    void (*cleanup)(void) = fatal_cleanup;
    if (cleanup) {
        fatal_cleanup = NULL;
        cleanup();
    }
    export_fatal_cleanup();
}

/* An LMDB assertion outside any guard (cupstore_guard_set_fatal). */
static void fatal_assert(const char *what)
{
    fatal_tidy();
    fprintf(stderr, "cuptop: the session's data.mdb is damaged: %s while reading the store "
                    "(check it with mdb_stat -a); nothing was written\n", what);
    _exit(CUPTOP_EXIT_USAGE);
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define CUPTOP_FATAL_GUARD 1
#endif
#ifdef CUPTOP_FATAL_GUARD
static void fatal_guard(int sig)
{
    static const char msg_bus[] =
        "cuptop: read fault (SIGBUS) while reading the store: the session's data.mdb is "
        "most likely damaged or truncated (check it with mdb_stat -a); nothing was written\n";
    static const char msg_segv[] =
        "cuptop: memory fault (SIGSEGV) while reading the store: the session's data.mdb is "
        "most likely damaged (check it with mdb_stat -a); nothing was written\n";
    cupstore_guard_recover(sig); /* inside a guard: does not return */
    fatal_tidy();
    if (sig == SIGBUS)
        (void)!write(STDERR_FILENO, msg_bus, sizeof msg_bus - 1);
    else
        (void)!write(STDERR_FILENO, msg_segv, sizeof msg_segv - 1);
    _exit(CUPTOP_EXIT_USAGE);
}
#else
/* The sanitizer's own handlers, put back for a fault outside a guard. */
static struct sigaction san_bus, san_segv;
static void fatal_guard(int sig)
{
    cupstore_guard_recover(sig); /* inside a guard: does not return */
    /* Not ours: restore the sanitizer's handler; the faulting instruction
     * runs again and faults under it, with its report. */
    sigaction(sig, sig == SIGBUS ? &san_bus : &san_segv, NULL);
}
#endif

static void fatal_guard_install(void)
{
    static char altstack[64 * 1024];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
#ifdef CUPTOP_FATAL_GUARD
    (void)sigaltstack(&ss, NULL);
    sa.sa_flags = SA_ONSTACK | SA_NODEFER;
#else
    (void)ss; /* the sanitizer runs its handlers on a stack of its own */
    sa.sa_flags = SA_ONSTACK | SA_NODEFER;
    sigaction(SIGBUS, NULL, &san_bus);
    sigaction(SIGSEGV, NULL, &san_segv);
#endif
    /* SA_NODEFER: a guard's siglongjmp restores the mask anyway; a second
     * fault in another session must find the handler as the first did. */
    sa.sa_handler = fatal_guard;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGSEGV, &sa, NULL);
    cupstore_guard_set_fatal(fatal_assert);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: cuptop [--store DIR] [SUBCOMMAND [ARGS...]]\n\n"
               "Watch a CUPTI activity trace for holes, second by second.\n\n"
               "subcommands:\n");
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(f, "  %-9s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(f, "\n'cuptop SUBCOMMAND --help' for details; man cuptop for everything.\n");
}

/* `cuptop --store DIR SUBCOMMAND ARGS...` (or --store=DIR): the global
 * --store is handed to the subcommand as if it had been written right after
 * the subcommand's name, so a --store among ARGS still wins.  *argvp is set
 * to a new vector (owned by the caller, never freed: main returns) when the
 * words after --store name a subcommand; otherwise nothing changes and the
 * options go to the monitor. */
static const struct subcommand *global_store(int *argcp, char ***argvp)
{
    int argc = *argcp, rest;
    char **argv = *argvp;
    const char *dir;
    if (argc >= 3 && strcmp(argv[1], "--store") == 0)
        dir = argv[2], rest = 3;
    else if (argc >= 2 && strncmp(argv[1], "--store=", 8) == 0)
        dir = argv[1] + 8, rest = 2;
    else
        return NULL;
    if (rest >= argc)
        return NULL;
    const struct subcommand *sub = NULL;
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (strcmp(argv[rest], subcommands[i].name) == 0)
            sub = &subcommands[i];
    if (!sub)
        return NULL;
    /* A --store among ARGS wins: the global one is dropped, not added to
     * it (sessions, check, export and compare read every --store given). */
    bool own = false;
    for (int i = rest + 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        own |= strcmp(argv[i], "--store") == 0 || strncmp(argv[i], "--store=", 8) == 0;
    /* Held in a static so that a subcommand which exits from inside
     * (its --help) leaves it reachable; dispatch frees it otherwise. */
    static char **nv;
    nv = calloc((size_t)(argc - rest) + 3, sizeof *nv);
    if (!nv)
        return NULL;
    int n = 0;
    nv[n++] = argv[rest];
    if (!own) {
        nv[n++] = (char *)"--store";
        nv[n++] = (char *)dir;
    }
    for (int i = rest + 1; i < argc; i++)
        nv[n++] = argv[i];
    nv[n] = NULL;
    *argcp = n;
    *argvp = nv;
    return sub;
}

static int dispatch(int argc, char **argv, const char **name)
{
    *name = NULL;
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
                      strcmp(argv[1], "help") == 0)) {
        usage(stdout);
        return CUPTOP_EXIT_OK;
    }
    if (argc >= 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
        printf("cuptop %s\n", PACKAGE_VERSION);
        return CUPTOP_EXIT_OK;
    }
    char **given = argv;
    const struct subcommand *sub = global_store(&argc, &argv);
    if (sub) {
        *name = sub->name;
        int status = sub->fn(argc, argv);
        if (argv != given)
            free(argv);
        return status;
    }
    /* No subcommand, or only options: the live monitor. */
    if (argc < 2 || argv[1][0] == '-') {
        argv[0] = (char *)"top";
        *name = "top";
        return cmd_top(argc, argv);
    }
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (strcmp(argv[1], subcommands[i].name) == 0) {
            *name = subcommands[i].name;
            return subcommands[i].fn(argc - 1, argv + 1);
        }
    fprintf(stderr, "cuptop: unknown subcommand '%s' (try 'cuptop --help')\n", argv[1]);
    return CUPTOP_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    fatal_guard_install();
    const char *name;
    int status = dispatch(argc, argv, &name);
    /* Output that did not reach its file is a failure, whatever the
     * command concluded (`cuptop sessions > /dev/full`). */
    return cli_close_stdout(name, status);
}
