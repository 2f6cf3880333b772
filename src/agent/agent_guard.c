/* agent_guard.c - the agent's store accesses under a SIGBUS guard
 * (agent_guard.h). */
#include "config.h"

#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "agent_int.h"

/* One armed frame per store call in progress on this thread (nested calls
 * chain through prev). */
typedef struct guard_frame {
    sigjmp_buf jb;
    struct guard_frame *prev;
} guard_frame;

/* initial-exec: static TLS, as agent_stop.c's agent_thread (a pointer:
 * the jump buffer itself lives on the caller's stack) */
static _Thread_local guard_frame *guard_cur __attribute__((tls_model("initial-exec")));

static struct sigaction guard_old;   /* the disposition before ours */
static atomic_int guard_state;       /* 0 none, 1 installing, 2 installed */

/* What the process would have done with a SIGBUS that is not ours. */
static void guard_chain(int sig, siginfo_t *si, void *uctx)
{
    if (guard_old.sa_flags & SA_SIGINFO) {
        if (guard_old.sa_sigaction)
            guard_old.sa_sigaction(sig, si, uctx);
        return;
    }
    if (guard_old.sa_handler != SIG_DFL && guard_old.sa_handler != SIG_IGN) {
        guard_old.sa_handler(sig);
        return;
    }
    if (guard_old.sa_handler == SIG_IGN && (!si || si->si_code <= 0))
        return;   /* an ignored SIGBUS sent by kill stays ignored */
    /* SIG_DFL, or a fault (which the kernel never lets be ignored): the
     * default action.  A fault re-executes the instruction on return and
     * faults again; a sent signal is re-raised (blocked until we return). */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    if (!si || si->si_code <= 0)
        raise(sig);
}

static void guard_handler(int sig, siginfo_t *si, void *uctx)
{
    guard_frame *f = guard_cur;
    if (f && si && si->si_code > 0) {   /* a fault, on a thread inside the store */
        guard_cur = f->prev;
        siglongjmp(f->jb, 1);
    }
    guard_chain(sig, si, uctx);
}

void agent_guard_install(void)
{
    int expect = 0;
    if (!atomic_compare_exchange_strong(&guard_state, &expect, 1))
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = guard_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, NULL, &guard_old) == 0 && sigaction(SIGBUS, &sa, NULL) == 0)
        atomic_store(&guard_state, 2);
    else
        atomic_store(&guard_state, 0);
}

/* The store faulted under this thread: end the session's storing. */
static int guard_faulted(agent *a, cupstore_env *env)
{
    sigset_t bus;
    /* left by a jump (no saved mask): SIGBUS is still blocked here */
    sigemptyset(&bus);
    sigaddset(&bus, SIGBUS);
    pthread_sigmask(SIG_UNBLOCK, &bus, NULL);
    cupstore_env_fault(env);
    if (!atomic_exchange(&a->store_faulted, 1))
        agent_log(a, 1, "the store's mapping faulted under the agent (%s): this session's "
                  "storing ended; the application runs on", cupstore_strerror(CUPSTORE_EFAULT));
    return CUPSTORE_EFAULT;
}

int agent_guard_run(agent *a, int (*fn)(agent *, void *), void *arg)
{
    cupstore_env *env = a->env;
    guard_frame f;
    if (!env)
        return fn(a, arg);   /* no mapping: nothing to guard (fn fails itself) */
    if (cupstore_env_faulted(env))
        return CUPSTORE_EFAULT;
    if (atomic_load(&guard_state) != 2)
        return fn(a, arg);
    f.prev = guard_cur;
    if (sigsetjmp(f.jb, 0))
        return guard_faulted(a, env);
    guard_cur = &f;
    int rc = fn(a, arg);
    guard_cur = f.prev;
    return rc;
}

/* ---- the guarded env calls ----------------------------------------------- */

static int g_sync(agent *a, void *arg)
{
    (void)arg;
    return cupstore_env_sync(a->env);
}

int agent_store_sync(agent *a)
{
    return agent_guard_run(a, g_sync, NULL);
}

struct usage_arg {
    uint64_t *used, *mapsize;
};

static int g_usage(agent *a, void *arg)
{
    struct usage_arg *u = arg;
    return cupstore_env_usage(a->env, u->used, u->mapsize);
}

int agent_store_usage(agent *a, uint64_t *used, uint64_t *mapsize)
{
    struct usage_arg u = {used, mapsize};
    return agent_guard_run(a, g_usage, &u);
}

static int g_reader_check(agent *a, void *arg)
{
    (void)arg;
    return cupstore_env_reader_check(a->env, NULL);
}

int agent_store_reader_check(agent *a)
{
    return agent_guard_run(a, g_reader_check, NULL);
}
