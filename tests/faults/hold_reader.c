/*
 * hold_reader.c - a store reader that opens a session, begins a read
 * transaction and holds it until killed: after kill -9 its reader slot is
 * stale (fault row 2, tests/faults/test_dead_reader.sh).
 *
 *   hold_reader STORE SESSION    prints "ready" once the txn is open
 *
 * Exit: 2 on a store error (never returns otherwise).
 */
#include <stdio.h>
#include <unistd.h>

#include "cupstore.h"

int main(int argc, char **argv)
{
    cupstore_env *env;
    cupstore_txn *txn;
    int rc;

    if (argc != 3) {
        fprintf(stderr, "usage: hold_reader STORE SESSION\n");
        return 2;
    }
    if ((rc = cupstore_session_open(&env, argv[1], argv[2], CUPSTORE_RDONLY)) != 0 ||
        (rc = cupstore_txn_begin(env, false, &txn)) != 0) {
        fprintf(stderr, "hold_reader: %s\n", cupstore_strerror(rc));
        return 2;
    }
    printf("ready\n");
    fflush(stdout);
    for (;;)
        pause();
}
