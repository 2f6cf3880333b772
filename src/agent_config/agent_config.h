/*
 * agent_config.h - the agent's configuration: CUPTOP_* environment
 * variables over an optional key=value file (CUPTOP_CONFIG) over defaults.
 *
 * A bad value never stops the agent: it keeps the default and leaves a
 * warning in cfg->warn[], which the agent prints (stderr, only when asked
 * or when stderr is a terminal) and records as a note in the store.
 */
#ifndef AGENT_CONFIG_H
#define AGENT_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cupstore.h"

#define AGENT_CONFIG_WARN_MAX 16
/* `cuptop run` passes on a stop signal sent to it with rt_sigqueueinfo:
 * si_code SI_QUEUE, the original sender's si_pid and this si_value, so
 * the agent can tell the forwarded copy of a signal from the one the same
 * sender also sent the application directly (a process group, every
 * process of a cgroup) and deliver the pair once (agent_stop.c). */
#define AGENT_FORWARD_MAGIC 0x43505446
/* CUPTOP_CONFIG: only a regular file of at most this many bytes is read */
#define AGENT_CONFIG_FILE_MAX 65536

typedef enum agent_sink {
    AGENT_SINK_STORE = 0,   /* parse, count and store records             */
    AGENT_SINK_NULL,        /* parse and count only (cost reference)      */
} agent_sink;

typedef enum agent_capture {
    AGENT_CAPTURE_NONE = 0,        /* collect whenever kinds are on        */
    AGENT_CAPTURE_PROFILER,        /* only between cudaProfilerStart/Stop  */
    AGENT_CAPTURE_NVTX,            /* only while an NVTX range of capture_name
                                      is open (nvtx:NAME)                  */
    AGENT_CAPTURE_EVERY,           /* periodic windows every:PERIOD/WINDOW,
                                      aligned to multiples of PERIOD on the
                                      wall clock                           */
} agent_capture;

/* every:PERIOD/WINDOW bounds: a window shorter than 100 ms is mostly the
 * open and close themselves; a period longer than a day has no use. */
#define AGENT_EVERY_WINDOW_MIN_MS 100u
#define AGENT_EVERY_PERIOD_MAX_MS (24u * 3600u * 1000u)

typedef struct agent_config {
    char store[PATH_MAX];          /* CUPTOP_STORE ("" = store default)    */
    uint32_t kinds;                /* CUPTOP_KINDS mask of cupstore_kind   */
    size_t buffer_size;            /* CUPTOP_BUFFER_SIZE bytes             */
    uint32_t pool;                 /* CUPTOP_POOL max outstanding buffers;
                                      0 = automatic (grows with threads)   */
    uint32_t queue;                /* CUPTOP_QUEUE capacity; 0 = pool max  */
    size_t device_buffer_size;     /* CUPTOP_DEVICE_BUFFER_SIZE; 0 = CUPTI's */
    size_t device_buffer_pool_limit; /* CUPTOP_DEVICE_BUFFER_POOL_LIMIT; 0 = CUPTI's */
    uint32_t flush_period_ms;      /* CUPTOP_FLUSH_PERIOD_MS; 0 = off      */
    bool dormant;                  /* CUPTOP_DORMANT                       */
    bool ledger;                   /* CUPTOP_LEDGER: the launch ledger      */
    bool detach_keep;              /* CUPTOP_ON_DETACH=keep: no cuptiFinalize
                                      after a detach (default: finalize)   */
    int log;                       /* CUPTOP_LOG: 0 off, 1 warnings, 2 info */
    agent_sink sink;               /* CUPTOP_SINK                          */
    char cupti_library[PATH_MAX];  /* CUPTOP_CUPTI_LIBRARY ("" = search)   */
    uint32_t stop_timeout_ms;      /* CUPTOP_STOP_TIMEOUT_MS               */
    uint64_t map_max;              /* CUPTOP_MAP_MAX bytes; 0 = store's    */
    char config_file[PATH_MAX];    /* CUPTOP_CONFIG                        */
    bool pool_explicit;            /* CUPTOP_POOL was given                */
    uint32_t devices;              /* CUPTOP_DEVICES mask; 0 = every device */
    char only_if[128];             /* CUPTOP_ONLY_IF "VAR=VALUE" ("" = all) */
    agent_capture capture;         /* CUPTOP_CAPTURE_RANGE                 */
    bool capture_repeat;           /* CUPTOP_CAPTURE_RANGE_END repeat[:N]  */
    uint32_t capture_max;          /* ranges to collect (repeat:N); 0 = no
                                      limit with repeat, 1 with stop       */
    uint32_t api_mode;             /* CUPTOP_API: CUPSTORE_API_ALL/GPU/NONE */
    char api_include[CUPSTORE_API_GLOBS_MAX]; /* CUPTOP_API_INCLUDE globs  */
    char api_exclude[CUPSTORE_API_GLOBS_MAX]; /* CUPTOP_API_EXCLUDE globs  */
    char capture_name[256];        /* nvtx:NAME: the range name            */
    uint32_t capture_period_ms;    /* every:PERIOD/WINDOW                  */
    uint32_t capture_window_ms;
    unsigned nwarn;
    char warn[AGENT_CONFIG_WARN_MAX][200];
} agent_config;

