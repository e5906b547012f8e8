/* pthread_rwlock_* through <pthread.h>: readers hold the lock together,
 * writers exclude everyone, writer preference of the NONRECURSIVE kind
 * (static initialiser), error codes as glibc 2.36 returns them, time-outs
 * on both clocks, attributes, and process-shared locks. */
#include "api_util.h"

#define NTHREADS 16

/* ---- readers share ------------------------------------------------------------------- */

struct readers {
	pthread_rwlock_t *l;
	atomic_int inside;
	atomic_int max_inside;
	int fail;
};

static void *reader_together(void *arg)
{
	struct readers *r = arg;
	if (pthread_rwlock_rdlock(r->l) != 0) {
		r->fail = 1;
		return NULL;
	}
	atomic_fetch_add(&r->inside, 1);
	/* Stay until every reader is in: only possible if they share the lock. */
	if (!wait_for(&r->inside, NTHREADS))
		r->fail = 1;
	pthread_rwlock_unlock(r->l);
	return NULL;
}

static void test_readers_share(void **state)
{
	static pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
	static pthread_rwlock_t lw = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
	pthread_rwlock_t *locks[] = { &l, &lw };
	for (int i = 0; i < 2; i++) {
		struct readers r = { locks[i] };
		run_threads(NTHREADS, reader_together, &r);
		assert_int_equal(r.fail, 0);
		assert_int_equal(pthread_rwlock_trywrlock(locks[i]), 0);
		assert_int_equal(pthread_rwlock_unlock(locks[i]), 0);
	}
}

/* ---- writers exclude ------------------------------------------------------------------- */

#define NITERS 5000

struct shared_count {
	pthread_rwlock_t l;
	long a, b;           /* written together under the write lock */
	atomic_int torn;
};

static void *mixed_fn(void *arg)
{
	struct shared_count *s = arg;
	for (int i = 0; i < NITERS; i++) {
		if (i % 4 == 0) {
			pthread_rwlock_wrlock(&s->l);
			long a = s->a;
			if ((i & 63) == 0)
				sched_yield();
			s->a = a + 1;
			s->b = a + 1;
			pthread_rwlock_unlock(&s->l);
		} else {
			pthread_rwlock_rdlock(&s->l);
			if (s->a != s->b)
				atomic_fetch_add(&s->torn, 1);
			pthread_rwlock_unlock(&s->l);
		}
	}
	return NULL;
}

static void check_mixed(const pthread_rwlockattr_t *a)
{
	static struct shared_count s;
	assert_int_equal(pthread_rwlock_init(&s.l, a), 0);
	s.a = s.b = 0;
	atomic_store(&s.torn, 0);
	run_threads(NTHREADS, mixed_fn, &s);
	assert_int_equal(s.a, (long)NTHREADS * NITERS / 4);
	assert_int_equal(atomic_load(&s.torn), 0);
	assert_int_equal(pthread_rwlock_destroy(&s.l), 0);
}

static void test_writers_exclude(void **state)
{
	static const int kinds[] = { PTHREAD_RWLOCK_PREFER_READER_NP, PTHREAD_RWLOCK_PREFER_WRITER_NP,
				     PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP };
	check_mixed(NULL);
	for (int k = 0; k < 3; k++) {
		pthread_rwlockattr_t a;
		assert_int_equal(pthread_rwlockattr_init(&a), 0);
		assert_int_equal(pthread_rwlockattr_setkind_np(&a, kinds[k]), 0);
		check_mixed(&a);
		assert_int_equal(pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
		check_mixed(&a);
	}
}

/* ---- writer preference ---------------------------------------------------------------------- */

struct pref {
	pthread_rwlock_t *l;
	atomic_int writer_done;
	int try_result;
	int timed_result;
};

static void *writer_fn(void *arg)
{
	struct pref *p = arg;
	if (pthread_rwlock_wrlock(p->l) == 0) {
		atomic_store(&p->writer_done, 1);
		pthread_rwlock_unlock(p->l);
	}
	return NULL;
}

/* Another reader: tryrdlock until it reports EBUSY (the writer is queued). */
static void *late_reader(void *arg)
{
	struct pref *p = arg;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		p->try_result = pthread_rwlock_tryrdlock(p->l);
		if (p->try_result == 0)
			pthread_rwlock_unlock(p->l);
		usleep(1000);
	} while (p->try_result == 0 && ms_since(&t0) < 5000);
	struct timespec ts = in_ms(CLOCK_MONOTONIC, 50);
	p->timed_result = pthread_rwlock_clockrdlock(p->l, CLOCK_MONOTONIC, &ts);
	if (p->timed_result == 0)
		pthread_rwlock_unlock(p->l);
	return NULL;
}

