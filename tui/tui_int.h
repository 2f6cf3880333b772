/*
 * tui_int.h - the live monitor's internal state: store snapshot (sessions),
 * per-second history of one session, screens as widgets, dialogs.
 *
 * One cycle per frame: sample (one short read txn per session, copying what
 * is needed into plain arrays) -> update -> draw (each panel its own WINDOW,
 * wnoutrefresh, one doupdate).  No read transaction outlives a frame.
 */
#ifndef CUPTOP_TUI_INT_H
#define CUPTOP_TUI_INT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "cupstore.h"
#include "export.h"
#include "model.h"
#include "tui.h"
#include "tui_main.h"

/* ---- Store snapshot: every session (tui_store.c) --------------------- */
typedef struct tui_sess {
    char *id;
    cupstore_env *env;           /* open between frames; no txn held      */
    bool writable;
    int open_err;                /* != 0: unreadable (shown as such)      */
    char *cause;                 /* the model's words for it, or NULL     */
    model_summary sum;           /* the model's state and verdict         */
    bool have_sum;
    uint64_t sum_at;             /* wall second when summarised           */
    uint64_t sum_hb;             /* heartbeat the summary saw             */
    bool sum_final;              /* final status the summary saw          */
    cupstore_health last;        /* last health row (fresh every frame)   */
    bool have_last;
    bool has_final;
    uint64_t drops_dev[CUPSTORE_DEVICE_MAX];  /* exact, last second       */
    char cmd[256];               /* sanitised command line                */
    size_t cmd_prog;             /* offset of the program's base name     */
    char devices[48];            /* "0,1"                                 */
    bool seen;                   /* present in the latest directory scan  */
    /* A read of it faulted (damaged page): UNREADABLE, and not read again
     * until its data file changes (cupstore_guarded) */
    bool faulted;
    cupstore_stamp fault_stamp;
} tui_sess;

typedef struct tui_store {
    char *dir;
    tui_sess *s;
    size_t n, cap;
    bool missing;                /* store directory does not exist (yet)  */
    bool ascii;                  /* sanitise to ASCII                     */
    int summaries;               /* model_summarize calls in last refresh */
    size_t rr;                   /* next session for a periodic re-judge  */
} tui_store;

typedef enum tui_sess_state {
    TUI_ST_RUNNING = 0,
    TUI_ST_STOPPED,              /* live, the process stopped (SIGSTOP)    */
    TUI_ST_NOT_RESPONDING,       /* live, no heartbeat, process still there
                                    or not visible here                     */
    TUI_ST_COMPLETE,
    TUI_ST_INCOMPLETE,
    TUI_ST_CRASHED,
    TUI_ST_UNREADABLE,
    TUI_ST_MAX
} tui_sess_state;

int tui_store_init(tui_store *st, const char *dir, bool ascii, char **cause);
void tui_store_free(tui_store *st);
/** Rescan the directory and refresh every session (short txns). */
int tui_store_refresh(tui_store *st, uint64_t now_ns, char **cause);
/** Index of a session by id or unique prefix, -1 if none. */
long tui_store_find(const tui_store *st, const char *id);
/** The env of session i; reopened writable when asked (NULL on failure,
 *  with *err set). */
cupstore_env *tui_store_env(tui_store *st, size_t i, bool writable, int *err);
/** Close session i's env (before export_run opens it itself). */
void tui_store_release(tui_store *st, size_t i);
tui_sess_state tui_sess_state_of(const tui_sess *s);
const char *tui_sess_state_name(tui_sess_state s);
/** Pure: does a cached summary need recomputing?  REQUIRED now (new,
 *  ended, gone stale), PERIODIC (live data; at most one per frame), or
 *  FRESH. */
enum { TUI_SUM_FRESH = 0, TUI_SUM_PERIODIC, TUI_SUM_REQUIRED };
int tui_summary_stale(bool have_sum, model_state state, uint64_t sum_at, uint64_t sum_hb,
                      bool sum_final, uint64_t now_s, uint64_t hb_ns, bool has_final);

