/*
 * cmd_control.c - `cuptop control SESSION [--kinds LIST] [--pool N]`: the
 * monitor's runtime control for scripts.  Writes one control request (the
 * kinds to collect and, optionally, the buffer-pool limit) and waits for
 * the agent's acknowledgement, which it reads back from the same store.
 * The agent applies only the latest request; one that a later request
 * overtook is reported as superseded, never as applied.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_config.h"
#include "cli_opts.h"
#include "cupstore.h"
#include "cuptop.h"
#include "export.h"
#include "model.h"

#define POOL_MAX CUPSTORE_CONTROL_POOL_MAX /* the agent clamps to it as well */

/* control's options: parsing and --help (cli_opts.h). */
const cli_cmd cli_cmd_control = {
    .name = "control",
    .shortopts = "h",
    .column = 16,
    .opts = (const cli_opt[]){
        {"kinds", "LIST", 'k',
         "the activity kinds to collect from now on: a comma list of\n"
         "kernel,memcpy,memset,runtime,driver,sync,overhead,marker,\n"
         "other, or all / none (default: the kinds collected now)\n", NULL},
        {"attach", NULL, 'a',
         "attach the agent to CUPTI: turn the kinds the session was\n"
         "started with on (the default kinds if it started with none)\n", NULL},
        {"detach", NULL, 'd',
         "turn every kind off: the agent detaches from CUPTI (no CUPTI\n"
         "call until the next request; the subscriber slot is free)\n", NULL},
        {"pool", "N", 'p',
         "the buffer-pool limit from now on, 1-4096 buffers of the\n"
         "session's buffer size (replaces the automatic limit)\n", NULL},
        {"api", "all|gpu|none", 'A',
         "which runtime and driver API calls are recorded from now on:\n"
         "all, gpu (launch, copy, set, sync, alloc/free, create/destroy\n"
         "streams, events, graphs) or none; the rest are muted per call\n",
         "--api MODE"},
        {"api-include", "NAMES", 'I',
         "function-name globs (comma list)\n"
         "recorded in addition, or not recorded; each replaces the\n"
         "session's list ('' empties it)\n",
         "--api-include NAMES, --api-exclude NAMES"},
        {"capture-range", "every:P/W|none", 'C',
         "periodic windows from now on: collect for W at every\n"
         "multiple of P on the wall clock (every:60s/5s; units ms s m\n"
         "h), or none: collect all the time again (without --kinds:\n"
         "the kinds the session started with)\n",
         "--capture-range every:PERIOD/WINDOW|none"},
        {"ledger", "on|off", 'L',
         "the launch ledger from now: on registers every launch, copy\n"
         "and set made from now (not those made before), off stops\n"
         "registering; either way it covers part of the session and\n"
         "its counts are lower bounds\n",
         "--ledger on|off"},
        {"wait", "SECONDS", 'w',
         "wait up to S seconds for the agent to apply it (default 5;\n"
         "0: only write the request)\n",
         "--wait S"},
        {"store", "DIR", 's', NULL, NULL},
        {"api-exclude", "NAMES", 'E', NULL, NULL},
        {"help", NULL, 'h', NULL, NULL},
        {NULL, NULL, 0, NULL, NULL},
    },
};

