/* pthread_attr_* and pthread_{get,set}attr_default_np, through <pthread.h>
 * only.  The expectations are glibc 2.36's, so this program passes both
 * natively (cc test_attr.c -lcmocka -lpthread) and relinked with libppl,
 * except for the deliberate differences of docs/abi.md, which are checked
 * on whichever side the program runs. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* The architecture's fixed minimum, which glibc checks against (with
 * _GNU_SOURCE PTHREAD_STACK_MIN is sysconf's value, maybe larger). */
#undef PTHREAD_STACK_MIN
#include <bits/pthread_stack_min.h>
static const size_t fixed_min = PTHREAD_STACK_MIN;
#undef PTHREAD_STACK_MIN
#include <bits/pthread_stack_min-dynamic.h>

static bool on_libppl;
static size_t page;

static int setup(void **state)
{
	(void)state;
	on_libppl = dlsym(RTLD_DEFAULT, "ppl_vp_count") != NULL;
	page = (size_t)sysconf(_SC_PAGESIZE);
	return 0;
}

static void test_init_defaults(void **state)
{
	(void)state;
	pthread_attr_t a;
	int v;
	size_t sz;
	void *p;
	struct sched_param sp = { .sched_priority = 77 };
	assert_int_equal(pthread_attr_init(&a), 0);
	assert_int_equal(pthread_attr_getdetachstate(&a, &v), 0);
	assert_int_equal(v, PTHREAD_CREATE_JOINABLE);
	assert_int_equal(pthread_attr_getinheritsched(&a, &v), 0);
	assert_int_equal(v, PTHREAD_INHERIT_SCHED);
	assert_int_equal(pthread_attr_getschedpolicy(&a, &v), 0);
	assert_int_equal(v, SCHED_OTHER);
	assert_int_equal(pthread_attr_getschedparam(&a, &sp), 0);
	assert_int_equal(sp.sched_priority, 0);
	assert_int_equal(pthread_attr_getguardsize(&a, &sz), 0);
	assert_int_equal(sz, page);
	/* libppl multiplexes by default; glibc has only SYSTEM (docs/abi.md). */
	assert_int_equal(pthread_attr_getscope(&a, &v), 0);
	assert_int_equal(v, on_libppl ? PTHREAD_SCOPE_PROCESS : PTHREAD_SCOPE_SYSTEM);
	/* An unset size reads as the default a thread would get. */
	pthread_attr_t d;
	size_t dsz;
	assert_int_equal(pthread_getattr_default_np(&d), 0);
	assert_int_equal(pthread_attr_getstacksize(&d, &dsz), 0);
	assert_int_equal(pthread_attr_destroy(&d), 0);
	assert_int_equal(pthread_attr_getstacksize(&a, &sz), 0);
	assert_true(sz >= fixed_min);
	assert_int_equal(sz, dsz);
	/* ...but getstack reports what was set: nothing. */
	p = &v;
	assert_int_equal(pthread_attr_getstack(&a, &p, &sz), 0);
	assert_null(p);
	assert_int_equal(sz, 0);
	assert_int_equal(pthread_attr_destroy(&a), 0);
}

static void test_detachstate(void **state)
{
	(void)state;
	pthread_attr_t a;
	int v;
	pthread_attr_init(&a);
	assert_int_equal(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED), 0);
	assert_int_equal(pthread_attr_getdetachstate(&a, &v), 0);
	assert_int_equal(v, PTHREAD_CREATE_DETACHED);
	assert_int_equal(pthread_attr_setdetachstate(&a, 2), EINVAL);
	assert_int_equal(pthread_attr_setdetachstate(&a, -1), EINVAL);
	assert_int_equal(pthread_attr_getdetachstate(&a, &v), 0);
	assert_int_equal(v, PTHREAD_CREATE_DETACHED);
	assert_int_equal(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_JOINABLE), 0);
	assert_int_equal(pthread_attr_getdetachstate(&a, &v), 0);
	assert_int_equal(v, PTHREAD_CREATE_JOINABLE);
	pthread_attr_destroy(&a);
}

