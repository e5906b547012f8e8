/* pthread_mutex_* through <pthread.h>: mutual exclusion for every kind,
 * static initialisers, error codes as glibc 2.36 returns them, timeouts on
 * both clocks, attributes, and process-shared mutexes (threads, and a
 * forked child).  Must pass natively (glibc) and relinked with libppl. */
#include "api_util.h"

#define NTHREADS 64
#define NITERS 10000

/* ---- mutual exclusion --------------------------------------------------------- */

struct counter {
	pthread_mutex_t *m;
	long value;          /* plain: protected by m */
	int depth;           /* lock it this many times (recursive) */
};

static void *count_fn(void *arg)
{
	struct counter *c = arg;
	for (int i = 0; i < NITERS; i++) {
		for (int d = 0; d < c->depth; d++)
			if (pthread_mutex_lock(c->m) != 0)
				return (void *)1;
		long v = c->value;
		if ((i & 127) == 0)
			sched_yield();   /* widen the window a broken lock would leave */
		c->value = v + 1;
		for (int d = 0; d < c->depth; d++)
			if (pthread_mutex_unlock(c->m) != 0)
				return (void *)1;
	}
	return NULL;
}

static void check_counter(pthread_mutex_t *m, int depth)
{
	struct counter c = { m, 0, depth };
	run_threads(NTHREADS, count_fn, &c);
	assert_int_equal(c.value, (long)NTHREADS * NITERS);
	assert_int_equal(pthread_mutex_trylock(m), 0);
	assert_int_equal(pthread_mutex_unlock(m), 0);
}

static void test_counter_static_default(void **state)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	check_counter(&m, 1);
}

static void test_counter_static_np(void **state)
{
	static pthread_mutex_t rec = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	static pthread_mutex_t chk = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	static pthread_mutex_t ada = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
	check_counter(&rec, 3);
	check_counter(&chk, 1);
	check_counter(&ada, 1);
}

static void test_counter_every_kind(void **state)
{
	static const int kinds[] = { PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE,
				     PTHREAD_MUTEX_ERRORCHECK, PTHREAD_MUTEX_ADAPTIVE_NP };
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		pthread_mutexattr_t a;
		pthread_mutex_t m;
		assert_int_equal(pthread_mutexattr_init(&a), 0);
		assert_int_equal(pthread_mutexattr_settype(&a, kinds[k]), 0);
		assert_int_equal(pthread_mutex_init(&m, &a), 0);
		check_counter(&m, kinds[k] == PTHREAD_MUTEX_RECURSIVE ? 2 : 1);
		assert_int_equal(pthread_mutex_destroy(&m), 0);
		assert_int_equal(pthread_mutexattr_destroy(&a), 0);
	}
}

static void test_counter_pshared_threads(void **state)
{
	pthread_mutexattr_t a;
	pthread_mutex_t m;
	assert_int_equal(pthread_mutexattr_init(&a), 0);
	assert_int_equal(pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
	assert_int_equal(pthread_mutex_init(&m, &a), 0);
	struct counter c = { &m, 0, 1 };
	run_threads(8, count_fn, &c);
	assert_int_equal(c.value, 8L * NITERS);
	assert_int_equal(pthread_mutex_destroy(&m), 0);
}

/* A forked child and the parent's threads share a mutex in shared memory. */
static void test_pshared_fork(void **state)
{
	struct shared {
		pthread_mutex_t m;
		long value;
	} *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(sh != MAP_FAILED);
	pthread_mutexattr_t a;
	assert_int_equal(pthread_mutexattr_init(&a), 0);
	assert_int_equal(pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
	assert_int_equal(pthread_mutex_init(&sh->m, &a), 0);
	sh->value = 0;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (int i = 0; i < 4 * NITERS; i++) {
			if (pthread_mutex_lock(&sh->m) != 0)
				_exit(1);
			sh->value++;
			if (pthread_mutex_unlock(&sh->m) != 0)
				_exit(1);
		}
		_exit(0);
	}
	for (int i = 0; i < 4 * NITERS; i++) {
		assert_int_equal(pthread_mutex_lock(&sh->m), 0);
		sh->value++;
		assert_int_equal(pthread_mutex_unlock(&sh->m), 0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(sh->value, 8L * NITERS);
	munmap(sh, sizeof *sh);
}

/* ---- error codes ---------------------------------------------------------------- */

static void *try_fn(void *arg)
{
	return (void *)(intptr_t)pthread_mutex_trylock(arg);
}

static void *unlock_fn(void *arg)
{
	return (void *)(intptr_t)pthread_mutex_unlock(arg);
}

static int in_thread(void *(*fn)(void *), pthread_mutex_t *m)
{
	pthread_t t;
	void *r;
	assert_int_equal(pthread_create(&t, NULL, fn, m), 0);
	assert_int_equal(pthread_join(t, &r), 0);
	return (int)(intptr_t)r;
}

static void test_normal_errors(void **state)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct timespec bad = { 0, -1 }, bad2 = { 0, 1000000000L }, past = { -1, 0 };
	/* the time is checked only when the caller must wait */
	assert_int_equal(pthread_mutex_timedlock(&m, &bad), 0);
	assert_int_equal(pthread_mutex_unlock(&m), 0);
	assert_int_equal(pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &past), EINVAL);
	assert_int_equal(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC_RAW, &past), EINVAL);
	assert_int_equal(pthread_mutex_lock(&m), 0);
	assert_int_equal(pthread_mutex_trylock(&m), EBUSY);
	assert_int_equal(in_thread(try_fn, &m), EBUSY);
	assert_int_equal(pthread_mutex_timedlock(&m, &bad), EINVAL);
	assert_int_equal(pthread_mutex_timedlock(&m, &bad2), EINVAL);
	assert_int_equal(pthread_mutex_timedlock(&m, &past), ETIMEDOUT);
	assert_int_equal(pthread_mutex_destroy(&m), EBUSY);
	assert_int_equal(pthread_mutex_unlock(&m), 0);
	assert_int_equal(pthread_mutex_destroy(&m), 0);
}

