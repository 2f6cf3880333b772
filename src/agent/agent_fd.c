/* agent_fd.c - keeping the agent's descriptors out of 0-2 (agent_fd.h). */
#include "config.h"

#include "agent_fd.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

/* The one hold state of the process; changed only under fd_lock. */
static struct {
    pthread_mutex_t lock;
    int depth;              /* nesting of holds (the owner's)              */
    bool mine[3];           /* fd i is our placeholder                     */
    dev_t dev;              /* what a placeholder is: O_PATH of "/"        */
    ino_t ino;
    bool atfork;
} fd_g = {.lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP};

/* fd is one of our placeholders (a program that dup2()ed onto it in the
 * meantime replaced it: then it is not ours to close). */
static bool fd_is_placeholder(int fd)
{
    struct stat st;
    int fl = fcntl(fd, F_GETFL);
    return fl >= 0 && (fl & O_PATH) && fstat(fd, &st) == 0 && st.st_dev == fd_g.dev &&
           st.st_ino == fd_g.ino;
}

/* The lock order (doc/design.md): a descriptor hold before the store's
 * write lock, never the other way.  A thread inside a store write
 * transaction that must wait for the hold can deadlock against a thread
 * that holds it and waits for the write lock (session 13's hang: the
 * session's metadata opened /proc files inside its transaction while the
 * window thread's attach held the hold).  The agent's write transactions
 * are one at a time (LMDB's writer lock), and so are holds (the mutex):
 * each records its owner, and a hold taken afresh by the thread inside the
 * write is counted, whether or not it had to wait, so a test finds the
 * wrong order deterministically, not only when it hangs.  No thread-local
 * storage: the agent's static TLS block stays as small as it was. */
static _Atomic uintptr_t write_owner, hold_owner;   /* pthread_self, 0: none */
static _Atomic unsigned order_violations;

static uintptr_t fd_self(void)
{
    return (uintptr_t)pthread_self();
}

void agent_fd_write_enter(void)
{
    atomic_store(&write_owner, fd_self());
}

void agent_fd_write_leave(void)
{
    uintptr_t me = fd_self();
    atomic_compare_exchange_strong(&write_owner, &me, 0);
}

unsigned agent_fd_order_violations(void)
{
    return atomic_load(&order_violations);
}

/* A child forked while a thread of the parent held: that thread does not
 * exist here, so its placeholders would stay.  Close them and start afresh. */
static void fd_atfork_child(void)
{
    atomic_store(&order_violations, 0);   /* the child's session counts its own */
    atomic_store(&write_owner, 0);
    if (pthread_mutex_trylock(&fd_g.lock) == 0) {
        pthread_mutex_unlock(&fd_g.lock);
        return;
    }
    for (int i = 0; i < 3; i++)
        if (fd_g.mine[i] && fd_is_placeholder(i))
            close(i);
    pthread_mutexattr_t at;
    pthread_mutexattr_init(&at);
    pthread_mutexattr_settype(&at, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&fd_g.lock, &at);
    pthread_mutexattr_destroy(&at);
    fd_g.depth = 0;
    for (int i = 0; i < 3; i++)
        fd_g.mine[i] = false;
    atomic_store(&hold_owner, 0);
}

void agent_fd_hold(void)
{
    uintptr_t me = fd_self();
    if (atomic_load(&write_owner) == me && atomic_load(&hold_owner) != me)
        atomic_fetch_add(&order_violations, 1);
    pthread_mutex_lock(&fd_g.lock);
    atomic_store(&hold_owner, me);
    if (fd_g.depth++ > 0)
        return;
    if (!fd_g.atfork)
        fd_g.atfork = pthread_atfork(NULL, NULL, fd_atfork_child) == 0;
    /* open() takes the lowest free number: fill until one lands above 2 */
    for (int n = 0; n < 4; n++) {
        int p = open("/", O_PATH | O_CLOEXEC);
        if (p < 0)
            break;
        if (p >= 3) {
            close(p);
            break;
        }
        struct stat st;
        if (fstat(p, &st) == 0) {
            fd_g.dev = st.st_dev;
            fd_g.ino = st.st_ino;
        }
        fd_g.mine[p] = true;
    }
}

void agent_fd_release(void)
{
    if (fd_g.depth > 0 && --fd_g.depth == 0) {
        atomic_store(&hold_owner, 0);
        int saved = errno;
        for (int i = 0; i < 3; i++) {
            if (fd_g.mine[i] && fd_is_placeholder(i))
                close(i);
            fd_g.mine[i] = false;
        }
        errno = saved;
    }
    pthread_mutex_unlock(&fd_g.lock);
}

int agent_fd_open(const char *path, int flags)
{
    agent_fd_hold();
    int fd = open(path, flags | O_CLOEXEC);
    if (fd >= 0 && fd < 3) {   /* no placeholder could be made */
        int hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        int e = errno;
        close(fd);
        fd = hi;
        errno = e;
    }
    int saved = errno;
    agent_fd_release();
    errno = saved;
    return fd;
}
