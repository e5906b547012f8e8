/* bench_barrier [THREADS] [N]: THREADS threads (default 4) meet at one
 * barrier N times (default 100000).  ns per barrier round (all threads
 * through). */
#include <pthread.h>

#include "bench.h"

static pthread_barrier_t barrier;
static long rounds;
static long serials;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
	long serial = 0;
	for (long i = 0; i < rounds; i++) {
		int r = pthread_barrier_wait(&barrier);
		if (r == PTHREAD_BARRIER_SERIAL_THREAD)
			serial++;
		else if (r != 0)
			BENCH_OK(r);
	}
	BENCH_OK(pthread_mutex_lock(&count_lock));
	serials += serial;
	BENCH_OK(pthread_mutex_unlock(&count_lock));
	return arg;
}

int main(int argc, char **argv)
{
	long threads = bench_arg(argc, argv, 1, 4);
	rounds = bench_arg(argc, argv, 2, 100000);
	pthread_t *t = bench_alloc((size_t)threads, sizeof *t);
	BENCH_OK(pthread_barrier_init(&barrier, NULL, (unsigned)threads));
	long long t0 = bench_now_ns();
	for (long i = 0; i < threads; i++)
		BENCH_OK(pthread_create(&t[i], NULL, worker, NULL));
	for (long i = 0; i < threads; i++)
		BENCH_OK(pthread_join(t[i], NULL));
	long long t1 = bench_now_ns();
	BENCH_OK(pthread_barrier_destroy(&barrier));
	/* Exactly one thread per round gets PTHREAD_BARRIER_SERIAL_THREAD. */
	if (serials != rounds) {
		fprintf(stderr, "bench_barrier: %ld serial threads in %ld rounds\n", serials,
			rounds);
		return 1;
	}
	printf("barrier-%ld %.1f ns/op n=%ld\n", threads, (double)(t1 - t0) / rounds, rounds);
	free(t);
	return 0;
}
