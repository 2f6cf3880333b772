/*
 * exporter_scan.c - what one scrape reads: every session of every store,
 * judged by the model (state, verdict, records and losses, exactly what
 * `cuptop sessions --json` says) plus the health-row figures the model does
 * not sum (buffers requested/declined, the last row's pool and queue, the
 * latencies) and, once ended, the stop protocol's steps.
 *
 * Cost stays bounded per scrape: each session's env is opened once and
 * kept; a scrape reads a session only when its last health row or final
 * status changed (or it is running: its state depends on the clock), in
 * short read transactions; health-row sums are kept and extended by the
 * rows written since the last scrape; an ended session is read once more
 * at its end, then served from memory (its env closed) until it has been
 * over for the retention time, after which it is not exported (and never
 * read again).  Sessions past the cap are counted, not exported.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exporter.h"
#include "exporter_int.h"

typedef struct entry {
    size_t store;               /* index in exporter.stores               */
    char *id;
    cupstore_env *env;          /* open while the session may change      */
    model_live live;            /* the model's summary, kept incrementally */
    bool have;                  /* snap is valid                          */
    bool final;                 /* ended: snap is the session's last word */
    bool expired;               /* past retention: not exported, not read */
    bool seen;                  /* listed in this scrape                  */
    exp_sess snap;
    uint64_t tally_to;          /* health rows <= this second are summed  */
    bool tally_any;
    uint64_t last_hb;           /* last row's heartbeat at the last read  */
    uint64_t last_second;
    /* A read of it faulted (a damaged page): left out, and not read again
     * until its data file changes (what the faulted read had allocated
     * is lost each time: cupstore_guarded). */
    bool faulted;
    cupstore_stamp fault_stamp;
    /* Its judgement failed and stderr said why: said again only after a
     * read that succeeds (one line per failure, not one per scrape). */
    bool told;
} entry;

struct exporter {
    char **stores;
    size_t nstores;
    uint64_t retention_s;
    size_t max_sessions;
    bool full_rejudge;
    entry *e;
    size_t n, cap, sorted;
    uint64_t scrapes, read_errors;
};

static uint64_t now_ns(int clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int exporter_new(exporter **out, const exporter_opts *o)
{
    exporter *e = calloc(1, sizeof *e);
    if (!e)
        return ENOMEM;
    e->retention_s = o->retention_s;
    e->max_sessions = o->max_sessions;
    e->full_rejudge = o->full_rejudge;
    e->stores = calloc(o->nstores ? o->nstores : 1, sizeof *e->stores);
    if (!e->stores) {
        free(e);
        return ENOMEM;
    }
    for (size_t i = 0; i < o->nstores; i++) {
        if (!(e->stores[i] = strdup(o->stores[i]))) {
            e->nstores = i;
            exporter_free(e);
            return ENOMEM;
        }
    }
    e->nstores = o->nstores;
    *out = e;
    return 0;
}

static void entry_close(entry *en)
{
    if (en->env)
        cupstore_env_close(en->env);
    en->env = NULL;
    model_live_free(&en->live);
}

void exporter_free(exporter *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->n; i++) {
        entry_close(&e->e[i]);
        free(e->e[i].id);
    }
    free(e->e);
    for (size_t i = 0; i < e->nstores; i++)
        free(e->stores[i]);
    free(e->stores);
    free(e);
}

static int entry_cmp(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->store != y->store)
        return x->store < y->store ? -1 : 1;
    return strcmp(x->id, y->id);
}

/* Entries [0, e->sorted) are in entry_cmp order (binary search); those
 * added since the last scrape follow them (a short linear search). */
