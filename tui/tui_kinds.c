/* tui_kinds.c - the kind panel (turn activity kinds on/off at runtime,
 * through acknowledged control requests) beside the epoch table. */
#include "config.h"

#include <stdio.h>
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
    return h->have_last ? h->last.kinds_enabled : 0;
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
    static const char letters[CUPSTORE_KIND_MAX + 1] = "KCSRDYOMX";
    size_t i = 0;
    for (; i < CUPSTORE_KIND_MAX && i + 1 < len; i++)
        buf[i] = mask & (1u << i) ? letters[i] : '.';
    buf[i] = '\0';
}

static void kinds_destroy(tui *t)
{
    tui_kinds_view *v = &t->kv;
    tui_window_free(&v->win_head);
    tui_window_free(&v->win_kinds);
    tui_window_free(&v->win_epochs);
    tui_window_free(&v->win_suggest);
    tui_window_free(&v->win_foot);
}

static void kinds_layout(tui *t)
{
    tui_kinds_view *v = &t->kv;
    int top = t->opts->demo_hint ? 2 : 1;
    int left = COLS >= 100 ? 46 : COLS / 2;
    int body = LINES - top - 4;
    v->win_head = tui_window(v->win_head, (tui_rect){0, 0, top, COLS});
    v->win_kinds = tui_window(v->win_kinds, (tui_rect){top, 0, body, left});
    v->win_epochs = tui_window(v->win_epochs, (tui_rect){top, left, body, COLS - left});
    v->win_suggest = tui_window(v->win_suggest, (tui_rect){LINES - 4, 0, 3, COLS});
    v->win_foot = tui_window(v->win_foot, (tui_rect){LINES - 1, 0, 1, COLS});
}

static int kinds_sample(tui *t)
{
    return tui_dash_ops.sample(t);
}

static void draw_kinds(tui *t, WINDOW *w)
{
    tui_kinds_view *v = &t->kv;
    const tui_hist *h = &t->hist;
    werase(w);
    bool pending;
    uint32_t wanted = kinds_wanted(h, &pending);
    uint32_t now = h->have_last ? h->last.kinds_enabled : 0;
    tui_draw_text(w, 0, 0, tui_color_attr(TUI_C_HEADER), " KIND           REC/S   EST.DROP/S  ");
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
        tui_draw_textf(w, k + 1, 0, a, " [%c] %-9s %6s  %7s ", want ? 'x' : ' ',
                       cupstore_kind_name((unsigned)k), rate, est);
        if (on != want)
            tui_draw_text(w, k + 1, getcurx(w), a | tui_color_attr(TUI_C_WARN),
                          want ? "on: pending" : "off: pending");
        else if (pending)
            tui_draw_text(w, k + 1, getcurx(w), a | tui_color_attr(TUI_C_DIM), "");
    }
    int y = CUPSTORE_KIND_MAX + 2;
    if (h->have_last && y < getmaxy(w)) {
        uint32_t want = pool_wanted(h);
        tui_draw_textf(w, y, 1, 0, "buffer pool: limit %u, in use up to %u, out %u",
                       h->last.pool_limit, h->last.pool_high_water, h->last.buf_outstanding);
        if (want != h->last.pool_limit)
            tui_draw_textf(w, y, getcurx(w), tui_color_attr(TUI_C_WARN), "  -> %u pending",
                           want);
        y++;
        if (y < getmaxy(w))
            tui_draw_text(w, y, 1, tui_color_attr(TUI_C_DIM),
                          "+ doubles it, - halves it (at runtime)");
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
    tui_epoch_stat ep[TUI_MAX_EPOCHS];
    size_t n = tui_hist_epochs(&t->hist, ep, TUI_MAX_EPOCHS);
    int base = tui_epoch_baseline(ep, n);
    bool wide = getmaxx(w) >= 70;
    tui_draw_textf(w, 0, 0, tui_color_attr(TUI_C_HEADER), " %-4s %-*s %8s %7s %7s  %-8s",
                   "EP", wide ? 30 : 9, "KINDS", "DURATION", "REC/S", "LOSSES", "");
    int rows = getmaxy(w) - 2;
    size_t first = n > (size_t)rows && rows > 0 ? n - (size_t)rows : 0;
    for (size_t i = first; i < n; i++) {
        char kinds[128], dur[16], rate[16], loss[16];
        if (wide)
            cupstore_kinds_format(ep[i].kinds, kinds, sizeof kinds);
        else
            kinds_compact(ep[i].kinds, kinds, sizeof kinds);
        tui_format_secs(ep[i].seconds, dur, sizeof dur);
        tui_format_count(ep[i].seconds ? (double)ep[i].records / (double)ep[i].seconds : 0.0,
                         rate, sizeof rate);
        tui_format_count((double)ep[i].losses, loss, sizeof loss);
        int y = (int)(i - first) + 1;
        attr_t a = ep[i].losses ? tui_color_attr(TUI_C_BAD) : 0;
        tui_draw_textf(w, y, 0, a, " %-4u %-*.*s %8s %7s %7s  ", ep[i].id, wide ? 30 : 9,
                       wide ? 30 : 9, kinds, dur, rate, loss);
        if ((int)i == base)
            tui_draw_text(w, y, getcurx(w), tui_color_attr(TUI_C_OK), "baseline");
    }
    if (n == 0)
        tui_draw_text(w, 1, 1, tui_color_attr(TUI_C_DIM), "no epochs recorded yet");
    if (!wide)
        tui_draw_text(w, getmaxy(w) - 1, 0, tui_color_attr(TUI_C_DIM),
                      " K kernel C memcpy S memset R runtime D driver Y sync O overhead");
    wnoutrefresh(w);
}

