/*
 * agent_reserve.c - room on the disk for the final accounting.
 *
 * The map-cap reserve (agent_consumer.c) keeps the last bytes of the map
 * for the rows that account for a refusal; this keeps them on the disk.
 * LMDB grows data.mdb only by writing pages past its end, so a disk that
 * fills up would refuse the health rows and the final status too, and the
 * session would read as crashed.  Blocks past the end of data.mdb are
 * allocated ahead of LMDB with fallocate(FALLOC_FL_KEEP_SIZE) (the file's
 * size, and so what readers see, does not change; LMDB's later writes
 * there need no new blocks).  Before a batch commit the consumer asks for
 * room for the batch plus AGENT_RESERVE_KEEP more; before a periodic row
 * the health thread asks for its row plus half of that.  When the disk
 * cannot give it, the batch (or row) is refused by the agent itself, so
 * the allocated blocks stay for the last health row and the final status,
 * which ask for nothing.  A failed commit does not use the blocks up:
 * LMDB only advances its last page on success.
 *
 * The blocks still past the end when the final status is written are given
 * back (agent_reserve_release); a crashed session keeps them (<= 1.5 MiB).
 * Filesystems without fallocate: no disk reserve (as before this file).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_int.h"

#define RESERVE_STEP ((uint64_t)1 << 20)   /* allocate ahead in 1 MiB steps */

void agent_reserve_open(agent *a, const char *store_dir)
{
    agent_reserve *r = &a->reserve;
    struct stat st;
    char path[4096];

    agent_reserve_close(a);
    r->full = false;
    if (!a->env || !a->session_id)
        return;
    /* the final status's place outside LMDB, allocated now (agent_stop.c) */
    int arc = cupstore_final_aside_open(a->env, &r->aside_fd);
    if (arc)
        agent_log(a, 1, "no final status aside: %s", cupstore_strerror(arc));
    if (a->cfg.sink == AGENT_SINK_NULL)
        return;
    int n = snprintf(path, sizeof path, "%s/%s/data.mdb", store_dir, a->session_id);
    if (n > 0 && (size_t)n < sizeof path)
        r->fd = agent_fd_open(path, O_WRONLY);
    if (r->fd < 0 || fstat(r->fd, &st) != 0) {
        agent_reserve_close(a);
        return;
    }
    r->allocated = (uint64_t)st.st_size;
    if (!agent_reserve_room(a, 0, AGENT_RESERVE_KEEP) && !r->full) {
        agent_log(a, 2, "no disk reserve for the final status (fallocate not supported)");
        agent_reserve_close(a);
    }
}

void agent_reserve_release(agent *a)
{
    agent_reserve *r = &a->reserve;
    struct stat st;
    if (r->fd < 0)
        return;
    pthread_mutex_lock(&r->lock);
    if (fstat(r->fd, &st) == 0) {
        /* blocks past the end: punched (tmpfs), then a truncate to the
         * same size (ext4 drops preallocated blocks that way) */
        if (r->allocated > (uint64_t)st.st_size)
            (void)fallocate(r->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, st.st_size,
                            (off_t)(r->allocated - (uint64_t)st.st_size));
        (void)ftruncate(r->fd, st.st_size);
    }
    pthread_mutex_unlock(&r->lock);
    agent_reserve_close(a);
}

void agent_reserve_close(agent *a)
{
    if (a->reserve.fd >= 0)
        close(a->reserve.fd);
    a->reserve.fd = -1;
    if (a->reserve.aside_fd >= 0)
        close(a->reserve.aside_fd);
    a->reserve.aside_fd = -1;
}

int agent_reserve_aside(agent *a, const cupstore_final *f)
{
    int fd = a->reserve.aside_fd;
    return fd < 0 ? ENOENT : cupstore_final_aside_put(fd, f);
}

bool agent_reserve_room(agent *a, uint64_t need, uint64_t keep)
{
    agent_reserve *r = &a->reserve;
    uint64_t used = 0;
    bool ok = true;

    if (r->fd < 0)
        return true;
    if (agent_store_usage(a, &used, NULL) != 0)
        return true;
    pthread_mutex_lock(&r->lock);
    uint64_t want = used + need + keep;
    if (want > r->allocated) {
        int rc = -1;
        if (!r->full)   /* ahead, so most commits make no syscall */
            rc = fallocate(r->fd, FALLOC_FL_KEEP_SIZE, (off_t)r->allocated,
                           (off_t)(want + RESERVE_STEP - r->allocated));
        if (rc == 0) {
            r->allocated = want + RESERVE_STEP;
        } else if (fallocate(r->fd, FALLOC_FL_KEEP_SIZE, (off_t)r->allocated,
                             (off_t)(want - r->allocated)) == 0) {
            r->allocated = want;
            r->full = true;   /* the step did not fit: allocate exactly from now on */
        } else {
            if (errno == ENOSPC || errno == EDQUOT)
                r->full = true;
            ok = false;
        }
    }
    pthread_mutex_unlock(&r->lock);
    return ok;
}
