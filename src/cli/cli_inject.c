/*
 * cli_inject.c - cuptop's own ptrace injector (x86-64 Linux).
 *
 * Steps, each named in a failure ("step dlopen: ..."):
 *   seize      PTRACE_SEIZE one thread (the main thread, or the first
 *              thread that is not a zombie); the others keep running
 *   stop       PTRACE_INTERRUPT and wait for the stop; a signal that
 *              arrives meanwhile is kept and sent again at the end
 *   symbols    dlopen, dlsym, dlerror in the target: libc's address in
 *              /proc/PID/maps plus the symbol's offset, read from the
 *              dynamic symbol table of that very file (no dependency)
 *   save       registers (general and FP/SSE) and the stack bytes the
 *              frame will use (below the 128-byte red zone)
 *   dlopen, dlsym, entry, dlerror
 *              a call: registers set for the System V ABI, the return
 *              address 0, PTRACE_CONT; the call's return faults at 0,
 *              which ptrace catches (the SIGSEGV is never delivered).
 *              orig_rax = -1 keeps the kernel from "restarting" an
 *              interrupted system call into our call
 *   restore    every saved byte and register; the saved registers hold
 *              the interrupted system call (orig_rax, -ERESTARTSYS...), so
 *              the kernel restarts it as if nothing happened
 *   detach     PTRACE_DETACH, with the first kept signal; others: tgkill
 * A failure after the stop restores and detaches before it says so.
 * SIGINT/SIGTERM/SIGHUP to the injector are held during the injection and
 * acted on after the restore.  A SIGKILL of the injector while the target
 * runs a call cannot be made safe with ptrace (the kernel releases the
 * target with the call's registers); at every other step the target keeps
 * its own registers (tests/cli/attach_sim.sh kills it at those steps).
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

/* ---- /proc/PID/maps and the ELF dynamic symbol table -------------------- */

/* The lowest mapping of the first file whose base name starts with one of
 * the prefixes; its path and start. */
static int inj_find_lib(pid_t pid, const char *const *prefixes, char *path, size_t plen,
                        uint64_t *start)
{
    char mp[64], line[4096 + 128];
    snprintf(mp, sizeof mp, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(mp, "re");
    int found = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long long lo, hi, off;
        char *p = strchr(line, '/');
        if (!p || sscanf(line, "%llx-%llx %*s %llx", &lo, &hi, &off) != 3)
            continue;
        p[strcspn(p, "\n")] = '\0';
        const char *base = strrchr(p, '/') + 1;
        for (size_t i = 0; prefixes[i]; i++) {
            size_t n = strlen(prefixes[i]);
            if (strncmp(base, prefixes[i], n) || (base[n] != '.' && base[n] != '-'))
                continue;
            if (found == 0 && strcmp(path, p))
                continue;   /* another file of that name: the first wins */
            if (found != 0 || lo < *start) {
                snprintf(path, plen, "%s", p);
                *start = lo - off;   /* where offset 0 of the file is */
            }
            found = 0;
        }
    }
    fclose(f);
    return found;
}

