/* agent_prov.c - provenance (see agent_prov.h). */
#include "config.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent_int.h"
#include "agent_prov.h"

static void prov_unknown(agent_prov *p, const char *key, const char *why)
{
    if (p->nunknown >= AGENT_PROV_UNKNOWN_MAX)
        return;
    p->unknown_key[p->nunknown] = key;
    snprintf(p->unknown_why[p->nunknown], sizeof p->unknown_why[0], "%s", why);
    p->nunknown++;
}

/* "13.0" from CUDA's 13000 */
static void prov_cuda_ver(char *buf, size_t len, int v)
{
    snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

/* First line of a small file, trimmed; false when absent or empty. */
static bool prov_read_line(const char *path, char *buf, size_t len)
{
    int fd = agent_fd_open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return buf[0] != '\0';
}

static bool prov_file_has(const char *path, const char *const *words, const char **hit)
{
    char buf[4096];
    int fd = agent_fd_open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    for (; *words; words++)
        if (strstr(buf, *words)) {
            *hit = *words;
            return true;
        }
    return false;
}

/* Cheap container / VM hints: marker files, PID 1's cgroup, the
 * hypervisor node and the DMI product; "" when none of them says so. */
static void prov_virt(agent_prov *p)
{
    static const char *const cg[] = {"docker", "kubepods", "containerd", "lxc", "libpod",
                                     "podman", NULL};
    char buf[128];
    size_t off = 0;
    const char *hit = NULL;
#define ADD(...)                                                                          \
    do {                                                                                  \
        if (off < sizeof p->virt)                                                         \
            off += (size_t)snprintf(p->virt + off, sizeof p->virt - off, "%s", off ? "; " : ""); \
        if (off < sizeof p->virt)                                                         \
            off += (size_t)snprintf(p->virt + off, sizeof p->virt - off, __VA_ARGS__);    \
    } while (0)
    if (access("/.dockerenv", F_OK) == 0)
        ADD("container (/.dockerenv)");
    else if (access("/run/.containerenv", F_OK) == 0)
        ADD("container (/run/.containerenv)");
    else if (prov_file_has("/proc/1/cgroup", cg, &hit))
        ADD("container (cgroup: %s)", hit);
    if (prov_read_line("/sys/hypervisor/type", buf, sizeof buf))
        ADD("vm (hypervisor: %s)", buf);
    char vendor[64] = "", product[64] = "";
    (void)prov_read_line("/sys/class/dmi/id/sys_vendor", vendor, sizeof vendor);
    (void)prov_read_line("/sys/class/dmi/id/product_name", product, sizeof product);
    static const char *const vm[] = {"QEMU", "KVM", "VMware", "VirtualBox", "Xen", "Amazon EC2",
                                     "Google Compute Engine", "Microsoft Corporation",
                                     "OpenStack", NULL};
    for (unsigned i = 0; vm[i]; i++)
        if (strstr(vendor, vm[i]) || strstr(product, vm[i])) {
            ADD("vm (dmi: %s%s%s)", vendor, vendor[0] && product[0] ? " " : "", product);
            break;
        }
#undef ADD
}

struct find_lib {
    const char *stem;
    char path[512];
};

static int prov_find_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct find_lib *f = arg;
    const char *base;
    (void)size;
    if (!info->dlpi_name || !info->dlpi_name[0])
        return 0;
    base = strrchr(info->dlpi_name, '/');
    base = base ? base + 1 : info->dlpi_name;
    if (strncmp(base, f->stem, strlen(f->stem)) != 0)
        return 0;
    snprintf(f->path, sizeof f->path, "%s", info->dlpi_name);
    return 1;
}

/* A symbol of a library the process has already loaded (by soname stem,
 * e.g. "libcudart.so"), without loading anything; then the global scope;
 * then the CUPTI library itself (the simulator exports the version calls
 * of the driver and runtime it stands in for). */
