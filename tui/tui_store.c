/* tui_store.c - the sessions snapshot: every session's state, verdict and
 * last second, refreshed once per frame with one short read txn each. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui_int.h"

int tui_store_init(tui_store *st, const char *dir, bool ascii, char **cause)
{
    memset(st, 0, sizeof *st);
    st->ascii = ascii;
    int rc = cupstore_dir_resolve(dir, &st->dir);
    if (rc != 0) {
        *cause = tui_strdupf("cannot find the store directory: %s", cupstore_strerror(rc));
        return rc;
    }
    return 0;
}

static void sess_clear(tui_sess *s)
{
    if (s->env)
        cupstore_env_close(s->env);
    if (s->have_sum)
        model_summary_free(&s->sum);
    free(s->id);
    free(s->cause);
    memset(s, 0, sizeof *s);
}

void tui_store_free(tui_store *st)
{
    for (size_t i = 0; i < st->n; i++)
        sess_clear(&st->s[i]);
    free(st->s);
    free(st->dir);
    memset(st, 0, sizeof *st);
}

long tui_store_find(const tui_store *st, const char *id)
{
    long found = -1;
    size_t len = strlen(id);
    for (size_t i = 0; i < st->n; i++) {
        if (strcmp(st->s[i].id, id) == 0)
            return (long)i;
        if (strncmp(st->s[i].id, id, len) == 0) {
            if (found >= 0)
                return -1;   /* ambiguous prefix */
            found = (long)i;
        }
    }
    return found;
}

int tui_summary_stale(bool have_sum, model_state state, uint64_t sum_at, uint64_t sum_hb,
                      bool sum_final, uint64_t now_s, uint64_t hb_ns, bool has_final)
{
    if (!have_sum || has_final != sum_final)
        return TUI_SUM_REQUIRED;
    if (state == MODEL_STATE_ENDED)
        return TUI_SUM_FRESH;                  /* ended sessions never change */
    if (hb_ns != sum_hb) {
        if (state != MODEL_STATE_RUNNING)
            return TUI_SUM_REQUIRED;           /* it came back to life       */
        /* A live session: new data every second.  Re-judge it every 2 s;
         * the per-second figures come from the last health row anyway. */
        return now_s >= sum_at + 2 ? TUI_SUM_PERIODIC : TUI_SUM_FRESH;
    }
    /* Same heartbeat: a running session turns crashed once it is stale. */
    if (state == MODEL_STATE_RUNNING && now_s > hb_ns / 1000000000u + MODEL_STALE_SECONDS &&
        now_s != sum_at)
        return TUI_SUM_REQUIRED;
    /* Stopped or not responding: its process may end (crashed) without a
     * new heartbeat: look again every 2 s. */
    if (model_state_live(state) && state != MODEL_STATE_RUNNING)
        return now_s >= sum_at + 2 ? TUI_SUM_PERIODIC : TUI_SUM_FRESH;
    return TUI_SUM_FRESH;
}

tui_sess_state tui_sess_state_of(const tui_sess *s)
{
    if (s->open_err || !s->have_sum)
        return TUI_ST_UNREADABLE;
    switch (s->sum.state) {
    case MODEL_STATE_RUNNING:
        return TUI_ST_RUNNING;
    case MODEL_STATE_STOPPED:
        return TUI_ST_STOPPED;
    case MODEL_STATE_NOT_RESPONDING:
        return TUI_ST_NOT_RESPONDING;
    case MODEL_STATE_CRASHED:
        return TUI_ST_CRASHED;
    case MODEL_STATE_ENDED:
        return s->sum.complete ? TUI_ST_COMPLETE : TUI_ST_INCOMPLETE;
    case MODEL_STATE_MAX:
        break;
    }
    return TUI_ST_UNREADABLE;
}

const char *tui_sess_state_name(tui_sess_state s)
{
    static const char *const names[TUI_ST_MAX] = {
        [TUI_ST_RUNNING] = "running",       [TUI_ST_STOPPED] = "stopped",
        [TUI_ST_NOT_RESPONDING] = "not responding", [TUI_ST_COMPLETE] = "complete",
        [TUI_ST_INCOMPLETE] = "incomplete", [TUI_ST_CRASHED] = "crashed",
        [TUI_ST_UNREADABLE] = "unreadable",
    };
    return (unsigned)s < TUI_ST_MAX ? names[s] : "?";
}

