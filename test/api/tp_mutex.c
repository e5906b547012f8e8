/* Mutex counters under contention, trylock, recursive and error-checking
 * mutexes, timedlock. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include "tp_util.h"

#define THREADS 8
#define ITERS 50000

static pthread_mutex_t m;
static long counter;

static void *add(void *arg)
{
	for (int i = 0; i < ITERS; i++) {
		CHECK_OK(pthread_mutex_lock(&m));
		long c = counter;
		/* Hand the CPU over inside the critical section now and then, so
		 * user-level threads (not preempted) contend too. */
		if (i % 1000 == 0)
			sched_yield();
		counter = c + 1;
		CHECK_OK(pthread_mutex_unlock(&m));
	}
	return arg;
}

static pthread_mutex_t held;
static pthread_mutex_t gate_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int stage;

static void set_stage(int s)
{
	pthread_mutex_lock(&gate_m);
	stage = s;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_m);
}

static void wait_stage(int s)
{
	pthread_mutex_lock(&gate_m);
	while (stage < s)
		pthread_cond_wait(&gate_cv, &gate_m);
	pthread_mutex_unlock(&gate_m);
}

/* Holds `held` while the main thread probes it. */
static void *holder(void *arg)
{
	CHECK_OK(pthread_mutex_lock(&held));
	set_stage(1);
	wait_stage(2);
	CHECK_OK(pthread_mutex_unlock(&held));
	return arg;
}

static void *unlock_not_owner(void *arg)
{
	CHECK(pthread_mutex_unlock(arg) == EPERM);
	return NULL;
}

int main(void)
{
	CHECK_OK(pthread_mutex_init(&m, NULL));
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, add, NULL));
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK(counter == (long)THREADS * ITERS);
	CHECK_OK(pthread_mutex_destroy(&m));

	/* trylock and timedlock on a mutex another thread holds. */
	CHECK_OK(pthread_mutex_init(&held, NULL));
	pthread_t h;
	CHECK_OK(pthread_create(&h, NULL, holder, NULL));
	wait_stage(1);
	CHECK(pthread_mutex_trylock(&held) == EBUSY);
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_nsec += 20 * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	long long t0 = tp_now_ns();
	CHECK(pthread_mutex_timedlock(&held, &dl) == ETIMEDOUT);
	CHECK(tp_now_ns() - t0 >= 15 * 1000000LL);
	set_stage(2);
	CHECK_OK(pthread_join(h, NULL));
	CHECK_OK(pthread_mutex_trylock(&held));
	CHECK_OK(pthread_mutex_unlock(&held));
	CHECK_OK(pthread_mutex_destroy(&held));

	/* Recursive. */
	pthread_mutexattr_t ma;
	CHECK_OK(pthread_mutexattr_init(&ma));
	CHECK_OK(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE));
	int type;
	CHECK_OK(pthread_mutexattr_gettype(&ma, &type));
	CHECK(type == PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_t rm;
	CHECK_OK(pthread_mutex_init(&rm, &ma));
	for (int i = 0; i < 3; i++)
		CHECK_OK(pthread_mutex_lock(&rm));
	CHECK_OK(pthread_mutex_trylock(&rm));
	for (int i = 0; i < 4; i++)
		CHECK_OK(pthread_mutex_unlock(&rm));
	CHECK(pthread_mutex_unlock(&rm) == EPERM);
	CHECK_OK(pthread_mutex_destroy(&rm));

	/* Error checking: relock and unlock by a non-owner. */
	CHECK_OK(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK));
	pthread_mutex_t em;
	CHECK_OK(pthread_mutex_init(&em, &ma));
	CHECK_OK(pthread_mutex_lock(&em));
	CHECK(pthread_mutex_lock(&em) == EDEADLK);
	CHECK_OK(pthread_create(&h, NULL, unlock_not_owner, &em));
	CHECK_OK(pthread_join(h, NULL));
	CHECK_OK(pthread_mutex_unlock(&em));
	CHECK(pthread_mutex_unlock(&em) == EPERM);
	CHECK_OK(pthread_mutex_destroy(&em));
	CHECK_OK(pthread_mutexattr_destroy(&ma));
	puts("mutex: ok");
	return 0;
}
