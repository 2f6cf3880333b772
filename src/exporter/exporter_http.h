/*
 * exporter_http.h - the exporter's HTTP server (libmicrohttpd), kept apart
 * so that only exporter_http.c includes microhttpd.h.
 */
#ifndef CUPTOP_EXPORTER_HTTP_H
#define CUPTOP_EXPORTER_HTTP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "exporter.h"

struct MHD_Daemon;
struct exp_conn;

typedef struct exporter_server {
    exporter *exp;              /* scraped from the server's one thread    */
    bool verbose;               /* libmicrohttpd's messages to stderr      */
    struct MHD_Daemon *daemon;
    uint16_t port;              /* the port bound (useful with port 0)     */
    /* The connections, oldest first (the server's one thread only). */
    struct exp_conn *conns, *conns_tail;
    unsigned nconns, max_conns;
    uint64_t request_deadline_ns;
} exporter_server;

/** Listen on addr and serve until exporter_server_stop.  Connections idle
 *  for timeout_s are closed, and so is one that has not sent a whole
 *  request timeout_s after it connected (or after its last answer); at
 *  most max_connections at once: a new connection past the limit closes
 *  the oldest one that is not being answered (a client that trickles its
 *  headers cannot hold the scrapes off), or is itself refused when every
 *  one is.
 *  @param[out] cause  malloc'ed message on failure.
 *  @return 0 or an errno value. */
int exporter_server_start(exporter_server *srv, const struct sockaddr *addr,
                          unsigned timeout_s, unsigned max_connections, char **cause);
void exporter_server_stop(exporter_server *srv);

#endif /* CUPTOP_EXPORTER_HTTP_H */