/* The deliberate difference: glibc refuses PROCESS with ENOTSUP. */
static void test_scope(void **state)
{
	(void)state;
	pthread_attr_t a;
	int v;
	pthread_attr_init(&a);
	assert_int_equal(pthread_attr_setscope(&a, PTHREAD_SCOPE_SYSTEM), 0);
	assert_int_equal(pthread_attr_getscope(&a, &v), 0);
	assert_int_equal(v, PTHREAD_SCOPE_SYSTEM);
	if (on_libppl) {
		assert_int_equal(pthread_attr_setscope(&a, PTHREAD_SCOPE_PROCESS), 0);
		assert_int_equal(pthread_attr_getscope(&a, &v), 0);
		assert_int_equal(v, PTHREAD_SCOPE_PROCESS);
	} else {
		assert_int_equal(pthread_attr_setscope(&a, PTHREAD_SCOPE_PROCESS), ENOTSUP);
		assert_int_equal(pthread_attr_getscope(&a, &v), 0);
		assert_int_equal(v, PTHREAD_SCOPE_SYSTEM);
	}
	int before;
	pthread_attr_getscope(&a, &before);
	assert_int_equal(pthread_attr_setscope(&a, 2), EINVAL);
	assert_int_equal(pthread_attr_setscope(&a, -1), EINVAL);
	assert_int_equal(pthread_attr_getscope(&a, &v), 0);
	assert_int_equal(v, before);
	pthread_attr_destroy(&a);
}

static void test_inheritsched(void **state)
{
	(void)state;
	pthread_attr_t a;
	int v;
	pthread_attr_init(&a);
	assert_int_equal(pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED), 0);
	assert_int_equal(pthread_attr_getinheritsched(&a, &v), 0);
	assert_int_equal(v, PTHREAD_EXPLICIT_SCHED);
	assert_int_equal(pthread_attr_setinheritsched(&a, 5), EINVAL);
	assert_int_equal(pthread_attr_getinheritsched(&a, &v), 0);
	assert_int_equal(v, PTHREAD_EXPLICIT_SCHED);
	assert_int_equal(pthread_attr_setinheritsched(&a, PTHREAD_INHERIT_SCHED), 0);
	assert_int_equal(pthread_attr_getinheritsched(&a, &v), 0);
	assert_int_equal(v, PTHREAD_INHERIT_SCHED);
	pthread_attr_destroy(&a);
}

static void test_schedpolicy_and_param(void **state)
{
	(void)state;
	pthread_attr_t a;
	int v;
	struct sched_param sp;
	pthread_attr_init(&a);
	const int ok[] = { SCHED_FIFO, SCHED_RR, SCHED_OTHER };
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		assert_int_equal(pthread_attr_setschedpolicy(&a, ok[i]), 0);
		assert_int_equal(pthread_attr_getschedpolicy(&a, &v), 0);
		assert_int_equal(v, ok[i]);
	}
	/* glibc accepts only the three POSIX policies in an attribute. */
	assert_int_equal(pthread_attr_setschedpolicy(&a, SCHED_BATCH), EINVAL);
	assert_int_equal(pthread_attr_setschedpolicy(&a, SCHED_IDLE), EINVAL);
	assert_int_equal(pthread_attr_setschedpolicy(&a, 42), EINVAL);
	assert_int_equal(pthread_attr_getschedpolicy(&a, &v), 0);
	assert_int_equal(v, SCHED_OTHER);

	/* The priority is checked against the policy already set. */
	sp.sched_priority = 0;
	assert_int_equal(pthread_attr_setschedparam(&a, &sp), 0);
	sp.sched_priority = 1;
	assert_int_equal(pthread_attr_setschedparam(&a, &sp), EINVAL);
	assert_int_equal(pthread_attr_setschedpolicy(&a, SCHED_FIFO), 0);
	int lo = sched_get_priority_min(SCHED_FIFO), hi = sched_get_priority_max(SCHED_FIFO);
	sp.sched_priority = lo - 1;
	assert_int_equal(pthread_attr_setschedparam(&a, &sp), EINVAL);
	sp.sched_priority = hi + 1;
	assert_int_equal(pthread_attr_setschedparam(&a, &sp), EINVAL);
	sp.sched_priority = hi;
	assert_int_equal(pthread_attr_setschedparam(&a, &sp), 0);
	sp.sched_priority = lo;
	assert_int_equal(pthread_attr_setschedparam(&a, &sp), 0);
	sp.sched_priority = (lo + hi) / 2;
	assert_int_equal(pthread_attr_setschedparam(&a, &sp), 0);
	memset(&sp, 0, sizeof sp);
	assert_int_equal(pthread_attr_getschedparam(&a, &sp), 0);
	assert_int_equal(sp.sched_priority, (lo + hi) / 2);
	/* Changing the policy does not re-check the stored priority. */
	assert_int_equal(pthread_attr_setschedpolicy(&a, SCHED_OTHER), 0);
	assert_int_equal(pthread_attr_getschedparam(&a, &sp), 0);
	assert_int_equal(sp.sched_priority, (lo + hi) / 2);
	pthread_attr_destroy(&a);
}

