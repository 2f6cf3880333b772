/*
 * agent_fd.h - the agent's descriptors stay out of the host's 0, 1 and 2.
 *
 * A library inside someone else's process must not take the standard
 * descriptors the process closed: open() returns the lowest free number,
 * so a program started with stdout closed would otherwise find the store's
 * lock.mdb as its fd 1 (its printf then overwrites LMDB's lock table), and
 * one started with stdin closed would read the agent's file as its input.
 * Occupying a closed 0-2 for good (with /dev/null, as daemons do for
 * themselves) is no better: the program must keep getting EBADF there, and
 * its own next open() must still get the number it expects.
 *
 * So every descriptor the agent opens, or lets LMDB, dlopen or CUPTI open
 * on its behalf, is made inside a *hold*: for its duration the closed ones
 * among 0-2 are filled with O_PATH descriptors of "/" (read and write on
 * them fail with EBADF, as on a closed one), so whatever is opened gets 3
 * or more; the release closes exactly those placeholders again.  Every
 * descriptor is opened close-on-exec (store/ sets it on LMDB's data file,
 * which LMDB leaves inheritable), so a program the host execs inherits none.
 *
 * Threads: any (application threads inside CUPTI callbacks, the agent's
 * own).  Holds nest and are serialised by one recursive, process-wide
 * mutex: two threads cannot both fill the same closed descriptor.  A child
 * forked during a hold closes the placeholders it inherited.
 */
#ifndef AGENT_FD_H
#define AGENT_FD_H

/* Fill the closed ones among fds 0-2 with placeholders until the matching
 * agent_fd_release.  Never fails (without a placeholder, a descriptor
 * opened meanwhile is moved by agent_fd_open). */
void agent_fd_hold(void);
void agent_fd_release(void);

/* open(2) inside a hold, close-on-exec; the result is >= 3 or -1 (errno). */
int agent_fd_open(const char *path, int flags);

/* The lock order: a hold before the store's write lock.  The agent's
 * write transactions mark themselves while inside (agent_store_put; one
 * at a time, under LMDB's writer lock); a hold the marked thread takes
 * afresh is counted (agent_fd_order_violations), never waited out
 * silently: the stop notes it, the tests fail on the note.  Leave clears
 * the mark only where this thread set it. */
void agent_fd_write_enter(void);
void agent_fd_write_leave(void);
unsigned agent_fd_order_violations(void);

#endif
