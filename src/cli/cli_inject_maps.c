/*
 * cli_inject_maps.c - what the injector (cli_inject.c) reads of a process
 * without stopping it: /proc/PID/maps (where a library is mapped, whether
 * one is), the dynamic symbol table of a mapped library's file, and a code
 * cave (the padding after an executable segment) for the trampoline.
 */
#include "config.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_inject.h"
#include "cli_inject_int.h"

#if defined(__x86_64__) && defined(__linux__)

/* ---- /proc/PID/maps and the ELF dynamic symbol table -------------------- */

/* The lowest mapping of the first file whose base name starts with one of
 * the prefixes; its path and start. */
int cli_inject_find_lib(pid_t pid, const char *const *prefixes, char *path, size_t plen,
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
int cli_inject_elf_syms(pid_t pid, const char *path, const char *const *names, uint64_t *out,
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

/* Room for the code: the padding after an executable segment's end, up to
 * its page's end, in a mapping of that file that is executable.  Reads the
 * PT_LOAD headers of each r-x file mapping until one has len bytes. */
int cli_inject_find_cave(pid_t pid, size_t len, uint64_t *out)
{
    char mp[64], line[4096 + 128];
    long pg = sysconf(_SC_PAGESIZE);
    snprintf(mp, sizeof mp, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(mp, "re");
    int found = -1;
    if (!f)
        return -1;
    while (found && fgets(line, sizeof line, f)) {
        unsigned long long lo, hi, off;
        char perm[8], rp[4200];
        char *p = strchr(line, '/');
        if (!p || sscanf(line, "%llx-%llx %7s %llx", &lo, &hi, perm, &off) != 4 ||
            strcmp(perm, "r-xp"))
            continue;
        p[strcspn(p, "\n")] = '\0';
        snprintf(rp, sizeof rp, "/proc/%d/root%s", (int)pid, p);
        int fd = open(rp, O_RDONLY | O_CLOEXEC);
        Elf64_Ehdr eh;
        if (fd < 0)
            continue;
        if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh &&
            !memcmp(eh.e_ident, ELFMAG, SELFMAG) && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
            eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum <= 64) {
            Elf64_Phdr ph[64];
            size_t n = eh.e_phnum * sizeof *ph;
            if (pread(fd, ph, n, (off_t)eh.e_phoff) == (ssize_t)n) {
                uint64_t first_load = 0, base = lo - off;
                bool have_first = false;
                for (unsigned i = 0; i < eh.e_phnum; i++)
                    if (ph[i].p_type == PT_LOAD && !have_first) {
                        first_load = (ph[i].p_vaddr - ph[i].p_offset) & ~(uint64_t)(pg - 1);
                        have_first = true;
                    }
                for (unsigned i = 0; found && i < eh.e_phnum; i++) {
                    if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X))
                        continue;
                    uint64_t e = base + ph[i].p_vaddr + ph[i].p_memsz - first_load;
                    uint64_t c = (e + 15) & ~(uint64_t)15;
                    uint64_t pe = (e + (uint64_t)pg - 1) & ~(uint64_t)(pg - 1);
                    if (c >= lo && c + len <= pe && c + len <= hi) {
                        *out = c;
                        found = 0;
                    }
                }
            }
        }
        close(fd);
    }
    fclose(f);
    return found;
}

/* dlopen, dlsym and dlerror as process pid has them, absolute: libc's
 * (glibc >= 2.34); before that libdl's if it is loaded, else libc's
 * private __libc_dlopen_mode and __libc_dlsym (and its dlerror). */
int cli_inject_dl_syms(pid_t pid, uint64_t fn[3], char *why, size_t wlen)
{
    static const char *const libc_names[] = {"libc", NULL}, *const libdl_names[] = {"libdl", NULL};
    static const char *const want[] = {"dlopen", "dlsym", "dlerror"};
    static const char *const old_want[] = {"__libc_dlopen_mode", "__libc_dlsym", "dlerror"};
    char libc[4096];
    uint64_t base = 0;
    if (cli_inject_find_lib(pid, libc_names, libc, sizeof libc, &base)) {
        snprintf(why, wlen, "no libc mapped in process %d (a static program?)", (int)pid);
        return -1;
    }
    if (cli_inject_elf_syms(pid, libc, want, fn, 3, why, wlen))
        return -1;
    uint64_t libc_base = base;
    bool dl_err = true;   /* dlerror comes from the same library as dlopen */
    if (!fn[0] || !fn[1]) {
        /* glibc < 2.34: libdl, if loaded, else libc's private entry points */
        char dl[4096];
        uint64_t dbase = 0, dfn[3] = {0, 0, 0};
        if (cli_inject_find_lib(pid, libdl_names, dl, sizeof dl, &dbase) == 0 &&
            cli_inject_elf_syms(pid, dl, want, dfn, 3, why, wlen) == 0 && dfn[0] && dfn[1]) {
            memcpy(fn, dfn, sizeof dfn);
            base = dbase;
        } else if ((dl_err = false, fn[0] = fn[1] = 0, 0) ||
                   cli_inject_elf_syms(pid, libc, old_want, fn, 2, why, wlen) || !fn[0] ||
                   !fn[1]) {
            snprintf(why, wlen, "no dlopen/dlsym in %s", libc);
            return -1;
        }
    }
    for (int i = 0; i < 3; i++)
        if (fn[i])
            fn[i] += i == 2 && !dl_err ? libc_base : base;
    return 0;
}

/* The thread waits in the trampoline (state 1, stopped inside its wait
 * loop): take it back with the registers saved at the stop. */

#else /* not x86-64 Linux */

int cli_inject_has_mapping(pid_t pid, const char *name)
{
    (void)pid, (void)name;
    return 0;
}

#endif
