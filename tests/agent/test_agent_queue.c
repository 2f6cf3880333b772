/*
 * test_agent_queue.c - the bounded MPSC queue: order, bounds, wrap-around,
 * and a multi-producer stress test (also built with ThreadSanitizer by
 * tests/agent/tsan_queue.sh: needs only agent_queue.c).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent_queue.h"

static void test_fifo_and_bounds(void **state)
{
    agent_queue q;
    agent_qitem it = {0}, out;
    (void)state;

    assert_int_equal(agent_queue_init(&q, 0), 22 /* EINVAL */);
    assert_int_equal(agent_queue_init(&q, 5), 0);   /* ring 8, capacity 5 */
    assert_false(agent_queue_pop(&q, &out));
    for (size_t i = 0; i < 5; i++) {
        it.valid = i;
        assert_true(agent_queue_push(&q, &it));
    }
    it.valid = 99;
    assert_false(agent_queue_push(&q, &it));   /* the bound, not the ring */
    assert_int_equal(agent_queue_depth(&q), 5);
    assert_int_equal(atomic_load(&q.high_water), 5);
    for (size_t i = 0; i < 5; i++) {
        assert_true(agent_queue_pop(&q, &out));
        assert_int_equal(out.valid, i);
    }
    assert_false(agent_queue_pop(&q, &out));
    /* wrap around many times */
    for (size_t i = 0; i < 1000; i++) {
        it.valid = i;
        assert_true(agent_queue_push(&q, &it));
        assert_true(agent_queue_push(&q, &it));
        assert_true(agent_queue_pop(&q, &out));
        assert_int_equal(out.valid, i);
        assert_true(agent_queue_pop(&q, &out));
        assert_int_equal(out.valid, i);
    }
    assert_int_equal(agent_queue_depth(&q), 0);
    agent_queue_free(&q);
}

#define PRODUCERS 4
#define PER_PRODUCER 200000

struct stress {
    agent_queue q;
    _Atomic uint64_t pushed[PRODUCERS], rejected[PRODUCERS];
    _Atomic int done;
};

struct prod_arg {
    struct stress *s;
    unsigned id;
};

static void *producer(void *arg)
{
    struct prod_arg *p = arg;
    for (uint64_t i = 0; i < PER_PRODUCER; i++) {
        agent_qitem it = {.slot = p->id, .valid = (size_t)i, .buf = (uint8_t *)(uintptr_t)(i + 1)};
        if (agent_queue_push(&p->s->q, &it))
            atomic_fetch_add(&p->s->pushed[p->id], 1);
        else
            atomic_fetch_add(&p->s->rejected[p->id], 1);
    }
    return NULL;
}

/* Every pushed item arrives exactly once, in per-producer order; pushed +
 * rejected = attempted; the queue never exceeds its capacity. */
static void test_multi_producer_stress(void **state)
{
    static struct stress s;
    pthread_t th[PRODUCERS];
    struct prod_arg args[PRODUCERS];
    uint64_t got[PRODUCERS] = {0};
    int64_t last[PRODUCERS];
    (void)state;

    memset(&s, 0, sizeof s);
    assert_int_equal(agent_queue_init(&s.q, 64), 0);
    for (unsigned i = 0; i < PRODUCERS; i++) {
        last[i] = -1;
        args[i] = (struct prod_arg){&s, i};
        assert_int_equal(pthread_create(&th[i], NULL, producer, &args[i]), 0);
    }
    unsigned finished = 0;
    for (;;) {
        agent_qitem out;
        if (agent_queue_pop(&s.q, &out)) {
            assert_true(out.slot < PRODUCERS);
            assert_true((int64_t)out.valid > last[out.slot]);
            assert_ptr_equal(out.buf, (uint8_t *)(uintptr_t)(out.valid + 1));
            last[out.slot] = (int64_t)out.valid;
            got[out.slot]++;
            continue;
        }
        if (finished == PRODUCERS)
            break;
        agent_queue_wait(&s.q, 1000000);
        uint64_t total = 0;
        for (unsigned i = 0; i < PRODUCERS; i++)
            total += atomic_load(&s.pushed[i]) + atomic_load(&s.rejected[i]);
        if (total == (uint64_t)PRODUCERS * PER_PRODUCER && finished < PRODUCERS) {
            for (unsigned i = 0; i < PRODUCERS; i++)
                pthread_join(th[i], NULL);
            finished = PRODUCERS;
        }
    }
    uint64_t rejected = 0;
    for (unsigned i = 0; i < PRODUCERS; i++) {
        assert_int_equal(got[i], atomic_load(&s.pushed[i]));
        assert_int_equal(atomic_load(&s.pushed[i]) + atomic_load(&s.rejected[i]), PER_PRODUCER);
        rejected += atomic_load(&s.rejected[i]);
    }
    assert_true(atomic_load(&s.q.high_water) <= 64);
    print_message("stress: %llu rejected (queue full) of %u\n", (unsigned long long)rejected,
                  PRODUCERS * PER_PRODUCER);
    agent_queue_free(&s.q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_and_bounds),
        cmocka_unit_test(test_multi_producer_stress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
