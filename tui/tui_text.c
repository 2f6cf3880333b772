/* tui_text.c - strings for the screen: sanitising and number formatting. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tui.h"

/* Length of the valid UTF-8 sequence at s (max n bytes) and its code point,
 * or 0 when the bytes are not valid (overlong, surrogate, truncated). */
static size_t utf8_decode(const unsigned char *s, size_t n, unsigned *cp)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if ((c & 0xe0) == 0xc0) {
        len = 2, min = 0x80, c &= 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        len = 3, min = 0x800, c &= 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        len = 4, min = 0x10000, c &= 0x07;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3fu);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return len;
}

/* Code points that must never reach the terminal. */
static bool cp_harmful(unsigned cp)
{
    return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) ||
           (cp >= 0x200b && cp <= 0x200f) ||   /* zero width, LRM/RLM       */
           (cp >= 0x202a && cp <= 0x202e) ||   /* bidi embeddings/overrides */
           (cp >= 0x2066 && cp <= 0x2069) ||   /* bidi isolates             */
           cp == 0xfeff;
}

size_t tui_sanitize(const char *s, size_t len, char *out, size_t outlen, bool ascii_only)
{
    if (outlen == 0)
        return 0;
    const unsigned char *u = (const unsigned char *)s;
    size_t o = 0, i = 0;
    while (i < len && u[i] != '\0') {
        unsigned cp = 0;
        size_t n = utf8_decode(u + i, len - i, &cp);
        if (n == 0 || cp_harmful(cp) || (ascii_only && cp >= 0x80)) {
            if (o + 1 >= outlen)
                break;
            out[o++] = '?';
            i += n ? n : 1;
            continue;
        }
        if (o + n >= outlen)
            break;
        memcpy(out + o, u + i, n);
        o += n;
        i += n;
    }
    out[o] = '\0';
    return o;
}

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
