/*
 * agent_stop.c - the stop protocol and every path into it: atexit (return
 * from main, exit()), SIGINT/SIGTERM/SIGHUP/SIGQUIT (chained to the host's
 * handlers), SIGABRT (best effort), the last context's destruction, and a
 * detach.  Also the fork rules (pthread_atfork).
 *
 * Signal safety: the protocol takes locks, commits LMDB transactions and
 * calls CUPTI, none of which is async-signal-safe.  So the handler only
 * posts a semaphore (sem_post is async-signal-safe) that wakes the agent's
 * stop thread, then waits for it by polling an atomic flag with nanosleep
 * (also async-signal-safe), at most the stop timeout plus a margin.  Then
 * it chains: the host's handler is called; if the host had none (SIG_DFL)
 * the default action is restored and the signal re-raised, so the process
 * still dies of it.  A handler the host installs after the agent replaces
 * ours: that signal then ends the session through atexit, or as a crash
 * (stale heartbeat) if the process dies without exit().
 *
 * Several stop signals (Ctrl-C, then a supervisor's SIGTERM): the handler
 * runs with every stop signal blocked, so a second one on the same thread
 * waits until the first is handled (protocol and chaining) instead of
 * killing the process in the middle of it; one delivered to another thread
 * while the protocol runs waits for its end there.  The thread that runs
 * the protocol outside a handler (atexit, the last context's destruction)
 * blocks the stop signals meanwhile.  Only then is each signal chained, with
 * the signal mask the host's handler asked for.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "agent_int.h"
#include "agent_stop.h"

static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT};
#define NSIG_STOP (sizeof stop_signals / sizeof stop_signals[0])

/* The stop signals a person or a supervisor sends (all but SIGABRT, which
 * abort() raises on its own thread): blocked while one is handled. */
static void stop_sigset(sigset_t *set)
{
    sigemptyset(set);
    for (size_t i = 0; i < NSIG_STOP; i++)
        if (stop_signals[i] != SIGABRT)
            sigaddset(set, stop_signals[i]);
}

/* Previous dispositions, saved once when the agent installs its own. */
static struct sigaction stop_old[NSIG_STOP];
static bool stop_installed[NSIG_STOP];
/* This thread is one of the agent's.  initial-exec: static TLS (two bytes
 * of glibc's surplus for dlopen'ed libraries) rather than dynamic TLS,
 * which some tools (LeakSanitizer) mis-walk in injected libraries. */
static _Thread_local bool agent_thread __attribute__((tls_model("initial-exec")));

void agent_thread_enter(void)
{
    sigset_t set;
    agent_thread = true;
    /* Signals go to the application's threads, never to ours: a handler
     * on an agent thread would wait for itself. */
    sigemptyset(&set);
    for (size_t i = 0; i < NSIG_STOP; i++)
        sigaddset(&set, stop_signals[i]);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
}

static uint64_t ms_to_ns(uint32_t ms)
{
    return (uint64_t)ms * 1000000u;
}

static void step_record(cupstore_step *s, unsigned id, uint64_t t0, int rc, bool timed_out,
                        agent *a)
{
    s->step = id;
    s->start_mono_ns = t0;
    s->end_mono_ns = agent_mono_ns();
    s->rc = rc;
    s->timed_out = timed_out;
    s->queue_remaining = agent_queue_depth(&a->queue);
}

/* ---- forced flush under a watchdog --------------------------------------- */

struct flush_job {
    agent *a;
    _Atomic int done;
    CUptiResult rc;
};

static void *flush_main(void *arg)
{
    struct flush_job *j = arg;
    agent_thread_enter();
    j->rc = j->a->cupti.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    atomic_store_explicit(&j->done, 1, memory_order_release);
    return NULL;
}

/* Run FlushAll(FORCED) on a helper thread and wait at most timeout: a
 * flush that never returns must not hang the application's exit.  The job
 * is static: a flush left running past the timeout still owns it. */