static entry *entry_find(exporter *e, size_t store, const char *id)
{
    entry key = {.store = store, .id = (char *)id};
    entry *hit = e->sorted ? bsearch(&key, e->e, e->sorted, sizeof *e->e, entry_cmp) : NULL;
    if (hit)
        return hit;
    for (size_t i = e->sorted; i < e->n; i++)
        if (e->e[i].store == store && strcmp(e->e[i].id, id) == 0)
            return &e->e[i];
    if (e->n == e->cap) {
        size_t nc = e->cap ? e->cap * 2 : 64;
        entry *ne = realloc(e->e, nc * sizeof *ne);
        if (!ne)
            return NULL;
        e->e = ne;
        e->cap = nc;
    }
    entry *en = &e->e[e->n];
    memset(en, 0, sizeof *en);
    if (!(en->id = strdup(id)))
        return NULL;
    en->store = store;
    e->n++;
    return en;
}

/* ---- Reading one session ------------------------------------------------ */

static void meta_label(cupstore_txn *txn, const char *key, char *dst, size_t len)
{
    char *v = NULL;
    dst[0] = '\0';
    if (cupstore_meta_get(txn, key, &v) == 0 && v)
        model_escape(dst, len, v, strlen(v));
    free(v);
}

static int tally_row(const cupstore_health *h, void *arg)
{
    exp_sess *s = arg;
    s->buf_requested += h->buf_requested;
    s->buf_provided += h->buf_provided;
    s->buf_declined += h->buf_declined;
    s->buf_foreign += h->buf_foreign;
    s->bytes_delivered += h->bytes_delivered;
    s->records_stored += h->records_stored;
    s->req_lat_count += h->req_lat.count;
    s->cmp_lat_count += h->cmp_lat.count;
    s->commit_lat_count += h->commit_lat.count;
    return 0;
}

struct stop_ctx {
    exp_sess *s;
    uint64_t first, last;
};

static int stop_row(const cupstore_step *st, void *arg)
{
    struct stop_ctx *c = arg;
    if (st->step >= CUPSTORE_STEP_MAX)
        return 0;
    uint64_t a = st->start_mono_ns, b = st->end_mono_ns > a ? st->end_mono_ns : a;
    c->s->step_seen[st->step] = true;
    c->s->step_s[st->step] = (double)(b - a) / 1e9;
    if (!c->s->have_stop || a < c->first)
        c->first = a;
    if (!c->s->have_stop || b > c->last)
        c->last = b;
    c->s->have_stop = true;
    return 0;
}

/* The launch ledger's result: launched and arrived per kind, missing per
 * device and kind (the streams' holes summed; what is missing on no named
 * stream counts under no device). */
static int read_ledger(cupstore_txn *txn, exp_sess *s)
{
    model_ledger *l = malloc(sizeof *l);
    if (!l)
        return ENOMEM;
    int rc = model_ledger_read(txn, l);
    s->have_ledger = rc == 0 && l->present;
    memset(s->ledger_missing, 0, sizeof s->ledger_missing);
    for (unsigned k = 0; s->have_ledger && k < MODEL_LEDGER_KINDS; k++) {
        uint64_t named = 0;
        s->ledger_launched[k] = l->expected[k];
        s->ledger_arrived[k] = l->matched[k];
        for (unsigned i = 0; i < l->nstreams; i++) {
            unsigned d = l->stream[i].device < CUPSTORE_DEVICE_MAX ? l->stream[i].device
                                                                   : CUPSTORE_DEVICE_MAX;
            s->ledger_missing[d][k] += l->stream[i].missing[k];
            named += l->stream[i].missing[k];
        }
        if (l->missing[k] > named)
            s->ledger_missing[CUPSTORE_DEVICE_MAX][k] += l->missing[k] - named;
    }
    free(l);
    return rc;
}

/* The figures outside the model: health-row sums (extended from tally_to,
 * or from the start when `from_start`), the last row, metadata labels and,
 * when ended, the stop steps.  One short read transaction. */