/* A normal mutex relocked by its owner deadlocks: timedlock times out. */
static void test_normal_self_deadlock_times_out(void **state)
{
	static const clockid_t clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC };
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	assert_int_equal(pthread_mutex_lock(&m), 0);
	for (int i = 0; i < 2; i++) {
		/* t0 before the deadline: a preemption between the two must
		 * not make the measured wait look short */
		struct timespec t0, ts;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		ts = in_ms(clocks[i], 100);
		int err = clocks[i] == CLOCK_REALTIME ? pthread_mutex_timedlock(&m, &ts)
						      : pthread_mutex_clocklock(&m, clocks[i], &ts);
		assert_int_equal(err, ETIMEDOUT);
		long ms = ms_since(&t0);
		assert_true(ms >= 99);
		assert_true(ms < 5000);
	}
	assert_int_equal(pthread_mutex_unlock(&m), 0);
}

static void test_errorcheck_errors(void **state)
{
	pthread_mutex_t m = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	struct timespec bad = { 0, -1 }, past = { -1, 0 };
	assert_int_equal(pthread_mutex_unlock(&m), EPERM);
	assert_int_equal(pthread_mutex_lock(&m), 0);
	assert_int_equal(pthread_mutex_lock(&m), EDEADLK);
	assert_int_equal(pthread_mutex_trylock(&m), EBUSY);
	assert_int_equal(pthread_mutex_timedlock(&m, &bad), EDEADLK);
	assert_int_equal(pthread_mutex_timedlock(&m, &past), EDEADLK);
	assert_int_equal(in_thread(unlock_fn, &m), EPERM);
	assert_int_equal(in_thread(try_fn, &m), EBUSY);
	assert_int_equal(pthread_mutex_unlock(&m), 0);
	assert_int_equal(pthread_mutex_unlock(&m), EPERM);
	assert_int_equal(pthread_mutex_destroy(&m), 0);
}

static void test_recursive_errors(void **state)
{
	pthread_mutex_t m = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	struct timespec bad = { 0, -1 };
	assert_int_equal(pthread_mutex_unlock(&m), EPERM);
	assert_int_equal(pthread_mutex_lock(&m), 0);
	assert_int_equal(pthread_mutex_trylock(&m), 0);
	assert_int_equal(pthread_mutex_timedlock(&m, &bad), 0);   /* owner: no wait, no check */
	assert_int_equal(in_thread(unlock_fn, &m), EPERM);
	assert_int_equal(in_thread(try_fn, &m), EBUSY);
	assert_int_equal(pthread_mutex_destroy(&m), EBUSY);
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_mutex_unlock(&m), 0);
	assert_int_equal(pthread_mutex_unlock(&m), EPERM);
	assert_int_equal(in_thread(try_fn, &m), 0);   /* the thread exits holding it */
	assert_int_equal(pthread_mutex_trylock(&m), EBUSY);
}

/* __count (offset 4) is the recursion depth in glibc and in libppl alike. */
static void test_recursive_overflow(void **state)
{
	pthread_mutex_t m = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	struct timespec past = { -1, 0 };
	assert_int_equal(pthread_mutex_lock(&m), 0);
	m.__data.__count = UINT_MAX;
	assert_int_equal(pthread_mutex_lock(&m), EAGAIN);
	assert_int_equal(pthread_mutex_trylock(&m), EAGAIN);
	assert_int_equal(pthread_mutex_timedlock(&m, &past), EAGAIN);
	m.__data.__count = 1;
	assert_int_equal(pthread_mutex_unlock(&m), 0);
	assert_int_equal(pthread_mutex_unlock(&m), EPERM);
}

