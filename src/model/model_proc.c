/*
 * model_proc.c - is the process of a session without a final status still
 * there?  A pid alone does not say: the reader may sit in another PID
 * namespace (a container, `unshare --pid`), where kill(pid, 0) asks about
 * another process or none, and a pid is reused.  The agent records an
 * identity that holds across namespaces (meta boot_id, start_time,
 * pid_ns): the kernel's boot id, the process's start time in clock ticks
 * after boot and the inode of its PID namespace.  Here that identity is
 * looked up in /proc: by pid when the reader shares the namespace, else by
 * start time and innermost pid (NSpid) over every process visible.  What
 * is not seen is called gone only where it would be seen if it were there.
 * model_liveness turns the lookup and the heartbeat's age into a state.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "model.h"

/* The inode of the initial PID namespace (PROC_PID_INIT_INO, fixed by the
 * kernel): a reader there sees every process. */
#define PROC_PID_INIT_INO 0xEFFFFFFCu

static const char *proc_root = "/proc";

void model_proc_root(const char *dir)
{
    proc_root = dir ? dir : "/proc";
}

/* Read at most len-1 bytes of ROOT/rel into buf; -1 with errno on failure. */
static ssize_t read_rel(const char *rel, char *buf, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", proc_root, rel);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, len - 1);
    int e = errno;
    close(fd);
    if (n < 0) {
        errno = e;
        return -1;
    }
    buf[n] = '\0';
    return n;
}

static uint64_t ino_rel(const char *rel)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", proc_root, rel);
    return stat(path, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

static bool exists_rel(const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", proc_root, rel);
    return access(path, F_OK) == 0;
}

/* PID/stat: the state letter (field 3) and the start time (field 22),
 * read after the last ')' since the command name may hold anything. */
static int stat_of(const char *pid, char *state, uint64_t *start)
{
    char rel[64], buf[1024];
    snprintf(rel, sizeof rel, "%s/stat", pid);
    if (read_rel(rel, buf, sizeof buf) <= 0)
        return errno ? errno : EIO;
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ' || !p[2])
        return EIO;
    *state = p[2];
    for (int f = 2; p && f < 22; f++)
        p = strchr(p + 1, ' ');
    if (!p)
        return EIO;
    *start = strtoull(p + 1, NULL, 10);
    return 0;
}

/* PID/status's NSpid line: the pid in the innermost namespace (its last
 * field); -1 when the line is missing (kernels before 4.1). */
static long nspid_inner(const char *pid)
{
    char rel[64], buf[4096];
    snprintf(rel, sizeof rel, "%s/status", pid);
    if (read_rel(rel, buf, sizeof buf) <= 0)
        return -1;
    char *l = strstr(buf, "\nNSpid:");
    if (!l)
        return -1;
    l += 7;
    long last = -1;
    for (;;) {
        char *end;
        long v = strtol(l, &end, 10);
        if (end == l)
            break;
        last = v;
        l = end;
    }
    return last;
}

/* Does ROOT number processes as this process's namespace does (ROOT/self
 * names getpid())?  Not so under a /proc of an outer namespace. */
static bool numbering_ours(void)
{
    char path[512], link[32];
    snprintf(path, sizeof path, "%s/self", proc_root);
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n <= 0)
        return false;
    link[n] = '\0';
    return strtol(link, NULL, 10) == (long)getpid();
}

static bool is_gone_state(char c)
{
    return c == 'Z' || c == 'X' || c == 'x';   /* exited, not yet reaped */
}

/* The session's process in another PID namespace: scan every process
 * visible for its start time and innermost pid.  *ns_seen: some process of
 * its namespace is visible here (so it would be too). */
static bool scan_for(const model_summary *s, model_proc *out, bool *ns_seen)
{
    char path[512];
    snprintf(path, sizeof path, "%s", proc_root);
    DIR *d = opendir(path);
    if (!d)
        return false;
    struct dirent *e;
    bool found = false;
    while (!found && (e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9' ||
            strspn(e->d_name, "0123456789") != strlen(e->d_name))
            continue;
        char st = 0, rel[300];
        uint64_t start = 0;
        if (!*ns_seen && s->pid_ns) {
            snprintf(rel, sizeof rel, "%s/ns/pid", e->d_name);
            *ns_seen = ino_rel(rel) == s->pid_ns;
        }
        if (stat_of(e->d_name, &st, &start) != 0 || start != s->start_ticks)
            continue;
        long inner = nspid_inner(e->d_name);
        long here = strtol(e->d_name, NULL, 10);
        uint64_t ns = 0;
        if (s->pid_ns) {
            snprintf(rel, sizeof rel, "%s/ns/pid", e->d_name);
            ns = ino_rel(rel);   /* 0 when not ours to read: not held against it */
        }
        if ((inner == s->pid || (inner < 0 && here == s->pid)) && (!ns || ns == s->pid_ns)) {
            found = true;
            out->presence = is_gone_state(st) ? MODEL_PROC_GONE : MODEL_PROC_HERE;
            out->state = st;
            out->pid_here = (int)here;
        }
    }
    closedir(d);
    return found;
}

