/* The mutex priority protocols, on one CPU (the process pins itself with
 * sched_setaffinity; two VPs unless PPL_VPS says otherwise), main at
 * SCHED_FIFO 40, orderings only (a 3 s bound is a failure):
 *  - inversion: L (SCHED_FIFO 10) holds a PTHREAD_PRIO_INHERIT mutex, M (20)
 *    computes until H (30) has had the mutex, H waits for it: L inherits
 *    30, releases, and H gets it while M still computes;
 *  - chain: the same with L2 (15) holding the mutex H wants and waiting for
 *    L's: both inherit 30;
 *  - ceiling: T (10) holding a PTHREAD_PRIO_PROTECT mutex of ceiling 30
 *    creates two SCHED_FIFO 20 threads: neither runs on T's CPU before T
 *    unlocks, both have run when pthread_mutex_unlock returns (T is back
 *    at 10);
 *  - errors as glibc's: a ceiling outside SCHED_FIFO's range is EINVAL, and
 *    so is locking a PP mutex whose ceiling is below the caller's priority.
 * Needs root for the real-time policies: without it, exit 77 (skipped). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "tp_util.h"

#define LIMIT_NS 3000000000LL

static pthread_mutex_t m1, m2;
static atomic_int locked, h_waiting, h_done, m_timed_out;

static void sleep_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void init_pi(pthread_mutex_t *m, int protocol, int ceiling)
{
	pthread_mutexattr_t a;
	CHECK_OK(pthread_mutexattr_init(&a));
	CHECK_OK(pthread_mutexattr_setprotocol(&a, protocol));
	if (protocol == PTHREAD_PRIO_PROTECT)
		CHECK_OK(pthread_mutexattr_setprioceiling(&a, ceiling));
	CHECK_OK(pthread_mutex_init(m, &a));
	CHECK_OK(pthread_mutexattr_destroy(&a));
}

/* L: hold m1 until H waits (then a little longer), computing. */
static void *low(void *arg)
{
	(void)arg;
	CHECK_OK(pthread_mutex_lock(&m1));
	atomic_fetch_add(&locked, 1);
	long long end = tp_now_ns() + LIMIT_NS;
	while (!atomic_load(&h_waiting) && tp_now_ns() < end)
		;
	for (volatile int i = 0; i < 100000; i++)
		;
	CHECK_OK(pthread_mutex_unlock(&m1));
	return NULL;
}

/* L2: hold m2 and wait for m1. */
static void *low2(void *arg)
{
	(void)arg;
	CHECK_OK(pthread_mutex_lock(&m2));
	atomic_fetch_add(&locked, 1);
	CHECK_OK(pthread_mutex_lock(&m1));
	CHECK_OK(pthread_mutex_unlock(&m1));
	CHECK_OK(pthread_mutex_unlock(&m2));
	return NULL;
}

static void *medium(void *arg)
{
	(void)arg;
	long long end = tp_now_ns() + LIMIT_NS;
	while (!atomic_load(&h_done) && tp_now_ns() < end)
		;
	if (!atomic_load(&h_done))
		atomic_store(&m_timed_out, 1);
	return NULL;
}

static void *high(void *arg)
{
	pthread_mutex_t *m = arg;
	atomic_store(&h_waiting, 1);
	CHECK_OK(pthread_mutex_lock(m));
	atomic_store(&h_done, 1);
	CHECK_OK(pthread_mutex_unlock(m));
	return NULL;
}

static void inversion(bool chain)
{
	const char *what = chain ? "chain" : "inversion";
	init_pi(&m1, PTHREAD_PRIO_INHERIT, 0);
	init_pi(&m2, PTHREAD_PRIO_INHERIT, 0);
	atomic_store(&locked, 0);
	atomic_store(&h_waiting, 0);
	atomic_store(&h_done, 0);
	atomic_store(&m_timed_out, 0);
	pthread_t l = tp_spawn_sched(SCHED_FIFO, 10, low, NULL), l2;
	while (atomic_load(&locked) < 1)
		sleep_ms(5);
	if (chain) {
		l2 = tp_spawn_sched(SCHED_FIFO, 15, low2, NULL);
		while (atomic_load(&locked) < 2)
			sleep_ms(5);
		sleep_ms(20);   /* L2 now waits for m1 */
	}
	pthread_t m = tp_spawn_sched(SCHED_FIFO, 20, medium, NULL);
	pthread_t h = tp_spawn_sched(SCHED_FIFO, 30, high, chain ? &m2 : &m1);
	CHECK_OK(pthread_join(h, NULL));
	CHECK_OK(pthread_join(m, NULL));
	CHECK_OK(pthread_join(l, NULL));
	if (chain)
		CHECK_OK(pthread_join(l2, NULL));
	if (atomic_load(&m_timed_out)) {
		fprintf(stderr, "mutex-prio: %s: the high thread did not get the mutex in 3 s "
				"while a medium one computed\n", what);
		exit(1);
	}
	CHECK_OK(pthread_mutex_destroy(&m1));
	CHECK_OK(pthread_mutex_destroy(&m2));
}

