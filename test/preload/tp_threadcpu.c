/* tp_threadcpu: a thread's CPU time through every entry point that names
 * the calling thread or a thread id, as on NPTL: CLOCK_THREAD_CPUTIME_ID,
 * the kernel's clock id of a gettid() value, getrusage(RUSAGE_THREAD).
 * Robust under load: only CPU times are compared, relative to one
 * another, with wide margins.
 *  - main computes for 100 ms of its CPU time, then starts a thread: the
 *    thread's clock starts near zero (it read the 100 ms of the VP its
 *    creator kept busy);
 *  - two threads compute side by side: each reads a share, and together
 *    no more than the process's time (each read the whole VP's time);
 *  - getrusage(RUSAGE_THREAD) agrees with the clock;
 *  - clock_getres gives 1 ns; clock_nanosleep on a thread CPU clock is
 *    EINVAL, as glibc. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "tp_util.h"

#define MS 1000000LL

static long long cpu_ns(clockid_t c)
{
	struct timespec ts;
	CHECK(clock_gettime(c, &ts) == 0);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long self_ns(void)
{
	return cpu_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* glibc's encoding of a thread id's CPU clock (CPUCLOCK_SCHED, per thread). */
static clockid_t tid_clock(pid_t tid)
{
	return (clockid_t)((~(unsigned)tid << 3) | 6);
}

static long long rusage_ns(void)
{
	struct rusage r;
	CHECK(getrusage(RUSAGE_THREAD, &r) == 0);
	return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1000000000LL +
	       (r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1000LL;
}

/* Mostly in the program's own code, where a time slice may end (libppl
 * preempts no thread inside the C library). */
static void spin(void)
{
	for (volatile int k = 0; k < 20000; k++)
		;
}

static void compute_for(long long ns)
{
	long long end = self_ns() + ns;
	while (self_ns() < end)
		spin();
}

static long long at_start, after, by_tid, by_rusage;

static void *fresh(void *arg)
{
	at_start = self_ns();
	compute_for(60 * MS);
	after = self_ns();
	by_tid = cpu_ns(tid_clock(gettid()));
	by_rusage = rusage_ns();
	return arg;
}

static long long proc_start, proc_span;
static long long shares[2];

static void *side_by_side(void *arg)
{
	long long *mine = arg;
	long long t0 = self_ns();
	/* Until the process as a whole has computed proc_span more. */
	while (cpu_ns(CLOCK_PROCESS_CPUTIME_ID) < proc_start + proc_span)
		spin();
	*mine = self_ns() - t0;
	return NULL;
}

int main(void)
{
	alarm(60);
	struct timespec res;
	CHECK(clock_getres(CLOCK_THREAD_CPUTIME_ID, &res) == 0);
	CHECK(res.tv_sec == 0 && res.tv_nsec >= 1 && res.tv_nsec <= 1000);
	struct timespec ts = { 0, 1000 };
	CHECK(clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &ts, NULL) == EINVAL);
	clockid_t mine;
	CHECK_OK(pthread_getcpuclockid(pthread_self(), &mine));
	CHECK(clock_nanosleep(mine, 0, &ts, NULL) == EINVAL);
	CHECK(clock_nanosleep(tid_clock(gettid()), 0, &ts, NULL) == EINVAL);

	/* The creator keeps the CPU busy, then starts a thread. */
	long long m0 = self_ns();
	compute_for(100 * MS);
	long long m1 = self_ns();
	CHECK(m1 - m0 >= 100 * MS);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, fresh, NULL));
	CHECK_OK(pthread_join(t, NULL));
	printf("new thread: %.1f ms at start, %.1f after computing 60 (tid clock %.1f, "
	       "rusage %.1f); creator %.1f\n",
	       at_start / 1e6, after / 1e6, by_tid / 1e6, by_rusage / 1e6, (m1 - m0) / 1e6);
	CHECK(at_start < 50 * MS);
	CHECK(after >= 60 * MS && after < 150 * MS);
	CHECK(by_tid >= 60 * MS && by_tid < 150 * MS);
	CHECK(by_rusage >= 30 * MS && by_rusage < 150 * MS);
	/* The creator's own is still its own. */
	CHECK(self_ns() - m0 >= 100 * MS);

	/* Two threads computing at once, for 200 ms of the process's time. */
	proc_span = 200 * MS;
	proc_start = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
	pthread_t a, b;
	CHECK_OK(pthread_create(&a, NULL, side_by_side, &shares[0]));
	CHECK_OK(pthread_create(&b, NULL, side_by_side, &shares[1]));
	CHECK_OK(pthread_join(a, NULL));
	CHECK_OK(pthread_join(b, NULL));
	long long span = cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - proc_start;
	printf("side by side: %.1f + %.1f ms of %.1f ms of the process\n", shares[0] / 1e6,
	       shares[1] / 1e6, span / 1e6);
	CHECK(shares[0] + shares[1] <= span + span / 4);
	CHECK(shares[0] >= span / 20 && shares[1] >= span / 20);
	puts("threadcpu: ok");
	return 0;
}
