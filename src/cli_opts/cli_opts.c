/*
 * cli_opts.c - getopt_long tables and --help made from a command's option
 * table (cli_opts.h).
 */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "cli_opts.h"

void cli_opts_begin(const cli_cmd *c, struct option lo[CLI_OPTS_MAX])
{
    size_t n = 0;
    for (const cli_opt *o = c->opts; o->name && n + 1 < CLI_OPTS_MAX; o++, n++)
        lo[n] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL,
                                o->val};
    lo[n] = (struct option){NULL, 0, NULL, 0};
    opterr = 0;
    optind = 1;
}

const cli_opt *cli_opts_find(const cli_cmd *c, const char *arg)
{
    bool lng = arg[0] == '-' && arg[1] == '-';
    bool shrt = arg[0] == '-' && arg[1] && arg[1] != '-' && !arg[2] &&
                strchr(c->shortopts, arg[1]);
    for (const cli_opt *o = c->opts; o->name && (lng || shrt); o++)
        if (lng ? !strcmp(arg + 2, o->name) : o->val == arg[1])
            return o;
    return NULL;
}

void cli_opts_help(const cli_cmd *c, FILE *f)
{
    for (const cli_opt *o = c->opts; o->name; o++) {
        if (!o->help)
            continue;
        int w;
        if (o->shown)
            w = fprintf(f, "  %s", o->shown);
        else
            w = fprintf(f, "  --%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        /* a left column too wide for the text's column: two spaces */
        fprintf(f, "%*s", w < c->column ? c->column - w : 2, "");
        for (const char *s = o->help; *s;) {
            const char *nl = strchr(s, '\n');
            size_t len = nl ? (size_t)(nl - s) + 1 : strlen(s);
            if (s != o->help)
                fprintf(f, "%*s", c->column, "");
            fwrite(s, 1, len, f);
            s += len;
        }
    }
}
