/* A pending deferred cancel must not turn what is not a cancellation point
 * into one: a thread that overflows its stack with a cancel pending dies of
 * the fault (SIGSEGV natively; libppl's one-line message and SIGABRT), it
 * does not unwind and exit 0 through an internal write; pthread_setname_np
 * and pthread_getname_np, on itself and on another thread, are not
 * cancellation points (glibc uses prctl and the nocancel open/read/write). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_util.h"

static int rec(int n)
{
	volatile char buf[512];
	buf[0] = (char)n;
	return n ? rec(n - 1) + buf[0] : 0;
}

static void *overflow(void *arg)
{
	(void)arg;
	CHECK_OK(pthread_cancel(pthread_self()));   /* deferred: pending from now on */
	return (void *)(long)rec(1 << 30);
}

/* In a child: the overflow ends the process; join must never return. */
static void overflow_child(void)
{
	alarm(20);
	pthread_attr_t a;
	pthread_t t;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstacksize(&a, 64 * 1024));
	CHECK_OK(pthread_create(&t, &a, overflow, NULL));
	void *res;
	pthread_join(t, &res);
	fprintf(stderr, "overflow with a pending cancel returned %s\n",
		res == PTHREAD_CANCELED ? "PTHREAD_CANCELED" : "a value");
	_exit(0);
}

static void test_overflow(void)
{
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		overflow_child();
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	if (!WIFSIGNALED(st))
		fprintf(stderr, "child exited with status %d\n", WEXITSTATUS(st));
	CHECK(WIFSIGNALED(st));
	CHECK(WTERMSIG(st) == SIGSEGV || WTERMSIG(st) == SIGABRT);
}

static atomic_int other_named, stop;
static atomic_int survived;

static void *other(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		usleep(1000);
	return NULL;
}

static void *namer(void *arg)
{
	pthread_t o = *(pthread_t *)arg;
	char buf[32];
	CHECK_OK(pthread_cancel(pthread_self()));
	CHECK_OK(pthread_getname_np(pthread_self(), buf, sizeof buf));
	CHECK_OK(pthread_getname_np(o, buf, sizeof buf));
	CHECK_OK(pthread_setname_np(pthread_self(), "namer"));
	CHECK_OK(pthread_getname_np(pthread_self(), buf, sizeof buf));
	CHECK(strcmp(buf, "namer") == 0);
	CHECK_OK(pthread_setname_np(o, "other"));
	atomic_store(&other_named, 1);
	CHECK_OK(pthread_getname_np(o, buf, sizeof buf));
	CHECK(strcmp(buf, "other") == 0);
	atomic_store(&survived, 1);
	pthread_testcancel();
	return NULL;
}

static void test_names(void)
{
	/* A system-scope thread: under libppl it has a kernel thread of its
	 * own, so naming it writes /proc/self/task/TID/comm as glibc does. */
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setscope(&a, PTHREAD_SCOPE_SYSTEM));
	pthread_t o, n;
	CHECK_OK(pthread_create(&o, &a, other, NULL));
	CHECK_OK(pthread_create(&n, NULL, namer, &o));
	void *res;
	CHECK_OK(pthread_join(n, &res));
	atomic_store(&stop, 1);
	CHECK_OK(pthread_join(o, NULL));
	if (!atomic_load(&survived))
		fprintf(stderr, "a name call was a cancellation point (other named: %d)\n",
			atomic_load(&other_named));
	CHECK(atomic_load(&survived));
	CHECK(res == PTHREAD_CANCELED);
}

int main(void)
{
	alarm(30);
	test_names();
	test_overflow();
	puts("ok");
	return 0;
}
