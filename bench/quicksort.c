/* quicksort [N] [CUTOFF]: after Ariadne's parallel quicksort (its Fig. 3),
 * sort N pseudo-random ints (default 10^6) with a thread per partition:
 * each partition step hands its left part to a new thread, sorts its right
 * part itself and joins; parts of CUTOFF elements or fewer (default 1000)
 * are sorted sequentially by the thread that owns them.
 * Prints the time of the sort in ms and the number of threads made, after
 * checking the result. */
#include <pthread.h>
#include <stdatomic.h>

#include "bench.h"

struct part {
	int *lo;
	long n;
};

static long cutoff;
static _Atomic long threads_made;

/* Hoare partition, n >= 2: returns k with [0, k) <= pivot <= [k, n) and
 * 0 < k < n.  The pivot is the median of three, moved to the lower middle:
 * a pivot at index n - 1 could give k == n and no progress. */
static long partition(int *a, long n)
{
	long m = (n - 1) / 2, lo = 0, hi = n - 1;
	long med = a[lo] < a[m] ? (a[m] < a[hi] ? m : (a[lo] < a[hi] ? hi : lo))
				: (a[lo] < a[hi] ? lo : (a[m] < a[hi] ? hi : m));
	int pivot = a[med];
	a[med] = a[m];
	a[m] = pivot;
	long i = -1, j = n;
	for (;;) {
		do
			i++;
		while (a[i] < pivot);
		do
			j--;
		while (a[j] > pivot);
		if (i >= j)
			return j + 1;
		int tmp = a[i];
		a[i] = a[j];
		a[j] = tmp;
	}
}

static void sort_seq(int *a, long n)
{
	while (n > 1) {
		long k = partition(a, n);
		/* Recurse on the smaller side: the stack stays O(log n). */
		if (k < n - k) {
			sort_seq(a, k);
			a += k;
			n -= k;
		} else {
			sort_seq(a + k, n - k);
			n = k;
		}
	}
}

static void *sort_thread(void *arg)
{
	struct part *p = arg;
	if (p->n > cutoff) {
		long k = partition(p->lo, p->n);
		struct part left = { p->lo, k };
		pthread_t t;
		BENCH_OK(pthread_create(&t, NULL, sort_thread, &left));
		atomic_fetch_add_explicit(&threads_made, 1, memory_order_relaxed);
		struct part right = { p->lo + k, p->n - k };
		sort_thread(&right);
		BENCH_OK(pthread_join(t, NULL));
		return NULL;
	}
	sort_seq(p->lo, p->n);
	return NULL;
}

int main(int argc, char **argv)
{
	long n = bench_arg(argc, argv, 1, 1000000);
	cutoff = bench_arg(argc, argv, 2, 1000);
	int *a = bench_alloc((size_t)n, sizeof *a);
	unsigned long long s = 88172645463325252ULL; /* xorshift64: same input every run */
	long long sum = 0;
	for (long i = 0; i < n; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		a[i] = (int)(s % 1000000007ULL);
		sum += a[i];
	}
	struct part all = { a, n };
	long long t0 = bench_now_ns();
	sort_thread(&all);
	long long t1 = bench_now_ns();
	for (long i = 1; i < n; i++) {
		if (a[i - 1] > a[i]) {
			fprintf(stderr, "quicksort: a[%ld] > a[%ld]\n", i - 1, i);
			return 1;
		}
		sum -= a[i];
	}
	if (sum != a[0]) {
		fprintf(stderr, "quicksort: the elements changed\n");
		return 1;
	}
	printf("quicksort-%ld %.3f ms cutoff=%ld threads=%ld\n", n, (t1 - t0) / 1e6, cutoff,
	       atomic_load(&threads_made));
	free(a);
	return 0;
}
