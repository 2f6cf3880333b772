/*
 * export_perfetto_out.c - where the Perfetto writer's packets go: gathered
 * into chunks that are deflated and written as TracePacket.
 * compressed_packets (the default), the form Perfetto's own tracing service
 * writes with TraceConfig's compression_type COMPRESSION_TYPE_DEFLATE and
 * trace processor inflates on load; or straight to the output
 * (--uncompressed).
 *
 * Why: a slice is a BEGIN and an END packet, and each packet's frame,
 * sequence id, TrackEvent frame and type take 8 bytes whatever the
 * encoding; with exact (ns) timestamp deltas a slice cannot be written in
 * fewer than about 23 bytes (doc/design.md).  Those bytes repeat from one
 * packet to the next, and deflate takes them to a fifth.
 *
 * A chunk holds whole packets, at most PF_CHUNK bytes of them, and is one
 * zlib stream of its own (trace processor inflates each compressed_packets
 * by itself): PF_CHUNK keeps each compressed_packets packet under the 512
 * KiB that trace_packet.proto asks for.  A packet larger than a chunk (a
 * --job's metadata) is written as it is, after the chunks before it, so the
 * packets keep their order.
 *
 * libdeflate, not zlib: a chunk is deflated whole, in one call, which is
 * what libdeflate is for; at level 1 it took 2.25x less CPU than zlib's
 * level 1 on these packets and wrote 7% fewer bytes (bench/export, doc/
 * benchmarks.md "Export: perfetto deflated"); its output is the same zlib
 * stream (RFC 1950) trace processor inflates.
 *
 * Deflate costs about half as much CPU as encoding the packets, so a worker
 * thread does it while the writer fills the other of two chunk buffers: the
 * export's wall time stays that of the encoder where a second core is free.
 * While the worker lives it alone writes the output, through wo (the
 * caller's xout, moved: the writer only reads o->err, which it sets itself
 * from wo's at each hand-over); wo goes back into *o when the worker ends.
 * Without a thread (pthread_create failed) chunks are deflated in line.
 * Memory: two chunks and one compressed bound, reused; one compressor for
 * the whole export.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <libdeflate.h>

#include "export_int.h"
#include "export_perfetto_int.h"

#define PF_ZLEVEL 1               /* the fastest level: 5x smaller here    */

/* Deflate n bytes of packets into one compressed_packets packet on w. */
static void deflate_chunk(pf_out *u, xout *w, const uint8_t *in, size_t n)
{
    size_t zl = libdeflate_zlib_compress(u->zc, in, n, u->z, u->zcap);
    if (!zl) {
        if (!w->err)
            w->err = EIO; /* cannot happen: the buffer holds the bound */
        return;
    }
    uint8_t hdr[24];
    size_t h = 0;
    hdr[h++] = (uint8_t)((F_TRACE_PACKET << 3) | PB_LEN);
    h += pb_varint_at(hdr + h, 2 + pb_varint_len(zl) + zl);
    h += pb_varint_at(hdr + h, ((uint64_t)F_TP_COMPRESSED << 3) | PB_LEN); /* 2 bytes */
    h += pb_varint_at(hdr + h, zl);
    xout_put(w, (const char *)hdr, h);
    xout_put(w, (const char *)u->z, zl);
}

static void *worker(void *arg)
{
    pf_out *u = arg;
    pthread_mutex_lock(&u->mu);
    for (;;) {
        while (!u->job_len && !u->stop)
            pthread_cond_wait(&u->cv, &u->mu);
        if (!u->job_len)
            break;
        const uint8_t *in = u->buf[u->job_buf];
        size_t n = u->job_len;
        pthread_mutex_unlock(&u->mu);
        deflate_chunk(u, &u->wo, in, n);
        pthread_mutex_lock(&u->mu);
        u->job_len = 0;
        pthread_cond_broadcast(&u->cv);
    }
    pthread_mutex_unlock(&u->mu);
    return NULL;
}

