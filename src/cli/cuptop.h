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
#include <stdio.h>

#include "cli_opts.h"
#include "export.h"
#include "model.h"

int cmd_top(int argc, char **argv);       /* src/cli/cmd_top.c: live monitor */
int cmd_demo(int argc, char **argv);      /* src/cli/cmd_demo.c             */
int cmd_run(int argc, char **argv);       /* src/cli/cmd_run.c              */
int cmd_sessions(int argc, char **argv);  /* src/cli/cmd_sessions.c         */
int cmd_check(int argc, char **argv);     /* src/cli/cmd_check.c            */
int cmd_report(int argc, char **argv);    /* src/cli/cmd_report.c           */
int cmd_export(int argc, char **argv);    /* src/cli/cmd_export.c           */
int cmd_control(int argc, char **argv);   /* src/cli/cmd_control.c          */
int cmd_compare(int argc, char **argv);   /* src/cli/cmd_compare.c          */
int cmd_baseline(int argc, char **argv);  /* src/cli/cmd_baseline.c         */

/* Each command's option table (cli_opts.h), beside its parser in
 * cmd_NAME.c (the exporter's: exporter.h). */
extern const cli_cmd cli_cmd_top, cli_cmd_sessions, cli_cmd_check, cli_cmd_control,
    cli_cmd_compare, cli_cmd_ranges, cli_cmd_report, cli_cmd_export, cli_cmd_demo,
    cli_cmd_baseline, cli_cmd_run, cli_cmd_attach;
/* The commands with a table, NULL-terminated (main.c). */
extern const cli_cmd *const cli_opts_commands[];

/* One traced run for `cuptop baseline` (src/cli/cmd_run.c). */
typedef struct cli_run_result {
    char session[128];          /* the first session created; "" none       */
} cli_run_result;
/** Run args with the agent injected and the CUPTOP_* environment as it is
 *  now; wait.  @return the command's exit status (128 + N for signal N),
 *  126/127 when it could not be started, -1 when there is no agent. */
int cli_run_traced(const char *cmd, char **args, cli_run_result *res);
/** Would the agent accept value for the CUPTOP_* variable var? */
bool cli_run_accepts(const char *var, const char *value);
int cmd_ranges(int argc, char **argv);    /* src/cli/cmd_ranges.c: NVTX      */
int cmd_attach(int argc, char **argv);    /* src/cli/cmd_attach.c           */

/** For the monitor (tui_opts): the CUDA processes without the agent, and
 *  cuptop attach run for one of them (cmd_attach.c). */
int cli_attach_list(char ***items);
int cli_attach_pid(const char *store_dir, int pid, char **msg);
/** Whether process pid has ended (no such process, or a zombie). */
bool cli_pid_gone(int pid);
/** The attaches that have no session yet in the store dir (STORE/.attach-PID,
 *  written by the agent while it waits for CUDA), of processes that still
 *  live: one line each on stdout (cmd_attach.c).  Returns how many. */
int cli_pending_print(const char *dir);
/** One agent option of cuptop run / attach at argv[*i] (--store, --kinds,
 *  --label, --config, --dormant, ...): checked with the agent's parser and
 *  put in the environment as the CUPTOP_* variable.  Advances *i past its
 *  value.  @return 1 taken, 0 not an agent option, -1 misuse (*rc: the
 *  exit status, the line printed). */
int cli_agent_option(const char *cmd, int argc, char **argv, int *i, int *rc);
/** Wait up to wait_s for the agent of env to apply control generation gen
 *  and print the outcome (cmd_control.c); returns the exit status. */
int cli_control_wait(const char *cmd, cupstore_env *env, uint64_t gen, uint32_t pool,
                     double wait_s);
/** The same, and stop waiting when process pid ends (0: not checked); a
 *  generation superseded by a later one applied is success when
 *  superseded_ok (an attach: the agent is attached, the later kinds apply). */
int cli_control_wait_pid(const char *cmd, cupstore_env *env, uint64_t gen, uint32_t pool,
                         double wait_s, int pid, bool superseded_ok);

/** Print "cuptop CMD: MESSAGE" and a hint to stderr; returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/** Usage error for the option getopt_long just rejected (optind/optopt
 *  as getopt left them); returns 2. */
int cli_bad_option(const char *cmd, char **argv);
/** Usage error when the operands after the options are not exactly one
 *  session (call when optind + 1 != argc); returns 2. */
int cli_one_session(const char *cmd, int argc, char **argv);
/** Set the function the fatal-signal guard calls before it prints and
 *  exits (the monitor's terminal restore, through tui_opts); NULL for none. */
void cli_set_fatal_cleanup(void (*fn)(void));

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

