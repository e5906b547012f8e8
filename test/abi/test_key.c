/* Thread-specific data through <pthread.h> only: error codes, exhaustion,
 * delete/re-create, destructors across threads and their iteration limit,
 * and no growth over many create/exit cycles.  Passes natively on glibc
 * (the reference) and relinked with libppl.  PPL_TEST_CYCLES scales the
 * cycle test (default 20000). */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_errors(void **state)
{
	(void)state;
	pthread_key_t k;
	assert_int_equal(pthread_key_create(&k, NULL), 0);
	assert_null(pthread_getspecific(k));
	assert_int_equal(pthread_setspecific(k, &k), 0);
	assert_ptr_equal(pthread_getspecific(k), &k);
	assert_int_equal(pthread_key_delete(k), 0);
	assert_int_equal(pthread_key_delete(k), EINVAL);        /* twice */
	assert_int_equal(pthread_setspecific(k, &k), EINVAL);   /* deleted */
	assert_int_equal(pthread_key_delete(PTHREAD_KEYS_MAX), EINVAL);
	assert_int_equal(pthread_setspecific(PTHREAD_KEYS_MAX, &k), EINVAL);
	assert_int_equal(pthread_setspecific((pthread_key_t)-1, &k), EINVAL);
	assert_null(pthread_getspecific(PTHREAD_KEYS_MAX));
	assert_null(pthread_getspecific((pthread_key_t)-1));
}

/* Create keys until EAGAIN; every one holds its own value; deleting one
 * makes room for exactly one more. */
static void test_exhaustion(void **state)
{
	(void)state;
	static pthread_key_t keys[PTHREAD_KEYS_MAX + 1];
	size_t n = 0;
	int err;
	while ((err = pthread_key_create(&keys[n], NULL)) == 0) {
		assert_true(n < PTHREAD_KEYS_MAX);
		n++;
	}
	assert_int_equal(err, EAGAIN);
	/* The C library and cmocka may hold a few keys. */
	assert_true(n > PTHREAD_KEYS_MAX - 16);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(pthread_setspecific(keys[i], &keys[i]), 0);
	for (size_t i = 0; i < n; i++)
		assert_ptr_equal(pthread_getspecific(keys[i]), &keys[i]);
	assert_int_equal(pthread_key_delete(keys[n / 2]), 0);
	pthread_key_t again;
	assert_int_equal(pthread_key_create(&again, NULL), 0);
	assert_null(pthread_getspecific(again));   /* not the old value */
	assert_int_equal(pthread_key_create(&keys[n], NULL), EAGAIN);
	keys[n / 2] = again;
	for (size_t i = 0; i < n; i++)
		assert_int_equal(pthread_key_delete(keys[i]), 0);
	assert_int_equal(pthread_key_create(&again, NULL), 0);
	assert_int_equal(pthread_key_delete(again), 0);
}

/* A re-created key reads NULL in every thread, whatever its index (the
 * low ones live inline, the high ones in on-demand blocks). */
static void test_delete_recreate(void **state)
{
	(void)state;
	pthread_key_t keys[100];
	for (size_t i = 0; i < 100; i++) {
		assert_int_equal(pthread_key_create(&keys[i], NULL), 0);
		assert_int_equal(pthread_setspecific(keys[i], &keys[i]), 0);
	}
	const size_t pick[] = { 0, 5, 40, 99 };
	for (size_t j = 0; j < 4; j++) {
		pthread_key_t old = keys[pick[j]];
		assert_int_equal(pthread_key_delete(old), 0);
		assert_int_equal(pthread_key_create(&keys[pick[j]], NULL), 0);
		/* Both implementations reuse the lowest free index. */
		assert_int_equal(keys[pick[j]], old);
		assert_null(pthread_getspecific(keys[pick[j]]));
	}
	for (size_t i = 0; i < 100; i++) {
		bool fresh = i == 0 || i == 5 || i == 40 || i == 99;
		assert_ptr_equal(pthread_getspecific(keys[i]), fresh ? NULL : &keys[i]);
		assert_int_equal(pthread_key_delete(keys[i]), 0);
	}
}

/* ---- destructors ---------------------------------------------------------- */