static int stop_flush(agent *a, uint32_t timeout_ms, bool *timed_out)
{
    static struct flush_job job;
    pthread_t th;
    uint64_t deadline = agent_mono_ns() + ms_to_ns(timeout_ms);

    *timed_out = false;
    job.a = a;
    atomic_store(&job.done, 0);
    job.rc = CUPTI_SUCCESS;
    if (pthread_create(&th, NULL, flush_main, &job) != 0) {
        /* no thread: flush inline (no watchdog) rather than not at all */
        return (int)a->cupti.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    }
    while (!atomic_load_explicit(&job.done, memory_order_acquire)) {
        if (agent_mono_ns() >= deadline) {
            *timed_out = true;
            pthread_detach(th);
            return ETIMEDOUT;
        }
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    pthread_join(th, NULL);
    return (int)job.rc;
}

struct final_arg {
    cupstore_final f;
    cupstore_step steps[CUPSTORE_STEP_MAX];
    unsigned nsteps;
    cupstore_epoch epoch;   /* the open epoch, closed at end_ns */
    agent *a;
    unsigned order;         /* lock-order violations noted with it      */
};

/* The descriptor hold's lock order (agent_fd.h), judged in the final
 * transaction: the session's last write, so every write before it is
 * covered, the health thread's last row included (LMDB has one writer: no
 * other thread's write runs beside this one).  Said in the store's notes
 * with the final status, and in the agent's log. */
static int put_order_note(cupstore_txn *txn, unsigned *order)
{
    cupstore_note n = {.time_ns = agent_real_ns(), .level = 2};
    if (!(*order = agent_fd_order_violations()))
        return 0;
    snprintf(n.text, sizeof n.text, "internal error: %u descriptor holds taken inside a store "
             "write transaction (the lock order agent_fd.h sets; it can deadlock the "
             "application): please report it with this session", *order);
    return cupstore_note_put(txn, &n);
}

static int put_final(cupstore_txn *txn, void *arg)
{
    struct final_arg *x = arg;
    int rc = 0;
    for (unsigned i = 0; i < x->nsteps && rc == 0; i++)
        rc = cupstore_step_put(txn, &x->steps[i]);
    if (rc == 0)
        rc = cupstore_epoch_put(txn, &x->epoch);
    if (rc == 0)
        rc = agent_launches_put(x->a, txn);
    if (rc == 0)
        rc = put_order_note(txn, &x->order);
    if (rc == 0)
        rc = cupstore_final_put(txn, &x->f);
    return rc;
}

static void stop_protocol(agent *a, int exit_path, int detail)
{
    struct final_arg x;
    uint32_t tmo = a->cfg.stop_timeout_ms;
    uint64_t t0;
    bool flush_to = false;
    int rc, ok = 1;

    pthread_mutex_lock(&a->stop.lock);
    if (atomic_load(&a->state) != AGENT_RUNNING) {
        pthread_mutex_unlock(&a->stop.lock);
        return;
    }
    atomic_store(&a->state, AGENT_STOPPING);
    a->stop.exit_path = exit_path;
    a->stop.exit_detail = detail;
    agent_finalize_stop(a);   /* a teardown since the last tick: noted; one pending: not
                                 at the exit */
    memset(&x, 0, sizeof x);
    x.a = a;

    /* 1. disable kinds: no new records */
    t0 = agent_mono_ns();
    if (agent_window_stop(a, tmo))   /* no window opens or closes any more */
        agent_log(a, 1, "the window thread did not end in time");
    else {
        agent_finalize_stop(a);   /* a teardown it armed after the window: not at the exit */
        agent_scope_window_summary(a);
    }
    rc = agent_scope_stop(a);   /* and no range opens any more */
    step_record(&x.steps[x.nsteps++], CUPSTORE_STEP_DISABLE, t0, rc, false, a);
    ok &= rc == 0;

    /* 2. forced flush under the watchdog */
    t0 = agent_mono_ns();
    rc = agent_attached(a) ? stop_flush(a, tmo, &flush_to) : 0;   /* dormant: none */
    step_record(&x.steps[x.nsteps++], CUPSTORE_STEP_FLUSH, t0, rc, flush_to, a);
    x.f.flush_ok = rc == 0;
    ok &= rc == 0;

    /* 3. drain the queue */
    t0 = agent_mono_ns();
    rc = agent_drain(a, tmo, false);
    step_record(&x.steps[x.nsteps++], CUPSTORE_STEP_DRAIN, t0, rc, rc == ETIMEDOUT, a);
    ok &= rc == 0;

    /* 4. commit: the consumer stores its last batch and exits */
    t0 = agent_mono_ns();
    rc = agent_consumer_stop(a, tmo);
    step_record(&x.steps[x.nsteps++], CUPSTORE_STEP_COMMIT, t0, rc, rc != 0, a);
    ok &= rc == 0;

    /* From here nothing consumes: buffers still queued are tail loss (the
     * consumer's unstored batch was counted by agent_consumer_stop).  A
     * completion racing with STOPPED either sees it (and counts its own
     * records as tail) or is waited for here before the queue is walked. */
    atomic_store(&a->state, AGENT_STOPPED);
    for (int spin = 0; atomic_load(&a->cb_inflight) && spin < 10000; spin++) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    uint64_t tail = 0;
    {
        agent_qitem it;
        while (agent_queue_pop(&a->queue, &it)) {
            agent_count_lost(a, it.buf, it.valid, CUPSTORE_LOSS_TAIL);
            agent_count(a, C_BUF_CONSUMED, 1);
            agent_pool_put(&a->pool, (int)it.slot);
        }
    }
    if (rc == EBUSY)
        agent_note(a, 2, "the consumer did not finish a store commit within %u ms: the "
                   "batch it was committing may be stored or refused after this final "
                   "status (tail count uncertain)",
                   tmo > AGENT_STOP_GRACE_MS ? tmo : AGENT_STOP_GRACE_MS);
    for (unsigned d = 0; d < AGENT_DEVS; d++)   /* the session's tail loss */
        for (unsigned k = 0; k < AGENT_KINDS; k++)
            tail += atomic_load(&a->c[agent_c_loss(CUPSTORE_LOSS_TAIL, d, k)]);
    /* Buffers CUPTI never gave back: held when the flush gave up (tail),
     * or, when the flush returned, taken by another client (conflict). */
    bool flushed = x.f.flush_ok || !agent_attached(a);
    uint64_t bound = 0, unreturned = agent_unreturned(a, flushed, &bound);
    x.f.buffers_outstanding = unreturned;
    if (!flushed) {
        x.f.tail_bound = bound;
        if (unreturned && bound)
            agent_note(a, 2, "final forced flush %s: CUPTI still held %llu buffers, at least "
                       "%llu records in them lost (a lower bound, counted as tail)",
                       flush_to ? "did not return in time" : "failed",
                       (unsigned long long)unreturned, (unsigned long long)bound);
        else if (unreturned)
            /* each may be the partial last one of its thread: how many
             * records they held is not known, only that they are lost */
            agent_note(a, 2, "final forced flush %s: CUPTI still held %llu buffers, an "
                       "unknown number of records in them lost (tail; up to their capacity)",
                       flush_to ? "did not return in time" : "failed",
                       (unsigned long long)unreturned);
        else if (flush_to)
            agent_note(a, 2, "final forced flush did not return within %u ms (CUPTI held no "
                       "buffer of the agent's)", tmo);
    } else if (unreturned && !agent_attached(a)) {
        /* detached (a capture range left, a detach): the detach's flush
         * returned what held records; CUPTI may keep an empty one */
        agent_note(a, 1, "%llu buffers handed to CUPTI before the detach never came back "
                   "(not counted as a loss: CUPTI may keep an empty buffer)",
                   (unsigned long long)unreturned);
    } else if (unreturned) {
        /* another client's: how full they were is not known - the
         * emptiest buffer this agent saw says nothing of them (the truth
         * matrix found that estimate above the truth, seed 29000155) -
         * only that each held a record, or the flush would not have
         * completed it */
        bound = unreturned;
        x.f.conflict_bound = bound;
        atomic_fetch_or_explicit(&a->flags_seen, AGENT_SEEN_FOREIGN, memory_order_relaxed);
        agent_note(a, 2, "%llu buffers handed to CUPTI never came back although the final "
                   "flush returned: another CUPTI client took them (at least %llu records "
                   "lost, one a buffer: a lower bound, counted as conflict)", (unsigned long long)unreturned,
                   (unsigned long long)bound);
    }

    /* the ledger's final sweep, before the last health row (which then
     * carries `unrecorded`); unreturned buffers: counted lost (a bound).
     * A consumer that timed out but yielded or was taken over has ended
     * (joined, its batch counted as tail above): its side of the ledger is
     * ours.  Only one orphaned in a commit (EBUSY) still uses it (truth
     * matrix 1105009315060: a slow store, the commit step timed out, and
     * the ledger went unjudged although the consumer had yielded). */
    agent_launches_stop(a, rc != EBUSY, !flushed || agent_attached(a) ? unreturned : 0);

    /* 5. close: the health thread writes its last row (with the tail), then
     * the final status and the steps go in one transaction, synced. */
    t0 = agent_mono_ns();
    if (agent_health_stop(a, tmo) != 0) {
        /* its last row (slow disk) carries the tail: give it the grace a
         * commit gets, or the rows may miss what the final status says */
        rc = agent_health_stop(a, tmo > AGENT_STOP_GRACE_MS ? tmo : AGENT_STOP_GRACE_MS);
        if (rc)
            agent_log(a, 1, "health thread did not write its last row in time");
    }
    x.f.end_ns = agent_real_ns();
    x.f.exit_path = (uint32_t)exit_path;
    x.f.exit_detail = detail;
    x.f.tail_lost = tail;
    x.f.buffers_completed = atomic_load(&a->c[C_BUF_COMPLETED]);
    x.f.buffers_consumed = atomic_load(&a->c[C_BUF_CONSUMED]);
    x.f.records_stored = atomic_load(&a->c[C_RECORDS_STORED]);
    x.f.store_refused = atomic_load(&a->c[C_STORE_REFUSED]);
    for (unsigned l = 0; l < CUPSTORE_LOSS_MAX; l++)
        for (unsigned d = 0; d < AGENT_DEVS; d++)
            for (unsigned k = 0; k < AGENT_KINDS; k++) {
                uint64_t n = atomic_load(&a->c[agent_c_loss(l, d, k)]);
                x.f.loss_total[l] += n;
                x.f.loss_device[l][d] += n;   /* slot AGENT_DEV_NONE: the last */
                if (k != AGENT_KIND_ALL)
                    x.f.loss_kind[l][k] += n;
            }
    (void)agent_health_dropped_est(a, x.f.dropped_kind_est);   /* still running: none */
    step_record(&x.steps[x.nsteps], CUPSTORE_STEP_CLOSE, t0, 0, false, a);
    x.nsteps++;
    x.f.protocol_complete = (uint32_t)ok;
    agent_scope_poll(a);   /* range transitions not yet written (alone now) */
    if (agent_attached(a))   /* contexts the consumer learned last */
        agent_epoch_contexts_written(a, agent_attach_pre_contexts(a));
    agent_epoch_fill(a, &x.epoch);
    x.epoch.end_ns = x.f.end_ns;
    rc = 0;
    if (a->env) {
        rc = agent_store_put(a, put_final, &x, AGENT_PUT_TRIES);
        if (rc) {
            /* refused, whatever the errno (EPERM, EIO, a full tmpfs): the
             * final status goes aside, with this refusal in its count, so
             * a reader never takes a clean exit for a crash */
            int arc;
            x.f.store_refused++;
            if ((arc = agent_reserve_aside(a, &x.f)) != 0)
                agent_log(a, 1, "final status not written aside either: %s", strerror(arc));
        }
        (void)agent_store_sync(a);
    }
    agent_reserve_release(a);
    if (rc)
        agent_log(a, 1, "final status not written: %s", cupstore_strerror(rc));
    if ((x.order = agent_fd_order_violations()) != 0)
        agent_log(a, 1, "internal error: %u descriptor holds taken inside a store write "
                  "transaction (the lock order agent_fd.h sets): please report it", x.order);
    atomic_store(&a->stop.done, 1);
    pthread_mutex_unlock(&a->stop.lock);
}

void agent_stop_run(agent *a, int exit_path, int detail)
{
    sigset_t set, old;

    if (a->session_pid != getpid())
        return;   /* a forked child never touches its parent's session */
    if (agent_thread) {
        stop_protocol(a, exit_path, detail);
        return;
    }
    /* An application thread (atexit, the last context's destruction): a
     * stop signal meanwhile must not run our handler on this thread, where
     * it would wait for this very protocol.  It stays pending until the
     * end, or goes to another thread, whose handler waits for the end. */
    stop_sigset(&set);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    stop_protocol(a, exit_path, detail);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ---- a stop signal the application survived ------------------------------ */

/* The agent stops at a stop signal (the session ends there, exit path
 * "signal").  When the application's handler returns and the process
 * carries on, what it does afterwards is out of scope: the session says
 * so (meta continued_after_signal "SIG NS" and a warning note, written by
 * the stop thread, never in the handler), and at exit the process's exit
 * time (meta process_exit_ns), so readers can say how long was not
 * traced (doc/agent.md, "Stop protocol"). */
struct cont_arg {
    char key[32];
    char val[64];
};

static int put_cont(cupstore_txn *txn, void *arg)
{
    struct cont_arg *c = arg;
    return cupstore_meta_put(txn, c->key, c->val);
}

static void stop_continued_write(agent *a)
{
    struct cont_arg c;
    int sig = atomic_load(&a->stop.continued_sig);
    uint64_t at = atomic_load(&a->stop.continued_ns);
    if (!a->env || a->session_pid != getpid())
        return;
    snprintf(c.key, sizeof c.key, "continued_after_signal");
    snprintf(c.val, sizeof c.val, "%d %llu", sig, (unsigned long long)at);
    (void)agent_store_put(a, put_cont, &c, AGENT_PUT_TRIES);
    agent_note(a, 1, "the application's handler of signal %d returned and the process carried "
               "on: the session ended at the signal, and what the process did after it is not "
               "traced (out of scope)", sig);
    (void)agent_store_sync(a);
}

/* atexit after such a signal: when the process really ended. */
static void stop_continued_exit(agent *a)
{
    struct cont_arg c;
    if (!atomic_load(&a->stop.continued_sig) || !a->env || a->session_pid != getpid())
        return;
    if (atomic_exchange(&a->stop.continued_post, 0))   /* not written yet (no stop thread) */
        stop_continued_write(a);
    snprintf(c.key, sizeof c.key, "process_exit_ns");
    snprintf(c.val, sizeof c.val, "%llu", (unsigned long long)agent_real_ns());
    (void)agent_store_put(a, put_cont, &c, AGENT_PUT_TRIES);
    (void)agent_store_sync(a);
}

/* ---- exit paths ------------------------------------------------------------ */

static void stop_atexit(void)
{
    agent *a = &agent_g;
    int sig = atomic_load(&a->stop.signal);
    if (atomic_load(&a->state) == AGENT_STOPPED && atomic_load(&a->stop.continued_sig)) {
        stop_continued_exit(a);
        return;
    }
    if (sig)
        agent_stop_run(a, CUPSTORE_EXIT_SIGNAL, sig);
    else
        agent_stop_run(a, CUPSTORE_EXIT_RETURN, 0);
}

static void *stop_thread_main(void *arg)
{
    agent *a = arg;
    agent_thread_enter();
    for (;;) {
        while (sem_wait(&a->stop.sem) == -1 && errno == EINTR)
            ;
        if (atomic_load(&a->stop.quit))
            return NULL;
        if (atomic_exchange(&a->stop.continued_post, 0)) {   /* not a stop request */
            stop_continued_write(a);
            continue;
        }
        int sig = atomic_load(&a->stop.signal);
        agent_stop_run(a, sig == SIGABRT ? CUPSTORE_EXIT_ABORT : CUPSTORE_EXIT_SIGNAL, sig);
        atomic_store(&a->stop.done, 1);
    }
}

static int stop_index(int sig)
{
    for (size_t i = 0; i < NSIG_STOP; i++)
        if (stop_signals[i] == sig)
            return (int)i;
    return -1;
}

/* Before the host's handler runs: the signal mask it would have had
 * without the agent (the mask at delivery, its sa_mask, the signal itself
 * unless SA_NODEFER), instead of ours, which blocks every stop signal.
 * Stop signals that arrived during the protocol stay blocked until the
 * host's handler returns: they come after it, as they would have without
 * the protocol's delay.  sigpending and pthread_sigmask are
 * async-signal-safe. */
static void stop_host_mask(const struct sigaction *old, int sig, void *uctx)
{
    const ucontext_t *uc = uctx;
    sigset_t m, pending, stops;
    if (!uc)
        return;   /* called directly, not by the kernel: leave the mask */
    m = uc->uc_sigmask;
    stop_sigset(&stops);
    if (sigpending(&pending) != 0)
        pending = stops;
    for (int s = 1; s < NSIG; s++)
        if (sigismember(&old->sa_mask, s) == 1 ||
            (sigismember(&stops, s) == 1 && sigismember(&pending, s) == 1))
            sigaddset(&m, s);
    if (!(old->sa_flags & SA_NODEFER))
        sigaddset(&m, sig);
    pthread_sigmask(SIG_SETMASK, &m, NULL);
}

/* Wait (bounded) until the stop protocol this signal started, or the one
 * already under way, has ended. */
static void stop_wait_done(agent *a)
{
    /* the protocol steps may each use the timeout, and a consumer's commit
     * in progress its grace (slow disk) */
    uint32_t tmo = a->cfg.stop_timeout_ms;
    uint64_t waited = 0, limit = ms_to_ns(tmo) * 4 +
        ms_to_ns(tmo > AGENT_STOP_GRACE_MS ? tmo : AGENT_STOP_GRACE_MS) + 1000000000ull;
    while (!atomic_load(&a->stop.done) && waited < limit) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        waited += 1000000;
    }
}

/* The application's handler returned after the stop signal that ended the
 * session: the process carries on (async-signal-safe: atomics, sem_post,
 * clock_gettime). */
static void stop_carried_on(agent *a, int sig)
{
    int expect = 0;
    if (!a->stop.up || a->session_pid != getpid() ||
        atomic_load(&a->state) != AGENT_STOPPED || atomic_load(&a->stop.signal) != sig ||
        !atomic_compare_exchange_strong(&a->stop.continued_sig, &expect, sig))
        return;
    atomic_store(&a->stop.continued_ns, agent_real_ns());
    atomic_store(&a->stop.continued_post, 1);
    sem_post(&a->stop.sem);
}

/* Copies of one signal.  `cuptop run` passes on what is sent to it, marked
 * (SI_QUEUE, the original sender's si_pid, AGENT_FORWARD_MAGIC); when the
 * sender signalled the application as well (a process group, every process
 * of a cgroup, kill RUNPID APPPID), both copies arrive here.  Per signal
 * and sender the direct and forwarded copies are counted (one 64-bit word:
 * sender << 32 | direct << 16 | forwarded, changed by CAS, so concurrent
 * handlers on two threads agree): a copy is a new signal only when its
 * count passes the other's.  So the pair is delivered once, a signal sent
 * only to cuptop run (forwarded) or only to the application (direct) is
 * delivered every time, and a sender's second pair is a second signal.
 * The kernel merges a standard signal that arrives while the same one is
 * pending, so one copy of a pair can vanish; its partner would then stay
 * unpaired and swallow the sender's next copy.  So a sender's counts are
 * forgotten STOP_PAIR_NS after its last copy was handled (the partner of
 * a pair arrives with it, or waits blocked while the first is handled,
 * and is delivered as soon as that handler returns). */
#define STOP_SENDERS 8
#define STOP_PAIR_NS 2000000000ull
static _Atomic uint64_t stop_copies[NSIG_STOP][STOP_SENDERS];
static _Atomic uint64_t stop_copies_ns[NSIG_STOP][STOP_SENDERS];   /* last handled */

static uint64_t stop_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);   /* async-signal-safe */
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool stop_repeat(int i, const siginfo_t *info, int *slot)
{
    bool fwd;
    if (!info || info->si_pid <= 0)
        return false;
    if (info->si_code == SI_QUEUE && info->si_value.sival_int == AGENT_FORWARD_MAGIC)
        fwd = true;
    else if (info->si_code == SI_USER)
        fwd = false;
    else
        return false;
    uint64_t pid = (uint32_t)info->si_pid, now = stop_mono_ns();
    for (int k = 0; k < STOP_SENDERS; k++) {
        _Atomic uint64_t *e = &stop_copies[i][k];
        uint64_t cur = atomic_load(e);
        for (;;) {
            uint64_t last = atomic_load(&stop_copies_ns[i][k]);
            bool stale = cur && now > last + STOP_PAIR_NS;
            if (cur == 0 || (stale && cur >> 32 == pid) ||
                (stale && k == STOP_SENDERS - 1)) {
                /* a free (or forgotten) slot: this sender's first copy */
                uint64_t nv = pid << 32 | (fwd ? 1u : 1u << 16);
                if (atomic_compare_exchange_weak(e, &cur, nv)) {
                    atomic_store(&stop_copies_ns[i][k], now);
                    *slot = k;
                    return false;
                }
                continue;
            }
            if (cur >> 32 != pid)
                break;   /* another sender's */
            uint64_t d = cur >> 16 & 0xffff, f = cur & 0xffff;
            if (d == 0xffff || f == 0xffff)
                return false;   /* saturated: deliver */
            if (fwd)
                f++;
            else
                d++;
            if (atomic_compare_exchange_weak(e, &cur, pid << 32 | d << 16 | f)) {
                atomic_store(&stop_copies_ns[i][k], now);
                *slot = k;
                return fwd ? f <= d : d <= f;
            }
        }
    }
    return false;   /* more senders than slots: deliver */
}

