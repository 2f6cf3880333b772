/*
 * model_compare_int.h - what model_compare.c takes from
 * model_compare_side.c (not for front ends): one side opened and judged,
 * the facts it was collected under, and the comparability of two sides.
 */
#ifndef CUPTOP_MODEL_COMPARE_INT_H
#define CUPTOP_MODEL_COMPARE_INT_H

#include "model.h"

/* One fact of a side: key and value, both owned by the list. */
typedef struct kv {
    char *key, *val;
} kv;

typedef struct kv_list {
    kv *v;
    size_t n, cap;
} kv_list;

/* Parse arg, open its session read-only from store dir into *envp (caller closes it),
 * summarize it into *sum (caller frees it) and fill sd.  On failure *cause
 * says why (caller frees). */
int model_cmp_side_open(const char *dir, const char *arg, model_cmp_side *sd,
                        model_summary *sum, cupstore_env **envp, char **cause);

/* The facts of one side, in key order within each part; l is the
 * caller's, freed with model_cmp_facts_free. */
int model_cmp_facts_read(cupstore_env *env, const model_summary *s, uint32_t kinds, kv_list *l);
void model_cmp_facts_free(kv_list *l);

/* Fill c's comparability (its differences and c->comparable) from both
 * sides' facts.  Returns 0 or ENOMEM. */
int model_cmp_comparable(model_compare *c, const kv_list l[2]);

#endif
