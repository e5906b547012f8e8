/* A new thread does not wait long behind threads pinned to CPUs that spin
 * on a C library call that reads the CPU or the time: glibc's
 * tst-thread-affinity-* tests start unpinned threads beside one spinner
 * pinned to each CPU (calling sched_getcpu()) and time out when those
 * threads start late.  Under libppl each spinner shares a VP with the
 * unpinned threads, and a tick that lands inside the C library or the
 * vDSO is deferred; before such calls paid the debt on their way out, a
 * spinner kept its VP for dozens of ticks (only those that happened to
 * land in its own loop counted), and a new thread waited seconds under
 * load.  Measured in the spinners' CPU time, which load does not stretch:
 * what they burn while a new thread waits to run, per round, with the
 * spinners calling sched_getcpu and getcpu, then time and gettimeofday,
 * then clock_gettime. */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/time.h>
#include <unistd.h>

#include "tp_util.h"

#define ROUNDS 8
/* The mean a round may cost: a time slice is 10 ms of a VP's CPU time, a
 * thread that starts in one keeps the next too, and on one VP a round
 * waits for both spinners' slices (about 30 ms there, 12 ms on two VPs;
 * natively 1 ms).  With the ticks deferred (sched_getcpu): 58 to 148 ms
 * on two VPs, 107 to 308 ms on one. */
#define LIMIT_NS 60000000LL

/* What the spinners call, a phase each: the CPU they run on (as glibc's
 * tests do), the time of day, and a monotonic clock. */
enum { CPU, TIME_OF_DAY, MONOTONIC, NPHASES };
static const char *const phase_names[NPHASES] = {
	"sched_getcpu and getcpu", "time and gettimeofday", "clock_gettime",
};

static atomic_int stop, running, wrong, phase;
static pthread_t spinner[2];
static int spin_cpu[2];

/* One round of the phase's calls; false if one failed or saw a CPU other
 * than cpu. */
static bool once(int k, int cpu)
{
	unsigned c = 0, node;
	struct timeval tv;
	struct timespec ts;
	switch (k) {
	case CPU:
		return sched_getcpu() == cpu && getcpu(&c, &node) == 0 && c == (unsigned)cpu;
	case TIME_OF_DAY:
		return time(NULL) > 0 && gettimeofday(&tv, NULL) == 0;
	default:
		return clock_gettime(CLOCK_MONOTONIC, &ts) == 0;
	}
}

static void *spin(void *arg)
{
	int cpu = (int)(intptr_t)arg;
	atomic_fetch_add(&running, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		if (!once(atomic_load_explicit(&phase, memory_order_relaxed), cpu))
			atomic_store(&wrong, 1);
	return NULL;
}

static long long cpu_ns(pthread_t t)
{
	clockid_t c;
	struct timespec ts;
	CHECK_OK(pthread_getcpuclockid(t, &c));
	CHECK(clock_gettime(c, &ts) == 0);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long spun(int n)
{
	long long s = 0;
	for (int i = 0; i < n; i++)
		s += cpu_ns(spinner[i]);
	return s;
}

static void *noop(void *arg)
{
	return arg;
}

int main(void)
{
	alarm(50);
	cpu_set_t all;
	CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
	int n = 0;
	for (int cpu = 0; cpu < CPU_SETSIZE && n < 2; cpu++)
		if (CPU_ISSET(cpu, &all))
			spin_cpu[n++] = cpu;
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	for (int i = 0; i < n; i++) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(spin_cpu[i], &one);
		CHECK_OK(pthread_attr_setaffinity_np(&a, sizeof one, &one));
		CHECK_OK(pthread_create(&spinner[i], &a, spin, (void *)(intptr_t)spin_cpu[i]));
	}
	while (atomic_load(&running) < n)
		sched_yield();
	int failed = 0;
	for (int k = 0; k < NPHASES; k++) {
		atomic_store(&phase, k);
		long long worst = 0, total = 0;
		for (int r = 0; r < ROUNDS; r++) {
			long long before = spun(n);
			pthread_t t;
			CHECK_OK(pthread_create(&t, NULL, noop, NULL));
			CHECK_OK(pthread_join(t, NULL));
			long long d = (spun(n) - before) / n;
			total += d;
			if (d > worst)
				worst = d;
		}
		printf("spinning on %s: spinner CPU time per new thread: mean %lld ms, worst %lld ms\n",
		       phase_names[k], total / ROUNDS / 1000000, worst / 1000000);
		if (total / ROUNDS >= LIMIT_NS) {
			fprintf(stderr, "a new thread waited %lld ms of the spinners' CPU time "
				"(mean of %d) beside threads spinning on %s\n",
				total / ROUNDS / 1000000, ROUNDS, phase_names[k]);
			failed = 1;
		}
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < n; i++)
		CHECK_OK(pthread_join(spinner[i], NULL));
	CHECK(atomic_load(&wrong) == 0);
	return failed;
}
