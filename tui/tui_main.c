/* tui_main.c - `cuptop top`: options, terminal setup, the frame loop. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Defined here (not in main.c) so that programs linking the TUI library
 * without the CLI still link; main.c's fatal-signal guard calls it. */
void (*volatile cli_fatal_cleanup)(void);

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
    t.export_fn = export_run;
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
    cli_fatal_cleanup = tui_fatal_cleanup;
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
    while (!t.quit) {
        uint64_t now = clock_ns(CLOCK_MONOTONIC);
        if (now >= next) {
            if (tui_frame_sample(&t, cause) != 0) {
                rc = CUPTOP_EXIT_USAGE;
                break;
            }
            next = now + 1000000000u;
        }
        tui_frame_draw(&t);
        now = clock_ns(CLOCK_MONOTONIC);
        int ms = now >= next ? 0 : (int)((next - now) / 1000000u) + 1;
        int ch = tui_getch(&t, stdscr, ms);
        if (ch != ERR && ch != TUI_KEY_GONE)
            tui_handle_key(&t, ch);
    }
    cli_fatal_cleanup = NULL;
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