static void *prov_sym(const agent *a, const char *stem, const char *sym, void **handle)
{
    struct find_lib f = {.stem = stem};
    void *s = NULL;
    *handle = NULL;
    if (!a->prov.simulated && dl_iterate_phdr(prov_find_cb, &f) == 1) {
        *handle = dlopen(f.path, RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
        if (*handle)
            s = dlsym(*handle, sym);
    }
    if (!s && !a->prov.simulated)
        s = dlsym(RTLD_DEFAULT, sym);
    if (!s && a->cupti.handle)
        s = dlsym(a->cupti.handle, sym);
    return s;
}

static void prov_release(void *handle)
{
    if (handle)
        dlclose(handle);   /* drops only the NOLOAD reference */
}

/* NVML's driver version string ("580.159.04"), when libnvidia-ml is there. */
static bool prov_nvml(agent_prov *p, char *why, size_t whylen)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    bool ok = false;
    if (!h) {
        snprintf(why, whylen, "no libnvidia-ml.so.1");
        return false;
    }
    int (*init)(void) = (int (*)(void))dlsym(h, "nvmlInit_v2");
    int (*shut)(void) = (int (*)(void))dlsym(h, "nvmlShutdown");
    int (*ver)(char *, unsigned) = (int (*)(char *, unsigned))dlsym(h, "nvmlSystemGetDriverVersion");
    if (!init || !shut || !ver) {
        snprintf(why, whylen, "libnvidia-ml.so.1 lacks nvmlSystemGetDriverVersion");
    } else if (init() != 0) {
        snprintf(why, whylen, "nvmlInit failed");
    } else {
        char v[80] = "";
        if (ver(v, sizeof v) == 0 && v[0]) {
            snprintf(p->driver_version, sizeof p->driver_version, "%s", v);
            snprintf(p->driver_source, sizeof p->driver_source, "nvml");
            ok = true;
        } else {
            snprintf(why, whylen, "nvmlSystemGetDriverVersion failed");
        }
        (void)shut();
    }
    dlclose(h);
    return ok;
}

/* A rank: a decimal 0..2^31-1 with nothing around it. */
static bool prov_rank_ok(const char *v)
{
    char *end;
    if (!v || *v < '0' || *v > '9' || strlen(v) > 10)
        return false;
    unsigned long long r = strtoull(v, &end, 10);
    return *end == '\0' && r <= 0x7fffffffu;
}

/* The job (cuptop run's CUPTOP_JOB) and the rank, from the variables the
 * launchers set: global ranks first (torchrun's RANK, Open MPI, Slurm),
 * LOCAL_RANK (unique on one node only) last. */
static void prov_job(agent_prov *p)
{
    static const char *const vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",
                                       "LOCAL_RANK"};
    static const char *const sizes[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS",
                                        "LOCAL_WORLD_SIZE"};
    const char *job = getenv("CUPTOP_JOB");
    if (job && cupstore_job_valid(job))
        snprintf(p->job, sizeof p->job, "%s", job);
    else if (job)
        prov_unknown(p, "job", "CUPTOP_JOB is not a job id (1-63 of A-Z a-z 0-9 . _ : @ + -): "
                               "the session's own id is its job");
    bool bad = false;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (!v)
            continue;
        if (!prov_rank_ok(v)) {
            bad = true;
            continue;
        }
        if (!p->rank[0]) {
            snprintf(p->rank, sizeof p->rank, "%s", v);
            snprintf(p->rank_source, sizeof p->rank_source, "%s", vars[i]);
            const char *w = getenv(sizes[i]);
            if (prov_rank_ok(w))
                snprintf(p->world_size, sizeof p->world_size, "%s", w);
        } else if (!strcmp(vars[i], "LOCAL_RANK")) {
            snprintf(p->local_rank, sizeof p->local_rank, "%s", v);
        }
    }
    if (bad && !p->rank[0])
        prov_unknown(p, "rank", "the rank variable set is not a number from 0 to 2^31-1");
}

void agent_prov_identity(agent *a)
{
    agent_prov *p = &a->prov;
    memset(p, 0, sizeof *p);
    const char *label = agent_env("CUPTOP_LABEL");
    if (label)
        snprintf(p->label, sizeof p->label, "%s", label);
    prov_job(p);
}