static void usage(FILE *f)
{
    fputs("usage: cuptop control [--store DIR] SESSION [--kinds LIST | --attach | --detach]\n"
          "                      [--pool N] [--api all|gpu|none] [--api-include NAMES]\n"
          "                      [--api-exclude NAMES] [--capture-range every:P/W|none]\n"
          "                      [--ledger on|off] [--wait SECONDS]\n\n"
          "Ask the agent of a running session to change what it collects, now:\n",
          f);
    cli_opts_help(&cli_cmd_control, f);
    fputs("Each request starts a new epoch; `cuptop report` compares the epochs.\n"
          "Exit status: 0 applied (or written, with --wait 0), 1 not applied in time,\n"
          "superseded by a later request that asked otherwise, or applied with an\n"
          "error (one superseded by a request that asked the same is applied), 2 usage\n"
          "error, unknown or finished session, unreadable store.\n",
          f);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The kinds the agent collects once everything requested so far is applied:
 * a pending request's, else the latest health row's. */
static int kinds_now(cupstore_env *env, uint32_t *kinds)
{
    cupstore_txn *txn;
    cupstore_health h;
    cupstore_control c;
    int rc = cupstore_txn_begin(env, false, &txn);
    if (rc)
        return rc;
    int hr = cupstore_health_last(txn, &h);
    int cr = cupstore_control_latest(txn, &c);
    cupstore_txn_abort(txn);
    if (hr && hr != CUPSTORE_ENOTFOUND)
        return hr;
    if (cr && cr != CUPSTORE_ENOTFOUND)
        return cr;
    if (cr == 0 && (hr || h.ctl_gen_applied < c.gen))
        *kinds = c.kinds;
    else if (hr == 0)
        *kinds = h.kinds_enabled;
    else
        return CUPSTORE_ENOTFOUND;
    return 0;
}

struct request_arg {
    const cupstore_control *c;
    uint64_t *gen;
};

static int put_request(cupstore_txn *txn, void *arg)
{
    struct request_arg *r = arg;
    return cupstore_control_put(txn, r->c, r->gen);
}

/* req: kinds, pool and the API policy fields (api_mode 0: unchanged). */
static int request(cupstore_env *env, const cupstore_control *req, uint64_t *gen)
{
    struct request_arg r = {req, gen};
    return cupstore_write(env, put_request, &r, 0);
}

struct find {
    uint64_t gen, later_gen;
    cupstore_control c, later;
    bool found, later_found;
};

static int on_control(const cupstore_control *c, void *arg)
{
    struct find *f = arg;
    if (c->gen == f->gen) {
        f->c = *c;
        f->found = true;
    } else if (f->later_gen && c->gen == f->later_gen) {
        f->later = *c;
        f->later_found = true;
    }
    return 0;
}

enum { ACK_PENDING, ACK_APPLIED, ACK_SUPERSEDED, ACK_SUPERSEDED_SAME };

/* Does the applied request b leave in force all that request a asked for:
 * the same kinds, and each setting a changed (pool, API mode, globs)
 * changed alike, applied without an error? */
static bool same_request(const cupstore_control *a, const cupstore_control *b)
{
    if (!b->applied_ns || b->result || a->kinds != b->kinds)
        return false;
    if (a->pool && a->pool != b->pool)
        return false;
    if (a->api_mode && a->api_mode != b->api_mode)
        return false;
    if ((a->api_set & CUPSTORE_CTL_API_INCLUDE) &&
        (!(b->api_set & CUPSTORE_CTL_API_INCLUDE) || strcmp(a->api_include, b->api_include)))
        return false;
    if ((a->api_set & CUPSTORE_CTL_API_EXCLUDE) &&
        (!(b->api_set & CUPSTORE_CTL_API_EXCLUDE) || strcmp(a->api_exclude, b->api_exclude)))
        return false;
    if (a->every_set && (a->every_set != b->every_set || a->every_period_ms != b->every_period_ms ||
                         a->every_window_ms != b->every_window_ms))
        return false;
    if (a->ledger_set && a->ledger_set != b->ledger_set)
        return false;
    return true;
}

/* Our row, and whether the agent has gone past it (with a request that
 * asked the same: ACK_SUPERSEDED_SAME, *out the applied one's row). */
static int poll_ack(cupstore_env *env, uint64_t gen, cupstore_control *out, uint64_t *applied)
{
    cupstore_txn *txn;
    cupstore_health h;
    struct find f = {.gen = gen};
    int rc = cupstore_txn_begin(env, false, &txn);
    if (rc)
        return -rc;
    int hr = cupstore_health_last(txn, &h);
    if (hr == 0 && h.ctl_gen_applied > gen)
        f.later_gen = h.ctl_gen_applied;
    rc = cupstore_control_scan(txn, on_control, &f);
    cupstore_txn_abort(txn);
    if (rc)
        return -rc;
    *out = f.c;
    *applied = hr == 0 ? h.ctl_gen_applied : 0;
    if (f.found && f.c.applied_ns)
        return ACK_APPLIED;
    if (hr == 0 && h.ctl_gen_applied > gen) {
        if (f.found && f.later_found && same_request(&f.c, &f.later)) {
            *out = f.later;
            return ACK_SUPERSEDED_SAME;
        }
        return ACK_SUPERSEDED;
    }
    return ACK_PENDING;
}

/* Length of the unknown name *bad points at (up to the next comma). */
static int bad_len(const char *bad, const char *list)
{
    size_t n = strcspn(bad ? bad : list, ",");
    return n > 64 ? 64 : (int)n;
}

/* --capture-range every:P/W or none, into the request (a usage error
 * said here: -1). */
static int parse_every(const char *cmd, const char *s, cupstore_control *req)
{
    char why[160];
    if (!strcmp(s, "none")) {
        req->every_set = CUPSTORE_CTL_EVERY_OFF;
        return 0;
    }
    if (strncmp(s, "every:", 6) != 0) {
        cli_usage_error(cmd, "--capture-range takes every:PERIOD/WINDOW or none at runtime, not "
                             "'%.60s' (cudaProfilerApi and nvtx: ranges are set at the start, "
                             "cuptop run --capture-range)", s);
        return -1;
    }
    if (agent_config_parse_every(s + 6, &req->every_period_ms, &req->every_window_ms, why,
                                 sizeof why) != 0) {
        cli_usage_error(cmd, "--capture-range: %s", why);
        return -1;
    }
    req->every_set = CUPSTORE_CTL_EVERY_ON;
    return 0;
}

static int parse_pool(const char *s, uint32_t *pool)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v < 1 || v > POOL_MAX)
        return -1;
    *pool = (uint32_t)v;
    return 0;
}