static int read_extra(entry *en, exp_sess *s, bool from_start)
{
    cupstore_txn *txn;
    int rc = cupstore_txn_begin(en->env, false, &txn);
    if (rc)
        return rc;
    meta_label(txn, "label", s->label, sizeof s->label);
    if (from_start) {
        s->buf_requested = s->buf_provided = s->buf_declined = s->buf_foreign = 0;
        s->bytes_delivered = s->records_stored = 0;
        s->req_lat_count = s->cmp_lat_count = s->commit_lat_count = 0;
        en->tally_any = false;
    }
    uint64_t from = en->tally_any ? en->tally_to + 1 : 0;
    rc = cupstore_health_last(txn, &s->last);
    if (rc == 0) {
        s->have_last = true;
        if (!en->tally_any || s->last.second > en->tally_to)
            rc = cupstore_health_scan(txn, from, s->last.second, tally_row, s);
        if (rc == 0) {
            en->tally_to = s->last.second;
            en->tally_any = true;
        }
    } else if (rc == CUPSTORE_ENOTFOUND) {
        s->have_last = false;
        rc = 0;
    }
    if (rc == 0 && s->state == MODEL_STATE_ENDED)
        rc = read_ledger(txn, s);
    if (rc == 0 && s->state == MODEL_STATE_ENDED) {
        struct stop_ctx c = {.s = s};
        s->have_stop = false;
        rc = cupstore_step_scan(txn, stop_row, &c);
        if (s->have_stop)
            s->stop_s = (double)(c.last - c.first) / 1e9;
    }
    cupstore_txn_abort(txn);
    return rc;
}

/* Has anything changed since the last read?  (One short transaction.) */
static int changed(entry *en, bool *yes)
{
    cupstore_txn *txn;
    cupstore_health h;
    cupstore_final f;
    int rc = cupstore_txn_begin(en->env, false, &txn);
    if (rc)
        return rc;
    *yes = false;
    rc = cupstore_health_last(txn, &h);
    if (rc == 0 && (h.heartbeat_ns != en->last_hb || h.second != en->last_second))
        *yes = true;
    if (rc == CUPSTORE_ENOTFOUND)
        rc = 0;
    if (rc == 0) {
        rc = cupstore_final_get(txn, &f);
        if (rc == 0)
            *yes = true;
        else if (rc == CUPSTORE_ENOTFOUND)
            rc = 0;
    }
    cupstore_txn_abort(txn);
    return rc;
}

static int session_read(exporter *e, entry *en)
{
    int rc;
    if (!en->env &&
        (rc = cupstore_session_open(&en->env, e->stores[en->store], en->id, CUPSTORE_RDONLY)))
        return rc;
    /* a crashed session whose rows have not moved says the same again */
    if (en->have && en->snap.state == MODEL_STATE_CRASHED) {
        bool yes;
        if ((rc = changed(en, &yes)) != 0)
            return rc;
        if (!yes)
            return 0;
    }
    char *cause = NULL;
    if (e->full_rejudge)
        model_live_free(&en->live); /* the next update starts from scratch */
    rc = model_live_update(en->env, &en->live, &cause);
    if (rc && !en->told)
        fprintf(stderr, "cuptop exporter: in %s: %s\n", e->stores[en->store],
                cause ? cause : model_strerror(rc));
    en->told = rc != 0;
    free(cause);
    if (rc)
        return rc;
    const model_summary *m = &en->live.sum;
    exp_sess *s = &en->snap;
    bool was_final = en->final;
    snprintf(s->id, sizeof s->id, "%s", m->id);
    s->pid = m->pid;
    model_escape(s->host, sizeof s->host, m->host, strlen(m->host));
    exp_command_short(s->command, sizeof s->command, m->cmdline);
    s->state = m->state;
    s->complete = m->complete;
    s->start_ns = m->start_ns;
    s->end_ns = m->end_ns;
    s->heartbeat_ns = m->heartbeat_ns;
    memcpy(s->records_by_kind, m->records_by_kind, sizeof s->records_by_kind);
    memcpy(s->records_by_device, m->records_by_device, sizeof s->records_by_device);
    s->device_mask = m->device_mask;
    memcpy(s->loss, m->loss, sizeof s->loss);
    memcpy(s->loss_estimate, m->loss_estimate, sizeof s->loss_estimate);
    memcpy(s->loss_bound, m->loss_bound, sizeof s->loss_bound);
    memcpy(s->loss_at_most, m->loss_at_most, sizeof s->loss_at_most);
    memcpy(s->loss_by_device, m->loss_by_device, sizeof s->loss_by_device);
    for (unsigned d = 0; d <= MODEL_DEVICE_NONE; d++)
        s->device_listed[d] = model_device_listed(m, d);
    /* the job only when it is not the session's own (no new information) */
    if (m->job_own)
        s->job[0] = '\0';
    else
        model_escape(s->job, sizeof s->job, m->job, strlen(m->job));
    if (m->rank >= 0)
        snprintf(s->rank, sizeof s->rank, "%d", m->rank);
    else
        s->rank[0] = '\0';
    s->buf_completed = m->buf_completed;
    s->buf_consumed = m->buf_consumed;
    en->final = s->state == MODEL_STATE_ENDED;
    /* At the end, sum the rows again from the start: the final row may
     * rewrite a second already summed. */
    rc = read_extra(en, s, !en->have || (en->final && !was_final));
    if (rc)
        return rc;
    en->last_hb = s->have_last ? s->last.heartbeat_ns : 0;
    en->last_second = s->have_last ? s->last.second : 0;
    en->have = true;
    if (en->final)
        entry_close(en); /* nothing more will be written */
    return 0;
}