/* ---- Per-second history of one session (tui_hist.c) ------------------ */
enum tui_series_id {
    TUI_S_REC_KIND = 0,                                  /* + kind         */
    TUI_S_REC_TOTAL = TUI_S_REC_KIND + CUPSTORE_KIND_MAX,
    TUI_S_LOSS,                                          /* + class        */
    TUI_S_LOSS_TOTAL = TUI_S_LOSS + CUPSTORE_LOSS_MAX,
    TUI_S_DROP_DEV,                                      /* + device, exact */
    TUI_S_DROP_HOST = TUI_S_DROP_DEV + CUPSTORE_DEVICE_MAX, /* exact, no device */
    TUI_S_EST_KIND,                                      /* + kind, estimate */
    TUI_S_BUF_OUT = TUI_S_EST_KIND + CUPSTORE_KIND_MAX,
    TUI_S_POOL_LIMIT,
    TUI_S_BUF_DECLINED,
    TUI_S_OVERHEAD,
    TUI_S_Q_DEPTH,
    TUI_S_Q_HW,
    TUI_S_Q_CAP,
    TUI_S_CMP_P50,
    TUI_S_CMP_P99,
    TUI_S_CMP_MAX,
    TUI_S_COMMIT_P50,
    TUI_S_COMMIT_P99,
    TUI_S_COMMIT_MAX,
    TUI_S_EPOCH,
    TUI_S_KINDS,
    TUI_S_LEDGER_EXP,            /* the launch ledger: records expected,   */
    TUI_S_LEDGER_ARR,            /* ... arrived (per second, all kinds)    */
    TUI_S_LEDGER_PEND,           /* ... pending now (all kinds)            */
    TUI_S_MAX
};

#define TUI_HIST_KEEP 10800u     /* seconds of history kept (3 h)         */
#define TUI_BANNER_CLEAR_S 5u    /* seconds without loss: the demo banner
                                    says the drops stopped               */
#define TUI_MAX_EPOCHS 256
#define TUI_MAX_MARKS 64

typedef struct tui_hist {
    uint64_t base;               /* second at index 0                     */
    size_t len, cap;             /* cap = 2 * TUI_HIST_KEEP               */
    double *v;                   /* TUI_S_MAX * cap                       */
    bool *valid;                 /* one bit of validity per point         */
    bool loaded;
    uint64_t last_second;        /* newest health row                     */
    cupstore_health last;
    bool have_last;
    uint64_t ledger_exp, ledger_arr; /* the ledger's counts (since the
                                    session's start) at ledger_second     */
    uint64_t ledger_second;      /* 0: no row with them read yet          */
    cupstore_epoch epochs[TUI_MAX_EPOCHS];
    size_t nepochs;
    cupstore_mark marks[TUI_MAX_MARKS];
    size_t nmarks;
    cupstore_control ctl;        /* latest control request                */
    bool have_ctl;
    cupstore_final fin;
    bool have_final;
    model_live live;             /* the model's summary and series: the
                                    loss counters shown are live.sum's      */
} tui_hist;

int tui_hist_init(tui_hist *h);
void tui_hist_free(tui_hist *h);
void tui_hist_reset(tui_hist *h);
/** The model's live series (model_live_series: new seconds and the newest
 *  MODEL_LIVE_GUARD ones again, counted by the verdict's rule) and its
 *  summary, then one short read txn for epochs, marks, control, final. */
int tui_hist_sample(tui_hist *h, cupstore_env *env);
/** Series pointers (n = h->len points, index 0 = h->base). */
const double *tui_hist_v(const tui_hist *h, int series);
const bool *tui_hist_valid(const tui_hist *h, int series);
/** Value at a second (0 when missing). */
double tui_hist_at(const tui_hist *h, int series, uint64_t second, bool *valid);
/** Per-epoch statistics from the history; returns how many. */
/** Pure ring arithmetic, exposed for tests: point store at a second. */
void tui_hist_set(tui_hist *h, int series, uint64_t second, double v);