static int parse_wait(const char *s, double *secs)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0.0) || v > 3600.0)
        return -1;
    *secs = v;
    return 0;
}

/* --attach: the kinds the session was started with (its "config" meta,
 * line kinds=...), or the default kinds when it started with none. */
static uint32_t configured_kinds(cupstore_env *env)
{
    cupstore_txn *txn;
    char *cfg = NULL;
    uint32_t mask = 0;
    if (cupstore_txn_begin(env, false, &txn) == 0) {
        if (cupstore_meta_get(txn, "config", &cfg) == 0 && cfg) {
            const char *k = strstr(cfg, "\nkinds=");
            k = k ? k + 7 : (strncmp(cfg, "kinds=", 6) == 0 ? cfg + 6 : NULL);
            if (k) {
                char buf[160];
                size_t n = strcspn(k, "\n");
                const char *bad = NULL;
                snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf ? n : sizeof buf - 1), k);
                if (cupstore_kinds_parse(buf, &mask, &bad) != 0)
                    mask = 0;
            }
        }
        free(cfg);
        cupstore_txn_abort(txn);
    }
    return mask ? mask : CUPSTORE_KINDS_DEFAULT;
}

/* kinds_now, waiting up to wait_s for the session's first health row: a
 * request in a running session's first second finds none yet. */
static int kinds_now_wait(cupstore_env *env, uint32_t *kinds, double wait_s)
{
    uint64_t deadline = mono_ns() + (uint64_t)(wait_s * 1e9);
    for (;;) {
        int rc = kinds_now(env, kinds);
        if (rc != CUPSTORE_ENOTFOUND || mono_ns() >= deadline)
            return rc;
        struct timespec nap = {0, 50000000};
        nanosleep(&nap, NULL);
    }
}

/* kinds: the mask from --kinds, or NULL for the kinds collected now. */
static int control_session(const char *cmd, cupstore_env *env, const uint32_t *kinds_arg,
                           cupstore_control *req, double wait_s)
{
    const char *id = cupstore_env_id(env);
    model_summary s;
    char *cause = NULL;
    int rc = model_summarize(env, 0, UINT64_MAX, &s, &cause);
    if (rc) {
        cli_model_error(cmd, id, rc, cause);
        return CUPTOP_EXIT_USAGE;
    }
    model_state state = s.state;
    char why[256] = "";
    model_liveness_text(&s, why, sizeof why);
    model_summary_free(&s);
    if (!model_state_live(state)) {
        cli_error(cmd, "session %s is %s: no agent would apply the request", id,
                  model_state_name(state));
        return CUPTOP_EXIT_USAGE;
    }
    if (state != MODEL_STATE_RUNNING)
        /* still there (or not visible from here): the request waits in the
         * store and is applied once the agent writes heartbeats again */
        printf("session %s: %s; the request is queued: the agent applies it when the "
               "process runs again\n", id, why);
    uint32_t kinds;
    if (kinds_arg) {
        kinds = *kinds_arg;
    } else if ((rc = kinds_now_wait(env, &kinds, wait_s)) != 0) {
        if (rc == CUPSTORE_ENOTFOUND)
            cli_error(cmd, "session %s: no health row yet%s: the kinds collected now are not "
                           "known (give them with --kinds, or wait with --wait)", id,
                      wait_s > 0 ? " within --wait" : "");
        else
            cli_error(cmd, "session %s: %s", id, cli_open_error(rc));
        return CUPTOP_EXIT_USAGE;
    }
    uint64_t gen = 0;
    uint32_t pool = req->pool;
    req->kinds = kinds;
    if ((rc = request(env, req, &gen)) != 0) {
        cli_error(cmd, "session %s: writing the request failed: %s", id, cupstore_strerror(rc));
        return CUPTOP_EXIT_NO;
    }
    char want[160];
    cupstore_kinds_format(kinds, want, sizeof want);
    printf("session %s: control generation %" PRIu64 " requested: kinds %s", id, gen, want);
    if (pool)
        printf(", buffer pool %u", pool);
    if (req->api_mode || req->api_set)
        printf(", API records %s%s%s%s%s", cupstore_api_mode_name(req->api_mode),
               (req->api_set & CUPSTORE_CTL_API_INCLUDE) ? " include=" : "",
               (req->api_set & CUPSTORE_CTL_API_INCLUDE) ? req->api_include : "",
               (req->api_set & CUPSTORE_CTL_API_EXCLUDE) ? " exclude=" : "",
               (req->api_set & CUPSTORE_CTL_API_EXCLUDE) ? req->api_exclude : "");
    if (req->every_set == CUPSTORE_CTL_EVERY_ON) {
        char ev[40];
        cupstore_every_format(req->every_period_ms, req->every_window_ms, ev, sizeof ev);
        printf(", capture range every:%s", ev);
    } else if (req->every_set == CUPSTORE_CTL_EVERY_OFF) {
        printf(", capture range none");
    }
    if (req->ledger_set)
        printf(", launch ledger %s", req->ledger_set == CUPSTORE_CTL_LEDGER_ON ? "on" : "off");
    printf("\n");
    fflush(stdout);
    if (wait_s == 0.0)
        return CUPTOP_EXIT_OK;

    int st = cli_control_wait(cmd, env, gen, pool, wait_s);
    if (st == CUPTOP_EXIT_OK && kinds == 0)
        printf("session %s: the agent stays loaded in the process, dormant (no CUPTI call "
               "until a request turns kinds on; a library with live threads is not safely "
               "unloaded)\n", id);
    return st;
}

