/* Cost of preemption on a compute-bound program: THREADS threads each run
 * a fixed amount of pure computation (no library calls, no blocking), all
 * started together.  Run on libppl with PPL_VPS=1 and the default time
 * slice, then with PPL_TIMESLICE_US=0 (no preemption): the difference is
 * what the ticks and the preemption switches cost.  Prints ns per
 * iteration of the inner loop, summed over the threads. */
#include <pthread.h>

#include "bench.h"

static long iters;

static void *compute(void *arg)
{
	unsigned long x = (unsigned long)arg + 1;
	for (long i = 0; i < iters; i++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;   /* an LCG step */
		__asm__ volatile("" : "+r"(x));
	}
	return (void *)(x & 1);
}

int main(int argc, char **argv)
{
	long threads = bench_arg(argc, argv, 1, 4);
	iters = bench_arg(argc, argv, 2, 500000000);
	pthread_t *t = malloc((size_t)threads * sizeof *t);
	if (t == NULL)
		return 1;
	long long t0 = bench_now_ns();
	for (long i = 0; i < threads; i++)
		BENCH_OK(pthread_create(&t[i], NULL, compute, (void *)i));
	for (long i = 0; i < threads; i++)
		BENCH_OK(pthread_join(t[i], NULL));
	long long ns = bench_now_ns() - t0;
	printf("compute %.4f ns/iter threads=%ld iters=%ld total_ms=%lld\n",
	       (double)ns / ((double)iters * (double)threads), threads, iters, ns / 1000000);
	free(t);
	return 0;
}