static void test_stacksize(void **state)
{
	(void)state;
	pthread_attr_t a;
	size_t sz;
	pthread_attr_init(&a);
	assert_int_equal(pthread_attr_setstacksize(&a, 0), EINVAL);
	assert_int_equal(pthread_attr_setstacksize(&a, fixed_min - 1), EINVAL);
	assert_int_equal(pthread_attr_setstacksize(&a, fixed_min), 0);
	assert_int_equal(pthread_attr_getstacksize(&a, &sz), 0);
	assert_int_equal(sz, fixed_min);
	assert_int_equal(pthread_attr_setstacksize(&a, (size_t)PTHREAD_STACK_MIN), 0);
	/* Stored as given, not rounded. */
	assert_int_equal(pthread_attr_setstacksize(&a, (1u << 20) + 1), 0);
	assert_int_equal(pthread_attr_getstacksize(&a, &sz), 0);
	assert_int_equal(sz, (1u << 20) + 1);
	assert_int_equal(pthread_attr_setstacksize(&a, 100), EINVAL);
	assert_int_equal(pthread_attr_getstacksize(&a, &sz), 0);
	assert_int_equal(sz, (1u << 20) + 1);
	pthread_attr_destroy(&a);
}

static void test_stack_and_stackaddr(void **state)
{
	(void)state;
	pthread_attr_t a;
	void *p;
	size_t sz;
	static char buf[1 << 17] __attribute__((aligned(64)));
	pthread_attr_init(&a);
	assert_int_equal(pthread_attr_setstack(&a, buf, sizeof buf), 0);
	assert_int_equal(pthread_attr_getstack(&a, &p, &sz), 0);
	assert_ptr_equal(p, buf);
	assert_int_equal(sz, sizeof buf);
	assert_int_equal(pthread_attr_getstacksize(&a, &sz), 0);
	assert_int_equal(sz, sizeof buf);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	/* The obsolete address is the top of the stack (it grows down). */
	assert_int_equal(pthread_attr_getstackaddr(&a, &p), 0);
	assert_ptr_equal(p, buf + sizeof buf);
	/* Too small: refused, and nothing changes. */
	assert_int_equal(pthread_attr_setstack(&a, buf, fixed_min - 1), EINVAL);
	assert_int_equal(pthread_attr_getstack(&a, &p, &sz), 0);
	assert_ptr_equal(p, buf);
	assert_int_equal(sz, sizeof buf);
	/* Any alignment is accepted, as in glibc. */
	assert_int_equal(pthread_attr_setstack(&a, buf + 1, fixed_min), 0);
	assert_int_equal(pthread_attr_getstack(&a, &p, &sz), 0);
	assert_ptr_equal(p, buf + 1);
	assert_int_equal(sz, fixed_min);

	pthread_attr_t b;
	pthread_attr_init(&b);
	assert_int_equal(pthread_attr_setstackaddr(&b, buf + sizeof buf), 0);
	assert_int_equal(pthread_attr_getstackaddr(&b, &p), 0);
	assert_ptr_equal(p, buf + sizeof buf);
	assert_int_equal(pthread_attr_setstacksize(&b, fixed_min), 0);
	assert_int_equal(pthread_attr_getstack(&b, &p, &sz), 0);
	assert_ptr_equal(p, buf + sizeof buf - fixed_min);
	assert_int_equal(sz, fixed_min);
#pragma GCC diagnostic pop
	pthread_attr_destroy(&b);

	/* A region that wraps around the address space: libppl refuses it,
	 * glibc stores it (docs/abi.md). */
	void *high = (void *)(UINTPTR_MAX - 4095);
	assert_int_equal(pthread_attr_setstack(&a, high, 1u << 20), on_libppl ? EINVAL : 0);
	pthread_attr_destroy(&a);
}

