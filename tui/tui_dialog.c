/* tui_dialog.c - modal dialogs (prompt, chooser) and the actions that write
 * to the store: control requests, marks, export of a marked window. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "tui_int.h"

static uint64_t now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void tui_set_status(tui *t, tui_color c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->status, sizeof t->status, fmt, ap);
    va_end(ap);
    t->status_attr = (int)c;
    t->status_gen = 0;
}

void tui_status_pending(tui *t, uint64_t gen, const char *what)
{
    tui_set_status(t, TUI_C_WARN, "control request gen %llu sent: %s (pending)",
                   (unsigned long long)gen, what);
    t->status_gen = gen;
    snprintf(t->status_what, sizeof t->status_what, "%s", what);
}

void tui_status_update(tui *t)
{
    const tui_hist *h = &t->hist;
    if (!t->status_gen || !h->have_last || h->last.ctl_gen_applied < t->status_gen)
        return;
    bool failed = h->have_ctl && h->ctl.gen == t->status_gen && h->ctl.result != 0;
    uint64_t gen = t->status_gen;
    char what[sizeof t->status_what];
    snprintf(what, sizeof what, "%s", t->status_what);
    if (failed)
        tui_set_status(t, TUI_C_BAD, "control request gen %llu applied with an error (%d): %s",
                       (unsigned long long)gen, (int)h->ctl.result, what);
    else
        tui_set_status(t, TUI_C_OK, "control request gen %llu applied: %s",
                       (unsigned long long)gen, what);
}

bool tui_prompt(tui *t, const char *label, char *buf, size_t len)
{
    size_t n = strlen(buf);
    bool ok = false;
    bool fresh = n > 0;   /* the default is selected: typing replaces it */
    curs_set(1);
    for (;;) {
        WINDOW *w = newwin(1, COLS, LINES - 2, 0);
        if (!w)
            break;
        werase(w);
        wattron(w, A_BOLD);
        mvwaddnstr(w, 0, 0, label, COLS);
        wattroff(w, A_BOLD);
        int x = getcurx(w);
        int room = COLS - x - 1;
        const char *shown = buf;
        if (room > 0 && (int)n > room)
            shown = buf + n - (size_t)room;
        if (fresh)
            wattron(w, A_REVERSE);
        waddnstr(w, shown, room > 0 ? room : 0);
        if (fresh)
            wattroff(w, A_REVERSE);
        wnoutrefresh(w);
        doupdate();
        keypad(w, TRUE);
        int ch = tui_getch(t, w, 1000);
        delwin(w);
        if (ch == ERR)
            continue;
        if (ch == TUI_KEY_GONE || ch == 27) {
            break;
        } else if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
            ok = true;
            break;
        } else if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
            if (n > 0)
                buf[--n] = '\0';
            fresh = false;
        } else if (ch == 21) {   /* ^U */
            n = 0;
            buf[0] = '\0';
            fresh = false;
        } else if (ch == KEY_LEFT || ch == KEY_RIGHT || ch == KEY_END || ch == 5) {
            fresh = false;   /* keep the default and edit it at its end */
        } else if (ch == KEY_RESIZE) {
            tui_redraw(t);
        } else if (ch >= 32 && ch < 127) {
            if (fresh) {
                n = 0;
                buf[0] = '\0';
                fresh = false;
            }
            if (n + 1 < len) {
                buf[n++] = (char)ch;
                buf[n] = '\0';
            }
        }
    }
    curs_set(0);
    tui_redraw(t);
    return ok;
}

bool tui_confirm(tui *t, const char *question)
{
    bool yes = false;
    for (;;) {
        WINDOW *w = newwin(1, COLS, LINES - 2, 0);
        if (!w)
            break;
        werase(w);
        wattron(w, A_BOLD | tui_color_attr(TUI_C_WARN));
        mvwaddnstr(w, 0, 0, question, COLS - 1);
        wattroff(w, A_BOLD | tui_color_attr(TUI_C_WARN));
        waddnstr(w, " (y/n) ", COLS - getcurx(w) - 1 > 0 ? COLS - getcurx(w) - 1 : 0);
        wnoutrefresh(w);
        doupdate();
        keypad(w, TRUE);
        int ch = tui_getch(t, w, 1000);
        delwin(w);
        if (ch == ERR)
            continue;
        if (ch == KEY_RESIZE) {
            tui_redraw(t);
            continue;
        }
        if (ch == 'y' || ch == 'Y')
            yes = true;
        if (ch == 'y' || ch == 'Y' || ch == 'n' || ch == 'N' || ch == 27 || ch == TUI_KEY_GONE)
            break;
    }
    tui_redraw(t);
    return yes;
}

