/* matmul [N]: the PPL paper's demonstration, C = A x B for N x N matrices
 * (default 256) with one thread per row of C, as an unmodified pthread
 * program.  Prints the time of the threaded multiplication (create, compute,
 * join) after checking the result against a sequential one. */
#include <pthread.h>

#include "bench.h"

static long n;
static double *a, *b, *c;

static void row(long i, double *out)
{
	for (long j = 0; j < n; j++)
		out[j] = 0.0;
	for (long k = 0; k < n; k++) {
		double aik = a[i * n + k];
		for (long j = 0; j < n; j++)
			out[j] += aik * b[k * n + j];
	}
}

static void *row_thread(void *arg)
{
	long i = (long)(size_t)arg;
	row(i, &c[i * n]);
	return NULL;
}

int main(int argc, char **argv)
{
	n = bench_arg(argc, argv, 1, 256);
	a = malloc(sizeof *a * n * n);
	b = malloc(sizeof *b * n * n);
	c = malloc(sizeof *c * n * n);
	double *check = malloc(sizeof *check * n);
	pthread_t *t = malloc(sizeof *t * n);
	if (!a || !b || !c || !check || !t) {
		perror("malloc");
		return 1;
	}
	for (long i = 0; i < n * n; i++) {
		a[i] = (double)(i % 17) - 8.0;
		b[i] = (double)(i % 13) * 0.5;
	}

	long long t0 = bench_now_ns();
	for (long i = 0; i < n; i++)
		BENCH_OK(pthread_create(&t[i], NULL, row_thread, (void *)(size_t)i));
	for (long i = 0; i < n; i++)
		BENCH_OK(pthread_join(t[i], NULL));
	long long t1 = bench_now_ns();

	/* Same operations in the same order: the results are bit-identical. */
	for (long i = 0; i < n; i += (n > 16 ? n / 16 : 1)) {
		row(i, check);
		if (memcmp(check, &c[i * n], sizeof *check * n) != 0) {
			fprintf(stderr, "matmul: row %ld differs from the sequential result\n", i);
			return 1;
		}
	}
	printf("matmul-%ld %.3f ms threads=%ld\n", n, (t1 - t0) / 1e6, n);
	return 0;
}