static void test_guardsize(void **state)
{
	(void)state;
	pthread_attr_t a;
	size_t sz;
	pthread_attr_init(&a);
	const size_t vals[] = { 0, 1, 12345, 3 * page, page };
	for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
		assert_int_equal(pthread_attr_setguardsize(&a, vals[i]), 0);
		assert_int_equal(pthread_attr_getguardsize(&a, &sz), 0);
		assert_int_equal(sz, vals[i]);   /* stored as given */
	}
	pthread_attr_destroy(&a);
}

static void test_affinity(void **state)
{
	(void)state;
	pthread_attr_t a;
	cpu_set_t set, out;
	pthread_attr_init(&a);
	/* None stored: every CPU. */
	memset(&out, 0, sizeof out);
	assert_int_equal(pthread_attr_getaffinity_np(&a, sizeof out, &out), 0);
	assert_int_equal(CPU_COUNT(&out), CPU_SETSIZE);

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	CPU_SET(3, &set);
	assert_int_equal(pthread_attr_setaffinity_np(&a, sizeof set, &set), 0);
	memset(&out, 0xff, sizeof out);
	assert_int_equal(pthread_attr_getaffinity_np(&a, sizeof out, &out), 0);
	assert_true(CPU_EQUAL(&set, &out));
	/* A larger buffer is zero-filled beyond the stored set. */
	unsigned char big[2 * sizeof(cpu_set_t)];
	memset(big, 0xaa, sizeof big);
	assert_int_equal(pthread_attr_getaffinity_np(&a, sizeof big, (cpu_set_t *)big), 0);
	assert_memory_equal(big, &set, sizeof set);
	for (size_t i = sizeof set; i < sizeof big; i++)
		assert_int_equal(big[i], 0);
	/* A stored set with a CPU beyond the caller's buffer: EINVAL. */
	memset(big, 0, sizeof big);
	big[sizeof big - 1] = 0x80;
	assert_int_equal(pthread_attr_setaffinity_np(&a, sizeof big, (cpu_set_t *)big), 0);
	assert_int_equal(pthread_attr_getaffinity_np(&a, sizeof out, &out), EINVAL);
	/* A smaller stored set reads back zero-extended. */
	assert_int_equal(pthread_attr_setaffinity_np(&a, 8, &set), 0);
	memset(&out, 0xff, sizeof out);
	assert_int_equal(pthread_attr_getaffinity_np(&a, sizeof out, &out), 0);
	assert_true(CPU_EQUAL(&set, &out));
	/* NULL or size 0 removes it. */
	assert_int_equal(pthread_attr_setaffinity_np(&a, 0, &set), 0);
	assert_int_equal(pthread_attr_getaffinity_np(&a, sizeof out, &out), 0);
	assert_int_equal(CPU_COUNT(&out), CPU_SETSIZE);
	assert_int_equal(pthread_attr_setaffinity_np(&a, sizeof set, &set), 0);
	/* Declared nonnull, but both implementations accept NULL. */
	static cpu_set_t *volatile no_set;
	assert_int_equal(pthread_attr_setaffinity_np(&a, sizeof set, no_set), 0);
	assert_int_equal(pthread_attr_getaffinity_np(&a, sizeof out, &out), 0);
	assert_int_equal(CPU_COUNT(&out), CPU_SETSIZE);
	assert_int_equal(pthread_attr_destroy(&a), 0);
}

static bool raw_bit(const sigset_t *s, int sig)
{
	const unsigned long *w = (const unsigned long *)s;
	const size_t bits = 8 * sizeof *w;
	return (w[(size_t)(sig - 1) / bits] >> ((size_t)(sig - 1) % bits)) & 1;
}