/* ---- NVTX ranges shown on the dashboard (tui_ranges.c) -------------- */
/* The session's range table, loaded when the user first asks for ranges
 * and again (a live session) when it may have changed: at most once per
 * refresh, never per frame.  The chosen name and the selection are kept
 * by value (raw name bytes, marker id) so that they survive a reload. */
typedef struct tui_ranges {
    model_ranges *m;             /* NULL until loaded                     */
    bool loaded;
    uint64_t rows;               /* range rows at the load                */
    uint64_t loaded_at;          /* monotonic ns of the load              */
    uint64_t cost;               /* how long the load took (ns)           */
    char *name, *domain;         /* the chosen name, raw (NULL: none)     */
    size_t name_len, domain_len;
    long k;                      /* its index in m->names, -1: none       */
    long sel;                    /* selected instance (m->inst), -1: none */
    uint32_t sel_id;             /* its marker id                         */
    uint64_t sel_at;             /* the cursor second it was selected at  */
    long slow_rank;              /* sel's rank slowest first, -1: not by s */
    size_t *open;                /* open instances of the chosen name     */
    size_t nopen;
} tui_ranges;

enum { TUI_RANGE_PREV = -1, TUI_RANGE_NEXT = 1, TUI_RANGE_SLOWEST = 2 };
/* Lane cells: what covers a view column (the highest wins), + selected. */
enum { TUI_LANE_NONE = 0, TUI_LANE_POINT, TUI_LANE_OPEN, TUI_LANE_RANGE, TUI_LANE_SEL = 0x80 };

/** Free and reset (no name chosen, nothing loaded). */
void tui_ranges_free(tui_ranges *r);
/** Read the range table in txn; keeps the chosen name and selection when
 *  they are still there.  @return 0, ENOMEM or a store/model code. */
int tui_ranges_load(tui_ranges *r, cupstore_txn *txn, uint64_t now_mono);
/** Pure: load again?  Not yet loaded; or live with new rows or open ranges
 *  (an end updates a row), at most every max(1 s, 10 x cost_ns). */
bool tui_ranges_stale(const tui_ranges *r, bool live, uint64_t rows, uint64_t now_mono,
                      uint64_t cost_ns);
/** Choose names[k] (-1: none); the selection is cleared. */
int tui_ranges_choose(tui_ranges *r, long k);
/** Select the next / previous instance of the chosen name from the cursor
 *  second (or from the selection while the cursor is still at sel_at: its
 *  start second, or where the caller clamped the cursor to), or the
 *  slowest (again: the next slowest).  @return the inst index or -1. */
long tui_ranges_jump(tui_ranges *r, int how, uint64_t cursor_s);
/** 1-based time-order number of instance inst of the chosen name (as in
 *  `cuptop export --range NAME --nth N`); 0 when not one of them. */
size_t tui_ranges_nth(const tui_ranges *r, long inst);
/** names[k] for the screen: sanitised, "domain/name" outside the default
 *  domain. */
void tui_ranges_label(const tui_ranges *r, size_t k, bool ascii, char *buf, size_t len);
/** The selection's window: its start to its end (open: to last_ns).
 *  @return 0, or EINVAL (none selected, an instantaneous mark). */
int tui_ranges_window(const tui_ranges *r, uint64_t last_ns, uint64_t *from, uint64_t *to);
/** A mark name for the selection: "NAME-N", ASCII, one word. */
void tui_ranges_mark_name(const tui_ranges *r, char *buf, size_t len);
/** Paint [start_ns, end_ns] into the lane cells of view a (ncols columns,
 *  ppc points per column, column 0 = the view's first point). */
void tui_lane_paint(uint8_t *cells, int ncols, const tui_axis *a, int ppc, uint64_t start_ns,
                    uint64_t end_ns, uint8_t kind);
/** The lane of the chosen name in view a: every instance that reaches into
 *  it (open ones up to last_ns), the selection flagged TUI_LANE_SEL. */
void tui_ranges_lane(const tui_ranges *r, const tui_axis *a, int ppc, uint64_t last_ns,
                     uint8_t *cells, int ncols);

/* ---- Screens are widgets --------------------------------------------- */
typedef struct tui tui;

