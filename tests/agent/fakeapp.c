/*
 * fakeapp.c - drives the agent over fake_cupti.so for the smoke test:
 *   fakeapp FAKE_CUPTI AGENT KERNELS RUNTIMES EXIT
 * EXIT: return, exit, term (SIGTERM, default action), abort, kill (SIGKILL),
 * fork (a child emits 1234 kernel records on device 1, then exits).
 * FAKE_WAIT_ENABLED=1: wait until kernel records are enabled first.
 * Prints the records written into agent buffers ("written=N") on stderr.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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
    if (getenv("FAKE_WAIT_ENABLED")) {
        /* dormant test: wait (at most 60 s) until a control request has
         * turned kernel records on */
        int (*enabled)(int) = (int (*)(int))dlsym(fk, "fake_enabled");
        for (int i = 0; i < 6000 && !enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); i++)
            usleep(10000);
    }
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
    if (!strcmp(how, "fork")) {
        /* the child traces on its own session; the parent waits for it */
        CUptiResult (*flush)(uint32_t) = (CUptiResult(*)(uint32_t))dlsym(fk, "cuptiActivityFlushAll");
        flush(0);
        pid_t pid = fork();
        if (pid == 0) {
            size_t cw = emit(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 1, 1234);
            fprintf(stderr, "child_written=%zu\n", cw);
            exit(0);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 3;
    }
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
