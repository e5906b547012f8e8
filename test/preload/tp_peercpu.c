/* Another thread's CPU clock (pthread_getcpuclockid) read while that
 * thread computes on another kernel thread counts its time up to now, as
 * on NPTL, whatever the VP backend makes kernel threads of (with the
 * process backend the kernel reads no other process's thread clock).
 * The spinner publishes its own clock as it goes; main's read of the
 * spinner's clock is never more than a few ms behind what was published
 * before it. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tp_util.h"

#define MS 1000000LL

static pid_t initial_ktid;
static _Atomic long long published;   /* the spinner's CPU time, by itself */
static atomic_int stop;

static long long clock_ns(clockid_t c)
{
	struct timespec ts;
	CHECK(clock_gettime(c, &ts) == 0);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *spinner(void *arg)
{
	(void)arg;
	/* Off the initial kernel thread (at most 1 s: with one VP it never is). */
	long long end = tp_now_ns() + 1000000000LL;
	while (syscall(SYS_gettid) == initial_ktid && tp_now_ns() < end)
		sched_yield();
	while (!atomic_load(&stop)) {
		for (volatile int i = 0; i < 20000; i++)
			;
		atomic_store(&published, clock_ns(CLOCK_THREAD_CPUTIME_ID));
	}
	return NULL;
}

static void *busy(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		sched_yield();
	return NULL;
}

int main(void)
{
	initial_ktid = (pid_t)syscall(SYS_gettid);
	clock_ns(CLOCK_THREAD_CPUTIME_ID);   /* libppl counts from the first read */
	pthread_t b, s;
	CHECK_OK(pthread_create(&b, NULL, busy, NULL));
	CHECK_OK(pthread_create(&s, NULL, spinner, NULL));
	clockid_t c;
	CHECK_OK(pthread_getcpuclockid(s, &c));
	long long deadline = tp_now_ns() + 20000000000LL;
	int reads = 0, behind = 0;
	long long worst = 0;
	while (reads < 20 && tp_now_ns() < deadline) {
		long long p = atomic_load(&published);
		if (p < (reads + 1) * 10 * MS) {
			sched_yield();
			continue;
		}
		long long mine = clock_ns(c);
		if (mine < p - 10 * MS) {
			behind++;
			if (p - mine > worst)
				worst = p - mine;
		}
		reads++;
	}
	atomic_store(&stop, 1);
	CHECK_OK(pthread_join(s, NULL));
	CHECK_OK(pthread_join(b, NULL));
	if (reads < 20) {
		fprintf(stderr, "the spinner used %lld ms of CPU in 20 s\n", atomic_load(&published) / MS);
		return 1;
	}
	if (behind > 0) {
		fprintf(stderr, "%d of %d reads of the spinner's clock were behind it, by up to %lld ms\n",
			behind, reads, worst / MS);
		return 1;
	}
	puts("ok");
	return 0;
}