struct tui_widget_ops {
    const char *name;
    void (*enter)(tui *t);               /* screen becomes current        */
    void (*layout)(tui *t);              /* (re)create windows            */
    int (*sample)(tui *t);               /* read the store                */
    void (*draw)(tui *t);                /* werase, draw, wnoutrefresh    */
    bool (*on_key)(tui *t, int key);     /* true when handled             */
    void (*destroy)(tui *t);             /* free windows                  */
};

extern const struct tui_widget_ops tui_sessions_ops;
extern const struct tui_widget_ops tui_dash_ops;
extern const struct tui_widget_ops tui_kinds_ops;
extern const struct tui_widget_ops tui_agg_ops;

typedef enum tui_screen {
    TUI_SCR_SESSIONS = 0,
    TUI_SCR_DASH,
    TUI_SCR_KINDS,
    TUI_SCR_AGG,
    TUI_SCR_MAX
} tui_screen;

#define TUI_SORT_MAX 7

/* A row of the sessions screen that heads a job: TUI_ROW_JOB | the index
 * of its first session; the job's sessions follow it, by rank. */
#define TUI_ROW_JOB ((size_t)1 << (sizeof(size_t) * 8 - 1))

typedef struct tui_sessions_view {
    size_t *rows;                /* indices into store, sorted, filtered;
                                    job rows flagged TUI_ROW_JOB           */
    size_t nrows;
    size_t sel, top;
    int sort;                    /* column                                */
    bool sort_desc;
    char filter[64];
    WINDOW *win_head, *win_list, *win_status, *win_foot;
} tui_sessions_view;

typedef struct tui_dash_view {
    bool follow;                 /* the view tracks the newest second     */
    bool cursor_live;            /* the cursor tracks it too (End)        */
    uint64_t last;               /* last second shown when not following  */
    uint64_t cursor;             /* second under the cursor               */
    uint64_t span;               /* seconds per point (zoom)              */
    bool mark_from_set;
    uint64_t mark_from;
    char sel_mark[64];           /* mark to export                        */
    tui_dash_layout lay;
    bool too_small;
    WINDOW *win_header, *win_banner, *win_counters, *win_axis, *win_status, *win_foot;
    WINDOW *win_lane;            /* NVTX ranges above the axis, or NULL   */
    WINDOW *win_panel[TUI_DASH_PANELS];
    WINDOW *win_plot[TUI_DASH_PANELS];   /* subwindow of the panel        */
    bool ledger;                 /* laid out with the launch ledger's panel */
} tui_dash_view;

typedef struct tui_kinds_view {
    int sel;
    WINDOW *win_head, *win_kinds, *win_epochs, *win_suggest, *win_foot;
    /* the model's judgement, redone when a new second arrives */
    bool judged;                 /* ep and suggest are for judged_cur     */
    long judged_cur;             /* session judged                        */
    uint64_t judged_second;      /* its last health row then              */
    model_epoch_stat *ep;        /* per-epoch figures (model_facts)       */
    size_t nep;
    int base;                    /* the baseline epoch (model_session_baseline) */
    char suggest[192];           /* the first recommendation, short       */
} tui_kinds_view;

/** Judge session t->cur again if a second arrived (kinds view). */
void tui_kinds_judge(tui *t);
/** The suggestion line for a session from the model's advice: the first
 *  recommendation with the key that applies it when one does (pure). */
void tui_suggest_line(const model_summary *s, const model_advice *a, size_t n, bool running,
                      char *buf, size_t len);

typedef struct tui_agg_view {
    WINDOW *win_head, *win_body, *win_foot;
} tui_agg_view;

