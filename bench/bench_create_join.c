/* bench_create_join [N]: create and join one thread, N times (default
 * 20000); ns per create+join pair. */
#include <pthread.h>

#include "bench.h"

static void *nothing(void *arg)
{
	return arg;
}

int main(int argc, char **argv)
{
	long n = bench_arg(argc, argv, 1, 20000);
	pthread_t t;
	for (int i = 0; i < 100; i++) { /* warm the caches of both libraries */
		BENCH_OK(pthread_create(&t, NULL, nothing, NULL));
		BENCH_OK(pthread_join(t, NULL));
	}
	long long t0 = bench_now_ns();
	for (long i = 0; i < n; i++) {
		BENCH_OK(pthread_create(&t, NULL, nothing, NULL));
		BENCH_OK(pthread_join(t, NULL));
	}
	long long t1 = bench_now_ns();
	printf("create_join %.1f ns/op n=%ld\n", (double)(t1 - t0) / n, n);
	return 0;
}
