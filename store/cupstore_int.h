/*
 * cupstore_int.h - internals shared by the store's source files.
 *
 * Only store/ includes this header (and lmdb.h).  Nothing here is part of
 * the contract in cupstore.h.
 */
#ifndef CUPSTORE_INT_H
#define CUPSTORE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <lmdb.h>

#include "cupstore.h"

/* Named databases of one session environment (see doc/store-format.md). */
enum cupstore_db {
    CUPSTORE_DB_META = 0,
    CUPSTORE_DB_HEALTH,
    CUPSTORE_DB_LOSS,
    CUPSTORE_DB_CHUNKS,
    CUPSTORE_DB_NAMES,
    CUPSTORE_DB_EPOCHS,
    CUPSTORE_DB_CONTROL,
    CUPSTORE_DB_MARKS,
    CUPSTORE_DB_NOTES,
    CUPSTORE_DB_STEPS,
    CUPSTORE_DB_FINAL,
    CUPSTORE_DB_RANGES,
    CUPSTORE_DB_LOST,
    CUPSTORE_DB_MAX
};

extern const char *const cupstore_db_names[CUPSTORE_DB_MAX];

#define CUPSTORE_MAXDBS 16
#define CUPSTORE_MAXREADERS 126
#define CUPSTORE_MAP_DEFAULT (64ull << 20)
#define CUPSTORE_MAP_MAX_DEFAULT (8ull << 30)
/* Meta key of the chunk statistics row (binary, see cupstore_chunkstats). */
#define CUPSTORE_META_CHUNKSTATS ".chunkstats"

/* One growable byte buffer (scratch space reused across batches). */
typedef struct cupstore_buf {
    uint8_t *p;
    size_t len, cap;
} cupstore_buf;

int cupstore_buf_reserve(cupstore_buf *b, size_t need);
void cupstore_buf_free(cupstore_buf *b);

struct cupstore_env {
    MDB_env *mdb;
    MDB_dbi dbi[CUPSTORE_DB_MAX];
    bool have_db[CUPSTORE_DB_MAX];
    bool rdonly;
    bool sync_each;             /* front ends: synchronous commits          */
    uint64_t map_max;
    bool grow_pending;          /* MAP_FULL seen; grow before next write    */
    bool no_compress;           /* opts.no_compress                         */
    pthread_mutex_t wlock;      /* serialises write txns in this process    */
    pthread_rwlock_t maplock;   /* read txns: shared; remapping: exclusive  */
    /* who holds wlock / maplock exclusively (valid while *_held), so a
     * thread whose access faulted can give back what it held
     * (cupstore_env_fault); written by the holder only */
    pthread_t wlock_owner, maplock_writer;
    bool wlock_held, maplock_wr_held;
    _Atomic bool dead;          /* a mapping access faulted: never touched again */
    char *path;
    char *id;
    cupstore_buf enc;           /* chunk_put scratch (under wlock)          */
    cupstore_buf lz;
    /* cupstore_guarded: the frame that closes this env after a read fault
     * (opened inside it), and the frame's list (cupstore_guard.c) */
    struct cupstore_guard *guard;
    cupstore_env *gnext, *gprev;
};

/* Cursors a txn keeps track of, so that a read fault can close them. */
#define CUPSTORE_TXN_CURSORS 4

struct cupstore_txn {
    cupstore_env *env;
    MDB_txn *mdb;
    bool write;
    int failed;                 /* sticky error of a write txn (0: none)   */
    bool map_full;              /* a put hit MDB_MAP_FULL                   */
    MDB_cursor *cursors[CUPSTORE_TXN_CURSORS]; /* open (cupstore_cursor)   */
    /* cupstore_guarded: the frame that ends this txn after a read fault
     * (begun inside it), and the frame's list (cupstore_guard.c) */
    struct cupstore_guard *guard;
    cupstore_txn *gnext, *gprev;
};

/* Map an LMDB return code to errno / CUPSTORE_E* (0 stays 0). */
int cupstore_mdb_err(int rc);
/* The environment's map size now (cupstore_env.c).  Call with the write
 * lock or the map lock held (it changes only under both). */
