/* tui_analysis.c - the suggestion line: the model's first recommendation
 * (model_advise), with the key of the kind panel that applies it when one
 * does.  Nothing is judged here; the model decides, the monitor prints. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "tui_int.h"

/* What the kind panel's keys do about a recommendation ("" when none). */
static void key_text(const model_advice *a, char *buf, size_t len)
{
    if (a->code == MODEL_ADVICE_RAISE_POOL)
        snprintf(buf, len, "Press + to double the pool until it reaches %u.", a->pool);
    else if (a->code == MODEL_ADVICE_NARROW)
        snprintf(buf, len, "Space turns the selected kind off.");
    else
        buf[0] = '\0';
}

void tui_suggest_line(const model_summary *s, const model_advice *a, size_t n, bool running,
                      char *buf, size_t len)
{
    char key[128];
    if (!n) {
        if (s->complete)
            snprintf(buf, len, running ? "No losses now: nothing to change."
                                       : "Nothing lost: a zero-loss baseline.");
        else
            snprintf(buf, len, "INCOMPLETE, no setting known to fix it: see cuptop report.");
        return;
    }
    /* the first recommendation; on a second line, for a running session,
     * the key that applies it, or what a key can do now when it needs a
     * rerun */
    key_text(&a[0], key, sizeof key);
    if (!running) {
        snprintf(buf, len, "%s.", a[0].brief);
    } else if (key[0]) {
        snprintf(buf, len, "%s.\n%s", a[0].brief, key);
    } else {
        size_t now = 1;
        for (; now < n; now++)
            if (a[now].code == MODEL_ADVICE_RAISE_POOL || a[now].code == MODEL_ADVICE_NARROW)
                break;
        if (now < n) {
            key_text(&a[now], key, sizeof key);
            snprintf(buf, len, "%s.\nNow: %s. %s", a[0].brief, a[now].brief, key);
        } else {
            snprintf(buf, len, "%s.", a[0].brief);
        }
    }
}