/* ---- PRIO_PROTECT ------------------------------------------------------------ */

static atomic_int started;

static void *starter(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	return NULL;
}

static void *ceiling_holder(void *arg)
{
	(void)arg;
	CHECK_OK(pthread_mutex_lock(&m1));
	pthread_t a = tp_spawn_sched(SCHED_FIFO, 20, starter, NULL);
	pthread_t b = tp_spawn_sched(SCHED_FIFO, 20, starter, NULL);
	for (volatile int i = 0; i < 1000000; i++)
		;
	int before = atomic_load(&started);
	CHECK_OK(pthread_mutex_unlock(&m1));
	int after = atomic_load(&started);
	CHECK_OK(pthread_join(a, NULL));
	CHECK_OK(pthread_join(b, NULL));
	if (before == 2 || after != 2) {
		fprintf(stderr, "mutex-prio: ceiling: SCHED_FIFO 20 threads started %d before the "
				"unlock, %d when it returned (want at most 1, and 2)\n", before, after);
		exit(1);
	}
	return NULL;
}

static void ceiling(void)
{
	init_pi(&m1, PTHREAD_PRIO_PROTECT, 30);
	atomic_store(&started, 0);
	pthread_t t = tp_spawn_sched(SCHED_FIFO, 10, ceiling_holder, NULL);
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(pthread_mutex_destroy(&m1));
}

static void errors(void)
{
	pthread_mutexattr_t a;
	CHECK_OK(pthread_mutexattr_init(&a));
	CHECK_OK(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_PROTECT));
	CHECK(pthread_mutexattr_setprioceiling(&a, sched_get_priority_max(SCHED_FIFO) + 1) == EINVAL);
	CHECK(pthread_mutexattr_setprioceiling(&a, sched_get_priority_min(SCHED_FIFO) - 1) == EINVAL);
	CHECK_OK(pthread_mutexattr_setprioceiling(&a, 30));
	pthread_mutex_t m;
	CHECK_OK(pthread_mutex_init(&m, &a));
	int old;
	CHECK(pthread_mutex_setprioceiling(&m, sched_get_priority_max(SCHED_FIFO) + 1, &old) == EINVAL);
	/* main runs at 40, above the ceiling */
	CHECK(pthread_mutex_lock(&m) == EINVAL);
	CHECK(pthread_mutex_trylock(&m) == EINVAL);
	CHECK_OK(pthread_mutex_destroy(&m));
	CHECK_OK(pthread_mutexattr_setprioceiling(&a, 50));
	CHECK_OK(pthread_mutex_init(&m, &a));
	CHECK_OK(pthread_mutex_lock(&m));
	CHECK_OK(pthread_mutex_unlock(&m));
	CHECK_OK(pthread_mutex_destroy(&m));
	CHECK_OK(pthread_mutexattr_destroy(&a));
}

int main(int argc, char **argv)
{
	(void)argc;
	if (getenv("PPL_VPS") == NULL) {
		setenv("PPL_VPS", "2", 1);
		execv("/proc/self/exe", argv);
		perror("mutex-prio: execv");
		return 1;
	}
	alarm(60);
	struct sched_param sp = { .sched_priority = 40 };
	if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
		CHECK(errno == EPERM);
		printf("mutex-prio: skipped, SCHED_FIFO needs privilege\n");
		return 77;
	}
	tp_pin_first_cpu();

	errors();
	inversion(false);
	inversion(true);
	ceiling();
	printf("mutex-prio: ok\n");
	return 0;
}
