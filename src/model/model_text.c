/*
 * model_text.c - the one sanitiser for text that came from a trace (command
 * lines, kernel names, notes, session ids): which code points may reach a
 * terminal, decided once for the monitor (model_sanitize) and the CLI's
 * text output (model_escape).  Refused: C0 and C1 controls, DEL, zero-width
 * characters and LRM/RLM, bidi embeddings, overrides and isolates, the BOM,
 * and bytes that are not valid UTF-8.
 */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "model.h"

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

size_t model_sanitize(const char *s, size_t len, char *out, size_t outlen, bool ascii_only)
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

void model_escape(char *dst, size_t len, const char *src, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)src;
    size_t o = 0;
    if (!len)
        return;
    for (size_t i = 0; i < n && o + 1 < len;) {
        unsigned char c = u[i];
        unsigned cp = 0;
        size_t sl = utf8_decode(u + i, n - i, &cp);
        char esc[16];
        size_t el = 0;
        if (c == '\\' || c == '\n' || c == '\t') {
            esc[el++] = '\\';
            esc[el++] = c == '\n' ? 'n' : c == '\t' ? 't' : '\\';
            sl = 1;
        } else if (sl && !cp_harmful(cp)) {
            /* Kept as it is: printable ASCII or a harmless UTF-8 character. */
            if (o + sl + 1 > len)
                break;
            memcpy(dst + o, u + i, sl);
            o += sl;
            i += sl;
            continue;
        } else {
            /* A control, an invisible or bidi character (every byte of it),
             * or one byte that is not valid UTF-8: \xHH. */
            if (!sl)
                sl = 1;
            for (size_t k = 0; k < sl; k++) {
                esc[el++] = '\\';
                esc[el++] = 'x';
                esc[el++] = hex[u[i + k] >> 4];
                esc[el++] = hex[u[i + k] & 15];
            }
        }
        if (o + el + 1 > len)
            break;
        memcpy(dst + o, esc, el);
        o += el;
        i += sl;
    }
    dst[o] = '\0';
}
