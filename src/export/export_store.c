/*
 * export_store.c - `export --format store`: a standalone store holding just
 * the window.  Written with the store API into DIR/SESSION-ID (DIR is a
 * fresh temporary directory the caller renames into place), so
 * `cuptop --store DIR` and every subcommand open it like any other store.
 *
 * Copied: metadata (plus export_of, export_window, export_session_span and
 * export_state, the session's state when exported),
 * the health and loss rows of the window, the records of the window with
 * the names they use, the epochs and marks that overlap the window, notes,
 * control requests, the stop-protocol steps and the final status.  The
 * export's own span is the window's, clipped to the session: its start_ns
 * and the final status's end_ns are moved in (the session's own span is
 * kept in export_session_span), so `sessions` on it shows the window's
 * length, not the whole session's.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export_int.h"

#define BATCH 16384

typedef struct pending_name {
    uint32_t id;
    size_t len;
    char *bytes;
} pending_name;

typedef struct st_copy {
    export_ctx *x;
    cupstore_env *dst;
    cupstore_record *batch;
    size_t n;
    pending_name *names;
    size_t nnames, capnames;
    uint8_t *seen;            /* bitmap of name ids already copied          */
    size_t seen_bytes;
} st_copy;

/* Run fn in a write txn on dst, retried by the store's rules. */
static int write_retry(cupstore_env *dst, cupstore_write_fn fn, void *arg)
{
    return cupstore_write(dst, fn, arg, 0);
}

static int put_batch(cupstore_txn *txn, void *arg)
{
    st_copy *s = arg;
    int rc;
    for (size_t i = 0; i < s->nnames; i++)
        if ((rc = cupstore_name_put(txn, s->names[i].id, s->names[i].bytes, s->names[i].len)) != 0)
            return rc;
    return cupstore_chunk_put(txn, s->batch, s->n);
}

static int flush_batch(st_copy *s)
{
    if (!s->n && !s->nnames)
        return 0;
    int rc = write_retry(s->dst, put_batch, s);
    for (size_t i = 0; i < s->nnames; i++)
        free(s->names[i].bytes);
    s->nnames = 0;
    s->n = 0;
    return rc;
}

static int note_name(st_copy *s, uint32_t id)
{
    const char *raw;
    size_t len;
    if (!id)
        return 0;
    if (id / 8 >= s->seen_bytes) {
        size_t nb = (id / 8 + 1) * 2;
        uint8_t *ns = realloc(s->seen, nb);
        if (!ns)
            return ENOMEM;
        memset(ns + s->seen_bytes, 0, nb - s->seen_bytes);
        s->seen = ns;
        s->seen_bytes = nb;
    }
    if (s->seen[id / 8] & (1u << (id % 8)))
        return 0;
    s->seen[id / 8] |= (uint8_t)(1u << (id % 8));
    if (cupstore_name_get(s->x->txn, id, &raw, &len) != 0)
        return 0; /* a record naming a missing name: keep the id as is */
    if (s->nnames == s->capnames) {
        size_t nc = s->capnames ? s->capnames * 2 : 64;
        pending_name *np = realloc(s->names, nc * sizeof *np);
        if (!np)
            return ENOMEM;
        s->names = np;
        s->capnames = nc;
    }
    pending_name *p = &s->names[s->nnames];
    if (!(p->bytes = malloc(len ? len : 1)))
        return ENOMEM;
    memcpy(p->bytes, raw, len);
    p->len = len;
    p->id = id;
    s->nnames++;
    return 0;
}

static int on_record(const cupstore_record *r, void *arg)
{
    st_copy *s = arg;
    int rc = note_name(s, r->name_id);
    if (rc)
        return rc;
    s->batch[s->n++] = *r;
    return s->n == BATCH ? flush_batch(s) : 0;
}

static int on_slice(export_ctx *x, void *arg)
{
    (void)x;
    return flush_batch(arg);
}

/* ---- Everything but the records: read all, then write in one txn -------- */

typedef struct small_copy {
    export_ctx *x;
    cupstore_txn *src;
} small_copy;

static const char *const meta_keys[] = {
    "pid", "host", "cmdline", "start_ns", "cuda_version", "cupti_version",
    "cupti_api_version", "driver_version", "devices", "config", "agent_version", "sink",
    "cupti_library",
    /* provenance (doc/store-format.md); device.N are copied beside */
    "simulated", "driver_version_source", "cuda_driver_version", "cuda_runtime_version",
    "kernel_release", "os", "virt", "label", "cuptop_version", "unknown",
};

/* The structured configuration keys (config.KEY), whatever they are. */
static int cp_meta(const char *key, const char *value, void *arg)
{
    return cupstore_meta_put(arg, key, value);
}

static int cp_health(const cupstore_health *h, void *arg)
{
    return cupstore_health_put(arg, h);
}

static int cp_loss(const cupstore_loss_row *r, void *arg)
{
    return cupstore_loss_add(arg, r);
}

struct win_arg {
    cupstore_txn *dst;
    uint64_t from, to;
};

static int cp_epoch(const cupstore_epoch *e, void *arg)
{
    struct win_arg *w = arg;
    uint64_t end = e->end_ns ? e->end_ns : UINT64_MAX;
    if (e->start_ns > w->to || end < w->from)
        return 0;
    return cupstore_epoch_put(w->dst, e);
}

static int cp_mark(const cupstore_mark *m, void *arg)
{
    struct win_arg *w = arg;
    if (m->from_ns > w->to || m->to_ns < w->from)
        return 0;
    return cupstore_mark_put(w->dst, m);
}

static int cp_note(const cupstore_note *n, void *arg)
{
    cupstore_note copy = *n;
    return cupstore_note_put(arg, &copy);
}

