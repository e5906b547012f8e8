/* Shared helpers of the API tests: deadlines, polling, thread fan-out, and
 * running a cmocka group on a thread of its own. */
#ifndef API_UTIL_H
#define API_UTIL_H

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
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* The absolute time `ms` milliseconds from now on clock clk. */
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

/* Run fn(arg) on n threads (at most 64) and join them all. */
static inline void run_threads(int n, void *(*fn)(void *), void *arg)
{
	pthread_t t[64];
	assert_true(n <= 64);
	for (int i = 0; i < n; i++)
		assert_int_equal(pthread_create(&t[i], NULL, fn, arg), 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
}

/* cmocka keeps its state in thread-local storage.  With PPL_TLS=shared a
 * user thread sees the TLS of the VP it runs on, and the thread running the
 * tests may migrate when it blocks: so the tests run on a
 * PTHREAD_SCOPE_SYSTEM thread, which keeps a VP to itself.  (On glibc
 * every thread is SYSTEM scope.) */
struct run_group_args {
	const struct CMUnitTest *tests;
	size_t n;
	int rc;
};

static inline void *run_group_thread(void *arg)
{
	struct run_group_args *r = arg;
	r->rc = _cmocka_run_group_tests("tests", r->tests, r->n, NULL, NULL);
	return NULL;
}

static inline int run_bound(const struct CMUnitTest *tests, size_t n)
{
	struct run_group_args r = { tests, n, -1 };
	pthread_attr_t a;
	pthread_t t;
	if (pthread_attr_init(&a) != 0 || pthread_attr_setscope(&a, PTHREAD_SCOPE_SYSTEM) != 0 ||
	    pthread_create(&t, &a, run_group_thread, &r) != 0 || pthread_join(t, NULL) != 0) {
		fprintf(stderr, "cannot start the test thread\n");
		return 1;
	}
	pthread_attr_destroy(&a);
	return r.rc;
}

#endif
