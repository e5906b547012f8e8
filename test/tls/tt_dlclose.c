/* A thread that starts on a pooled TLS block is given every module's
 * static TLS image afresh, from a list of the modules with TLS that libppl
 * caches between changes (docs/tls.md): after dlclose unmaps a library
 * with initial-exec TLS, new threads must not copy from its image, and
 * after it is loaded again (possibly elsewhere) they start from the new
 * one.  Rounds of: dlopen the library, threads that check and dirty its
 * TLS, dlclose it, threads again (on the same pooled blocks). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_util.h"

#define ROUNDS 6
#define THREADS 4

static int (*get)(void);
static void (*set)(int);

static void *uses_lib(void *arg)
{
	CHECK(get() == 1234);   /* the image, not the last thread's value */
	set((int)(intptr_t)arg);
	CHECK(get() == (int)(intptr_t)arg);
	return NULL;
}

static void *plain(void *arg)
{
	return arg;
}

static void run(void *(*fn)(void *))
{
	pthread_t t[THREADS];
	for (long i = 0; i < THREADS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, fn, (void *)(intptr_t)(i + 1)));
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
}

/* Whether the library is still mapped (dlopen with RTLD_NOLOAD). */
static bool loaded(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	if (h)
		dlclose(h);
	return h != NULL;
}

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	alarm(60);
	run(plain);   /* pooled blocks from before the library */
	for (int r = 0; r < ROUNDS; r++) {
		void *h = dlopen(argv[1], RTLD_NOW);
		if (h == NULL) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 1;
		}
		get = (int (*)(void))dlsym(h, "tt_ie_get");
		set = (void (*)(int))dlsym(h, "tt_ie_set");
		CHECK(get && set);
		run(uses_lib);
		CHECK(dlclose(h) == 0);
		CHECK(!loaded(argv[1]));   /* unmapped: a stale image would fault */
		run(plain);
	}
	puts("ok");
	return 0;
}
