/* bench_mutex [THREADS] [N]: lock+unlock of one default mutex, N times per
 * thread (default 1 thread, 10^7 times).  One thread: the uncontended path,
 * in the main thread, measured twice: while the process is single-threaded
 * (glibc then skips the bus lock) and again with a second thread alive;
 * more: all of them hammer the same mutex.
 * ns per lock+unlock pair, over all threads. */
#include <pthread.h>

#include "bench.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long per_thread;
static long counter;

static void *hammer(void *arg)
{
	for (long i = 0; i < per_thread; i++) {
		BENCH_OK(pthread_mutex_lock(&m));
		counter++;
		BENCH_OK(pthread_mutex_unlock(&m));
	}
	return arg;
}

static void *wait_barrier(void *arg)
{
	pthread_barrier_wait(arg);
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = bench_arg(argc, argv, 1, 1);
	per_thread = bench_arg(argc, argv, 2, 10000000);
	pthread_t *t = calloc((size_t)threads, sizeof *t);
	if (t == NULL) {
		perror("calloc");
		return 1;
	}
	long long t0 = bench_now_ns();
	if (threads == 1) {
		hammer(NULL);
		long long t1 = bench_now_ns();
		printf("mutex-uncontended %.2f ns/op n=%ld\n", (double)(t1 - t0) / per_thread, per_thread);
		/* Now with another thread alive, parked on a barrier. */
		pthread_barrier_t b;
		BENCH_OK(pthread_barrier_init(&b, NULL, 2));
		BENCH_OK(pthread_create(&t[0], NULL, wait_barrier, &b));
		t0 = bench_now_ns();
		hammer(NULL);
		t1 = bench_now_ns();
		printf("mutex-uncontended-mt %.2f ns/op n=%ld\n", (double)(t1 - t0) / per_thread, per_thread);
		pthread_barrier_wait(&b);   /* 0 or PTHREAD_BARRIER_SERIAL_THREAD */
		BENCH_OK(pthread_join(t[0], NULL));
		free(t);
		return 0;
	} else {
		for (long i = 0; i < threads; i++)
			BENCH_OK(pthread_create(&t[i], NULL, hammer, NULL));
		for (long i = 0; i < threads; i++)
			BENCH_OK(pthread_join(t[i], NULL));
	}
	long long t1 = bench_now_ns();
	if (counter != threads * per_thread) {
		fprintf(stderr, "bench_mutex: counter %ld, want %ld\n", counter, threads * per_thread);
		return 1;
	}
	double ns = (double)(t1 - t0) / ((double)threads * per_thread);
	printf("mutex-contended-%ld %.2f ns/op n=%ld\n", threads, ns, per_thread);
	free(t);
	return 0;
}
