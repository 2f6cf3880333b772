/*
 * cupstore_file.c - validate a session's data.mdb before LMDB maps it.
 *
 * LMDB trusts its file: a truncated data file makes it touch pages past
 * the end of the mapping (SIGBUS), and garbage can crash it.  So before
 * mdb_env_open we read the two meta pages ourselves and check the magic,
 * the format version, the page size and that the pages the newest meta
 * refers to lie inside the file.  This does not walk the B-trees: damage
 * inside data pages is caught by LMDB's own checks (MDB_CORRUPTED) or
 * by the row decoders (CUPSTORE_ECORRUPT), see doc/store-format.md.
 *
 * Layout of an LMDB 0.9 meta page on LP64 (lmdb/mdb.c: MDB_page, MDB_meta):
 *   0  pgno (8)  8 pad (2)  10 flags (2, P_META = 0x08)  12 lower/upper (4)
 *   16 mm_magic (4) 20 mm_version (4) 24 mm_address (8) 32 mm_mapsize (8)
 *   40 mm_dbs[FREE] (48: md_pad = page size, ...)  88 mm_dbs[MAIN] (48)
 *   136 mm_last_pg (8)  144 mm_txnid (8)
 * MDB_db: 0 md_pad (4) 4 md_flags (2) 6 md_depth (2) 8 branch (8)
 *   16 leaf (8) 24 overflow (8) 32 entries (8) 40 md_root (8)
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cupstore_int.h"

#define LMDB_MAGIC 0xBEEFC0DEu
#define LMDB_DATA_VERSION 1u
#define LMDB_P_META 0x08u
#define LMDB_P_INVALID UINT64_MAX
#define META_END 152u
#define PSIZE_MIN 512u
#define PSIZE_MAX 65536u

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint16_t rd16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* Check one meta page m (page number pgno); 0 if usable. */
static int meta_check(const uint8_t *m, uint64_t pgno, uint32_t psize, uint64_t file_len)
{
    if (rd32(m + 16) != LMDB_MAGIC)
        return CUPSTORE_ECORRUPT;
    if (rd32(m + 20) != LMDB_DATA_VERSION)
        return rd32(m + 20) > LMDB_DATA_VERSION ? CUPSTORE_ELMDBNEWER : CUPSTORE_ECORRUPT;
    if (rd64(m) != pgno || !(rd16(m + 10) & LMDB_P_META) || rd32(m + 40) != psize)
        return CUPSTORE_ECORRUPT;
    uint64_t last = rd64(m + 136);
    if (last < 1 || last >= file_len / psize)
        return CUPSTORE_ECORRUPT;
    for (int db = 0; db < 2; db++) {
        const uint8_t *d = m + 40 + 48 * db;
        uint64_t root = rd64(d + 40);
        uint16_t depth = rd16(d + 6);
        if (root == LMDB_P_INVALID ? depth != 0 : (root < 2 || root > last || depth == 0 ||
                                                    depth > 64))
            return CUPSTORE_ECORRUPT;
    }
    return 0;
}

/* hdr: the first bytes of the file (up to 2 * PSIZE_MAX); file_len: its size. */
static int file_check(const uint8_t *hdr, size_t hdr_len, uint64_t file_len)
{
    if (hdr_len < META_END || rd32(hdr + 16) != LMDB_MAGIC)
        return CUPSTORE_ENOTSTORE;
    uint32_t psize = rd32(hdr + 40);
    if (psize < PSIZE_MIN || psize > PSIZE_MAX || (psize & (psize - 1)))
        return CUPSTORE_ECORRUPT;
    if (file_len < 2ull * psize || hdr_len < (size_t)psize + META_END)
        return CUPSTORE_ECORRUPT;
    const uint8_t *m0 = hdr, *m1 = hdr + psize;
    int r0 = meta_check(m0, 0, psize, file_len);
    int r1 = meta_check(m1, 1, psize, file_len);
    if (r0 == CUPSTORE_ELMDBNEWER || r1 == CUPSTORE_ELMDBNEWER)
        return CUPSTORE_ELMDBNEWER;
    /* LMDB uses the meta with the greater txnid: that one must be sound. */
    if (rd32(m1 + 16) == LMDB_MAGIC && rd64(m1 + 144) > rd64(m0 + 144))
        return r1;
    return r0;
}

int cupstore_lockfile_check(const char *lockfile)
{
    struct stat st;
    if (lstat(lockfile, &st) != 0)
        return errno == ENOENT ? 0 : errno; /* LMDB creates a missing one */
    return S_ISREG(st.st_mode) ? 0 : CUPSTORE_ENOTSTORE;
}

int cupstore_file_check_mem(const uint8_t *p, size_t len)
{
    return file_check(p, len, len);
}

int cupstore_file_check(const char *datafile)
{
    struct stat st, fst;
    uint8_t *hdr;
    ssize_t got;
    int fd, rc;

    /* Only a regular file, never through a link: a FIFO would block the
     * open (and LMDB's), a directory or a device (a link to /dev/zero)
     * is no data file.  The open neither blocks nor follows a link, and
     * must find the file lstat saw. */
    if (lstat(datafile, &st) != 0)
        return errno == ENOENT || errno == ENOTDIR ? CUPSTORE_ENOTSTORE : errno;
    if (!S_ISREG(st.st_mode))
        return CUPSTORE_ENOTSTORE;
    if ((fd = open(datafile, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)) < 0)
        return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? CUPSTORE_ENOTSTORE : errno;
    if (fstat(fd, &fst) != 0 || !S_ISREG(fst.st_mode) || fst.st_ino != st.st_ino ||
        fst.st_dev != st.st_dev) {
        close(fd);
        return CUPSTORE_ENOTSTORE;
    }
    if (!(hdr = malloc(2 * PSIZE_MAX))) {
        close(fd);
        return ENOMEM;
    }
    /* Header first, then the size: a writer grows the file before it
     * writes a meta page that refers to the new pages. */
    do
        got = pread(fd, hdr, 2 * PSIZE_MAX, 0);
    while (got < 0 && errno == EINTR);
    if (got < 0)
        rc = errno;
    else if (fstat(fd, &st) != 0)
        rc = errno;
    else
        rc = file_check(hdr, (size_t)got, (uint64_t)st.st_size);
    free(hdr);
    close(fd);
    return rc;
}
