/* Statically initialised objects, used from several threads without any
 * init call: all of glibc's initialisers, the _NP ones included. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include "tp_util.h"

#define THREADS 8
#define ITERS 10000

static pthread_mutex_t plain = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_mutex_t adaptive = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t rw_writer = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static long n_plain, n_recursive, n_adaptive, n_rw, n_rw_writer;
static int once_runs, arrived;

static void count_once(void)
{
	once_runs++;
}

static void *worker(void *arg)
{
	CHECK_OK(pthread_once(&once, count_once));
	for (int i = 0; i < ITERS; i++) {
		CHECK_OK(pthread_mutex_lock(&plain));
		n_plain++;
		CHECK_OK(pthread_mutex_unlock(&plain));

		CHECK_OK(pthread_mutex_lock(&recursive));
		CHECK_OK(pthread_mutex_lock(&recursive));
		n_recursive++;
		if (i % 500 == 0)
			sched_yield();
		CHECK_OK(pthread_mutex_unlock(&recursive));
		CHECK_OK(pthread_mutex_unlock(&recursive));

		CHECK_OK(pthread_mutex_lock(&adaptive));
		n_adaptive++;
		CHECK_OK(pthread_mutex_unlock(&adaptive));

		CHECK_OK(pthread_rwlock_wrlock(&rw));
		n_rw++;
		CHECK_OK(pthread_rwlock_unlock(&rw));
		CHECK_OK(pthread_rwlock_rdlock(&rw));
		CHECK(n_rw > 0);
		CHECK_OK(pthread_rwlock_unlock(&rw));

		CHECK_OK(pthread_rwlock_wrlock(&rw_writer));
		n_rw_writer++;
		CHECK_OK(pthread_rwlock_unlock(&rw_writer));
	}
	/* Meet on the static condition variable. */
	CHECK_OK(pthread_mutex_lock(&plain));
	arrived++;
	CHECK_OK(pthread_cond_broadcast(&cv));
	while (arrived < THREADS)
		CHECK_OK(pthread_cond_wait(&cv, &plain));
	CHECK_OK(pthread_mutex_unlock(&plain));
	return arg;
}

static void *unlock_foreign(void *arg)
{
	CHECK(pthread_mutex_unlock(&errorcheck) == EPERM);
	return arg;
}

int main(void)
{
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, worker, NULL));
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	long want = (long)THREADS * ITERS;
	CHECK(n_plain == want && n_recursive == want && n_adaptive == want);
	CHECK(n_rw == want && n_rw_writer == want);
	CHECK(once_runs == 1 && arrived == THREADS);

	/* The error-checking initialiser really makes an error-checking mutex. */
	CHECK_OK(pthread_mutex_lock(&errorcheck));
	CHECK(pthread_mutex_lock(&errorcheck) == EDEADLK);
	pthread_t u;
	CHECK_OK(pthread_create(&u, NULL, unlock_foreign, NULL));
	CHECK_OK(pthread_join(u, NULL));
	CHECK_OK(pthread_mutex_unlock(&errorcheck));

	/* And the recursive one a recursive mutex, from the main thread too. */
	CHECK_OK(pthread_mutex_lock(&recursive));
	CHECK_OK(pthread_mutex_trylock(&recursive));
	CHECK_OK(pthread_mutex_unlock(&recursive));
	CHECK_OK(pthread_mutex_unlock(&recursive));
	puts("static: ok");
	return 0;
}