int cli_inject_has_mapping(pid_t pid, const char *name)
{
    char mp[64], line[4096 + 128];
    size_t n = strlen(name);
    int has = 0;
    snprintf(mp, sizeof mp, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(mp, "re");
    if (!f)
        return 0;
    while (!has && fgets(line, sizeof line, f)) {
        size_t l = strcspn(line, "\n");
        has = l >= n && !memcmp(line + l - n, name, n);
    }
    fclose(f);
    return has;
}

/* Offsets (from the file's first PT_LOAD) of the named symbols, read from
 * the file's .dynsym; 0 where absent. */
static int inj_elf_syms(pid_t pid, const char *path, const char *const *names, uint64_t *out,
                        size_t n, char *why, size_t wlen)
{
    char rp[4200];
    struct stat st;
    int rc = -1;
    snprintf(rp, sizeof rp, "/proc/%d/root%s", (int)pid, path);
    int fd = open(rp, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) || (size_t)st.st_size < sizeof(Elf64_Ehdr)) {
        snprintf(why, wlen, "cannot read %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    size_t sz = (size_t)st.st_size;
    const unsigned char *m = mmap(NULL, sz, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        snprintf(why, wlen, "cannot map %s: %s", path, strerror(errno));
        return -1;
    }
    const Elf64_Ehdr *eh = (const void *)m;
#define INJ_IN(off, len) ((uint64_t)(off) <= sz && (uint64_t)(len) <= sz - (uint64_t)(off))
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_machine != EM_X86_64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        !INJ_IN(eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)) ||
        !INJ_IN(eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr))) {
        snprintf(why, wlen, "%s is not an x86-64 ELF file cuptop can read", path);
        goto out;
    }
    uint64_t first_load = 0;
    const Elf64_Phdr *ph = (const void *)(m + eh->e_phoff);
    for (unsigned i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD) {
            first_load = ph[i].p_vaddr - ph[i].p_offset;
            break;
        }
    const Elf64_Shdr *sh = (const void *)(m + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
            continue;
        const Elf64_Shdr *ss = &sh[sh[i].sh_link];
        if (!INJ_IN(sh[i].sh_offset, sh[i].sh_size) || !INJ_IN(ss->sh_offset, ss->sh_size))
            break;
        const Elf64_Sym *sym = (const void *)(m + sh[i].sh_offset);
        const char *str = (const char *)(m + ss->sh_offset);
        size_t nsym = sh[i].sh_size / sizeof *sym;
        for (size_t k = 0; k < nsym; k++) {
            if (sym[k].st_shndx == SHN_UNDEF || sym[k].st_name >= ss->sh_size ||
                ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC)
                continue;
            const char *nm = str + sym[k].st_name;
            for (size_t q = 0; q < n; q++)
                if (!out[q] && !strncmp(nm, names[q], ss->sh_size - sym[k].st_name) &&
                    !strcmp(nm, names[q]))
                    out[q] = sym[k].st_value - first_load;
        }
        rc = 0;
        break;
    }
    if (rc)
        snprintf(why, wlen, "%s has no dynamic symbol table", path);
out:
    munmap((void *)m, sz);
    return rc;
#undef INJ_IN
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

/* Run fn(a1, a2) on the stopped thread; *ret: its rax. */
static int inj_call(inj *j, const char *step, uint64_t fn, uint64_t a1, uint64_t a2,
                    uint64_t *ret)
{
    struct user_regs_struct r = j->regs;
    int st;
    r.rip = fn;
    r.rdi = a1;
    r.rsi = a2;
    r.rax = 0;
    r.rsp = j->lo;             /* holds the return address 0 */
    r.orig_rax = (uint64_t)-1; /* no system call restart into the call */
    if (ptrace(PTRACE_SETREGS, j->tid, NULL, &r))
        return inj_fail(j, step, "cannot set the registers: %s", strerror(errno));
    if (ptrace(PTRACE_CONT, j->tid, NULL, NULL))
        return inj_fail(j, step, "cannot resume the thread: %s", strerror(errno));
    uint64_t deadline = inj_now_ms() + INJ_CALL_TIMEOUT_MS;
    for (;;) {
        int w = inj_wait(j, &st, deadline);
        if (w == -1) {
            j->stopped = j->seized = false;
            return inj_fail(j, step, "the process ended during the call");
        }
        if (w == -2) {
            /* a lock the stopped thread's program holds?  Take it back. */
            (void)ptrace(PTRACE_INTERRUPT, j->tid, NULL, NULL);
            if (inj_wait(j, &st, inj_now_ms() + 2000) != 0)
                return inj_fail(j, step, "the call did not return and the thread cannot be "
                                "stopped again");
            return inj_fail(j, step, "the call did not return in %d s (the thread may wait "
                            "for a lock its own program holds); it was taken back",
                            INJ_CALL_TIMEOUT_MS / 1000);
        }
        int sig = WSTOPSIG(st);
        if ((st >> 16) == PTRACE_EVENT_STOP) {
            /* a group stop (SIGSTOP to the process) or a stray interrupt */
            (void)ptrace(PTRACE_CONT, j->tid, NULL, NULL);
            continue;
        }
        if (sig == SIGSEGV) {
            struct user_regs_struct now;
            if (ptrace(PTRACE_GETREGS, j->tid, NULL, &now))
                return inj_fail(j, step, "cannot read the registers: %s", strerror(errno));
            if (now.rip == 0) {
                *ret = now.rax;
                return 0;
            }
            return inj_fail(j, step, "the call faulted in the target at %#llx",
                            (unsigned long long)now.rip);
        }
        if (sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGABRT)
            return inj_fail(j, step, "the call raised signal %d in the target", sig);
        inj_keep_signal(j, sig);   /* delivered after the restore */
        if (ptrace(PTRACE_CONT, j->tid, NULL, NULL))
            return inj_fail(j, step, "cannot resume the thread: %s", strerror(errno));
    }
}

