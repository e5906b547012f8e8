/* bench_rwlock [THREADS] [N] [WRITES_PER_1000]: THREADS threads (default 4)
 * each take one default rwlock N times (default 10^6): a read lock, or a
 * write lock for WRITES_PER_1000 of every 1000 operations (default 10: a
 * read-mostly table).  Readers sum a small table, writers bump one entry.
 * ns per lock+unlock pair, over all threads. */
#include <pthread.h>
#include <stdatomic.h>

#include "bench.h"

#define TABLE 16

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static long table[TABLE];
static long per_thread, writes_per_1000;
static long writes_done;
static _Atomic long sink; /* keeps the readers' sums live */

static void *worker(void *arg)
{
	long id = (long)(size_t)arg;
	long sum = 0, writes = 0;
	for (long i = 0; i < per_thread; i++) {
		/* Spread the writes evenly; threads are offset so they do not
		 * all write in the same iteration. */
		if ((i + id * 7) % 1000 < writes_per_1000) {
			BENCH_OK(pthread_rwlock_wrlock(&lock));
			table[i % TABLE]++;
			writes_done++;
			BENCH_OK(pthread_rwlock_unlock(&lock));
			writes++;
		} else {
			BENCH_OK(pthread_rwlock_rdlock(&lock));
			for (int k = 0; k < TABLE; k++)
				sum += table[k];
			BENCH_OK(pthread_rwlock_unlock(&lock));
		}
	}
	atomic_fetch_add_explicit(&sink, sum, memory_order_relaxed);
	return (void *)(size_t)writes;
}

int main(int argc, char **argv)
{
	long threads = bench_arg(argc, argv, 1, 4);
	per_thread = bench_arg(argc, argv, 2, 1000000);
	writes_per_1000 = argc > 3 ? atol(argv[3]) : 10;
	if (writes_per_1000 < 0 || writes_per_1000 > 1000) {
		fprintf(stderr, "bench_rwlock: WRITES_PER_1000 must be 0 to 1000\n");
		return 2;
	}
	pthread_t *t = bench_alloc((size_t)threads, sizeof *t);
	long long t0 = bench_now_ns();
	for (long i = 0; i < threads; i++)
		BENCH_OK(pthread_create(&t[i], NULL, worker, (void *)(size_t)i));
	long writes = 0;
	for (long i = 0; i < threads; i++) {
		void *ret;
		BENCH_OK(pthread_join(t[i], &ret));
		writes += (long)(size_t)ret;
	}
	long long t1 = bench_now_ns();
	long total = 0;
	for (int k = 0; k < TABLE; k++)
		total += table[k];
	if (total != writes_done || writes_done != writes) {
		fprintf(stderr, "bench_rwlock: %ld writes in the table, %ld counted, %ld made\n",
			total, writes_done, writes);
		return 1;
	}
	printf("rwlock-%ld %.2f ns/op n=%ld writes_per_1000=%ld\n", threads,
	       (double)(t1 - t0) / ((double)threads * per_thread), per_thread, writes_per_1000);
	free(t);
	return 0;
}
