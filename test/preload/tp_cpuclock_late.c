/* tp_cpuclock_late: a thread that was already computing when the program
 * first asked for a CPU clock has a clock that advances, as on NPTL, where
 * the kernel counts every thread from its start.  The thread computes on
 * a kernel thread of its own (with 2+ VPs: main never gives up its VP
 * until the thread has started, so another VP runs it, alone, and never
 * switches it), then:
 *  - "timer": main asks for its clock (the program's first), arms a 50 ms
 *    timer on it and waits for its signal: it comes, the clock read >= 50 ms;
 *  - "self": main reads its own clock (the program's first), then the
 *    thread reads its own: it advances while the thread computes.
 * Bounded by the process's CPU time (2 s), not wall-clock time, so a
 * loaded machine only makes it slower. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "tp_util.h"

#define MS 1000000LL

static atomic_int started, go, stop;
static _Atomic long long self_used = -1;   /* "self": what the thread's clock gave */

static long long ns(clockid_t c)
{
	struct timespec ts;
	CHECK(clock_gettime(c, &ts) == 0);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The process has used 2 s of CPU time more than at `since`: give up. */
static int too_long(long long since)
{
	return ns(CLOCK_PROCESS_CPUTIME_ID) - since > 2000 * MS;
}

static void *computer(void *arg)
{
	int self = arg != NULL;
	atomic_store(&started, 1);
	/* Computes, calling nothing, until main has started the counting. */
	while (!atomic_load(&go) && !atomic_load(&stop))
		;
	if (self && !atomic_load(&stop)) {
		long long p0 = ns(CLOCK_PROCESS_CPUTIME_ID);
		long long t0 = ns(CLOCK_THREAD_CPUTIME_ID), t = t0;
		while (t - t0 < 50 * MS && !too_long(p0))
			t = ns(CLOCK_THREAD_CPUTIME_ID);
		atomic_store(&self_used, t - t0);
	}
	while (!atomic_load(&stop))
		;
	return NULL;
}

/* Waits 100 ms for SIGUSR1 (blocked in every thread): 1 if it came.  Not
 * a sleep: a timer due on main's VP would make the computer's VP switch
 * it at a tick (it runs other VPs' due timers), which hides the bug. */
static int wait_sig(void)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	struct timespec d = { 0, 100 * MS };
	int r = sigtimedwait(&s, NULL, &d);
	CHECK(r == SIGUSR1 || errno == EAGAIN || errno == EINTR);
	return r == SIGUSR1;
}

int main(int argc, char **argv)
{
	alarm(60);
	int self = argc > 1 && strcmp(argv[1], "self") == 0;
	CHECK(argc > 1 && (self || strcmp(argv[1], "timer") == 0));
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &s, NULL));
	pthread_t th;
	CHECK_OK(pthread_create(&th, NULL, computer, self ? (void *)1 : NULL));
	/* Main keeps its VP (no call) until another one runs the thread; on
	 * one VP a preemption tick lets it start. */
	while (!atomic_load(&started))
		;
	long long p0 = ns(CLOCK_PROCESS_CPUTIME_ID);
	if (self) {
		ns(CLOCK_THREAD_CPUTIME_ID);   /* the program's first CPU clock */
		atomic_store(&go, 1);
		while (atomic_load(&self_used) < 0 && !too_long(p0))
			wait_sig();
		long long used = atomic_load(&self_used);
		if (used < 50 * MS)
			fprintf(stderr, "the thread's own clock advanced %lld ms\n", used / MS);
		CHECK(used >= 50 * MS);
	} else {
		clockid_t c;
		CHECK_OK(pthread_getcpuclockid(th, &c));   /* the program's first */
		long long c0 = ns(c);
		struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1 };
		timer_t t;
		CHECK(timer_create(c, &ev, &t) == 0);
		struct itimerspec v = { .it_value = { 0, 50 * MS } };
		CHECK(timer_settime(t, 0, &v, NULL) == 0);
		int fired = 0;
		while (!fired && !too_long(p0))
			fired = wait_sig();
		long long used = ns(c) - c0;
		if (!fired || used < 50 * MS)
			fprintf(stderr, "timer fired %d, the thread's clock advanced %lld ms\n",
				fired, used / MS);
		CHECK(fired);
		CHECK(used >= 50 * MS);
		CHECK(timer_delete(t) == 0);
	}
	atomic_store(&stop, 1);
	CHECK_OK(pthread_join(th, NULL));
	puts("ok");
	return 0;
}
