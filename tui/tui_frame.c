/* tui_frame.c - the monitor's cycle: screens as widgets, one frame =
 * sample (short read txns) -> update -> draw, keys, store checks. */
#include "config.h"

#include <errno.h>
#include <langinfo.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "tui_int.h"

struct tui_signals tui_signals;

uint64_t tui_clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const struct tui_widget_ops *const screens[TUI_SCR_MAX] = {
    [TUI_SCR_SESSIONS] = &tui_sessions_ops,
    [TUI_SCR_DASH] = &tui_dash_ops,
    [TUI_SCR_KINDS] = &tui_kinds_ops,
    [TUI_SCR_AGG] = &tui_agg_ops,
};

const struct tui_widget_ops *tui_screen_ops(tui_screen s)
{
    return screens[s];
}

static void screen_call_layout(tui *t)
{
    erase();
    wnoutrefresh(stdscr);
    screens[t->screen]->layout(t);
}

void tui_set_screen(tui *t, tui_screen s)
{
    if (screens[t->screen]->destroy)
        screens[t->screen]->destroy(t);
    t->screen = s;
    if (screens[s]->enter)
        screens[s]->enter(t);
    screen_call_layout(t);
    if (screens[s]->sample && (s == TUI_SCR_SESSIONS || t->cur >= 0))
        (void)screens[s]->sample(t);
}

void tui_open_session(tui *t, size_t i)
{
    t->cur = (long)i;
    t->kv.judged = false;
    tui_hist_reset(&t->hist);
    t->dv.follow = true;
    t->dv.cursor_live = true;
    t->dv.span = 1;
    t->dv.mark_from_set = false;
    t->dv.sel_mark[0] = '\0';
    tui_ranges_free(&t->rv);   /* ranges are per session */
    t->status[0] = '\0';
    tui_set_screen(t, TUI_SCR_DASH);
}

void tui_frame_draw(tui *t)
{
    screens[t->screen]->draw(t);
    if (t->help)
        tui_help_draw(t);
    doupdate();
}

void tui_redraw(tui *t)
{
    screen_call_layout(t);   /* after KEY_RESIZE, LINES/COLS are new */
    tui_frame_draw(t);
}

/* The sample step of a frame: the sessions snapshot, then the screen's
 * own data.  Every read txn is begun and ended inside. */
int tui_frame_sample(tui *t, char **cause)
{
    t->now_ns = tui_clock_ns(CLOCK_REALTIME);
    char *cur_id = t->cur >= 0 ? strdup(t->store.s[t->cur].id) : NULL;
    int rc = tui_store_refresh(&t->store, t->now_ns, cause);
    if (rc != 0) {
        free(cur_id);
        return rc;
    }
    if (cur_id) {
        long i = -1;
        for (size_t k = 0; k < t->store.n; k++)
            if (strcmp(t->store.s[k].id, cur_id) == 0)
                i = (long)k;
        free(cur_id);
        t->cur = i;
        if (i < 0 && t->screen != TUI_SCR_SESSIONS && t->screen != TUI_SCR_AGG) {
            tui_set_status(t, TUI_C_BAD, "the session was removed from the store");
            tui_set_screen(t, TUI_SCR_SESSIONS);
        }
    }
    if (t->screen == TUI_SCR_SESSIONS || t->cur >= 0) {
        rc = screens[t->screen]->sample(t);
        if (rc != 0)
            tui_set_status(t, TUI_C_BAD, "cannot read the session: %s", model_strerror(rc));
        else if (t->screen != TUI_SCR_SESSIONS && t->screen != TUI_SCR_AGG)
            tui_status_update(t);
    }
    return 0;
}

bool tui_input_lost(short revents)
{
    return (revents & (POLLHUP | POLLERR | POLLNVAL)) != 0;
}

/* After an ERR from getch: is the terminal still there?  A hung-up or
 * closed terminal polls as HUP/ERR (and tcgetattr fails with EIO); a
 * readable one that gave ERR gave end of file. */
static bool terminal_gone(bool readable_means_eof)
{
    struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
    int n = poll(&p, 1, 0);
    if (n < 0)
        return errno != EINTR && errno != EAGAIN;
    if (n > 0 && tui_input_lost(p.revents))
        return true;
    struct termios tio;
    if (tcgetattr(STDIN_FILENO, &tio) != 0 && errno != EINTR)
        return true;
    return n > 0 && (p.revents & POLLIN) && readable_means_eof;
}

