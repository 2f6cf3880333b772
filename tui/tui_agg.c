/* tui_agg.c - the aggregate view: live sessions summed per device. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "tui_int.h"

static void agg_destroy(tui *t)
{
    tui_window_free(&t->av.win_head);
    tui_window_free(&t->av.win_body);
    tui_window_free(&t->av.win_foot);
}

static void agg_layout(tui *t)
{
    int top = 1 + tui_banner_rows(t, COLS);
    t->av.win_head = tui_window(t->av.win_head, (tui_rect){0, 0, top, COLS});
    t->av.win_body = tui_window(t->av.win_body, (tui_rect){top, 0, LINES - top - 1, COLS});
    t->av.win_foot = tui_window(t->av.win_foot, (tui_rect){LINES - 1, 0, 1, COLS});
}

static int agg_sample(tui *t)
{
    (void)t;
    return 0;   /* the sessions snapshot is refreshed every frame anyway */
}

static void agg_draw(tui *t)
{
    tui_agg_view *v = &t->av;
    if (!v->win_body)
        return;
    const tui_store *st = &t->store;
    struct {
        unsigned sessions;
        double rate, drops;
        char ids[160];
        char name[28];      /* as the agent recorded it (model_prov)    */
    } dev[CUPSTORE_DEVICE_MAX + 1];
    memset(dev, 0, sizeof dev);
    unsigned live = 0;
    for (size_t i = 0; i < st->n; i++) {
        const tui_sess *s = &st->s[i];
        if (tui_sess_state_of(s) != TUI_ST_RUNNING || !s->have_last)
            continue;
        live++;
        for (int d = 0; d < CUPSTORE_DEVICE_MAX; d++) {
            bool used = (s->sum.device_mask & (1u << d)) || s->last.records_by_device[d] ||
                        s->drops_dev[d];
            if (!used)
                continue;
            dev[d].sessions++;
            dev[d].rate += (double)s->last.records_by_device[d];
            dev[d].drops += (double)s->drops_dev[d];
            if (!dev[d].name[0] && s->sum.prov && s->sum.prov->dev[d].known)
                model_sanitize(s->sum.prov->dev[d].name, strlen(s->sum.prov->dev[d].name),
                             dev[d].name, sizeof dev[d].name, true);
            size_t l = strlen(dev[d].ids);
            snprintf(dev[d].ids + l, sizeof dev[d].ids - l, "%s%d", l ? " " : "", s->sum.pid);
        }
    }
    werase(v->win_head);
    tui_draw_textf(v->win_head, 0, 0, A_BOLD, "Devices: %u live session%s (last second)", live,
                   live == 1 ? "" : "s");
    tui_draw_banner(t, v->win_head, 1, getmaxy(v->win_head) - 1);
    wnoutrefresh(v->win_head);
    WINDOW *w = v->win_body;
    werase(w);
    tui_draw_text(w, 0, 0, tui_color_attr(TUI_C_HEADER),
                  " DEVICE  NAME                     SESSIONS    REC/S  DROPS/S  PIDS        ");
    int y = 1;
    for (int d = 0; d < CUPSTORE_DEVICE_MAX && y < getmaxy(w); d++) {
        if (!dev[d].sessions)
            continue;
        char rate[16], drops[16];
        tui_format_count(dev[d].rate, rate, sizeof rate);
        tui_format_count(dev[d].drops, drops, sizeof drops);
        int x = tui_draw_textf(w, y, 0, 0, " %6d  %-24s %8u  %7s  ", d,
                               dev[d].name[0] ? dev[d].name : "?", dev[d].sessions, rate);
        x = tui_draw_textf(w, y, x, dev[d].drops > 0 ? tui_color_attr(TUI_C_BAD) : 0, "%7s",
                           drops);
        tui_draw_textf(w, y, x, 0, "  %s", dev[d].ids);
        y++;
    }
    if (y == 1)
        tui_draw_text(w, 1, 1, tui_color_attr(TUI_C_DIM), "no live session reports a device");
    tui_draw_text(w, y + 1, 1, tui_color_attr(TUI_C_DIM),
                  "DROPS/S: exact counts (CUPTI-reported and agent-side) by device.");
    wnoutrefresh(w);
    static const char *const keys[] = {"F1", "Help  ", "Esc", "Back  ", "F10", "Quit "};
    tui_draw_footer(v->win_foot, keys, sizeof keys / sizeof keys[0]);
}

static bool agg_on_key(tui *t, int key)
{
    if (key == 27 || key == 'a' || key == KEY_BACKSPACE) {
        tui_screen back = t->agg_from;
        if (back == TUI_SCR_AGG || (back != TUI_SCR_SESSIONS && t->cur < 0))
            back = TUI_SCR_SESSIONS;
        tui_set_screen(t, back);
        return true;
    }
    return false;
}

const struct tui_widget_ops tui_agg_ops = {
    .name = "devices",
    .layout = agg_layout,
    .sample = agg_sample,
    .draw = agg_draw,
    .on_key = agg_on_key,
    .destroy = agg_destroy,
};
