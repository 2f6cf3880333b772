/*
 * export_demangle.c - kernel names for people: Itanium C++ names
 * demangled at read time with libstdc++'s __cxa_demangle (C-callable), the
 * demangler Kineto / torch.profiler use, so the two traces name a kernel
 * alike; see doc/design.md for the choice.  Only names starting with "_Z"
 * are tried (__cxa_demangle would also turn a kernel named "f" into
 * "float"); the result is capped; on any failure the raw name stays.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "export.h"

#ifdef HAVE_CXA_DEMANGLE
/* libstdc++'s abi::__cxa_demangle: extern "C" in <cxxabi.h> */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);
#endif

size_t export_demangle(const char *s, size_t n, char *out, size_t cap)
{
#ifdef HAVE_CXA_DEMANGLE
    char in[EXPORT_DEMANGLE_IN_MAX + 1];
    int st = 0;
    if (cap < 8 || n < 3 || n > EXPORT_DEMANGLE_IN_MAX || s[0] != '_' || s[1] != 'Z' ||
        memchr(s, '\0', n))
        return 0;
    memcpy(in, s, n);
    in[n] = '\0';
    char *d = __cxa_demangle(in, NULL, NULL, &st);
    if (!d || st != 0) {
        free(d);
        return 0;
    }
    size_t l = strlen(d);
    if (l >= cap) {
        /* cut, without splitting a UTF-8 sequence, and say so */
        l = cap - 4;
        while (l > 0 && ((unsigned char)d[l] & 0xC0) == 0x80)
            l--;
        memcpy(out, d, l);
        memcpy(out + l, "...", 4);
        l += 3;
    } else {
        memcpy(out, d, l + 1);
    }
    free(d);
    return l;
#else
    (void)s;
    (void)n;
    (void)out;
    (void)cap;
    return 0;
#endif
}
