/* What the kernel's sched_getparam shows of a thread holding a priority
 * protect mutex, through glibc's wrapper and a raw syscall() with
 * gettid(): NPTL raises the kernel thread's priority to the ceiling
 * (glibc's tpp.c), while pthread_getschedparam keeps the thread's own.
 * glibc's tst-mutexpp10 checks it so; libppl answered the raw call with
 * the thread's own priority once syscall() named the user thread.  Skips
 * (77) without the right to use SCHED_FIFO. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <sys/syscall.h>

#include "tp_util.h"

static void expect(int normal, int boosted)
{
	struct sched_param sp;
	int policy;
	CHECK_OK(pthread_getschedparam(pthread_self(), &policy, &sp));
	CHECK(policy == SCHED_FIFO && sp.sched_priority == normal);
	pid_t tid = (pid_t)syscall(SYS_gettid);
	CHECK(syscall(SYS_sched_getparam, tid, &sp) == 0);
	if (sp.sched_priority != boosted) {
		fprintf(stderr, "raw sched_getparam: %d, want %d\n", sp.sched_priority, boosted);
		exit(1);
	}
	CHECK(sched_getparam(tid, &sp) == 0);
	if (sp.sched_priority != boosted) {
		fprintf(stderr, "sched_getparam: %d, want %d\n", sp.sched_priority, boosted);
		exit(1);
	}
}

int main(void)
{
	alarm(10);
	struct sched_param sp = { .sched_priority = 4 };
	int e = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	if (e == EPERM) {
		puts("SKIP: no right to use SCHED_FIFO");
		return 77;
	}
	CHECK_OK(e);
	pthread_mutexattr_t ma;
	CHECK_OK(pthread_mutexattr_init(&ma));
	CHECK_OK(pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_PROTECT));
	pthread_mutex_t m6, m8;
	CHECK_OK(pthread_mutexattr_setprioceiling(&ma, 6));
	CHECK_OK(pthread_mutex_init(&m6, &ma));
	CHECK_OK(pthread_mutexattr_setprioceiling(&ma, 8));
	CHECK_OK(pthread_mutex_init(&m8, &ma));
	expect(4, 4);
	CHECK_OK(pthread_mutex_lock(&m6));
	expect(4, 6);
	CHECK_OK(pthread_mutex_lock(&m8));
	expect(4, 8);
	CHECK_OK(pthread_mutex_unlock(&m8));
	expect(4, 6);
	CHECK_OK(pthread_mutex_unlock(&m6));
	expect(4, 4);
	puts("ok");
	return 0;
}
