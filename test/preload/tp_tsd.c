/* Thread-specific data: values per thread, destructors at thread exit
 * (including one that sets its value again), key deletion, pthread_once. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#include "tp_util.h"

#define THREADS 64

static pthread_key_t key, again_key;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long destroyed_sum;
static int destroyed_n, again_calls;

static void destroy(void *v)
{
	pthread_mutex_lock(&m);
	destroyed_sum += *(long *)v;
	destroyed_n++;
	pthread_mutex_unlock(&m);
	free(v);
}

/* Sets its value once more the first time: POSIX runs destructors again
 * (up to PTHREAD_DESTRUCTOR_ITERATIONS rounds) while values remain. */
static void destroy_again(void *v)
{
	pthread_mutex_lock(&m);
	again_calls++;
	pthread_mutex_unlock(&m);
	if ((intptr_t)v == 1)
		CHECK_OK(pthread_setspecific(again_key, (void *)2));
}

static void *worker(void *arg)
{
	CHECK(pthread_getspecific(key) == NULL);
	long *v = malloc(sizeof *v);
	CHECK(v != NULL);
	*v = (long)(intptr_t)arg;
	CHECK_OK(pthread_setspecific(key, v));
	for (int i = 0; i < 100; i++) {
		sched_yield(); /* let the other threads set theirs */
		CHECK(pthread_getspecific(key) == v);
		CHECK(*(long *)pthread_getspecific(key) == (long)(intptr_t)arg);
	}
	return NULL;
}

static void *set_again(void *arg)
{
	CHECK_OK(pthread_setspecific(again_key, (void *)1));
	return arg;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int once_runs;

static void once_init(void)
{
	sched_yield(); /* the other callers must wait, not skip */
	once_runs++;
}

static void *call_once(void *arg)
{
	CHECK_OK(pthread_once(&once, once_init));
	CHECK(once_runs == 1);
	return arg;
}

int main(void)
{
	CHECK_OK(pthread_key_create(&key, destroy));
	long main_value = -1;
	CHECK_OK(pthread_setspecific(key, &main_value));
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)(i + 1)));
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	/* Destructors ran in the exiting threads, before join returned. */
	CHECK(destroyed_n == THREADS);
	CHECK(destroyed_sum == (long)THREADS * (THREADS + 1) / 2);
	CHECK(pthread_getspecific(key) == &main_value);

	CHECK_OK(pthread_key_create(&again_key, destroy_again));
	CHECK_OK(pthread_create(&t[0], NULL, set_again, NULL));
	CHECK_OK(pthread_join(t[0], NULL));
	CHECK(again_calls == 2);

	/* A deleted key runs no destructor; a new key starts empty. */
	CHECK_OK(pthread_key_delete(key));
	pthread_key_t k2;
	CHECK_OK(pthread_key_create(&k2, NULL));
	CHECK(pthread_getspecific(k2) == NULL);
	CHECK_OK(pthread_key_delete(k2));
	CHECK_OK(pthread_key_delete(again_key));

	for (int i = 0; i < 16; i++)
		CHECK_OK(pthread_create(&t[i], NULL, call_once, NULL));
	for (int i = 0; i < 16; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK(once_runs == 1);
	puts("tsd: ok");
	return 0;
}
