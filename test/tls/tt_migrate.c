/* With per-thread TLS the main thread is no longer pinned to VP 0: it keeps
 * the process's original TLS block wherever it runs.  It sleeps many times
 * (a timer on whichever VP is idle makes it ready there) and must show up
 * on more than one VP, with its errno and __thread values intact.  The
 * other thread sleeps as often until then: a fixed 200 naps of its own
 * ended before main had moved once in a loaded rehearsal (process backend),
 * and alone main's timers make it ready where it parked.
 * Relinked only: it asks libppl where it runs (ppl.h). */
#include <stdatomic.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include <ppl.h>

#include "tp_util.h"

static __thread int mine = 5;
static atomic_int done;

static void *sleeper(void *arg)
{
	while (!atomic_load(&done)) {
		struct timespec ts = { 0, 50000 };
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int main(void)
{
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, sleeper, NULL));   /* starts the VPs */
	if (ppl_vp_count() < 2) {
		atomic_store(&done, 1);
		CHECK_OK(pthread_join(t, NULL));
		puts("skip: one VP");
		return 77;
	}
	unsigned long seen = 0;
	mine = 11;
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += 20;
	for (int i = 0; __builtin_popcountl(seen) < 2; i++) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > until.tv_sec ||
		    (now.tv_sec == until.tv_sec && now.tv_nsec > until.tv_nsec))
			break;
		errno = 1000 + i;
		struct timespec ts = { 0, 20000 };
		CHECK(clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL) == 0);
		CHECK(errno == 1000 + i);
		CHECK(mine == 11);
		int vp = ppl_current_vp();
		CHECK(vp >= 0);
		seen |= 1ul << (vp % 64);
	}
	atomic_store(&done, 1);
	CHECK_OK(pthread_join(t, NULL));
	printf("main ran on %d VPs\n", __builtin_popcountl(seen));
	CHECK(__builtin_popcountl(seen) >= 2);
	puts("ok");
	return 0;
}