uint64_t cupstore_map_current(cupstore_env *env);

/* Record a put failure in a write txn; returns the code to give back. */
int cupstore_txn_fail(cupstore_txn *txn, int mdbrc);

/* Put / get helpers on one named DB.  Return mapped codes. */
int cupstore_put(cupstore_txn *txn, int db, const void *k, size_t kl, const void *v,
                 size_t vl, unsigned flags);
int cupstore_get(cupstore_txn *txn, int db, const void *k, size_t kl, MDB_val *v);
int cupstore_cursor(cupstore_txn *txn, int db, MDB_cursor **cur);
/* Close a cursor from cupstore_cursor (NULL is fine). */
void cupstore_cursor_close(cupstore_txn *txn, MDB_cursor *cur);

/* ---- The read-fault guard (cupstore_guard.c) -------------------------- */
/* Called where an env is opened / closed and a txn begins / ends: inside
 * cupstore_guarded, the innermost frame of this thread takes it on. */
void cupstore_guard_env_opened(cupstore_env *env);
void cupstore_guard_env_closing(cupstore_env *env);
void cupstore_guard_txn_begun(cupstore_txn *txn);
void cupstore_guard_txn_ending(cupstore_txn *txn);
/* LMDB's assertion callback (mdb_env_set_assert) of every env. */
void cupstore_guard_mdb_assert(MDB_env *env, const char *msg);
/* Release a txn a read fault left open: its cursors closed, the LMDB txn
 * aborted, this process' locks released, the struct freed
 * (cupstore_env.c). */
void cupstore_txn_release(cupstore_txn *txn);
/* Walk keys >= start (or all when start is NULL) in key order; fn returns
 * non-zero to stop with that value, or sets *done to stop with 0.  A
 * database missing from an older session walks as empty. */
typedef int (*cupstore_walk_fn)(const MDB_val *k, const MDB_val *v, void *arg, bool *done);
int cupstore_walk(cupstore_txn *txn, int db, const void *start, size_t klen,
                  cupstore_walk_fn fn, void *arg);
/* Health row codec (exposed for the forward-compatibility tests). */
size_t cupstore_health_encode(const cupstore_health *h, uint8_t *out, size_t cap);
int cupstore_health_decode(const void *buf, size_t len, cupstore_health *h);
/* Check that txn is usable for writing. */
int cupstore_txn_writable(cupstore_txn *txn);