#define NTHREADS 8

static _Atomic int calls_a, calls_b, calls_null_seen, bad_value;
static pthread_key_t key_a, key_b, key_high;
static pthread_key_t fill[40];
static char tag_a[NTHREADS], tag_b[NTHREADS];

static void destr_a(void *v)
{
	if (v < (void *)tag_a || v >= (void *)(tag_a + NTHREADS))
		atomic_fetch_add(&bad_value, 1);
	/* The slot is already NULL while its destructor runs. */
	if (pthread_getspecific(key_a) == NULL)
		atomic_fetch_add(&calls_null_seen, 1);
	atomic_fetch_add(&calls_a, 1);
}

static void destr_b(void *v)
{
	if (v < (void *)tag_b || v >= (void *)(tag_b + NTHREADS))
		atomic_fetch_add(&bad_value, 1);
	atomic_fetch_add(&calls_b, 1);
}

static void *set_and_exit(void *arg)
{
	intptr_t i = (intptr_t)arg;
	pthread_setspecific(key_a, &tag_a[i]);
	pthread_setspecific(key_b, &tag_b[i]);
	pthread_setspecific(key_high, NULL);      /* NULL: no destructor call */
	if (i % 2)
		pthread_exit(NULL);
	return NULL;
}

static void test_destructors_across_threads(void **state)
{
	(void)state;
	/* key_b gets an index past the first 32, in an on-demand block. */
	assert_int_equal(pthread_key_create(&key_a, destr_a), 0);
	for (size_t i = 0; i < 40; i++)
		assert_int_equal(pthread_key_create(&fill[i], NULL), 0);
	assert_int_equal(pthread_key_create(&key_b, destr_b), 0);
	assert_true(key_b >= 32);
	assert_int_equal(pthread_key_create(&key_high, destr_b), 0);
	pthread_t t[NTHREADS];
	for (intptr_t i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, set_and_exit, (void *)i), 0);
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(atomic_load(&calls_a), NTHREADS);
	assert_int_equal(atomic_load(&calls_b), NTHREADS);
	assert_int_equal(atomic_load(&calls_null_seen), NTHREADS);
	assert_int_equal(atomic_load(&bad_value), 0);
	/* The main thread's own values are untouched by the others' exits. */
	assert_null(pthread_getspecific(key_a));
	for (size_t i = 0; i < 40; i++)
		pthread_key_delete(fill[i]);
	pthread_key_delete(key_a);
	pthread_key_delete(key_b);
	pthread_key_delete(key_high);
}

/* A destructor that stores a value again runs again, at most
 * PTHREAD_DESTRUCTOR_ITERATIONS times in all. */
static pthread_key_t key_forever, key_twice;
static _Atomic int calls_forever, calls_twice;

static void destr_forever(void *v)
{
	atomic_fetch_add(&calls_forever, 1);
	pthread_setspecific(key_forever, v);
}

static void destr_twice(void *v)
{
	if (atomic_fetch_add(&calls_twice, 1) == 0)
		pthread_setspecific(key_twice, v);
}

static void *set_forever(void *arg)
{
	(void)arg;
	pthread_setspecific(key_forever, &key_forever);
	pthread_setspecific(key_twice, &key_twice);
	return NULL;
}

static void test_iteration_limit(void **state)
{
	(void)state;
	assert_int_equal(pthread_key_create(&key_forever, destr_forever), 0);
	assert_int_equal(pthread_key_create(&key_twice, destr_twice), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, set_forever, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&calls_forever), PTHREAD_DESTRUCTOR_ITERATIONS);
	assert_int_equal(atomic_load(&calls_twice), 2);
	pthread_key_delete(key_forever);
	pthread_key_delete(key_twice);
}

/* A key deleted while a thread still holds a value: no destructor call. */
static pthread_key_t key_gone;
static _Atomic int calls_gone;
static pthread_mutex_t gone_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gone_cond = PTHREAD_COND_INITIALIZER;
static int gone_phase;

static void destr_gone(void *v)
{
	(void)v;
	atomic_fetch_add(&calls_gone, 1);
}

