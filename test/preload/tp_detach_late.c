/* A detached thread that has ended, joined or detached again soon after:
 * EINVAL, as glibc says while nothing reused its descriptor (only a new
 * pthread_create does; the Open POSIX pthread_attr_setdetachstate/2-1
 * relies on it).  Here the threads of a burst are still ending, kernel
 * threads come and go meanwhile (libppl's idle VPs, whose exit runs
 * libgcc's unwinder, which calls pthread_once from a kernel thread libppl
 * did not make), and nothing but the test creates threads.  Before libppl
 * gave such kernel threads a TCB never used, one took the TCB of the
 * thread that had just ended: ESRCH, 3 of 3 runs. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tp_util.h"

#define BURST 200
#define LATE 30

static void *ret_arg(void *a)
{
	return a;
}

int main(void)
{
	alarm(60);
	/* Small stacks: glibc's stack cache (40 MiB) keeps every one, so
	 * that NPTL's descriptors of ended threads stay mapped (with its
	 * default 8 MiB stacks it unmaps the oldest: a late join faults). */
	pthread_attr_t a, j;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_init(&j));
	CHECK_OK(pthread_attr_setstacksize(&a, 64 * 1024));
	CHECK_OK(pthread_attr_setstacksize(&j, 64 * 1024));
	CHECK_OK(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED));
	for (int i = 0; i < BURST; i++) {
		pthread_t d;
		if (i % 2) {
			CHECK_OK(pthread_create(&d, &a, ret_arg, NULL));
		} else {
			CHECK_OK(pthread_create(&d, &j, ret_arg, NULL));
			CHECK_OK(pthread_detach(d));
		}
	}
	int bad = 0;
	for (int i = 0; i < LATE; i++) {
		pthread_t d;
		CHECK_OK(pthread_create(&d, &a, ret_arg, NULL));
		struct timespec nap = { 0, 20 * 1000 * 1000 };
		nanosleep(&nap, NULL);
		int j = pthread_join(d, NULL), k = pthread_detach(d);
		if (j != EINVAL || k != EINVAL) {
			fprintf(stderr, "late %d: join %s, detach %s (want EINVAL)\n", i, strerror(j),
				strerror(k));
			bad++;
		}
	}
	CHECK_OK(pthread_attr_destroy(&a));
	CHECK_OK(pthread_attr_destroy(&j));
	if (bad)
		return 1;
	printf("%d late joins and detaches of ended detached threads: EINVAL\n", LATE);
	return 0;
}
