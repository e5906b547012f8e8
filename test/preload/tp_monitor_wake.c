/* A thread made ready on a VP whose kernel thread is blocked in a system
 * call must not wait for that VP's next timer.  With one VP: main joins,
 * t1 waits on a private semaphore with a 30 s deadline (a timer on the
 * VP), t2 waits on a process-shared one (in the kernel, an announced
 * call).  A SIGEV_THREAD timer (a kernel thread of glibc's) posts t1's
 * semaphore after 200 ms; t1 then posts t2's.  The monitor must lend the VP's queue
 * to a spare at once: it used to nap until the 30 s timer was due, so t1
 * ran half a minute late (pthread_cond_destroy/2-1 hung that way). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/mman.h>

#include "tp_util.h"

static sem_t priv;
static sem_t *shared;

static void *t1(void *arg)
{
	(void)arg;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 30;
	int r;
	while ((r = sem_timedwait(&priv, &ts)) != 0 && errno == EINTR)
		;
	CHECK(r == 0);
	CHECK(sem_post(shared) == 0);
	return NULL;
}

static void *t2(void *arg)
{
	(void)arg;
	while (sem_wait(shared) != 0)
		CHECK(errno == EINTR);
	return NULL;
}

static void notify(union sigval v)
{
	(void)v;
	CHECK(sem_post(&priv) == 0);
}

int main(void)
{
	shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		      -1, 0);
	CHECK(shared != MAP_FAILED);
	CHECK(sem_init(shared, 1, 0) == 0);
	CHECK(sem_init(&priv, 0, 0) == 0);
	long long t0 = tp_now_ns();
	/* Armed first: main must then block with no timer of its own, so that
	 * t1's is the VP's only one while t2 waits in the kernel. */
	struct sigevent ev = { .sigev_notify = SIGEV_THREAD, .sigev_notify_function = notify };
	timer_t tm;
	CHECK(timer_create(CLOCK_MONOTONIC, &ev, &tm) == 0);
	struct itimerspec it = { .it_value = { .tv_nsec = 200000000 } };
	CHECK(timer_settime(tm, 0, &it, NULL) == 0);
	pthread_t a, b;
	CHECK_OK(pthread_create(&a, NULL, t1, NULL));
	CHECK_OK(pthread_create(&b, NULL, t2, NULL));
	CHECK_OK(pthread_join(b, NULL));
	CHECK_OK(pthread_join(a, NULL));
	double s = (double)(tp_now_ns() - t0) / 1e9;
	/* Not a benchmark: t1 ran long before its 30 s deadline, or not. */
	CHECK(s < 15);
	CHECK(timer_delete(tm) == 0);
	printf("tp_monitor_wake: ok (%.2f s)\n", s);
	return 0;
}