static void *hold_value(void *arg)
{
	(void)arg;
	pthread_setspecific(key_gone, &key_gone);
	pthread_mutex_lock(&gone_lock);
	gone_phase = 1;
	pthread_cond_broadcast(&gone_cond);
	while (gone_phase != 2)
		pthread_cond_wait(&gone_cond, &gone_lock);
	pthread_mutex_unlock(&gone_lock);
	/* Deleted meanwhile: the value is gone here too. */
	return pthread_getspecific(key_gone);
}

static void test_deleted_key_no_destructor(void **state)
{
	(void)state;
	assert_int_equal(pthread_key_create(&key_gone, destr_gone), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, hold_value, NULL), 0);
	pthread_mutex_lock(&gone_lock);
	while (gone_phase != 1)
		pthread_cond_wait(&gone_cond, &gone_lock);
	assert_int_equal(pthread_key_delete(key_gone), 0);
	gone_phase = 2;
	pthread_cond_broadcast(&gone_cond);
	pthread_mutex_unlock(&gone_lock);
	void *res = &res;
	assert_int_equal(pthread_join(t, &res), 0);
	assert_null(res);
	assert_int_equal(atomic_load(&calls_gone), 0);
}

/* Many threads each using a key in an on-demand block: memory in use must
 * not grow with the number of threads (blocks are freed at exit). */
static pthread_key_t key_cycle;
static _Atomic long calls_cycle;

static void destr_cycle(void *v)
{
	(void)v;
	atomic_fetch_add(&calls_cycle, 1);
}

static void *use_high_key(void *arg)
{
	pthread_setspecific(key_cycle, arg);
	return NULL;
}

static long env_cycles(void)
{
	const char *s = getenv("PPL_TEST_CYCLES");
	long n = s ? atol(s) : 0;
	return n > 0 ? n : 20000;
}

static void run_cycles(long n)
{
	for (long i = 0; i < n; i++) {
		pthread_t t;
		assert_int_equal(pthread_create(&t, NULL, use_high_key, &key_cycle), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
	}
}

static void test_no_growth_over_cycles(void **state)
{
	(void)state;
	pthread_key_t low[40];
	for (size_t i = 0; i < 40; i++)
		assert_int_equal(pthread_key_create(&low[i], NULL), 0);
	assert_int_equal(pthread_key_create(&key_cycle, destr_cycle), 0);
	assert_true(key_cycle >= 32);
	long n = env_cycles();
	run_cycles(1000);   /* warm up caches of stacks and TCBs */
	size_t before = mallinfo2().uordblks;
	run_cycles(n);
	size_t after = mallinfo2().uordblks;
	assert_int_equal(atomic_load(&calls_cycle), n + 1000);
	/* One leaked 512-byte block per thread would be n * 512 bytes. */
	assert_true(after < before + 64 * 1024);
	for (size_t i = 0; i < 40; i++)
		pthread_key_delete(low[i]);
	pthread_key_delete(key_cycle);
}

/* cmocka keeps its state in thread-local storage.  Until libppl gives each
 * user thread its own TLS (issue 3), a user thread sees the TLS of the VP it
 * runs on, and the thread running the tests migrates when it blocks: so the
 * tests run on a PTHREAD_SCOPE_SYSTEM thread, which keeps a VP (and its
 * TLS) to itself.  On glibc every thread is SYSTEM scope already. */
struct run {
	const struct CMUnitTest *tests;
	size_t n;
	CMFixtureFunction setup;
	int rc;
};

static void *run_group(void *arg)
{
	struct run *r = arg;
	r->rc = _cmocka_run_group_tests("tests", r->tests, r->n, r->setup, NULL);
	return NULL;
}

static int run_bound(const struct CMUnitTest *tests, size_t n, CMFixtureFunction setup)
{
	struct run r = { tests, n, setup, -1 };
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
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_exhaustion),
		cmocka_unit_test(test_delete_recreate),
		cmocka_unit_test(test_destructors_across_threads),
		cmocka_unit_test(test_iteration_limit),
		cmocka_unit_test(test_deleted_key_no_destructor),
		cmocka_unit_test(test_no_growth_over_cycles),
	};
	return run_bound(tests, sizeof tests / sizeof tests[0], NULL);
}
