/* tui_sessions.c - the sessions screen: every session, sortable, filterable. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tui_int.h"

static const char *const sort_names[TUI_SORT_MAX] = {
    "state", "pid", "session", "devices", "rec/s", "loss", "command",
};

static double sess_rate(const tui_sess *s)
{
    if (tui_sess_state_of(s) == TUI_ST_RUNNING && s->have_last) {
        double r = 0.0;
        for (int k = 0; k < CUPSTORE_KIND_MAX; k++)
            r += (double)s->last.records_by_kind[k];
        return r;
    }
    return s->have_sum ? s->sum.records_per_s : 0.0;
}

static const char *sess_verdict(const tui_sess *s, attr_t *a)
{
    tui_sess_state st = tui_sess_state_of(s);
    *a = tui_color_attr(TUI_C_BAD);
    switch (st) {
    case TUI_ST_UNREADABLE:
        return model_strerror(s->open_err ? s->open_err : CUPSTORE_ECORRUPT);
    case TUI_ST_RUNNING:
        if (s->sum.complete) {
            *a = tui_color_attr(TUI_C_OK);
            return "ok so far";
        }
        return "INCOMPLETE";
    case TUI_ST_COMPLETE:
        *a = tui_color_attr(TUI_C_OK);
        return "COMPLETE";
    default:
        return "INCOMPLETE";
    }
}

/* qsort has no context argument: sort an array of (key, index) instead. */
struct sort_item {
    const tui_sess *s;
    size_t idx;
    int col;
    bool desc;
};

static int sort_cmp(const void *a, const void *b)
{
    const struct sort_item *x = a, *y = b;
    int c = 0;
    switch (x->col) {
    case 0:
        c = (int)tui_sess_state_of(x->s) - (int)tui_sess_state_of(y->s);
        break;
    case 1:
        c = (x->s->sum.pid > y->s->sum.pid) - (x->s->sum.pid < y->s->sum.pid);
        break;
    case 3:
        c = strcmp(x->s->devices, y->s->devices);
        break;
    case 4: {
        double rx = sess_rate(x->s), ry = sess_rate(y->s);
        c = (rx > ry) - (rx < ry);
        break;
    }
    case 5:
        c = (x->s->sum.loss_total > y->s->sum.loss_total) -
            (x->s->sum.loss_total < y->s->sum.loss_total);
        break;
    case 6:
        c = strcmp(x->s->cmd, y->s->cmd);
        break;
    default:
        break;
    }
    if (c == 0)
        c = strcmp(x->s->id, y->s->id);
    return x->desc ? -c : c;
}

/* The job of a session that shares one (cuptop run); NULL for a job of its
 * own or an unreadable session. */
static const char *sess_job(const tui_sess *s)
{
    return s->have_sum && !s->sum.job_own ? s->sum.job : NULL;
}

/* A session of a job with ranks that looks like its launcher (torchrun:
 * CUDA started for a device count, no work): model_job_judge's rule. */
static bool sess_launcher(const tui_store *st, const tui_sess *s)
{
    const char *job = sess_job(s);
    if (!job || !model_job_launcher_like(&s->sum))
        return false;
    for (size_t i = 0; i < st->n; i++) {
        const char *kj = sess_job(&st->s[i]);
        if (kj && !strcmp(kj, job) && st->s[i].sum.rank >= 0)
            return true;
    }
    return false;
}

static bool sess_match(const tui_sess *s, const char *filter)
{
    if (!filter[0])
        return true;
    size_t fl = strlen(filter);
    const char *job = sess_job(s);
    const char *label = s->have_sum && s->sum.prov && s->sum.prov->label ? s->sum.prov->label : "";
    const char *fields[] = {s->id, s->cmd, tui_sess_state_name(tui_sess_state_of(s)),
                            job ? job : "", label};
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
        for (const char *p = fields[f]; *p; p++)
            if (strncasecmp(p, filter, fl) == 0)
                return true;
    return false;
}

