/* demangle_names.c - one name per line on stdin, the name export_demangle
 * shows for it on stdout (the raw name when it does not demangle): the
 * side test_demangle.sh compares with c++filt. */
#include <stdio.h>
#include <string.h>

#include "export.h"

int main(void)
{
    static char line[EXPORT_DEMANGLE_IN_MAX + 2], out[EXPORT_DEMANGLE_MAX];
    while (fgets(line, sizeof line, stdin)) {
        size_t n = strcspn(line, "\n");
        line[n] = '\0';
        size_t l = export_demangle(line, n, out, sizeof out);
        puts(l ? out : line);
    }
    return 0;
}
