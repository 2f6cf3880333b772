/*
 * exporter_http.c - the HTTP side, on libmicrohttpd: GET /metrics (the
 * exposition, OpenMetrics when Accept asks for it), GET / (a page with a
 * link), 404 for any other path, 405 for any other method, and
 * libmicrohttpd's own 400/413/431 for malformed or oversized requests.
 *
 * One polling thread serves every connection without blocking on any of
 * them: a client that never sends its request, or never reads the answer,
 * is dropped after the connection timeout, and the number of connections
 * is limited, so a stuck or hostile client cannot stall the scrapes.  The
 * timeout is also a deadline for a whole request (libmicrohttpd's own
 * timeout is an idle one, which a client sending a header line every
 * half second never reaches), and a connection past the limit evicts the
 * oldest one that is not being answered instead of waiting behind it:
 * 64 such slow clients cannot keep a scrape out.  HEAD is answered as GET
 * without the body.
 */
#include "config.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "exporter.h"
#include "exporter_http.h"

const char *exporter_content_type(bool openmetrics)
{
    return openmetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                       : "text/plain; version=0.0.4; charset=utf-8";
}

/* q of one media range ("type/sub;a=b;q=0.5"); 1 when absent. */
static double media_q(const char *p, const char *end)
{
    const char *q = p;
    while ((q = memchr(q, ';', (size_t)(end - q))) != NULL) {
        q++;
        while (q < end && (*q == ' ' || *q == '\t'))
            q++;
        if (end - q >= 2 && (q[0] == 'q' || q[0] == 'Q') && q[1] == '=')
            return strtod(q + 2, NULL);
    }
    return 1.0;
}

static bool media_is(const char *p, const char *end, const char *type)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    size_t n = strlen(type);
    if ((size_t)(end - p) < n || strncasecmp(p, type, n) != 0)
        return false;
    p += n;
    return p == end || *p == ';' || *p == ' ' || *p == '\t';
}

bool exporter_wants_openmetrics(const char *accept)
{
    double om = 0, text = 0;
    if (!accept)
        return false;
    for (const char *p = accept; *p;) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        double q = media_q(p, end);
        if (media_is(p, end, "application/openmetrics-text") && q > om)
            om = q;
        else if ((media_is(p, end, "text/plain") || media_is(p, end, "*/*")) && q > text)
            text = q;
        p = *end ? end + 1 : end;
    }
    return om > 0 && om >= text;
}

static const char index_page[] =
    "<!DOCTYPE html>\n<html><head><title>cuptop exporter</title></head><body>\n"
    "<h1>cuptop exporter</h1>\n<p>CUPTI trace-loss health of the sessions in this "
    "host's cuptop stores.</p>\n<p><a href=\"/metrics\">/metrics</a></p>\n</body></html>\n";

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
                             void *body, size_t len, enum MHD_ResponseMemoryMode mode,
                             bool allow)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
    if (!r) {
        if (mode == MHD_RESPMEM_MUST_FREE)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *msg,
                                  bool allow)
{
    return reply(c, status, "text/plain; charset=utf-8", (void *)msg, strlen(msg),
                 MHD_RESPMEM_PERSISTENT, allow);
}

/* ---- Connections: a deadline per request, eviction at the limit ---------- */

struct exp_conn {
    struct exp_conn *prev, *next;
    int fd;
    uint64_t since_ns;          /* connected, or its last answer sent      */
    bool answering;             /* a whole request is in: being answered   */
    bool closing;               /* shut down by us: waiting for MHD        */
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct exp_conn *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

static void conn_requested(struct MHD_Connection *c)
{
    struct exp_conn *k = conn_of(c);
    if (k)
        k->answering = true;
}

/* End a connection from the server's thread: its socket is shut down,
 * libmicrohttpd sees the end at its next poll and closes it (and tells
 * conn_notify).  The fd stays open until then, so it is never another's. */
static void conn_drop(exporter_server *srv, struct exp_conn *k)
{
    (void)srv;
    if (k->closing)
        return;
    k->closing = true;
    shutdown(k->fd, SHUT_RDWR);
}

static void conn_notify(void *cls, struct MHD_Connection *c, void **ctx,
                        enum MHD_ConnectionNotificationCode code)
{
    exporter_server *srv = cls;
    struct exp_conn *k = *ctx;
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        if (!k)
            return;
        if (k->prev)
            k->prev->next = k->next;
        else
            srv->conns = k->next;
        if (k->next)
            k->next->prev = k->prev;
        else
            srv->conns_tail = k->prev;
        srv->nconns--;
        free(k);
        *ctx = NULL;
        return;
    }
    /* STARTED: past its deadline, any connection without a whole request
     * goes; then, over the limit, the oldest one not being answered (the
     * new one last: it is the youngest). */
    const union MHD_ConnectionInfo *fi = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!fi || !(k = calloc(1, sizeof *k)))
        return; /* untracked: libmicrohttpd's own limits still apply */
    uint64_t now = mono_ns();
    k->fd = fi->connect_fd;
    k->since_ns = now;
    k->prev = srv->conns_tail;
    if (srv->conns_tail)
        srv->conns_tail->next = k;
    else
        srv->conns = k;
    srv->conns_tail = k;
    srv->nconns++;
    *ctx = k;
    unsigned open = 0;
    for (struct exp_conn *o = srv->conns; o; o = o->next) {
        if (!o->closing && !o->answering && now - o->since_ns > srv->request_deadline_ns)
            conn_drop(srv, o);
        open += !o->closing;
    }
    for (struct exp_conn *o = srv->conns; o && open > srv->max_conns; o = o->next) {
        if (!o->closing && !o->answering) {
            conn_drop(srv, o);
            open--;
        }
    }
}