static void sessions_rebuild(tui *t)
{
    tui_sessions_view *v = &t->sv;
    tui_store *st = &t->store;
    free(v->rows);
    v->rows = NULL;
    v->nrows = 0;
    if (!st->n)
        return;
    struct sort_item *items = calloc(st->n, sizeof *items);
    if (!items)
        return;
    size_t n = 0;
    for (size_t i = 0; i < st->n; i++)
        if (sess_match(&st->s[i], v->filter))
            items[n++] = (struct sort_item){&st->s[i], i, v->sort, v->sort_desc};
    qsort(items, n, sizeof *items, sort_cmp);
    /* A job's sessions together, by rank, under a job row, where the job's
     * first session falls in the order; a job with one session shown (one
     * process under cuptop run, or one left by the filter) is that
     * session's row alone. */
    size_t *rows = calloc(2 * n + 1, sizeof *rows);
    bool *done = calloc(n + 1, sizeof *done);
    if (!rows || !done) {
        free(rows);
        free(done);
        free(items);
        return;
    }
    free(v->rows);
    v->rows = rows;
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (done[i])
            continue;
        const char *job = sess_job(items[i].s);
        size_t members = 0;
        for (size_t k = i; job && k < n && members < 2; k++) {
            const char *kj = sess_job(items[k].s);
            members += !done[k] && kj && !strcmp(kj, job);
        }
        if (members < 2) {   /* a job of one process (cuptop run): its row alone */
            rows[out++] = items[i].idx;
            continue;
        }
        rows[out++] = TUI_ROW_JOB | items[i].idx;
        size_t first = out;
        for (size_t k = i; k < n; k++) {
            const char *kj = sess_job(items[k].s);
            if (done[k] || !kj || strcmp(kj, job) != 0)
                continue;
            done[k] = true;
            /* insertion by rank (none last) */
            size_t at = out++;
            int rk = items[k].s->sum.rank;
            while (at > first) {
                int rp = st->s[rows[at - 1]].sum.rank;
                if ((rp < 0 ? INT32_MAX : rp) <= (rk < 0 ? INT32_MAX : rk))
                    break;
                rows[at] = rows[at - 1];
                at--;
            }
            rows[at] = items[k].idx;
        }
    }
    v->nrows = out;
    free(done);
    free(items);
    if (v->sel >= v->nrows)
        v->sel = v->nrows ? v->nrows - 1 : 0;
}

static void sessions_layout(tui *t)
{
    tui_sessions_view *v = &t->sv;
    int top = 1 + tui_banner_rows(t, COLS);
    v->win_head = tui_window(v->win_head, (tui_rect){0, 0, top + 1, COLS});
    v->win_list = tui_window(v->win_list, (tui_rect){top + 1, 0, LINES - top - 3, COLS});
    v->win_status = tui_window(v->win_status, (tui_rect){LINES - 2, 0, 1, COLS});
    v->win_foot = tui_window(v->win_foot, (tui_rect){LINES - 1, 0, 1, COLS});
}

static void sessions_destroy(tui *t)
{
    tui_sessions_view *v = &t->sv;
    tui_window_free(&v->win_head);
    tui_window_free(&v->win_list);
    tui_window_free(&v->win_status);
    tui_window_free(&v->win_foot);
    free(v->rows);
    v->rows = NULL;
    v->nrows = 0;
}

static void sessions_enter(tui *t)
{
    sessions_rebuild(t);
}

static int sessions_sample(tui *t)
{
    sessions_rebuild(t);
    return 0;
}

/* Columns: header and rows use the same ones.  On a narrow terminal the
 * least useful ones go first (the pid is also the id's suffix), so that
 * the command keeps some room; below 60 columns it goes too. */
enum { C_STATE = 0, C_PID, C_ID, C_DEV, C_RATE, C_LOSS, C_VERDICT, C_CMD, C_MAX };
typedef struct sess_cols {
    int x[C_MAX];                /* -1: not shown                          */
    int id_w;                    /* width of the id column                 */
} sess_cols;