static void test_writer_preference_nonrecursive(void **state)
{
	static pthread_rwlock_t l = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
	struct pref p = { &l };
	pthread_t w, r;
	assert_int_equal(pthread_rwlock_rdlock(&l), 0);
	assert_int_equal(pthread_create(&w, NULL, writer_fn, &p), 0);
	assert_int_equal(pthread_create(&r, NULL, late_reader, &p), 0);
	assert_int_equal(pthread_join(r, NULL), 0);
	/* a new reader is turned away while a writer waits */
	assert_int_equal(p.try_result, EBUSY);
	assert_int_equal(p.timed_result, ETIMEDOUT);
	assert_int_equal(atomic_load(&p.writer_done), 0);
	assert_int_equal(pthread_rwlock_unlock(&l), 0);
	assert_int_equal(pthread_join(w, NULL), 0);
	assert_int_equal(atomic_load(&p.writer_done), 1);
}

/* A writer that gives up must not leave readers queued behind it. */
static void *timed_writer_fn(void *arg)
{
	struct pref *p = arg;
	struct timespec ts = in_ms(CLOCK_REALTIME, 200);
	p->timed_result = pthread_rwlock_timedwrlock(p->l, &ts);
	return NULL;
}

static void *blocking_reader(void *arg)
{
	struct pref *p = arg;
	p->try_result = pthread_rwlock_rdlock(p->l);
	if (p->try_result == 0)
		pthread_rwlock_unlock(p->l);
	atomic_store(&p->writer_done, 1);
	return NULL;
}

static void test_timed_writer_leaves(void **state)
{
	static pthread_rwlock_t l = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
	struct pref p = { &l };
	pthread_t w, r;
	p.try_result = -1;
	assert_int_equal(pthread_rwlock_rdlock(&l), 0);
	assert_int_equal(pthread_create(&w, NULL, timed_writer_fn, &p), 0);
	usleep(50000);
	assert_int_equal(pthread_create(&r, NULL, blocking_reader, &p), 0);
	assert_int_equal(pthread_join(w, NULL), 0);
	assert_int_equal(p.timed_result, ETIMEDOUT);
	/* the reader gets in while we still hold our read lock */
	assert_true(wait_for(&p.writer_done, 1));
	assert_int_equal(pthread_join(r, NULL), 0);
	assert_int_equal(p.try_result, 0);
	assert_int_equal(pthread_rwlock_unlock(&l), 0);
}

/* The default kind prefers readers: a reader gets in past a waiting writer. */
static void test_reader_preference_default(void **state)
{
	static pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
	struct pref p = { &l };
	pthread_t w;
	assert_int_equal(pthread_rwlock_rdlock(&l), 0);
	assert_int_equal(pthread_create(&w, NULL, writer_fn, &p), 0);
	usleep(50000);
	assert_int_equal(atomic_load(&p.writer_done), 0);
	assert_int_equal(pthread_rwlock_tryrdlock(&l), 0);
	assert_int_equal(pthread_rwlock_unlock(&l), 0);
	assert_int_equal(pthread_rwlock_unlock(&l), 0);
	assert_int_equal(pthread_join(w, NULL), 0);
	assert_int_equal(atomic_load(&p.writer_done), 1);
}

/* ---- errors and time-outs ---------------------------------------------------------------- */

static void test_errors(void **state)
{
	pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
	struct timespec bad = { 0, -1 }, past = { -1, 0 };
	/* the time is checked first, even when the lock is free */
	assert_int_equal(pthread_rwlock_timedrdlock(&l, &bad), EINVAL);
	assert_int_equal(pthread_rwlock_timedwrlock(&l, &bad), EINVAL);
	assert_int_equal(pthread_rwlock_clockrdlock(&l, CLOCK_MONOTONIC_RAW, &past), EINVAL);
	assert_int_equal(pthread_rwlock_clockwrlock(&l, CLOCK_PROCESS_CPUTIME_ID, &past), EINVAL);
	assert_int_equal(pthread_rwlock_wrlock(&l), 0);
	assert_int_equal(pthread_rwlock_wrlock(&l), EDEADLK);
	assert_int_equal(pthread_rwlock_rdlock(&l), EDEADLK);
	assert_int_equal(pthread_rwlock_tryrdlock(&l), EBUSY);
	assert_int_equal(pthread_rwlock_trywrlock(&l), EBUSY);
	assert_int_equal(pthread_rwlock_timedwrlock(&l, &bad), EINVAL);
	assert_int_equal(pthread_rwlock_timedrdlock(&l, &past), EDEADLK);
	assert_int_equal(pthread_rwlock_timedwrlock(&l, &past), EDEADLK);
	assert_int_equal(pthread_rwlock_unlock(&l), 0);
	assert_int_equal(pthread_rwlock_rdlock(&l), 0);
	assert_int_equal(pthread_rwlock_tryrdlock(&l), 0);
	assert_int_equal(pthread_rwlock_trywrlock(&l), EBUSY);
	assert_int_equal(pthread_rwlock_timedwrlock(&l, &past), ETIMEDOUT);
	assert_int_equal(pthread_rwlock_unlock(&l), 0);
	assert_int_equal(pthread_rwlock_unlock(&l), 0);
	assert_int_equal(pthread_rwlock_destroy(&l), 0);
}