static int sess_open(tui_sess *s, const char *dir, bool writable)
{
    if (s->env && (s->writable || !writable))
        return 0;
    if (s->env) {
        cupstore_env_close(s->env);   /* one env per session per process */
        s->env = NULL;
    }
    int rc = cupstore_session_open(&s->env, dir, s->id, writable ? 0 : CUPSTORE_RDONLY);
    if (rc != 0) {
        s->env = NULL;
        return rc;
    }
    s->writable = writable;
    return 0;
}

cupstore_env *tui_store_env(tui_store *st, size_t i, bool writable, int *err)
{
    if (i >= st->n)
        return NULL;
    /* a session whose reads faulted is not opened for the dashboard */
    int rc = st->s[i].faulted ? CUPSTORE_EFAULT : sess_open(&st->s[i], st->dir, writable);
    if (err)
        *err = rc;
    return rc == 0 ? st->s[i].env : NULL;
}

void tui_store_release(tui_store *st, size_t i)
{
    if (i < st->n && st->s[i].env) {
        cupstore_env_close(st->s[i].env);
        st->s[i].env = NULL;
        st->s[i].writable = false;
    }
}

struct last_losses {
    uint64_t *dev;
};

static int last_loss_cb(const cupstore_loss_row *r, void *arg)
{
    struct last_losses *ll = arg;
    if (!r->estimate && r->device < CUPSTORE_DEVICE_MAX)
        ll->dev[r->device] += r->count;
    return 0;
}

/* One short read txn: last health row, final status, last second's exact
 * losses by device. */
static int sess_peek(tui_sess *s)
{
    cupstore_txn *txn;
    int rc = cupstore_txn_begin(s->env, false, &txn);
    if (rc != 0)
        return rc;
    rc = cupstore_health_last(txn, &s->last);
    s->have_last = rc == 0;
    if (rc != 0 && rc != CUPSTORE_ENOTFOUND)
        goto out;
    cupstore_final fin;
    rc = cupstore_final_get(txn, &fin);
    s->has_final = rc == 0;
    if (rc != 0 && rc != CUPSTORE_ENOTFOUND)
        goto out;
    memset(s->drops_dev, 0, sizeof s->drops_dev);
    rc = 0;
    if (s->have_last) {
        struct last_losses ll = {s->drops_dev};
        rc = cupstore_loss_scan(txn, s->last.second, s->last.second, last_loss_cb, &ll);
    }
out:
    cupstore_txn_abort(txn);
    return rc;
}

static void sess_describe(tui_sess *s, bool ascii)
{
    model_sanitize(s->sum.cmdline, strlen(s->sum.cmdline), s->cmd, sizeof s->cmd, ascii);
    if (!s->cmd[0])
        snprintf(s->cmd, sizeof s->cmd, "?");
    /* The sessions list shows the program without its directory (as ps
     * and htop do by default): a deep build path would push the arguments
     * out of the column.  Filtering and the dashboard keep the full line. */
    s->cmd_prog = 0;
    for (size_t i = 0; s->cmd[i] && s->cmd[i] != ' '; i++)
        if (s->cmd[i] == '/' && s->cmd[i + 1] && s->cmd[i + 1] != ' ')
            s->cmd_prog = i + 1;
    size_t o = 0;
    s->devices[0] = '\0';
    for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX && o + 4 < sizeof s->devices; d++)
        if (s->sum.device_mask & (1u << d))
            o += (size_t)snprintf(s->devices + o, sizeof s->devices - o, "%s%u", o ? "," : "",
                                  d);
    if (!o)
        snprintf(s->devices, sizeof s->devices, "-");
}

static int sess_refresh(tui_store *st, tui_sess *s, uint64_t now_ns, int *periodic_budget)
{
    int rc = sess_open(s, st->dir, false);
    if (rc == 0)
        rc = sess_peek(s);
    if (rc != 0) {
        s->open_err = rc;
        free(s->cause); /* the code says it all (model_strerror) */
        s->cause = NULL;
        return rc;
    }
    s->open_err = 0;
    uint64_t now_s = now_ns / 1000000000u;
    uint64_t hb = s->have_last ? s->last.heartbeat_ns : 0;
    int need = tui_summary_stale(s->have_sum, s->sum.state, s->sum_at, s->sum_hb, s->sum_final,
                                 now_s, hb, s->has_final);
    if (need == TUI_SUM_FRESH)
        return 0;
    if (need == TUI_SUM_PERIODIC) {
        /* Spread periodic re-judging over frames: one per frame. */
        if (*periodic_budget <= 0)
            return 0;
        (*periodic_budget)--;
    }
    model_summary sum;
    char *cause = NULL;
    memset(&sum, 0, sizeof sum);
    rc = model_summarize(s->env, 0, UINT64_MAX, &sum, &cause);
    st->summaries++;
    free(s->cause);
    s->cause = cause; /* shown when the session cannot be read */
    if (rc != 0) {
        s->open_err = rc;
        return rc;
    }
    if (s->have_sum)
        model_summary_free(&s->sum);
    s->sum = sum;
    s->have_sum = true;
    s->sum_at = now_s;
    s->sum_hb = hb;
    s->sum_final = s->has_final;
    sess_describe(s, st->ascii);
    return 0;
}