/* ---- timed lock against another thread ------------------------------------------ */

struct timed {
	pthread_mutex_t *m;
	clockid_t clk;
	long ms;
	int result;
	long waited;
};

static void *timed_fn(void *arg)
{
	struct timed *t = arg;
	struct timespec t0, ts;
	clock_gettime(CLOCK_MONOTONIC, &t0);   /* before the deadline, as above */
	ts = in_ms(t->clk, t->ms);
	t->result = t->clk == CLOCK_REALTIME ? pthread_mutex_timedlock(t->m, &ts)
					     : pthread_mutex_clocklock(t->m, t->clk, &ts);
	t->waited = ms_since(&t0);
	if (t->result == 0)
		pthread_mutex_unlock(t->m);
	return NULL;
}

static void test_timedlock_timeout(void **state)
{
	static const clockid_t clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC };
	static const int kinds[] = { PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_ERRORCHECK };
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < 2; i++) {
			pthread_mutexattr_t a;
			pthread_mutex_t m;
			pthread_mutexattr_init(&a);
			pthread_mutexattr_settype(&a, kinds[k]);
			assert_int_equal(pthread_mutex_init(&m, &a), 0);
			assert_int_equal(pthread_mutex_lock(&m), 0);
			struct timed t = { &m, clocks[i], 100, -1, 0 };
			pthread_t th;
			assert_int_equal(pthread_create(&th, NULL, timed_fn, &t), 0);
			assert_int_equal(pthread_join(th, NULL), 0);
			assert_int_equal(t.result, ETIMEDOUT);
			assert_true(t.waited >= 99);
			assert_true(t.waited < 5000);
			/* the waiter left no trace: unlock and relock still work */
			assert_int_equal(pthread_mutex_unlock(&m), 0);
			assert_int_equal(pthread_mutex_trylock(&m), 0);
			assert_int_equal(pthread_mutex_unlock(&m), 0);
			assert_int_equal(pthread_mutex_destroy(&m), 0);
		}
	}
}

static void test_timedlock_acquires_in_time(void **state)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	assert_int_equal(pthread_mutex_lock(&m), 0);
	struct timed t = { &m, CLOCK_MONOTONIC, 10000, -1, 0 };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, timed_fn, &t), 0);
	usleep(50000);
	assert_int_equal(pthread_mutex_unlock(&m), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(t.result, 0);
	assert_true(t.waited < 5000);
}

/* ---- attributes ------------------------------------------------------------------- */

static void test_attr(void **state)
{
	pthread_mutexattr_t a;
	int v;
	assert_int_equal(pthread_mutexattr_init(&a), 0);
	assert_int_equal(pthread_mutexattr_gettype(&a, &v), 0);
	assert_int_equal(v, PTHREAD_MUTEX_DEFAULT);
	assert_int_equal(pthread_mutexattr_settype(&a, 4), EINVAL);
	assert_int_equal(pthread_mutexattr_settype(&a, -1), EINVAL);
	assert_int_equal(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK), 0);
	assert_int_equal(pthread_mutexattr_gettype(&a, &v), 0);
	assert_int_equal(v, PTHREAD_MUTEX_ERRORCHECK);

	assert_int_equal(pthread_mutexattr_getpshared(&a, &v), 0);
	assert_int_equal(v, PTHREAD_PROCESS_PRIVATE);
	assert_int_equal(pthread_mutexattr_setpshared(&a, 2), EINVAL);
	assert_int_equal(pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
	assert_int_equal(pthread_mutexattr_getpshared(&a, &v), 0);
	assert_int_equal(v, PTHREAD_PROCESS_SHARED);

	assert_int_equal(pthread_mutexattr_getprotocol(&a, &v), 0);
	assert_int_equal(v, PTHREAD_PRIO_NONE);
	assert_int_equal(pthread_mutexattr_setprotocol(&a, 3), EINVAL);
	assert_int_equal(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT), 0);
	assert_int_equal(pthread_mutexattr_getprotocol(&a, &v), 0);
	assert_int_equal(v, PTHREAD_PRIO_INHERIT);

	assert_int_equal(pthread_mutexattr_getprioceiling(&a, &v), 0);
	assert_int_equal(v, sched_get_priority_min(SCHED_FIFO));
	assert_int_equal(pthread_mutexattr_setprioceiling(&a, 0), EINVAL);
	assert_int_equal(pthread_mutexattr_setprioceiling(&a, sched_get_priority_max(SCHED_FIFO) + 1),
			 EINVAL);
	assert_int_equal(pthread_mutexattr_setprioceiling(&a, 42), 0);
	assert_int_equal(pthread_mutexattr_getprioceiling(&a, &v), 0);
	assert_int_equal(v, 42);

	assert_int_equal(pthread_mutexattr_getrobust(&a, &v), 0);
	assert_int_equal(v, PTHREAD_MUTEX_STALLED);
	assert_int_equal(pthread_mutexattr_setrobust(&a, 2), EINVAL);
	assert_int_equal(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST), 0);
	assert_int_equal(pthread_mutexattr_getrobust(&a, &v), 0);
	assert_int_equal(v, PTHREAD_MUTEX_ROBUST);
	/* every setting kept the others */
	assert_int_equal(pthread_mutexattr_gettype(&a, &v), 0);
	assert_int_equal(v, PTHREAD_MUTEX_ERRORCHECK);
	assert_int_equal(pthread_mutexattr_getpshared(&a, &v), 0);
	assert_int_equal(v, PTHREAD_PROCESS_SHARED);
	assert_int_equal(pthread_mutexattr_destroy(&a), 0);
}

