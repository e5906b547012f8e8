/* Small differences from NPTL, each checked against what glibc 2.36 does:
 * pthread_tryjoin_np on itself and on a running detached thread (EBUSY),
 * pthread_setschedprio on an exited unjoined thread (ESRCH), explicit
 * SCHED_FIFO at priority 0 and SCHED_OTHER at max+1 (pthread_create:
 * EINVAL, glibc's tst-bad-schedattr), huge stack and guard sizes
 * (pthread_create: EAGAIN), clock_nanosleep on the thread CPU clock
 * (EINVAL), pthread_getattr_np of the initial thread (glibc's tst-attr3:
 * its affinity is pthread_getaffinity_np's, guard 0, scope system), and
 * pthread_setname_np(self) naming /proc/self/task/<gettid()>/comm
 * (glibc's tst-setgetname) where gettid() names a kernel thread: on libppl
 * the initial thread's, not a user thread's (docs/scheduling.md). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <unistd.h>

#include "tp_util.h"

static void *nop(void *arg) { return arg; }

static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;

static void *wait_gate(void *arg)
{
	pthread_mutex_lock(&gate);
	pthread_mutex_unlock(&gate);
	return arg;
}

static void *tryjoin_self(void *arg)
{
	return (void *)(intptr_t)pthread_tryjoin_np(pthread_self(), NULL);
}

static void test_tryjoin(void)
{
	CHECK(pthread_tryjoin_np(pthread_self(), NULL) == EBUSY);
	pthread_t t;
	void *r;
	CHECK_OK(pthread_create(&t, NULL, tryjoin_self, NULL));
	CHECK_OK(pthread_join(t, &r));
	CHECK((intptr_t)r == EBUSY);

	/* A detached thread still running. */
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED));
	CHECK_OK(pthread_mutex_lock(&gate));
	CHECK_OK(pthread_create(&t, &a, wait_gate, NULL));
	CHECK(pthread_tryjoin_np(t, NULL) == EBUSY);
	CHECK_OK(pthread_mutex_unlock(&gate));
	CHECK_OK(pthread_attr_destroy(&a));
}

static void test_setschedprio_exited(void)
{
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, nop, NULL));
	/* Until it has exited (pthread_tryjoin_np would reap it: sleep). */
	usleep(100000);
	CHECK(pthread_setschedprio(t, 0) == ESRCH);
	struct sched_param sp = { 0 };
	CHECK(pthread_setschedparam(t, SCHED_OTHER, &sp) == ESRCH);
	CHECK_OK(pthread_join(t, NULL));
}

/* An attribute whose priority is invalid for its policy, made as glibc's
 * tst-bad-schedattr makes it: the priority set under a policy it suits,
 * then the policy changed.  pthread_create must refuse it. */
static int create_explicit(int policy, int prio)
{
	pthread_attr_t a;
	struct sched_param sp = { .sched_priority = prio };
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED));
	CHECK_OK(pthread_attr_setschedpolicy(&a, prio == 0 ? SCHED_OTHER : SCHED_FIFO));
	CHECK_OK(pthread_attr_setschedparam(&a, &sp));
	CHECK_OK(pthread_attr_setschedpolicy(&a, policy));
	pthread_t t;
	int err = pthread_create(&t, &a, nop, NULL);
	if (err == 0)
		CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(pthread_attr_destroy(&a));
	return err;
}

static void test_bad_schedattr(void)
{
	CHECK(create_explicit(SCHED_FIFO, 0) == EINVAL);
	CHECK(create_explicit(SCHED_RR, 0) == EINVAL);
	CHECK(create_explicit(SCHED_OTHER, sched_get_priority_max(SCHED_OTHER) + 1) == EINVAL);
}

static int create_sized(size_t stack, size_t guard)
{
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	if (stack)
		CHECK_OK(pthread_attr_setstacksize(&a, stack));
	if (guard)
		CHECK_OK(pthread_attr_setguardsize(&a, guard));
	pthread_t t;
	int err = pthread_create(&t, &a, nop, NULL);
	if (err == 0)
		CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(pthread_attr_destroy(&a));
	return err;
}

static void test_huge_sizes(void)
{
	CHECK(create_sized(SIZE_MAX / 2, 0) == EAGAIN);
	CHECK(create_sized(0, SIZE_MAX / 2) == EAGAIN);
	CHECK(create_sized((size_t)1 << 46, 0) == EAGAIN);   /* 64 TiB */
}

static void test_cpu_clock_sleep(void)
{
	struct timespec ts = { 0, 1000 };
	CHECK(clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &ts, NULL) == EINVAL);
}

static void test_initial_attr(void)
{
	pthread_attr_t a;
	CHECK_OK(pthread_getattr_np(pthread_self(), &a));
	size_t guard;
	CHECK_OK(pthread_attr_getguardsize(&a, &guard));
	CHECK(guard == 0);
	int scope;
	CHECK_OK(pthread_attr_getscope(&a, &scope));
	CHECK(scope == PTHREAD_SCOPE_SYSTEM);
	cpu_set_t from_attr, from_thread;
	CHECK_OK(pthread_attr_getaffinity_np(&a, sizeof from_attr, &from_attr));
	CHECK_OK(pthread_getaffinity_np(pthread_self(), sizeof from_thread, &from_thread));
	CHECK(CPU_EQUAL(&from_attr, &from_thread));
	CHECK_OK(pthread_attr_destroy(&a));
}

static void check_comm(const char *want)
{
	char path[64], got[32] = "";
	snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)gettid());
	FILE *f = fopen(path, "r");
	char name[16];
	if (f == NULL && tp_expect_ult() && gettid() != getpid()) {
		/* A user thread's id names no kernel thread. */
		CHECK(errno == ENOENT);
		CHECK_OK(pthread_getname_np(pthread_self(), name, sizeof name));
		CHECK(strcmp(name, want) == 0);
		return;
	}
	CHECK(f != NULL);
	CHECK(fgets(got, sizeof got, f) != NULL);
	fclose(f);
	got[strcspn(got, "\n")] = '\0';
	if (strcmp(got, want) != 0) {
		fprintf(stderr, "%s: \"%s\", expected \"%s\"\n", path, got, want);
		exit(1);
	}
	CHECK_OK(pthread_getname_np(pthread_self(), name, sizeof name));
	CHECK(strcmp(name, want) == 0);
}

static void *named(void *arg)
{
	CHECK_OK(pthread_setname_np(pthread_self(), "npdiff-new"));
	check_comm("npdiff-new");
	return arg;
}

static void test_setname(void)
{
	CHECK_OK(pthread_setname_np(pthread_self(), "npdiff-main"));
	check_comm("npdiff-main");
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, named, NULL));
	CHECK_OK(pthread_join(t, NULL));
	/* Named again: (on libppl, its VP may have taken the other name.) */
	CHECK_OK(pthread_setname_np(pthread_self(), "npdiff-main"));
	check_comm("npdiff-main");
}

int main(int argc, char **argv)
{
	alarm(20);
	/* Before any thread is created, then the rest. */
	test_initial_attr();
	test_tryjoin();
	test_setschedprio_exited();
	test_bad_schedattr();
	test_huge_sizes();
	test_cpu_clock_sleep();
	test_initial_attr();
	test_setname();
	puts("npdiff: ok");
	return 0;
}
