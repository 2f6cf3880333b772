/* tui_kinds.c - the kind panel (turn activity kinds on/off at runtime,
 * through acknowledged control requests) beside the epoch table. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui_int.h"

#define RECENT_SECONDS 10

/* Mean of a series over the last RECENT_SECONDS seconds with data. */
static double recent_mean(const tui_hist *h, int id)
{
    if (!h->len)
        return 0.0;
    const double *v = tui_hist_v(h, id);
    const bool *va = tui_hist_valid(h, id);
    double sum = 0.0;
    int n = 0;
    for (size_t i = h->len; i > 0 && n < RECENT_SECONDS; i--)
        if (va[i - 1]) {
            sum += v[i - 1];
            n++;
        }
    return n ? sum / n : 0.0;
}

/* The latest request is not applied yet. */
static bool ctl_pending(const tui_hist *h)
{
    return h->have_ctl && (!h->have_last || h->last.ctl_gen_applied < h->ctl.gen);
}

/* The mask the agent will have once the latest request is applied. */
static uint32_t kinds_wanted(const tui_hist *h, bool *pending)
{
    *pending = ctl_pending(h);
    if (*pending)
        return h->ctl.kinds;
    return tui_kinds_on(h);
}

/* The pool limit the agent will have once the latest request is applied. */
static uint32_t pool_wanted(const tui_hist *h)
{
    if (ctl_pending(h) && h->ctl.pool)
        return h->ctl.pool;
    return h->have_last ? h->last.pool_limit : 0;
}

/* One letter per kind, '.' when off: compact for narrow tables. */
static void kinds_compact(uint32_t mask, char *buf, size_t len)
{
    static const char letters[CUPSTORE_KIND_MAX + 1] = "KCSRDYOMXG";
    size_t i = 0;
    for (; i < CUPSTORE_KIND_MAX && i + 1 < len; i++)
        buf[i] = mask & (1u << i) ? letters[i] : '.';
    buf[i] = '\0';
}

static void kinds_destroy(tui *t)
{
    tui_kinds_view *v = &t->kv;
    free(v->ep);
    v->ep = NULL;
    v->nep = 0;
    v->judged = false;
    tui_window_free(&v->win_head);
    tui_window_free(&v->win_kinds);
    tui_window_free(&v->win_epochs);
    tui_window_free(&v->win_suggest);
    tui_window_free(&v->win_foot);
}

/* Words laid out left to right over rows y .. ymax of w. */
typedef struct flow_text {
    WINDOW *w;
    int y, ymax, x;
} flow_text;

static void flow_text_item(flow_text *f, attr_t a, const char *text)
{
    int n = (int)strlen(text);
    if (f->x > 1 && f->x + n > getmaxx(f->w)) {
        if (f->y >= f->ymax)
            return;
        f->y++;
        f->x = 1;
    }
    f->x = tui_draw_text(f->w, f->y, f->x, a, text) + 2;
}

static void kinds_layout(tui *t)
{
    tui_kinds_view *v = &t->kv;
    int top = 1 + tui_banner_rows(t, COLS);
    int left = COLS >= 100 ? 46 : COLS >= 76 ? 38 : COLS / 2;
    int body = LINES - top - 5;
    v->win_head = tui_window(v->win_head, (tui_rect){0, 0, top, COLS});
    v->win_kinds = tui_window(v->win_kinds, (tui_rect){top, 0, body, left});
    v->win_epochs = tui_window(v->win_epochs, (tui_rect){top, left, body, COLS - left});
    v->win_suggest = tui_window(v->win_suggest, (tui_rect){LINES - 5, 0, 4, COLS});
    v->win_foot = tui_window(v->win_foot, (tui_rect){LINES - 1, 0, 1, COLS});
}