int tui_getch(tui *t, WINDOW *w, int ms)
{
    if (!w)
        w = stdscr;
    if (tui_signals.quit || tui_signals.hangup) {
        t->lost = t->lost || tui_signals.hangup;
        t->quit = true;
        return TUI_KEY_GONE;
    }
    uint64_t start = tui_clock_ns(CLOCK_MONOTONIC);
    wtimeout(w, ms);
    int ch = wgetch(w);
    if (ch != ERR && !tui_signals.quit && !tui_signals.hangup) {
        /* A key read ahead of a hangup (or KEY_RESIZE) must not keep a
         * dialog going on a dead terminal; a key is rare enough to check. */
        if (terminal_gone(false)) {
            t->lost = true;
            t->quit = true;
            return TUI_KEY_GONE;
        }
        t->early_errs = 0;
        return ch;
    }
    if (tui_signals.quit || tui_signals.hangup) {
        t->lost = t->lost || tui_signals.hangup;
        t->quit = true;
        return TUI_KEY_GONE;
    }
    /* ERR: the time ran out, or the terminal is gone.  An ERR well before
     * the time ran out with input "readable" is end of file -- when it
     * comes twice in a row: once may be a signal that cut the wait short
     * just as a key arrived (the key is then read next time). */
    uint64_t waited_ms = (tui_clock_ns(CLOCK_MONOTONIC) - start) / 1000000u;
    bool early = ms != 0 && (ms < 0 || waited_ms + 5 < (uint64_t)ms);
    t->early_errs = early ? t->early_errs + 1 : 0;
    /* Whatever the terminal says: a getch that keeps failing at once is
     * one that will never give a key (and would spin the CPU). */
    if (terminal_gone(t->early_errs >= 2) || t->early_errs > 200) {
        t->lost = true;
        t->quit = true;
        return TUI_KEY_GONE;
    }
    return ERR;
}

void tui_handle_key(tui *t, int ch)
{
    if (ch == KEY_RESIZE) {
        screen_call_layout(t);
        return;
    }
    if (ch == 'q' || ch == KEY_F(10)) {
        t->quit = true;
        return;
    }
    if (t->help) {
        if (ch == 27 || ch == KEY_F(1) || ch == '?' || ch == 'h')
            t->help = false;
        return;
    }
    if (ch == KEY_F(1) || ch == '?' || ch == 'h') {
        t->help = true;
        return;
    }
    if (screens[t->screen]->on_key(t, ch))
        return;
    if (ch == 'a') {
        t->agg_from = t->screen;
        tui_set_screen(t, TUI_SCR_AGG);
        return;
    }
    if (ch == 12) {   /* ^L */
        clearok(curscr, TRUE);
        return;
    }
}

static bool locale_is_utf8(void)
{
    const char *cs = nl_langinfo(CODESET);
    return cs && (strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0);
}

char *tui_strdupf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

/* Before the terminal is touched: the store must be readable. */
static int tui_check_store(tui *t, const tui_opts *o, char **cause)
{
    int rc = tui_frame_sample(t, cause);
    if (rc != 0)
        return CUPTOP_EXIT_USAGE;
    tui_store *st = &t->store;
    if (st->missing && o->store_dir) {
        *cause = tui_strdupf("no store at %s", st->dir);
        return CUPTOP_EXIT_USAGE;
    }
    size_t bad = 0;
    const tui_sess *first_bad = NULL;
    for (size_t i = 0; i < st->n; i++)
        if (st->s[i].open_err) {
            bad++;
            if (!first_bad)
                first_bad = &st->s[i];
        }
    if (st->n > 0 && bad == st->n) {
        *cause = first_bad->cause
                     ? tui_strdupf("cannot read the store: %s", first_bad->cause)
                     : tui_strdupf("cannot read the store: session %s: %s", first_bad->id,
                                model_strerror(first_bad->open_err));
        return CUPTOP_EXIT_USAGE;
    }
    if (o->session) {
        long i = tui_store_find(st, o->session);
        if (i < 0) {
            *cause = tui_strdupf("no session '%s' in %s (or the prefix is ambiguous)", o->session,
                              st->dir);
            return CUPTOP_EXIT_USAGE;
        }
        if (st->s[i].open_err) {
            /* one bad session never blinds the view of the others: the
             * list, with it as an UNREADABLE row, and why on the status
             * line (issue 28 item 9) */
            if (st->s[i].cause)
                tui_set_status(t, TUI_C_BAD, "cannot read %s: shown UNREADABLE",
                               st->s[i].cause);
            else
                tui_set_status(t, TUI_C_BAD, "cannot read session %s: %s: shown UNREADABLE",
                               st->s[i].id, model_strerror(st->s[i].open_err));
            return 0;
        }
        t->cur = i;
    }
    return 0;
}

void tui_free(tui *t)
{
    for (int s = 0; s < TUI_SCR_MAX; s++)
        if (screens[s]->destroy)
            screens[s]->destroy(t);
    tui_hist_free(&t->hist);
    tui_ranges_free(&t->rv);
    tui_store_free(&t->store);
}

int tui_init(tui *t, const tui_opts *o, char **cause)
{
    memset(t, 0, sizeof *t);
    t->opts = o;
    t->cur = -1;
    tui_ranges_free(&t->rv);   /* nothing chosen */
    const char *term = getenv("TERM");
    t->ascii = o->ascii || !locale_is_utf8() || (term && strcmp(term, "linux") == 0);
    t->mono = o->mono;
    if (tui_store_init(&t->store, o->store_dir, t->ascii, cause) != 0)
        return CUPTOP_EXIT_USAGE;
    if (tui_hist_init(&t->hist) != 0) {
        tui_store_free(&t->store);
        *cause = strdup("out of memory");
        return CUPTOP_EXIT_USAGE;
    }
    int rc = tui_check_store(t, o, cause);
    if (rc != 0)
        tui_free(t);
    return rc;
}

