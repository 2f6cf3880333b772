/*
 * agent_window.c - the window thread (agent_window.h): periodic capture
 * windows aligned to multiples of the period on the wall clock.
 *
 * The thread plans the next whole window (the first boundary at or after
 * the schedule began: never a partial first window, so every process
 * collects the same seconds), sleeps until its open with an absolute
 * CLOCK_REALTIME deadline, opens it, sleeps until its close, closes it,
 * and plans the next.  A thread that wakes after a window's close (the
 * machine was suspended) skips to the next whole window.  The transitions
 * themselves are agent_scope_window's, under range_lock.
 */
#include "config.h"

#include <errno.h>
#include <time.h>

#include "agent_int.h"
#include "agent_window.h"

#define MS_NS 1000000ull

/* The first multiple of period_ns at or after now. */
static uint64_t window_align(uint64_t now, uint64_t period_ns)
{
    return (now + period_ns - 1) / period_ns * period_ns;
}

/* Sleep until the deadline, a schedule change or the quit; lock held. */
static void window_wait(agent_window_state *w, uint64_t due)
{
    if (!due) {
        pthread_cond_wait(&w->cond, &w->lock);
        return;
    }
    struct timespec ts = {(time_t)(due / 1000000000ull), (long)(due % 1000000000ull)};
    (void)pthread_cond_timedwait(&w->cond, &w->lock, &ts);
}

static void *window_main(void *arg)
{
    agent *a = arg;
    agent_window_state *w = &a->window;
    uint32_t gen = 0, period = 0, win = 0;
    uint64_t open_at = 0;
    bool is_open = false;

    agent_thread_enter();
    pthread_mutex_lock(&w->lock);
    gen = w->gen - 1;   /* plan at once */
    while (!w->quit) {
        if (gen != w->gen) {
            /* a new schedule: the scope closed a window open under the
             * old one (agent_scope_every); plan the next whole window */
            gen = w->gen;
            period = w->period_ms;
            win = w->window_ms;
            is_open = false;
            open_at = period ? window_align(agent_real_ns(), period * MS_NS) : 0;
        }
        uint64_t due = !period ? 0 : is_open ? open_at + win * MS_NS : open_at;
        if (!due || agent_real_ns() < due) {
            window_wait(w, due);
            continue;
        }
        pthread_mutex_unlock(&w->lock);
        agent_scope_window(a, !is_open, due, period, win);
        pthread_mutex_lock(&w->lock);
        if (gen != w->gen)
            continue;   /* replaced meanwhile: replan (the scope refused it) */
        if (!is_open) {
            is_open = true;
            continue;
        }
        is_open = false;
        open_at += period * MS_NS;
        uint64_t now = agent_real_ns();
        if (open_at + win * MS_NS <= now)   /* slept through it: the next whole one */
            open_at = window_align(now, period * MS_NS);
        if (gen == w->gen) {
            pthread_mutex_unlock(&w->lock);
            agent_scope_window_rest(a, open_at);   /* dormant until the next */
            pthread_mutex_lock(&w->lock);
        }
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* The schedule, and the thread started on first use. */
static int window_schedule(agent *a, uint32_t period_ms, uint32_t window_ms)
{
    agent_window_state *w = &a->window;
    int rc = 0;
    pthread_mutex_lock(&w->lock);
    w->period_ms = period_ms;
    w->window_ms = window_ms;
    w->gen++;
    w->quit = false;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    if (!w->up && period_ms) {
        rc = pthread_create(&w->th, NULL, window_main, a);
        w->up = rc == 0;
    }
    return rc;
}

int agent_window_start(agent *a)
{
    if (a->cfg.capture != AGENT_CAPTURE_EVERY)
        return 0;
    return window_schedule(a, a->cfg.capture_period_ms, a->cfg.capture_window_ms);
}

void agent_window_set(agent *a, uint32_t period_ms, uint32_t window_ms)
{
    if (window_schedule(a, period_ms, window_ms))
        agent_note(a, 2, "periodic windows: cannot start the window thread; no window opens");
}

int agent_window_stop(agent *a, uint32_t timeout_ms)
{
    agent_window_state *w = &a->window;
    struct timespec ts;
    if (!w->up)
        return 0;
    pthread_mutex_lock(&w->lock);
    w->quit = true;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    agent_deadline(&ts, timeout_ms);
    int rc = pthread_timedjoin_np(w->th, NULL, &ts);
    if (rc == 0)
        w->up = false;
    return rc;
}

void agent_window_forked(agent *a)
{
    pthread_mutex_init(&a->window.lock, NULL);
    pthread_cond_init(&a->window.cond, NULL);
    a->window.up = false;
    a->window.quit = false;
    /* the child's session counts its own rests (the summary note) */
    a->scope.rest_torn = a->scope.rest_undrained = a->scope.rest_kept = a->scope.rest_short = 0;
}
