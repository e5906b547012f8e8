/* A thread that sleeps and wakes runs soon after its wake-up beside
 * threads pinned to each CPU that never block, and busy processes, as a
 * kernel thread does: the kernel lets a thread that slept run ahead of
 * ones that burn their share.  Under libppl a pinned thread scheduled M:N
 * shared its CPU's VP with the others, so a thread woken there (pinned to
 * that CPU, or unpinned with every VP running a pinned spinner) waited
 * for the spinners' time slices, 10 ms each of the VP's CPU time, which
 * the busy processes stretch further: glibc's tst-thread-affinity-* took
 * seconds under load.  A thread given a CPU set narrower than the
 * process's now has a kernel thread of its own (docs/scheduling.md,
 * "Affinity").  Measured in the spinners' CPU time, which load does not
 * stretch: what they burn, per CPU, while a sleeper sleeps 1 ms and waits
 * to run again (the median of its sleeps), with the sleeper unpinned,
 * then pinned by its attribute, by pthread_setaffinity_np on itself, and
 * by sched_setaffinity(0). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_util.h"

#define MAX_CPUS 8
#define SPINNERS_PER_CPU 2
#define SLEEPS 40
#define SLEEP_NS 1000000LL
/* The median a sleep may cost, per CPU: the 1 ms sleep itself (at most
 * 1 ms of each CPU) and the wait to run again, natively well under 1 ms;
 * M:N, behind the spinners' 10 ms time slices, over 10 ms. */
#define LIMIT_NS 5000000LL
/* A sleeper stops early after this long (the limit is exceeded by far). */
#define BUDGET_NS 3000000000LL

enum how { UNPINNED, ATTR, SETAFFINITY, SCHED_SET, NHOW };
static const char *const how_names[NHOW] = {
	"unpinned", "pinned by its attribute", "pinned by pthread_setaffinity_np",
	"pinned by sched_setaffinity",
};

static atomic_int stop;
static int cpus[MAX_CPUS], ncpus;
static pthread_t spinner[MAX_CPUS * SPINNERS_PER_CPU];
static clockid_t spin_clock[MAX_CPUS * SPINNERS_PER_CPU];
static int nspin;

/* The spinners' CPU time, in all. */
static long long spun_ns(void)
{
	long long sum = 0;
	for (int i = 0; i < nspin; i++) {
		struct timespec ts;
		CHECK(clock_gettime(spin_clock[i], &ts) == 0);
		sum += ts.tv_sec * 1000000000LL + ts.tv_nsec;
	}
	return sum;
}

static void *spin(void *arg)
{
	int cpu = (int)(intptr_t)arg;
	volatile unsigned long n = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		n++;
	/* It ran only where it was pinned. */
	CHECK(sched_getcpu() == cpu);
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return x < y ? -1 : x > y;
}

struct sleeper {
	enum how how;
	long long median;
};

static void *sleeper(void *arg)
{
	struct sleeper *s = arg;
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpus[0], &one);
	pid_t tid = gettid();
	if (s->how == SETAFFINITY)
		CHECK_OK(pthread_setaffinity_np(pthread_self(), sizeof one, &one));
	if (s->how == SCHED_SET)
		CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
	if (s->how != UNPINNED) {
		cpu_set_t got;
		CHECK_OK(pthread_getaffinity_np(pthread_self(), sizeof got, &got));
		CHECK(CPU_EQUAL(&got, &one));
		CHECK(sched_getcpu() == cpus[0]);
		/* Its id is the one it had, and still names it. */
		CHECK(gettid() == tid);
		CPU_ZERO(&got);
		CHECK(sched_getaffinity(tid, sizeof got, &got) == 0);
		CHECK(CPU_EQUAL(&got, &one));
		CHECK(sched_setaffinity(tid, sizeof one, &one) == 0);
	}
	long long cost[SLEEPS];
	long long until = tp_now_ns() + BUDGET_NS;
	int n = 0;
	while (n < SLEEPS && tp_now_ns() < until) {
		long long spun = spun_ns();
		struct timespec ts = {0, SLEEP_NS};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		cost[n++] = (spun_ns() - spun) / ncpus;
	}
	qsort(cost, n, sizeof cost[0], cmp);
	s->median = cost[n / 2];
	return NULL;
}

int main(void)
{
	alarm(40);
	setvbuf(stdout, NULL, _IOLBF, 0);
	cpu_set_t all;
	CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
	for (int c = 0; c < CPU_SETSIZE && ncpus < MAX_CPUS; c++)
		if (CPU_ISSET(c, &all))
			cpus[ncpus++] = c;
	if (ncpus < 2) {
		printf("affinity-bound: one CPU, nothing to measure\n");
		return 0;
	}
	/* Busy processes, one per CPU, before any thread: the load a shared
	 * machine has. */
	pid_t busy[MAX_CPUS];
	for (int i = 0; i < ncpus; i++) {
		busy[i] = fork();
		CHECK(busy[i] >= 0);
		if (busy[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			alarm(60);
			for (volatile unsigned long n = 0;; n++)
				;
		}
	}
	/* Spinners pinned to each CPU by their attribute, as glibc's tests. */
	for (int i = 0; i < ncpus; i++)
		for (int k = 0; k < SPINNERS_PER_CPU; k++) {
			pthread_attr_t a;
			cpu_set_t one;
			CPU_ZERO(&one);
			CPU_SET(cpus[i], &one);
			CHECK_OK(pthread_attr_init(&a));
			CHECK_OK(pthread_attr_setaffinity_np(&a, sizeof one, &one));
			CHECK_OK(pthread_create(&spinner[nspin], &a, spin, (void *)(intptr_t)cpus[i]));
			CHECK_OK(pthread_getcpuclockid(spinner[nspin], &spin_clock[nspin]));
			nspin++;
			CHECK_OK(pthread_attr_destroy(&a));
		}
	int bad = 0;
	for (int h = 0; h < NHOW; h++) {
		struct sleeper s = {(enum how)h, 0};
		pthread_attr_t a;
		CHECK_OK(pthread_attr_init(&a));
		if (h == ATTR) {
			cpu_set_t one;
			CPU_ZERO(&one);
			CPU_SET(cpus[0], &one);
			CHECK_OK(pthread_attr_setaffinity_np(&a, sizeof one, &one));
		}
		pthread_t t;
		CHECK_OK(pthread_create(&t, &a, sleeper, &s));
		CHECK_OK(pthread_attr_destroy(&a));
		CHECK_OK(pthread_join(t, NULL));
		printf("affinity-bound: %s: the spinners' CPU time a 1 ms sleep costs, per CPU (median): %.2f ms\n",
		       how_names[h], s.median / 1e6);
		if (s.median > LIMIT_NS) {
			fprintf(stderr, "affinity-bound: %s: a sleep costs %.2f ms, over %.0f ms\n",
				how_names[h], s.median / 1e6, LIMIT_NS / 1e6);
			bad = 1;
		}
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < nspin; i++)
		CHECK_OK(pthread_join(spinner[i], NULL));
	for (int i = 0; i < ncpus; i++) {
		kill(busy[i], SIGKILL);
		CHECK(waitpid(busy[i], NULL, 0) == busy[i]);
	}
	return bad;
}