int tui_choose(tui *t, const char *title, const char *const *items, int n)
{
    int sel = 0, top = 0, result = -1;
    int wide = 0;   /* as wide as the longest item, 40 to the screen's width */
    for (int i = 0; i < n; i++)
        if ((int)strlen(items[i]) > wide)
            wide = (int)strlen(items[i]);
    for (;;) {
        int h = n + 4, w = wide + 6 > 40 ? wide + 6 : 40;
        if (w > COLS - 4 && COLS > 44)
            w = COLS - 4;
        if (w > COLS)
            w = COLS;
        if (h > LINES)
            h = LINES;
        WINDOW *win = newwin(h, w, (LINES - h) / 2, (COLS - w) / 2);
        if (!win)
            break;
        wbkgd(win, ' ' | tui_color_attr(TUI_C_DIALOG));
        werase(win);
        box(win, 0, 0);
        mvwaddnstr(win, 0, 2, title, w - 4);
        /* More items than rows: the list scrolls with the selection. */
        int rows = h - 3 > 1 ? h - 3 : 1;
        if (sel < top)
            top = sel;
        if (sel >= top + rows)
            top = sel - rows + 1;
        for (int i = top; i < n && i - top + 2 < h - 1; i++) {
            if (i == sel)
                wattron(win, A_REVERSE);
            mvwprintw(win, i - top + 2, 2, " %-*.*s", w - 6, w - 6, items[i]);
            if (i == sel)
                wattroff(win, A_REVERSE);
        }
        wnoutrefresh(win);
        doupdate();
        keypad(win, TRUE);
        int ch = tui_getch(t, win, 1000);
        delwin(win);
        if (ch == 27 || ch == TUI_KEY_GONE)
            break;
        if (ch == KEY_UP && sel > 0)
            sel--;
        else if (ch == KEY_DOWN && sel + 1 < n)
            sel++;
        else if (ch == KEY_PPAGE || ch == KEY_HOME)
            sel = ch == KEY_HOME || sel < h - 4 ? 0 : sel - (h - 4);
        else if (ch == KEY_NPAGE || ch == KEY_END)
            sel = ch == KEY_END || sel + (h - 4) >= n ? n - 1 : sel + (h - 4);
        else if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
            result = sel;
            break;
        } else if (ch == KEY_RESIZE) {
            tui_redraw(t);
        }
    }
    tui_redraw(t);
    return result;
}

/* A short write txn on the current session (cupstore_write's retries). */
static int write_txn(tui *t, int (*fn)(cupstore_txn *, void *), void *arg)
{
    if (t->cur < 0)
        return CUPSTORE_EINVAL;
    int rc = 0;
    cupstore_env *env = tui_store_env(&t->store, (size_t)t->cur, true, &rc);
    if (!env)
        return rc ? rc : CUPSTORE_EINVAL;
    return cupstore_write(env, fn, arg, 0);
}

struct ctl_arg {
    uint32_t kinds, pool;
    uint64_t gen;
};

static int ctl_fn(cupstore_txn *txn, void *arg)
{
    struct ctl_arg *c = arg;
    return cupstore_control_request_pool(txn, c->kinds, c->pool, &c->gen);
}

int tui_control(tui *t, uint32_t kinds, uint32_t pool, uint64_t *gen)
{
    struct ctl_arg c = {kinds, pool, 0};
    int rc = write_txn(t, ctl_fn, &c);
    if (rc == 0 && gen)
        *gen = c.gen;
    return rc;
}

static int mark_fn(cupstore_txn *txn, void *arg)
{
    return cupstore_mark_put(txn, arg);
}

int tui_mark_put_ns(tui *t, const char *name, uint64_t from_ns, uint64_t to_ns)
{
    cupstore_mark m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "%s", name);
    m.from_ns = from_ns;
    m.to_ns = to_ns;
    m.created_ns = now_ns(CLOCK_REALTIME);
    return write_txn(t, mark_fn, &m);
}

int tui_mark_put(tui *t, const char *name, uint64_t from_s, uint64_t to_s)
{
    return tui_mark_put_ns(t, name, from_s * 1000000000u, to_s * 1000000000u + 999999999u);
}

/* ---- Export ------------------------------------------------------------ */

struct export_progress {
    tui *t;
    uint64_t last_draw;
    bool cancelled;
};