static sess_cols sessions_columns(int cols)
{
    static const int width[C_MAX] = {10, 7, 22, 5, 6, 6, 10, 0};
    static const int drop_order[] = {C_PID, C_DEV, C_RATE, C_LOSS};
    bool shown[C_MAX];
    for (int c = 0; c < C_MAX; c++)
        shown[c] = true;
    for (size_t k = 0;; k++) {
        int need = 0;
        for (int c = 0; c < C_CMD; c++)
            if (shown[c])
                need += width[c] + 1;
        if (need + 20 <= cols || k >= sizeof drop_order / sizeof drop_order[0]) {
            if (need + 8 > cols)
                shown[C_CMD] = false;
            break;
        }
        shown[drop_order[k]] = false;
    }
    sess_cols sc;
    /* Narrower than state + id + verdict: the id keeps its tail (time and
     * pid), cut from the left. */
    sc.id_w = width[C_ID];
    if (cols < width[C_STATE] + width[C_ID] + width[C_VERDICT] + 3)
        sc.id_w = cols - width[C_STATE] - width[C_VERDICT] - 3;
    if (sc.id_w < 8)
        sc.id_w = 8;
    int x = 0;
    for (int c = 0; c < C_MAX; c++) {
        sc.x[c] = shown[c] ? x : -1;
        if (shown[c])
            x += (c == C_ID ? sc.id_w : width[c]) + 1;
    }
    return sc;
}

static const char *const col_names[C_MAX] = {"STATE", "PID", "SESSION", "DEV",
                                             "REC/S", "LOSS", "VERDICT", "COMMAND"};
/* Right-aligned numeric columns: the header's name ends where the value does. */
static const int col_right[C_MAX] = {0, 7, 0, 0, 6, 6, 0, 0};

/* A job's row: the model's verdict over its processes (model_job_judge on
 * copies of their summaries), the number of processes and what failed. */
static void job_row_draw(tui *t, WINDOW *w, int r, const sess_cols *sc, size_t idx)
{
    tui_sessions_view *v = &t->sv;
    tui_store *st = &t->store;
    model_job j;
    memset(&j, 0, sizeof j);
    size_t n = 0;
    while (idx + 1 + n < v->nrows && !(v->rows[idx + 1 + n] & TUI_ROW_JOB) &&
           sess_job(&st->s[v->rows[idx + 1 + n]]) &&
           !strcmp(sess_job(&st->s[v->rows[idx + 1 + n]]), st->s[v->rows[idx] & ~TUI_ROW_JOB].sum.job))
        n++;
    j.procs = calloc(n ? n : 1, sizeof *j.procs);
    if (!j.procs)
        return;
    for (size_t i = 0; i < n; i++)
        j.procs[i] = st->s[v->rows[idx + 1 + i]].sum;   /* shallow: judged, not freed */
    j.n = n;
    model_job_judge(&j);
    bool sel = idx == v->sel;
    attr_t ok = tui_color_attr(TUI_C_OK), bad = tui_color_attr(TUI_C_BAD);
    attr_t va = j.complete ? ok : bad;
    if (sel) {
        va = 0;
        wattron(w, tui_color_attr(TUI_C_SELECTED));
        mvwhline(w, r, 0, ' ', COLS);
    }
    const char *state = j.state == MODEL_STATE_RUNNING   ? "running"
                        : j.state == MODEL_STATE_CRASHED ? "crashed"
                        : j.complete                     ? "complete"
                                                         : "incomplete";
    char job[64];
    model_sanitize(st->s[v->rows[idx] & ~TUI_ROW_JOB].sum.job,
                   strlen(st->s[v->rows[idx] & ~TUI_ROW_JOB].sum.job), job, sizeof job, true);
    tui_draw_textf(w, r, sc->x[C_STATE], A_BOLD | va, "%-10s", state);
    tui_draw_textf(w, r, sc->x[C_ID], A_BOLD, "job %s", job);
    const char *verdict = j.complete ? (j.state == MODEL_STATE_RUNNING ? "ok so far" : "COMPLETE")
                                     : "INCOMPLETE";
    int vx = sc->x[C_VERDICT];
    int jx = sc->x[C_ID] + 4 + (int)strlen(job) + 1;
    if (jx > vx)
        vx = jx;   /* a long job id pushes the verdict right */
    tui_draw_textf(w, r, vx, A_BOLD | va, "%-10.10s", verdict);
    if (sc->x[C_CMD] >= 0 && vx + 11 < COLS) {
        char what[160];
        int o = snprintf(what, sizeof what, "%zu process%s", j.n, j.n == 1 ? "" : "es");
        if (j.launchers && o > 0 && (size_t)o < sizeof what)
            o += snprintf(what + o, sizeof what - (size_t)o, ", %zu launcher%s", j.launchers,
                          j.launchers == 1 ? "" : "s");
        if (j.crashed && o > 0 && (size_t)o < sizeof what)
            o += snprintf(what + o, sizeof what - (size_t)o, ", %zu crashed", j.crashed);
        if (j.incomplete > j.crashed && o > 0 && (size_t)o < sizeof what)
            o += snprintf(what + o, sizeof what - (size_t)o, ", %zu incomplete",
                          j.incomplete - j.crashed);
        if (j.missing && o > 0 && (size_t)o < sizeof what)
            snprintf(what + o, sizeof what - (size_t)o, ", %zu rank%s missing", j.missing,
                     j.missing == 1 ? "" : "s");
        tui_draw_text(w, r, vx + 11, sel ? 0 : tui_color_attr(TUI_C_DIM), what);
    }
    if (sel)
        wattroff(w, tui_color_attr(TUI_C_SELECTED));
    free(j.procs);
}

