/*
 * cli_inject_int.h - what the injector (cli_inject.c) takes from
 * cli_inject_maps.c: a process' mappings and a mapped library's dynamic
 * symbols, read without stopping it (x86-64 Linux only).
 */
#ifndef CLI_INJECT_INT_H
#define CLI_INJECT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The lowest mapping of the first file whose base name starts with one of
 * the prefixes (NULL-terminated): its path and start.  0 found, -1 not. */
int cli_inject_find_lib(pid_t pid, const char *const *prefixes, char *path, size_t plen,
                        uint64_t *start);

/* Offsets (from the file's first PT_LOAD) of the n named symbols, read
 * from the .dynsym of path as process pid sees it; 0 where absent.  0, or
 * -1 with why set. */
int cli_inject_elf_syms(pid_t pid, const char *path, const char *const *names, uint64_t *out,
                        size_t n, char *why, size_t wlen);

/* Room for len bytes of code in an executable file mapping of pid (the
 * padding after a segment's end): its address.  0 found, -1 not. */
int cli_inject_find_cave(pid_t pid, size_t len, uint64_t *out);

/* dlopen, dlsym and dlerror of process pid (fn[0..2], absolute; dlerror
 * 0 when absent), from libc, libdl or libc's private entry points.  0, or
 * -1 with why set. */
int cli_inject_dl_syms(pid_t pid, uint64_t fn[3], char *why, size_t wlen);

#endif /* CLI_INJECT_INT_H */
