/* A library with initial-exec TLS loaded while user threads exist must be
 * initialised in their blocks (per-thread TLS: libppl wraps dlopen); a
 * library with dynamic TLS must start from its image in every thread,
 * also in a thread whose pooled block a previous thread used. */
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
static int (*gd_get)(void);
static void (*gd_set)(int);

static void *worker(void *arg)
{
	long id = (long)(intptr_t)arg;
	pthread_mutex_lock(&mu);
	while (!loaded)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	CHECK(get() == 1234);
	CHECK(gd_get() == 77);
	set((int)id);
	gd_set((int)id + 1000);
	for (int i = 0; i < 100; i++) {
		sched_yield();
		CHECK(get() == (int)id);
		CHECK(gd_get() == (int)id + 1000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	CHECK(argc == 3);
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
	void *g = dlopen(argv[2], RTLD_NOW);
	CHECK(g != NULL);
	gd_get = (int (*)(void))dlsym(g, "tt_gd_get");
	gd_set = (void (*)(int))dlsym(g, "tt_gd_set");
	CHECK(gd_get && gd_set);
	CHECK(get() == 1234);
	pthread_mutex_lock(&mu);
	loaded = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < N; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	/* Threads created afterwards (on reused blocks) start from the images. */
	for (int round = 0; round < 3; round++) {
		for (long i = 0; i < N; i++)
			CHECK_OK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)(100 + i)));
		for (int i = 0; i < N; i++)
			CHECK_OK(pthread_join(t[i], NULL));
	}
	CHECK(get() == 1234);
	CHECK(gd_get() == 77);
	puts("ok");
	return 0;
}
