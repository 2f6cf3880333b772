/*
 * faultio.c - an LD_PRELOAD shim that makes the store's disk slow or full,
 * for the fault matrix (tests/faults).  It only touches writes to files
 * whose name ends in "data.mdb" (a session's LMDB file); everything else
 * goes straight through.
 *
 *   FAULTIO_DELAY_US=N     sleep N microseconds before each write/sync
 *   FAULTIO_ENOSPC_AFTER=B a disk of B bytes for data.mdb: a write that would
 *                          reach past offset B fails with ENOSPC (writes
 *                          inside the file, e.g. LMDB reusing pages, and
 *                          syncs still succeed, as on a real full disk);
 *                          fallocate past B fails with ENOSPC too
 *   FAULTIO_FAIL_FILE=PATH while PATH exists, every write, sync and
 *                          fallocate of data.mdb fails with
 *   FAULTIO_FAIL_ERRNO=N   errno N (default EPERM: `chattr +i data.mdb`
 *                          on a live session, without root or ext4)
 *
 * LMDB writes pages with pwrite/pwritev (without MDB_WRITEMAP) and syncs
 * with fdatasync/fsync, all through the PLT, so interposing them here sees
 * every write the store makes.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define FD_CACHE 4096

static struct {
    _Atomic unsigned char fd_state[FD_CACHE]; /* 0 unknown, 1 store, 2 other */
    long long enospc_after;                   /* -1: never                  */
    long delay_us;
    const char *fail_file;                    /* NULL: never                */
    int fail_errno;
    atomic_int ready;
} faultio = {.enospc_after = -1};

static void faultio_init(void)
{
    if (atomic_load_explicit(&faultio.ready, memory_order_acquire))
        return;
    const char *d = getenv("FAULTIO_DELAY_US");
    const char *e = getenv("FAULTIO_ENOSPC_AFTER");
    faultio.delay_us = d ? strtol(d, NULL, 10) : 0;
    faultio.enospc_after = e ? strtoll(e, NULL, 10) : -1;
    faultio.fail_file = getenv("FAULTIO_FAIL_FILE");
    const char *fe = getenv("FAULTIO_FAIL_ERRNO");
    faultio.fail_errno = fe ? (int)strtol(fe, NULL, 10) : EPERM;
    atomic_store_explicit(&faultio.ready, 1, memory_order_release);
}

static int faultio_is_store(int fd)
{
    if (fd < 0)
        return 0;
    if (fd < FD_CACHE) {
        unsigned char s = atomic_load_explicit(&faultio.fd_state[fd], memory_order_relaxed);
        if (s)
            return s == 1;
    }
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    int is = 0;
    if (n > 8) {
        path[n] = '\0';
        is = strcmp(path + n - 8, "data.mdb") == 0;
    }
    if (fd < FD_CACHE)
        atomic_store_explicit(&faultio.fd_state[fd], is ? 1 : 2, memory_order_relaxed);
    return is;
}

/* The fail file exists: set errno, return true. */
static int faultio_failing(void)
{
    struct stat st;
    if (!faultio.fail_file || stat(faultio.fail_file, &st) != 0)
        return 0;
    errno = faultio.fail_errno;
    return 1;
}

/* Returns -1 (errno set) when the write must fail.  off < 0: the file
 * offset (write/writev); len 0: a sync. */
static int faultio_before(int fd, size_t len, off_t off)
{
    faultio_init();
    if (!faultio_is_store(fd))
        return 0;
    if (faultio.delay_us > 0) {
        struct timespec ts = {faultio.delay_us / 1000000, (faultio.delay_us % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
    if (faultio_failing())
        return -1;
    if (faultio.enospc_after >= 0 && len > 0) {
        if (off < 0)
            off = lseek(fd, 0, SEEK_CUR);
        if (off >= 0 && (long long)off + (long long)len > faultio.enospc_after) {
            errno = ENOSPC;
            return -1;
        }
    }
    return 0;
}

#define NEXT(name, type) ((type)dlsym(RTLD_NEXT, name))

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    if (faultio_before(fd, n, off) < 0)
        return -1;
    return NEXT("pwrite", ssize_t (*)(int, const void *, size_t, off_t))(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    if (faultio_before(fd, n, off) < 0)
        return -1;
    return NEXT("pwrite64", ssize_t (*)(int, const void *, size_t, off_t))(fd, buf, n, off);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    if (faultio_before(fd, n, -1) < 0)
        return -1;
    return NEXT("write", ssize_t (*)(int, const void *, size_t))(fd, buf, n);
}

static size_t iov_len(const struct iovec *iov, int cnt)
{
    size_t n = 0;
    for (int i = 0; i < cnt; i++)
        n += iov[i].iov_len;
    return n;
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    if (faultio_before(fd, iov_len(iov, cnt), -1) < 0)
        return -1;
    return NEXT("writev", ssize_t (*)(int, const struct iovec *, int))(fd, iov, cnt);
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    if (faultio_before(fd, iov_len(iov, cnt), off) < 0)
        return -1;
    return NEXT("pwritev", ssize_t (*)(int, const struct iovec *, int, off_t))(fd, iov, cnt, off);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
{
    if (faultio_before(fd, iov_len(iov, cnt), off) < 0)
        return -1;
    return NEXT("pwritev64", ssize_t (*)(int, const struct iovec *, int, off_t))(fd, iov, cnt, off);
}

int fdatasync(int fd)
{
    if (faultio_before(fd, 0, 0) < 0)
        return -1;
    return NEXT("fdatasync", int (*)(int))(fd);
}

int fsync(int fd)
{
    if (faultio_before(fd, 0, 0) < 0)
        return -1;
    return NEXT("fsync", int (*)(int))(fd);
}

/* Blocks past B do not exist on this disk; below B they always do. */
int fallocate(int fd, int mode, off_t off, off_t len)
{
    faultio_init();
    if (faultio_is_store(fd) && faultio_failing())
        return -1;
    if (faultio.enospc_after >= 0 && faultio_is_store(fd) && len > 0 &&
        (long long)off + (long long)len > faultio.enospc_after) {
        errno = ENOSPC;
        return -1;
    }
    return NEXT("fallocate", int (*)(int, int, off_t, off_t))(fd, mode, off, len);
}

int fallocate64(int fd, int mode, off_t off, off_t len)
{
    return fallocate(fd, mode, off, len);
}

int close(int fd)
{
    if (fd >= 0 && fd < FD_CACHE)
        atomic_store_explicit(&faultio.fd_state[fd], 0, memory_order_relaxed);
    return NEXT("close", int (*)(int))(fd);
}
