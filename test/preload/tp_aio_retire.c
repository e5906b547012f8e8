/* Kernel threads the C library makes for itself outlive the threads that
 * asked for them and libppl's VPs.  glibc's aio runs a request on a helper
 * thread it makes with its own pthread_create (aio_misc.c, inside the C
 * library: no thread library can interpose it), on whichever kernel thread
 * asked first; with PPL_VP_BACKEND=process that is a thread of the VP's
 * process.  Threads spread over the VPs each start an aio_read on a pipe
 * nobody writes yet, and end; the program is back to one thread long
 * enough for libppl's VPs to retire (PPL_RETIRE_MS, 20 ms by default);
 * then every pipe gets its byte and every request must complete (a helper
 * that died with its VP's process leaves its request in progress forever:
 * glibc's tst-cancel-libc's aio_suspend timed out so).  Twice, the second
 * time on helpers that went idle after the first. */
#include <aio.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tp_util.h"

#define NTHREADS 6
#define ROUNDS 2

static int pipes[NTHREADS][2];
static struct aiocb cbs[NTHREADS];
static char bufs[NTHREADS];
static atomic_int off_initial;   /* requests made off the initial process */
static atomic_bool spread;       /* some thread runs off the initial process */

/* The process of the calling kernel thread, as /proc/thread-self names it
 * (a VP process's own, with PPL_VP_BACKEND=process). */
static void *asker(void *arg)
{
	int i = (int)(long)arg;
	/* Spin a little so that the threads spread over the VPs (bounded:
	 * natively, or on one VP, nobody is ever elsewhere). */
	if (tp_spread_off_initial(&spread))
		atomic_fetch_add(&off_initial, 1);
	memset(&cbs[i], 0, sizeof cbs[i]);
	cbs[i].aio_fildes = pipes[i][0];
	cbs[i].aio_buf = &bufs[i];
	cbs[i].aio_nbytes = 1;
	CHECK(aio_read(&cbs[i]) == 0);
	return NULL;
}

int main(void)
{
	alarm(30);
	for (int i = 0; i < NTHREADS; i++)
		CHECK(pipe(pipes[i]) == 0);
	for (int round = 0; round < ROUNDS; round++) {
		atomic_store(&spread, false);
		pthread_t t[NTHREADS];
		for (int i = 0; i < NTHREADS; i++)
			CHECK_OK(pthread_create(&t[i], NULL, asker, (void *)(long)i));
		for (int i = 0; i < NTHREADS; i++)
			CHECK_OK(pthread_join(t[i], NULL));
		/* One thread, 300 ms: libppl's VPs retire (PPL_RETIRE_MS). */
		struct timespec pause_ts = { 0, 300000000 };
		nanosleep(&pause_ts, NULL);
		for (int i = 0; i < NTHREADS; i++) {
			char c = (char)('a' + i);
			CHECK(write(pipes[i][1], &c, 1) == 1);
		}
		for (int i = 0; i < NTHREADS; i++) {
			const struct aiocb *l[1] = { &cbs[i] };
			struct timespec ts = { 5, 0 };
			while (aio_error(&cbs[i]) == EINPROGRESS) {
				int r = aio_suspend(l, 1, &ts);
				if (r != 0 && errno == EAGAIN) {
					fprintf(stderr, "round %d: request %d of %d still in progress "
							"after 5 s (%d made off the initial process)\n",
						round, i, NTHREADS, atomic_load(&off_initial));
					exit(1);
				}
				CHECK(r == 0 || errno == EINTR);
			}
			CHECK(aio_error(&cbs[i]) == 0 && aio_return(&cbs[i]) == 1);
			CHECK(bufs[i] == (char)('a' + i));
		}
	}
	if (getenv("TP_VERBOSE"))
		printf("%d requests made off the initial process\n", atomic_load(&off_initial));
	return 0;
}
