/* Timers of a VP whose kernel thread blocks in a raw futex wait.  Six
 * threads wait in syscall(SYS_futex) (as std::atomic::wait, the C++20
 * semaphores, libgomp do) while main sleeps, then waits on a condition
 * variable and a semaphore with timeouts: each of main's timers sits on a
 * VP that goes on to run a futex waiter and blocks in the kernel without
 * announcing it.  The monitor used to look at such a VP only while threads
 * were queued on it, not when its timer came due, so main slept for ever
 * (libstdc++'s wait_notify/100334 and semaphore/100806 hung that way). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#include "tp_util.h"

#define WAITERS 6
#define LATE_NS 5000000000LL   /* generous: the machine is shared */

static _Atomic int gate;

static void *waiter(void *arg)
{
	(void)arg;
	while (atomic_load(&gate) == 0)
		syscall(SYS_futex, &gate, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	return NULL;
}

static struct timespec realtime_in(long ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += ms * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	return ts;
}

/* The step took at least want_ms and was not late beyond LATE_NS. */
static void check_took(const char *what, long long t0, long want_ms)
{
	long long took = tp_now_ns() - t0;
	if (took < want_ms * 1000000LL - 1000000LL || took > want_ms * 1000000LL + LATE_NS) {
		fprintf(stderr, "%s took %lld ms, expected %ld\n", what, took / 1000000, want_ms);
		exit(1);
	}
}

int main(void)
{
	alarm(30);
	pthread_t t[WAITERS];
	for (int i = 0; i < WAITERS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, waiter, NULL));

	long long t0 = tp_now_ns();
	struct timespec nap = { 0, 100000000L };
	while (nanosleep(&nap, &nap) != 0)
		CHECK(errno == EINTR);
	check_took("nanosleep", t0, 100);

	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	struct timespec ts = realtime_in(50);
	t0 = tp_now_ns();
	CHECK_OK(pthread_mutex_lock(&m));
	int r;
	while ((r = pthread_cond_timedwait(&c, &m, &ts)) == 0)
		;
	CHECK(r == ETIMEDOUT);
	CHECK_OK(pthread_mutex_unlock(&m));
	check_took("pthread_cond_timedwait", t0, 49);

	sem_t s;
	CHECK(sem_init(&s, 0, 0) == 0);
	ts = realtime_in(50);
	t0 = tp_now_ns();
	while ((r = sem_timedwait(&s, &ts)) != 0 && errno == EINTR)
		;
	CHECK(r != 0 && errno == ETIMEDOUT);
	check_took("sem_timedwait", t0, 49);

	atomic_store(&gate, 1);
	syscall(SYS_futex, &gate, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	for (int i = 0; i < WAITERS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	printf("timers fired while %d threads waited in raw futexes\n", WAITERS);
	return 0;
}