static void sessions_draw(tui *t)
{
    tui_sessions_view *v = &t->sv;
    tui_store *st = &t->store;
    if (!v->win_list)
        return;
    WINDOW *h = v->win_head;
    werase(h);
    size_t running = 0;
    for (size_t i = 0; i < st->n; i++)
        running += tui_sess_state_of(&st->s[i]) == TUI_ST_RUNNING;
    char dir[128];
    model_sanitize(st->dir, strlen(st->dir), dir, sizeof dir, t->ascii);
    wbkgdset(h, ' ');
    /* The store's path last: it is the longest and the least needed. */
    tui_draw_textf(h, 0, 0, A_BOLD, "cuptop  %zu session%s, %zu running  sort: %s%s%s%s  store %s",
                   st->n, st->n == 1 ? "" : "s", running, sort_names[v->sort],
                   v->sort_desc ? " (desc)" : "", v->filter[0] ? "  filter: " : "", v->filter,
                   dir);
    int y = 1, br = tui_banner_rows(t, COLS);
    tui_draw_banner(t, h, y, br);
    y += br;
    wmove(h, y, 0);
    wattron(h, tui_color_attr(TUI_C_HEADER));
    for (int x = 0; x < COLS; x++)
        waddch(h, ' ');
    sess_cols sc = sessions_columns(COLS);
    for (int c = 0; c < C_MAX; c++) {
        if (sc.x[c] < 0)
            continue;
        int x = sc.x[c] + (col_right[c] ? col_right[c] - (int)strlen(col_names[c]) : 0);
        if (x < COLS)
            mvwaddnstr(h, y, x, col_names[c], COLS - x);
    }
    wattroff(h, tui_color_attr(TUI_C_HEADER));
    wnoutrefresh(h);

    WINDOW *w = v->win_list;
    werase(w);
    int rows = getmaxy(w);
    if (st->missing || st->n == 0) {
        tui_draw_text(w, 1, 2, 0, st->missing ? "No store here yet." : "No sessions yet.");
        tui_draw_text(w, 2, 2, tui_color_attr(TUI_C_DIM),
                      "Start one with 'cuptop run -- ./app' or try 'cuptop demo'.");
    } else if (v->nrows == 0) {
        tui_draw_text(w, 1, 2, 0, "No session matches the filter (Esc clears it).");
    }
    if (v->sel < v->top)
        v->top = v->sel;
    if (rows > 0 && v->sel >= v->top + (size_t)rows)
        v->top = v->sel - (size_t)rows + 1;
    for (int r = 0; r < rows && v->top + (size_t)r < v->nrows; r++) {
        size_t idx = v->top + (size_t)r;
        if (v->rows[idx] & TUI_ROW_JOB) {
            job_row_draw(t, w, r, &sc, idx);
            continue;
        }
        const tui_sess *s = &st->s[v->rows[idx]];
        tui_sess_state state = tui_sess_state_of(s);
        attr_t va, sa;
        const char *verdict = sess_verdict(s, &va);
        sa = state == TUI_ST_RUNNING || state == TUI_ST_COMPLETE ? tui_color_attr(TUI_C_OK)
                                                                  : tui_color_attr(TUI_C_BAD);
        char rate[16], loss[16], id[24];
        tui_format_count(sess_rate(s), rate, sizeof rate);
        tui_format_count(s->have_sum ? (double)s->sum.loss_total : 0.0, loss, sizeof loss);
        model_sanitize(s->id, strlen(s->id), id, sizeof id, true);
        bool sel = idx == v->sel;
        if (sel) {
            va = sa = 0;
            wattron(w, tui_color_attr(TUI_C_SELECTED));
            mvwhline(w, r, 0, ' ', COLS);
        }
        /* the column holds 10: "not responding" is said in full on the dashboard */
        tui_draw_textf(w, r, sc.x[C_STATE], sa, "%-10s",
                       state == TUI_ST_NOT_RESPONDING ? "not resp." : tui_sess_state_name(state));
        if (sc.x[C_PID] >= 0)
            tui_draw_textf(w, r, sc.x[C_PID], 0, "%7d", s->have_sum ? s->sum.pid : 0);
        size_t il = strlen(id);
        const char *ids = il > (size_t)sc.id_w ? id + il - (size_t)sc.id_w : id;
        tui_draw_textf(w, r, sc.x[C_ID], 0, "%-*.*s", sc.id_w, sc.id_w, ids);
        if (sc.x[C_DEV] >= 0)
            tui_draw_textf(w, r, sc.x[C_DEV], 0, "%-5.5s", s->devices);
        if (sc.x[C_RATE] >= 0)
            tui_draw_textf(w, r, sc.x[C_RATE], 0, "%6s", rate);
        if (sc.x[C_LOSS] >= 0)
            tui_draw_textf(w, r, sc.x[C_LOSS], s->have_sum && s->sum.loss_total ? sa : 0, "%6s",
                           loss);
        /* An unreadable session: the reason takes the command's place. */
        if (state == TUI_ST_UNREADABLE) {
            tui_draw_text(w, r, sc.x[C_VERDICT], va, "UNREADABLE");
            if (sc.x[C_CMD] >= 0)
                tui_draw_text(w, r, sc.x[C_CMD], va, verdict);
        } else {
            tui_draw_textf(w, r, sc.x[C_VERDICT], va, "%-10.10s", verdict);
            if (sc.x[C_CMD] >= 0 && sess_job(s) && s->sum.rank >= 0)
                tui_draw_textf(w, r, sc.x[C_CMD], 0, "rank %-3d %s", s->sum.rank,
                               s->cmd + s->cmd_prog);
            else if (sc.x[C_CMD] >= 0 && sess_launcher(st, s))
                tui_draw_textf(w, r, sc.x[C_CMD], 0, "launcher %s", s->cmd + s->cmd_prog);
            else if (sc.x[C_CMD] >= 0)
                tui_draw_text(w, r, sc.x[C_CMD], 0, s->cmd + s->cmd_prog);
        }
        if (sel)
            wattroff(w, tui_color_attr(TUI_C_SELECTED));
    }
    wnoutrefresh(w);
    tui_draw_status(t, v->win_status);
    static const char *const keys[] = {"F1", "Help  ", "Enter", "Open  ", "/", "Filter  ",
                                       "F6", "Sort  ", "a", "Devices  ", "A", "Attach  ",
                                       "F10", "Quit "};
    tui_draw_footer(v->win_foot, keys, sizeof keys / sizeof keys[0]);
}