static void test_prio_protect(void **state)
{
	pthread_mutexattr_t a;
	pthread_mutex_t m, plain = PTHREAD_MUTEX_INITIALIZER;
	int v, old = -1;
	assert_int_equal(pthread_mutexattr_init(&a), 0);
	assert_int_equal(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_PROTECT), 0);
	assert_int_equal(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST), 0);
	assert_int_equal(pthread_mutex_init(&m, &a), ENOTSUP);
	assert_int_equal(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_STALLED), 0);
	assert_int_equal(pthread_mutex_init(&m, &a), 0);
	assert_int_equal(pthread_mutex_getprioceiling(&m, &v), 0);
	assert_int_equal(v, sched_get_priority_min(SCHED_FIFO));
	assert_int_equal(pthread_mutexattr_setprioceiling(&a, 30), 0);
	assert_int_equal(pthread_mutex_init(&m, &a), 0);
	assert_int_equal(pthread_mutex_getprioceiling(&m, &v), 0);
	assert_int_equal(v, 30);
	assert_int_equal(pthread_mutex_setprioceiling(&m, 0, &old), EINVAL);
	assert_int_equal(pthread_mutex_setprioceiling(&m, 5, &old), 0);
	assert_int_equal(old, 30);
	assert_int_equal(pthread_mutex_getprioceiling(&m, &v), 0);
	assert_int_equal(v, 5);
	assert_int_equal(pthread_mutex_getprioceiling(&plain, &v), EINVAL);
	assert_int_equal(pthread_mutex_setprioceiling(&plain, 5, &old), EINVAL);
	assert_int_equal(pthread_mutex_consistent(&plain), EINVAL);
}

/* Robust mutexes: accepted; an owned one behaves like its base kind. */
static void test_robust_basic(void **state)
{
	pthread_mutexattr_t a;
	pthread_mutex_t m;
	assert_int_equal(pthread_mutexattr_init(&a), 0);
	assert_int_equal(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST), 0);
	assert_int_equal(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK), 0);
	assert_int_equal(pthread_mutex_init(&m, &a), 0);
	assert_int_equal(pthread_mutex_consistent(&m), EINVAL);
	assert_int_equal(pthread_mutex_lock(&m), 0);
	assert_int_equal(pthread_mutex_lock(&m), EDEADLK);
	assert_int_equal(in_thread(unlock_fn, &m), EPERM);
	assert_int_equal(pthread_mutex_unlock(&m), 0);
	assert_int_equal(pthread_mutex_unlock(&m), EPERM);
	assert_int_equal(pthread_mutex_destroy(&m), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counter_static_default),
		cmocka_unit_test(test_counter_static_np),
		cmocka_unit_test(test_counter_every_kind),
		cmocka_unit_test(test_counter_pshared_threads),
		cmocka_unit_test(test_pshared_fork),
		cmocka_unit_test(test_normal_errors),
		cmocka_unit_test(test_normal_self_deadlock_times_out),
		cmocka_unit_test(test_errorcheck_errors),
		cmocka_unit_test(test_recursive_errors),
		cmocka_unit_test(test_recursive_overflow),
		cmocka_unit_test(test_timedlock_timeout),
		cmocka_unit_test(test_timedlock_acquires_in_time),
		cmocka_unit_test(test_attr),
		cmocka_unit_test(test_prio_protect),
		cmocka_unit_test(test_robust_basic),
	};
	return run_bound(tests, sizeof tests / sizeof tests[0]);
}
