/*
 * fill_store.c - writes stores with known truth for the CLI tests and the
 * export benchmark, through the store API only.  Fixed ids and timestamps
 * (from 2025-01-01T12:00:00Z), so outputs can be compared with golden files.
 *
 *   fill_store DIR            the test sessions (see sessions[] below)
 *   fill_store --running DIR  one session with a fresh heartbeat (pid 1)
 *   fill_store --count-only DIR  one clean count-only session
 *                             (20250101T150000-8, CUPTOP_SINK=null: health
 *                             rows count records, no record is stored)
 *   fill_store --invisible DIR  one lossy session (20250101T140000-7) whose
 *                             command line, host and an error note hold
 *                             bidi overrides, isolates and zero-width
 *                             characters (U+202E, U+2066, U+200B, U+FEFF)
 *   fill_store --bench DIR N [SEED]  one session with N records (kernels,
 *                             memcpys, runtime and driver calls) for bench/export
 *                             and bench/compare; SEED (default 0) varies the
 *                             names and durations, the id is ...-(4242+SEED)
 *   fill_store --shuffled DIR N [CLAIMED]  one session (20250101T120000-5151) with N
 *                             kernel records in random order within one
 *                             second, for the chrome writer's reordering:
 *                             ties, zero timestamps, missing ends and one
 *                             5 s kernel among them; its final status
 *                             claims CLAIMED records stored (default N:
 *                             more simulates records lost from the store)
 *   fill_store --late DIR N   the --shuffled session with every record 2 s
 *                             later: GPU timestamps past the session's end
 *                             (its final status at T0+1)
 *   fill_store --early DIR    one clean session (20250101T120000-5252) whose
 *                             start is stamped at T0 + 2 ms, after what it
 *                             holds from the second before: a kernel record
 *                             at T0 - 0.5 ms and a launch lost (the ledger's
 *                             `lost` row) at T0 - 1 ms; 10 kernels and one
 *                             lost launch after T0 (as a session whose store
 *                             was made after CUPTI attached)
 *   fill_store --config DIR TEXT [BUFFER_SIZE]  the CUPTI-drops session
 *                             (20250101T120100-2000) with TEXT as its free-text
 *                             "config" row and, when given, BUFFER_SIZE as its
 *                             config.buffer_size key (without: a store written
 *                             before the structured keys)
 *   fill_store --ranges DIR N  the clean session 20250101T120000-1001 with N
 *                             closed NVTX ranges "step" (ids 1..N, 1 ms each
 *                             from T0): a ranges table of several pages for
 *                             the damaged-page rows of the fault matrix
 *   fill_store --graph-nvtx DIR  the clean session 20250101T120000-1001 with
 *                             graph launches (cudaGraphLaunch records, thread
 *                             77 and 78, correlation 9001..) inside NVTX
 *                             ranges that nest and one that does not, their
 *                             graph records in a chunk read before the
 *                             launches' chunk (see fill_graph_nvtx)
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cupstore.h"

#define T0 1735732800ull /* 2025-01-01T12:00:00Z */
#define NS 1000000000ull
#define SECONDS 10

static void die(const char *what, int rc)
{
    fprintf(stderr, "fill_store: %s: %s\n", what, cupstore_strerror(rc));
    exit(1);
}