static void test_sigmask(void **state)
{
	(void)state;
	pthread_attr_t a;
	sigset_t s, out;
	pthread_attr_init(&a);
	sigfillset(&out);
	assert_int_equal(pthread_attr_getsigmask_np(&a, &out), PTHREAD_ATTR_NO_SIGMASK_NP);
	assert_int_equal(sigismember(&out, SIGUSR1), 0);   /* emptied */

	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigaddset(&s, SIGTERM);
	assert_int_equal(pthread_attr_setsigmask_np(&a, &s), 0);
	sigemptyset(&out);
	assert_int_equal(pthread_attr_getsigmask_np(&a, &out), 0);
	assert_int_equal(sigismember(&out, SIGUSR1), 1);
	assert_int_equal(sigismember(&out, SIGTERM), 1);
	assert_int_equal(sigismember(&out, SIGUSR2), 0);

	/* The C library's two internal signals never get in. */
	memset(&s, 0xff, sizeof s);
	assert_int_equal(pthread_attr_setsigmask_np(&a, &s), 0);
	assert_int_equal(pthread_attr_getsigmask_np(&a, &out), 0);
	assert_false(raw_bit(&out, __SIGRTMIN));
	assert_false(raw_bit(&out, __SIGRTMIN + 1));
	assert_true(raw_bit(&out, SIGRTMIN));
	assert_true(raw_bit(&out, SIGINT));

	assert_int_equal(pthread_attr_setsigmask_np(&a, NULL), 0);
	assert_int_equal(pthread_attr_getsigmask_np(&a, &out), PTHREAD_ATTR_NO_SIGMASK_NP);
	assert_int_equal(pthread_attr_destroy(&a), 0);
}

static void test_default_attr(void **state)
{
	(void)state;
	pthread_attr_t d, a;
	size_t sz, orig;
	int v;
	assert_int_equal(pthread_getattr_default_np(&d), 0);
	assert_int_equal(pthread_attr_getstacksize(&d, &orig), 0);
	assert_true(orig >= fixed_min);
	assert_int_equal(pthread_attr_getguardsize(&d, &sz), 0);
	assert_int_equal(sz, page);
	assert_int_equal(pthread_attr_getdetachstate(&d, &v), 0);
	assert_int_equal(v, PTHREAD_CREATE_JOINABLE);
	pthread_attr_destroy(&d);

	/* A new default stack size shows in fresh attributes too. */
	pthread_attr_init(&a);
	assert_int_equal(pthread_attr_setstacksize(&a, 1u << 20), 0);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(1, &set);
	assert_int_equal(pthread_attr_setaffinity_np(&a, sizeof set, &set), 0);
	assert_int_equal(pthread_setattr_default_np(&a), 0);
	pthread_attr_destroy(&a);
	assert_int_equal(pthread_getattr_default_np(&d), 0);
	assert_int_equal(pthread_attr_getstacksize(&d, &sz), 0);
	assert_int_equal(sz, 1u << 20);
	cpu_set_t out;
	assert_int_equal(pthread_attr_getaffinity_np(&d, sizeof out, &out), 0);
	assert_true(CPU_EQUAL(&set, &out));
	pthread_attr_destroy(&d);
	pthread_attr_init(&a);
	assert_int_equal(pthread_attr_getstacksize(&a, &sz), 0);
	assert_int_equal(sz, 1u << 20);

	/* An attribute with no stack size keeps the current default size;
	 * its (absent) affinity replaces the old one. */
	assert_int_equal(pthread_setattr_default_np(&a), 0);
	assert_int_equal(pthread_getattr_default_np(&d), 0);
	assert_int_equal(pthread_attr_getstacksize(&d, &sz), 0);
	assert_int_equal(sz, 1u << 20);
	assert_int_equal(pthread_attr_getaffinity_np(&d, sizeof out, &out), 0);
	assert_int_equal(CPU_COUNT(&out), CPU_SETSIZE);
	pthread_attr_destroy(&d);

	/* A default stack address makes no sense: EINVAL. */
	static char buf[1 << 16];
	pthread_attr_t s;
	pthread_attr_init(&s);
	assert_int_equal(pthread_attr_setstack(&s, buf, sizeof buf), 0);
	assert_int_equal(pthread_setattr_default_np(&s), EINVAL);
	pthread_attr_destroy(&s);
	/* A FIFO priority out of range: EINVAL. */
	pthread_attr_init(&s);
	assert_int_equal(pthread_attr_setschedpolicy(&s, SCHED_FIFO), 0);
	struct sched_param sp = { .sched_priority = sched_get_priority_max(SCHED_FIFO) };
	assert_int_equal(pthread_attr_setschedparam(&s, &sp), 0);
	assert_int_equal(pthread_attr_setschedpolicy(&s, SCHED_OTHER), 0);
	assert_int_equal(pthread_setattr_default_np(&s), EINVAL);
	pthread_attr_destroy(&s);

	/* Restore the original default. */
	assert_int_equal(pthread_attr_setstacksize(&a, orig), 0);
	assert_int_equal(pthread_setattr_default_np(&a), 0);
	pthread_attr_destroy(&a);
	assert_int_equal(pthread_getattr_default_np(&d), 0);
	assert_int_equal(pthread_attr_getstacksize(&d, &sz), 0);
	assert_int_equal(sz, orig);
	pthread_attr_destroy(&d);
}

