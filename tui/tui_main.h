/*
 * tui_main.h - the live monitor's one entry point, for the front end that
 * starts it (`cuptop top`).  What the monitor needs from the layers above
 * it (the export writer, the fatal-signal guard's cleanup slot) arrives in
 * the options, so libcuptoptui.a depends on the model, the export types and
 * the store only, and links into tests and benchmarks without the CLI.
 */
#ifndef CUPTOP_TUI_MAIN_H
#define CUPTOP_TUI_MAIN_H

#include <stdbool.h>

#include "export.h"

typedef struct tui_opts {
    const char *store_dir;   /* store directory (NULL: the default)         */
    const char *session;     /* open this session's dashboard (NULL: the
                                sessions screen)                            */
    bool ascii;              /* force ASCII plots instead of Braille        */
    bool mono;               /* no colours                                  */
    const char *demo_hint;   /* text for a banner line (NULL for none)      */
    const char *demo_hint_clear; /* the banner instead once the session on
                                    screen lost records and then lost none
                                    for TUI_BANNER_CLEAR_S s (NULL: keep it) */
    /* The export writer (export_run); NULL: the export key says export is
     * unavailable. */
    export_run_fn export_fn;
    /* Called with the terminal-restore function once the terminal is in
     * curses mode, and with NULL when it is restored, so that a fatal-signal
     * guard can give the terminal back before it prints (NULL: none). */
    void (*set_fatal_cleanup)(void (*restore)(void));
    /* cuptop attach, for the sessions screen's A key (NULL: unavailable).
     * attach_list: the CUDA processes without the agent, as malloc'ed
     * "PID  command line" strings in a malloc'ed array (caller frees);
     * returns how many (-1: /proc unreadable).  attach_pid: attach to pid
     * with the monitor's store; *msg: a malloc'ed one-line outcome;
     * returns cuptop attach's exit status. */
    int (*attach_list)(char ***items);
    int (*attach_pid)(const char *store_dir, int pid, char **msg);
} tui_opts;

/** Run the monitor until the user quits or a signal (INT, TERM, HUP).
 *  @param[in]  o      options (only read during the call)
 *  @param[out] cause  malloc'ed message on failure (caller frees)
 *  @return 0, or CUPTOP_EXIT_USAGE (no terminal, unusable store). */
int tui_main(const tui_opts *o, char **cause);

#endif /* CUPTOP_TUI_MAIN_H */