static void prov_collect(agent *a)
{
    agent_prov *p = &a->prov;
    char why[96] = "";
    void *h;
    bool device_on = p->device_records_on;

    memset(p, 0, sizeof *p);
    p->device_records_on = device_on;
    p->simulated = a->cupti.handle && dlsym(a->cupti.handle, "cuptopsim_simulated") != NULL;

    const char *label = agent_env("CUPTOP_LABEL");
    if (label)
        snprintf(p->label, sizeof p->label, "%s", label);
    prov_job(p);

    /* CUDA driver API version */
    CUresult (*drv)(int *) = (CUresult(*)(int *))prov_sym(a, "libcuda.so", "cuDriverGetVersion", &h);
    int v = 0;
    if (drv && drv(&v) == CUDA_SUCCESS && v > 0)
        prov_cuda_ver(p->cuda_driver, sizeof p->cuda_driver, v);
    else
        prov_unknown(p, "cuda_driver_version",
                     drv ? "cuDriverGetVersion failed" : "libcuda is not loaded in the process");
    prov_release(h);

    /* CUDA runtime version: only a shared libcudart can be asked */
    int (*rt)(int *) = (int (*)(int *))prov_sym(a, "libcudart.so", "cudaRuntimeGetVersion", &h);
    v = 0;
    if (rt && rt(&v) == 0 && v > 0)
        prov_cuda_ver(p->cuda_runtime, sizeof p->cuda_runtime, v);
    else
        prov_unknown(p, "cuda_runtime_version",
                     rt ? "cudaRuntimeGetVersion failed"
                        : "no shared libcudart in the process (static or not loaded yet)");
    prov_release(h);

    /* the driver's own version string: NVML, else the CUDA version */
    if (p->simulated)
        snprintf(why, sizeof why, "simulated CUPTI: NVML not asked");
    if (p->simulated || !prov_nvml(p, why, sizeof why)) {
        if (p->cuda_driver[0]) {
            snprintf(p->driver_version, sizeof p->driver_version, "%s", p->cuda_driver);
            snprintf(p->driver_source, sizeof p->driver_source, "cuDriverGetVersion");
        } else {
            prov_unknown(p, "driver_version", why);
        }
    }

    /* CUPTI: API version 130001 reads 13.0.1 (CUDA 13 numbering); older
     * CUPTIs count API versions (26) and say nothing more */
    if (agent_attach_loaded(a) && a->api_version >= 10000)
        snprintf(p->cupti_version, sizeof p->cupti_version, "%u.%u.%u", a->api_version / 10000,
                 a->api_version / 100 % 100, a->api_version % 100);
    else
        prov_unknown(p, "cupti_version",
                     agent_attach_loaded(a) ? "CUPTI before 13 reports only its API version"
                                     : "CUPTI not loaded");

    struct utsname u;
    if (uname(&u) == 0) {
        snprintf(p->kernel_release, sizeof p->kernel_release, "%s", u.release);
        snprintf(p->os, sizeof p->os, "%s %s", u.sysname, u.machine);
    } else {
        prov_unknown(p, "kernel_release", "uname failed");
    }
    prov_virt(p);
}

/* Under an fd hold: NVML's initialisation and the /proc and /sys reads
 * open descriptors (agent_fd.h). */
void agent_prov_collect(agent *a)
{
    agent_fd_hold();
    prov_collect(a);
    agent_fd_release();
}