int cli_control_wait(const char *cmd, cupstore_env *env, uint64_t gen, uint32_t pool,
                     double wait_s)
{
    return cli_control_wait_pid(cmd, env, gen, pool, wait_s, 0, false);
}

int cli_control_wait_pid(const char *cmd, cupstore_env *env, uint64_t gen, uint32_t pool,
                         double wait_s, int pid, bool superseded_ok)
{
    const char *id = cupstore_env_id(env);
    uint64_t t0 = mono_ns(), deadline = t0 + (uint64_t)(wait_s * 1e9);
    for (;;) {
        cupstore_control c = {0};
        uint64_t applied_gen = 0;
        int st = poll_ack(env, gen, &c, &applied_gen);
        if (st < 0) {
            cli_error(cmd, "session %s: %s", id, cli_open_error(-st));
            return CUPTOP_EXIT_USAGE;
        }
        if (st == ACK_APPLIED) {
            printf("session %s: generation %" PRIu64 " applied after %.0f ms", id, gen,
                   (double)(c.applied_ns > c.requested_ns ? c.applied_ns - c.requested_ns : 0) /
                       1e6);
            if (c.pool_applied)
                printf(" (buffer pool limit now %u)", c.pool_applied);
            printf("%s\n", c.result ? " with an error: see cuptop report" : "");
            if (pool && !c.pool_applied) {
                cli_error(cmd, "this agent does not support pool control: only the kinds "
                               "were applied");
                return CUPTOP_EXIT_NO;
            }
            return c.result ? CUPTOP_EXIT_NO : CUPTOP_EXIT_OK;
        }
        if (st == ACK_SUPERSEDED_SAME) {
            /* e.g. two cuptop attach at once: the loader's agent asked the
             * same after us; what we asked for is in force */
            printf("session %s: generation %" PRIu64 " was superseded by generation %" PRIu64
                   ", which asked the same: applied", id, gen, applied_gen);
            if (c.pool_applied)
                printf(" (buffer pool limit now %u)", c.pool_applied);
            printf("\n");
            if (pool && !c.pool_applied) {
                cli_error(cmd, "this agent does not support pool control: only the kinds "
                               "were applied");
                return CUPTOP_EXIT_NO;
            }
            return CUPTOP_EXIT_OK;
        }
        if (st == ACK_SUPERSEDED && superseded_ok) {
            printf("session %s: generation %" PRIu64 " was superseded by generation %" PRIu64
                   " (a later request: its kinds apply)\n", id, gen, applied_gen);
            return CUPTOP_EXIT_OK;
        }
        if (st == ACK_SUPERSEDED) {
            cli_error(cmd, "generation %" PRIu64 " was superseded by a later request "
                           "(generation %" PRIu64 " is applied)", gen, applied_gen);
            return CUPTOP_EXIT_NO;
        }
        if (pid > 0 && cli_pid_gone(pid)) {
            cli_error(cmd, "process %d ended before generation %" PRIu64 " was applied: "
                           "nothing was collected after the request", pid, gen);
            return CUPTOP_EXIT_NO;
        }
        if (mono_ns() >= deadline) {
            cli_error(cmd, "generation %" PRIu64 " not applied within %g s (the agent applies "
                           "requests once a second; it stays requested)", gen, wait_s);
            return CUPTOP_EXIT_NO;
        }
        struct timespec nap = {0, 20000000};
        nanosleep(&nap, NULL);
    }
}