/* ---- attributes as threads see them (needs the runtime) ---------------------- */

struct seen {
	pthread_attr_t attr;
	int err;
	char *local;
};

static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t seen_cond = PTHREAD_COND_INITIALIZER;
static bool seen_done;

static void *report_attr(void *arg)
{
	struct seen *s = arg;
	char here;
	s->local = &here;
	s->err = pthread_getattr_np(pthread_self(), &s->attr);
	pthread_mutex_lock(&seen_lock);
	seen_done = true;
	pthread_cond_signal(&seen_cond);
	pthread_mutex_unlock(&seen_lock);
	return NULL;
}

/* Start a thread with `a`, let it describe itself, wait for the report. */
static void run_reporter(const pthread_attr_t *a, struct seen *s, bool join)
{
	pthread_t t;
	seen_done = false;
	assert_int_equal(pthread_create(&t, a, report_attr, s), 0);
	pthread_mutex_lock(&seen_lock);
	while (!seen_done)
		pthread_cond_wait(&seen_cond, &seen_lock);
	pthread_mutex_unlock(&seen_lock);
	if (join)
		assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(s->err, 0);
}

static void test_thread_gets_attrs(void **state)
{
	(void)state;
	pthread_attr_t a;
	struct seen s;
	size_t sz;
	void *p;
	int v;
	pthread_attr_init(&a);
	assert_int_equal(pthread_attr_setstacksize(&a, 256 * 1024), 0);
	assert_int_equal(pthread_attr_setguardsize(&a, 2 * page), 0);
	run_reporter(&a, &s, true);
	assert_int_equal(pthread_attr_getstack(&s.attr, &p, &sz), 0);
	assert_true(sz >= 256 * 1024);
	assert_true(s.local > (char *)p && s.local < (char *)p + sz);
	assert_int_equal(pthread_attr_getguardsize(&s.attr, &sz), 0);
	assert_int_equal(sz, 2 * page);
	assert_int_equal(pthread_attr_getdetachstate(&s.attr, &v), 0);
	assert_int_equal(v, PTHREAD_CREATE_JOINABLE);
	pthread_attr_destroy(&s.attr);

	/* Detached. */
	assert_int_equal(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED), 0);
	run_reporter(&a, &s, false);
	assert_int_equal(pthread_attr_getdetachstate(&s.attr, &v), 0);
	assert_int_equal(v, PTHREAD_CREATE_DETACHED);
	pthread_attr_destroy(&s.attr);
	pthread_attr_destroy(&a);
}

static void test_thread_on_user_stack(void **state)
{
	(void)state;
	size_t size = 256 * 1024;
	void *stack = aligned_alloc(page, size);
	assert_non_null(stack);
	pthread_attr_t a;
	struct seen s;
	void *p;
	size_t sz;
	pthread_attr_init(&a);
	assert_int_equal(pthread_attr_setstack(&a, stack, size), 0);
	run_reporter(&a, &s, true);
	assert_true(s.local > (char *)stack && s.local < (char *)stack + size);
	assert_int_equal(pthread_attr_getstack(&s.attr, &p, &sz), 0);
	assert_true((char *)p >= (char *)stack && (char *)p + sz <= (char *)stack + size);
	assert_true(s.local > (char *)p && s.local < (char *)p + sz);
	pthread_attr_destroy(&s.attr);
	pthread_attr_destroy(&a);
	free(stack);
}

