/*
 * attach_slowlib.c - a library for tests/agent/attach_kill.sh: it stands in
 * for libcuptop-agent.so (CUPTOP_AGENT=attach_slowlib.so) with a
 * constructor that takes 300 ms, so a SIGKILL of cuptop attach lands while
 * the target's thread is inside dlopen, the window issue 28 found unsafe.
 * Its cuptop_agent_attach reports a dormant session (the lines cuptop
 * attach reads from CUPTOP_RUN_REPORT) and returns 0.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

__attribute__((constructor)) static void slowlib_init(void)
{
    struct timespec ts = {0, 300000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

__attribute__((visibility("default"))) int cuptop_agent_attach(const char *args);

__attribute__((visibility("default"))) int cuptop_agent_attach(const char *args)
{
    const char *p = args ? strstr(args, "CUPTOP_RUN_REPORT=") : NULL;
    char path[4096];
    if (!p)
        return 0;
    p += strlen("CUPTOP_RUN_REPORT=");
    size_t n = strcspn(p, "\n");
    if (n >= sizeof path)
        return 0;
    memcpy(path, p, n);
    path[n] = '\0';
    FILE *f = fopen(path, "ae");
    if (f) {
        fputs("session slowlib\nrequest 0\n", f);
        fclose(f);
    }
    return 0;
}