int agent_prov_put(const agent *a, cupstore_txn *txn)
{
    const agent_prov *p = &a->prov;
    char buf[2048];
    size_t off = 0;
    int rc = 0;
#define PUT(k, v)                                              \
    do {                                                       \
        if (rc == 0 && (v)[0])                                 \
            rc = cupstore_meta_put(txn, (k), (v));             \
    } while (0)
    /* a simulated value says so in itself, not only in a side key */
#define PUTV(k, v)                                                                    \
    do {                                                                              \
        char t_[160];                                                                 \
        if ((v)[0]) {                                                                 \
            snprintf(t_, sizeof t_, "%s%s", (v), p->simulated ? " (simulated)" : ""); \
            PUT((k), t_);                                                             \
        }                                                                             \
    } while (0)
    PUT("simulated", p->simulated ? "1" : "0");
    PUTV("driver_version", p->driver_version);
    PUT("driver_version_source", p->driver_source);
    PUTV("cuda_driver_version", p->cuda_driver);
    PUTV("cuda_version", p->cuda_driver);      /* the key readers before 3 use */
    PUTV("cuda_runtime_version", p->cuda_runtime);
    PUTV("cupti_version", p->cupti_version);
    PUT("kernel_release", p->kernel_release);
    PUT("os", p->os);
    PUT("virt", p->virt);
    PUT("label", p->label);
    if (p->job[0]) {
        PUT("job", p->job);
        PUT("job_source", "CUPTOP_JOB");
    } else if (a->session_id) {
        PUT("job", a->session_id);   /* loaded by hand: a job of its own */
        PUT("job_source", "session");
    }
    PUT("rank", p->rank);
    PUT("rank_source", p->rank_source);
    PUT("local_rank", p->local_rank);
    PUT("world_size", p->world_size);
    PUT("cuptop_version", PACKAGE_VERSION);
    for (unsigned i = 0; i < CUPSTORE_DEVICE_MAX && rc == 0; i++) {
        char k[32];
        snprintf(k, sizeof k, "device.%u", i);
        PUT(k, p->device[i]);   /* a forked child: what the parent learnt */
    }
    buf[0] = '\0';
    for (unsigned i = 0; i < p->nunknown && off < sizeof buf; i++)
        off += (size_t)snprintf(buf + off, sizeof buf - off, "%s=%s\n", p->unknown_key[i],
                                p->unknown_why[i]);
    /* always written: a collection that now knows more (CUPTI loaded
     * after a dormant start) must not leave the old reasons behind */
    if (rc == 0)
        rc = cupstore_meta_put(txn, "unknown", buf);
#undef PUTV
#undef PUT
    return rc;
}

void agent_prov_enable_devices(agent *a)
{
    if (a->prov.device_records_on)
        return;
    a->prov.device_records_on = true;
    CUptiResult r = a->cupti.ActivityEnableAndDump
                        ? a->cupti.ActivityEnableAndDump(CUPTI_ACTIVITY_KIND_DEVICE)
                        : a->cupti.ActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE);
    if (r != CUPTI_SUCCESS)
        agent_note(a, 1, "no DEVICE records from CUPTI (%s): device properties unknown",
                   agent_cupti_strerror(&a->cupti, r));
}

void agent_prov_device_format(const CUpti_ActivityDevice5 *d, bool simulated, char *buf,
                              size_t len)
{
    const unsigned char *u = (const unsigned char *)d->uuid.bytes;
    char name[160];
    size_t n = 0;
    /* CUPTI's name, printable ASCII only (it is shown everywhere) */
    for (const char *s = d->name; s && *s && n < sizeof name - 1 && n < 128; s++)
        name[n++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
    name[n] = '\0';
    snprintf(buf, len,
             "name=%s\nuuid=GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n"
             "cc=%u.%u\nsm=%u\nmemory=%llu\nmig=%u\nsource=cupti%s\n",
             n ? name : "unknown", u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
             u[10], u[11], u[12], u[13], u[14], u[15], d->computeCapabilityMajor,
             d->computeCapabilityMinor, d->numMultiprocessors,
             (unsigned long long)d->globalMemorySize, (unsigned)d->isMigEnabled,
             simulated ? "\nsimulated=1" : "");
}

struct dev_arg {
    char key[32];
    char val[512];
};

static int put_device(cupstore_txn *txn, void *arg)
{
    struct dev_arg *d = arg;
    return cupstore_meta_put(txn, d->key, d->val);
}

void agent_prov_device(agent *a, const CUpti_Activity *rec)
{
    const CUpti_ActivityDevice5 *d = (const void *)rec;
    struct dev_arg x;
    if (d->id >= CUPSTORE_DEVICE_MAX || !a->env || a->session_pid != getpid())
        return;
    snprintf(x.key, sizeof x.key, "device.%u", d->id);
    agent_prov_device_format(d, a->prov.simulated, x.val, sizeof x.val);
    _Static_assert(sizeof x.val == sizeof a->prov.device[0], "device value sizes");
    memcpy(a->prov.device[d->id], x.val, sizeof x.val - 1);
    int rc = agent_store_put(a, put_device, &x, AGENT_PUT_TRIES);
    if (rc)
        agent_log(a, 1, "cannot store device %u: %s", d->id, cupstore_strerror(rc));
}
