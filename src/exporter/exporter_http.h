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

typedef struct exporter_server {
    exporter *exp;              /* scraped from the server's one thread    */
    bool verbose;               /* libmicrohttpd's messages to stderr      */
    struct MHD_Daemon *daemon;
    uint16_t port;              /* the port bound (useful with port 0)     */
} exporter_server;

/** Listen on addr and serve until exporter_server_stop.  Connections idle
 *  for timeout_s are closed; at most max_connections at once.
 *  @param[out] cause  malloc'ed message on failure.
 *  @return 0 or an errno value. */
int exporter_server_start(exporter_server *srv, const struct sockaddr *addr,
                          unsigned timeout_s, unsigned max_connections, char **cause);
void exporter_server_stop(exporter_server *srv);

#endif /* CUPTOP_EXPORTER_HTTP_H */
