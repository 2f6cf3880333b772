/*
 * cmd_exporter.c - `cuptop exporter`: serve /metrics over HTTP, or write
 * the same exposition to a node_exporter textfile every N seconds.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_opts.h"
#include "cupstore.h"
#include "exporter.h"
#include "exporter_http.h"

#include "model.h"

#define EXIT_OK CUPTOP_EXIT_OK
#define EXIT_FAIL CUPTOP_EXIT_NO
#define EXIT_USAGE CUPTOP_EXIT_USAGE

#define STR_(x) #x
#define STR(x) STR_(x)

enum { O_LISTEN = 256, O_STORE, O_RETENTION, O_MAX_SESSIONS, O_TIMEOUT, O_MAX_CONN,
       O_TEXTFILE, O_INTERVAL, O_ONCE, O_VERBOSE };

/* The exporter's options (cli_opts.h): parsed and --help's options part
 * made from this table; --interval and --once are said with --textfile. */
const cli_cmd cli_cmd_exporter = {
    .name = "exporter",
    .shortopts = "+h",
    .column = 23,
    .opts = (const cli_opt[]){
        {"listen", "ADDR:PORT", O_LISTEN,
         "address to serve on (default " EXPORTER_DEFAULT_ADDR ":" STR(EXPORTER_DEFAULT_PORT)
         "; [::1]:PORT for IPv6;\nport 0 picks a free one, printed at start)\n", NULL},
        {"store", "DIR", O_STORE,
         "a store to export (repeatable; default: the default store)\n", NULL},
        {"retention", "SECONDS", O_RETENTION, "export ended and crashed sessions this long "
                                              "(default " STR(EXPORTER_DEFAULT_RETENTION_S) ")\n",
         NULL},
        {"max-sessions", "N", O_MAX_SESSIONS,
         "sessions per scrape, running first (default " STR(EXPORTER_DEFAULT_MAX_SESSIONS)
         "); the rest\nare counted in cuptop_exporter_sessions_omitted\n", NULL},
        {"timeout", "SECONDS", O_TIMEOUT,
         "close a connection idle this long (default " STR(EXPORTER_DEFAULT_TIMEOUT_S) ")\n",
         NULL},
        {"max-connections", "N", O_MAX_CONN,
         "connections at once (default " STR(EXPORTER_DEFAULT_MAX_CONNECTIONS) ")\n", NULL},
        {"textfile", "PATH", O_TEXTFILE,
         "instead of serving, write the exposition to PATH (atomically)\n"
         "every --interval seconds (default " STR(EXPORTER_DEFAULT_INTERVAL_S)
         "), for node_exporter's\ntextfile collector; --once writes it once and exits\n", NULL},
        {"interval", "SECONDS", O_INTERVAL, NULL, NULL},
        {"once", NULL, O_ONCE, NULL, NULL},
        {"verbose", NULL, O_VERBOSE, "print libmicrohttpd's messages\n", NULL},
        {"help", NULL, 'h', NULL, NULL},
        {NULL, NULL, 0, NULL, NULL},
    },
};