int pf_out_init(perfetto *f, xout *o, bool deflate)
{
    pf_out *u = &f->out;
    memset(u, 0, sizeof *u);
    u->o = o;
    if (!deflate)
        return 0;
    u->zc = libdeflate_alloc_compressor(PF_ZLEVEL);
    u->buf[0] = malloc(PF_CHUNK + PF_SMALL);   /* slack: pf_small_at */
    u->buf[1] = malloc(PF_CHUNK + PF_SMALL);
    if (!u->zc || !u->buf[0] || !u->buf[1])
        return ENOMEM;
    u->zcap = libdeflate_zlib_compress_bound(u->zc, PF_CHUNK);
    if (!(u->z = malloc(u->zcap)))
        return ENOMEM;
    pthread_mutex_init(&u->mu, NULL);
    pthread_cond_init(&u->cv, NULL);
    u->locks = true;
    u->wo = *o;
    if (pthread_create(&u->th, NULL, worker, u) == 0)
        u->threaded = true;
    return 0;
}

/* Wait until the worker holds no chunk (the caller holds mu). */
static void wait_idle(pf_out *u)
{
    while (u->job_len)
        pthread_cond_wait(&u->cv, &u->mu);
    if (u->wo.err && !u->o->err)
        u->o->err = u->wo.err;
}

/* Hand the chunk being filled to the worker (or deflate it here) and fill
 * the other buffer. */
static void chunk_flush(pf_out *u)
{
    if (!u->len)
        return;
    u->in += u->len;
    u->chunks++;
    if (!u->threaded) {
        deflate_chunk(u, u->o, u->buf[u->cur], u->len);
        u->len = 0;
        return;
    }
    pthread_mutex_lock(&u->mu);
    wait_idle(u);
    u->job_buf = u->cur;
    u->job_len = u->len;
    pthread_cond_broadcast(&u->cv);
    pthread_mutex_unlock(&u->mu);
    u->cur ^= 1;
    u->len = 0;
}

/* One packet, given in two parts (a frame and a body; nb may be 0): both
 * parts go into the same chunk, never split over two. */
void pf_put(perfetto *f, const void *a, size_t na, const void *b, size_t nb)
{
    pf_out *u = &f->out;
    size_t n = na + nb;
    if (__builtin_expect(u->zc && n <= PF_CHUNK, 1)) {
        if (u->len + n > PF_CHUNK)
            chunk_flush(u);
        uint8_t *d = u->buf[u->cur] + u->len;
        memcpy(d, a, na);
        if (nb)
            memcpy(d + na, b, nb);
        u->len += n;
        return;
    }
    xout *w = u->o;
    if (u->zc) {              /* larger than a chunk: as it is, in order */
        chunk_flush(u);
        if (u->threaded) {
            pthread_mutex_lock(&u->mu);
            wait_idle(u);
            pthread_mutex_unlock(&u->mu);
            w = &u->wo;       /* the worker is idle: its output is ours */
        }
    }
    xout_put(w, a, na);
    if (nb)
        xout_put(w, b, nb);
}

/* A small packet built at d (pf_small_at) that does not fit the chunk
 * being filled (it went into the slack), or any when uncompressed: a copy
 * goes through pf_put, which starts the next chunk. */
void pf_small_spill(perfetto *f, const uint8_t *d, size_t n)
{
    uint8_t tmp[PF_SMALL];
    memcpy(tmp, d, n);
    pf_put(f, tmp, n, NULL, 0);
}

/* End the worker: the chunks handed over are written, wo goes back to *o. */
static void worker_end(pf_out *u)
{
    if (!u->threaded)
        return;
    pthread_mutex_lock(&u->mu);
    wait_idle(u);
    u->stop = true;
    pthread_cond_broadcast(&u->cv);
    pthread_mutex_unlock(&u->mu);
    pthread_join(u->th, NULL);
    u->threaded = false;
    int err = u->o->err;
    *u->o = u->wo;
    if (err && !u->o->err)
        u->o->err = err;
}

int pf_out_finish(perfetto *f)
{
    pf_out *u = &f->out;
    if (u->zc)
        chunk_flush(u);
    worker_end(u);
    return u->o->err;
}

void pf_out_free(perfetto *f)
{
    pf_out *u = &f->out;
    worker_end(u);
    if (u->zc)
        libdeflate_free_compressor(u->zc);
    if (u->locks) {
        pthread_mutex_destroy(&u->mu);
        pthread_cond_destroy(&u->cv);
    }
    free(u->buf[0]);
    free(u->buf[1]);
    free(u->z);
    memset(u, 0, sizeof *u);
}