struct timed {
	pthread_rwlock_t *l;
	clockid_t clk;
	int write;
	int result;
	long waited;
};

static void *timed_fn(void *arg)
{
	struct timed *t = arg;
	struct timespec t0, ts;
	clock_gettime(CLOCK_MONOTONIC, &t0);   /* before the deadline (test_mutex.c) */
	ts = in_ms(t->clk, 100);
	if (t->clk == CLOCK_REALTIME)
		t->result = t->write ? pthread_rwlock_timedwrlock(t->l, &ts)
				     : pthread_rwlock_timedrdlock(t->l, &ts);
	else
		t->result = t->write ? pthread_rwlock_clockwrlock(t->l, t->clk, &ts)
				     : pthread_rwlock_clockrdlock(t->l, t->clk, &ts);
	t->waited = ms_since(&t0);
	if (t->result == 0)
		pthread_rwlock_unlock(t->l);
	return NULL;
}

static void test_timeouts(void **state)
{
	static const clockid_t clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC };
	pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
	for (int c = 0; c < 2; c++) {
		for (int mode = 0; mode < 3; mode++) {
			/* mode 0: reader waits for a writer; 1: writer for a writer;
			 * 2: writer for a reader */
			if (mode == 2)
				assert_int_equal(pthread_rwlock_rdlock(&l), 0);
			else
				assert_int_equal(pthread_rwlock_wrlock(&l), 0);
			struct timed t = { &l, clocks[c], mode != 0, -1, 0 };
			pthread_t th;
			assert_int_equal(pthread_create(&th, NULL, timed_fn, &t), 0);
			assert_int_equal(pthread_join(th, NULL), 0);
			assert_int_equal(t.result, ETIMEDOUT);
			assert_true(t.waited >= 99);
			assert_true(t.waited < 5000);
			assert_int_equal(pthread_rwlock_unlock(&l), 0);
			assert_int_equal(pthread_rwlock_trywrlock(&l), 0);
			assert_int_equal(pthread_rwlock_unlock(&l), 0);
		}
	}
}

static void test_attr(void **state)
{
	pthread_rwlockattr_t a;
	int v;
	assert_int_equal(pthread_rwlockattr_init(&a), 0);
	assert_int_equal(pthread_rwlockattr_getkind_np(&a, &v), 0);
	assert_int_equal(v, PTHREAD_RWLOCK_PREFER_READER_NP);
	assert_int_equal(pthread_rwlockattr_setkind_np(&a, 3), EINVAL);
	assert_int_equal(pthread_rwlockattr_setkind_np(&a, -1), EINVAL);
	assert_int_equal(pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP), 0);
	assert_int_equal(pthread_rwlockattr_getkind_np(&a, &v), 0);
	assert_int_equal(v, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	assert_int_equal(pthread_rwlockattr_getpshared(&a, &v), 0);
	assert_int_equal(v, PTHREAD_PROCESS_PRIVATE);
	assert_int_equal(pthread_rwlockattr_setpshared(&a, 5), EINVAL);
	assert_int_equal(pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
	assert_int_equal(pthread_rwlockattr_getpshared(&a, &v), 0);
	assert_int_equal(v, PTHREAD_PROCESS_SHARED);
	assert_int_equal(pthread_rwlockattr_destroy(&a), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_readers_share),
		cmocka_unit_test(test_writers_exclude),
		cmocka_unit_test(test_writer_preference_nonrecursive),
		cmocka_unit_test(test_timed_writer_leaves),
		cmocka_unit_test(test_reader_preference_default),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_timeouts),
		cmocka_unit_test(test_attr),
	};
	return run_bound(tests, sizeof tests / sizeof tests[0]);
}
