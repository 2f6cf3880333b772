/*
 * cli_inject.h - the project's own ptrace injector (x86-64): make one
 * thread of a running process call dlopen(LIB, RTLD_NOW) and then
 * ENTRY(ARG) of that library (through a trampoline that needs no tracer
 * to finish), restore every register and byte touched, and let it go.  See cli_inject.c and doc/design.md ("attach").
 */
#ifndef CLI_INJECT_H
#define CLI_INJECT_H

#include <sys/types.h>

/** Load lib into pid and call entry(arg) there on one of its threads.
 *  @param[out] result  what entry returned (int)
 *  @param[out] cause   on failure: the step that failed and why (caller
 *                      frees); the target has been restored and released
 *  @return 0, or -1 with *cause set; -2: ptrace refused (EPERM), *cause
 *          says what blocks it and how to allow it.
 *  @note CUPTOP_INJECT_DIE_AT=STEP (a test hook) makes the injector kill
 *  itself with SIGKILL when it reaches STEP (stopped, saved, written,
 *  started, waiting, restore, taken, restored, called); the kernel then
 *  detaches the target, which runs on at every one of them. */
int cli_inject(pid_t pid, const char *lib, const char *entry, const char *arg, int *result,
               char **cause);

/** Whether pid has a mapping whose path ends in name (e.g.
 *  "/libcuptop-agent.so"), from /proc/PID/maps. */
int cli_inject_has_mapping(pid_t pid, const char *name);

#endif /* CLI_INJECT_H */