void tui_kinds_judge(tui *t)
{
    tui_kinds_view *v = &t->kv;
    const tui_hist *h = &t->hist;
    int err = 0;
    if (t->cur < 0 || !h->have_last)
        return;
    if (v->judged && v->judged_cur == t->cur && v->judged_second == h->last_second)
        return;
    cupstore_env *env = tui_store_env(&t->store, (size_t)t->cur, false, &err);
    if (!env) {
        tui_set_status(t, TUI_C_BAD, "cannot judge the session: %s", model_strerror(err));
        return;
    }
    /* the epochs over the whole session; the advice over the last
     * RECENT_SECONDS of a running session, the whole of an ended one */
    bool running = tui_sess_state_of(&t->store.s[t->cur]) == TUI_ST_RUNNING;
    uint64_t from = running && h->last_second >= RECENT_SECONDS ? h->last_second - RECENT_SECONDS + 1 : 0;
    uint64_t to = running ? h->last_second : UINT64_MAX;
    model_facts all, win;
    model_summary sum;
    model_advice *adv = NULL;
    size_t nadv = 0;
    char *cause = NULL;
    int rc = model_facts_read(env, 0, UINT64_MAX, &all, &cause);
    if (rc != 0) {
        tui_set_status(t, TUI_C_BAD, "cannot read the epochs: %s",
                       cause ? cause : model_strerror(rc));
        free(cause);
        return;
    }
    const tui_sess *ss = &t->store.s[t->cur];
    v->base = ss->have_sum ? model_session_baseline(&ss->sum, &all)
                           : model_epoch_baseline(all.epochs, all.nepochs);
    free(v->ep);
    v->ep = all.epochs;
    v->nep = all.nepochs;
    all.epochs = NULL;
    if ((rc = model_judge(env, from, to, &sum, &win, &adv, &nadv, &cause)) == 0) {
        tui_suggest_line(&sum, adv, nadv, running, v->suggest, sizeof v->suggest);
        free(adv);
        model_facts_free(&win);
        model_summary_free(&sum);
    } else {
        snprintf(v->suggest, sizeof v->suggest, "cannot judge the session now");
        tui_set_status(t, TUI_C_BAD, "cannot judge the session: %s",
                       cause ? cause : model_strerror(rc));
        free(cause);
    }
    v->judged = true;
    v->judged_cur = t->cur;
    v->judged_second = h->last_second;
}

static int kinds_sample(tui *t)
{
    int rc = tui_dash_ops.sample(t);
    if (rc == 0)
        tui_kinds_judge(t);
    return rc;
}

/* The launch ledger is in the session's last health row: registering now
 * (the flag) or counting what it registered before a `ledger off`. */
bool tui_ledger_shown(const tui_hist *h)
{
    if (!h->have_last)
        return false;
    if (h->last.flags & CUPSTORE_HF_LEDGER)
        return true;
    for (unsigned k = 0; k < CUPSTORE_LEDGER_KINDS; k++)
        if (h->last.ledger_expected[k])
            return true;
    return false;
}

/* The ledger's index of store kind k (kernel, memcpy, memset lead both
 * lists; graph is the ledger's fourth), or -1 for a kind it does not count. */
static int ledger_index(int k)
{
    _Static_assert(CUPSTORE_KIND_KERNEL == 0 && CUPSTORE_KIND_MEMCPY == 1 &&
                       CUPSTORE_KIND_MEMSET == 2 && CUPSTORE_LEDGER_KINDS == 4,
                   "the ledger's kinds: kernel, memcpy, memset, graph");
    return k <= CUPSTORE_KIND_MEMSET ? k : k == CUPSTORE_KIND_GRAPH ? 3 : -1;
}

/* The ledger's pending records of store kind k, or -1 for a kind it does
 * not count. */
static long long ledger_pending(const tui_hist *h, int k)
{
    int i = ledger_index(k);
    return i >= 0 ? (long long)h->last.ledger_pending[i] : -1;
}

/* Narrow panel: the ledger's pending on the blank row under the kinds. */
static void ledger_line(const tui_hist *h, WINDOW *w, int y)
{
    char item[96];
    int n = snprintf(item, sizeof item, "ledger pending:");
    bool any = false;
    static const int kinds[CUPSTORE_LEDGER_KINDS] = {CUPSTORE_KIND_KERNEL, CUPSTORE_KIND_MEMCPY,
                                                     CUPSTORE_KIND_MEMSET, CUPSTORE_KIND_GRAPH};
    for (int i = 0; i < CUPSTORE_LEDGER_KINDS; i++) {
        char c[16];
        if (kinds[i] == CUPSTORE_KIND_GRAPH && !h->last.ledger_expected[i])
            continue;   /* graph only when traced: the narrow panel has no room */
        long long p = ledger_pending(h, kinds[i]);
        tui_format_count((double)p, c, sizeof c);
        any |= p > 0;
        n += snprintf(item + n, sizeof item - (size_t)n, " %c %s", "KCSG"[i], c);
    }
    tui_draw_text(w, y, 1, tui_color_attr(any ? TUI_C_WARN : TUI_C_DIM), item);
}