struct guarded_read {
    exporter *e;
    entry *en;
};

static int session_read_run(void *arg)
{
    struct guarded_read *g = arg;
    return session_read(g->e, g->en);
}

/* session_read under the store's read-fault guard: a damaged page of one
 * session leaves that session out, never the scrape (DESIGN invariant
 * 11).  A faulted session is named on stderr once per version of its
 * data file and not read again until the file changes. */
static int session_read_guarded(exporter *e, entry *en)
{
    cupstore_stamp now;
    bool stamped = cupstore_session_stamp(e->stores[en->store], en->id, &now) == 0;
    if (en->faulted) {
        if (stamped && cupstore_stamp_equal(&now, &en->fault_stamp))
            return CUPSTORE_EFAULT;
        en->faulted = false; /* changed: worth another read */
    }
    struct guarded_read g = {e, en};
    cupstore_env *before = en->env;
    int rc = cupstore_guarded(session_read_run, &g);
    if (rc == CUPSTORE_EFAULT) {
        /* an env opened by this read was closed by the guard; one kept
         * from an earlier scrape maps damaged data: closed here */
        if (before && en->env == before)
            cupstore_env_close(en->env);
        en->env = NULL;
        en->faulted = true;
        en->fault_stamp = now;
        fprintf(stderr, "cuptop exporter: session %s in %s: %s\n", en->id,
                e->stores[en->store], model_fault_text());
    }
    return rc;
}

/* ---- One scrape ------------------------------------------------------------ */

static int rank_of(const exp_sess *s)
{
    return model_state_live(s->state) ? 0 : s->state == MODEL_STATE_CRASHED ? 1 : 2;
}

/* Exported first: running, then crashed, then ended; newest first. */
static int pick_cmp(const void *a, const void *b)
{
    const exp_sess *x = *(const exp_sess *const *)a, *y = *(const exp_sess *const *)b;
    if (rank_of(x) != rank_of(y))
        return rank_of(x) - rank_of(y);
    if (x->start_ns != y->start_ns)
        return x->start_ns > y->start_ns ? -1 : 1;
    return strcmp(x->id, y->id);
}

static int id_cmp(const void *a, const void *b)
{
    const exp_sess *x = a, *y = b;
    return strcmp(x->id, y->id);
}

/* List every store's sessions into e's entries (new ones added), forget
 * those no longer listed (deleted, or their store unreadable: counted in
 * self), sort.  0 or ENOMEM. */