static void usage(FILE *f)
{
    fputs("usage: cuptop exporter [--listen ADDR:PORT] [--store DIR]... [--retention SECONDS]\n"
          "                       [--max-sessions N] [--timeout SECONDS] [--max-connections N]\n"
          "       cuptop exporter --textfile PATH [--interval SECONDS] [--once] [--store DIR]...\n\n"
          "Serve the live health of every session in the stores as Prometheus metrics:\n"
          "GET /metrics, text format 0.0.4 (OpenMetrics when the scraper asks for it).\n"
          "The stores are only read, in short transactions per scrape.\n\n",
          f);
    cli_opts_help(&cli_cmd_exporter, f);
    fputs("Runs until SIGINT or SIGTERM.  Exit status: 0, 1 when a textfile cannot be\n"
          "written, 2 on a usage error or when the address cannot be bound.\n",
          f);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    fputs("cuptop exporter: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(" (try 'cuptop exporter --help')\n", stderr);
    return EXIT_USAGE;
}

static void error_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void error_line(const char *fmt, ...)
{
    va_list ap;
    fputs("cuptop exporter: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static bool parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
    char *end;
    if (!s || !*s || *s == '-' || *s == '+')
        return false;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

/* "ADDR:PORT" or "[V6ADDR]:PORT", numeric addresses written out in full:
 * an IPv4 address as four decimal parts (inet_pton: never "0", "127.1"
 * or "0x7f000001", which inet_aton would take for 0.0.0.0 or 127.0.0.1),
 * an IPv6 one in brackets, the port in decimal.  shown gets the address
 * as it will be bound, for the "serving" line. */
static int parse_listen(const char *spec, struct sockaddr_storage *ss, char *shown, size_t len)
{
    char host[128];
    const char *port;
    bool v6 = spec[0] == '[';
    if (v6) {
        const char *close = strchr(spec, ']');
        if (!close || close[1] != ':' || (size_t)(close - spec - 1) >= sizeof host)
            return -1;
        memcpy(host, spec + 1, (size_t)(close - spec - 1));
        host[close - spec - 1] = '\0';
        port = close + 2;
    } else {
        const char *colon = strrchr(spec, ':');
        if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof host ||
            memchr(spec, ':', (size_t)(colon - spec)))
            return -1;
        memcpy(host, spec, (size_t)(colon - spec));
        host[colon - spec] = '\0';
        port = colon + 1;
    }
    unsigned long p;
    if (!parse_uint(port, 0, 65535, &p))
        return -1;
    memset(ss, 0, sizeof *ss);
    if (!v6) {
        struct sockaddr_in *in = (struct sockaddr_in *)ss;
        if (inet_pton(AF_INET, host, &in->sin_addr) != 1)
            return -1;
        in->sin_family = AF_INET;
        in->sin_port = htons((uint16_t)p);
        inet_ntop(AF_INET, &in->sin_addr, shown, (socklen_t)len);
        return 0;
    }
    /* IPv6: getaddrinfo for the scope ("fe80::1%eth0"), numeric only */
    struct addrinfo hints = {.ai_family = AF_INET6, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV}, *res;
    if (getaddrinfo(host, port, &hints, &res) != 0 || !res)
        return -1;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    char a[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, &((struct sockaddr_in6 *)ss)->sin6_addr, a, sizeof a);
    snprintf(shown, len, "[%s]", a);
    return 0;
}

/* Write the text exposition to path atomically: a temporary file in the
 * same directory, synced, then renamed over it. */
static int textfile_write(exporter *e, const char *path)
{
    char *text = NULL, *tmp = NULL;
    size_t len = 0;
    int rc = exporter_scrape(e, false, &text, &len);
    if (rc)
        return rc;
    if (asprintf(&tmp, "%s.tmp.%ld", path, (long)getpid()) < 0) {
        free(text);
        return ENOMEM;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = errno;
        goto out;
    }
    for (size_t off = 0; off < len;) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = w < 0 ? errno : EIO;
            break;
        }
        off += (size_t)w;
    }
    if (!rc && fsync(fd) != 0)
        rc = errno;
    if (close(fd) != 0 && !rc)
        rc = errno;
    if (!rc && rename(tmp, path) != 0)
        rc = errno;
    if (rc)
        unlink(tmp);
out:
    free(tmp);
    free(text);
    return rc;
}

static int run_textfile(exporter *e, const char *path, unsigned interval, bool once,
                        const sigset_t *stop)
{
    for (;;) {
        int rc = textfile_write(e, path);
        if (rc) {
            error_line("cannot write %s: %s", path, strerror(rc));
            return EXIT_FAIL;
        }
        if (once)
            return EXIT_OK;
        struct timespec ts = {.tv_sec = (time_t)interval};
        int sig = sigtimedwait(stop, NULL, &ts);
        if (sig > 0)
            return EXIT_OK;
    }
}

/* The exporter's command line; stores: the --store values (argc + 1
 * slots, caller frees). */
struct exporter_args {
    const char *listen, *textfile;
    const char **stores;
    size_t nstores;
    unsigned long retention, max_sessions, timeout, max_conn, interval;
    bool once, verbose, have_interval;
};

/* One option's value into a: NULL, or what is wrong with optarg. */
static const char *exporter_option(int c, struct exporter_args *a)
{
    switch (c) {
    case O_LISTEN: a->listen = optarg; break;
    case O_STORE: a->stores[a->nstores++] = optarg; break;
    case O_RETENTION:
        if (!parse_uint(optarg, 0, 366ul * 86400, &a->retention))
            return "--retention wants seconds (0 to 31622400)";
        break;
    case O_MAX_SESSIONS:
        if (!parse_uint(optarg, 1, 100000, &a->max_sessions))
            return "--max-sessions wants a number from 1 to 100000";
        break;
    case O_TIMEOUT:
        if (!parse_uint(optarg, 1, 3600, &a->timeout))
            return "--timeout wants seconds (1 to 3600)";
        break;
    case O_MAX_CONN:
        if (!parse_uint(optarg, 1, 1024, &a->max_conn))
            return "--max-connections wants a number from 1 to 1024";
        break;
    case O_TEXTFILE: a->textfile = optarg; break;
    case O_INTERVAL:
        a->have_interval = true;
        if (!parse_uint(optarg, 1, 86400, &a->interval))
            return "--interval wants seconds (1 to 86400)";
        break;
    case O_ONCE: a->once = true; break;
    case O_VERBOSE: a->verbose = true; break;
    }
    return NULL;
}

/* Parse and check the options: -1 to go on, else the exit status (the
 * misuse said on stderr, or --help printed). */