static void draw_kinds(tui *t, WINDOW *w)
{
    tui_kinds_view *v = &t->kv;
    const tui_hist *h = &t->hist;
    werase(w);
    bool pending;
    uint32_t wanted = kinds_wanted(h, &pending);
    uint32_t now = tui_kinds_on(h);
    /* the ledger's PEND column where the panel has room for it and the
     * control's "pending" word after it; else a line under the rows */
    bool ledger = tui_ledger_shown(h), column = ledger && getmaxx(w) >= 45;
    tui_draw_text(w, 0, 0, tui_color_attr(TUI_C_HEADER),
                  column ? " KIND           REC/S   EST.DROP/S    PEND  "
                         : " KIND           REC/S   EST.DROP/S  ");
    for (int k = 0; k < CUPSTORE_KIND_MAX && k + 1 < getmaxy(w); k++) {
        bool on = now & (1u << k), want = wanted & (1u << k);
        char rate[16], est[16];
        tui_format_count(recent_mean(h, TUI_S_REC_KIND + k), rate, sizeof rate);
        tui_format_count(recent_mean(h, TUI_S_EST_KIND + k), est, sizeof est);
        attr_t a = k == v->sel ? tui_color_attr(TUI_C_SELECTED) : 0;
        if (a) {
            wattron(w, a);
            mvwhline(w, k + 1, 0, ' ', getmaxx(w));
            wattroff(w, a);
        }
        int x = tui_draw_textf(w, k + 1, 0, a, " [%c] %-9s %6s  %7s ", want ? 'x' : ' ',
                               cupstore_kind_name((unsigned)k), rate, est);
        if (column) {
            long long p = ledger_pending(h, k);
            char c[16] = "";
            if (p >= 0)
                tui_format_count((double)p, c, sizeof c);
            x = tui_draw_textf(w, k + 1, x, a | (p > 0 ? tui_color_attr(TUI_C_WARN) : 0),
                               " %6s ", c);
        }
        /* [x] already says which way it goes; the word says it is not yet. */
        if (on != want)
            tui_draw_text(w, k + 1, x, a | tui_color_attr(TUI_C_WARN), "pending");
    }
    if (ledger && !column && CUPSTORE_KIND_MAX + 1 < getmaxy(w))
        ledger_line(h, w, CUPSTORE_KIND_MAX + 1);
    int y = CUPSTORE_KIND_MAX + 2;
    if (h->have_last && y + 1 < getmaxy(w)) {
        /* the model's words (model_scope_brief); the API policy gets a
         * line of its own when there is room, else follows the scope */
        const cupstore_epoch *open = h->nepochs ? &h->epochs[h->nepochs - 1] : NULL;
        const tui_sess *ss = &t->store.s[t->cur];
        model_scope_words sw;
        model_scope_brief(h->last.flags, open, ss->have_sum ? ss->sum.capture : NULL, &sw);
        char next[64];   /* periodic windows: the countdown after the scope */
        model_window_next(open, t->now_ns, next, sizeof next);
        if (next[0] && strlen(sw.scope) + strlen(next) + 2 < sizeof sw.scope)
            strcat(strcat(sw.scope, "; "), next);
        tui_draw_text(w, y, 1, tui_color_attr(h->last.flags & CUPSTORE_HF_ATTACHED ? TUI_C_OK
                                                                                   : TUI_C_DIM),
                      sw.cupti);
        int x = tui_draw_text(w, y + 1, 1, 0, sw.scope), rows = getmaxy(w);
        /* after the scope where it fits whole; else on a line of its own,
         * the blank line before the pool if need be; else the policy's
         * name alone ("API gpu"), never cut */
        bool fits = x + 2 + (int)strlen(sw.api) <= getmaxx(w);
        bool api_line = sw.api[0] && (y + 7 < rows || (!fits && y + 5 < rows));
        if (sw.api[0] && !api_line) {
            int n = (int)strcspn(sw.api, ",:");
            if (fits)
                tui_draw_textf(w, y + 1, x, 0, "; %s", sw.api);
            else if (x + 2 + n <= getmaxx(w))
                tui_draw_textf(w, y + 1, x, 0, "; %.*s", n, sw.api);
        } else if (api_line) {
            tui_draw_text(w, y + 2, 1, 0, sw.api);
        }
        /* a blank line before the pool where there is room; a short
         * window: the pool keeps its two lines */
        y += api_line ? (y + 7 < rows ? 4 : 3) : (y + 5 < rows ? 3 : 2);
    }
    if (h->have_last && !h->last.pool_limit && y < getmaxy(w)) {
        tui_draw_text(w, y, 1, tui_color_attr(TUI_C_DIM), "buffer pool: none (agent not collecting)");
        y += 3;
    } else if (h->have_last && y < getmaxy(w)) {
        uint32_t want = pool_wanted(h);
        int x = tui_draw_textf(w, y, 1, 0, "buffer pool: limit %u,", h->last.pool_limit);
        char use[64];
        snprintf(use, sizeof use, " in use up to %u, out %u", h->last.pool_high_water,
                 h->last.buf_outstanding);
        if (x + (int)strlen(use) > getmaxx(w) && y + 1 < getmaxy(w))
            x = tui_draw_text(w, ++y, 2, 0, use + 1);   /* narrow: its own line */
        else
            x = tui_draw_text(w, y, x, 0, use);
        if (want != h->last.pool_limit)
            tui_draw_textf(w, y, x, tui_color_attr(TUI_C_WARN), "  -> %u pending", want);
        y++;
        if (y < getmaxy(w))
            tui_draw_text(w, y, 1, tui_color_attr(TUI_C_DIM),
                          "+ doubles it, - halves it");
        y += 2;
    }
    if (h->have_ctl && y < getmaxy(w)) {
        bool applied = !pending;
        tui_draw_textf(w, y, 1, tui_color_attr(applied ? TUI_C_OK : TUI_C_WARN),
                       "request gen %llu %s", (unsigned long long)h->ctl.gen,
                       applied ? (h->ctl.result ? "applied with an error" : "applied")
                               : "pending (waiting for the agent)");
    }
    wnoutrefresh(w);
}

