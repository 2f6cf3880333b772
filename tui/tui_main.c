/* tui_main.c - tui_main(): terminal setup, signals, the frame loop. */
#include "config.h"

#include <errno.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "tui_int.h"

/* Signal handlers only set flags (tui_signals); tui_getch reads them. */
static void tui_on_signal(int sig)
{
    if (sig == SIGHUP)
        tui_signals.hangup = 1;
    else
        tui_signals.quit = 1;
}

/* The terminal is gone: leave its session, so that what the kernel sends
 * the dead terminal's foreground process group when the session leader
 * exits (SIGHUP, then SIGCONT) cannot reach the monitor while it ends.  A
 * late SIGCONT discards the SIGSTOP that a ptrace attach queues; under
 * LeakSanitizer that is the exit-time leak check, whose tracer then waits
 * for the stop forever while the main thread spins in sched_yield
 * (tests/tui/tmux_lost.sh, doc/tui.md).  A process that leads its group
 * cannot (setsid fails, harmlessly). */
static void tui_leave_lost_terminal(void)
{
    (void)setsid();
}

/* newterm reads the terminal's size, then installs its SIGWINCH handler: a
 * resize between the two is never signalled, and the monitor drew at the
 * old size until the next one (rows past the bottom lost, the kind panel's
 * suggestion with them: tests/model/starve_tmux.sh, issue 30).  Once the
 * handler is in place, the size the terminal has now; every later change
 * is signalled.  A size from LINES/COLUMNS is the person's: kept. */
static void tui_sync_size(void)
{
    struct winsize ws;
    if (getenv("LINES") || getenv("COLUMNS"))
        return;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || !ws.ws_row || !ws.ws_col)
        return;
    if (is_term_resized(ws.ws_row, ws.ws_col))
        resizeterm(ws.ws_row, ws.ws_col);
}

/* Restore the terminal before the guard prints its line and exits. */
static void tui_fatal_cleanup(void)
{
    endwin();
}

int tui_main(const tui_opts *o, char **cause)
{
    tui t;
    setlocale(LC_ALL, "");
    const char *term = getenv("TERM");
    int rc = tui_init(&t, o, cause);
    if (rc != 0)
        return rc;
    t.export_fn = o->export_fn;
    t.attach_list = o->attach_list;
    t.attach_pid = o->attach_pid;
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        tui_free(&t);
        *cause = strdup("the live monitor needs a terminal (try 'cuptop sessions')");
        return CUPTOP_EXIT_USAGE;
    }
    SCREEN *scr = newterm(NULL, stdout, stdin);
    if (!scr) {
        tui_free(&t);
        if (asprintf(cause, "cannot initialise the terminal (TERM=%s)", term ? term : "") < 0)
            *cause = NULL;
        return CUPTOP_EXIT_USAGE;
    }
    set_term(scr);
    if (o->set_fatal_cleanup)
        o->set_fatal_cleanup(tui_fatal_cleanup);
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
    tui_sync_size();

    t.screen = TUI_SCR_SESSIONS;
    if (t.cur >= 0)
        tui_open_session(&t, (size_t)t.cur);
    else
        tui_set_screen(&t, TUI_SCR_SESSIONS);

    uint64_t next = tui_clock_ns(CLOCK_MONOTONIC) + 1000000000u;
    while (!t.quit) {
        uint64_t now = tui_clock_ns(CLOCK_MONOTONIC);
        if (now >= next) {
            if (tui_frame_sample(&t, cause) != 0) {
                rc = CUPTOP_EXIT_USAGE;
                break;
            }
            next = now + 1000000000u;
        }
        tui_frame_draw(&t);
        now = tui_clock_ns(CLOCK_MONOTONIC);
        int ms = now >= next ? 0 : (int)((next - now) / 1000000u) + 1;
        int ch = tui_getch(&t, stdscr, ms);
        if (ch != ERR && ch != TUI_KEY_GONE)
            tui_handle_key(&t, ch);
    }
    if (o->set_fatal_cleanup)
        o->set_fatal_cleanup(NULL);
    endwin();
    delscreen(scr);
    if (t.lost)
        tui_leave_lost_terminal();
    tui_free(&t);
    return rc;
}
