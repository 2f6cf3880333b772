/*
 * cli_stores.c - --store given once or more: the stores a command reads
 * (sessions, check, export --job, compare).  One --store naming one store
 * is read as before; several, or a directory of stores gathered from many
 * hosts, are one model_stores (model_stores_add says how a directory of
 * stores is recognised).  A store of several that cannot be read is named
 * here, once, and left out: the others are served (DESIGN invariant 11)
 * and the command's exit status says something could not be read.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cupstore.h"
#include "cuptop.h"
#include "model.h"

int cli_stores_arg(const char *cmd, cli_stores *s, const char *dir)
{
    const char **p = realloc(s->arg, (s->n + 1) * sizeof *p);
    if (!p) {
        cli_error(cmd, "out of memory");
        return CUPTOP_EXIT_USAGE;
    }
    s->arg = p;
    p[s->n++] = dir;
    return -1;
}

void cli_stores_free(cli_stores *s)
{
    free(s->arg);
    memset(s, 0, sizeof *s);
}

/* Name the stores of several that cannot be read, or hold no session
 * (not a store at all: a wrong path), and drop them from ss.  Returns how
 * many were dropped. */
static size_t stores_drop_bad(const char *cmd, model_stores *ss)
{
    size_t k = 0, bad = 0;
    for (size_t i = 0; i < ss->n; i++) {
        model_store *st = &ss->v[i];
        if (st->err)
            cli_error(cmd, "cannot read the store %s: %s (left out)", st->dir,
                      st->err == ENOENT ? "no such directory" : cupstore_strerror(st->err));
        else if (!st->nsessions)
            cli_error(cmd, "%s is not a cuptop store: no session in it, nor in any directory "
                           "in it (left out)", st->dir);
        if (st->err || !st->nsessions) {
            free(st->dir);
            free(st->label);
            bad++;
            continue;
        }
        ss->v[k++] = *st;
    }
    ss->n = k;
    return bad;
}

int cli_stores_open(const char *cmd, const cli_stores *s, model_stores *out, size_t *bad)
{
    int rc = 0;
    memset(out, 0, sizeof *out);
    *bad = 0;
    if (!s->n) {   /* $CUPTOP_STORE, then the default */
        char *dir = cli_store_dir(cmd, NULL);
        if (!dir)
            return CUPTOP_EXIT_USAGE;
        rc = model_stores_add(out, dir);
        free(dir);
    }
    for (size_t i = 0; i < s->n && rc == 0; i++)
        rc = model_stores_add(out, s->arg[i]);
    if (rc) {
        cli_error(cmd, "out of memory");
        model_stores_free(out);
        return CUPTOP_EXIT_USAGE;
    }
    if (!out->several)   /* one store: the command reads it as ever */
        return 0;
    *bad = stores_drop_bad(cmd, out);
    if (!out->n) {
        cli_error(cmd, "none of the stores named can be read");
        model_stores_free(out);
        return CUPTOP_EXIT_USAGE;
    }
    return 0;
}
