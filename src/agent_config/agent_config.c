/* agent_config.c - CUPTOP_* configuration (see agent_config.h). */
#include "agent_config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cupstore.h"

void agent_config_defaults(agent_config *c)
{
    memset(c, 0, sizeof *c);
    c->kinds = CUPSTORE_KINDS_DEFAULT;
    c->api_mode = CUPSTORE_API_GPU;
    c->capture_max = 1;            /* --capture-range-end stop */
    c->buffer_size = AGENT_DEFAULT_BUFFER_SIZE;
    c->flush_period_ms = AGENT_DEFAULT_FLUSH_MS;
    c->sink = AGENT_SINK_STORE;
    c->stop_timeout_ms = AGENT_DEFAULT_STOP_TIMEOUT_MS;
}

__attribute__((format(printf, 2, 3)))
static void config_warn(agent_config *c, const char *fmt, ...)
{
    va_list ap;
    if (c->nwarn >= AGENT_CONFIG_WARN_MAX)
        return;
    va_start(ap, fmt);
    vsnprintf(c->warn[c->nwarn++], sizeof c->warn[0], fmt, ap);
    va_end(ap);
}

int agent_config_parse_size(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;
    unsigned shift = 0;

    while (isspace((unsigned char)*s))
        s++;
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    switch (tolower((unsigned char)*end)) {
    case 'k': shift = 10; end++; break;
    case 'm': shift = 20; end++; break;
    case 'g': shift = 30; end++; break;
    case '\0': break;
    default: return -1;
    }
    if (shift && (*end == 'i' || *end == 'I'))
        end++;
    if (shift && (*end == 'b' || *end == 'B'))
        end++;
    if (*end != '\0' || (shift && v > (UINT64_MAX >> shift)))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    uint64_t v;
    if (agent_config_parse_size(s, &v) || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_bool(const char *s, bool *out)
{
    if (!strcmp(s, "1") || !strcasecmp(s, "yes") || !strcasecmp(s, "true") ||
        !strcasecmp(s, "on")) {
        *out = true;
        return 0;
    }
    if (!strcmp(s, "0") || !strcasecmp(s, "no") || !strcasecmp(s, "false") ||
        !strcasecmp(s, "off") || !*s) {
        *out = false;
        return 0;
    }
    return -1;
}

static bool copy_path(agent_config *c, char *dst, size_t len, const char *key, const char *v)
{
    if (strlen(v) >= len) {
        config_warn(c, "%s: value too long; using the default", key);
        return false;
    }
    strcpy(dst, v);
    return true;
}

bool agent_config_set(agent_config *c, const char *key, const char *value)
{
    char k[64];
    size_t i;
    uint64_t u;
    bool b;

    if (!strncasecmp(key, "CUPTOP_", 7))
        key += 7;
    for (i = 0; key[i] && i < sizeof k - 1; i++)
        k[i] = (char)toupper((unsigned char)key[i]);
    k[i] = '\0';

#define BAD(what) config_warn(c, "CUPTOP_%s=\"%.60s\": %s; using the default", k, value, what)
    if (!strcmp(k, "STORE")) {
        copy_path(c, c->store, sizeof c->store, "CUPTOP_STORE", value);
    } else if (!strcmp(k, "KINDS")) {
        uint32_t mask;
        const char *bad = NULL;
        if (cupstore_kinds_parse(value, &mask, &bad) == 0)
            c->kinds = mask;
        else
            BAD("unknown activity kind (try kernel,memcpy,memset,runtime,driver,"
                "sync,overhead,marker, all or none)");
    } else if (!strcmp(k, "BUFFER_SIZE")) {
        if (parse_u64(value, 64u << 10, 256u << 20, &u) == 0 && u % 8 == 0)
            c->buffer_size = (size_t)u;
        else
            BAD("not a size from 64K to 256M, multiple of 8");
    } else if (!strcmp(k, "POOL")) {
        if (parse_u64(value, 1, AGENT_POOL_MAX, &u) == 0) {
            c->pool = (uint32_t)u;
            c->pool_explicit = true;
        } else {
            BAD("not a buffer count from 1 to 4096");
        }
    } else if (!strcmp(k, "QUEUE")) {
        if (parse_u64(value, 1, 1u << 20, &u) == 0)
            c->queue = (uint32_t)u;
        else
            BAD("not a queue capacity from 1 to 1048576");
    } else if (!strcmp(k, "DEVICE_BUFFER_SIZE")) {
        if (parse_u64(value, 0, (uint64_t)4 << 30, &u) == 0)
            c->device_buffer_size = (size_t)u;
        else
            BAD("not a size up to 4G");
    } else if (!strcmp(k, "DEVICE_BUFFER_POOL_LIMIT")) {
        if (parse_u64(value, 0, 1u << 20, &u) == 0)
            c->device_buffer_pool_limit = (size_t)u;
        else
            BAD("not a count up to 1048576");
    } else if (!strcmp(k, "FLUSH_PERIOD_MS")) {
        if (parse_u64(value, 0, 60000, &u) == 0)
            c->flush_period_ms = (uint32_t)u;
        else
            BAD("not a period from 0 to 60000 ms");
    } else if (!strcmp(k, "DORMANT")) {
        if (parse_bool(value, &b) == 0)
            c->dormant = b;
        else
            BAD("not 0 or 1");
    } else if (!strcmp(k, "LEDGER")) {
        if (parse_bool(value, &b) == 0)
            c->ledger = b;
        else
            BAD("not 0 or 1");
    } else if (!strcmp(k, "ON_DETACH")) {
        if (!strcasecmp(value, "finalize"))
            c->detach_keep = false;
        else if (!strcasecmp(value, "keep"))
            c->detach_keep = true;
        else
            BAD("not finalize or keep");
    } else if (!strcmp(k, "LOG")) {
        if (parse_bool(value, &b) == 0)
            c->log = b ? 1 : 0;
        else if (!strcasecmp(value, "info") || !strcmp(value, "2"))
            c->log = 2;
        else if (!strcasecmp(value, "warn") || !strcasecmp(value, "warning"))
            c->log = 1;
        else
            BAD("not 0, 1, warn or info");
    } else if (!strcmp(k, "SINK")) {
        if (!strcasecmp(value, "store"))
            c->sink = AGENT_SINK_STORE;
        else if (!strcasecmp(value, "null") || !strcasecmp(value, "none"))
            c->sink = AGENT_SINK_NULL;
        else
            BAD("not store or null");
    } else if (!strcmp(k, "CUPTI_LIBRARY")) {
        copy_path(c, c->cupti_library, sizeof c->cupti_library, "CUPTOP_CUPTI_LIBRARY", value);
    } else if (!strcmp(k, "STOP_TIMEOUT_MS")) {
        if (parse_u64(value, 10, 600000, &u) == 0)
            c->stop_timeout_ms = (uint32_t)u;
        else
            BAD("not a timeout from 10 to 600000 ms");
    } else if (!strcmp(k, "MAP_MAX")) {
        if (parse_u64(value, 1u << 20, UINT64_MAX, &u) == 0)
            c->map_max = u;
        else
            BAD("not a size of at least 1M");
    } else if (!strcmp(k, "DEVICES")) {
        uint32_t m;
        if (agent_config_parse_devices(value, &m) == 0)
            c->devices = m;
        else
            BAD("not a device list such as 0,2 or 0-3 (devices 0 to 15), or all");
    } else if (!strcmp(k, "ONLY_IF")) {
        const char *eq = strchr(value, '=');
        size_t n = eq ? (size_t)(eq - value) : 0;
        bool name_ok = n > 0 && !isdigit((unsigned char)value[0]);
        for (size_t j = 0; j < n && name_ok; j++)
            name_ok = isalnum((unsigned char)value[j]) || value[j] == '_';
        if (!*value)
            c->only_if[0] = '\0';
        else if (name_ok && strlen(value) < sizeof c->only_if)
            strcpy(c->only_if, value);
        else
            BAD("not VAR=VALUE (a variable name, '=', the value it must have)");
    } else if (!strcmp(k, "CAPTURE_RANGE")) {
        if (!*value || !strcasecmp(value, "none"))
            c->capture = AGENT_CAPTURE_NONE;
        else if (!strcmp(value, "cudaProfilerApi"))
            c->capture = AGENT_CAPTURE_PROFILER;
        else if (!strncmp(value, "nvtx:", 5)) {
            char n[256], d[256];
            bool dg;
            if (agent_config_nvtx_range(value + 5, n, d, &dg) == 0 &&
                strlen(value + 5) < sizeof c->capture_name) {
                c->capture = AGENT_CAPTURE_NVTX;
                strcpy(c->capture_name, value + 5);
            } else {
                BAD("nvtx:NAME[@DOMAIN] wants a range name of 1 to 255 bytes (NAME@ for the "
                    "default domain only)");
            }
        }
        else if (!strncmp(value, "every:", 6)) {
            char why[120];
            if (agent_config_parse_every(value + 6, &c->capture_period_ms,
                                         &c->capture_window_ms, why, sizeof why) == 0)
                c->capture = AGENT_CAPTURE_EVERY;
            else
                BAD(why);
        }
        else
            BAD("not cudaProfilerApi, nvtx:NAME, every:PERIOD/WINDOW or none");
    } else if (!strcmp(k, "CAPTURE_RANGE_END")) {
        char *end;
        if (!strcmp(value, "stop")) {
            c->capture_repeat = false;
            c->capture_max = 1;
        } else if (!strcmp(value, "repeat")) {
            c->capture_repeat = true;
            c->capture_max = 0;
        } else if (!strncmp(value, "repeat:", 7) && isdigit((unsigned char)value[7]) &&
                   (u = strtoull(value + 7, &end, 10)) >= 1 && u <= 1000000 && !*end) {
            c->capture_repeat = true;
            c->capture_max = (uint32_t)u;
        } else {
            BAD("not stop, repeat or repeat:N (N from 1 to 1000000)");
        }
    } else if (!strcmp(k, "API")) {
        uint32_t m = agent_config_parse_api_mode(value);
        if (m)
            c->api_mode = m;
        else
            BAD("not all, gpu or none");
    } else if (!strcmp(k, "API_INCLUDE") || !strcmp(k, "API_EXCLUDE")) {
        char why[120];
        char *dst = k[4] == 'I' ? c->api_include : c->api_exclude;
        if (agent_config_check_globs(value, why, sizeof why) == 0)
            snprintf(dst, CUPSTORE_API_GLOBS_MAX, "%s", value);
        else
            BAD(why);
    } else if (!strcmp(k, "CONFIG")) {
        copy_path(c, c->config_file, sizeof c->config_file, "CUPTOP_CONFIG", value);
    } else {
        return false;
    }
#undef BAD
    return true;
}

static const char *const config_keys[] = {
    "STORE", "KINDS", "BUFFER_SIZE", "POOL", "QUEUE", "DEVICE_BUFFER_SIZE",
    "DEVICE_BUFFER_POOL_LIMIT", "FLUSH_PERIOD_MS", "DORMANT", "LOG", "SINK",
    "CUPTI_LIBRARY", "STOP_TIMEOUT_MS", "MAP_MAX", "DEVICES", "ONLY_IF", "CAPTURE_RANGE",
    "CAPTURE_RANGE_END", "API", "API_INCLUDE", "API_EXCLUDE", "ON_DETACH", "LEDGER",
};

/* One duration of a schedule: digits and a unit (ms, s, m, h); *end is
 * left after it.  -1 when malformed or above a day. */
static int every_duration(const char *s, const char **end, uint64_t *ms)
{
    static const struct {
        const char *unit;
        uint64_t ms;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
    uint64_t v = 0;
    const char *p = s;
    while (isdigit((unsigned char)*p) && v <= AGENT_EVERY_PERIOD_MAX_MS)
        v = v * 10 + (uint64_t)(*p++ - '0');
    if (p == s || isdigit((unsigned char)*p))
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        size_t n = strlen(units[i].unit);
        if (!strncmp(p, units[i].unit, n) && !isalpha((unsigned char)p[n])) {
            *ms = v * units[i].ms;
            *end = p + n;
            return *ms > AGENT_EVERY_PERIOD_MAX_MS ? -1 : 0;
        }
    }
    return -1;
}

int agent_config_parse_every(const char *spec, uint32_t *period_ms, uint32_t *window_ms,
                             char *why, size_t len)
{
    uint64_t p, w;
    const char *e;
    if (every_duration(spec, &e, &p) || *e != '/' || every_duration(e + 1, &e, &w) || *e) {
        snprintf(why, len, "every:PERIOD/WINDOW wants two durations with a unit (ms, s, m, h), "
                           "such as every:60s/5s, each at most 24h");
        return -1;
    }
    if (w < AGENT_EVERY_WINDOW_MIN_MS || w >= p) {
        snprintf(why, len, "every:PERIOD/WINDOW wants %ums <= WINDOW < PERIOD (PERIOD %llums, "
                           "WINDOW %llums)", AGENT_EVERY_WINDOW_MIN_MS,
                 (unsigned long long)p, (unsigned long long)w);
        return -1;
    }
    *period_ms = (uint32_t)p;
    *window_ms = (uint32_t)w;
    return 0;
}

uint32_t agent_config_parse_api_mode(const char *s)
{
    if (!s)
        return 0;
    if (!strcasecmp(s, "all"))
        return CUPSTORE_API_ALL;
    if (!strcasecmp(s, "gpu"))
        return CUPSTORE_API_GPU;
    if (!strcasecmp(s, "none"))
        return CUPSTORE_API_NONE;
    return 0;
}

int agent_config_check_globs(const char *s, char *why, size_t len)
{
    if (strlen(s) >= CUPSTORE_API_GLOBS_MAX) {
        snprintf(why, len, "a glob list longer than %d characters", CUPSTORE_API_GLOBS_MAX - 1);
        return -1;
    }
    if (!*s)
        return 0;
    const char *p = s;
    for (;;) {
        size_t n = strcspn(p, ",");
        int depth = 0;
        if (n == 0) {
            snprintf(why, len, "an empty name in the glob list");
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            unsigned char ch = (unsigned char)p[i];
            if (ch == '[')
                depth++;
            else if (ch == ']' && depth)
                depth--;
            else if (!isalnum(ch) && ch != '_' && ch != '*' && ch != '?' &&
                     !(depth && (ch == '-' || ch == '!'))) {
                snprintf(why, len, "'%c' in \"%.*s\": a function-name glob has letters, "
                         "digits, '_', '*', '?' and [...]", isprint(ch) ? ch : '?',
                         (int)(n > 40 ? 40 : n), p);
                return -1;
            }
        }
        if (depth) {
            snprintf(why, len, "an unclosed '[' in \"%.*s\"", (int)(n > 40 ? 40 : n), p);
            return -1;
        }
        if (!p[n])
            return 0;
        p += n + 1;
    }
}

bool agent_config_globs_match(const char *list, const char *name)
{
    char g[CUPSTORE_API_GLOBS_MAX];
    const char *p = list;
    while (p && *p) {
        size_t n = strcspn(p, ",");
        if (n && n < sizeof g) {
            memcpy(g, p, n);
            g[n] = '\0';
            if (fnmatch(g, name, 0) == 0)
                return true;
        }
        p = p[n] ? p + n + 1 : NULL;
    }
    return false;
}

void agent_config_api_format(uint32_t mode, const char *include, const char *exclude,
                             char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s%s%s", cupstore_api_mode_name(mode),
             include && *include ? " include=" : "", include ? include : "",
             exclude && *exclude ? " exclude=" : "", exclude ? exclude : "");
}

int agent_config_nvtx_range(const char *spec, char *name, char *domain, bool *domain_given)
{
    const char *at = strrchr(spec, '@');
    size_t n = at ? (size_t)(at - spec) : strlen(spec);
    *domain_given = at != NULL;
    if (n == 0 || n > 255 || (at && strlen(at + 1) > 255))
        return -1;
    memcpy(name, spec, n);
    name[n] = '\0';
    strcpy(domain, at ? at + 1 : "");
    return 0;
}

int agent_config_parse_devices(const char *s, uint32_t *mask)
{
    uint32_t m = 0;
    if (!strcasecmp(s, "all")) {
        *mask = 0;
        return 0;
    }
    while (*s) {
        char *end;
        if (!isdigit((unsigned char)*s))
            return -1;
        unsigned long lo = strtoul(s, &end, 10), hi = lo;
        if (*end == '-') {
            if (!isdigit((unsigned char)end[1]))
                return -1;
            hi = strtoul(end + 1, &end, 10);
        }
        if (lo > hi || hi >= CUPSTORE_DEVICE_MAX)
            return -1;
        for (unsigned long d = lo; d <= hi; d++)
            m |= 1u << d;
        if (*end == ',' && end[1])
            end++;
        else if (*end)
            return -1;
        s = end;
    }
    if (!m)
        return -1;
    *mask = m;
    return 0;
}

bool agent_config_skip(const agent_config *c, agent_getenv_fn get, void *arg, char *why,
                       size_t len)
{
    char var[128];
    const char *eq = strchr(c->only_if, '=');
    if (!c->only_if[0] || !eq)
        return false;
    snprintf(var, sizeof var, "%.*s", (int)(eq - c->only_if), c->only_if);
    const char *v = get(var, arg);
    if (v && !strcmp(v, eq + 1))
        return false;
    snprintf(why, len, "only-if %s: %s is %s%s%s", c->only_if, var, v ? "\"" : "",
             v ? v : "unset", v ? "\"" : "");
    return true;
}

static char *trim(char *s)
{
    char *e;
    while (isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/* The file's whole text, NUL-terminated (caller frees), or NULL with a
 * warning.  Read in the application's process at CUDA's start, so it must
 * neither block nor spin: only a regular file of at most
 * AGENT_CONFIG_FILE_MAX bytes is read (a FIFO would block in open, a
 * device such as /dev/zero never ends, /dev/stdin would consume the
 * application's input).  O_NONBLOCK: opening a FIFO does not wait for a
 * writer; O_NOCTTY: a terminal never becomes the controlling one. */
static char *config_slurp(agent_config *c, const char *path)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        config_warn(c, "CUPTOP_CONFIG=%.120s: %s; ignored", path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        config_warn(c, "CUPTOP_CONFIG=%.120s: not a regular file; ignored", path);
        close(fd);
        return NULL;
    }
    if (st.st_size > AGENT_CONFIG_FILE_MAX) {
        config_warn(c, "CUPTOP_CONFIG=%.120s: larger than %d bytes; ignored", path,
                    AGENT_CONFIG_FILE_MAX);
        close(fd);
        return NULL;
    }
    char *text = malloc(AGENT_CONFIG_FILE_MAX + 1);
    size_t n = 0;
    if (!text) {
        config_warn(c, "CUPTOP_CONFIG=%.120s: out of memory; ignored", path);
        close(fd);
        return NULL;
    }
    /* bounded even if the file grows while it is read */
    while (n <= AGENT_CONFIG_FILE_MAX) {
        ssize_t r = read(fd, text + n, AGENT_CONFIG_FILE_MAX + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            config_warn(c, "CUPTOP_CONFIG=%.120s: %s; ignored", path, strerror(errno));
            free(text);
            close(fd);
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (n > AGENT_CONFIG_FILE_MAX) {
        config_warn(c, "CUPTOP_CONFIG=%.120s: larger than %d bytes; ignored", path,
                    AGENT_CONFIG_FILE_MAX);
        free(text);
        return NULL;
    }
    text[n] = '\0';
    return text;
}

/* Read the key=value file; lines that are not settings give warnings. */
static void config_read_file(agent_config *c, const char *path)
{
    char *text = config_slurp(c, path), *save = NULL;
    unsigned lineno = 0;

    if (!text)
        return;
    /* lines: split on '\n' by hand (strtok_r would skip empty lines and
     * the line numbers in warnings would be wrong) */
    for (char *line = text; line; line = save) {
        char *nl = strchr(line, '\n');
        save = nl ? nl + 1 : NULL;
        if (nl)
            *nl = '\0';
        if (!nl && !*line)
            break;
        char *s = trim(line), *eq;
        lineno++;
        if (!*s || *s == '#')
            continue;
        eq = strchr(s, '=');
        if (!eq) {
            config_warn(c, "%.100s:%u: not key=value; ignored", path, lineno);
            continue;
        }
        *eq = '\0';
        char *key = trim(s), *val = trim(eq + 1);
        if (!strcasecmp(key, "CONFIG") || !strcasecmp(key, "CUPTOP_CONFIG") ||
            !agent_config_set(c, key, val))
            config_warn(c, "%.100s:%u: unknown setting \"%.40s\"; ignored", path, lineno, key);
    }
    free(text);
}

void agent_config_load(agent_config *c, agent_getenv_fn get, void *arg)
{
    char name[64];
    const char *v;

    agent_config_defaults(c);
    v = get("CUPTOP_CONFIG", arg);
    if (v && *v && copy_path(c, c->config_file, sizeof c->config_file, "CUPTOP_CONFIG", v))
        config_read_file(c, c->config_file);
    for (size_t i = 0; i < sizeof config_keys / sizeof config_keys[0]; i++) {
        snprintf(name, sizeof name, "CUPTOP_%s", config_keys[i]);
        v = get(name, arg);
        if (v && (*v || !strcmp(config_keys[i], "DORMANT")))
            agent_config_set(c, name, v);
    }
}

void agent_config_format(const agent_config *c, char *buf, size_t len)
{
    char kinds[128], devs[64] = "all", end[32] = "stop";
    cupstore_kinds_format(c->kinds, kinds, sizeof kinds);
    if (c->devices) {
        size_t off = 0;
        for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX; d++)
            if (c->devices & (1u << d))
                off += (size_t)snprintf(devs + off, sizeof devs - off, "%s%u", off ? "," : "", d);
    }
    char cap[300] = "none";
    if (c->capture == AGENT_CAPTURE_PROFILER)
        snprintf(cap, sizeof cap, "cudaProfilerApi");
    else if (c->capture == AGENT_CAPTURE_NVTX)
        snprintf(cap, sizeof cap, "nvtx:%s", c->capture_name);
    else if (c->capture == AGENT_CAPTURE_EVERY) {
        char ev[40];
        cupstore_every_format(c->capture_period_ms, c->capture_window_ms, ev, sizeof ev);
        snprintf(cap, sizeof cap, "every:%s", ev);
    }
    if (c->capture_repeat && c->capture_max)
        snprintf(end, sizeof end, "repeat:%u", c->capture_max);
    else if (c->capture_repeat)
        snprintf(end, sizeof end, "repeat");
    snprintf(buf, len,
             "store=%s\nkinds=%s\nbuffer_size=%zu\npool=%u%s\nqueue=%u\n"
             "device_buffer_size=%zu\ndevice_buffer_pool_limit=%zu\n"
             "flush_period_ms=%u\ndormant=%d\nlog=%d\nsink=%s\ncupti_library=%s\n"
             "stop_timeout_ms=%u\nmap_max=%llu\nconfig=%s\ndevices=%s\nonly_if=%s\n"
             "capture_range=%s\ncapture_range_end=%s\napi=%s\napi_include=%s\n"
             "api_exclude=%s\non_detach=%s\nledger=%d\n",
             c->store, kinds, c->buffer_size, c->pool, c->pool_explicit ? "" : " (auto)",
             c->queue, c->device_buffer_size, c->device_buffer_pool_limit,
             c->flush_period_ms, c->dormant, c->log,
             c->sink == AGENT_SINK_NULL ? "null" : "store", c->cupti_library,
             c->stop_timeout_ms, (unsigned long long)c->map_max, c->config_file, devs,
             c->only_if, cap, end, cupstore_api_mode_name(c->api_mode), c->api_include,
             c->api_exclude, c->detach_keep ? "keep" : "finalize", c->ledger);
}

int agent_config_each(const agent_config *c, agent_config_kv_fn fn, void *arg)
{
    char kinds[128], n[11][24];
    cupstore_kinds_format(c->kinds, kinds, sizeof kinds);
    snprintf(n[0], sizeof n[0], "%zu", c->buffer_size);
    snprintf(n[1], sizeof n[1], "%u", c->pool);
    snprintf(n[2], sizeof n[2], "%d", c->pool_explicit ? 1 : 0);
    snprintf(n[3], sizeof n[3], "%u", c->queue);
    snprintf(n[4], sizeof n[4], "%zu", c->device_buffer_size);
    snprintf(n[5], sizeof n[5], "%zu", c->device_buffer_pool_limit);
    snprintf(n[6], sizeof n[6], "%u", c->flush_period_ms);
    snprintf(n[7], sizeof n[7], "%d", c->dormant ? 1 : 0);
    snprintf(n[8], sizeof n[8], "%d", c->log);
    snprintf(n[9], sizeof n[9], "%u", c->stop_timeout_ms);
    snprintf(n[10], sizeof n[10], "%llu", (unsigned long long)c->map_max);
    const struct {
        const char *key, *value;
    } kv[] = {
        {"store", c->store},
        {"kinds", kinds},
        {"buffer_size", n[0]},
        {"pool", n[1]},
        {"pool_explicit", n[2]},
        {"queue", n[3]},
        {"device_buffer_size", n[4]},
        {"device_buffer_pool_limit", n[5]},
        {"flush_period_ms", n[6]},
        {"dormant", n[7]},
        {"log", n[8]},
        {"sink", c->sink == AGENT_SINK_NULL ? "null" : "store"},
        {"cupti_library", c->cupti_library},
        {"stop_timeout_ms", n[9]},
        {"map_max", n[10]},
        {"config_file", c->config_file},
        {"api", cupstore_api_mode_name(c->api_mode)},
        {"api_include", c->api_include},
        {"api_exclude", c->api_exclude},
        {"on_detach", c->detach_keep ? "keep" : "finalize"},
        {"ledger", c->ledger ? "1" : "0"},
    };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) {
        int rc = fn(kv[i].key, kv[i].value, arg);
        if (rc)
            return rc;
    }
    return 0;
}