static void stop_handler(int sig, siginfo_t *info, void *uctx)
{
    agent *a = &agent_g;
    int saved_errno = errno;
    int i = stop_index(sig);

    int slot = -1;
    if (i >= 0 && stop_repeat(i, info, &slot)) {
        errno = saved_errno;
        return;   /* the other copy of a signal already handled (or being) */
    }

    if (!agent_thread && a->stop.up && a->session_pid == getpid()) {
        int st = atomic_load(&a->state);
        if (st == AGENT_RUNNING) {
            int expect = 0;
            if (atomic_compare_exchange_strong(&a->stop.signal, &expect, sig))
                sem_post(&a->stop.sem);
        }
        /* A second signal while the protocol runs (on another thread: on
         * this one the stop signals are blocked) waits for its end too,
         * rather than chaining to a default action that kills the process
         * in the middle of it. */
        if (st == AGENT_RUNNING || st == AGENT_STOPPING)
            stop_wait_done(a);
    }
    if (slot >= 0)   /* a partner blocked meanwhile comes right after this */
        atomic_store(&stop_copies_ns[i][slot], stop_mono_ns());
    errno = saved_errno;
    if (i < 0)
        return;
    const struct sigaction *old = &stop_old[i];
    if (old->sa_flags & SA_SIGINFO) {
        if (old->sa_sigaction) {
            stop_host_mask(old, sig, uctx);
            old->sa_sigaction(sig, info, uctx);
            stop_carried_on(a, sig);
            if (slot >= 0)
                atomic_store(&stop_copies_ns[i][slot], stop_mono_ns());
        }
    } else if (old->sa_handler == SIG_IGN) {
        return;
    } else if (old->sa_handler == SIG_DFL) {
        /* The host had no handler: die of the signal as it would have.
         * The signal is blocked while we run, so it is delivered (with the
         * default action) as soon as this handler returns. */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
        raise(sig);
    } else {
        stop_host_mask(old, sig, uctx);
        old->sa_handler(sig);
        stop_carried_on(a, sig);
        if (slot >= 0)
            atomic_store(&stop_copies_ns[i][slot], stop_mono_ns());
    }
}

