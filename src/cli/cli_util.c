/* cli_util.c - small helpers shared by the subcommands. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cupstore.h"
#include "cuptop.h"
#include "model.h"

/* "cuptop CMD: MESSAGE" on stderr, without the newline. */
static void error_start(const char *cmd, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
static void error_start(const char *cmd, const char *fmt, va_list ap)
{
    fprintf(stderr, "cuptop %s: ", cmd);
    vfprintf(stderr, fmt, ap);
}

void cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_start(cmd, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_start(cmd, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (try 'cuptop %s --help')\n", cmd);
    return CUPTOP_EXIT_USAGE;
}

int cli_bad_option(const char *cmd, char **argv)
{
    return cli_usage_error(cmd, "%s '%s'",
                           optopt ? "missing value or unknown option" : "unknown option",
                           argv[optind - 1]);
}

int cli_one_session(const char *cmd, int argc, char **argv)
{
    if (optind >= argc)
        return cli_usage_error(cmd, "no session given");
    return cli_usage_error(cmd, "one session only (got '%s' too)", argv[optind + 1]);
}

/* The first error of a write to fd 1 that did not go through stdio. */
static int stdout_write_err;

void cli_stdout_failed(int err)
{
    if (!stdout_write_err)
        stdout_write_err = err > 0 ? err : EIO;
}

int cli_close_stdout(const char *cmd, int status)
{
    int err = stdout_write_err;
    bool failed = err != 0 || ferror(stdout);
    errno = 0;
    if (fflush(stdout) != 0) {
        failed = true;
        if (!err)
            err = errno;
    }
    /* A closed fd 1 with nothing written to it is not a failure (EBADF
     * only: anything pending made the fflush above fail already). */
    errno = 0;
    if (fclose(stdout) != 0 && errno != EBADF) {
        failed = true;
        if (!err)
            err = errno;
    }
    if (!failed)
        return status;
    fprintf(stderr, "cuptop%s%s: cannot write the output: %s\n", cmd ? " " : "", cmd ? cmd : "",
            err ? strerror(err) : "a write to standard output failed");
    return CUPTOP_EXIT_USAGE;
}

static char *join_path(const char *dir, size_t dirlen, const char *name)
{
    size_t n = dirlen + 1 + strlen(name) + 1;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%.*s/%s", (int)dirlen, dir, name);
    return p;
}

char *cli_locate(const char *name)
{
    const char *env = NULL;
    if (strcmp(name, "libcuptop-agent.so") == 0)
        env = getenv("CUPTOP_AGENT");
    else if (strcmp(name, "libcuptop-simcupti.so") == 0)
        env = getenv("CUPTOP_SIM_LIBRARY");
    else if (strcmp(name, "cuptop-simapp") == 0)
        env = getenv("CUPTOP_SIMAPP");
    if (env && *env)
        return strdup(env);

    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            char *p = join_path(exe, (size_t)(slash - exe), name);
            if (p && access(p, R_OK) == 0)
                return p;
            free(p);
        }
    }
    char *p = join_path(PKGLIBDIR, strlen(PKGLIBDIR), name);
    if (p && access(p, R_OK) == 0)
        return p;
    free(p);
    return NULL;
}

char *cli_store_dir(const char *cmd, const char *opt)
{
    char *dir = NULL;
    int rc = cupstore_dir_resolve(opt, &dir);
    if (rc) {
        cli_error(cmd, "cannot find the store directory: %s (use --store DIR or set "
                       "CUPTOP_STORE)", cupstore_strerror(rc));
        return NULL;
    }
    return dir;
}

int cli_session_open(const char *cmd, const char *dir, const char *id, unsigned flags,
                     cupstore_env **env)
{
    int rc = cupstore_session_open(env, dir, id, flags);
    if (rc == 0)
        return 0;
    cli_error(cmd, "session %s in %s: %s", id, dir, cli_open_error(rc));
    return CUPTOP_EXIT_USAGE;
}

int cli_store_session_open(const char *cmd, const char *store, const char *id, unsigned flags,
                           cupstore_env **env)
{
    char *dir = cli_store_dir(cmd, store);
    if (!dir)
        return CUPTOP_EXIT_USAGE;
    int rc = cli_session_open(cmd, dir, id, flags, env);
    free(dir);
    return rc;
}

int cli_store_error(const char *cmd, const char *dir, int rc)
{
    cli_error(cmd, "cannot read the store %s: %s", dir,
              rc == ENOENT ? "no such directory" : cupstore_strerror(rc));
    return CUPTOP_EXIT_USAGE;
}

int cli_xout_begin(const char *cmd, xout *o)
{
    fflush(stdout);
    if (xout_init(o, STDOUT_FILENO) == 0)
        return 0;
    cli_error(cmd, "out of memory");
    return ENOMEM;
}

int cli_xout_end(xout *o)
{
    int err = xout_flush(o);
    if (err)
        cli_stdout_failed(err);
    xout_free(o);
    return err;
}

void cli_model_error(const char *cmd, const char *id, int rc, char *cause)
{
    if (cause)
        cli_error(cmd, "%s", cause);
    else
        cli_error(cmd, "session %s: %s", id, model_strerror(rc));
    free(cause);
}

void cli_print_safe(FILE *f, const char *s, size_t n)
{
    char buf[2048];
    while (n) {
        size_t take = n > 400 ? 400 : n;
        for (int k = 0; k < 3 && take < n && ((unsigned char)s[take] & 0xc0) == 0x80; k++)
            take--;
        model_escape(buf, sizeof buf, s, take);
        fputs(buf, f);
        s += take;
        n -= take;
    }
}

void cli_print_note(FILE *f, const char *indent, const model_note *n)
{
    char when[32];
    model_format_second(n->time_ns / 1000000000u, when, sizeof when);
    fprintf(f, "%s%-7s %s  ", indent, model_note_level_name(n->level), when);
    cli_print_safe(f, n->text, strlen(n->text));
    fputc('\n', f);
}

void cli_print_scope(FILE *f, const model_summary *s)
{
    char line[400];
    model_scope_text(s, line, sizeof line);
    if (line[0])
        fprintf(f, "  %s\n", line);
}

void cli_print_attached(FILE *f, const model_summary *s)
{
    char at[64], uid[4 * sizeof s->attached_uid];
    if (!s->attached_ns)
        return;
    model_format_second(s->attached_ns / 1000000000u, at, sizeof at);
    model_escape(uid, sizeof uid, s->attached_uid, strlen(s->attached_uid));
    fprintf(f, "  attached to the running process at %s by uid %s (cuptop attach): only the "
               "span after it is judged; records before it were never in scope\n", at, uid);
}