static int scrape_list(exporter *e, exp_self *self)
{
    for (size_t i = 0; i < e->n; i++)
        e->e[i].seen = false;
    for (size_t st = 0; st < e->nstores; st++) {
        char **ids = NULL;
        size_t n = 0;
        if (cupstore_dir_sessions(e->stores[st], &ids, &n) != 0) {
            self->stores_unreadable++;
            e->read_errors++;
            /* its sessions are not listed: keep nothing of them */
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            entry *en = entry_find(e, st, ids[i]);
            if (!en) {
                cupstore_ids_free(ids, n);
                return ENOMEM;
            }
            en->seen = true;
        }
        cupstore_ids_free(ids, n);
    }
    /* Forget sessions no longer listed (deleted, or their store unreadable). */
    for (size_t i = 0; i < e->n;) {
        if (!e->e[i].seen) {
            entry_close(&e->e[i]);
            free(e->e[i].id);
            e->e[i] = e->e[--e->n];
        } else {
            i++;
        }
    }
    if (e->n)
        qsort(e->e, e->n, sizeof *e->e, entry_cmp);
    e->sorted = e->n;
    return 0;
}

/* The sessions that may be exported, into cand (room for e->n): each not
 * final read again (a damaged one counted and left out), those ended or
 * crashed longer than the retention ago expired.  @return how many. */
static size_t scrape_candidates(exporter *e, exp_self *self, exp_sess **cand)
{
    uint64_t now = self->now_ns, keep_ns = e->retention_s * 1000000000u;
    size_t nc = 0;
    for (size_t i = 0; i < e->n; i++) {
        entry *en = &e->e[i];
        if (en->expired) {
            self->expired++;
            continue;
        }
        if (!en->final) {
            int rc = session_read_guarded(e, en);
            if (rc) {
                /* damaged, newer or not a session: counted; the rest go on */
                self->unreadable++;
                e->read_errors++;
                entry_close(en);
                en->have = false;
                continue;
            }
        }
        const exp_sess *s = &en->snap;
        uint64_t over = s->state == MODEL_STATE_ENDED ? s->end_ns
                        : s->state == MODEL_STATE_CRASHED ? s->heartbeat_ns : 0;
        if (over && now > over && now - over > keep_ns) {
            en->expired = true;
            entry_close(en);
            self->expired++;
            continue;
        }
        cand[nc++] = &en->snap;
    }
    return nc;
}

int exporter_scrape(exporter *e, bool openmetrics, char **text, size_t *len)
{
    uint64_t t0 = now_ns(CLOCK_MONOTONIC), now = now_ns(CLOCK_REALTIME);
    exp_self self = {.version = PACKAGE_VERSION, .max_sessions = e->max_sessions,
                     .retention_s = e->retention_s, .now_ns = now};

    if (scrape_list(e, &self) != 0)
        return ENOMEM;

    exp_sess **cand = calloc(e->n ? e->n : 1, sizeof *cand);
    if (!cand)
        return ENOMEM;
    size_t nc = scrape_candidates(e, &self, cand);
    qsort(cand, nc, sizeof *cand, pick_cmp);
    size_t take = nc < e->max_sessions ? nc : e->max_sessions;
    exp_sess *out = malloc((take ? take : 1) * sizeof *out);
    if (!out) {
        free(cand);
        return ENOMEM;
    }
    for (size_t i = 0; i < take; i++)
        out[i] = *cand[i];
    free(cand);
    qsort(out, take, sizeof *out, id_cmp);
    self.exported = take;
    self.omitted = nc - take;
    self.scrapes_total = ++e->scrapes;
    self.read_errors_total = e->read_errors;
    self.read_seconds = (double)(now_ns(CLOCK_MONOTONIC) - t0) / 1e9;

    exp_buf b = {0};
    exp_format(&b, out, take, &self, openmetrics);
    free(out);
    if (b.oom) {
        exp_buf_free(&b);
        return ENOMEM;
    }
    *text = b.p;
    *len = b.len;
    return 0;
}