/* The monitor: the one mutable state struct of the TUI. */
struct tui {
    const tui_opts *opts;
    bool ascii, mono;
    tui_store store;
    long cur;                    /* session shown by dashboard/kinds      */
    tui_hist hist;
    tui_screen screen;
    tui_sessions_view sv;
    tui_dash_view dv;
    tui_kinds_view kv;
    tui_agg_view av;
    bool help;                   /* help overlay open                     */
    bool quit;
    bool lost;                   /* the terminal went away (EOF, hangup)  */
    unsigned early_errs;         /* getch ERRs in a row before their time */
    tui_screen agg_from;         /* screen the devices view was opened from */
    bool dirty_layout;
    char status[256];            /* one-line message                      */
    int status_attr;
    uint64_t status_gen;         /* status says this request is pending   */
    char status_what[128];       /* what that request changes             */
    uint64_t now_ns;
    /* The export writer (tui_opts.export_fn; NULL: export unavailable).
     * A pointer keeps tui/ linkable without src/export (tests, bench). */
    export_run_fn export_fn;
    tui_ranges rv;               /* NVTX ranges of the dashboard's session */
    int (*attach_list)(char ***items);                 /* tui_opts' */
    int (*attach_pid)(const char *store_dir, int pid, char **msg);
};

const struct tui_widget_ops *tui_screen_ops(tui_screen s);
/** Resolve and check the store before the terminal is touched; fills t.
 *  @return 0 or CUPTOP_EXIT_USAGE with *cause set. */
int tui_init(tui *t, const tui_opts *o, char **cause);
void tui_free(tui *t);
/** One frame's sample step (every read txn begins and ends inside). */
int tui_frame_sample(tui *t, char **cause);
/** One frame's draw step: the screen, the help overlay, one doupdate. */
void tui_frame_draw(tui *t);
/** Act on one key (or KEY_RESIZE). */
void tui_handle_key(tui *t, int ch);
/** Switch screens (calls enter + layout). */
void tui_set_screen(tui *t, tui_screen s);
/** Dashboard: put the cursor on second s (the view follows it). */
void tui_dash_goto(tui *t, uint64_t s);
/** The dashboard's rows around its panels (tui_dash_rows.c): the header,
 * the loss-class counters and control state, and the time axis of the view
 * (axis at ppc points per column, cursor point or -1) from column x0. */
void tui_dash_header(tui *t, WINDOW *w);
void tui_dash_counters(tui *t, WINDOW *w);
void tui_dash_axis(tui *t, WINDOW *w, const tui_axis *axis, int ppc, long cursor, int x0,
                   int width);
/** Dashboard glue for NVTX ranges (tui_dash_ranges.c): keys r n N s w, the
 *  load when asked for or stale, the lane under the plots. */
bool tui_dash_ranges_key(tui *t, int key);
int tui_dash_ranges_sample(tui *t, cupstore_env *env);
/** Rows the lane takes (0 when no name is chosen). */
int tui_dash_ranges_rows(const tui *t);
/** Draw the lane's text row (whole width) into w row 0. */
void tui_dash_ranges_info(tui *t, WINDOW *w);
/** Draw the lane of view a into row y of w, columns x0 .. x0 + width - 1. */
void tui_dash_ranges_band(tui *t, WINDOW *w, int y, const tui_axis *a, int ppc, int x0,
                          int width);
