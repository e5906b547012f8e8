/* pthread_spin_* through <pthread.h>: mutual exclusion under contention
 * (more threads than VPs, so a holder may be descheduled), trylock, and
 * the process-shared flag. */
#include "api_util.h"

#define NTHREADS 8
#define NITERS 10000

struct counter {
	pthread_spinlock_t l;
	long value;
};

static void *count_fn(void *arg)
{
	struct counter *c = arg;
	for (int i = 0; i < NITERS; i++) {
		pthread_spin_lock(&c->l);
		long v = c->value;
		if ((i & 1023) == 0)
			sched_yield();   /* give up the VP while holding the lock */
		c->value = v + 1;
		pthread_spin_unlock(&c->l);
	}
	return NULL;
}

static void check_contention(int pshared)
{
	static struct counter c;
	assert_int_equal(pthread_spin_init(&c.l, pshared), 0);
	c.value = 0;
	run_threads(NTHREADS, count_fn, &c);
	assert_int_equal(c.value, (long)NTHREADS * NITERS);
	assert_int_equal(pthread_spin_destroy(&c.l), 0);
}

static void test_contention(void **state)
{
	check_contention(PTHREAD_PROCESS_PRIVATE);
	check_contention(PTHREAD_PROCESS_SHARED);
}

static void *try_fn(void *arg)
{
	return (void *)(intptr_t)pthread_spin_trylock(arg);
}

static void test_trylock(void **state)
{
	pthread_spinlock_t l;
	pthread_t t;
	void *r;
	assert_int_equal(pthread_spin_init(&l, PTHREAD_PROCESS_PRIVATE), 0);
	assert_int_equal(pthread_spin_trylock(&l), 0);
	assert_int_equal(pthread_spin_trylock(&l), EBUSY);
	assert_int_equal(pthread_create(&t, NULL, try_fn, (void *)&l), 0);
	assert_int_equal(pthread_join(t, &r), 0);
	assert_int_equal((int)(intptr_t)r, EBUSY);
	assert_int_equal(pthread_spin_unlock(&l), 0);
	assert_int_equal(pthread_spin_trylock(&l), 0);
	assert_int_equal(pthread_spin_unlock(&l), 0);
	assert_int_equal(pthread_spin_lock(&l), 0);
	assert_int_equal(pthread_spin_trylock(&l), EBUSY);
	assert_int_equal(pthread_spin_unlock(&l), 0);
	assert_int_equal(pthread_spin_destroy(&l), 0);
}

/* A waiter blocked in pthread_spin_lock gets the lock once it is freed. */
struct handoff {
	pthread_spinlock_t l;
	atomic_int started, got;
};

static void *handoff_fn(void *arg)
{
	struct handoff *h = arg;
	atomic_store(&h->started, 1);
	pthread_spin_lock(&h->l);
	atomic_store(&h->got, 1);
	pthread_spin_unlock(&h->l);
	return NULL;
}

static void test_waiter_gets_lock(void **state)
{
	static struct handoff h;
	pthread_t t;
	assert_int_equal(pthread_spin_init(&h.l, 0), 0);
	assert_int_equal(pthread_spin_lock(&h.l), 0);
	assert_int_equal(pthread_create(&t, NULL, handoff_fn, &h), 0);
	assert_true(wait_for(&h.started, 1));
	usleep(20000);
	assert_int_equal(atomic_load(&h.got), 0);
	assert_int_equal(pthread_spin_unlock(&h.l), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&h.got), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_contention),
		cmocka_unit_test(test_trylock),
		cmocka_unit_test(test_waiter_gets_lock),
	};
	return run_bound(tests, sizeof tests / sizeof tests[0]);
}
