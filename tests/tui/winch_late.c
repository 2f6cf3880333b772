/*
 * winch_late.c - preloaded into the monitor by tests/tui/tmux_winch.sh.
 * ncurses' newterm reads the terminal's size, then installs its SIGWINCH
 * handler.  When that handler is about to be installed, the command named
 * by CUPTOP_TEST_WINCH_CMD runs (once), and this waits until the terminal
 * has another size: a resize that lands between the two, signalled to a
 * process that still ignores SIGWINCH.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static void resize_now(const char *env)
{
    struct winsize before, now;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s", env);
    /* the command's own programs (tmux installs a SIGWINCH handler too)
     * must not run it again */
    unsetenv("CUPTOP_TEST_WINCH_CMD");
    unsetenv("LD_PRELOAD");
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &before) != 0)
        return;
    if (system(cmd) != 0)
        return;
    /* tmux applies a resize to the pane's terminal after the command
     * returns: at most 10 s */
    for (int i = 0; i < 1000; i++) {
        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &now) != 0 || now.ws_row != before.ws_row ||
            now.ws_col != before.ws_col)
            return;
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    static sigaction_fn real;
    static int done;
    if (!real)
        real = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    if (!real)
        return -1;
    const char *cmd = getenv("CUPTOP_TEST_WINCH_CMD");
    if (sig == SIGWINCH && act && act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN &&
        cmd && !done) {
        done = 1;
        resize_now(cmd);
    }
    return real(sig, act, old);
}