/* A: attach to a CUDA process that has no session yet (cuptop attach). */
static void sessions_attach(tui *t)
{
    char **items = NULL, *msg = NULL;
    if (!t->attach_list || !t->attach_pid) {
        tui_set_status(t, TUI_C_WARN, "attach is not available in this build");
        return;
    }
    int n = t->attach_list(&items);
    if (n <= 0) {
        tui_set_status(t, TUI_C_WARN, n < 0 ? "cannot read /proc: no process to attach to"
                                            : "no CUDA process without the agent (processes "
                                              "with libcuda mapped)");
        free(items);
        return;
    }
    int k = tui_choose(t, "Attach cuptop to (Esc: cancel)", (const char *const *)items,
                       n > 16 ? 16 : n);
    if (k >= 0) {
        int pid = atoi(items[k]);
        tui_set_status(t, TUI_C_WARN, "attaching to %d ...", pid);
        tui_redraw(t);
        int rc = t->attach_pid(t->store.dir, pid, &msg);
        tui_set_status(t, rc == 0 ? TUI_C_OK : TUI_C_BAD, "attach %d: %s", pid,
                       msg ? msg : rc == 0 ? "attached" : "failed");
        free(msg);
    }
    for (int i = 0; i < n; i++)
        free(items[i]);
    free(items);
}

