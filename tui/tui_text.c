/* tui_text.c - strings for the screen: number and time formatting (the
 * sanitiser is model_sanitize, shared with the CLI). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cupstore.h"
#include "tui.h"

void tui_format_count(double v, char *buf, size_t len)
{
    static const char units[] = " kMGTP";
    if (!(v >= 0.0))
        v = 0.0;
    if (v < 1000.0) {
        if (v < 10.0 && v != floor(v))
            snprintf(buf, len, "%.1f", v);
        else
            snprintf(buf, len, "%.0f", v);
        return;
    }
    size_t u = 0;
    while (v >= 999.5 && u + 1 < sizeof units - 1) {
        v /= 1000.0;
        u++;
    }
    if (v < 9.95)
        snprintf(buf, len, "%.1f%c", v, units[u]);
    else
        snprintf(buf, len, "%.0f%c", v, units[u]);
}

void tui_format_ns(double ns, char *buf, size_t len)
{
    if (!(ns >= 0.0))
        ns = 0.0;
    if (ns < 1e3)
        snprintf(buf, len, "%.0fns", ns);
    else if (ns < 1e4)
        snprintf(buf, len, "%.1fus", ns / 1e3);
    else if (ns < 1e6)
        snprintf(buf, len, "%.0fus", ns / 1e3);
    else if (ns < 1e7)
        snprintf(buf, len, "%.1fms", ns / 1e6);
    else if (ns < 1e9)
        snprintf(buf, len, "%.0fms", ns / 1e6);
    else
        snprintf(buf, len, "%.1fs", ns / 1e9);
}

void tui_format_secs(uint64_t s, char *buf, size_t len)
{
    if (s < 60)
        snprintf(buf, len, "%us", (unsigned)s);
    else if (s < 3600)
        snprintf(buf, len, "%um%02us", (unsigned)(s / 60), (unsigned)(s % 60));
    else
        snprintf(buf, len, "%uh%02um", (unsigned)(s / 3600), (unsigned)(s / 60 % 60));
}

void tui_format_clock(uint64_t second, char *buf, size_t len)
{
    time_t t = (time_t)second;
    struct tm tm;
    if (!localtime_r(&t, &tm)) {
        snprintf(buf, len, "--:--:--");
        return;
    }
    strftime(buf, len, "%H:%M:%S", &tm);
}

size_t tui_wrap(const char *s, int width, tui_line *lines, size_t max)
{
    size_t n = 0, len = strlen(s), i = 0;
    if (width < 1)
        width = 1;
    while (i < len && n < max) {
        while (i < len && s[i] == ' ')
            i++;
        if (i >= len)
            break;
        /* The longest run of whole words within `width` display columns. */
        size_t end = i, brk = 0, cols = 0, j = i;
        while (j < len) {
            size_t k = j + 1;
            while (k < len && ((unsigned char)s[k] & 0xc0) == 0x80)
                k++;   /* one code point, one column */
            if (cols + 1 > (size_t)width)
                break;
            cols++;
            j = k;
            if (j >= len || s[j] == ' ')
                brk = j;
        }
        if (j >= len)
            end = len;
        else if (brk > i)
            end = brk;
        else
            end = j;   /* a word longer than the line: cut it */
        lines[n].start = i;
        lines[n].len = end - i;
        n++;
        i = end;
    }
    return n;
}

