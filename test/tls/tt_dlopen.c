/* A library with initial-exec TLS loaded while user threads exist must be
 * initialised in their blocks (per-thread TLS: libppl wraps dlopen). */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tp_util.h"

#define N 8

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int loaded;
static int (*get)(void);
static void (*set)(int);

static void *worker(void *arg)
{
	long id = (long)(intptr_t)arg;
	pthread_mutex_lock(&mu);
	while (!loaded)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	CHECK(get() == 1234);
	set((int)id);
	for (int i = 0; i < 100; i++) {
		sched_yield();
		CHECK(get() == (int)id);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	pthread_t t[N];
	for (long i = 0; i < N; i++)
		CHECK_OK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)(i + 1)));
	for (int i = 0; i < 20; i++)
		sched_yield();   /* let them start and wait */
	void *h = dlopen(argv[1], RTLD_NOW);
	if (h == NULL) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	get = (int (*)(void))dlsym(h, "tt_ie_get");
	set = (void (*)(int))dlsym(h, "tt_ie_set");
	CHECK(get && set);
	CHECK(get() == 1234);
	pthread_mutex_lock(&mu);
	loaded = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < N; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	/* Threads created afterwards start from the image as well. */
	CHECK_OK(pthread_create(&t[0], NULL, worker, (void *)(intptr_t)99));
	CHECK_OK(pthread_join(t[0], NULL));
	CHECK(get() == 1234);
	puts("ok");
	return 0;
}