static void draw_suggest(tui *t, WINDOW *w)
{
    const tui_hist *h = &t->hist;
    werase(w);
    tui_suggest_in in;
    memset(&in, 0, sizeof in);
    in.kinds_enabled = h->have_last ? h->last.kinds_enabled : 0;
    in.nkinds = CUPSTORE_KIND_MAX;
    in.nloss = CUPSTORE_LOSS_MAX;
    for (int k = 0; k < CUPSTORE_KIND_MAX; k++)
        in.rate_by_kind[k] = recent_mean(h, TUI_S_REC_KIND + k);
    for (int c = 0; c < CUPSTORE_LOSS_MAX; c++)
        in.loss_rate[c] = recent_mean(h, TUI_S_LOSS + c);
    if (h->have_last) {
        in.buf_outstanding = h->last.buf_outstanding;
        in.pool_limit = h->last.pool_limit;
        in.queue_depth = h->last.queue_depth;
        in.queue_capacity = h->last.queue_capacity;
    }
    char line[256];
    tui_suggest(&in, cupstore_kind_name, cupstore_loss_name, line, sizeof line);
    tui_draw_text(w, 0, 0, A_BOLD, "Suggestion: ");
    tui_draw_text(w, 0, 12, 0, line);
    if (t->status[0])
        tui_draw_text(w, 2, 0, tui_color_attr((tui_color)t->status_attr), t->status);
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
    if (t->opts->demo_hint)
        tui_draw_text(v->win_head, 1, 0, tui_color_attr(TUI_C_BANNER), t->opts->demo_hint);
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
    if (t->cur >= 0 && tui_sess_state_of(&t->store.s[t->cur]) != TUI_ST_RUNNING) {
        tui_set_status(t, TUI_C_BAD, "the session is not running: nobody would apply it");
        return false;
    }
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
    tui_set_status(t, TUI_C_WARN, "control request gen %llu sent: %s %s (pending)",
                   (unsigned long long)gen, cupstore_kind_name((unsigned)v->sel),
                   mask & (1u << v->sel) ? "on" : "off");
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
    tui_set_status(t, TUI_C_WARN, "control request gen %llu sent: buffer pool %u -> %u (pending)",
                   (unsigned long long)gen, cur, want);
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