int cmd_control(int argc, char **argv)
{
    struct option longopts[CLI_OPTS_MAX];
    cupstore_control req = {0};
    char why[160];
    const char *cmd = argv[0], *store = NULL, *kinds = NULL;
    uint32_t pool = 0;
    double wait_s = 5.0;
    int c, attach = 0, detach = 0;
    cli_opts_begin(&cli_cmd_control, longopts);
    while ((c = getopt_long(argc, argv, cli_cmd_control.shortopts, longopts, NULL)) != -1) {
        switch (c) {
        case 's': store = optarg; break;
        case 'k': kinds = optarg; break;
        case 'a': attach = 1; break;
        case 'd': detach = 1; break;
        case 'p':
            if (parse_pool(optarg, &pool) != 0)
                return cli_usage_error(cmd, "--pool takes a buffer count from 1 to %u, not '%s'",
                                       POOL_MAX, optarg);
            break;
        case 'w':
            if (parse_wait(optarg, &wait_s) != 0)
                return cli_usage_error(cmd, "--wait takes seconds from 0 to 3600, not '%s'",
                                       optarg);
            break;
        case 'A':
            if (!(req.api_mode = agent_config_parse_api_mode(optarg)))
                return cli_usage_error(cmd, "--api takes all, gpu or none, not '%.40s'", optarg);
            break;
        case 'I':
        case 'E':
            if (agent_config_check_globs(optarg, why, sizeof why) != 0)
                return cli_usage_error(cmd, "--api-%s: %s", c == 'I' ? "include" : "exclude",
                                       why);
            snprintf(c == 'I' ? req.api_include : req.api_exclude, CUPSTORE_API_GLOBS_MAX, "%s",
                     optarg);
            req.api_set |= c == 'I' ? CUPSTORE_CTL_API_INCLUDE : CUPSTORE_CTL_API_EXCLUDE;
            break;
        case 'C':
            if (parse_every(cmd, optarg, &req) != 0)
                return CUPTOP_EXIT_USAGE;
            break;
        case 'L':
            if (!strcmp(optarg, "on"))
                req.ledger_set = CUPSTORE_CTL_LEDGER_ON;
            else if (!strcmp(optarg, "off"))
                req.ledger_set = CUPSTORE_CTL_LEDGER_OFF;
            else
                return cli_usage_error(cmd, "--ledger takes on or off, not '%.40s'", optarg);
            break;
        case 'h': usage(stdout); return CUPTOP_EXIT_OK;
        default:
            return cli_bad_option(cmd, argv);
        }
    }
    if (optind + 1 != argc)
        return cli_one_session(cmd, argc, argv);
    if (attach + detach + (kinds != NULL) > 1)
        return cli_usage_error(cmd, "--kinds, --attach and --detach exclude each other");
    if (!kinds && !pool && !attach && !detach && !req.api_mode && !req.api_set && !req.every_set &&
        !req.ledger_set)
        return cli_usage_error(cmd, "nothing to change: give --kinds LIST, --attach, --detach, "
                                    "--pool N, --api MODE, --capture-range every:P/W|none "
                                    "and/or --ledger on|off");
    if (detach && req.every_set)
        return cli_usage_error(cmd, "--detach turns every kind off: no window would collect; "
                                    "give --capture-range without it");
    if (detach)
        kinds = "none";
    uint32_t mask = 0;
    if (kinds) {
        const char *bad = NULL;
        if (cupstore_kinds_parse(kinds, &mask, &bad) != 0)
            return cli_usage_error(cmd, "unknown activity kind '%.*s' (kernel, memcpy, "
                                        "memset, runtime, driver, sync, overhead, marker, all "
                                        "or none)",
                                   bad_len(bad, kinds), bad ? bad : kinds);
    }
    cupstore_env *env;
    int rc = cli_store_session_open(cmd, store, argv[optind], 0, &env);
    if (rc)
        return rc;
    if (attach || (req.every_set && !kinds))   /* between windows no kind is on now */
        mask = configured_kinds(env);
    req.pool = pool;
    int status = control_session(cmd, env, kinds || attach || req.every_set ? &mask : NULL, &req,
                                 wait_s);
    cupstore_env_close(env);
    return status;
}
