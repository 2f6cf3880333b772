/*
 * exporter.h - `cuptop exporter`: the live health of every session in one
 * or more stores as Prometheus metrics (text exposition 0.0.4, or
 * OpenMetrics 1.0.0 when the scraper asks for it), served over HTTP
 * (libmicrohttpd) or written to a node_exporter textfile.
 *
 * A front end at the top layer: it reads sessions through src/model (state,
 * verdict, loss classes) and store/ (health rows, stop steps), read-only,
 * and never includes the CLI's or the monitor's internals.
 *
 * Caveats
 * - Threads: an exporter handle is used by one thread at a time (the HTTP
 *   server calls it from its one polling thread).
 * - Each scrape reads each changed session in short read transactions; no
 *   transaction is held between scrapes.  Ended sessions are read once and
 *   then served from memory until their retention runs out.
 * - It never writes a store (sessions are opened CUPSTORE_RDONLY).
 */
#ifndef CUPTOP_EXPORTER_H
#define CUPTOP_EXPORTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Defaults (doc/prometheus.md). */
#define EXPORTER_DEFAULT_ADDR "127.0.0.1"
#define EXPORTER_DEFAULT_PORT 9966
#define EXPORTER_DEFAULT_RETENTION_S 600     /* ended sessions: 10 minutes  */
#define EXPORTER_DEFAULT_MAX_SESSIONS 100    /* sessions per scrape         */
#define EXPORTER_DEFAULT_TIMEOUT_S 10        /* idle connection timeout     */
#define EXPORTER_DEFAULT_MAX_CONNECTIONS 32
#define EXPORTER_DEFAULT_INTERVAL_S 15       /* textfile mode               */

typedef struct exporter exporter;
struct cli_cmd;

typedef struct exporter_opts {
    const char *const *stores;   /* store directories (resolved)           */
    size_t nstores;
    uint64_t retention_s;        /* ended/crashed sessions kept this long  */
    size_t max_sessions;         /* per scrape; the rest are counted       */
    bool full_rejudge;           /* benchmarks only: summarise each running
                                    session from its start at every scrape
                                    instead of incrementally (model_live) */
} exporter_opts;

/** Create an exporter over the given stores (nothing is read yet).
 *  @param[out] out  release with exporter_free.
 *  @return 0 or ENOMEM. */
int exporter_new(exporter **out, const exporter_opts *o);
void exporter_free(exporter *e);

/** Read the stores and render one exposition.
 *  @param[in] openmetrics  OpenMetrics 1.0.0 (else text format 0.0.4).
 *  @param[out] text  malloc'ed, not NUL-terminated beyond len; caller frees.
 *  @return 0 or ENOMEM (unreadable stores and sessions are counted in the
 *  exposition, never an error here). */
int exporter_scrape(exporter *e, bool openmetrics, char **text, size_t *len);

/** True when an HTTP Accept header prefers OpenMetrics over the text
 *  format (NULL or empty: false). */
bool exporter_wants_openmetrics(const char *accept);

/** Content-Type of an exposition. */
const char *exporter_content_type(bool openmetrics);

/** The `cuptop exporter` subcommand (argv[0] = "exporter"). */
int cmd_exporter(int argc, char **argv);
/** Its options (cli_opts.h), from which it parses and prints --help. */
extern const struct cli_cmd cli_cmd_exporter;

#endif /* CUPTOP_EXPORTER_H */