#define CK(call)                                                                            \
    do {                                                                                    \
        int rc_ = (call);                                                                   \
        if (rc_)                                                                            \
            die(#call, rc_);                                                                \
    } while (0)

/* Interned names: plain, hostile (quotes, backslash, newline, ESC, invalid
 * UTF-8, an overlong encoding, C1 controls), valid non-ASCII, and long. */
static const char *const names[] = {
    NULL,
    "cudaLaunchKernel",
    "cuLaunchKernel",
    "void gemm<float, \"tn\">(float const*, float*)",
    "evil\n\x1b[2J\x1b]0;pwned\x07\"quoted\"\\back\xff\xfe tail",
    "\xc3\xbcn\xc3\xaf" "c\xc3\xb6" "d\xc3\xa9_kernel \xe2\x80\xa8 sep",
    "cudaMemcpyAsync",
    "cudaMemsetAsync",
    "_ZN7cutlass6KernelINS_4gemm6kernel4GemmINS1_11threadblock13MmaPipelinedINS1_9GemmShapeILi128"
    "ELi128ELi8EEENS_9transform11threadblock22PredicatedTileIteratorINS_11MatrixShapeILi128ELi8EE"
    "EfNS_6layout8RowMajorELi1ENS8_30PitchLinearStripminedThreadMapINSD_16PitchLinearShapeILi8E"
    "Li128EEELi256ELi1EEELi1EEEEEEEvNT_6ParamsE",
    "\x01\x7f\xc0\xaf\xc2\x85\xc2\x9b[31m c1",
    "cudaStreamSynchronize",
};
#define NNAMES (sizeof names / sizeof names[0])

/* Real kernel names for the export benchmark (--bench): mangled as CUPTI
 * gives them, so the export demangles (once per name) as on a GPU trace. */
static const char *const bench_names[] = {
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_",
    "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_15gpu_kernel_implINS0_22CUDAFunctorOnOther_addIbEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_",
    "_ZN7cutlass7Kernel2I43cutlass_80_simt_sgemm_256x128_8x4_nn_align1EEvNT_6ParamsE",
    "_ZN4vllm15rms_norm_kernelIN3c104HalfEEEvPT_PKS3_S6_fii",
    "_Z40fmha_cutlassF_f32_aligned_64x128_rf_sm80N22PyTorchMemEffAttention15AttentionKernelIfN7cutlass4arch4Sm80ELb1ELi64ELi128ELi128ELb1ELb1EE6ParamsE",
    "_ZN2at6native43_GLOBAL__N__b6de9c8c_10_SoftMax_cu_9f978f6319cunn_SoftMaxForwardILi8EN3c104HalfEfS4_NS1_22SoftMaxForwardEpilogueEEEvPT2_PKT0_i",
};
#define NBENCH (sizeof bench_names / sizeof bench_names[0])

typedef struct sess {
    const char *id;
    int pid;
    int loss;                 /* cupstore_loss to inject, or -1            */
    bool loss_rows;           /* also write exact loss rows (same counts)  */
    bool rows_only;           /* loss only in loss rows, not in health     */
    bool final;               /* write a final status                      */
    bool protocol_timeout;    /* flush step timed out                      */
    bool flush_fail;
    bool unconsumed;
    bool detach;
    uint64_t tail_lost;
    bool rich;                /* hostile names, overlaps, epochs, marks    */
    const char *cmdline;
    bool count_only;          /* sink=null: rows count, no chunk stored    */
} sess;

static const sess sessions[] = {
    {"20250101T120000-1001", 1001, -1, false, false, true, false, false, false, false, 0, true,
     "./train --name \"x\\y\" \x1b[31mred\x1b[0m \xff"},
    {"20250101T120100-2000", 2000, CUPSTORE_LOSS_CUPTI_DROPPED, true, false, true},
    {"20250101T120101-2001", 2001, CUPSTORE_LOSS_DECLINED, false, false, true},
    {"20250101T120102-2002", 2002, CUPSTORE_LOSS_QUEUE_OVERFLOW, true, false, true},
    {"20250101T120103-2003", 2003, CUPSTORE_LOSS_PARSE_ERROR, false, false, true},
    {"20250101T120104-2004", 2004, CUPSTORE_LOSS_STORE_REFUSED, true, false, true},
    {"20250101T120105-2005", 2005, CUPSTORE_LOSS_ZERO_TS, true, true, true},
    {"20250101T120106-2006", 2006, -1, false, false, true, false, false, false, false, 40},
    {"20250101T120107-2007", 2007, CUPSTORE_LOSS_CONFLICT, false, false, true},
    {"20250101T120200-3000", 3000, -1, false, false, true, false, false, true},
    {"20250101T120201-3001", 3001, -1, false, false, true, true},
    {"20250101T120202-3002", 3002, -1, false, false, true, false, true},
    {"20250101T120203-3003", 3003, -1, false, false, true, false, false, false, true},
    {"20250101T120204-3004", 3004, -1, false, false, false},
};

static uint64_t loss_at(int second)
{
    return second == 3 ? 100 : second == 4 ? 50 : second == 7 ? 25 : 0;
}

/* One second of records: launches on two devices and three streams, with
 * API records on two threads (driver nested in runtime). */
static size_t gen_second(const sess *s, uint64_t t, int launches, cupstore_record *r,
                         uint32_t *corr, cupstore_health *h)
{
    size_t n = 0;
    for (int i = 0; i < launches; i++) {
        uint64_t a = t + (uint64_t)i * 40000;
        uint32_t c = ++*corr;
        uint16_t dev = (uint16_t)(i % 2);
        unsigned gk = i % 5 == 3 ? CUPSTORE_KIND_MEMCPY : i % 5 == 4 ? CUPSTORE_KIND_MEMSET
                                                                     : CUPSTORE_KIND_KERNEL;
        cupstore_record api = {.kind = CUPSTORE_KIND_RUNTIME, .device = CUPSTORE_DEVICE_NONE,
                               .correlation = c, .start_ns = a, .end_ns = a + 5000,
                               .name_id = gk == CUPSTORE_KIND_KERNEL ? 1
                                          : gk == CUPSTORE_KIND_MEMCPY ? 6 : 7,
                               .pid = (uint32_t)s->pid, .tid = (uint32_t)s->pid + (uint32_t)(i % 2),
                               .cbid = 211};
        cupstore_record drv = api;
        drv.kind = CUPSTORE_KIND_DRIVER;
        drv.correlation = 0x40000000u + c;
        drv.start_ns = a + 1000;
        drv.end_ns = a + 4000;
        drv.name_id = 2;
        drv.cbid = 307;
        cupstore_record g = {.kind = (uint8_t)gk, .device = dev, .context = 1u + dev,
                             .stream = 7u + (uint32_t)(i % 3), .correlation = c,
                             .start_ns = a + 20000, .end_ns = a + 28000};
        if (gk == CUPSTORE_KIND_KERNEL) {
            g.name_id = s->rich ? (uint32_t)(3 + i % 3 * 2 + (i % 7 == 0)) : 3;
            if (g.name_id == 7 || g.name_id == 6)
                g.name_id = 8;
            g.grid[0] = 128, g.grid[1] = 1, g.grid[2] = 1;
            g.block[0] = 256, g.block[1] = 1, g.block[2] = 1;
            g.aux = 32;
            g.bytes = 1024;
        } else if (gk == CUPSTORE_KIND_MEMCPY) {
            g.bytes = 1u << 20;
            g.aux = CUPSTORE_COPY_AUX(1, 2, 3); /* HtoD, pinned -> device */
        } else {
            g.bytes = 1u << 20;
            g.aux = 1;
            g.flags = 3u << CUPSTORE_RF_MEMKIND_SHIFT; /* device memory */
        }
        r[n++] = api;
        r[n++] = drv;
        r[n++] = g;
        h->records_by_kind[api.kind]++;
        h->records_by_kind[drv.kind]++;
        h->records_by_kind[g.kind]++;
        h->records_by_device[dev]++;
    }
    return n;
}

static void put_meta(cupstore_txn *txn, const sess *s)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%d", s->pid);
    CK(cupstore_meta_put(txn, "pid", buf));
    CK(cupstore_meta_put(txn, "host", "testhost"));
    CK(cupstore_meta_put(txn, "cmdline", s->cmdline ? s->cmdline : "./app --steps 10"));
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)(T0 * NS));
    CK(cupstore_meta_put(txn, "start_ns", buf));
    CK(cupstore_meta_put(txn, "cuda_version", "13.0"));
    CK(cupstore_meta_put(txn, "cupti_version", "13.0.48"));
    CK(cupstore_meta_put(txn, "cupti_api_version", "130000"));
    CK(cupstore_meta_put(txn, "driver_version", "580.65"));
    CK(cupstore_meta_put(txn, "agent_version", "test"));
    CK(cupstore_meta_put(txn, "devices", "0:Test GPU \"A\"\n1:Test GPU B"));
    CK(cupstore_meta_put(txn, "config", "kinds=kernel,memcpy,memset,runtime,driver\npool=8"));
    CK(cupstore_meta_put(txn, "sink", s->count_only ? "null" : "store"));
    if (!s->rich)
        return;   /* the others read as sessions of an older agent */
    /* provenance as the agent writes it (doc/store-format.md) */
    CK(cupstore_meta_put(txn, "simulated", "0"));
    CK(cupstore_meta_put(txn, "driver_version", "580.159.04"));
    CK(cupstore_meta_put(txn, "driver_version_source", "nvml"));
    CK(cupstore_meta_put(txn, "cuda_driver_version", "13.0"));
    CK(cupstore_meta_put(txn, "cupti_version", "13.0.1"));
    CK(cupstore_meta_put(txn, "cuptop_version", "test"));
    CK(cupstore_meta_put(txn, "kernel_release", "6.8.0-test"));
    CK(cupstore_meta_put(txn, "os", "Linux x86_64"));
    CK(cupstore_meta_put(txn, "virt", "container (cgroup: docker)"));
    CK(cupstore_meta_put(txn, "label", "resnet \"baseline\"\x1b[31m"));
    CK(cupstore_meta_put(txn, "unknown",
                         "cuda_runtime_version=no shared libcudart in the process\n"));
    CK(cupstore_meta_put(txn, "device.0",
                         "name=NVIDIA H200\nuuid=GPU-6d2c4e1a-0000-1111-2222-333344445555\n"
                         "cc=9.0\nsm=132\nmemory=150754820096\nmig=0\nsource=cupti\n"));
}

