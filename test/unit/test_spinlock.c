/* spinlock.h: try-lock semantics and mutual exclusion between kernel
 * threads.  This program does not link libppl, so pthread_create here is
 * the C library's. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "spinlock.h"

static void test_zero_is_unlocked(void **state)
{
	static spin_t l; /* all-zero bytes, as inside a static pthread object */
	assert_true(spin_try_lock(&l));
	spin_unlock(&l);
}

static void test_try_lock(void **state)
{
	spin_t l;
	spin_init(&l);
	assert_true(spin_try_lock(&l));
	/* Not recursive: the owner itself cannot take it again. */
	assert_false(spin_try_lock(&l));
	assert_false(spin_try_lock(&l));
	spin_unlock(&l);
	assert_true(spin_try_lock(&l));
	spin_unlock(&l);
	spin_lock(&l);
	assert_false(spin_try_lock(&l));
	spin_unlock(&l);
}

#define ITERS 200000

struct shared {
	spin_t lock;
	/* Incremented by a separate load and store: without exclusion,
	 * concurrent increments get lost and the total comes out short. */
	_Atomic long count;
	_Atomic int inside;      /* threads between lock and unlock */
	_Atomic int overlaps;    /* times a thread found another inside */
	_Atomic int go;
	int nthreads;
	bool use_try;
};

static void *worker(void *arg)
{
	struct shared *sh = arg;
	/* Start together, so the threads really contend. */
	atomic_fetch_add_explicit(&sh->go, 1, memory_order_acq_rel);
	while (atomic_load_explicit(&sh->go, memory_order_acquire) < sh->nthreads)
		;
	for (int i = 0; i < ITERS; i++) {
		if (sh->use_try) {
			while (!spin_try_lock(&sh->lock))
				;
		} else {
			spin_lock(&sh->lock);
		}
		if (atomic_fetch_add_explicit(&sh->inside, 1, memory_order_relaxed) != 0)
			atomic_fetch_add_explicit(&sh->overlaps, 1, memory_order_relaxed);
		long c = atomic_load_explicit(&sh->count, memory_order_relaxed);
		atomic_store_explicit(&sh->count, c + 1, memory_order_relaxed);
		atomic_fetch_sub_explicit(&sh->inside, 1, memory_order_relaxed);
		spin_unlock(&sh->lock);
	}
	return NULL;
}

static void run_exclusion(int nthreads, bool use_try)
{
	struct shared sh = { .nthreads = nthreads, .use_try = use_try };
	spin_init(&sh.lock);
	pthread_t t[4];
	for (int i = 0; i < nthreads; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker, &sh), 0);
	for (int i = 0; i < nthreads; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(atomic_load(&sh.overlaps), 0);
	assert_int_equal(atomic_load(&sh.count), (long)nthreads * ITERS);
	/* Left unlocked. */
	assert_true(spin_try_lock(&sh.lock));
}

static void test_exclusion_2(void **state) { run_exclusion(2, false); }
static void test_exclusion_4(void **state) { run_exclusion(4, false); }
static void test_exclusion_try_3(void **state) { run_exclusion(3, true); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zero_is_unlocked),
		cmocka_unit_test(test_try_lock),
		cmocka_unit_test(test_exclusion_2),
		cmocka_unit_test(test_exclusion_4),
		cmocka_unit_test(test_exclusion_try_3),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