/* Sessions from before the identity: as before, the pid is asked about
 * only on a host of the same name. */
static void find_legacy(const model_summary *s, model_proc *out)
{
    char host[sizeof s->host];
    if (s->pid <= 0 || gethostname(host, sizeof host) != 0)
        return;
    host[sizeof host - 1] = '\0';
    if (strcmp(host, s->host) != 0)
        return;
    if (kill(s->pid, 0) != 0 && errno == ESRCH)
        out->presence = MODEL_PROC_GONE;
}

void model_proc_find(const model_summary *s, model_proc *out)
{
    char boot[64];
    memset(out, 0, sizeof *out);
    out->presence = MODEL_PROC_ELSEWHERE;
    if (!s->have_identity) {
        find_legacy(s, out);
        return;
    }
    if (!s->boot_id[0] || s->pid <= 0) {
        /* the agent could not read its identity (no /proc there) */
        char host[sizeof s->host];
        if (gethostname(host, sizeof host) == 0 &&
            strncmp(host, s->host, sizeof host) == 0)
            out->presence = MODEL_PROC_HIDDEN;
        return;
    }
    if (read_rel("sys/kernel/random/boot_id", boot, sizeof boot) <= 0)
        return;   /* no /proc here: nothing can be checked */
    boot[strcspn(boot, "\n")] = '\0';
    if (strcmp(boot, s->boot_id) != 0)
        return;   /* another kernel (another host, or an earlier boot) */

    out->presence = MODEL_PROC_HIDDEN;
    uint64_t my_ns = ino_rel("self/ns/pid");
    bool all_seen = my_ns == PROC_PID_INIT_INO && exists_rel("1");
    if (my_ns && s->pid_ns == my_ns && numbering_ours()) {
        /* this PID namespace: the pid names it, the start time proves it */
        char pid[24], st = 0;
        uint64_t start = 0;
        snprintf(pid, sizeof pid, "%d", s->pid);
        errno = 0;
        int rc = stat_of(pid, &st, &start);
        if (rc == 0 && (start != s->start_ticks || is_gone_state(st))) {
            out->presence = MODEL_PROC_GONE;
        } else if (rc == 0) {
            out->presence = MODEL_PROC_HERE;
            out->state = st;
            out->pid_here = s->pid;
        } else if (rc == ENOENT || rc == ESRCH) {
            /* absent: gone, unless /proc hides others' processes here */
            if (exists_rel("1") || (kill(s->pid, 0) != 0 && errno == ESRCH))
                out->presence = MODEL_PROC_GONE;
        }
        return;
    }
    if (!s->start_ticks)
        return;   /* nothing to look it up by */
    bool ns_seen = false;
    if (scan_for(s, out, &ns_seen))
        return;
    if (all_seen || ns_seen)
        out->presence = MODEL_PROC_GONE;
}

model_state model_liveness(bool fresh, const model_proc *p)
{
    switch (p->presence) {
    case MODEL_PROC_GONE:
        return MODEL_STATE_CRASHED;
    case MODEL_PROC_HERE:
        if (fresh)
            return MODEL_STATE_RUNNING;
        return p->state == 'T' || p->state == 't' ? MODEL_STATE_STOPPED
                                                  : MODEL_STATE_NOT_RESPONDING;
    case MODEL_PROC_HIDDEN:
        return fresh ? MODEL_STATE_RUNNING : MODEL_STATE_NOT_RESPONDING;
    case MODEL_PROC_ELSEWHERE:
        break;
    }
    return fresh ? MODEL_STATE_RUNNING : MODEL_STATE_CRASHED;
}

void model_liveness_text(const model_summary *s, char *buf, size_t len)
{
    char here[48] = "";
    struct timespec ts;
    if (!len)
        return;
    buf[0] = '\0';
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    uint64_t since = s->heartbeat_ns ? s->heartbeat_ns : s->start_ns;
    uint64_t age = now > since ? (now - since) / 1000000000u : 0;
    char hb[64];
    snprintf(hb, sizeof hb, "no heartbeat %s %llu s", s->heartbeat_ns ? "for" : "since its start,",
             (unsigned long long)age);
    if (s->pid_here && s->pid_here != s->pid)
        snprintf(here, sizeof here, " (pid %d here)", s->pid_here);
    if (s->state == MODEL_STATE_STOPPED)
        snprintf(buf, len, "stopped: %s; process %d%s is there, stopped (state %c: SIGSTOP, "
                 "Ctrl-Z or a debugger); the session goes on when it continues", hb, s->pid,
                 here, s->proc_state);
    else if (s->state == MODEL_STATE_NOT_RESPONDING && s->not_visible)
        snprintf(buf, len, "not responding (process not visible here): %s; process %d runs "
                 "in another PID namespace (or /proc hides it) and cannot be checked from "
                 "here", hb, s->pid);
    else if (s->state == MODEL_STATE_NOT_RESPONDING)
        snprintf(buf, len, "not responding: %s; process %d%s is still there (state %c) but "
                 "its agent writes none", hb, s->pid, here,
                 s->proc_state > ' ' && s->proc_state < 127 ? s->proc_state : '?');
}