static void stop_install_signals(void)
{
    for (size_t i = 0; i < NSIG_STOP; i++) {
        struct sigaction sa, cur;
        if (stop_installed[i] || sigaction(stop_signals[i], NULL, &cur) != 0)
            continue;
        if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_IGN)
            continue;   /* the host ignores it (nohup): leave it alone */
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = stop_handler;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        stop_sigset(&sa.sa_mask);   /* one stop signal at a time */
        stop_old[i] = cur;
        if (sigaction(stop_signals[i], &sa, NULL) == 0)
            stop_installed[i] = true;
    }
}

/* ---- fork ----------------------------------------------------------------- */

static void atfork_prepare(void)
{
    agent *a = &agent_g;
    /* Hold the locks a child could otherwise inherit in a locked state. */
    pthread_mutex_lock(&a->ctx_lock);
    if (a->pool_ready)
        pthread_mutex_lock(&a->pool.lock);
}

static void atfork_parent(void)
{
    agent *a = &agent_g;
    static atomic_int said;
    if (a->pool_ready)
        pthread_mutex_unlock(&a->pool.lock);
    pthread_mutex_unlock(&a->ctx_lock);
    /* A child's session starts from CUPTI's callbacks (its first context,
     * its first buffer request): without a subscription (another client
     * holds it) only the buffer request is left, so a child whose CUPTI
     * asks for no buffer gets none, and its work would be missing with
     * nothing said.  Once per process. */
    if (atomic_load(&a->state) == AGENT_RUNNING && !a->attach.callbacks &&
        !atomic_exchange(&said, 1))
        agent_note(a, 2, "the process forked while the agent has no CUPTI callbacks (another "
                   "client holds the subscription): a child's CUDA work is traced only if "
                   "its CUPTI asks the agent for a buffer (a session of its own then); its "
                   "contexts are not seen");
}