static bool sessions_on_key(tui *t, int key)
{
    tui_sessions_view *v = &t->sv;
    switch (key) {
    case KEY_UP:
        if (v->sel > 0)
            v->sel--;
        return true;
    case KEY_DOWN:
        if (v->sel + 1 < v->nrows)
            v->sel++;
        return true;
    case KEY_PPAGE:
        v->sel = v->sel > 10 ? v->sel - 10 : 0;
        return true;
    case KEY_NPAGE:
        v->sel = v->nrows && v->sel + 10 >= v->nrows ? v->nrows - 1 : v->sel + 10;
        return true;
    case KEY_HOME:
        v->sel = 0;
        return true;
    case KEY_END:
        v->sel = v->nrows ? v->nrows - 1 : 0;
        return true;
    case '\n':
    case '\r':
    case KEY_ENTER:
        if (v->sel < v->nrows)   /* a job row opens its first process */
            tui_open_session(t, v->rows[v->sel + ((v->rows[v->sel] & TUI_ROW_JOB) != 0)]);
        return true;
    case KEY_F(6):
    case '>':
    case '.':
        v->sort = (v->sort + 1) % TUI_SORT_MAX;
        sessions_rebuild(t);
        return true;
    case '<':
    case ',':
        v->sort = (v->sort + TUI_SORT_MAX - 1) % TUI_SORT_MAX;
        sessions_rebuild(t);
        return true;
    case 'I':
        v->sort_desc = !v->sort_desc;
        sessions_rebuild(t);
        return true;
    case '/':
    case KEY_F(3):
    case KEY_F(4): {
        char buf[sizeof v->filter] = "";   /* a new filter, not an edit */
        if (tui_prompt(t, "Filter: ", buf, sizeof buf))
            snprintf(v->filter, sizeof v->filter, "%s", buf);
        sessions_rebuild(t);
        return true;
    }
    case 'A':
        sessions_attach(t);
        return true;
    case 27:   /* Esc */
        v->filter[0] = '\0';
        sessions_rebuild(t);
        return true;
    }
    return false;
}

const struct tui_widget_ops tui_sessions_ops = {
    .name = "sessions",
    .enter = sessions_enter,
    .layout = sessions_layout,
    .sample = sessions_sample,
    .draw = sessions_draw,
    .on_key = sessions_on_key,
    .destroy = sessions_destroy,
};