static void fill_session(const char *dir, const sess *s, bool running)
{
    char path[4096];
    cupstore_env *env;
    cupstore_txn *txn;
    cupstore_record recs[1024];
    uint32_t corr = 0;
    uint64_t completed = 0, consumed = 0;
    uint64_t t0 = running ? (uint64_t)time(NULL) - SECONDS : T0;

    snprintf(path, sizeof path, "%s/%s", dir, s->id);
    CK(cupstore_env_open(&env, path, CUPSTORE_CREATE, NULL));
    CK(cupstore_txn_begin(env, true, &txn));
    put_meta(txn, s);
    for (unsigned i = 1; i < NNAMES; i++)
        CK(cupstore_name_put(txn, i, names[i], strlen(names[i])));
    cupstore_epoch e1 = {.id = 1, .kinds = CUPSTORE_KINDS_DEFAULT, .start_ns = t0 * NS};
    if (s->rich) {
        e1.end_ns = (t0 + 5) * NS;
        cupstore_epoch e2 = {.id = 2, .kinds = (1u << CUPSTORE_KIND_KERNEL) |
                                               (1u << CUPSTORE_KIND_MEMCPY) |
                                               (1u << CUPSTORE_KIND_MEMSET) |
                                               (1u << CUPSTORE_KIND_RUNTIME) |
                                               (1u << CUPSTORE_KIND_DRIVER),
                             .start_ns = (t0 + 5) * NS, .ctl_gen = 1};
        CK(cupstore_epoch_put(txn, &e2));
        cupstore_mark m = {.name = "hot", .from_ns = (t0 + 2) * NS,
                           .to_ns = (t0 + 3) * NS + NS - 1, .created_ns = (t0 + 9) * NS};
        CK(cupstore_mark_put(txn, &m));
        uint64_t gen;
        CK(cupstore_control_request(txn, e2.kinds, &gen));
        CK(cupstore_control_ack(txn, gen, (t0 + 5) * NS, 0, 0));
    }
    CK(cupstore_epoch_put(txn, &e1));
    CK(cupstore_txn_commit(txn));

    for (int sec = 0; sec < SECONDS; sec++) {
        uint64_t t = (t0 + (uint64_t)sec) * NS;
        cupstore_health h = {.second = t0 + (uint64_t)sec, .heartbeat_ns = t + 999000000ull,
                             .epoch = s->rich && sec >= 5 ? 2 : 1,
                             .kinds_enabled = CUPSTORE_KINDS_DEFAULT};
        if (h.epoch == 2)
            h.kinds_enabled &= ~(1u << CUPSTORE_KIND_OVERHEAD), h.ctl_gen_applied = 1;
        int launches = s->rich ? 20 : 4;
        size_t n = gen_second(s, t + 100000, launches, recs, &corr, &h);
        if (s->rich && sec == 1) {
            /* overlapping kernels on one stream: the second must move */
            cupstore_record k = {.kind = CUPSTORE_KIND_KERNEL, .device = 0, .context = 1,
                                 .stream = 99, .start_ns = t + 100000, .end_ns = t + 200000,
                                 .name_id = 3};
            recs[n++] = k;
            k.start_ns = t + 150000, k.end_ns = t + 250000, k.name_id = 4;
            recs[n++] = k;
            k.start_ns = t + 160000, k.end_ns = t + 170000, k.name_id = 9; /* nests in #2 */
            recs[n++] = k;
            cupstore_record sy = {.kind = CUPSTORE_KIND_SYNC, .device = 0, .context = 1,
                                  .stream = 7, .start_ns = t + 300000, .end_ns = t + 400000,
                                  .pid = (uint32_t)s->pid, .tid = (uint32_t)s->pid,
                                  .name_id = 10, .aux = 3};
            recs[n++] = sy;
            cupstore_record oh = {.kind = CUPSTORE_KIND_OVERHEAD, .device = 0,
                                  .start_ns = t + 500000, .end_ns = t + 510000, .aux = 1};
            recs[n++] = oh;
            h.records_by_kind[CUPSTORE_KIND_KERNEL] += 3;
            h.records_by_kind[CUPSTORE_KIND_SYNC]++;
            h.records_by_kind[CUPSTORE_KIND_OVERHEAD]++;
            h.records_by_device[0] += 5;
            h.overhead_by_type[1] = 1;
        }
        uint64_t l = s->loss >= 0 ? loss_at(sec) : 0;
        if (s->loss == CUPSTORE_LOSS_ZERO_TS && l) {
            cupstore_record z = {.kind = CUPSTORE_KIND_KERNEL, .flags = CUPSTORE_RF_ZERO_TS,
                                 .device = 1, .stream = 7, .name_id = 3};
            recs[n++] = z;
        }
        h.records_parsed = h.records_stored = n;
        if (s->count_only) {
            h.records_stored = 0;
            h.flags |= CUPSTORE_HF_COUNT_ONLY;
        }
        h.buf_requested = h.buf_provided = h.buf_completed = h.buf_consumed = 4;
        h.bytes_delivered = n * 64;
        h.pool_limit = 8, h.pool_high_water = 2, h.buf_outstanding = 1;
        h.queue_capacity = 64, h.queue_depth = 0, h.queue_high_water = 2;
        h.req_lat = (cupstore_lat){4, 800, 1500, 2000};
        h.cmp_lat = (cupstore_lat){4, 2000, 5000, 9000};
        h.commit_lat = (cupstore_lat){2, 300000, 900000, 1000000};
        h.batch_records_p50 = (uint32_t)n;
        if (l && !s->rows_only)
            h.loss[s->loss] = l;
        if (l && s->loss == CUPSTORE_LOSS_DECLINED) {
            h.buf_declined = 3;
            h.pool_high_water = h.pool_limit;
        }
        if (l && s->loss == CUPSTORE_LOSS_QUEUE_OVERFLOW) {
            h.queue_high_water = h.queue_capacity;
            h.buf_consumed = 2;
        }
        if (l && s->loss == CUPSTORE_LOSS_STORE_REFUSED)
            h.store_refused = 2;
        if (l && s->loss == CUPSTORE_LOSS_CONFLICT)
            h.buf_foreign = 2;
        if (s->unconsumed && sec == SECONDS - 1)
            h.buf_consumed = 1;
        completed += h.buf_completed;
        consumed += h.buf_consumed;
        if (running && sec == SECONDS - 1)
            h.heartbeat_ns = (uint64_t)time(NULL) * NS;

        CK(cupstore_txn_begin(env, true, &txn));
        if (!s->count_only)
            CK(cupstore_chunk_put(txn, recs, n));
        CK(cupstore_health_put(txn, &h));
        if (l && (s->loss_rows || s->rows_only)) {
            /* exact rows split over the two devices, plus a per-kind estimate */
            cupstore_loss_row r0 = {.second = h.second, .loss = (uint8_t)s->loss,
                                    .kind = CUPSTORE_KIND_ALL, .device = 0, .count = l / 2};
            CK(cupstore_loss_add(txn, &r0));
            r0.device = 1, r0.count = l - l / 2;
            CK(cupstore_loss_add(txn, &r0));
            cupstore_loss_row est = {.second = h.second, .loss = (uint8_t)s->loss,
                                     .kind = CUPSTORE_KIND_KERNEL,
                                     .device = CUPSTORE_DEVICE_NONE, .estimate = true,
                                     .count = l};
            CK(cupstore_loss_add(txn, &est));
        }
        CK(cupstore_txn_commit(txn));
    }

    CK(cupstore_txn_begin(env, true, &txn));
    if (s->detach || s->rich) {
        cupstore_note note = {.time_ns = (t0 + 1) * NS, .level = s->detach ? 2 : 0};
        snprintf(note.text, sizeof note.text, "%s",
                 s->detach ? "CUPTI could not be loaded: \x1b[31mlibcupti.so.13\x1b[0m: not found\n"
                           : "agent started");
        CK(cupstore_note_put(txn, &note));
    }
    /* Notes as the agent writes them: a refused setting (warning) and the
     * name of a conflicting CUPTI subscriber (error, hostile bytes in it). */
    if (s->loss == CUPSTORE_LOSS_DECLINED) {
        cupstore_note note = {.time_ns = t0 * NS, .level = 1};
        snprintf(note.text, sizeof note.text, "%s",
                 "CUPTOP_BUFFER_SIZE=\"1\": not a size from 64K to 256M, multiple of 8; "
                 "using the default");
        CK(cupstore_note_put(txn, &note));
    }
    if (s->loss == CUPSTORE_LOSS_CONFLICT) {
        cupstore_note note = {.time_ns = (t0 + 2) * NS, .level = 2};
        snprintf(note.text, sizeof note.text, "%s",
                 "subscriber conflict: another CUPTI client is active (torch.profiler "
                 "\x1b]0;x\x07\"sim\"); continuing with activity records only");
        CK(cupstore_note_put(txn, &note));
    }
    if (s->final && !running) {
        for (unsigned st = 0; st < CUPSTORE_STEP_MAX; st++) {
            cupstore_step step = {.step = st, .start_mono_ns = 5000000000ull + st * 1000000ull,
                                  .end_mono_ns = 5000000000ull + st * 1000000ull + 250000};
            if (s->protocol_timeout && st == CUPSTORE_STEP_FLUSH) {
                step.timed_out = 1;
                step.rc = 110;
                step.end_mono_ns = step.start_mono_ns + 2000000000ull;
                step.queue_remaining = 3;
            }
            CK(cupstore_step_put(txn, &step));
        }
        cupstore_final f = {.end_ns = (t0 + SECONDS) * NS,
                            .exit_path = s->detach ? CUPSTORE_EXIT_DETACH : CUPSTORE_EXIT_RETURN,
                            .protocol_complete = !s->protocol_timeout,
                            .flush_ok = !s->flush_fail, .tail_lost = s->tail_lost,
                            .buffers_completed = completed, .buffers_consumed = consumed,
                            .records_stored = 0};
        CK(cupstore_final_put(txn, &f));
    }
    CK(cupstore_txn_commit(txn));
    CK(cupstore_env_sync(env));
    cupstore_env_close(env);
}

