/*
 * check_windows.c - cuptop check over periodic windows (--capture-range
 * every:P/W): the verdict covers the windows only and says the time
 * between them was out of scope; a window that lost records is named with
 * its time and loss classes.  The words are the model's (model_scope.c),
 * the same cuptop report prints.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cuptop.h"

void check_win_read(cupstore_env *env, uint64_t from_s, uint64_t to_s, check_win *out)
{
    model_facts facts;
    char *cause = NULL;
    memset(out, 0, sizeof *out);
    if (model_facts_read(env, from_s, to_s, &facts, &cause) != 0) {
        free(cause);
        return;
    }
    if (model_windows_judge(&facts, &out->w))
        out->nloss = model_windows_lossy_lines(&facts, out->loss, 8, &out->more);
    model_facts_free(&facts);
}

void check_win_print(FILE *f, const check_win *w)
{
    char line[400];
    if (!w->w.n)
        return;
    model_windows_line(&w->w, line, sizeof line);
    fprintf(f, "  windows: %s\n", line);
    for (size_t i = 0; i < w->nloss; i++)
        fprintf(f, "  %s\n", w->loss[i]);
    if (w->more)
        fprintf(f, "  ... %zu more windows with a loss (cuptop report)\n", w->more);
}

/* {"n":..,"every":"1s/300ms","lossy":..,"open_late_ms":..,"close_late_ms":..,
 *  "cut_short":..,"out_of_scope":"...","lossy_windows":["window 2 ...",..]} */
void check_win_json(xout *o, const check_win *w)
{
    char ev[40];
    if (!w->w.n) {
        xout_puts(o, ",\"windows\":null");
        return;
    }
    cupstore_every_format(w->w.period_ms, w->w.window_ms, ev, sizeof ev);
    xout_printf(o, ",\"windows\":{\"n\":%u,\"every\":\"%s\",\"lossy\":%u,\"open_late_ms\":%.1f,"
                "\"close_late_ms\":%.1f,\"cut_short\":%u,\"out_of_scope\":\"the time between "
                "the windows\",\"lossy_windows\":[",
                w->w.n, ev, w->w.lossy, w->w.open_late_ms, w->w.close_late_ms, w->w.cut_short);
    for (size_t i = 0; i < w->nloss; i++) {
        if (i)
            xout_putc(o, ',');
        xout_json_str(o, w->loss[i], strlen(w->loss[i]));
    }
    xout_puts(o, "]}");
}