/** Open session index i on the dashboard. */
void tui_open_session(tui *t, size_t i);
void tui_set_status(tui *t, tui_color c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/** Status for a control request just sent: "pending" now, rewritten to
 *  "applied" once a health row acknowledges generation gen. */
void tui_status_pending(tui *t, uint64_t gen, const char *what);
/** Rewrite a pending request's status once the agent applied it. */
void tui_status_update(tui *t);

/* ---- What the stored state says is on (tui_draw.c) -------------------- */
/** The agent stepped aside (CUPTI could not start, or it disabled itself):
 *  its health rows say DISABLED or its final status is DETACH. */
bool tui_agent_disabled(const tui_hist *h);
/** Kinds collecting now: the last health row's, none when the agent is
 *  disabled (its rows may still carry the configured mask). */
uint32_t tui_kinds_on(const tui_hist *h);
/** The launch ledger counts in the session's last health row (--ledger,
 *  or a `ledger on` control request, even after a later `ledger off`). */
bool tui_ledger_shown(const tui_hist *h);

/* ---- Small helpers (tui_frame.c) ---------------------------------------- */
/** Nanoseconds on clock c. */
uint64_t tui_clock_ns(clockid_t c);
/** A malloc'ed formatted string, or NULL when out of memory. */
char *tui_strdupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- Shared drawing helpers (tui_draw.c) ----------------------------- */
/** Draw the footer key bar: pairs of "key", "label". */
void tui_draw_footer(WINDOW *w, const char *const *keys, size_t n);
/** Draw a string cut to the window width at (y, x) with attributes.
 *  Returns the column after it, or the window's width when it was cut. */
int tui_draw_text(WINDOW *w, int y, int x, attr_t a, const char *s);
int tui_draw_textf(WINDOW *w, int y, int x, attr_t a, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/** Draw s wrapped at spaces from (y, x) over at most maxrows rows; returns
 *  the rows used. */
int tui_draw_wrapped(WINDOW *w, int y, int x, attr_t a, const char *s, int maxrows);
/** Rows the demo banner needs at this width (0: no banner; at most 3). */
int tui_banner_rows(const tui *t, int cols);
/** Draw the demo banner, wrapped, on rows y .. y + rows - 1 of w. */
void tui_draw_banner(const tui *t, WINDOW *w, int y, int rows);
/** (Re)create a window for a rect; NULL for an empty rect. */
WINDOW *tui_window(WINDOW *old, tui_rect r);
void tui_window_free(WINDOW **w);
/** Draw the help overlay. */
void tui_help_draw(tui *t);
/** Draw the status line of any screen. */
void tui_draw_status(tui *t, WINDOW *w);

/* ---- Keys and signals (tui_frame.c) ----------------------------------- */
/* Signal handlers only set these flags; every wait for a key reads them. */
struct tui_signals {
    volatile sig_atomic_t quit;     /* SIGINT, SIGTERM                      */
    volatile sig_atomic_t hangup;   /* SIGHUP: the terminal is gone         */
};
extern struct tui_signals tui_signals;

/** Returned by tui_getch when the monitor must end: a stop signal came or
 *  the terminal went away (then t->lost is set too).  t->quit is set. */
#define TUI_KEY_GONE (-2)
/** Wait up to ms milliseconds (< 0: forever) for a key on w (NULL: stdscr).
 *  Returns the key, ERR when the time ran out, or TUI_KEY_GONE.  Every
 *  loop that waits for a key (frame loop, dialogs) goes through here, so a
 *  lost terminal or a stop signal ends the monitor from any dialog. */
int tui_getch(tui *t, WINDOW *w, int ms);
/** Pure: does an ERR from getch mean the terminal is gone?  revents: what
 *  poll(2) said about the terminal's input just after. */
bool tui_input_lost(short revents);

/* ---- Dialogs (tui_dialog.c): modal, Esc cancels ----------------------- */
/** Line prompt on the last-but-one line; buf holds the default, shown
 *  selected: typing replaces it, an editing key (Backspace, ^U, Left)
 *  keeps it for editing.  Returns true on Enter, false on Esc (or when the
 *  monitor must end). */
bool tui_prompt(tui *t, const char *label, char *buf, size_t len);
/** Chooser dialog; returns the index chosen or -1 on Esc. */
int tui_choose(tui *t, const char *title, const char *const *items, int n);
/** Yes/no question on the prompt line; true only for y/Y. */
bool tui_confirm(tui *t, const char *question);
/** Redraw the current screen (used by modal dialogs on resize). */
void tui_redraw(tui *t);

/* ---- Actions ---------------------------------------------------------- */
/** Write a control request for kinds; 0 or a store error. */
/* A control request: kinds (the full mask) and pool (0: unchanged). */
int tui_control(tui *t, uint32_t kinds, uint32_t pool, uint64_t *gen);
/** Store a mark on the current session (whole seconds from_s .. to_s). */
int tui_mark_put(tui *t, const char *name, uint64_t from_s, uint64_t to_s);
/** Store a mark with nanosecond ends (a range's window). */
int tui_mark_put_ns(tui *t, const char *name, uint64_t from_ns, uint64_t to_ns);
/** Export a mark window from the current session (prompts, progress). */
void tui_export(tui *t, const char *mark);

#endif /* CUPTOP_TUI_INT_H */