static int exporter_parse(int argc, char **argv, struct exporter_args *a)
{
    struct option longopts[CLI_OPTS_MAX];
    int c;
    cli_opts_begin(&cli_cmd_exporter, longopts);
    while ((c = getopt_long(argc, argv, cli_cmd_exporter.shortopts, longopts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return EXIT_OK;
        }
        if (c == '?' || c == ':')
            /* for a long option needing a value, getopt sets optopt to its value */
            return usage_error("%s '%s'", optopt ? "missing value or unknown option"
                                                 : "unknown option",
                               argv[optind - 1]);
        const char *bad = exporter_option(c, a);
        if (bad)
            return usage_error("%s, not '%s'", bad, optarg);
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    if (a->textfile && a->listen)
        return usage_error("--textfile and --listen do not go together");
    if (!a->textfile && (a->once || a->have_interval))
        return usage_error("--once and --interval need --textfile");
    if (a->textfile && !*a->textfile)
        return usage_error("--textfile wants a path");
    return -1;
}

/* Serve /metrics on ss until SIGINT or SIGTERM (blocked: stop); the
 * exit status. */
static int exporter_serve(exporter *e, const struct exporter_args *a,
                          const struct sockaddr_storage *ss, const char *bound,
                          char *const *dirs, size_t ndirs, sigset_t *stop)
{
    exporter_server srv = {.exp = e, .verbose = a->verbose};
    char *cause = NULL;
    if (exporter_server_start(&srv, (const struct sockaddr *)ss, (unsigned)a->timeout,
                              (unsigned)a->max_conn, &cause) != 0) {
        error_line("%s on %s", cause ? cause : "cannot listen", a->listen);
        free(cause);
        return EXIT_USAGE;
    }
    char shown[160];
    snprintf(shown, sizeof shown, "%s:%u", bound, (unsigned)srv.port);
    fprintf(stderr, "cuptop exporter: serving http://%s/metrics for", shown);
    for (size_t i = 0; i < ndirs; i++)
        fprintf(stderr, " %s", dirs[i]);
    fputc('\n', stderr);
    int sig;
    while (sigwait(stop, &sig) != 0)
        ;
    exporter_server_stop(&srv);
    return EXIT_OK;
}

int cmd_exporter(int argc, char **argv)
{
    struct exporter_args a = {
        .retention = EXPORTER_DEFAULT_RETENTION_S,
        .max_sessions = EXPORTER_DEFAULT_MAX_SESSIONS,
        .timeout = EXPORTER_DEFAULT_TIMEOUT_S,
        .max_conn = EXPORTER_DEFAULT_MAX_CONNECTIONS,
        .interval = EXPORTER_DEFAULT_INTERVAL_S,
    };
    int status = EXIT_USAGE;

    if (!(a.stores = calloc((size_t)argc + 1, sizeof *a.stores))) {
        error_line("out of memory");
        return EXIT_USAGE;
    }
    if ((status = exporter_parse(argc, argv, &a)) >= 0) {
        free(a.stores);
        return status;
    }
    status = EXIT_USAGE;
    struct sockaddr_storage ss;
    char deflisten[64];
    snprintf(deflisten, sizeof deflisten, "%s:%d", EXPORTER_DEFAULT_ADDR, EXPORTER_DEFAULT_PORT);
    if (!a.listen)
        a.listen = deflisten;
    char bound[INET6_ADDRSTRLEN + 8] = "";
    if (!a.textfile && parse_listen(a.listen, &ss, bound, sizeof bound) != 0) {
        free(a.stores);
        return usage_error("--listen wants ADDR:PORT with a numeric address written out "
                           "(127.0.0.1:PORT, [::1]:PORT), not '%s'", a.listen);
    }

    /* Resolve the stores (the default one when none is given). */
    size_t nstores = a.nstores;
    char **dirs = calloc(nstores ? nstores : 1, sizeof *dirs);
    size_t ndirs = 0;
    exporter *e = NULL;
    if (!dirs)
        goto oom;
    for (size_t i = 0; i < (nstores ? nstores : 1); i++) {
        int rc = cupstore_dir_resolve(nstores ? a.stores[i] : NULL, &dirs[ndirs]);
        if (rc) {
            error_line("cannot find the store: %s", cupstore_strerror(rc));
            goto done;
        }
        ndirs++;
    }
    exporter_opts eo = {.stores = (const char *const *)dirs, .nstores = ndirs,
                        .retention_s = a.retention, .max_sessions = a.max_sessions};
    if (exporter_new(&e, &eo) != 0)
        goto oom;

    /* SIGINT/SIGTERM end it; blocked here so that the server's thread
     * (started below, inheriting the mask) never takes them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (a.textfile)
        status = run_textfile(e, a.textfile, (unsigned)a.interval, a.once, &stop);
    else
        status = exporter_serve(e, &a, &ss, bound, dirs, ndirs, &stop);
    goto done;
oom:
    error_line("out of memory");
done:
    exporter_free(e);
    for (size_t i = 0; i < ndirs; i++)
        free(dirs[i]);
    free(dirs);
    free(a.stores);
    return status;
}
