/* Shared by the benchmark programs: a clock, argument parsing, and the one
 * result line each prints ("<label> <value> <unit> [key=value ...]", read by
 * bench/run).  Plain POSIX: the programs run natively and on libppl. */
#ifndef BENCH_H
#define BENCH_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline long long bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* argv[i] as a positive count, or dflt if absent; exits on a bad value. */
static inline long bench_arg(int argc, char **argv, int i, long dflt)
{
	if (argc <= i)
		return dflt;
	char *end;
	errno = 0;
	long v = strtol(argv[i], &end, 10);
	if (errno || *end != '\0' || v <= 0) {
		fprintf(stderr, "%s: argument %d: expected a positive number, got '%s'\n", argv[0], i,
			argv[i]);
		exit(2);
	}
	return v;
}

/* For calls that return 0 or an errno value. */
#define BENCH_OK(call)                                                                   \
	do {                                                                             \
		int bench_err_ = (call);                                                 \
		if (bench_err_ != 0) {                                                   \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,   \
				strerror(bench_err_));                                   \
			exit(1);                                                         \
		}                                                                        \
	} while (0)

/* calloc or exit. */
static inline void *bench_alloc(size_t n, size_t size)
{
	void *p = calloc(n, size);
	if (p == NULL) {
		perror("calloc");
		exit(1);
	}
	return p;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median of v[0..n-1], n > 0; sorts v. */
static inline double bench_median(double *v, size_t n)
{
	qsort(v, n, sizeof *v, bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
