/* A thread whose CPU set is one CPU runs only on that CPU: sched_getcpu()
 * inside it is that CPU at every check, while it yields, sleeps, waits on
 * a condition variable and computes beside other pinned threads and
 * unpinned ones, whatever VP runs it (libppl: on one VP a thread pinned
 * to CPU 1 must still run on CPU 1).  Its set is pinned three ways:
 * pthread_attr_setaffinity_np, pthread_setaffinity_np on itself, and
 * sched_setaffinity(0); a thread it creates inherits the set.  Also: a
 * thread spinning on another VP that another thread pins is on its CPU
 * once pthread_setaffinity_np has returned (the kernel moves it first);
 * the main thread pinned by itself and by another thread; the sets read
 * back; an empty set is EINVAL.  Before libppl made affinity real, a
 * pinned thread ran on whatever CPU its VP's kernel thread was on. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include "tp_util.h"

#define ROUNDS 300
#define MAXCPU 64

static cpu_set_t all;
static int cpus[MAXCPU], ncpus;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int token;   /* handed around the pinned threads, under m */
static int npinned;
static atomic_int wrong;

static void on_cpu(int cpu, const char *where)
{
	int now = sched_getcpu();
	if (now != cpu) {
		fprintf(stderr, "thread pinned to CPU %d ran on CPU %d (%s)\n", cpu, now, where);
		atomic_fetch_add(&wrong, 1);
	}
}

static void has_set(pthread_t t, int cpu)
{
	cpu_set_t got, want;
	CPU_ZERO(&want);
	if (cpu >= 0)
		CPU_SET(cpu, &want);
	else
		want = all;
	CHECK_OK(pthread_getaffinity_np(t, sizeof got, &got));
	CHECK(CPU_EQUAL(&got, &want));
}

static void pin_self(int how, int cpu)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (how == 1)
		CHECK_OK(pthread_setaffinity_np(pthread_self(), sizeof one, &one));
	else if (how == 2)
		CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
}

/* Yield, sleep, wait for the token, compute; check the CPU after each. */
static void work(int cpu, int me)
{
	for (int r = 0; r < ROUNDS; r++) {
		on_cpu(cpu, "start");
		sched_yield();
		on_cpu(cpu, "after sched_yield");
		if (r % 16 == 0) {
			nanosleep(&(struct timespec){ 0, 200000 }, NULL);
			on_cpu(cpu, "after nanosleep");
		}
		if (r % 8 == 0) {
			pthread_mutex_lock(&m);
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_nsec += 2000000;
			if (until.tv_nsec >= 1000000000) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000;
			}
			while (token % npinned != me &&
			       pthread_cond_timedwait(&cv, &m, &until) != ETIMEDOUT)
				;
			token++;
			pthread_cond_broadcast(&cv);
			pthread_mutex_unlock(&m);
			on_cpu(cpu, "after pthread_cond_timedwait");
		}
		for (volatile int i = 0; i < 20000; i++)
			;
	}
}

struct pinned {
	int cpu, how, me;
};

static void *child(void *arg)
{
	struct pinned *p = arg;
	has_set(pthread_self(), p->cpu);   /* inherited */
	on_cpu(p->cpu, "inherited");
	return NULL;
}

static void *pinned_thread(void *arg)
{
	struct pinned *p = arg;
	pin_self(p->how, p->cpu);
	on_cpu(p->cpu, "pinned");
	has_set(pthread_self(), p->cpu);
	cpu_set_t got;
	CHECK(sched_getaffinity(0, sizeof got, &got) == 0);
	CHECK(CPU_COUNT(&got) == 1 && CPU_ISSET(p->cpu, &got));
	work(p->cpu, p->me);
	pthread_t c;
	CHECK_OK(pthread_create(&c, NULL, child, p));
	CHECK_OK(pthread_join(c, NULL));
	on_cpu(p->cpu, "end");
	return NULL;
}

static void *unpinned_thread(void *arg)
{
	for (int r = 0; r < ROUNDS; r++) {
		CHECK(CPU_ISSET(sched_getcpu(), &all));
		sched_yield();
		for (volatile int i = 0; i < 20000; i++)
			;
	}
	has_set(pthread_self(), -1);
	return arg;
}