static void draw_epochs(tui *t, WINDOW *w)
{
    werase(w);
    const model_epoch_stat *ep = t->kv.ep;
    size_t n = t->kv.nep;
    int base = t->kv.base;
    bool off = tui_agent_disabled(&t->hist);
    /* Three widths: kind names in full, kinds as letters, and narrow (the
     * baseline is a '*' explained below the table). */
    int cols = getmaxx(w);
    bool wide = cols >= 78, narrow = cols < 56;
    /* kind names in full only when every epoch's fit: never cut a list */
    for (size_t i = 0; wide && i < n; i++) {
        char full[128];
        cupstore_kinds_format(ep[i].kinds, full, sizeof full);
        if (strlen(full) > 30)
            wide = false;
    }
    int kw = wide ? 30 : 9, dw = narrow ? 6 : 8, nw = narrow ? 5 : 7;
    tui_draw_textf(w, 0, 0, tui_color_attr(TUI_C_HEADER), " %-3s %-*s %*s %*s %*s %5s %s", "EP",
                   kw, "KINDS", dw, narrow ? "DUR" : "DURATION", nw, "REC/S", nw,
                   narrow ? "LOSS" : "LOSSES", "POOL", narrow ? "" : "        ");
    int legend_rows = wide ? 0 : narrow ? 3 : 2;
    int rows = getmaxy(w) - 1 - legend_rows;
    size_t first = n > (size_t)rows && rows > 0 ? n - (size_t)rows : 0;
    for (size_t i = first; i < n && rows > 0; i++) {
        char kinds[128], dur[16], rate[16], loss[16], pool[16] = "-";
        /* An epoch the agent collected nothing in because it stepped aside
         * (CUPTI did not start) had no kind on, whatever was configured. */
        uint32_t ek = off && ep[i].records == 0 ? 0 : ep[i].kinds;
        if (ek == 0)
            snprintf(kinds, sizeof kinds, "none");
        else if (wide)
            cupstore_kinds_format(ek, kinds, sizeof kinds);
        else
            kinds_compact(ek, kinds, sizeof kinds);
        tui_format_secs((uint64_t)(ep[i].seconds + 0.5), dur, sizeof dur);
        tui_format_count(ep[i].seconds > 0 ? (double)ep[i].records / ep[i].seconds : 0.0,
                         rate, sizeof rate);
        tui_format_count((double)ep[i].losses, loss, sizeof loss);
        uint32_t pl = ep[i].pool_limit;
        if (pl)
            snprintf(pool, sizeof pool, "%u", pl);
        int y = (int)(i - first) + 1;
        attr_t a = ep[i].losses ? tui_color_attr(TUI_C_BAD) : 0;
        int x = tui_draw_textf(w, y, 0, a, " %-3u %-*.*s %*s %*s %*s %5s ", ep[i].id, kw, kw,
                               kinds, dw, dur, nw, rate, nw, loss, pool);
        if ((int)i == base)
            tui_draw_text(w, y, x, tui_color_attr(TUI_C_OK), narrow ? "*" : "baseline");
    }
    if (n == 0)
        tui_draw_text(w, 1, 1, tui_color_attr(TUI_C_DIM), "no epochs recorded yet");
    if (legend_rows) {
        /* What the letters mean, wrapped over the last rows. */
        static const char letters[] = "KCSRDYOMXG";
        flow_text fl = {w, getmaxy(w) - legend_rows, getmaxy(w) - 1, 1};
        if (narrow)
            flow_text_item(&fl, tui_color_attr(TUI_C_OK), "* baseline");
        for (int k = 0; k < CUPSTORE_KIND_MAX; k++) {
            char item[24];
            snprintf(item, sizeof item, "%c %s", letters[k], cupstore_kind_name((unsigned)k));
            flow_text_item(&fl, tui_color_attr(TUI_C_DIM), item);
        }
    }
    wnoutrefresh(w);
}

