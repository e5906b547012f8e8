/* bench_pipe_pingpong [N]: two threads pass a byte N times each way
 * (default 20000) through two pipes with blocking read/write: every read
 * blocks in the kernel until the other thread writes.  ns per hand-off.
 * On libppl each read is an announced call; with fewer VPs than threads
 * the monitor lends the blocked VP's queue to a spare kernel thread. */
#include <pthread.h>
#include <unistd.h>

#include "bench.h"

static int p[2][2];   /* p[i]: written by thread !i, read by thread i */
static long rounds;

static void *player(void *arg)
{
	long me = (long)(size_t)arg;
	char c = 'x';
	for (long i = 0; i < rounds; i++) {
		if (me == 0 && write(p[1][1], &c, 1) != 1)
			return (void *)1;
		if (read(p[me][0], &c, 1) != 1)
			return (void *)1;
		if (me == 1 && write(p[0][1], &c, 1) != 1)
			return (void *)1;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	rounds = bench_arg(argc, argv, 1, 20000);
	BENCH_OK(pipe(p[0]) == 0 ? 0 : 1);
	BENCH_OK(pipe(p[1]) == 0 ? 0 : 1);
	pthread_t t[2];
	long long t0 = bench_now_ns();
	for (long i = 0; i < 2; i++)
		BENCH_OK(pthread_create(&t[i], NULL, player, (void *)(size_t)i));
	for (int i = 0; i < 2; i++) {
		void *r;
		BENCH_OK(pthread_join(t[i], &r));
		BENCH_OK(r != NULL);
	}
	long long t1 = bench_now_ns();
	printf("pipe_pingpong %.1f ns/op n=%ld\n", (double)(t1 - t0) / (2.0 * rounds), rounds);
	return 0;
}
