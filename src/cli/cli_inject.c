/*
 * cli_inject.c - cuptop's own ptrace injector (x86-64 Linux).
 *
 * Steps, each named in a failure ("step dlopen: ..."):
 *   symbols    dlopen, dlsym, dlerror in the target: libc's address in
 *              /proc/PID/maps plus the symbol's offset, read from the
 *              dynamic symbol table of that very file (no dependency); and
 *              room for the trampoline's code: the padding after the end
 *              of an executable segment of a mapped library
 *   seize      PTRACE_SEIZE one thread (the main thread, or the first
 *              thread that is not a zombie); the others keep running.
 *              Never PTRACE_O_EXITKILL: a dead injector's target runs on
 *   stop       PTRACE_INTERRUPT and wait for the stop; a signal that
 *              arrives meanwhile is kept and given to the thread when it
 *              resumes
 *   save       registers (general and FP/SSE), the stack bytes the block
 *              will use (below the 128-byte red zone), the padding's bytes
 *   write      the block (what to call, the registers to leave with) and
 *              the trampoline's code (see "the trampoline" below)
 *   dlopen     the thread resumes in the trampoline, which loads the
 *              library, calls ENTRY(ARG), restores its FP state and waits
 *              (1 ms select(2) waits, about 1 s); the injector reads the
 *              block until the load is done, stops the thread in its wait
 *   restore    the saved registers (the interrupted system call restarts
 *              with the kernel's own rules), then the stack bytes and the
 *              padding's bytes
 *   detach     PTRACE_DETACH
 * A failure after the stop restores and detaches before it says so.
 * SIGINT/SIGTERM/SIGHUP to the injector are held during the injection and
 * acted on after the restore.  A SIGKILL of the injector at any instant is
 * safe: until the registers are set the thread has its own; from then on
 * the trampoline finishes the load by itself, waits, puts every register
 * back and jumps to where the thread was (the system call restarted as
 * the kernel would; tests/agent/attach_kill.sh kills it at every step and
 * at random times).
 */
#include "config.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_inject.h"
#include "cli_inject_int.h"

#if defined(__x86_64__) && defined(__linux__)
#include <sys/ptrace.h>
#include <sys/user.h>

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif

#define INJ_CALL_TIMEOUT_MS 20000
#define INJ_MAX_SIGS 8

typedef struct inj {
    pid_t pid, tid;
    int mem;                          /* /proc/PID/mem                   */
    bool seized, stopped, saved;
    struct user_regs_struct regs;     /* the thread's own                */
    struct user_fpregs_struct fp;
    uint64_t lo, hi;                  /* stack bytes saved: [lo, hi)     */
    unsigned char *bytes;
    uint64_t block;                   /* the trampoline's data (in lo-hi) */
    uint64_t cave;                    /* its code, in a library's padding */
    unsigned char cave_bytes[512];    /* what the padding held            */
    bool cave_written;                /* the code is there                */
    bool taken, left;                 /* taken back by us / left alone    */
    uint64_t res[4];                  /* handle, fn, ret, err             */
    int sigs[INJ_MAX_SIGS];           /* signals kept for the end        */
    unsigned nsig;
    const char *die_at, *pause_at;
    char *cause;
} inj;

static int inj_fail(inj *j, const char *step, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int inj_fail(inj *j, const char *step, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!j->cause && asprintf(&j->cause, "step %s: %s", step, msg) < 0)
        j->cause = NULL;
    return -1;
}

/* The test hooks: die here (SIGKILL) when CUPTOP_INJECT_DIE_AT names the
 * step; hold the target 1 s when CUPTOP_INJECT_PAUSE_AT does (a test sends
 * it a signal meanwhile). */
static void inj_hook(inj *j, const char *step)
{
    if (j->die_at && !strcmp(j->die_at, step))
        kill(getpid(), SIGKILL);
    if (j->pause_at && !strcmp(j->pause_at, step)) {
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL);
    }
}

static void inj_keep_signal(inj *j, int sig)
{
    if (sig > 0 && j->nsig < INJ_MAX_SIGS)
        j->sigs[j->nsig++] = sig;
}

/* ---- ptrace --------------------------------------------------------------- */

static uint64_t inj_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Wait for the thread's next stop (WNOHANG polling, until deadline). 0
 * and *st: stopped; -1: gone (exited or killed); -2: timed out. */