struct refresh_args {
    tui_store *st;
    tui_sess *s;
    uint64_t now_ns;
    int *budget;
};

static int sess_refresh_run(void *arg)
{
    struct refresh_args *a = arg;
    return sess_refresh(a->st, a->s, a->now_ns, a->budget);
}

/* sess_refresh under the store's read-fault guard: a damaged page of one
 * session makes that row UNREADABLE (named, with why), never the monitor
 * exit (DESIGN invariant 11).  A faulted session is not read again until
 * its data file changes: what a faulted read allocated is lost. */
static void sess_refresh_guarded(tui_store *st, tui_sess *s, uint64_t now_ns, int *budget)
{
    cupstore_stamp now;
    bool stamped = cupstore_session_stamp(st->dir, s->id, &now) == 0;
    if (s->faulted && stamped && cupstore_stamp_equal(&now, &s->fault_stamp))
        return;
    s->faulted = false;
    cupstore_env *before = s->env;
    struct refresh_args a = {st, s, now_ns, budget};
    if (cupstore_guarded(sess_refresh_run, &a) != CUPSTORE_EFAULT)
        return;
    if (before && s->env == before)
        cupstore_env_close(s->env); /* an env the refresh opened: closed by the guard */
    s->env = NULL;
    s->writable = false;
    s->faulted = true;
    s->fault_stamp = now;
    s->open_err = CUPSTORE_EFAULT;
    free(s->cause);
    s->cause = tui_strdupf("session %s: %s", s->id, model_fault_text());
}

static int sess_add(tui_store *st, const char *id)
{
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 16;
        tui_sess *n = realloc(st->s, cap * sizeof *n);
        if (!n)
            return ENOMEM;
        st->s = n;
        st->cap = cap;
    }
    tui_sess *s = &st->s[st->n];
    memset(s, 0, sizeof *s);
    s->id = strdup(id);
    if (!s->id)
        return ENOMEM;
    s->seen = true;
    st->n++;
    return 0;
}

int tui_store_refresh(tui_store *st, uint64_t now_ns, char **cause)
{
    char **ids = NULL;
    size_t nids = 0;
    st->summaries = 0;
    int rc = cupstore_dir_sessions(st->dir, &ids, &nids);
    if (rc == ENOENT) {
        st->missing = true;
        return 0;
    }
    if (rc != 0) {
        *cause = tui_strdupf("cannot read the store %s: %s", st->dir, cupstore_strerror(rc));
        return rc;
    }
    st->missing = false;
    for (size_t i = 0; i < st->n; i++)
        st->s[i].seen = false;
    for (size_t k = 0; k < nids; k++) {
        long i = -1;
        for (size_t j = 0; j < st->n; j++)
            if (strcmp(st->s[j].id, ids[k]) == 0)
                i = (long)j;
        if (i >= 0) {
            st->s[i].seen = true;
        } else if ((rc = sess_add(st, ids[k])) != 0) {
            cupstore_ids_free(ids, nids);
            *cause = tui_strdupf("out of memory");
            return rc;
        }
    }
    cupstore_ids_free(ids, nids);
    /* Sessions removed from the directory disappear; order stays stable. */
    size_t o = 0;
    for (size_t i = 0; i < st->n; i++) {
        if (st->s[i].seen)
            st->s[o++] = st->s[i];
        else
            sess_clear(&st->s[i]);
    }
    st->n = o;
    /* Start the round-robin where the last frame stopped so that every
     * live session gets its periodic re-judge in turn. */
    int budget = 1;
    for (size_t k = 0; k < st->n; k++) {
        size_t i = (st->rr + k) % st->n;
        int before = budget;
        sess_refresh_guarded(st, &st->s[i], now_ns, &budget);   /* errors show per row */
        if (before && !budget)
            st->rr = i + 1;
    }
    return 0;
}
