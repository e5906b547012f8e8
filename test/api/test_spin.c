/* pthread_spin_* through <pthread.h>: mutual exclusion under contention
 * (more threads than VPs, so a holder may be descheduled), trylock, and
 * the process-shared flag. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static inline struct timespec in_ms(clockid_t clk, long ms)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

static inline long ms_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Poll until *v >= want (5 s at most); true if reached. */
static inline int wait_for(atomic_int *v, int want)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (atomic_load(v) < want) {
		if (ms_since(&t0) > 5000)
			return 0;
		usleep(1000);
	}
	return 1;
}

static void run_threads(int n, void *(*fn)(void *), void *arg)
{
	pthread_t t[64];
	for (int i = 0; i < n; i++)
		assert_int_equal(pthread_create(&t[i], NULL, fn, arg), 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
}

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

/* cmocka keeps its state in thread-local storage.  Until libppl gives each
 * user thread its own TLS, a user thread sees the TLS of the VP it runs on
 * and the thread running the tests would migrate when it blocks: so the
 * tests run on a PTHREAD_SCOPE_SYSTEM thread, which keeps a VP to itself
 * (as test/abi/test_key.c does).  On glibc every thread is SYSTEM scope. */
struct run {
	const struct CMUnitTest *tests;
	size_t n;
	int rc;
};

static void *run_group(void *arg)
{
	struct run *r = arg;
	r->rc = _cmocka_run_group_tests("tests", r->tests, r->n, NULL, NULL);
	return NULL;
}

static int run_bound(const struct CMUnitTest *tests, size_t n)
{
	struct run r = { tests, n, -1 };
	pthread_attr_t a;
	pthread_t t;
	if (pthread_attr_init(&a) != 0 || pthread_attr_setscope(&a, PTHREAD_SCOPE_SYSTEM) != 0 ||
	    pthread_create(&t, &a, run_group, &r) != 0 || pthread_join(t, NULL) != 0) {
		fprintf(stderr, "cannot start the test thread\n");
		return 1;
	}
	pthread_attr_destroy(&a);
	return r.rc;
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
