/* tui_main.c - `cuptop top`: options, terminal setup, the frame loop. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tui_int.h"

/* Signal handlers only set these flags; the frame loop reads them. */
static struct tui_signals {
    volatile sig_atomic_t quit;
} tui_signals;

static void tui_on_signal(int sig)
{
    (void)sig;
    tui_signals.quit = 1;
}

static uint64_t clock_ns(clockid_t c)
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
    tui_hist_reset(&t->hist);
    t->dv.follow = true;
    t->dv.span = 1;
    t->dv.mark_from_set = false;
    t->dv.sel_mark[0] = '\0';
    t->status[0] = '\0';
    tui_set_screen(t, TUI_SCR_DASH);
}

static void frame_draw(tui *t)
{
    screens[t->screen]->draw(t);
    if (t->help)
        tui_help_draw(t);
    doupdate();
}

void tui_redraw(tui *t)
{
    screen_call_layout(t);   /* after KEY_RESIZE, LINES/COLS are new */
    frame_draw(t);
}

/* The sample step of a frame: the sessions snapshot, then the screen's
 * own data.  Every read txn is begun and ended inside. */
static int frame_sample(tui *t, char **cause)
{
    t->now_ns = clock_ns(CLOCK_REALTIME);
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
            tui_set_status(t, TUI_C_BAD, "cannot read the session: %s", cupstore_strerror(rc));
    }
    return 0;
}

static void handle_key(tui *t, int ch)
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

static char *xstrdupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xstrdupf(const char *fmt, ...)
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
    int rc = frame_sample(t, cause);
    if (rc != 0)
        return CUPTOP_EXIT_USAGE;
    tui_store *st = &t->store;
    if (st->missing && o->store_dir) {
        *cause = xstrdupf("no store at %s", st->dir);
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
        *cause = xstrdupf("cannot read the store: session %s: %s", first_bad->id,
                          cupstore_strerror(first_bad->open_err));
        return CUPTOP_EXIT_USAGE;
    }
    if (o->session) {
        long i = tui_store_find(st, o->session);
        if (i < 0) {
            *cause = xstrdupf("no session '%s' in %s (or the prefix is ambiguous)", o->session,
                              st->dir);
            return CUPTOP_EXIT_USAGE;
        }
        if (st->s[i].open_err) {
            *cause = xstrdupf("cannot read session %s: %s", st->s[i].id,
                              cupstore_strerror(st->s[i].open_err));
            return CUPTOP_EXIT_USAGE;
        }
        t->cur = i;
    }
    return 0;
}

static void tui_free(tui *t)
{
    for (int s = 0; s < TUI_SCR_MAX; s++)
        if (screens[s]->destroy)
            screens[s]->destroy(t);
    tui_hist_free(&t->hist);
    tui_store_free(&t->store);
}

int tui_main(const tui_opts *o, char **cause)
{
    tui t;
    memset(&t, 0, sizeof t);
    t.opts = o;
    t.cur = -1;
    setlocale(LC_ALL, "");
    const char *term = getenv("TERM");
    t.ascii = o->ascii || !locale_is_utf8() || (term && strcmp(term, "linux") == 0);
    t.mono = o->mono;
    if (tui_store_init(&t.store, o->store_dir, t.ascii, cause) != 0)
        return CUPTOP_EXIT_USAGE;
    if (tui_hist_init(&t.hist) != 0) {
        tui_store_free(&t.store);
        *cause = strdup("out of memory");
        return CUPTOP_EXIT_USAGE;
    }
    int rc = tui_check_store(&t, o, cause);
    if (rc != 0) {
        tui_free(&t);
        return rc;
    }
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        tui_free(&t);
        *cause = strdup("the live monitor needs a terminal (try 'cuptop sessions')");
        return CUPTOP_EXIT_USAGE;
    }
    SCREEN *scr = newterm(NULL, stdout, stdin);
    if (!scr) {
        tui_free(&t);
        *cause = xstrdupf("cannot initialise the terminal (TERM=%s)", term ? term : "");
        return CUPTOP_EXIT_USAGE;
    }
    set_term(scr);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = tui_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    curs_set(0);
    set_escdelay(25);
    tui_colors_init(t.mono);

    t.screen = TUI_SCR_SESSIONS;
    if (t.cur >= 0)
        tui_open_session(&t, (size_t)t.cur);
    else
        tui_set_screen(&t, TUI_SCR_SESSIONS);

    uint64_t next = clock_ns(CLOCK_MONOTONIC) + 1000000000u;
    while (!t.quit && !tui_signals.quit) {
        uint64_t now = clock_ns(CLOCK_MONOTONIC);
        if (now >= next) {
            if (frame_sample(&t, cause) != 0) {
                rc = CUPTOP_EXIT_USAGE;
                break;
            }
            next = now + 1000000000u;
        }
        frame_draw(&t);
        now = clock_ns(CLOCK_MONOTONIC);
        int ms = now >= next ? 0 : (int)((next - now) / 1000000u) + 1;
        timeout(ms);
        int ch = getch();
        if (ch != ERR)
            handle_key(&t, ch);
    }
    endwin();
    delscreen(scr);
    tui_free(&t);
    return rc;
}

static void top_usage(FILE *f)
{
    fprintf(f, "usage: cuptop [top] [--store DIR] [--session ID] [--ascii] [--mono]\n\n"
               "The live monitor: sessions, per-second plots of records and losses,\n"
               "the kind panel, epochs, marks and export.  F1 or ? inside for keys.\n\n"
               "  --store DIR    store directory (default: $CUPTOP_STORE or\n"
               "                 ${XDG_STATE_HOME:-~/.local/state}/cuptop)\n"
               "  --session ID   open this session's dashboard (id or unique prefix)\n"
               "  --ascii        ASCII plots instead of Braille\n"
               "  --mono         no colours\n");
}

int cmd_top(int argc, char **argv)
{
    static const struct option opts[] = {
        {"store", required_argument, NULL, 's'}, {"session", required_argument, NULL, 'S'},
        {"ascii", no_argument, NULL, 'A'},       {"mono", no_argument, NULL, 'M'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
    };
    tui_opts o;
    memset(&o, 0, sizeof o);
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            o.store_dir = optarg;
            break;
        case 'S':
            o.session = optarg;
            break;
        case 'A':
            o.ascii = true;
            break;
        case 'M':
            o.mono = true;
            break;
        case 'h':
            top_usage(stdout);
            return CUPTOP_EXIT_OK;
        case ':':
            return cli_usage_error(argv[0], "option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);
    char *cause = NULL;
    int rc = tui_main(&o, &cause);
    if (rc != 0 && cause)
        cli_error(argv[0], "%s", cause);
    free(cause);
    return rc;
}