/* Put every byte and register back and let the thread go. */
static void inj_release(inj *j)
{
    if (j->stopped && j->saved) {
        inj_hook(j, "restore");
        if (j->bytes && inj_mem(j, true, j->lo, j->bytes, (size_t)(j->hi - j->lo)))
            (void)inj_fail(j, "restore", "cannot restore the stack bytes: %s", strerror(errno));
        if (ptrace(PTRACE_SETFPREGS, j->tid, NULL, &j->fp) ||
            ptrace(PTRACE_SETREGS, j->tid, NULL, &j->regs))
            (void)inj_fail(j, "restore", "cannot restore the registers: %s", strerror(errno));
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

int cli_inject(pid_t pid, const char *lib, const char *entry, const char *arg, int *result,
               char **cause)
{
    static const int held[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    static const char *const libc_names[] = {"libc", NULL}, *const libdl_names[] = {"libdl", NULL};
    inj j = {.pid = pid, .mem = -1, .die_at = getenv("CUPTOP_INJECT_DIE_AT"),
             .pause_at = getenv("CUPTOP_INJECT_PAUSE_AT")};
    sigset_t hold, old;
    char mp[64], libc[4096], why[600];
    uint64_t base = 0, fn[3] = {0, 0, 0}, ret = 0;
    int rc = -1;

    *cause = NULL;
    sigemptyset(&hold);
    for (size_t i = 0; i < sizeof held / sizeof *held; i++)
        sigaddset(&hold, held[i]);
    sigprocmask(SIG_BLOCK, &hold, &old);

    /* symbols first: nothing stopped yet */
    static const char *const want[] = {"dlopen", "dlsym", "dlerror"};
    static const char *const old_want[] = {"__libc_dlopen_mode", "__libc_dlsym", "dlerror"};
    snprintf(mp, sizeof mp, "/proc/%d/maps", (int)pid);
    FILE *probe = fopen(mp, "re");   /* opening needs the right to trace */
    if (probe)
        fclose(probe);
    else if (errno == EACCES || errno == EPERM) {
        j.cause = inj_eperm(pid);   /* another uid: the same rule as ptrace */
        rc = -2;
        goto out;
    }
    if (inj_find_lib(pid, libc_names, libc, sizeof libc, &base)) {
        inj_fail(&j, "symbols", "no libc mapped in process %d (a static program?)", (int)pid);
        goto out;
    }
    if (inj_elf_syms(pid, libc, want, fn, 3, why, sizeof why)) {
        inj_fail(&j, "symbols", "%s", why);
        goto out;
    }
    uint64_t libc_base = base;
    bool dl_err = true;   /* dlerror comes from the same library as dlopen */
    if (!fn[0] || !fn[1]) {
        /* glibc < 2.34: libdl, if loaded, else libc's private entry points */
        char dl[4096];
        uint64_t dbase = 0, dfn[3] = {0, 0, 0};
        if (inj_find_lib(pid, libdl_names, dl, sizeof dl, &dbase) == 0 &&
            inj_elf_syms(pid, dl, want, dfn, 3, why, sizeof why) == 0 && dfn[0] && dfn[1]) {
            memcpy(fn, dfn, sizeof fn);
            base = dbase;
        } else if ((dl_err = false, fn[0] = fn[1] = 0, 0) ||
                   inj_elf_syms(pid, libc, old_want, fn, 2, why, sizeof why) || !fn[0] ||
                   !fn[1]) {
            inj_fail(&j, "symbols", "no dlopen/dlsym in %s", libc);
            goto out;
        }
    }
    for (int i = 0; i < 3; i++)
        if (fn[i])
            fn[i] += i == 2 && !dl_err ? libc_base : base;

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
    if ((j.mem = open(mp, O_RDWR | O_CLOEXEC)) < 0) {
        inj_fail(&j, "save", "cannot open %s: %s", mp, strerror(errno));
        goto out;
    }
    if (ptrace(PTRACE_GETREGS, j.tid, NULL, &j.regs) ||
        ptrace(PTRACE_GETFPREGS, j.tid, NULL, &j.fp)) {
        inj_fail(&j, "save", "cannot read the registers: %s", strerror(errno));
        goto out;
    }
    /* The frame, below the red zone: [ret 0][lib][entry][arg] */
    size_t l1 = strlen(lib) + 1, l2 = strlen(entry) + 1, l3 = strlen(arg) + 1;
    size_t need = 8 + l1 + l2 + l3;
    j.hi = (j.regs.rsp - 128) & ~(uint64_t)15;
    j.lo = (j.hi - need - 64) & ~(uint64_t)15;
    j.lo -= 8;   /* at a call's entry rsp + 8 is 16-byte aligned */
    j.bytes = malloc((size_t)(j.hi - j.lo));
    if (!j.bytes || inj_mem(&j, false, j.lo, j.bytes, (size_t)(j.hi - j.lo))) {
        free(j.bytes);
        j.bytes = NULL;
        inj_fail(&j, "save", "cannot read the thread's stack at %#llx: %s",
                 (unsigned long long)j.lo, strerror(errno));
        goto out;
    }
    j.saved = true;
    inj_hook(&j, "saved");
    uint64_t zero = 0, a_lib = j.lo + 8, a_entry = a_lib + l1, a_arg = a_entry + l2;
    if (inj_mem(&j, true, j.lo, &zero, 8) || inj_mem(&j, true, a_lib, (void *)lib, l1) ||
        inj_mem(&j, true, a_entry, (void *)entry, l2) ||
        inj_mem(&j, true, a_arg, (void *)arg, l3)) {
        inj_fail(&j, "write", "cannot write the thread's stack: %s", strerror(errno));
        goto out;
    }
    inj_hook(&j, "written");
    uint64_t handle = 0;
    if (inj_call(&j, "dlopen", fn[0], a_lib, 2 /* RTLD_NOW */, &handle))
        goto out;
    if (!handle) {
        char msg[512] = "no reason given";
        uint64_t s = 0;
        if (fn[2] && inj_call(&j, "dlerror", fn[2], 0, 0, &s) == 0 && s &&
            inj_mem(&j, false, s, msg, sizeof msg - 1) == 0)
            msg[sizeof msg - 1] = '\0';
        else
            snprintf(msg, sizeof msg, "no reason given");
        inj_fail(&j, "dlopen", "%s did not load: %s", lib, msg);
        goto out;
    }
    uint64_t f = 0;
    if (inj_call(&j, "dlsym", fn[1], handle, a_entry, &f))
        goto out;
    if (!f) {
        inj_fail(&j, "dlsym", "%s has no %s (an older agent?)", lib, entry);
        goto out;
    }
    if (inj_call(&j, "entry", f, a_arg, 0, &ret))
        goto out;
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

int cli_inject_has_mapping(pid_t pid, const char *name)
{
    (void)pid, (void)name;
    return 0;
}

#endif
