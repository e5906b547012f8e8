/* Affinity sets checked against the CPUs that exist, as the kernel checks
 * them for NPTL: a set naming only CPU 1000 (or 2000, in a set larger than
 * cpu_set_t) is EINVAL for pthread_setaffinity_np and for pthread_create
 * with pthread_attr_setaffinity_np; a set shorter than cpu_set_t that names
 * a CPU of the process is accepted.  The stack is dirtied before each call:
 * a check that reads bytes the kernel did not fill would see them. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <sched.h>

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
	for (int i = 0; i < 20; i++)
		checks();
	CHECK_OK(pthread_setaffinity_np(pthread_self(), sizeof all, &all));
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, in_thread, NULL));
	CHECK_OK(pthread_join(t, NULL));
	puts("affinity: ok");
	return 0;
}
