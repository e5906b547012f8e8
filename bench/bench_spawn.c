/* bench_spawn [N] [REPEAT]: create N threads (default 100) with default
 * attributes, one after another, then join them all: the PPL paper's
 * "generating 100 threads".  REPEAT (default 21) runs it that many times in
 * one process; prints the median total in microseconds and per thread. */
#include <pthread.h>

#include "bench.h"

static void *nothing(void *arg)
{
	return arg;
}

int main(int argc, char **argv)
{
	long n = bench_arg(argc, argv, 1, 100);
	long repeat = bench_arg(argc, argv, 2, 21);
	pthread_t *t = bench_alloc((size_t)n, sizeof *t);
	double *ns = bench_alloc((size_t)repeat, sizeof *ns);
	for (long r = 0; r < repeat; r++) {
		long long t0 = bench_now_ns();
		for (long i = 0; i < n; i++)
			BENCH_OK(pthread_create(&t[i], NULL, nothing, (void *)(size_t)i));
		for (long i = 0; i < n; i++) {
			void *ret;
			BENCH_OK(pthread_join(t[i], &ret));
			if (ret != (void *)(size_t)i) {
				fprintf(stderr, "bench_spawn: thread %ld returned %p\n", i, ret);
				return 1;
			}
		}
		ns[r] = (double)(bench_now_ns() - t0);
	}
	double med = bench_median(ns, (size_t)repeat);
	printf("spawn-%ld %.1f us n=%ld repeat=%ld per_thread_ns=%.1f\n", n, med / 1e3, n, repeat,
	       med / n);
	free(ns);
	free(t);
	return 0;
}