static int export_progress_cb(uint64_t done, uint64_t total, void *arg)
{
    struct export_progress *p = arg;
    uint64_t now = now_ns(CLOCK_MONOTONIC);
    if (now - p->last_draw < 100000000u && done != total)
        return 0;
    p->last_draw = now;
    WINDOW *w = newwin(1, COLS, LINES - 2, 0);
    if (w) {
        werase(w);
        if (total)
            mvwprintw(w, 0, 0, "exporting: %llu / %llu records (%.0f%%)  Esc cancels",
                      (unsigned long long)done, (unsigned long long)total,
                      100.0 * (double)done / (double)total);
        else
            mvwprintw(w, 0, 0, "exporting: %llu records  Esc cancels", (unsigned long long)done);
        wnoutrefresh(w);
        doupdate();
        int ch = tui_getch(p->t, w, 0);
        delwin(w);
        if (ch == 27 || ch == TUI_KEY_GONE) {
            p->cancelled = true;
            return 1;
        }
    }
    return 0;
}

static const cupstore_mark *latest_mark(const tui_hist *h, const char *name)
{
    const cupstore_mark *best = NULL;
    for (size_t i = 0; i < h->nmarks; i++) {
        if (name && strcmp(h->marks[i].name, name) == 0)
            return &h->marks[i];
        if (!best || h->marks[i].created_ns > best->created_ns)
            best = &h->marks[i];
    }
    return name ? NULL : best;
}

void tui_export(tui *t, const char *mark)
{
    if (t->cur < 0)
        return;
    const cupstore_mark *m = latest_mark(&t->hist, mark);
    if (!m && mark)
        m = latest_mark(&t->hist, NULL);
    if (!m) {
        tui_set_status(t, TUI_C_BAD, "no mark to export: m sets a start, M the end");
        return;
    }
    char name[sizeof m->name];
    snprintf(name, sizeof name, "%s", m->name);
    static const char *const formats[] = {"chrome", "jsonl", "csv", "store"};
    static const char *const exts[] = {".json", ".jsonl", ".csv", ".store"};
    char title[96];
    snprintf(title, sizeof title, " Export '%.60s' as ", name);
    int f = tui_choose(t, title, formats, 4);
    if (f < 0) {
        tui_set_status(t, TUI_C_DIM, "export cancelled");
        return;
    }
    char path[512];
    char safe[64];
    model_sanitize(name, strlen(name), safe, sizeof safe, true);
    for (char *p = safe; *p; p++)
        if (*p == '/' || *p == ' ' || *p == '?')
            *p = '_';
    snprintf(path, sizeof path, "./%.100s-%s%s", t->store.s[t->cur].id, safe, exts[f]);
    if (!tui_prompt(t, "Export to: ", path, sizeof path) || !path[0]) {
        tui_set_status(t, TUI_C_DIM, "export cancelled");
        return;
    }
    export_opts eo;
    memset(&eo, 0, sizeof eo);
    eo.store_dir = t->store.dir;
    eo.session = t->store.s[t->cur].id;
    eo.mark = name;
    eo.format = formats[f];
    eo.output = path;
    /* The monitor has no --force: ask before replacing a file. */
    struct stat sb;
    if (lstat(path, &sb) == 0) {
        char q[600];
        snprintf(q, sizeof q, "%s exists: overwrite it?", path);
        if (!tui_confirm(t, q)) {
            tui_set_status(t, TUI_C_DIM, "export cancelled: %s kept", path);
            return;
        }
        eo.force = true;
    }
    /* LMDB: never two handles on one environment in a process. */
    tui_store_release(&t->store, (size_t)t->cur);
    struct export_progress p = {t, 0, false};
    char *cause = NULL;
    if (!t->export_fn) {
        tui_set_status(t, TUI_C_BAD, "export is not available in this program");
        return;
    }
    int rc = t->export_fn(&eo, export_progress_cb, &p, &cause);
    if (rc == 0 && cause) /* a note: the session stored no records */
        tui_set_status(t, TUI_C_WARN, "exported '%s' (%s) to %s; %s", name, formats[f], path,
                       cause);
    else if (rc == 0)
        tui_set_status(t, TUI_C_OK, "exported '%s' (%s) to %s", name, formats[f], path);
    else if (p.cancelled)
        tui_set_status(t, TUI_C_WARN, "export cancelled");
    else
        tui_set_status(t, TUI_C_BAD, "export failed: %s", cause ? cause : "unknown error");
    free(cause);
}