/* ---- Byte helpers ---------------------------------------------------- */
static inline void cupstore_be64_put(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

static inline uint64_t cupstore_be64_get(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

static inline void cupstore_be32_put(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline uint32_t cupstore_be32_get(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* CRC-32C (Castagnoli): continue crc (0 to start) over n bytes. */
uint32_t cupstore_crc32c(uint32_t crc, const void *buf, size_t n);

/* Write v as LEB128 varint at p (at most 10 bytes); returns bytes written. */
static inline size_t cupstore_varint_put(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/* Read a varint from [*pp, end); false on truncation or overlong input.
 * Values of one to three bytes with three bytes left (nearly all of a
 * chunk's) take the straight path; the loop gives the same results. */
static inline bool cupstore_varint_get(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t v = 0;
    if (__builtin_expect(end - p >= 3, 1)) {
        uint64_t b0 = p[0], b1 = p[1], b2 = p[2];
        if (b0 < 0x80) {
            *pp = p + 1;
            *out = b0;
            return true;
        }
        if (b1 < 0x80) {
            *pp = p + 2;
            *out = (b0 & 0x7f) | b1 << 7;
            return true;
        }
        if (b2 < 0x80) {
            *pp = p + 3;
            *out = (b0 & 0x7f) | (b1 & 0x7f) << 7 | b2 << 14;
            return true;
        }
    }
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (p >= end)
            return false;
        uint8_t b = *p++;
        if (shift == 63 && b > 1)
            return false;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *pp = p;
            *out = v;
            return true;
        }
    }
    return false;
}

static inline uint64_t cupstore_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t cupstore_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* ---- Table-driven TLV rows ------------------------------------------- */
/* A row is a sequence of (tag varint, value).  tag = id << 6 | index << 1 |
 * wire; wire 0: varint value, wire 1: varint length + bytes.  Readers skip
 * ids and indexes they do not know; absent fields read as zero. */
enum { CUPSTORE_TLV_U32, CUPSTORE_TLV_U64, CUPSTORE_TLV_I32, CUPSTORE_TLV_STR };

typedef struct cupstore_tlv_field {
    uint16_t id;        /* >= 1, unique within a table                     */
    uint8_t type;       /* CUPSTORE_TLV_*                                   */
    uint8_t count;      /* array elements (1 for scalars); STR: buffer size */
    uint32_t offset;    /* offsetof in the struct                           */
} cupstore_tlv_field;

#define CUPSTORE_TLV_MAXINDEX 32

/* Bytes needed at most to encode a struct with this table. */
size_t cupstore_tlv_bound(const cupstore_tlv_field *t, size_t n);
/* Encode s into out (size >= bound); returns length. */
size_t cupstore_tlv_encode(const cupstore_tlv_field *t, size_t n, const void *s, uint8_t *out);
/* Decode into s (zeroed first, size ssize).  0 or CUPSTORE_ECORRUPT. */
int cupstore_tlv_decode(const cupstore_tlv_field *t, size_t n, const uint8_t *in, size_t len,
                        void *s, size_t ssize);
/* Encode with a table and put under key (stack buffer when small). */
int cupstore_tlv_put(cupstore_txn *txn, int db, const void *key, size_t kl,
                     const cupstore_tlv_field *t, size_t n, const void *s);

/* ---- Chunks ------------------------------------------------------------ */
/* Encode into b (scratch) using lz (scratch) for compression (mode AUTO:
 * LZ4 when it saves at least 1/8; RAW: never); on success
 * *out and *out_len point into b or lz.  Sets *key_ns (chunk key time: smallest
 * non-zero start, else smallest non-zero end, else 0) and *span (largest
 * minus smallest non-zero start). */
enum { CUPSTORE_ENC_AUTO = 0, CUPSTORE_ENC_RAW = 1 };
int cupstore_chunk_encode_buf(const cupstore_record *recs, size_t n, unsigned mode,
                              cupstore_buf *b, cupstore_buf *lz, const uint8_t **out,
                              size_t *out_len, uint64_t *key_ns, uint64_t *span);
/* Decode with a scratch buffer for decompression. */
int cupstore_chunk_decode_buf(const void *buf, size_t len, cupstore_buf *scratch,
                              cupstore_record_fn fn, void *arg);
/* Read a chunk header: record count. CUPSTORE_ECORRUPT if malformed. */
int cupstore_chunk_count(const void *buf, size_t len, uint64_t *count);
/* The count alone, from the header's first bytes (no checksum: reads one
 * page of a large chunk); the decode checks the rest. */
int cupstore_chunk_count_quick(const void *buf, size_t len, uint64_t *count);

/* ---- Store directory ---------------------------------------------------- */
/* Whether s is a session id ("YYYYmmddTHHMMSS-PID[-N]"). */
bool cupstore_id_valid(const char *s);
/* malloc'ed "a/b". */
char *cupstore_path_join(const char *a, const char *b);
/* An existing store directory: a directory owned by the caller's euid and
 * not group/world writable (readers trust nothing else).  0, errno,
 * ENOTDIR or CUPSTORE_EPERM. */
int cupstore_dir_check(const char *dir);

/* ---- Session files ------------------------------------------------------ */
/* Check a data.mdb before LMDB maps it: 0, CUPSTORE_ENOTSTORE (not LMDB),
 * CUPSTORE_ECORRUPT (LMDB but truncated/inconsistent), errno. */
int cupstore_file_check(const char *datafile);
/* A session's lock.mdb, if present, must be a regular file (not a FIFO,
 * a device or a link): 0, CUPSTORE_ENOTSTORE, errno. */
int cupstore_lockfile_check(const char *lockfile);
/* Same check over bytes in memory (the fuzzer uses it). */
int cupstore_file_check_mem(const uint8_t *p, size_t len);

#endif /* CUPSTORE_INT_H */