/* libppl only: both scopes create threads, and the thread reports its own. */
static void test_thread_scopes(void **state)
{
	(void)state;
	if (!on_libppl)
		skip();
	const int scopes[] = { PTHREAD_SCOPE_PROCESS, PTHREAD_SCOPE_SYSTEM };
	for (size_t i = 0; i < 2; i++) {
		pthread_attr_t a;
		struct seen s;
		int v;
		pthread_attr_init(&a);
		assert_int_equal(pthread_attr_setscope(&a, scopes[i]), 0);
		run_reporter(&a, &s, true);
		assert_int_equal(pthread_attr_getscope(&s.attr, &v), 0);
		assert_int_equal(v, scopes[i]);
		pthread_attr_destroy(&s.attr);
		pthread_attr_destroy(&a);
	}
}

/* libppl only: an attribute never passed to pthread_attr_init (all zero)
 * reads as a default one (glibc leaves this undefined). */
static void test_zero_attr(void **state)
{
	(void)state;
	if (!on_libppl)
		skip();
	pthread_attr_t a;
	size_t sz;
	int v;
	memset(&a, 0, sizeof a);
	assert_int_equal(pthread_attr_getguardsize(&a, &sz), 0);
	assert_int_equal(sz, page);
	assert_int_equal(pthread_attr_getstacksize(&a, &sz), 0);
	assert_true(sz >= fixed_min);
	assert_int_equal(pthread_attr_getscope(&a, &v), 0);
	assert_int_equal(v, PTHREAD_SCOPE_PROCESS);
	assert_int_equal(pthread_attr_getdetachstate(&a, &v), 0);
	assert_int_equal(v, PTHREAD_CREATE_JOINABLE);
	struct seen s;
	run_reporter(&a, &s, true);
	assert_int_equal(pthread_attr_getguardsize(&s.attr, &sz), 0);
	assert_int_equal(sz, page);
	pthread_attr_destroy(&s.attr);
}

/* cmocka keeps its state in thread-local storage.  Until libppl gives each
 * user thread its own TLS (issue 3), a user thread sees the TLS of the VP it
 * runs on, and the thread running the tests migrates when it blocks: so the
 * tests run on a PTHREAD_SCOPE_SYSTEM thread, which keeps a VP (and its
 * TLS) to itself.  On glibc every thread is SYSTEM scope already. */
struct run {
	const struct CMUnitTest *tests;
	size_t n;
	CMFixtureFunction setup;
	int rc;
};

static void *run_group(void *arg)
{
	struct run *r = arg;
	r->rc = _cmocka_run_group_tests("tests", r->tests, r->n, r->setup, NULL);
	return NULL;
}

static int run_bound(const struct CMUnitTest *tests, size_t n, CMFixtureFunction setup)
{
	struct run r = { tests, n, setup, -1 };
	pthread_attr_t a;
	pthread_t t;
	if (pthread_attr_init(&a) != 0 || pthread_attr_setscope(&a, PTHREAD_SCOPE_SYSTEM) != 0 ||
	    pthread_create(&t, &a, run_group, &r) != 0 || pthread_join(t, NULL) != 0) {
		fprintf(stderr, "cannot start the test thread\n");
		return 1;
	}
	pthread_attr_destroy(&a);
	return r.rc;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_defaults),
		cmocka_unit_test(test_detachstate),
		cmocka_unit_test(test_scope),
		cmocka_unit_test(test_inheritsched),
		cmocka_unit_test(test_schedpolicy_and_param),
		cmocka_unit_test(test_stacksize),
		cmocka_unit_test(test_stack_and_stackaddr),
		cmocka_unit_test(test_guardsize),
		cmocka_unit_test(test_affinity),
		cmocka_unit_test(test_sigmask),
		cmocka_unit_test(test_default_attr),
		cmocka_unit_test(test_thread_gets_attrs),
		cmocka_unit_test(test_thread_on_user_stack),
		cmocka_unit_test(test_thread_scopes),
		cmocka_unit_test(test_zero_attr),
	};
	return run_bound(tests, sizeof tests / sizeof tests[0], setup);
}