/* A session for the large fills: metadata and epoch 1 written in *txn,
 * which is left open for the names. */
static cupstore_env *big_session_open(const char *dir, const sess *s, size_t map_initial,
                                      uint64_t map_max, cupstore_txn **txn)
{
    char path[4096];
    cupstore_env *env;
    snprintf(path, sizeof path, "%s/%s", dir, s->id);
    cupstore_open_opts o = {.map_initial = map_initial, .map_max = map_max};
    CK(cupstore_env_open(&env, path, CUPSTORE_CREATE, &o));
    CK(cupstore_txn_begin(env, true, txn));
    put_meta(*txn, s);
    cupstore_epoch e1 = {.id = 1, .kinds = CUPSTORE_KINDS_DEFAULT, .start_ns = T0 * NS};
    CK(cupstore_epoch_put(*txn, &e1));
    return env;
}

/* Every stop step fine and a final status: returned from main, flushed. */
static void put_clean_end(cupstore_txn *txn, uint64_t end_ns, uint64_t records_stored)
{
    cupstore_final f = {.end_ns = end_ns, .exit_path = CUPSTORE_EXIT_RETURN,
                        .protocol_complete = 1, .flush_ok = 1, .records_stored = records_stored};
    for (unsigned st = 0; st < CUPSTORE_STEP_MAX; st++) {
        cupstore_step step = {.step = st, .start_mono_ns = 1000, .end_mono_ns = 2000};
        CK(cupstore_step_put(txn, &step));
    }
    CK(cupstore_final_put(txn, &f));
}

