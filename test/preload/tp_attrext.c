/* The GNU extensions of pthread_attr_t take effect at pthread_create:
 * pthread_attr_setsigmask_np gives the new thread its signal mask, and
 * pthread_attr_setaffinity_np its CPUs (as pthread_getaffinity_np reports
 * them; for a PTHREAD_SCOPE_SYSTEM thread, its kernel thread's too).  A
 * set with no usable CPU makes pthread_create fail with EINVAL.  A
 * system-scope thread created after a pinned one has exited has all the
 * process's CPUs again (libppl reuses the exited one's kernel thread).
 * The process default attribute carries both for pthread_create(NULL). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include "tp_util.h"

static cpu_set_t process_cpus;

struct probe {
	sigset_t mask;          /* the thread's mask */
	cpu_set_t pcpus;        /* pthread_getaffinity_np(pthread_self()) */
	cpu_set_t kcpus;        /* sched_getaffinity(0): its kernel thread's */
};

static void *probe(void *arg)
{
	struct probe *p = arg;
	CHECK_OK(pthread_sigmask(SIG_BLOCK, NULL, &p->mask));
	CHECK_OK(pthread_getaffinity_np(pthread_self(), sizeof p->pcpus, &p->pcpus));
	CHECK(sched_getaffinity(0, sizeof p->kcpus, &p->kcpus) == 0);
	return NULL;
}

static void run(pthread_attr_t *a, struct probe *p)
{
	pthread_t t;
	CHECK_OK(pthread_create(&t, a, probe, p));
	CHECK_OK(pthread_join(t, NULL));
}

static void test_sigmask(void)
{
	sigset_t none, want;
	sigemptyset(&none);
	CHECK_OK(pthread_sigmask(SIG_SETMASK, &none, NULL));
	sigemptyset(&want);
	sigaddset(&want, SIGUSR1);
	sigaddset(&want, SIGTERM);
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setsigmask_np(&a, &want));
	struct probe p;
	run(&a, &p);
	CHECK(sigismember(&p.mask, SIGUSR1) == 1);
	CHECK(sigismember(&p.mask, SIGTERM) == 1);
	CHECK(sigismember(&p.mask, SIGUSR2) == 0);
	/* Without it, the creator's mask (empty). */
	run(NULL, &p);
	CHECK(sigismember(&p.mask, SIGUSR1) == 0);
	/* And the creator's own mask is untouched. */
	sigset_t mine;
	CHECK_OK(pthread_sigmask(SIG_BLOCK, NULL, &mine));
	CHECK(sigismember(&mine, SIGUSR1) == 0);
	CHECK_OK(pthread_attr_destroy(&a));
}

static int first_cpu(const cpu_set_t *s)
{
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, s))
			return c;
	return -1;
}

/* scope: PTHREAD_SCOPE_SYSTEM, or -1 for the default (NPTL refuses
 * PTHREAD_SCOPE_PROCESS; libppl's default is it). */
static void test_affinity(int scope)
{
	int cpu = first_cpu(&process_cpus);
	CHECK(cpu >= 0);
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	if (scope >= 0)
		CHECK_OK(pthread_attr_setscope(&a, scope));
	CHECK_OK(pthread_attr_setaffinity_np(&a, sizeof one, &one));
	struct probe p;
	run(&a, &p);
	CHECK(CPU_EQUAL(&p.pcpus, &one));
	if (scope == PTHREAD_SCOPE_SYSTEM)
		CHECK(CPU_EQUAL(&p.kcpus, &one));

	/* A set with no CPU the process may use. */
	cpu_set_t bad;
	CPU_ZERO(&bad);
	int c = CPU_SETSIZE - 1;
	while (c > 0 && CPU_ISSET(c, &process_cpus))
		c--;
	CPU_SET(c, &bad);
	CHECK_OK(pthread_attr_setaffinity_np(&a, sizeof bad, &bad));
	pthread_t t;
	CHECK(pthread_create(&t, &a, probe, &p) == EINVAL);
	CHECK_OK(pthread_attr_destroy(&a));

	/* The next thread of that scope, without a set, has every CPU. */
	CHECK_OK(pthread_attr_init(&a));
	if (scope >= 0)
		CHECK_OK(pthread_attr_setscope(&a, scope));
	run(&a, &p);
	CHECK(CPU_EQUAL(&p.pcpus, &process_cpus));
	if (scope == PTHREAD_SCOPE_SYSTEM)
		CHECK(CPU_EQUAL(&p.kcpus, &process_cpus));
	CHECK_OK(pthread_attr_destroy(&a));
}

/* The process default (pthread_setattr_default_np) carries both too, for
 * pthread_create(NULL), until it is replaced. */
static void test_default(void)
{
	int cpu = first_cpu(&process_cpus);
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR2);
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setaffinity_np(&a, sizeof one, &one));
	CHECK_OK(pthread_attr_setsigmask_np(&a, &mask));
	CHECK_OK(pthread_setattr_default_np(&a));
	CHECK_OK(pthread_attr_destroy(&a));
	struct probe p;
	run(NULL, &p);
	CHECK(CPU_EQUAL(&p.pcpus, &one));
	CHECK(sigismember(&p.mask, SIGUSR2) == 1);

	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_setattr_default_np(&a));
	CHECK_OK(pthread_attr_destroy(&a));
	run(NULL, &p);
	CHECK(CPU_EQUAL(&p.pcpus, &process_cpus));
	CHECK(sigismember(&p.mask, SIGUSR2) == 0);
}

int main(void)
{
	CHECK(sched_getaffinity(0, sizeof process_cpus, &process_cpus) == 0);
	test_sigmask();
	test_affinity(-1);
	test_affinity(PTHREAD_SCOPE_SYSTEM);
	test_default();
	printf("tp_attrext: ok\n");
	return 0;
}
