/*
 * cli_opts.h - a command's options declared once, as tmux's command table
 * does: each option's name, argument and help text in one table, from
 * which the command's getopt_long table and the options part of its --help
 * are made.  Each command's table sits beside its parser (src/cli/cmd_*.c,
 * src/exporter/cmd_exporter.c); cli_opts_commands (cuptop.h) lists them,
 * so that tests/cli/test_cli_opts.sh can check each option against --help
 * and the man page (doc/cuptop.1).  Depends on nothing of the project
 * (the CLI and the exporter use it).
 */
#ifndef CUPTOP_CLI_OPTS_H
#define CUPTOP_CLI_OPTS_H

#include <getopt.h>
#include <stdio.h>

#define CLI_OPTS_MAX 48   /* options of one command, the ending entry too */

/* One option. */
typedef struct cli_opt {
    const char *name;   /* long name without "--"; NULL ends the table        */
    const char *arg;    /* its argument as --help shows it ("DIR"); NULL: none */
    int val;            /* what getopt_long returns for it                     */
    const char *help;   /* --help's text, lines ending in '\n'; NULL: not
                           listed on its own (said with the entry before it,
                           in the usage lines, or --help itself)               */
    const char *shown;  /* --help's left column when not "--name ARG"         */
} cli_opt;

/* One command's options. */
typedef struct cli_cmd {
    const char *name;       /* the subcommand, as in "cuptop NAME"           */
    const char *shortopts;  /* getopt_long's optstring ("h", "+h", "o:h")    */
    int column;             /* the column --help's texts start at            */
    const cli_opt *opts;
} cli_cmd;

/** Fill lo (CLI_OPTS_MAX entries) with c's getopt_long table and reset
 *  getopt (optind 1, opterr 0: the command says what was wrong). */
void cli_opts_begin(const cli_cmd *c, struct option lo[CLI_OPTS_MAX]);

/** For the commands parsed by hand (run, attach, demo, baseline: a
 *  program's own arguments follow theirs, and they name an unknown option
 *  in words of their own): the entry of c's table that arg names exactly,
 *  "--name" (no abbreviation, no "=VALUE"), or "-X" where X is in
 *  c->shortopts and is the entry's val.  NULL when arg is none of them. */
const cli_opt *cli_opts_find(const cli_cmd *c, const char *arg);

/** Print the options part of c's --help to f: "  --name ARG" (or the
 *  entry's shown text) and its help text from c->column, continuation lines
 *  indented to it, in table order. */
void cli_opts_help(const cli_cmd *c, FILE *f);

#endif