static void draw_suggest(tui *t, WINDOW *w)
{
    werase(w);
    tui_draw_text(w, 0, 0, A_BOLD, "Suggestion: ");
    if (t->kv.judged) {
        /* What to do, then the key that does it now: each part wrapped,
         * never cut (the instruction may come last). */
        char first[sizeof t->kv.suggest];
        snprintf(first, sizeof first, "%s", t->kv.suggest);
        char *nl = strchr(first, '\n');
        if (nl)
            *nl++ = '\0';
        int used = tui_draw_wrapped(w, 0, 12, 0, first, getmaxy(w) - 1);
        if (nl && used < getmaxy(w) - 1)
            tui_draw_wrapped(w, used, 12, 0, nl, getmaxy(w) - 1 - used);
    }
    if (t->status[0])
        tui_draw_text(w, getmaxy(w) - 1, 0, tui_color_attr((tui_color)t->status_attr), t->status);
    wnoutrefresh(w);
}

static void kinds_draw(tui *t)
{
    tui_kinds_view *v = &t->kv;
    if (!v->win_kinds || !v->win_epochs || !v->win_suggest)
        return;
    werase(v->win_head);
    const tui_sess *s = t->cur >= 0 ? &t->store.s[t->cur] : NULL;
    char id[40] = "";
    if (s)
        model_sanitize(s->id, strlen(s->id), id, sizeof id, true);
    tui_draw_textf(v->win_head, 0, 0, A_BOLD, "Kinds and epochs  %s  %s", id,
                   s ? tui_sess_state_name(tui_sess_state_of(s)) : "");
    tui_draw_banner(t, v->win_head, 1, getmaxy(v->win_head) - 1);
    wnoutrefresh(v->win_head);
    draw_kinds(t, v->win_kinds);
    draw_epochs(t, v->win_epochs);
    draw_suggest(t, v->win_suggest);
    static const char *const keys[] = {"F1", "Help  ", "Space", "On/off  ", "Up/Dn", "Kind  ",
                                       "+/-", "Pool  ", "Esc", "Dashboard  ", "F10", "Quit "};
    tui_draw_footer(v->win_foot, keys, sizeof keys / sizeof keys[0]);
}