static void atfork_child(void)
{
    agent *a = &agent_g;
    if (a->pool_ready)
        pthread_mutex_unlock(&a->pool.lock);
    pthread_mutex_unlock(&a->ctx_lock);
    /* None of the parent's threads exist here, and its store env must
     * never be used: forget both.  stop_lock may have been held by a
     * parent thread: re-initialise it.  The child gets a session of its
     * own on its first buffer request or context creation. */
    pthread_mutex_init(&a->stop.lock, NULL);
    agent_scope_forked(a);
    /* The parent's buffers out with CUPTI: the child's CUPTI never writes
     * or returns them (CUDA state does not survive fork): take them back,
     * so the child's session does not count them as never returned. */
    if (a->pool_ready)
        for (uint32_t i = 0; i < atomic_load(&a->pool.allocated); i++)
            if (atomic_load(&a->pool.slots[i].state) == AGENT_SLOT_OUT ||
                atomic_load(&a->pool.slots[i].state) == AGENT_SLOT_TAKEN)
                agent_pool_put(&a->pool, (int)i);
    if (a->discard.slots)
        pthread_mutex_init(&a->discard.lock, NULL);   /* a parent thread may hold it */
    if (a->discard.slots)
        for (uint32_t i = 0; i < atomic_load(&a->discard.allocated); i++)
            if (atomic_load(&a->discard.slots[i].state) == AGENT_SLOT_OUT)
                agent_pool_put(&a->discard, (int)i);
    pthread_mutex_init(&a->reserve.lock, NULL);
    agent_reserve_close(a);   /* the parent's data.mdb: not ours */
    agent_health_forked(a);
    agent_window_forked(a);
    agent_consumer_forked(a);
    a->stop.up = false;
    a->abandoned_env = a->env;
    a->env = NULL;
    sem_init(&a->stop.sem, 0, 0);
    int st = atomic_load(&a->state);
    if (st == AGENT_RUNNING || st == AGENT_STOPPING || st == AGENT_STOPPED)
        atomic_store(&a->state, AGENT_CHILD);
}

