/* pthread_barrier_* through <pthread.h>: many rounds back to back with one
 * serial thread per round and no thread of round N+1 mixing with round N,
 * count 1, error codes as glibc 2.36, attributes, process-shared barriers
 * (threads, and a forked child). */
#include "api_util.h"

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
