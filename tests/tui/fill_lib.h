/*
 * fill_lib.h - a test writer for the TUI: fills a store with realistic
 * sessions through the store API (used by tui-fill-store and tui-bench).
 */
#ifndef CUPTOP_FILL_LIB_H
#define CUPTOP_FILL_LIB_H

#include <stdbool.h>
#include <stdint.h>

#include "cupstore.h"

typedef enum fill_kind {
    FILL_RUNNING = 0,     /* fresh heartbeat, alive pid, drops, no final   */
    FILL_COMPLETE,        /* ended, nothing lost                           */
    FILL_INCOMPLETE,      /* ended, losses of several classes              */
    FILL_CRASHED,         /* stale heartbeat, dead pid, no final           */
    FILL_NO_CUPTI,        /* CUPTI failed to start: the agent stepped aside
                             (health rows flagged DISABLED, still carrying
                             the configured kinds, no records, a note, a
                             DETACH final status)                          */
} fill_kind;

typedef struct fill_session {
    fill_kind kind;
    unsigned seconds;     /* per-second history                            */
    int pid;
    uint64_t end_s;       /* last second of history (unix)                 */
    bool pending_ctl;     /* leave one control request unacknowledged      */
    bool ranges;          /* NVTX range rows (fill_range_row)              */
    char *id;             /* out: malloc'ed session id                     */
} fill_session;

/** Create one session in store dir and write its whole history.
 *  @return 0 or a cupstore error code. */
int fill_session_write(const char *dir, fill_session *s);

/** The per-second health row the writer uses for second `t` (0-based)
 *  of a session of `seconds` seconds with kinds mask `kinds` (exposed so
 *  the live mode continues the same pattern). */
void fill_health_row(fill_kind kind, unsigned t, unsigned seconds, uint32_t kinds,
                     uint64_t second, cupstore_health *h);

/** NVTX ranges a session gets with .ranges: FILL_RANGES rows, row i of a
 *  session whose first second is start_s of `seconds`: "step" eight times
 *  (the sixth the slowest, 2.4 s) and once left open, "phase" around the
 *  first steps, one instance of a hostile name (escape sequences, BEL,
 *  invalid UTF-8) and one unbalanced end.  Names: fill_range_name. */
#define FILL_RANGES 12
void fill_range_row(unsigned i, uint64_t start_s, unsigned seconds, cupstore_range *r);
/** The interned name of a name_id fill_range_row uses (len: its bytes). */
const char *fill_range_name(uint32_t name_id, size_t *len);

/** Live mode for a FILL_RUNNING session: one health row per second, with
 *  drops while the kernel kind is on; acknowledges control requests like
 *  the agent (new epoch); with ranges, one 200 ms "step" range a second.
 *  Runs until *stop or `duration` seconds. */
int fill_live(const char *dir, const char *id, unsigned duration, bool ranges,
              volatile int *stop);

#endif /* CUPTOP_FILL_LIB_H */