/** Resolve --store (NULL: $CUPTOP_STORE, then the default).  On failure
 *  prints one line for cmd and returns NULL. */
char *cli_store_dir(const char *cmd, const char *opt);
/** One line explaining why a session could not be opened (the model's
 *  words: model_strerror). */
static inline const char *cli_open_error(int rc)
{
    return model_strerror(rc);
}
/** --store, given once or more (cli_stores.c): the arguments as given. */
typedef struct cli_stores {
    const char **arg;           /* malloc'ed array of borrowed strings     */
    size_t n;
} cli_stores;
/** Add one --store argument.  @return -1, or CUPTOP_EXIT_USAGE (said). */
int cli_stores_arg(const char *cmd, cli_stores *s, const char *dir);
void cli_stores_free(cli_stores *s);
/** The stores s names (none: $CUPTOP_STORE, then the default), each a
 *  store or a directory of stores (model_stores_add).  One store is left
 *  as it is (out->several false: the command reads out->v[0].dir as
 *  before, and says itself why it cannot be read); of several, those that
 *  cannot be read or hold no session are named on stderr and dropped
 *  (*bad counts them).  @return 0, or CUPTOP_EXIT_USAGE (said: none can
 *  be read, out of memory).  Release out with model_stores_free. */
int cli_stores_open(const char *cmd, const cli_stores *s, model_stores *out, size_t *bad);

/** Open session id of the store dir (cupstore_session_open with flags);
 *  on failure print "session ID in DIR: WHY" for cmd.
 *  @return 0, or CUPTOP_EXIT_USAGE (*env untouched). */
int cli_session_open(const char *cmd, const char *dir, const char *id, unsigned flags,
                     cupstore_env **env);
/** cli_store_dir (store: --store or NULL) and cli_session_open: the
 *  session id of a command that takes one.  @return 0 or CUPTOP_EXIT_USAGE
 *  (said on stderr). */
int cli_store_session_open(const char *cmd, const char *store, const char *id, unsigned flags,
                           cupstore_env **env);
/** Print "cannot read the store DIR: WHY" for cmd (rc from listing the
 *  store's sessions); returns CUPTOP_EXIT_USAGE. */
int cli_store_error(const char *cmd, const char *dir, int rc);
/** Flush stdio's stdout and start an xout on fd 1 (a --json document, a
 *  report); prints "out of memory" for cmd when it cannot.
 *  @return 0 or ENOMEM. */
int cli_xout_begin(const char *cmd, xout *o);
/** Write out and free o (from cli_xout_begin); a failed write is recorded
 *  with cli_stdout_failed.  @return 0 or the write's errno. */
int cli_xout_end(xout *o);
/** Print why a model_* call failed for session id: its cause (then freed)
 *  or, when it has none (out of memory), the words for rc. */
void cli_model_error(const char *cmd, const char *id, int rc, char *cause);
/** Print s escaped for a terminal (control characters, ESC, invalid
 *  UTF-8 shown as \xHH). */
void cli_print_safe(FILE *f, const char *s, size_t n);

/** "  attached to the running process at T by uid U ..." for a session
 *  cuptop attach started (nothing otherwise). */
void cli_print_attached(FILE *f, const model_summary *s);
/* The model's scope line (a stop signal the application survived), if any. */
void cli_print_scope(FILE *f, const model_summary *s);

/** One note as "INDENT<level> <UTC time>  <text>" + newline, the text
 *  escaped for a terminal (model_escape). */
void cli_print_note(FILE *f, const char *indent, const model_note *n);

/** The JSON object for one summary (sessions --json, check --job --json). */
void sessions_json(xout *o, const model_summary *s);
/** The same object without its closing brace, for a command that adds
 *  members (check --json: "advice"). */
void sessions_json_fields(xout *o, const model_summary *s);

/* cuptop check over periodic windows (--capture-range every:P/W): how many
 * were judged, how late their edges came, which lost records (check_windows.c). */
typedef struct check_win {
    model_windows w;            /* w.n 0: no periodic windows              */
    char loss[8][200];          /* the windows that lost records           */
    size_t nloss, more;         /*   (more: past the eight shown)          */
} check_win;
/** Judge the windows of env over [from_s, to_s]; facts that cannot be read
 *  leave out zeroed (the verdict stands without the windows' words). */
void check_win_read(cupstore_env *env, uint64_t from_s, uint64_t to_s, check_win *out);
/** The verdict's window lines ("  windows: ...", one per lossy window). */
void check_win_print(FILE *f, const check_win *w);
/** check --json: ,"windows":{...} or ,"windows":null. */
void check_win_json(xout *o, const check_win *w);

#endif /* CUPTOP_CLI_H */
