/* bench_cond_pingpong [N]: two threads pass a token N times each way
 * (default 100000) with a mutex and one condition variable per thread.
 * ns per hand-off. */
#include <pthread.h>

#include "bench.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv[2] = { PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER };
static long turn; /* even: thread 0 holds the token */
static long rounds;

static void *player(void *arg)
{
	long me = (long)(size_t)arg;
	BENCH_OK(pthread_mutex_lock(&m));
	for (long i = 0; i < rounds; i++) {
		while ((turn & 1) != me)
			BENCH_OK(pthread_cond_wait(&cv[me], &m));
		turn++;
		BENCH_OK(pthread_cond_signal(&cv[!me]));
	}
	BENCH_OK(pthread_mutex_unlock(&m));
	return NULL;
}

int main(int argc, char **argv)
{
	rounds = bench_arg(argc, argv, 1, 100000);
	pthread_t t[2];
	long long t0 = bench_now_ns();
	for (long i = 0; i < 2; i++)
		BENCH_OK(pthread_create(&t[i], NULL, player, (void *)(size_t)i));
	for (int i = 0; i < 2; i++)
		BENCH_OK(pthread_join(t[i], NULL));
	long long t1 = bench_now_ns();
	if (turn != 2 * rounds) {
		fprintf(stderr, "bench_cond_pingpong: %ld hand-offs, want %ld\n", turn, 2 * rounds);
		return 1;
	}
	printf("cond_pingpong %.1f ns/op n=%ld\n", (double)(t1 - t0) / (2.0 * rounds), rounds);
	return 0;
}
