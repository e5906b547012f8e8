/* An OpenMP program (libgomp: its own pool of pthreads, barriers on raw
 * futex system calls) gives the right answers: parallel for with a
 * reduction, explicit barriers, and a critical section, many regions. */
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

#include "../preload/tp_util.h"

#define N 100000
#define ROUNDS 20

static double a[N];

int main(void)
{
	alarm(120);
	omp_set_num_threads(4);
	for (int round = 0; round < ROUNDS; round++) {
		long sum = 0;
#pragma omp parallel for reduction(+ : sum)
		for (long i = 0; i < N; i++)
			sum += i % 7;
		long want = 0;
		for (long i = 0; i < N; i++)
			want += i % 7;
		CHECK(sum == want);

		int phase_ok = 1, count = 0;
#pragma omp parallel shared(phase_ok, count)
		{
			int me = omp_get_thread_num(), n = omp_get_num_threads();
			for (long i = me; i < N; i += n)
				a[i] = (double)i;
#pragma omp barrier
			/* Every element was written before anyone passed the barrier. */
			for (long i = 0; i < N; i += 997)
				if (a[i] != (double)i)
					phase_ok = 0;
#pragma omp critical
			count++;
#pragma omp barrier
#pragma omp single
			CHECK(count == n);
		}
		CHECK(phase_ok);
	}
	printf("%d rounds on %d threads: right answers\n", ROUNDS, 4);
	return 0;
}