static int cp_step(const cupstore_step *st, void *arg)
{
    return cupstore_step_put(arg, st);
}

static int cp_control(const cupstore_control *c, void *arg)
{
    cupstore_txn *dst = arg;
    uint64_t gen;
    int rc = cupstore_control_request_pool(dst, c->kinds, c->pool, &gen);
    if (!rc && c->applied_ns)
        rc = cupstore_control_ack(dst, gen, c->applied_ns, c->result, c->pool_applied);
    return rc;
}

static int copy_small(cupstore_txn *dst, void *arg)
{
    small_copy *sc = arg;
    export_ctx *x = sc->x;
    cupstore_txn *src = sc->src;
    cupstore_final f;
    char buf[96];
    int rc;

    /* The window, clipped to the session (x->sum judges the window: its
     * start is the session's, its end the window's last heartbeat). */
    uint64_t span_start = x->sum.start_ns, span_end = x->sum.end_ns;
    uint64_t win_start = x->from_ns > span_start ? x->from_ns : span_start;
    uint64_t win_end = x->to_ns < UINT64_MAX ? x->to_ns + 1 : x->to_ns;
    rc = cupstore_final_get(src, &f);
    if (rc && rc != CUPSTORE_ENOTFOUND)
        return rc;
    bool have_final = rc == 0;
    if (have_final && f.end_ns)
        span_end = f.end_ns;
    for (size_t i = 0; i < sizeof meta_keys / sizeof meta_keys[0]; i++) {
        char *v = NULL;
        if (!strcmp(meta_keys[i], "start_ns")) {
            snprintf(buf, sizeof buf, "%llu", (unsigned long long)win_start);
            rc = cupstore_meta_put(dst, meta_keys[i], buf);
        } else if ((rc = cupstore_meta_get(src, meta_keys[i], &v)) == 0) {
            rc = cupstore_meta_put(dst, meta_keys[i], v);
        }
        free(v);
        if (rc && rc != CUPSTORE_ENOTFOUND)
            return rc;
    }
    if ((rc = cupstore_meta_scan(src, CUPSTORE_META_CONFIG, cp_meta, dst)) != 0)
        return rc;
    for (unsigned d = 0; d < CUPSTORE_DEVICE_MAX; d++) {
        char key[32], *v = NULL;
        snprintf(key, sizeof key, "device.%u", d);
        rc = cupstore_meta_get(src, key, &v);
        if (rc == 0)
            rc = cupstore_meta_put(dst, key, v);
        free(v);
        if (rc && rc != CUPSTORE_ENOTFOUND)
            return rc;
    }
    snprintf(buf, sizeof buf, "%llu %llu", (unsigned long long)span_start,
             (unsigned long long)span_end);
    if ((rc = cupstore_meta_put(dst, "export_session_span", buf)) != 0)
        return rc;
    if ((rc = cupstore_meta_put(dst, "export_of", cupstore_env_id(x->env))) != 0)
        return rc;
    snprintf(buf, sizeof buf, "%llu %llu", (unsigned long long)x->from_ns,
             (unsigned long long)x->to_ns);
    if ((rc = cupstore_meta_put(dst, "export_window", buf)) != 0)
        return rc;
    /* the model judges a window as one: the session's end only if the
     * window holds it and the session had ended or crashed (model.c) */
    if ((rc = cupstore_meta_put(dst, "export_state", model_state_name(x->sum.state))) != 0)
        return rc;
    uint64_t fs = x->from_ns / 1000000000ull, ts = x->to_ns / 1000000000ull;
    if ((rc = cupstore_health_scan(src, fs, ts, cp_health, dst)) != 0 ||
        (rc = cupstore_loss_scan(src, fs, ts, cp_loss, dst)) != 0)
        return rc;
    struct win_arg w = {.dst = dst, .from = x->from_ns, .to = x->to_ns};
    if ((rc = cupstore_epoch_scan(src, cp_epoch, &w)) != 0 ||
        (rc = cupstore_mark_scan(src, cp_mark, &w)) != 0 ||
        (rc = cupstore_note_scan(src, cp_note, dst)) != 0 ||
        (rc = cupstore_control_scan(src, cp_control, dst)) != 0 ||
        (rc = cupstore_step_scan(src, cp_step, dst)) != 0)
        return rc;
    if (!have_final)
        return 0;
    if (f.end_ns > win_end)
        f.end_ns = win_end;
    return cupstore_final_put(dst, &f);
}

int export_store(export_ctx *x, const char *dir)
{
    st_copy s = {.x = x};
    small_copy sc = {.x = x};
    char *path = NULL;
    int rc;

    if (asprintf(&path, "%s/%s", dir, cupstore_env_id(x->env)) < 0)
        return ENOMEM;
    if ((rc = cupstore_env_open(&s.dst, path, CUPSTORE_CREATE, NULL)) != 0)
        goto out;
    if (!(s.batch = malloc(BATCH * sizeof *s.batch))) {
        rc = ENOMEM;
        goto out;
    }
    if ((rc = cupstore_txn_begin(x->env, false, &sc.src)) != 0)
        goto out;
    rc = write_retry(s.dst, copy_small, &sc);
    cupstore_txn_abort(sc.src);
    if (rc)
        goto out;
    if ((rc = export_scan(x, on_record, on_slice, &s)) != 0)
        goto out;
    if ((rc = flush_batch(&s)) != 0)
        goto out;
    rc = cupstore_env_sync(s.dst);
out:
    for (size_t i = 0; i < s.nnames; i++)
        free(s.names[i].bytes);
    free(s.names);
    free(s.seen);
    free(s.batch);
    if (s.dst)
        cupstore_env_close(s.dst);
    free(path);
    return rc;
}