/* Spins until told; checks its CPU once told it was pinned. */
static atomic_int spin_told, spin_cpu = -1, spin_done;

static void *spinner(void *arg)
{
	while (!atomic_load(&spin_told))
		;
	on_cpu(atomic_load(&spin_cpu), "spinning, pinned by another thread");
	atomic_store(&spin_done, 1);
	return arg;
}

static void pin_running_thread(int cpu)
{
	pthread_t s;
	atomic_store(&spin_told, 0);
	atomic_store(&spin_done, 0);
	CHECK_OK(pthread_create(&s, NULL, spinner, NULL));
	usleep(20000);   /* it spins, on another VP if there is one */
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	CHECK_OK(pthread_setaffinity_np(s, sizeof one, &one));
	atomic_store(&spin_cpu, cpu);
	atomic_store(&spin_told, 1);
	CHECK_OK(pthread_join(s, NULL));
	CHECK(atomic_load(&spin_done));
}

static pthread_t main_thread;

static void *pin_main(void *arg)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(*(int *)arg, &one);
	CHECK_OK(pthread_setaffinity_np(main_thread, sizeof one, &one));
	return NULL;
}

int main(void)
{
	alarm(60);
	main_thread = pthread_self();
	CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
	for (int c = 0; c < CPU_SETSIZE && ncpus < MAXCPU; c++)
		if (CPU_ISSET(c, &all))
			cpus[ncpus++] = c;

	/* Empty sets: EINVAL, as the kernel's. */
	cpu_set_t none;
	CPU_ZERO(&none);
	CHECK(pthread_setaffinity_np(pthread_self(), sizeof none, &none) == EINVAL);
	errno = 0;
	CHECK(sched_setaffinity(0, sizeof none, &none) == -1 && errno == EINVAL);

	/* Three threads per CPU (one per way of pinning), two unpinned. */
	npinned = 3 * ncpus;
	struct pinned *p = calloc((size_t)npinned, sizeof *p);
	pthread_t *t = calloc((size_t)npinned + 2, sizeof *t);
	CHECK(p != NULL && t != NULL);
	for (int i = 0; i < npinned; i++) {
		p[i] = (struct pinned){ cpus[i % ncpus], i / ncpus, i };
		pthread_attr_t a;
		CHECK_OK(pthread_attr_init(&a));
		if (p[i].how == 0) {
			cpu_set_t one;
			CPU_ZERO(&one);
			CPU_SET(p[i].cpu, &one);
			CHECK_OK(pthread_attr_setaffinity_np(&a, sizeof one, &one));
		}
		CHECK_OK(pthread_create(&t[i], &a, pinned_thread, &p[i]));
		CHECK_OK(pthread_attr_destroy(&a));
	}
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_create(&t[npinned + i], NULL, unpinned_thread, NULL));
	for (int i = 0; i < npinned + 2; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	has_set(pthread_self(), -1);   /* main's own set is untouched */

	for (int k = 0; k < ncpus; k++)
		pin_running_thread(cpus[(k + 1) % ncpus]);

	/* The main thread, pinned by itself and by another thread. */
	for (int k = 0; k < 2 * ncpus; k++) {
		int cpu = cpus[((ncpus - 1 - k) % ncpus + ncpus) % ncpus];
		if (k % 2 == 0) {
			pin_self(1, cpu);
		} else {
			pthread_t h;
			CHECK_OK(pthread_create(&h, NULL, pin_main, &cpu));
			CHECK_OK(pthread_join(h, NULL));
		}
		for (int r = 0; r < 20; r++) {
			on_cpu(cpu, "main");
			sched_yield();
		}
		has_set(pthread_self(), cpu);
	}
	CHECK(sched_setaffinity(0, sizeof all, &all) == 0);
	has_set(pthread_self(), -1);
	CHECK(atomic_load(&wrong) == 0);
	puts("affinity-pin: ok");
	return 0;
}