/* Defaults, chosen for 1M launches over 8 streams with kernel, runtime and
 * driver records on an H200 (~500k records/s): 4 MiB buffers, a pool that
 * grows with the number of CUDA-calling threads (32 + 2 per thread), a
 * queue as large as the pool can ever be, a 200 ms flush period. */
#define AGENT_DEFAULT_BUFFER_SIZE ((size_t)4 << 20)
#define AGENT_DEFAULT_POOL_MIN 32u
#define AGENT_POOL_MAX CUPSTORE_CONTROL_POOL_MAX
#define AGENT_DEFAULT_FLUSH_MS 200u
#define AGENT_DEFAULT_STOP_TIMEOUT_MS 3000u

/** Look up one variable (getenv, or a table in tests). */
typedef const char *(*agent_getenv_fn)(const char *name, void *arg);

void agent_config_defaults(agent_config *c);

/** Load the configuration: defaults, then the CUPTOP_CONFIG file (keys
 *  "CUPTOP_POOL=64" or "pool = 64"; '#' comments), then the environment,
 *  which wins.  Never fails: bad values give warnings. */
void agent_config_load(agent_config *c, agent_getenv_fn get, void *arg);

/** Apply one setting by variable name (with or without "CUPTOP_", any
 *  case).  Bad values add a warning.  @return false if the key is unknown. */
bool agent_config_set(agent_config *c, const char *key, const char *value);

/** Parse a byte size ("4194304", "4M", "512k", "1G").  @return 0 or -1. */
int agent_config_parse_size(const char *s, uint64_t *out);

/** Parse a device list ("0,2", "1-3", "all").  @return 0 or -1. */
int agent_config_parse_devices(const char *s, uint32_t *mask);

/* The range of a capture nvtx:SPEC, SPEC = NAME, NAME@DOMAIN or NAME@ (the
 * default domain only); the last '@' separates.  name and domain have 256
 * bytes each; *domain_given says whether an '@' was there.  0, or -1 for
 * an empty NAME or a part too long. */
int agent_config_nvtx_range(const char *spec, char *name, char *domain, bool *domain_given);

/** Parse a periodic-window schedule "PERIOD/WINDOW" (the text after
 *  "every:"), each a whole number with a unit ms, s, m or h ("60s/5s",
 *  "1s/300ms").  WINDOW_MIN <= WINDOW < PERIOD <= PERIOD_MAX.
 *  @return 0, or -1 with the reason in why. */
int agent_config_parse_every(const char *spec, uint32_t *period_ms, uint32_t *window_ms,
                             char *why, size_t len);


/** Parse an API record policy mode ("all", "gpu", "none").
 *  @return CUPSTORE_API_ALL/GPU/NONE, or 0 when it is none of them. */
uint32_t agent_config_parse_api_mode(const char *s);

/** Check a comma list of function-name globs (letters, digits, '_', '*',
 *  '?', '[...]'; no empty entry; shorter than CUPSTORE_API_GLOBS_MAX).
 *  "" is the empty list.  @return 0, or -1 with the reason in why. */
int agent_config_check_globs(const char *s, char *why, size_t len);

/** Does name match one glob of the comma list (fnmatch)? */
bool agent_config_globs_match(const char *list, const char *name);

/** The policy as text: "gpu", "gpu include=A,B exclude=C*" (the epoch's
 *  api_policy and the config.api_policy meta key). */
void agent_config_api_format(uint32_t mode, const char *include, const char *exclude,
                             char *buf, size_t len);

/** Should the agent in a process with environment `get` step aside
 *  (CUPTOP_ONLY_IF set and not matched)?  Writes the reason when so.
 *  @return true to step aside. */
bool agent_config_skip(const agent_config *c, agent_getenv_fn get, void *arg, char *why,
                       size_t len);

/** Format as "key=value" lines (the session's "config" metadata, for
 *  people; programs read the config.KEY keys of agent_config_each). */
void agent_config_format(const agent_config *c, char *buf, size_t len);

/** Prefix of the session's structured configuration keys in the store's
 *  metadata: AGENT_CONFIG_META_PREFIX "buffer_size" and so on. */
#define AGENT_CONFIG_META_PREFIX CUPSTORE_META_CONFIG

/** Called per setting by agent_config_each; non-zero stops with it. */
typedef int (*agent_config_kv_fn)(const char *key, const char *value, void *arg);

/** Every setting as (key, value), values in their plain form: numbers in
 *  decimal bytes or counts, booleans 0/1, kinds as cupstore_kinds_format
 *  writes them.  Keys: store, kinds, buffer_size, pool (0: automatic),
 *  pool_explicit, queue, device_buffer_size, device_buffer_pool_limit,
 *  flush_period_ms, dormant, log, sink, cupti_library, stop_timeout_ms,
 *  map_max, config_file, api (all, gpu, none), api_include, api_exclude.
 *  The agent stores each as
 *  AGENT_CONFIG_META_PREFIX key (doc/store-format.md).
 *  @return 0 or fn's first non-zero return. */
int agent_config_each(const agent_config *c, agent_config_kv_fn fn, void *arg);

#endif /* AGENT_CONFIG_H */
