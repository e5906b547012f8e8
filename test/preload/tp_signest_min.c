/* Two signals sent to the process in a loop nest in each other's handlers
 * (empty sa_mask), in short-lived threads with PTHREAD_STACK_MIN stacks that
 * unblock them, as in the Open POSIX test pthread_detach/4-3.  On NPTL the
 * deepest a handler gets is two kernel signal frames (AT_MINSIGSTKSZ each)
 * and two handlers under the thread function, plus a few calls.  libppl's
 * routing must not add a frame or a kilobyte to that: a signal that landed
 * while the trampoline decided where the first one runs stacked its frame
 * under libppl's, and the handler of a claim taken inline ran over a
 * ucontext; on the process backend (getpid a system call there) 4-3's
 * threads overflowed their stacks ("stack overflow (stack size 16384)", or
 * a guardless stack's neighbour corrupted).  Run with and without
 * preemption ticks (signest-min-ticks: every 500 us): a tick may not stack
 * a third kernel frame, which NPTL never does, on two handlers (a nested
 * handler runs with the tick blocked) nor under the second one (the tick
 * blocks the application's signals from its first instruction); before,
 * with ticks, it overflowed in every run.  docs/posix.md, "Handlers on
 * small stacks". */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

#include "tp_util.h"

#define HANDLER_BYTES 512   /* each handler's own use */
#define SLACK 1536          /* calls under a frame: pthread_sigmask, sem_post, routing */

static __thread char *stack_lo;          /* the worker's, 0 elsewhere */
static atomic_long room_fn = LONG_MAX;   /* least room at a worker's start */
static atomic_long room_min = LONG_MAX;  /* least room in a handler */
static atomic_long handled;
static atomic_int stop;
static sem_t posted[2];
static sem_t done;
static sigset_t usersigs;

static void note_min(atomic_long *m, long v)
{
	long cur = atomic_load(m);
	while (v < cur && !atomic_compare_exchange_weak(m, &cur, v))
		;
}

static void handler(int sig)
{
	volatile char buf[HANDLER_BYTES];
	for (size_t i = 0; i < sizeof buf; i += 64)
		buf[i] = (char)i;
	if (stack_lo != NULL)
		note_min(&room_min, (long)((char *)&buf[0] - stack_lo));
	atomic_fetch_add(&handled, 1);
	sem_post(&posted[sig == SIGUSR2]);
}

static void *worker(void *arg)
{
	(void)arg;
	volatile char here;
	stack_lo = tp_stack_lo();
	note_min(&room_fn, (long)((char *)&here - stack_lo));
	CHECK_OK(pthread_sigmask(SIG_UNBLOCK, &usersigs, NULL));
	CHECK_OK(pthread_detach(pthread_self()));
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &usersigs, NULL));
	stack_lo = NULL;
	sem_post(&done);
	return NULL;
}

static void *creator(void *arg)
{
	(void)arg;
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN));
	while (!atomic_load(&stop)) {
		pthread_t t;
		CHECK_OK(pthread_create(&t, &a, worker, NULL));
		while (sem_wait(&done) != 0)
			CHECK(errno == EINTR);
	}
	pthread_attr_destroy(&a);
	return NULL;
}

static void *sender(void *arg)
{
	int i = (int)(long)arg;
	while (!atomic_load(&stop)) {
		/* The last signal may stay pending while no worker exists:
		 * send again after a while (4-3 hangs there). */
		struct timespec ts = tp_in_ms(CLOCK_REALTIME, 50);
		(void)sem_timedwait(&posted[i], &ts);
		CHECK(kill(getpid(), i ? SIGUSR2 : SIGUSR1) == 0);
	}
	return NULL;
}

int main(void)
{
	alarm(60);
	sigemptyset(&usersigs);
	sigaddset(&usersigs, SIGUSR1);
	sigaddset(&usersigs, SIGUSR2);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &usersigs, NULL));   /* the workers' only */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);   /* each may nest in the other */
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	CHECK(sigaction(SIGUSR2, &sa, NULL) == 0);
	CHECK(sem_init(&posted[0], 0, 0) == 0);
	CHECK(sem_init(&posted[1], 0, 0) == 0);
	CHECK(sem_init(&done, 0, 0) == 0);
	pthread_t c, s[2];
	CHECK_OK(pthread_create(&c, NULL, creator, NULL));
	for (long i = 0; i < 2; i++)
		CHECK_OK(pthread_create(&s[i], NULL, sender, (void *)i));
	usleep(1500000);
	atomic_store(&stop, 1);
	CHECK_OK(pthread_join(c, NULL));
	for (int i = 0; i < 2; i++) {
		sem_post(&posted[i]);
		CHECK_OK(pthread_join(s[i], NULL));
	}
	long frame = (long)getauxval(AT_MINSIGSTKSZ);
	if (frame <= 0)
		frame = 3072;
	long fn = atomic_load(&room_fn), least = atomic_load(&room_min);
	long bound = fn - 2 * (frame + HANDLER_BYTES) - SLACK;
	printf("room at start %ld, least in a handler %ld (used %ld), bound %ld, frame %ld, "
	       "%ld handled\n",
	       fn, least, fn - least, bound, frame, atomic_load(&handled));
	CHECK(atomic_load(&handled) > 100);
	CHECK(least != LONG_MAX);
	CHECK(least >= bound);
	return 0;
}
