/*
 * cuptop.h - the cuptop program's subcommands and small shared helpers.
 * Each subcommand takes argv with argv[0] = the subcommand name and returns
 * the process exit status: 0 ok, 1 a negative answer (INCOMPLETE, ...),
 * 2 usage error or unreadable store.
 */
#ifndef CUPTOP_CLI_H
#define CUPTOP_CLI_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#define CUPTOP_EXIT_OK 0
#define CUPTOP_EXIT_NO 1
#define CUPTOP_EXIT_USAGE 2

int cmd_top(int argc, char **argv);       /* tui/        : live monitor     */
int cmd_demo(int argc, char **argv);      /* src/cli/cmd_demo.c             */
int cmd_run(int argc, char **argv);       /* src/cli/cmd_run.c              */
int cmd_sessions(int argc, char **argv);  /* src/cli/cmd_sessions.c         */
int cmd_check(int argc, char **argv);     /* src/cli/cmd_check.c            */
int cmd_report(int argc, char **argv);    /* src/cli/cmd_report.c           */
int cmd_export(int argc, char **argv);    /* src/cli/cmd_export.c           */
int cmd_control(int argc, char **argv);   /* src/cli/cmd_control.c          */

/** Print "cuptop CMD: MESSAGE" and a hint to stderr; returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/** Usage error for the option getopt_long just rejected (optind/optopt
 *  as getopt left them); returns 2. */
int cli_bad_option(const char *cmd, char **argv);
/** Usage error when the operands after the options are not exactly one
 *  session (call when optind + 1 != argc); returns 2. */
int cli_one_session(const char *cmd, int argc, char **argv);
/** Called from the fatal-signal guard before it prints and exits (the TUI
 *  sets it to restore the terminal); NULL for none. */
extern void (*volatile cli_fatal_cleanup)(void);

/** Print "cuptop CMD: MESSAGE" to stderr (one line). */
void cli_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/** Record that writing standard output through its file descriptor (an
 *  xout on fd 1) failed with err; cli_close_stdout reports it, once. */
void cli_stdout_failed(int err);
/** At the end of every command: flush and close standard output.  When a
 *  write failed (here, earlier through stdio, or as cli_stdout_failed
 *  recorded) print one line "cuptop CMD: cannot write the output: ..." and
 *  return 2; otherwise return status.  cmd NULL for cuptop itself. */
int cli_close_stdout(const char *cmd, int status);

/** Find a file installed beside cuptop: first the directory of
 *  /proc/self/exe (the build tree), then PKGLIBDIR.  name is e.g.
 *  "libcuptop-agent.so", "libcuptop-simcupti.so", "cuptop-simapp".
 *  Environment overrides: CUPTOP_AGENT, CUPTOP_SIM_LIBRARY, CUPTOP_SIMAPP.
 *  @return malloc'ed path, or NULL if not found. */
char *cli_locate(const char *name);

/** Options shared by the export writer and its callers (CLI and TUI). */
typedef struct export_opts {
    const char *store_dir;   /* resolved store directory                   */
    const char *session;     /* session id or unique prefix                */
    uint64_t from_ns, to_ns; /* window (CLOCK_REALTIME ns), inclusive      */
    const char *mark;        /* or a mark name (then from/to are ignored)  */
    const char *format;      /* "chrome", "jsonl", "csv", "store"          */
    const char *output;      /* path, or "-" for standard output           */
    bool force;              /* overwrite an existing output               */
    bool allow_stdout;       /* "-" means standard output (the CLI only:
                                the monitor owns its terminal)             */
} export_opts;

/* Progress: records done so far (total may be 0 when unknown). Return
 * non-zero to cancel. */
typedef int (*export_progress_fn)(uint64_t done, uint64_t total, void *arg);

/** Write an export.  Streams; atomic (temp file + rename).
 *  @param[out] cause  malloc'ed message on failure; on success, NULL or a
 *                     note the person must see (a count-only session's
 *                     export holds no records); the caller frees it.
 *  @return 0, or a CUPTOP_EXIT_* status (2: bad arguments or store). */
int export_run(const export_opts *o, export_progress_fn progress, void *arg,
               char **cause);

/** The live monitor (tui/).  session may be NULL (sessions screen).
 *  demo_hint: text for a banner line (NULL for none). */
typedef struct tui_opts {
    const char *store_dir;
    const char *session;
    bool ascii;              /* force ASCII plots instead of Braille        */
    bool mono;               /* no colours                                  */
    const char *demo_hint;
} tui_opts;
int tui_main(const tui_opts *o, char **cause);

#endif /* CUPTOP_CLI_H */