/* N records in a realistic mix, committed 65536 at a time. */
static void fill_bench(const char *dir, uint64_t total, unsigned seed)
{
    cupstore_env *env;
    cupstore_txn *txn;
    static char idbuf[32];
    snprintf(idbuf, sizeof idbuf, "20250101T120000-%u", 4242 + seed);
    sess s = {.id = idbuf, .pid = (int)(4242 + seed), .loss = -1, .final = true};
    enum { B = 65536 };
    cupstore_record *recs = malloc(B * sizeof *recs);
    uint32_t corr = 0;
    uint64_t rng = 0x9e3779b97f4a7c15ull + seed * 0x632be59bd9b4e019ull;
    /* 1M records per second of trace time */
    const int launches = 1000000 / 3;
    uint64_t done = 0;
    if (!recs)
        exit(1);
    env = big_session_open(dir, &s, 256u << 20, 64ull << 30, &txn);
    for (unsigned i = 1; i < NNAMES; i++)
        CK(cupstore_name_put(txn, i, names[i], strlen(names[i])));
    for (unsigned i = 0; i < NBENCH; i++)
        CK(cupstore_name_put(txn, (uint32_t)(NNAMES + i), bench_names[i], strlen(bench_names[i])));
    CK(cupstore_txn_commit(txn));
    for (uint64_t sec = 0; done < total; sec++) {
        cupstore_health h = {.second = T0 + sec, .heartbeat_ns = (T0 + sec) * NS + 999000000ull,
                             .epoch = 1, .kinds_enabled = CUPSTORE_KINDS_DEFAULT};
        uint64_t t = (T0 + sec) * NS;
        int left = launches;
        while (left > 0 && done < total) {
            int now = left > B / 3 ? B / 3 : left;
            if ((uint64_t)now * 3 > total - done)
                now = (int)((total - done + 2) / 3);
            cupstore_health dummy = {0};
            size_t n = gen_second(&s, t, now, recs, &corr, &dummy);
            for (unsigned k = 0; k < CUPSTORE_KIND_MAX; k++)
                h.records_by_kind[k] += dummy.records_by_kind[k];
            /* spread the launches over the second (2.6 us apart) with
             * jitter, varied durations and kernel names */
            for (size_t i = 0; i < n; i += 3) { /* runtime, driver, GPU record */
                rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                uint64_t base = t + ((uint64_t)(launches - left) + i / 3) * 2600 % NS +
                                (rng >> 40 & 255);
                uint64_t a0 = recs[i].start_ns;
                for (size_t k = i; k < i + 3 && k < n; k++) {
                    uint64_t off = (recs[k].start_ns - a0) / 15;
                    uint64_t d = (recs[k].end_ns - recs[k].start_ns) / 15;
                    if (k == i + 2) { /* GPU work: varied durations and names */
                        d += rng & 1023;
                        if (recs[k].kind == CUPSTORE_KIND_KERNEL) {
                            /* half hostile / C names, half real mangled ones */
                            uint32_t j = (uint32_t)(rng >> 20) % 12;
                            recs[k].name_id = j < 6 ? 3 + j : (uint32_t)(NNAMES + j - 6);
                        }
                    }
                    recs[k].start_ns = base + off;
                    recs[k].end_ns = base + off + d;
                }
            }
            CK(cupstore_txn_begin(env, true, &txn));
            CK(cupstore_chunk_put(txn, recs, n));
            CK(cupstore_txn_commit(txn));
            done += n;
            left -= now;
            h.records_parsed += n;
            h.records_stored += n;
        }
        CK(cupstore_txn_begin(env, true, &txn));
        CK(cupstore_health_put(txn, &h));
        CK(cupstore_txn_commit(txn));
    }
    CK(cupstore_txn_begin(env, true, &txn));
    put_clean_end(txn, (T0 + done / 1000000 + 1) * NS, 0);
    CK(cupstore_txn_commit(txn));
    CK(cupstore_env_sync(env));
    cupstore_env_close(env);
    free(recs);
}

