/* bench/gpu/segv_bt.c - LD_PRELOAD helper for GPU debugging: on SIGSEGV,
 * SIGBUS or SIGABRT, write the faulting thread's backtrace (with the
 * libraries' names and offsets) to stderr, then die of the signal as
 * before.  Build: cc -shared -fPIC -O1 -g -o segv_bt.so segv_bt.c
 * Resolve an offset with: addr2line -f -e libcuptop-agent.so 0xOFFSET */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void bt_handler(int sig, siginfo_t *si, void *uc)
{
    void *pc[64];
    (void)uc;
    char line[96];
    int n = backtrace(pc, 64);
    int l = 0;
    const char *h = "segv_bt: fatal signal ";
    (void)!write(2, h, strlen(h));
    line[l++] = (char)('0' + sig / 10);
    line[l++] = (char)('0' + sig % 10);
    line[l++] = '\n';
    (void)!write(2, line, (size_t)l);
    (void)si;
    backtrace_symbols_fd(pc, n, 2);
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((constructor)) static void bt_init(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = bt_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGABRT, &sa, NULL);
}