static int inj_wait(inj *j, int *st, uint64_t deadline)
{
    for (;;) {
        pid_t r = waitpid(j->tid, st, __WALL | WNOHANG);
        if (r == j->tid) {
            if (WIFSTOPPED(*st))
                return 0;
            return -1;
        }
        if (r < 0 && errno != EINTR)
            return -1;
        if (inj_now_ms() >= deadline)
            return -2;
        struct timespec ts = {0, 500000L};
        nanosleep(&ts, NULL);
    }
}

static int inj_mem(inj *j, bool wr, uint64_t addr, void *buf, size_t len)
{
    ssize_t n = wr ? pwrite(j->mem, buf, len, (off_t)addr) : pread(j->mem, buf, len, (off_t)addr);
    return n == (ssize_t)len ? 0 : -1;
}

/* Choose the thread: the main one unless it is a zombie (it called
 * pthread_exit while others run). */
static pid_t inj_pick_thread(pid_t pid)
{
    char p[96], buf[512];
    pid_t first = 0;
    FILE *f;
    snprintf(p, sizeof p, "/proc/%d/task/%d/stat", (int)pid, (int)pid);
    if ((f = fopen(p, "re"))) {
        char *rp = fgets(buf, sizeof buf, f) ? strrchr(buf, ')') : NULL;
        fclose(f);
        if (rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X')
            return pid;
    }
    /* another live thread */
    for (int tid = pid + 1; tid < pid + 4096 && !first; tid++) {
        snprintf(p, sizeof p, "/proc/%d/task/%d/stat", (int)pid, tid);
        if (!(f = fopen(p, "re")))
            continue;
        char *rp = fgets(buf, sizeof buf, f) ? strrchr(buf, ')') : NULL;
        fclose(f);
        if (rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X')
            first = tid;
    }
    return first ? first : pid;
}

/* ---- the trampoline ------------------------------------------------------
 *
 * The target's thread runs the whole load on its own: dlopen, dlsym (or
 * dlerror), the entry, then it puts its registers back and jumps to where
 * it was.  Nothing it does depends on the injector being alive, so a
 * SIGKILL of cuptop at any instant leaves a target that carries on (the
 * kernel detaches a dead tracer's tracees and lets them run with the
 * registers they have).  The code sits in the padding after the end of an
 * executable segment of a library the process has mapped (libc's, most
 * often: bytes mapped from the file that nothing executes); its data block
 * and its stack below the thread's red zone.  rbx holds the block.
 *
 * Block (64-byte aligned, TB_* offsets):
 *   state   0 running, 1 done and waiting, 2 leaving on its own
 *   handle, fn, ret, err   dlopen's, dlsym's, the entry's, dlerror's result
 *   dlopen, dlsym, dlerror, lib, entry, arg   what to call with what
 *   spins   how many 1 ms waits (select) before leaving on its own
 *   xsave   1: xsave64/xrstor64 (every enabled component), 0: fxsave64
 *   tv      select's timeout
 *   regs    rax rcx rdx rsi rdi rbp r8-r15 rflags rbx rsp: the registers
 *           to leave with (the interrupted system call restarted as the
 *           kernel would: rip - 2, rax = its number, or restart_syscall)
 *   fpsize  the FP area's size; fparea: where the thread put it (on its
 *           own stack, below the block: the thread's own stores grow the
 *           stack, which the injector's writes through /proc/PID/mem
 *           cannot), saved at the start, put back at the end
 * The resume rip is the last quadword of the code itself (read with a
 * rip-relative jump, since every register is the thread's by then).
 *
 * The injector, while alive, takes the thread back itself once the state
 * is 1: it stops it in its wait, sets the registers it saved (so the
 * kernel restarts the system call with its exact rules, signals
 * included), puts the stack and code bytes back and detaches.  If it is
 * gone (or too slow), the thread leaves on its own after the waits:
 * state 2, and the padding keeps the code (harmless, never run again).
 * The waits are select(2) calls: they do not touch the thread's
 * restart_block (nanosleep and poll would), which an interrupted
 * clock_nanosleep of the program still needs.
 */
enum {
    TB_STATE = 0, TB_HANDLE = 8, TB_FN = 16, TB_RET = 24, TB_ERR = 32, TB_DLOPEN = 40,
    TB_DLSYM = 48, TB_DLERROR = 56, TB_LIB = 64, TB_ENTRY = 72, TB_ARG = 80, TB_SPINS = 88,
    TB_XSAVE = 96, TB_TV = 104, TB_REGS = 128, TB_FPSIZE = 272, TB_FPAREA = 280, TB_STR = 320
};
#define INJ_SPINS 1000   /* ~1 s of 1 ms waits when nobody takes it back */

__asm__(
    "    .pushsection .rodata\n"
    "    .balign 16\n"
    "cli_inj_tramp:\n"
    "    subq 272(%rbx), %rsp\n"         /* the FP area, on its own stack */
    "    andq $-64, %rsp\n"
    "    movq %rsp, 280(%rbx)\n"
    "    xorl %eax, %eax\n"              /* xsave header: reserved bytes 0 */
    "    movq %rax, 512(%rsp)\n"
    "    movq %rax, 520(%rsp)\n"
    "    movq %rax, 528(%rsp)\n"
    "    movq %rax, 536(%rsp)\n"
    "    movq %rax, 544(%rsp)\n"
    "    movq %rax, 552(%rsp)\n"
    "    movq %rax, 560(%rsp)\n"
    "    movq %rax, 568(%rsp)\n"
    "    movl $-1, %eax\n"
    "    movl $-1, %edx\n"
    "    cmpq $0, 96(%rbx)\n"
    "    je 1f\n"
    "    xsave64 (%rsp)\n"
    "    jmp 2f\n"
    "1:  fxsave64 (%rsp)\n"
    "2:  subq $64, %rsp\n"
    "    movq 64(%rbx), %rdi\n"
    "    movl $2, %esi\n"                 /* RTLD_NOW */
    "    callq *40(%rbx)\n"
    "    movq %rax, 8(%rbx)\n"
    "    testq %rax, %rax\n"
    "    jnz 3f\n"
    "    movq 56(%rbx), %rax\n"
    "    testq %rax, %rax\n"
    "    jz 5f\n"
    "    callq *%rax\n"
    "    movq %rax, 32(%rbx)\n"
    "    jmp 5f\n"
    "3:  movq %rax, %rdi\n"
    "    movq 72(%rbx), %rsi\n"
    "    callq *48(%rbx)\n"
    "    movq %rax, 16(%rbx)\n"
    "    testq %rax, %rax\n"
    "    jz 5f\n"
    "    movq 80(%rbx), %rdi\n"
    "    callq *%rax\n"
    "    movq %rax, 24(%rbx)\n"
    "5:  movq 280(%rbx), %rcx\n"
    "    movl $-1, %eax\n"
    "    movl $-1, %edx\n"
    "    cmpq $0, 96(%rbx)\n"
    "    je 6f\n"
    "    xrstor64 (%rcx)\n"
    "    jmp 7f\n"
    "6:  fxrstor64 (%rcx)\n"
    "7:  movq 88(%rbx), %r12\n"
    "cli_inj_tramp_wait:\n"
    "    movq $1, (%rbx)\n"
    "8:  movq $0, 104(%rbx)\n"
    "    movq $1000, 112(%rbx)\n"
    "    movl $23, %eax\n"                /* select(0, 0, 0, 0, &tv) */
    "    xorl %edi, %edi\n"
    "    xorl %esi, %esi\n"
    "    xorl %edx, %edx\n"
    "    xorl %r10d, %r10d\n"
    "    leaq 104(%rbx), %r8\n"
    "    syscall\n"
    "    decq %r12\n"
    "    jnz 8b\n"
    "cli_inj_tramp_leave:\n"
    "    movq $2, (%rbx)\n"
    "    leaq 128(%rbx), %rsp\n"
    "    popq %rax\n"
    "    popq %rcx\n"
    "    popq %rdx\n"
    "    popq %rsi\n"
    "    popq %rdi\n"
    "    popq %rbp\n"
    "    popq %r8\n"
    "    popq %r9\n"
    "    popq %r10\n"
    "    popq %r11\n"
    "    popq %r12\n"
    "    popq %r13\n"
    "    popq %r14\n"
    "    popq %r15\n"
    "    popfq\n"
    "    popq %rbx\n"
    "    movq (%rsp), %rsp\n"
    "    jmpq *cli_inj_tramp_rip(%rip)\n"
    "    .balign 8\n"
    "cli_inj_tramp_rip:\n"
    "    .quad 0\n"
    "cli_inj_tramp_end:\n"
    "    .popsection\n");

extern const unsigned char cli_inj_tramp[], cli_inj_tramp_wait[], cli_inj_tramp_leave[],
    cli_inj_tramp_rip[], cli_inj_tramp_end[];

#define INJ_TRAMP_LEN ((size_t)(cli_inj_tramp_end - cli_inj_tramp))

/* The registers to leave with, when the thread leaves on its own: the
 * saved ones, with an interrupted system call restarted the way the
 * kernel would have (arch/x86/kernel/signal.c, no handler). */
static void inj_resume_regs(const struct user_regs_struct *s, struct user_regs_struct *r)
{
    *r = *s;
    if ((int64_t)s->orig_rax < 0)
        return;
    switch ((int64_t)s->rax) {
    case -512: case -513: case -514:   /* ERESTARTSYS, ERESTARTNOINTR, ERESTARTNOHAND */
        r->rax = s->orig_rax;
        r->rip -= 2;
        break;
    case -516:                         /* ERESTART_RESTARTBLOCK */
        r->rax = SYS_restart_syscall;
        r->rip -= 2;
        break;
    default:
        break;
    }
}

/* The size of the xsave area for every component the CPU supports (0: no
 * xsave; then fxsave's 512 bytes). */
static size_t inj_xsave_size(void)
{
    unsigned a = 1, b = 0, c = 0, d = 0;
    __asm__ volatile("cpuid" : "+a"(a), "=b"(b), "=c"(c), "=d"(d));
    if (!(c & (1u << 26)) || !(c & (1u << 27)))   /* XSAVE, OSXSAVE */
        return 0;
    a = 0xd, c = 0;
    __asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
    return c >= 576 && c <= 65536 ? c : 0;
}

static bool inj_in_wait(const inj *j, uint64_t rip)
{
    uint64_t w = j->cave + (uint64_t)(cli_inj_tramp_wait - cli_inj_tramp);
    uint64_t l = j->cave + (uint64_t)(cli_inj_tramp_leave - cli_inj_tramp);
    return rip >= w && rip <= l;
}

static uint64_t inj_block_u64(inj *j, unsigned off)
{
    uint64_t v = 0;
    if (inj_mem(j, false, j->block + off, &v, 8))
        return (uint64_t)-1;
    return v;
}

/* The load did not finish in time (a lock the stopped thread's own
 * program holds?): take the thread back, stopped, its signals kept for
 * the detach.  -1 with the cause. */
static int inj_timed_out(inj *j)
{
    int st;
    (void)ptrace(PTRACE_INTERRUPT, j->tid, NULL, NULL);
    for (;;) {
        if (inj_wait(j, &st, inj_now_ms() + 2000) != 0)
            return inj_fail(j, "dlopen", "the load did not finish and the thread "
                            "cannot be stopped again");
        if ((st >> 16) == PTRACE_EVENT_STOP)
            break;
        inj_keep_signal(j, WSTOPSIG(st));   /* delivered at the detach */
        (void)ptrace(PTRACE_CONT, j->tid, NULL, NULL);
        (void)ptrace(PTRACE_INTERRUPT, j->tid, NULL, NULL);
    }
    j->stopped = true;
    return inj_fail(j, "dlopen", "the load did not finish in %d s (the thread may wait "
                    "for a lock its own program holds); it was taken back",
                    INJ_CALL_TIMEOUT_MS / 1000);
}

/* Start the trampoline and see it through: 0 with j->res[] read, the
 * thread stopped and j->taken (its own registers put back by us) or
 * j->left (it left on its own: nothing more to put back); -1 with a cause
 * (the thread stopped, its registers still to restore, or gone). */
static int inj_run(inj *j)
{
    int st, sig = j->nsig ? j->sigs[0] : 0;
    bool asked = false;   /* a PTRACE_INTERRUPT of ours is pending */
    /* the first kept signal goes in now, the others after it: the program's
     * handlers run before the load (its stop took them), never lost */
    if (ptrace(PTRACE_CONT, j->tid, NULL, (void *)(intptr_t)sig))
        return inj_fail(j, "dlopen", "cannot resume the thread: %s", strerror(errno));
    for (unsigned i = 1; i < j->nsig; i++)
        (void)syscall(SYS_tgkill, j->pid, j->tid, j->sigs[i]);
    j->nsig = 0;
    j->stopped = false;
    inj_hook(j, "started");
    uint64_t deadline = inj_now_ms() + INJ_CALL_TIMEOUT_MS;
    for (;;) {
        uint64_t state = inj_block_u64(j, TB_STATE);
        if (state == 1 && !asked) {
            inj_hook(j, "waiting");
            if (ptrace(PTRACE_INTERRUPT, j->tid, NULL, NULL) == 0)
                asked = true;
        }
        if (state == 2 && !asked && ptrace(PTRACE_INTERRUPT, j->tid, NULL, NULL) == 0)
            asked = true;
        pid_t r = waitpid(j->tid, &st, __WALL | WNOHANG);
        if (r == j->tid && !WIFSTOPPED(st)) {
            j->stopped = j->seized = false;
            return inj_fail(j, "dlopen", "the process ended during the load");
        }
        if (r == j->tid) {
            j->stopped = true;
            if ((st >> 16) == PTRACE_EVENT_STOP) {
                struct user_regs_struct now;
                asked = false;
                state = inj_block_u64(j, TB_STATE);
                if (ptrace(PTRACE_GETREGS, j->tid, NULL, &now) == 0 &&
                    ((state == 1 && inj_in_wait(j, now.rip)) ||
                     (state == 2 && (now.rip < j->cave || now.rip >= j->cave + INJ_TRAMP_LEN)))) {
                    j->left = state == 2;
                    j->taken = state == 1;
                    for (unsigned i = 0; i < 4; i++)
                        j->res[i] = inj_block_u64(j, TB_HANDLE + 8 * i);
                    return 0;
                }
                /* a group stop, a stale interrupt, or not yet in the wait */
                j->stopped = false;
                if (ptrace(PTRACE_CONT, j->tid, NULL, NULL))
                    return inj_fail(j, "dlopen", "cannot resume the thread: %s", strerror(errno));
                continue;
            }
            sig = WSTOPSIG(st);
            if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) {
                struct user_regs_struct now;
                if (ptrace(PTRACE_GETREGS, j->tid, NULL, &now))
                    now.rip = 0;
                return inj_fail(j, "dlopen", "the load raised signal %d in the target at %#llx",
                                sig, (unsigned long long)now.rip);
            }
            /* the program's own signal: delivered now, its handler runs on
             * this thread as during any library call */
            j->stopped = false;
            if (ptrace(PTRACE_CONT, j->tid, NULL, (void *)(intptr_t)sig))
                return inj_fail(j, "dlopen", "cannot resume the thread: %s", strerror(errno));
            continue;
        }
        if (r < 0 && errno != EINTR) {
            j->stopped = j->seized = false;
            return inj_fail(j, "dlopen", "the thread is gone: %s", strerror(errno));
        }
        if (inj_now_ms() >= deadline)
            return inj_timed_out(j);
        struct timespec ts = {0, 500000L};
        nanosleep(&ts, NULL);
    }
}

/* Put every register and byte back and let the thread go.  Registers
 * first: from then on the thread never runs the trampoline again, so its
 * block and code can go (and a SIGKILL between the steps leaves a thread
 * with its own registers).  A thread that left the trampoline on its own
 * is let go as it is. */
static void inj_release(inj *j)
{
    if (j->stopped && j->saved && !j->left) {
        inj_hook(j, "restore");
        if (ptrace(PTRACE_SETFPREGS, j->tid, NULL, &j->fp) ||
            ptrace(PTRACE_SETREGS, j->tid, NULL, &j->regs))
            (void)inj_fail(j, "restore", "cannot restore the registers: %s", strerror(errno));
        else {
            inj_hook(j, "taken");
            if (j->bytes && inj_mem(j, true, j->lo, j->bytes, (size_t)(j->hi - j->lo)))
                (void)inj_fail(j, "restore", "cannot restore the stack bytes: %s",
                               strerror(errno));
            if (j->cave_written && inj_mem(j, true, j->cave, j->cave_bytes, INJ_TRAMP_LEN))
                (void)inj_fail(j, "restore", "cannot restore the code bytes: %s",
                               strerror(errno));
        }
        inj_hook(j, "restored");
    }
    if (j->seized) {
        int sig = j->nsig ? j->sigs[0] : 0;
        if (ptrace(PTRACE_DETACH, j->tid, NULL, (void *)(intptr_t)sig))
            (void)inj_fail(j, "detach", "%s", strerror(errno));
        for (unsigned i = 1; i < j->nsig; i++)
            (void)syscall(SYS_tgkill, j->pid, j->tid, j->sigs[i]);
    }
    j->seized = j->stopped = false;
}

static int inj_seize_stop(inj *j)
{
    int st;
    if (ptrace(PTRACE_SEIZE, j->tid, NULL, NULL)) {
        int e = errno;
        if (e == EPERM)
            return -2;
        return inj_fail(j, "seize", "%s", strerror(e));
    }
    j->seized = true;
    if (ptrace(PTRACE_INTERRUPT, j->tid, NULL, NULL))
        return inj_fail(j, "stop", "PTRACE_INTERRUPT: %s", strerror(errno));
    for (;;) {
        int w = inj_wait(j, &st, inj_now_ms() + 5000);
        if (w == -1) {
            j->seized = false;
            return inj_fail(j, "stop", "the process ended");
        }
        if (w == -2)
            return inj_fail(j, "stop", "the thread did not stop in 5 s");
        if ((st >> 16) == PTRACE_EVENT_STOP)
            break;
        /* a signal on its way in: keep it for the end, take this stop */
        inj_keep_signal(j, WSTOPSIG(st));
        break;
    }
    j->stopped = true;
    inj_hook(j, "stopped");
    return 0;
}

/* EPERM from PTRACE_SEIZE: what blocks it and how to allow it. */
static char *inj_eperm(pid_t pid)
{
    char *s = NULL;
    int scope = -1;
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
    if (f) {
        if (fscanf(f, "%d", &scope) != 1)
            scope = -1;
        fclose(f);
    }
    int r;
    if (scope == 3)
        r = asprintf(&s, "ptrace of %d refused: Yama ptrace_scope is 3 (no ptrace at all until "
                     "reboot)", (int)pid);
    else if (scope >= 1 && geteuid() != 0)
        r = asprintf(&s, "ptrace of %d refused: Yama ptrace_scope is %d (%s); allow it "
                     "with 'sudo sysctl kernel.yama.ptrace_scope=%s', or run cuptop attach as "
                     "root%s", (int)pid, scope,
                     scope == 1 ? "only a parent may trace" : "only root may trace",
                     scope == 1 ? "0" : "1",
                     scope == 1 ? " (or the program allows it: prctl(PR_SET_PTRACER, ...))" : "");
    else
        r = asprintf(&s, "ptrace of %d refused (EPERM): another uid, a tracer already attached "
                     "(TracerPid in /proc/%d/status), or a container without CAP_SYS_PTRACE "
                     "(docker run --cap-add=SYS_PTRACE, or a seccomp profile that allows ptrace)",
                     (int)pid, (int)pid);
    return r < 0 ? NULL : s;
}

/* Step "symbols", before anything is stopped: the right to read pid's
 * maps (that of tracing it; -2 when refused), the loader's entry points
 * (fn) and a code cave for the trampoline (j->cave).  0, or -1 / -2 with
 * j->cause. */
static int inj_symbols(inj *j, uint64_t fn[3])
{
    char mp[64], why[600];
    snprintf(mp, sizeof mp, "/proc/%d/maps", (int)j->pid);
    FILE *probe = fopen(mp, "re");   /* opening needs the right to trace */
    if (probe)
        fclose(probe);
    else if (errno == EACCES || errno == EPERM) {
        j->cause = inj_eperm(j->pid);   /* another uid: the same rule as ptrace */
        return -2;
    }
    if (cli_inject_dl_syms(j->pid, fn, why, sizeof why))
        return inj_fail(j, "symbols", "%s", why);
    if (INJ_TRAMP_LEN > sizeof j->cave_bytes ||
        cli_inject_find_cave(j->pid, INJ_TRAMP_LEN, &j->cave))
        return inj_fail(j, "symbols", "no room for the loader's %zu bytes of code after any "
                        "executable segment of process %d's libraries", INJ_TRAMP_LEN,
                        (int)j->pid);
    return 0;
}

/* Step "save": open the target's memory (mem_path), keep the thread's
 * registers, the stack below its red zone that the trampoline's block of
 * need bytes will take, and the code padding the trampoline will
 * overwrite; *img: a zeroed image of that stack (caller frees).  0, or -1
 * (said in j->cause). */
static int inj_save(inj *j, const char *mem_path, size_t need, unsigned char **img)
{
    if ((j->mem = open(mem_path, O_RDWR | O_CLOEXEC)) < 0)
        return inj_fail(j, "save", "cannot open %s: %s", mem_path, strerror(errno));
    if (ptrace(PTRACE_GETREGS, j->tid, NULL, &j->regs) ||
        ptrace(PTRACE_GETFPREGS, j->tid, NULL, &j->fp))
        return inj_fail(j, "save", "cannot read the registers: %s", strerror(errno));
    j->hi = (j->regs.rsp - 128) & ~(uint64_t)63;
    j->block = (j->hi - need) & ~(uint64_t)63;
    j->lo = j->block;
    j->bytes = malloc((size_t)(j->hi - j->lo));
    *img = calloc(1, (size_t)(j->hi - j->lo));
    if (!j->bytes || !*img || inj_mem(j, false, j->lo, j->bytes, (size_t)(j->hi - j->lo))) {
        free(j->bytes);
        free(*img);
        j->bytes = NULL;
        return inj_fail(j, "save", "cannot read the thread's stack at %#llx-%#llx (rsp %#llx): %s",
                        (unsigned long long)j->lo, (unsigned long long)j->hi,
                        (unsigned long long)j->regs.rsp, strerror(errno));
    }
    if (inj_mem(j, false, j->cave, j->cave_bytes, INJ_TRAMP_LEN)) {
        free(j->bytes);
        free(*img);
        j->bytes = NULL;
        return inj_fail(j, "save", "cannot read the code padding at %#llx: %s",
                        (unsigned long long)j->cave, strerror(errno));
    }
    j->saved = true;
    inj_hook(j, "saved");
    return 0;
}

/* The trampoline's block in img (the stack's image, [j->lo, j->hi)): the
 * loader's entry points (fn), the strings str (library, entry, argument),
 * its FP area (xsz: XSAVE's size, 0 without it) and the registers to
 * resume with; code: the trampoline, returning to where the thread was. */
static void inj_image(const inj *j, const uint64_t fn[3], const char *const str[3], size_t xsz,
                      unsigned char *img, unsigned char *code)
{
    const char *lib = str[0], *entry = str[1], *arg = str[2];
    size_t l1 = strlen(lib) + 1, l2 = strlen(entry) + 1, l3 = strlen(arg) + 1;
    size_t fsz = xsz ? (xsz + 63) & ~(size_t)63 : 512;
    uint64_t a_lib = j->block + TB_STR, a_entry = a_lib + l1, a_arg = a_entry + l2;
    struct user_regs_struct back;
    inj_resume_regs(&j->regs, &back);
    uint64_t fields[][2] = {
        {TB_DLOPEN, fn[0]}, {TB_DLSYM, fn[1]}, {TB_DLERROR, fn[2]}, {TB_LIB, a_lib},
        {TB_ENTRY, a_entry}, {TB_ARG, a_arg}, {TB_SPINS, INJ_SPINS}, {TB_XSAVE, xsz != 0},
        {TB_FPSIZE, fsz},
        {TB_REGS + 0 * 8, back.rax}, {TB_REGS + 1 * 8, back.rcx}, {TB_REGS + 2 * 8, back.rdx},
        {TB_REGS + 3 * 8, back.rsi}, {TB_REGS + 4 * 8, back.rdi}, {TB_REGS + 5 * 8, back.rbp},
        {TB_REGS + 6 * 8, back.r8}, {TB_REGS + 7 * 8, back.r9}, {TB_REGS + 8 * 8, back.r10},
        {TB_REGS + 9 * 8, back.r11}, {TB_REGS + 10 * 8, back.r12},
        {TB_REGS + 11 * 8, back.r13}, {TB_REGS + 12 * 8, back.r14},
        {TB_REGS + 13 * 8, back.r15}, {TB_REGS + 14 * 8, back.eflags},
        {TB_REGS + 15 * 8, back.rbx}, {TB_REGS + 16 * 8, back.rsp}};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        memcpy(img + fields[i][0], &fields[i][1], 8);
    memcpy(img + (a_lib - j->lo), lib, l1);
    memcpy(img + (a_entry - j->lo), entry, l2);
    memcpy(img + (a_arg - j->lo), arg, l3);
    memcpy(code, cli_inj_tramp, INJ_TRAMP_LEN);
    memcpy(code + (cli_inj_tramp_rip - cli_inj_tramp), &back.rip, 8);
}

/* Steps "dlopen" and "dlsym": start the thread in the trampoline, let it
 * load lib and find entry, and take it back (inj_run; its results in
 * j->res).  0, or -1 (said in j->cause). */
static int inj_call(inj *j, const char *lib, const char *entry)
{
    struct user_regs_struct r = j->regs;
    r.rip = j->cave;
    r.rbx = j->block;
    r.rsp = j->block - 64;            /* 16-byte aligned: a call's entry */
    r.rax = 0;
    r.orig_rax = (uint64_t)-1;        /* no system call restart into it */
    r.eflags &= ~(uint64_t)0x400;     /* DF clear, as the ABI wants     */
    if (ptrace(PTRACE_SETREGS, j->tid, NULL, &r))
        return inj_fail(j, "dlopen", "cannot set the registers: %s", strerror(errno));
    if (inj_run(j))
        return -1;
    if (!j->res[0]) {
        char msg[512] = "no reason given";
        if (!j->res[3] || inj_mem(j, false, j->res[3], msg, sizeof msg - 1))
            snprintf(msg, sizeof msg, "no reason given");
        msg[sizeof msg - 1] = '\0';
        return inj_fail(j, "dlopen", "%s did not load: %s", lib, msg);
    }
    if (!j->res[1])
        return inj_fail(j, "dlsym", "%s has no %s (an older agent?)", lib, entry);
    return 0;
}

int cli_inject(pid_t pid, const char *lib, const char *entry, const char *arg, int *result,
               char **cause)
{
    static const int held[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    inj j = {.pid = pid, .mem = -1, .die_at = getenv("CUPTOP_INJECT_DIE_AT"),
             .pause_at = getenv("CUPTOP_INJECT_PAUSE_AT")};
    sigset_t hold, old;
    char mp[64];
    uint64_t fn[3] = {0, 0, 0}, ret = 0;
    int rc = -1;

    *cause = NULL;
    sigemptyset(&hold);
    for (size_t i = 0; i < sizeof held / sizeof *held; i++)
        sigaddset(&hold, held[i]);
    sigprocmask(SIG_BLOCK, &hold, &old);

    if ((rc = inj_symbols(&j, fn)) != 0)   /* first: nothing stopped yet */
        goto out;
    snprintf(mp, sizeof mp, "/proc/%d/mem", (int)pid);
    j.tid = inj_pick_thread(pid);
    rc = inj_seize_stop(&j);
    if (rc == -2) {
        j.cause = inj_eperm(pid);
        goto out;
    }
    if (rc)
        goto out;
    rc = -1;
    /* The block below the red zone: [fields, regs][lib][entry][arg], the
     * trampoline's stack (its FP area first) below it. */
    size_t l1 = strlen(lib) + 1, l2 = strlen(entry) + 1, l3 = strlen(arg) + 1;
    size_t xsz = inj_xsave_size();
    unsigned char *img = NULL;
    if (inj_save(&j, mp, TB_STR + l1 + l2 + l3, &img) != 0)
        goto out;
    unsigned char code[sizeof j.cave_bytes];
    inj_image(&j, fn, (const char *const[3]){lib, entry, arg}, xsz, img, code);
    int wr = inj_mem(&j, true, j.lo, img, (size_t)(j.hi - j.lo));
    free(img);
    if (wr) {
        inj_fail(&j, "write", "cannot write the thread's stack: %s", strerror(errno));
        goto out;
    }
    j.cave_written = true;   /* (a partial write is put back too) */
    if (inj_mem(&j, true, j.cave, code, INJ_TRAMP_LEN)) {
        inj_fail(&j, "write", "cannot write the code at %#llx: %s",
                 (unsigned long long)j.cave, strerror(errno));
        goto out;
    }
    inj_hook(&j, "written");
    if (inj_call(&j, lib, entry) != 0)
        goto out;
    ret = j.res[2];
    inj_hook(&j, "called");
    *result = (int)(uint32_t)ret;
    rc = 0;
out:
    inj_release(&j);
    if (j.mem >= 0)
        close(j.mem);
    free(j.bytes);
    if (j.cause) {
        rc = rc == -2 ? -2 : -1;
        *cause = j.cause;
    } else if (rc) {
        *cause = strdup("the injection failed");
    }
    sigprocmask(SIG_SETMASK, &old, NULL);   /* a held SIGTERM acts now */
    return rc;
}

#else /* not x86-64 Linux */

int cli_inject(pid_t pid, const char *lib, const char *entry, const char *arg, int *result,
               char **cause)
{
    (void)pid, (void)lib, (void)entry, (void)arg, (void)result;
    *cause = strdup("cuptop attach injects into x86-64 Linux processes only; on this "
                    "architecture start the program under 'cuptop run --dormant' instead");
    return -1;
}

#endif