static uint64_t xorshift(uint64_t *r)
{
    *r ^= *r << 13, *r ^= *r >> 7, *r ^= *r << 17;
    return *r;
}

static void fill_shuffled(const char *dir, uint64_t total, uint64_t claimed, uint64_t late)
{
    cupstore_env *env;
    cupstore_txn *txn;
    sess s = {.id = "20250101T120000-5151", .pid = 5151, .loss = -1, .final = true};
    enum { B = 4096 };
    cupstore_record *recs = calloc(B, sizeof *recs);
    uint64_t rng = 0x2545f4914f6cdd1dull, done = 0;
    cupstore_health h = {.second = T0, .heartbeat_ns = T0 * NS + 999000000ull, .epoch = 1,
                         .kinds_enabled = CUPSTORE_KINDS_DEFAULT};
    if (!recs)
        exit(1);
    env = big_session_open(dir, &s, 64u << 20, 16ull << 30, &txn);
    CK(cupstore_name_put(txn, 1, "shuffled_kernel", strlen("shuffled_kernel")));
    CK(cupstore_txn_commit(txn));
    while (done < total) {
        size_t n = total - done < B ? (size_t)(total - done) : B;
        for (size_t i = 0; i < n; i++) {
            cupstore_record *r = &recs[i];
            uint64_t x = xorshift(&rng);
            memset(r, 0, sizeof *r);
            r->kind = CUPSTORE_KIND_KERNEL;
            r->device = 0;
            r->context = 1;
            r->stream = 1 + (uint32_t)(x % 8);
            r->correlation = (uint32_t)(done + i + 1);
            r->name_id = 1;
            r->start_ns = T0 * NS + late + (x >> 20) % (NS - 200000);
            r->end_ns = r->start_ns + (x >> 8) % 100000;
            switch ((x >> 56) % 128) {
            case 0: /* a tie: the same start and end as the one before */
                if (i) {
                    r->start_ns = recs[i - 1].start_ns;
                    r->end_ns = recs[i - 1].end_ns;
                }
                break;
            case 1:
                r->start_ns = r->end_ns = 0;
                r->flags = CUPSTORE_RF_ZERO_TS;
                break;
            case 2:
                r->end_ns = 0; /* end missing */
                break;
            }
            if (done + i == total / 2)
                r->end_ns = r->start_ns + 5 * NS; /* longer than 2^32 ns */
            h.records_by_kind[CUPSTORE_KIND_KERNEL]++;
        }
        CK(cupstore_txn_begin(env, true, &txn));
        CK(cupstore_chunk_put(txn, recs, n));
        CK(cupstore_txn_commit(txn));
        done += n;
    }
    h.records_parsed = h.records_stored = done;
    CK(cupstore_txn_begin(env, true, &txn));
    CK(cupstore_health_put(txn, &h));
    put_clean_end(txn, (T0 + 1) * NS, claimed);
    CK(cupstore_txn_commit(txn));
    cupstore_env_close(env);
    free(recs);
}

/* --early: see the header. */
static void fill_early(const char *dir)
{
    cupstore_env *env;
    cupstore_txn *txn;
    char buf[32];
    sess s = {.id = "20250101T120000-5252", .pid = 5252, .loss = -1, .final = true};
    cupstore_record r[11];
    env = big_session_open(dir, &s, 8u << 20, 1ull << 30, &txn);
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)(T0 * NS + 2000000));
    CK(cupstore_meta_put(txn, "start_ns", buf));
    CK(cupstore_name_put(txn, 1, "early_kernel", strlen("early_kernel")));
    CK(cupstore_meta_put(txn, "job", "early-job"));   /* export --job --from start too */
    memset(r, 0, sizeof r);
    for (unsigned i = 0; i < 11; i++) {
        r[i].kind = CUPSTORE_KIND_KERNEL;
        r[i].context = 1;
        r[i].stream = 3;
        r[i].correlation = 10 + i;
        r[i].name_id = 1;
        r[i].start_ns = i ? T0 * NS + i * 10000000ull : T0 * NS - 500000;
        r[i].end_ns = r[i].start_ns + 100000;
    }
    CK(cupstore_chunk_put(txn, r, 1));
    CK(cupstore_chunk_put(txn, r + 1, 10));
    cupstore_lost l1 = {.launch_ns = T0 * NS - 1000000, .corr = 9, .device = 0, .stream = 3,
                        .tid = 42, .missing = {1}, .name_id = 1};
    cupstore_lost l2 = {.launch_ns = T0 * NS + 55000000, .corr = 16, .device = 0, .stream = 3,
                        .tid = 42, .missing = {1}, .name_id = 1};
    CK(cupstore_lost_put(txn, &l1));
    CK(cupstore_lost_put(txn, &l2));
    cupstore_health h = {.second = T0, .heartbeat_ns = T0 * NS + 999000000ull, .epoch = 1,
                         .kinds_enabled = CUPSTORE_KINDS_DEFAULT, .records_parsed = 11,
                         .records_stored = 11};
    CK(cupstore_health_put(txn, &h));
    put_clean_end(txn, T0 * NS + NS / 2, 11);
    CK(cupstore_txn_commit(txn));
    cupstore_env_close(env);
}

