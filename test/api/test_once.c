/* pthread_once through <pthread.h>: racing callers all return after the
 * one initialiser has finished (they wait, parked, while it sleeps), later
 * calls do nothing, and many once objects raced at the same time. */
#include "api_util.h"

#define NTHREADS 64

static pthread_once_t once_a = PTHREAD_ONCE_INIT;
static atomic_int a_started, a_done;

static void init_a(void)
{
	atomic_fetch_add(&a_started, 1);
	usleep(100000);          /* the other callers must wait, not run it */
	atomic_fetch_add(&a_done, 1);
}

static atomic_int saw_undone;

static void *caller_a(void *arg)
{
	if (pthread_once(&once_a, init_a) != 0 || atomic_load(&a_done) != 1)
		atomic_fetch_add(&saw_undone, 1);
	return NULL;
}

static void test_racing_callers(void **state)
{
	run_threads(NTHREADS, caller_a, NULL);
	assert_int_equal(atomic_load(&a_started), 1);
	assert_int_equal(atomic_load(&a_done), 1);
	assert_int_equal(atomic_load(&saw_undone), 0);
	/* done: later calls return at once without calling it */
	assert_int_equal(pthread_once(&once_a, init_a), 0);
	assert_int_equal(atomic_load(&a_started), 1);
}

static atomic_int b_calls;

static void init_b(void)
{
	atomic_fetch_add(&b_calls, 1);
}

static void test_sequential(void **state)
{
	pthread_once_t o = PTHREAD_ONCE_INIT;
	for (int i = 0; i < 5; i++)
		assert_int_equal(pthread_once(&o, init_b), 0);
	assert_int_equal(atomic_load(&b_calls), 1);
}

/* Many once objects at once: waiters of different objects must not be
 * confused with each other (they may share wait-table buckets). */
#define NONCE 32
static pthread_once_t many[NONCE];
static atomic_int many_calls[NONCE];
static atomic_int many_bad;
static atomic_int next_init;

static void init_many(void)
{
	atomic_fetch_add(&next_init, 1);
	usleep(2000);
}

static void *caller_many(void *arg)
{
	int base = (int)(intptr_t)arg;
	for (int k = 0; k < NONCE; k++) {
		int i = (base + k) % NONCE;
		if (pthread_once(&many[i], init_many) != 0)
			atomic_fetch_add(&many_bad, 1);
		atomic_fetch_add(&many_calls[i], 1);
	}
	return NULL;
}

static void test_many_objects(void **state)
{
	pthread_t t[NTHREADS];
	for (int i = 0; i < NONCE; i++)
		many[i] = PTHREAD_ONCE_INIT;
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, caller_many, (void *)(intptr_t)i), 0);
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(atomic_load(&many_bad), 0);
	/* one initialiser per object, whatever the interleaving */
	assert_int_equal(atomic_load(&next_init), NONCE);
	for (int i = 0; i < NONCE; i++)
		assert_int_equal(atomic_load(&many_calls[i]), NTHREADS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_racing_callers),
		cmocka_unit_test(test_sequential),
		cmocka_unit_test(test_many_objects),
	};
	return run_bound(tests, sizeof tests / sizeof tests[0]);
}