/* Whether a control request can be applied now (else a status says why). */
static bool control_possible(tui *t)
{
    if (!t->hist.have_last) {
        tui_set_status(t, TUI_C_BAD, "no health row yet: the agent is not reporting");
        return false;
    }
    tui_sess_state st = t->cur >= 0 ? tui_sess_state_of(&t->store.s[t->cur]) : TUI_ST_RUNNING;
    if (st != TUI_ST_RUNNING && st != TUI_ST_STOPPED && st != TUI_ST_NOT_RESPONDING) {
        tui_set_status(t, TUI_C_BAD, "the session is not running: nobody would apply it");
        return false;
    }
    if (st != TUI_ST_RUNNING)   /* queued: applied when the process runs again */
        tui_set_status(t, TUI_C_BAD, "the process is %s: the request waits until it runs "
                       "again", st == TUI_ST_STOPPED ? "stopped" : "not responding");
    return true;
}

static void kinds_toggle(tui *t)
{
    tui_kinds_view *v = &t->kv;
    const tui_hist *h = &t->hist;
    if (!control_possible(t))
        return;
    bool pending;
    uint32_t mask = kinds_wanted(h, &pending) ^ (1u << v->sel);
    uint64_t gen = 0;
    int rc = tui_control(t, mask, 0, &gen);
    if (rc != 0) {
        tui_set_status(t, TUI_C_BAD, "control request failed: %s", cupstore_strerror(rc));
        return;
    }
    uint32_t before = mask ^ (1u << v->sel);
    char what[96];
    snprintf(what, sizeof what, "%s %s%s", cupstore_kind_name((unsigned)v->sel),
             mask & (1u << v->sel) ? "on" : "off",
             !before && mask ? ": the agent attaches to CUPTI"
             : before && !mask ? ": the agent detaches from CUPTI" : "");
    tui_status_pending(t, gen, what);
    (void)kinds_sample(t);
}

/* + / -: double or halve the buffer-pool limit (1..CUPSTORE_CONTROL_POOL_MAX).
 * The kinds of the request are the ones wanted now, so nothing else
 * changes. */
static void pool_change(tui *t, bool grow)
{
    const tui_hist *h = &t->hist;
    if (!control_possible(t))
        return;
    uint32_t cur = pool_wanted(h), want = grow ? cur * 2 : cur / 2;
    if (want < 1)
        want = 1;
    if (want > CUPSTORE_CONTROL_POOL_MAX)
        want = CUPSTORE_CONTROL_POOL_MAX;
    if (want == cur) {
        tui_set_status(t, TUI_C_DIM, "the buffer pool is already at its %s (%u)",
                       grow ? "maximum" : "minimum", cur);
        return;
    }
    bool pending;
    uint32_t mask = kinds_wanted(h, &pending);
    uint64_t gen = 0;
    int rc = tui_control(t, mask, want, &gen);
    if (rc != 0) {
        tui_set_status(t, TUI_C_BAD, "control request failed: %s", cupstore_strerror(rc));
        return;
    }
    char what[64];
    snprintf(what, sizeof what, "buffer pool %u -> %u", cur, want);
    tui_status_pending(t, gen, what);
    (void)kinds_sample(t);
}

static bool kinds_on_key(tui *t, int key)
{
    tui_kinds_view *v = &t->kv;
    switch (key) {
    case KEY_UP:
        if (v->sel > 0)
            v->sel--;
        return true;
    case KEY_DOWN:
        if (v->sel + 1 < CUPSTORE_KIND_MAX)
            v->sel++;
        return true;
    case KEY_HOME:
        v->sel = 0;
        return true;
    case KEY_END:
        v->sel = CUPSTORE_KIND_MAX - 1;
        return true;
    case ' ':
        kinds_toggle(t);
        return true;
    case '+':
    case '=':
        pool_change(t, true);
        return true;
    case '-':
        pool_change(t, false);
        return true;
    case 27:
    case 'k':
    case KEY_BACKSPACE:
        tui_set_screen(t, TUI_SCR_DASH);
        return true;
    }
    return false;
}

const struct tui_widget_ops tui_kinds_ops = {
    .name = "kinds",
    .layout = kinds_layout,
    .sample = kinds_sample,
    .draw = kinds_draw,
    .on_key = kinds_on_key,
    .destroy = kinds_destroy,
};