/* A late attach (a control request, a capture range): CUDA registered its
 * own exit handlers after ours, so at exit they would run first and tear
 * CUPTI down before our protocol disables and flushes it (seen on the H200:
 * cuptiActivityDisable from the atexit protocol crashed inside libcupti).
 * atexit runs handlers last-in first-out: registering ours again now puts
 * the stop protocol before CUDA's teardown.  Once per process; the
 * protocol runs once whichever registration comes first. */
void agent_stop_atexit_late(void)
{
    static atomic_int again;
    if (!atomic_exchange(&again, 1))
        atexit(stop_atexit);
}

void agent_stop_install(agent *a)
{
    static bool once;
    if (!a->stop.up) {
        if (sem_init(&a->stop.sem, 0, 0) == 0 &&
            pthread_create(&a->stop.th, NULL, stop_thread_main, a) == 0)
            a->stop.up = true;
    }
    if (once)
        return;
    once = true;
    atexit(stop_atexit);
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    stop_install_signals();
}

void agent_stop_lock(agent *a)
{
    pthread_mutex_lock(&a->stop.lock);
}

void agent_stop_unlock(agent *a)
{
    pthread_mutex_unlock(&a->stop.lock);
}

bool agent_stop_trylock(agent *a)
{
    return pthread_mutex_trylock(&a->stop.lock) == 0;
}

void agent_stop_reset(agent *a)
{
    atomic_store(&a->stop.done, 0);
    atomic_store(&a->stop.signal, 0);
    a->stop.exit_path = CUPSTORE_EXIT_UNKNOWN;
    a->stop.exit_detail = 0;
}

int agent_stop_exit_path(const agent *a)
{
    return a->stop.exit_path;
}