/* --graph-nvtx: ranges on thread 77 (ms after T0 + 5 s): push outer
 * [0, 100], push inner [10, 20], start/end async [15, 50] (does not nest:
 * it outlives inner), a mark at 12.  Graph launches (a runtime
 * cudaGraphLaunch_v10000 record, its graph record 0.5 ms later), by
 * correlation id:
 *   9001 thread 77 at 12 -> inner      9002 77 at 16 -> async
 *   9003 77 at 30 -> async             9004 77 at 60 -> outer
 *   9005 77 at 200 -> none             9006 thread 78 at 12 -> none
 *   9007 no launch record -> none
 * The graph records' chunk holds a kernel at T0 + 4.9 s, so it is keyed
 * (and read) before the launches' chunk (keyed at their first start): the
 * jsonl writer sees each graph record before its launch. */
static void fill_graph_nvtx(const char *dir)
{
    static const struct { uint32_t corr, tid, at_us; bool api; } l[] = {
        {9001, 77, 12000, true}, {9002, 77, 16000, true}, {9003, 77, 30000, true},
        {9004, 77, 60000, true}, {9005, 77, 200000, true}, {9006, 78, 12000, true},
        {9007, 77, 14000, false},
    };
    static const struct { uint32_t id, name, flags; uint64_t s_us, e_us; } rg[] = {
        {1, 900002, CUPSTORE_RANGE_START | CUPSTORE_RANGE_END, 0, 100000},
        {2, 900003, CUPSTORE_RANGE_START | CUPSTORE_RANGE_END, 10000, 20000},
        {3, 900004, CUPSTORE_RANGE_START | CUPSTORE_RANGE_END, 15000, 50000},
        {4, 900005, CUPSTORE_RANGE_START | CUPSTORE_RANGE_END | CUPSTORE_RANGE_POINT, 12000,
         12000},
    };
    static const char *const nm[] = {"cudaGraphLaunch_v10000", "outer", "inner", "async", "here"};
    const uint64_t base = (T0 + 5) * NS;
    cupstore_record api[8], gr[8];
    size_t na = 0, ng = 0;
    cupstore_env *env;
    cupstore_txn *txn;
    char path[4096];
    fill_session(dir, &sessions[0], false);
    snprintf(path, sizeof path, "%s/%s", dir, sessions[0].id);
    CK(cupstore_env_open(&env, path, 0, NULL));
    CK(cupstore_txn_begin(env, true, &txn));
    for (uint32_t i = 0; i < 5; i++)
        CK(cupstore_name_put(txn, 900001 + i, nm[i], strlen(nm[i])));
    for (size_t i = 0; i < sizeof rg / sizeof rg[0]; i++) {
        cupstore_range r = {.id = 500 + rg[i].id, .name_id = rg[i].name, .pid = 1001, .tid = 77,
                            .flags = rg[i].flags, .start_ns = base + rg[i].s_us * 1000,
                            .end_ns = base + rg[i].e_us * 1000};
        CK(cupstore_range_put(txn, &r));
    }
    gr[ng++] = (cupstore_record){.kind = CUPSTORE_KIND_KERNEL, .device = 0, .context = 1,
                                 .stream = 7, .correlation = 8999, .start_ns = base - NS / 10,
                                 .end_ns = base - NS / 10 + 1000, .name_id = 3};
    for (size_t i = 0; i < sizeof l / sizeof l[0]; i++) {
        uint64_t a = base + (uint64_t)l[i].at_us * 1000;
        if (l[i].api)
            api[na++] = (cupstore_record){.kind = CUPSTORE_KIND_RUNTIME,
                                          .device = CUPSTORE_DEVICE_NONE,
                                          .correlation = l[i].corr, .start_ns = a,
                                          .end_ns = a + 5000, .name_id = 900001, .pid = 1001,
                                          .tid = l[i].tid, .cbid = 311};
        gr[ng++] = (cupstore_record){.kind = CUPSTORE_KIND_GRAPH, .device = 0, .context = 1,
                                     .stream = 7 + (uint32_t)i, .correlation = l[i].corr,
                                     .start_ns = a + 500000,
                                     .end_ns = a + 800000 + (uint64_t)i * 1000,
                                     .aux = 1 + (uint32_t)i % 3};
    }
    CK(cupstore_chunk_put(txn, gr, ng));
    CK(cupstore_chunk_put(txn, api, na));
    CK(cupstore_txn_commit(txn));
    cupstore_env_close(env);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--graph-nvtx") == 0) {
        CK(cupstore_dir_prepare(argv[2]));
        fill_graph_nvtx(argv[2]);
        return 0;
    }
    if ((argc == 4 || argc == 5) && strcmp(argv[1], "--bench") == 0) {
        CK(cupstore_dir_prepare(argv[2]));
        fill_bench(argv[2], strtoull(argv[3], NULL, 10),
                   argc == 5 ? (unsigned)strtoul(argv[4], NULL, 10) : 0);
        return 0;
    }
    if ((argc == 4 || argc == 5) && strcmp(argv[1], "--shuffled") == 0) {
        uint64_t n = strtoull(argv[3], NULL, 10);
        CK(cupstore_dir_prepare(argv[2]));
        fill_shuffled(argv[2], n, argc == 5 ? strtoull(argv[4], NULL, 10) : n, 0);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--early") == 0) {
        CK(cupstore_dir_prepare(argv[2]));
        fill_early(argv[2]);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "--late") == 0) {
        uint64_t n = strtoull(argv[3], NULL, 10);
        CK(cupstore_dir_prepare(argv[2]));
        fill_shuffled(argv[2], n, n, 2 * NS);
        return 0;
    }
    if ((argc == 4 || argc == 5) && strcmp(argv[1], "--config") == 0) {
        cupstore_env *env;
        cupstore_txn *txn;
        char path[4096];
        CK(cupstore_dir_prepare(argv[2]));
        fill_session(argv[2], &sessions[1], false);
        snprintf(path, sizeof path, "%s/%s", argv[2], sessions[1].id);
        CK(cupstore_env_open(&env, path, 0, NULL));
        CK(cupstore_txn_begin(env, true, &txn));
        CK(cupstore_meta_put(txn, "config", argv[3]));
        if (argc == 5)
            CK(cupstore_meta_put(txn, CUPSTORE_META_CONFIG "buffer_size", argv[4]));
        CK(cupstore_txn_commit(txn));
        cupstore_env_close(env);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "--ranges") == 0) {
        cupstore_env *env;
        cupstore_txn *txn;
        char path[4096];
        uint32_t n = (uint32_t)strtoul(argv[3], NULL, 10);
        CK(cupstore_dir_prepare(argv[2]));
        fill_session(argv[2], &sessions[0], false);
        snprintf(path, sizeof path, "%s/%s", argv[2], sessions[0].id);
        CK(cupstore_env_open(&env, path, 0, NULL));
        CK(cupstore_txn_begin(env, true, &txn));
        CK(cupstore_name_put(txn, 999999, "step", 4));
        for (uint32_t i = 1; i <= n; i++) {
            cupstore_range r = {.id = i, .name_id = 999999, .pid = 1001, .tid = 1,
                                .flags = CUPSTORE_RANGE_START | CUPSTORE_RANGE_END,
                                .start_ns = T0 * NS + (uint64_t)i * 1000000u,
                                .end_ns = T0 * NS + (uint64_t)i * 1000000u + 500000u};
            CK(cupstore_range_put(txn, &r));
        }
        CK(cupstore_txn_commit(txn));
        cupstore_env_close(env);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--running") == 0) {
        sess r = {"20250101T130000-1", 1, -1};
        char host[64];
        CK(cupstore_dir_prepare(argv[2]));
        fill_session(argv[2], &r, true);
        /* this host's name, so the pid check applies (pid 1 is alive) */
        if (gethostname(host, sizeof host) == 0) {
            cupstore_env *env;
            cupstore_txn *txn;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[2], r.id);
            CK(cupstore_env_open(&env, path, 0, NULL));
            CK(cupstore_txn_begin(env, true, &txn));
            CK(cupstore_meta_put(txn, "host", host));
            CK(cupstore_txn_commit(txn));
            cupstore_env_close(env);
        }
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--count-only") == 0) {
        sess co = {"20250101T150000-8", 8, -1, false, false, true};
        co.count_only = true;
        CK(cupstore_dir_prepare(argv[2]));
        fill_session(argv[2], &co, false);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--invisible") == 0) {
        static const char bidi[] = "x\xe2\x80\xae" "exe.gpj\xe2\x81\xa6 z\xe2\x80\x8b" "w\xef\xbb\xbf";
        char cmdline[128], path[4096];
        snprintf(cmdline, sizeof cmdline, "./app %s", bidi);
        sess v = {"20250101T140000-7", 7, CUPSTORE_LOSS_DECLINED, false, false, true};
        v.cmdline = cmdline;
        CK(cupstore_dir_prepare(argv[2]));
        fill_session(argv[2], &v, false);
        cupstore_env *env;
        cupstore_txn *txn;
        snprintf(path, sizeof path, "%s/%s", argv[2], v.id);
        CK(cupstore_env_open(&env, path, 0, NULL));
        CK(cupstore_txn_begin(env, true, &txn));
        CK(cupstore_meta_put(txn, "host", bidi));
        cupstore_note note = {.time_ns = (T0 + 3) * NS, .level = 2};
        snprintf(note.text, sizeof note.text, "subscriber conflict: %s", bidi);
        CK(cupstore_note_put(txn, &note));
        CK(cupstore_txn_commit(txn));
        cupstore_env_close(env);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: fill_store DIR | --running DIR | --count-only DIR | --invisible DIR "
                        "| --bench DIR N | --shuffled DIR N [CLAIMED] | --late DIR N | --config DIR TEXT "
                        "[BUFFER_SIZE] | --ranges DIR N | --graph-nvtx DIR\n");
        return 2;
    }
    CK(cupstore_dir_prepare(argv[1]));
    for (size_t i = 0; i < sizeof sessions / sizeof sessions[0]; i++)
        fill_session(argv[1], &sessions[i], false);
    return 0;
}
