/* bench_yield [N] [REPEAT]: two threads pass a turn back and forth N times
 * (default 200000), each waiting for its turn with sched_yield; the process
 * is pinned to one CPU first, so both libraries switch on one core (run it
 * with PPL_VPS=1 on libppl).  The clock starts once both threads are
 * running and stops at the last hand-off, so thread creation is not timed.
 * REPEAT (default 1) runs the whole experiment that many times in one
 * process and reports the median: the PPL paper's "1,000 context switches
 * between two threads" is `bench_yield 500 21` (500 rounds, two hand-offs
 * each).  Prints ns per hand-off and the total in microseconds. */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "bench.h"

static _Atomic long turn;  /* even: thread 0 moves, odd: thread 1 */
static _Atomic int ready;  /* threads at the start line */
static long rounds;
static long long t_start, t_end;

static void *player(void *arg)
{
	long me = (long)(size_t)arg;
	atomic_fetch_add_explicit(&ready, 1, memory_order_acq_rel);
	while (atomic_load_explicit(&ready, memory_order_acquire) < 2)
		sched_yield();
	if (me == 0)
		t_start = bench_now_ns();
	for (long i = 0; i < rounds; i++) {
		while ((atomic_load_explicit(&turn, memory_order_acquire) & 1) != me)
			sched_yield();
		/* Thread 1 makes the last move: its clock read ends the run. */
		if (me == 1 && i == rounds - 1)
			t_end = bench_now_ns();
		atomic_fetch_add_explicit(&turn, 1, memory_order_release);
	}
	return NULL;
}

static double one_run(void)
{
	pthread_t t[2];
	atomic_store(&turn, 0);
	atomic_store(&ready, 0);
	for (long i = 0; i < 2; i++)
		BENCH_OK(pthread_create(&t[i], NULL, player, (void *)(size_t)i));
	for (int i = 0; i < 2; i++)
		BENCH_OK(pthread_join(t[i], NULL));
	if (atomic_load(&turn) != 2 * rounds) {
		fprintf(stderr, "bench_yield: %ld hand-offs, want %ld\n", atomic_load(&turn),
			2 * rounds);
		exit(1);
	}
	return (double)(t_end - t_start);
}

int main(int argc, char **argv)
{
	rounds = bench_arg(argc, argv, 1, 200000);
	long repeat = bench_arg(argc, argv, 2, 1);
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) != 0) {
		perror("sched_getaffinity");
		return 1;
	}
	int cpu = 0;
	while (!CPU_ISSET(cpu, &set))
		cpu++;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0) {
		perror("sched_setaffinity");
		return 1;
	}
	double *ns = bench_alloc((size_t)repeat, sizeof *ns);
	for (long r = 0; r < repeat; r++)
		ns[r] = one_run();
	double med = bench_median(ns, (size_t)repeat);
	/* Hand-offs: 2 * rounds - 1 between the two clock reads. */
	printf("yield %.1f ns/op n=%ld repeat=%ld total_us=%.1f cpu=%d\n", med / (2.0 * rounds - 1),
	       rounds, repeat, med / 1e3, cpu);
	free(ns);
	return 0;
}
