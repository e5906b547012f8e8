/* pthread_barrier_* through <pthread.h>: many rounds back to back with one
 * serial thread per round and no thread of round N+1 mixing with round N,
 * count 1, error codes as glibc 2.36, attributes, process-shared barriers
 * (threads, and a forked child). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/mman.h>
#include <sys/wait.h>
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

#define NTHREADS 16
#define NROUNDS 1000

struct rounds {
	pthread_barrier_t b;
	atomic_int arrived[NROUNDS];
	atomic_int serial[NROUNDS];
	atomic_int errors;
};

static void *round_fn(void *arg)
{
	struct rounds *r = arg;
	for (int i = 0; i < NROUNDS; i++) {
		atomic_fetch_add(&r->arrived[i], 1);
		int rc = pthread_barrier_wait(&r->b);
		if (rc == PTHREAD_BARRIER_SERIAL_THREAD)
			atomic_fetch_add(&r->serial[i], 1);
		else if (rc != 0)
			atomic_fetch_add(&r->errors, 1);
		/* everyone of this round is in; nobody is in the next one yet
		 * unless they passed this round too */
		if (atomic_load(&r->arrived[i]) != NTHREADS)
			atomic_fetch_add(&r->errors, 1);
	}
	return NULL;
}

static void check_rounds(const pthread_barrierattr_t *a)
{
	static struct rounds r;
	memset(&r, 0, sizeof r);
	assert_int_equal(pthread_barrier_init(&r.b, a, NTHREADS), 0);
	run_threads(NTHREADS, round_fn, &r);
	assert_int_equal(atomic_load(&r.errors), 0);
	for (int i = 0; i < NROUNDS; i++) {
		assert_int_equal(atomic_load(&r.arrived[i]), NTHREADS);
		assert_int_equal(atomic_load(&r.serial[i]), 1);
	}
	assert_int_equal(pthread_barrier_destroy(&r.b), 0);
}

static void test_rounds(void **state)
{
	check_rounds(NULL);
}

static void test_rounds_pshared(void **state)
{
	pthread_barrierattr_t a;
	assert_int_equal(pthread_barrierattr_init(&a), 0);
	assert_int_equal(pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
	check_rounds(&a);
	assert_int_equal(pthread_barrierattr_destroy(&a), 0);
}

static void test_count_one(void **state)
{
	pthread_barrier_t b;
	assert_int_equal(pthread_barrier_init(&b, NULL, 1), 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(pthread_barrier_wait(&b), PTHREAD_BARRIER_SERIAL_THREAD);
	assert_int_equal(pthread_barrier_destroy(&b), 0);
}

static void test_init_errors(void **state)
{
	pthread_barrier_t b;
	assert_int_equal(pthread_barrier_init(&b, NULL, 0), EINVAL);
	assert_int_equal(pthread_barrier_init(&b, NULL, INT_MAX), EINVAL);
	assert_int_equal(pthread_barrier_init(&b, NULL, (unsigned)INT_MAX + 1u), EINVAL);
	assert_int_equal(pthread_barrier_init(&b, NULL, INT_MAX - 1), 0);
	assert_int_equal(pthread_barrier_destroy(&b), 0);
}

static void test_attr(void **state)
{
	pthread_barrierattr_t a;
	int v;
	assert_int_equal(pthread_barrierattr_init(&a), 0);
	assert_int_equal(pthread_barrierattr_getpshared(&a, &v), 0);
	assert_int_equal(v, PTHREAD_PROCESS_PRIVATE);
	assert_int_equal(pthread_barrierattr_setpshared(&a, 3), EINVAL);
	assert_int_equal(pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
	assert_int_equal(pthread_barrierattr_getpshared(&a, &v), 0);
	assert_int_equal(v, PTHREAD_PROCESS_SHARED);
	assert_int_equal(pthread_barrierattr_destroy(&a), 0);
}

/* A parent thread and a forked child meet at a barrier in shared memory. */
static void test_pshared_fork(void **state)
{
	struct shared {
		pthread_barrier_t b;
		atomic_int serial;
	} *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(sh != MAP_FAILED);
	pthread_barrierattr_t a;
	assert_int_equal(pthread_barrierattr_init(&a), 0);
	assert_int_equal(pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
	assert_int_equal(pthread_barrier_init(&sh->b, &a, 2), 0);
	atomic_store(&sh->serial, 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (int i = 0; i < 100; i++) {
			int rc = pthread_barrier_wait(&sh->b);
			if (rc == PTHREAD_BARRIER_SERIAL_THREAD)
				atomic_fetch_add(&sh->serial, 1);
			else if (rc != 0)
				_exit(1);
		}
		_exit(0);
	}
	for (int i = 0; i < 100; i++) {
		int rc = pthread_barrier_wait(&sh->b);
		assert_true(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD);
		if (rc == PTHREAD_BARRIER_SERIAL_THREAD)
			atomic_fetch_add(&sh->serial, 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(atomic_load(&sh->serial), 100);
	assert_int_equal(pthread_barrier_destroy(&sh->b), 0);
	munmap(sh, sizeof *sh);
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
		cmocka_unit_test(test_rounds),
		cmocka_unit_test(test_rounds_pshared),
		cmocka_unit_test(test_count_one),
		cmocka_unit_test(test_init_errors),
		cmocka_unit_test(test_attr),
		cmocka_unit_test(test_pshared_fork),
	};
	return run_bound(tests, sizeof tests / sizeof tests[0]);
}
