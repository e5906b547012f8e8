/* bench_yield [N]: two threads pass a turn back and forth N times (default
 * 200000), each waiting for its turn with sched_yield; the process is
 * pinned to one CPU first, so both libraries switch on one core (run it
 * with PPL_VPS=1 on libppl).  ns per hand-off. */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "bench.h"

static _Atomic long turn; /* even: thread 0 moves, odd: thread 1 */
static long rounds;

static void *player(void *arg)
{
	long me = (long)(size_t)arg;
	for (long i = 0; i < rounds; i++) {
		while ((atomic_load_explicit(&turn, memory_order_acquire) & 1) != me)
			sched_yield();
		atomic_fetch_add_explicit(&turn, 1, memory_order_release);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	rounds = bench_arg(argc, argv, 1, 200000);
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
	pthread_t t[2];
	long long t0 = bench_now_ns();
	for (long i = 0; i < 2; i++)
		BENCH_OK(pthread_create(&t[i], NULL, player, (void *)(size_t)i));
	for (int i = 0; i < 2; i++)
		BENCH_OK(pthread_join(t[i], NULL));
	long long t1 = bench_now_ns();
	if (atomic_load(&turn) != 2 * rounds) {
		fprintf(stderr, "bench_yield: %ld hand-offs, want %ld\n", atomic_load(&turn), 2 * rounds);
		return 1;
	}
	printf("yield %.1f ns/op n=%ld cpu=%d\n", (double)(t1 - t0) / (2.0 * rounds), rounds, cpu);
	return 0;
}
