/*
 * fakeapp.c - drives the agent over fake_cupti.so for the smoke test:
 *   fakeapp FAKE_CUPTI AGENT KERNELS RUNTIMES EXIT
 * EXIT: return, exit, term (SIGTERM, default action), abort, kill (SIGKILL).
 * Prints the records written into agent buffers ("written=N") on stderr.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cupti.h>

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: fakeapp FAKE_CUPTI AGENT KERNELS RUNTIMES EXIT\n");
        return 2;
    }
    void *fk = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    void *ag = fk ? dlopen(argv[2], RTLD_NOW) : NULL;
    if (!ag) {
        fprintf(stderr, "fakeapp: %s\n", dlerror());
        return 2;
    }
    setenv("CUPTOP_CUPTI_LIBRARY", argv[1], 1);
    int (*init)(void) = (int (*)(void))dlsym(ag, "InitializeInjection");
    size_t (*emit)(int, uint32_t, size_t) = (size_t(*)(int, uint32_t, size_t))dlsym(fk, "fake_emit");
    if (!init || !emit)
        return 2;
    init();
    size_t w = 0, nk = strtoul(argv[3], NULL, 10), nr = strtoul(argv[4], NULL, 10);
    for (size_t i = 0; i < nk || i < nr; i += 1000) {
        if (i < nk)
            w += emit(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, (uint32_t)(i / 1000) % 2,
                      nk - i < 1000 ? nk - i : 1000);
        if (i < nr)
            w += emit(CUPTI_ACTIVITY_KIND_RUNTIME, 0, nr - i < 1000 ? nr - i : 1000);
    }
    fprintf(stderr, "written=%zu\n", w);
    const char *how = argv[5];
    if (!strcmp(how, "exit"))
        exit(0);
    if (!strcmp(how, "term"))
        raise(SIGTERM);
    if (!strcmp(how, "abort"))
        abort();
    if (!strcmp(how, "kill"))
        raise(SIGKILL);
    return 0;
}