/* An answer was sent: the connection may carry another request (keep
 * alive), timed from now. */
static void request_done(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode code)
{
    (void)cls;
    (void)state;
    (void)code;
    struct exp_conn *k = conn_of(c);
    if (k) {
        k->answering = false;
        k->since_ns = mono_ns();
    }
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state)
{
    exporter_server *srv = cls;
    (void)version;
    (void)upload;
    conn_requested(c);
    /* GET and HEAD (libmicrohttpd leaves the body out): anything else is
     * refused before its body is read. */
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD are served here\n",
                          true);
    /* A GET with a body: read it to its end (bounded by the connection's
     * memory limit), then refuse it.  *state marks the connection. */
    static int fresh, with_body;
    if (*state == NULL) {
        *state = &fresh;
        if (*upload_size == 0)
            return MHD_YES; /* MHD calls again once the headers are in */
    }
    if (*upload_size) {
        *upload_size = 0;
        *state = &with_body;
        return MHD_YES;
    }
    if (*state == &with_body)
        return reply_text(c, MHD_HTTP_BAD_REQUEST, "a GET request has no body\n", false);
    if (strcmp(url, "/") == 0)
        return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", (void *)index_page,
                     sizeof index_page - 1, MHD_RESPMEM_PERSISTENT, false);
    if (strcmp(url, "/metrics") != 0)
        return reply_text(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n", false);
    const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    bool om = exporter_wants_openmetrics(accept);
    char *text = NULL;
    size_t len = 0;
    if (exporter_scrape(srv->exp, om, &text, &len) != 0)
        return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n", false);
    return reply(c, MHD_HTTP_OK, exporter_content_type(om), text, len, MHD_RESPMEM_MUST_FREE,
                 false);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    exporter_server *srv = cls;
    if (!srv->verbose)
        return;
    fputs("cuptop exporter: ", stderr);
    vfprintf(stderr, fmt, ap);
}

int exporter_server_start(exporter_server *srv, const struct sockaddr *addr,
                          unsigned timeout_s, unsigned max_connections, char **cause)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
    if (addr->sa_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    srv->conns = srv->conns_tail = NULL;
    srv->nconns = 0;
    srv->max_conns = max_connections;
    srv->request_deadline_ns = (uint64_t)timeout_s * 1000000000u;
    /* libmicrohttpd's limit one above ours: the connection past our limit
     * gets in, and conn_notify evicts one to make room. */
    srv->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, handle, srv, MHD_OPTION_SOCK_ADDR, addr,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)timeout_s, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)max_connections + 1, MHD_OPTION_NOTIFY_CONNECTION, conn_notify, srv,
        MHD_OPTION_NOTIFY_COMPLETED, request_done, srv,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
        MHD_OPTION_STRICT_FOR_CLIENT, (int)1, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, srv,
        MHD_OPTION_END);
    if (!srv->daemon) {
        int err = errno;
        if (asprintf(cause, "cannot listen: %s", err ? strerror(err) : "libmicrohttpd failed") < 0)
            *cause = NULL;
        return err ? err : EINVAL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info ? info->port : 0;
    return 0;
}

void exporter_server_stop(exporter_server *srv)
{
    if (srv->daemon)
        MHD_stop_daemon(srv->daemon);
    srv->daemon = NULL;
}
