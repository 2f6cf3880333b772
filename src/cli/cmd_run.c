/*
 * cmd_run.c - cuptop run: start a program with the agent injected.
 *
 *   cuptop run [--store DIR] [--kinds LIST] [--pool N] [--buffer-size B]
 *              [--queue N] [--config FILE] [--dormant] [--count-only] [--log]
 *              -- CMD [ARGS...]
 *
 * Sets CUDA_INJECTION64_PATH to libcuptop-agent.so and the CUPTOP_*
 * variables, then execs CMD: the exit status is CMD's own.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cupstore.h"
#include "cuptop.h"

static void run_usage(FILE *f)
{
    fprintf(f,
            "usage: cuptop run [OPTIONS] -- CMD [ARGS...]\n\n"
            "Run CMD with the cuptop agent injected (CUDA_INJECTION64_PATH).\n\n"
            "  --store DIR        store directory (default $CUPTOP_STORE or ~/.local/state/cuptop)\n"
            "  --kinds LIST       activity kinds: kernel,memcpy,memset,runtime,driver,sync,\n"
            "                     overhead,marker, or all / none / default\n"
            "  --pool N           most buffers handed to CUPTI at once (default: grows with threads)\n"
            "  --buffer-size B    bytes per buffer, e.g. 4M (64K..256M)\n"
            "  --queue N          completed-buffer queue capacity\n"
            "  --config FILE      key=value settings (the environment wins)\n"
            "  --dormant          start with no kinds on; turn them on from the monitor\n"
            "  --count-only       parse and count records but store none (CUPTOP_SINK=null)\n"
            "  --log              agent messages on stderr\n\n"
            "The exit status is CMD's.  See man cuptop (ENVIRONMENT) for every CUPTOP_* variable.\n");
}

/* A count or a size with an optional K/M/G suffix. */
static bool run_valid_number(const char *s, bool size)
{
    const char *p = s;
    if (!isdigit((unsigned char)*p))
        return false;
    while (isdigit((unsigned char)*p))
        p++;
    if (size && *p && strchr("kKmMgG", *p)) {
        p++;
        if (*p == 'i' || *p == 'I')
            p++;
        if (*p == 'b' || *p == 'B')
            p++;
    }
    return *p == '\0' && strtoull(s, NULL, 10) > 0;
}

/* Absolute form of a path (the program may chdir before CUDA starts). */
static char *run_abspath(const char *p)
{
    char cwd[PATH_MAX], *out;
    if (p[0] == '/' || !getcwd(cwd, sizeof cwd))
        return strdup(p);
    if (asprintf(&out, "%s/%s", cwd, p) < 0)
        return NULL;
    return out;
}

int cmd_run(int argc, char **argv)
{
    const char *cmd = argv[0];
    int i;

    for (i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--")) {
            i++;
            break;
        }
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            run_usage(stdout);
            return CUPTOP_EXIT_OK;
        }
        if (!strcmp(o, "--dormant")) {
            setenv("CUPTOP_DORMANT", "1", 1);
            continue;
        }
        if (!strcmp(o, "--count-only")) {
            setenv("CUPTOP_SINK", "null", 1);
            continue;
        }
        if (!strcmp(o, "--log")) {
            setenv("CUPTOP_LOG", "1", 1);
            continue;
        }
        if (o[0] != '-')
            break;   /* the command itself, without "--" */
        if (!v)
            return cli_usage_error(cmd, "%s needs a value", o);
        i++;
        if (!strcmp(o, "--store")) {
            char *abs = run_abspath(v);
            if (!abs)
                return cli_usage_error(cmd, "--store: out of memory");
            setenv("CUPTOP_STORE", abs, 1);
            free(abs);
        } else if (!strcmp(o, "--kinds")) {
            uint32_t mask;
            const char *bad = NULL;
            if (cupstore_kinds_parse(v, &mask, &bad))
                return cli_usage_error(cmd, "--kinds: unknown kind at \"%s\"", bad ? bad : v);
            setenv("CUPTOP_KINDS", v, 1);
        } else if (!strcmp(o, "--pool")) {
            if (!run_valid_number(v, false) || strtoul(v, NULL, 10) > 4096)
                return cli_usage_error(cmd, "--pool: \"%s\" is not a count from 1 to 4096", v);
            setenv("CUPTOP_POOL", v, 1);
        } else if (!strcmp(o, "--buffer-size")) {
            if (!run_valid_number(v, true))
                return cli_usage_error(cmd, "--buffer-size: \"%s\" is not a size (e.g. 4M)", v);
            setenv("CUPTOP_BUFFER_SIZE", v, 1);
        } else if (!strcmp(o, "--queue")) {
            if (!run_valid_number(v, false))
                return cli_usage_error(cmd, "--queue: \"%s\" is not a positive count", v);
            setenv("CUPTOP_QUEUE", v, 1);
        } else if (!strcmp(o, "--config")) {
            char *abs = run_abspath(v);
            if (!abs || access(abs, R_OK) != 0) {
                free(abs);
                return cli_usage_error(cmd, "--config: cannot read \"%s\"", v);
            }
            setenv("CUPTOP_CONFIG", abs, 1);
            free(abs);
        } else {
            return cli_usage_error(cmd, "unknown option \"%s\"", o);
        }
    }
    if (i >= argc)
        return cli_usage_error(cmd, "no command given (cuptop run [OPTIONS] -- CMD [ARGS...])");

    char *agent = cli_locate("libcuptop-agent.so");
    if (!agent) {
        cli_error(cmd, "libcuptop-agent.so not found: the agent was not built (no CUPTI "
                       "headers at configure time?) or set CUPTOP_AGENT");
        return CUPTOP_EXIT_USAGE;
    }
    setenv("CUDA_INJECTION64_PATH", agent, 1);
    free(agent);
    execvp(argv[i], argv + i);
    cli_error(cmd, "cannot run %s: %s", argv[i], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}
