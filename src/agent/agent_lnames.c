/*
 * agent_lnames.c - kernel names of launches, for the launch ledger
 * (agent_launches.h): the name CUPTI gives a launch callback
 * (CUpti_CallbackData.symbolName) interned once per distinct pointer, from
 * any application thread, lock-free, into fixed memory (no allocation on
 * the callback path: invariant 3).
 *
 * Keyed by the pointer, not the text: hashing a long mangled name on every
 * launch would cost more than the rest of the ledger, and CUPTI's pointer
 * is the function's own name for as long as its module is loaded (a module
 * unloaded and another loaded at the same address could give a launch the
 * old name: a name is a hint in the report, never part of a count).  The
 * text is copied when first seen, while the callback holds it valid.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "agent_launches.h"

#define SLOTS 4096u              /* distinct names kept; the rest unknown */
#define ARENA (4u << 20)         /* their text (bss: only what is used
                                    takes memory), at most 4 KiB each    */
#define PROBES 32

typedef struct lname_slot {
    _Atomic uintptr_t key;       /* the name's pointer; 0 free            */
    _Atomic uint32_t off1;       /* its copy's offset + 1; 0 not (yet)    */
} lname_slot;

static lname_slot tab[SLOTS];
static char arena[ARENA];
static _Atomic uint32_t used;

/* Copy the text of slot i (its key just won by this thread). */
static uint32_t lname_fill(uint32_t i, const char *sym)
{
    size_t len = strnlen(sym, AGENT_LNAME_MAX - 1);
    uint32_t off = atomic_fetch_add_explicit(&used, (uint32_t)len + 1, memory_order_relaxed);
    if (off > ARENA - len - 1)
        return 0;   /* the arena is spent: this name stays unknown */
    memcpy(arena + off, sym, len);
    arena[off + len] = '\0';
    atomic_store_explicit(&tab[i].off1, off + 1, memory_order_release);
    return i + 1;
}

uint32_t agent_lname_id(const char *sym)
{
    uintptr_t key = (uintptr_t)sym;
    if (!sym)
        return 0;
    uint32_t h = (uint32_t)((key >> 4) * 2654435761u) & (SLOTS - 1);
    for (uint32_t p = 0; p < PROBES; p++) {
        uint32_t i = (h + p) & (SLOTS - 1);
        uintptr_t k = atomic_load_explicit(&tab[i].key, memory_order_acquire);
        if (!k && atomic_compare_exchange_strong_explicit(&tab[i].key, &k, key,
                                                          memory_order_acq_rel,
                                                          memory_order_acquire))
            return lname_fill(i, sym);
        if (k == key)   /* 0 while the thread that won it still copies */
            return atomic_load_explicit(&tab[i].off1, memory_order_acquire) ? i + 1 : 0;
    }
    return 0;   /* the table is full around this pointer: unknown */
}

const char *agent_lname(uint32_t id)
{
    if (!id || id > SLOTS)
        return NULL;
    uint32_t off1 = atomic_load_explicit(&tab[id - 1].off1, memory_order_acquire);
    return off1 ? arena + off1 - 1 : NULL;
}
