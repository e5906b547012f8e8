/* Affinity sets checked against the CPUs that exist, as the kernel checks
 * them for NPTL: a set naming only CPU 1000 (or 2000, in a set larger than
 * cpu_set_t) is EINVAL for pthread_setaffinity_np and for pthread_create
 * with pthread_attr_setaffinity_np; a set shorter than cpu_set_t that names
 * a CPU of the process is accepted.  The stack is dirtied before each call:
 * a check that reads bytes the kernel did not fill would see them.
 *
 * sched_setaffinity and sched_getaffinity on pid 0 and on the thread's
 * gettid() act on the calling thread alone, as on NPTL: a thread that pins
 * itself to one CPU that way reads that set back, from itself and from
 * another thread (pthread_getaffinity_np), while the other threads keep
 * the process's set (on libppl the VP's kernel thread must not take it:
 * on one VP the thread that looked next read the pinned set). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include "tp_util.h"

static int first_cpu;

static __attribute__((noinline)) void dirty_stack(void)
{
	volatile unsigned char junk[8192];
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = 0xff;
}

static void *nothing(void *arg)
{
	return arg;
}

static void checks(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(1000, &set);
	dirty_stack();
	CHECK(pthread_setaffinity_np(pthread_self(), sizeof set, &set) == EINVAL);

	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setaffinity_np(&a, sizeof set, &set));
	pthread_t t;
	dirty_stack();
	CHECK(pthread_create(&t, &a, nothing, NULL) == EINVAL);
	CHECK_OK(pthread_attr_destroy(&a));

	/* Larger than cpu_set_t: CPU 2000 only. */
	size_t big = CPU_ALLOC_SIZE(4096);
	cpu_set_t *bs = CPU_ALLOC(4096);
	CHECK(bs != NULL);
	CPU_ZERO_S(big, bs);
	CPU_SET_S(2000, big, bs);
	dirty_stack();
	CHECK(pthread_setaffinity_np(pthread_self(), big, bs) == EINVAL);
	/* ... and with a CPU of the process too: accepted. */
	CPU_SET_S(first_cpu, big, bs);
	CHECK_OK(pthread_setaffinity_np(pthread_self(), big, bs));
	CPU_FREE(bs);

	/* Shorter than cpu_set_t: the kernel zero-extends it. */
	if (first_cpu < 64) {
		unsigned long word = 1UL << first_cpu;
		dirty_stack();
		CHECK_OK(pthread_setaffinity_np(pthread_self(), sizeof word, (cpu_set_t *)&word));
	}
	/* The same sizes through pthread_attr_setaffinity_np and pthread_create. */
	if (first_cpu < 64) {
		unsigned long word = 1UL << first_cpu;
		CHECK_OK(pthread_attr_init(&a));
		CHECK_OK(pthread_attr_setaffinity_np(&a, sizeof word, (cpu_set_t *)&word));
		dirty_stack();
		CHECK_OK(pthread_create(&t, &a, nothing, NULL));
		CHECK_OK(pthread_join(t, NULL));
		CHECK_OK(pthread_attr_destroy(&a));
	}
	bs = CPU_ALLOC(4096);
	CHECK(bs != NULL);
	CPU_ZERO_S(big, bs);
	CPU_SET_S(2000, big, bs);
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setaffinity_np(&a, big, bs));
	dirty_stack();
	CHECK(pthread_create(&t, &a, nothing, NULL) == EINVAL);
	CPU_SET_S(first_cpu, big, bs);
	CHECK_OK(pthread_attr_setaffinity_np(&a, big, bs));
	CHECK_OK(pthread_create(&t, &a, nothing, NULL));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(pthread_attr_destroy(&a));
	CPU_FREE(bs);
	/* Empty (size 0): no CPU at all. */
	CHECK(pthread_setaffinity_np(pthread_self(), 0, &set) == EINVAL);
}

static cpu_set_t all;
static int ncpus;

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int pinned, release;
static pid_t pinned_tid;

/* Pins itself to the last CPU of the process with sched_setaffinity(0),
 * then waits while main looks; then the same through its gettid(). */
static void *pin_self(void *arg)
{
	int last = -1;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &all))
			last = c;
	cpu_set_t one, got;
	CPU_ZERO(&one);
	CPU_SET(last, &one);
	for (int round = 0; round < 2; round++) {
		pid_t me = (pid_t)(round == 0 ? 0 : gettid());
		CHECK(sched_setaffinity(me, sizeof one, &one) == 0);
		CPU_ZERO(&got);
		CHECK(sched_getaffinity(me, sizeof got, &got) == 0);
		CHECK(CPU_EQUAL(&got, &one));
		CHECK_OK(pthread_getaffinity_np(pthread_self(), sizeof got, &got));
		CHECK(CPU_EQUAL(&got, &one));
		/* Errors as the kernel's: no CPU of the process, a bad id. */
		cpu_set_t none;
		CPU_ZERO(&none);
		CPU_SET(1000, &none);
		errno = 0;
		CHECK(sched_setaffinity(me, sizeof none, &none) == -1 && errno == EINVAL);
		pthread_mutex_lock(&m);
		pinned_tid = gettid();
		pinned = round + 1;
		pthread_cond_broadcast(&cv);
		while (release <= round)
			CHECK_OK(pthread_cond_wait(&cv, &m));
		pthread_mutex_unlock(&m);
		CHECK(sched_setaffinity(me, sizeof all, &all) == 0);
		CHECK(sched_getaffinity(me, sizeof got, &got) == 0);
		CHECK(CPU_EQUAL(&got, &all));
	}
	return arg;
}

static void pinned_alone(void)
{
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, pin_self, NULL));
	for (int round = 0; round < 2; round++) {
		pthread_mutex_lock(&m);
		while (pinned <= round)
			CHECK_OK(pthread_cond_wait(&cv, &m));
		pid_t tid = pinned_tid;
		pthread_mutex_unlock(&m);
		cpu_set_t got;
		/* The caller's own set is still the process's. */
		CHECK(sched_getaffinity(0, sizeof got, &got) == 0);
		CHECK(CPU_EQUAL(&got, &all));
		CHECK_OK(pthread_getaffinity_np(pthread_self(), sizeof got, &got));
		CHECK(CPU_EQUAL(&got, &all));
		/* The pinned thread's, through its id and its pthread_t. */
		CHECK(sched_getaffinity(tid, sizeof got, &got) == 0);
		CHECK(CPU_COUNT(&got) == 1);
		CHECK_OK(pthread_getaffinity_np(t, sizeof got, &got));
		CHECK(CPU_COUNT(&got) == 1);
		pthread_mutex_lock(&m);
		release = round + 1;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&m);
	}
	CHECK_OK(pthread_join(t, NULL));
	errno = 0;
	CHECK(sched_getaffinity(-1, sizeof all, &(cpu_set_t){ 0 }) == -1 && errno == ESRCH);
}

static void *in_thread(void *arg)
{
	for (int i = 0; i < 20; i++)
		checks();
	CHECK_OK(pthread_setaffinity_np(pthread_self(), sizeof all, &all));
	return arg;
}

int main(void)
{
	alarm(20);
	CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
	while (!CPU_ISSET(first_cpu, &all))
		first_cpu++;
	ncpus = CPU_COUNT(&all);
	if (ncpus > 1)
		pinned_alone();
	for (int i = 0; i < 20; i++)
		checks();
	CHECK_OK(pthread_setaffinity_np(pthread_self(), sizeof all, &all));
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, in_thread, NULL));
	CHECK_OK(pthread_join(t, NULL));
	puts("affinity: ok");
	return 0;
}
