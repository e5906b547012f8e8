/* Signal handlers of threads with PTHREAD_STACK_MIN stacks have the room
 * NPTL gives them: the thread's room less the kernel's signal frame (this
 * CPU's, AT_MINSIGSTKSZ).  Here a handler uses 60% of that, in threads that
 * spin (preempted by libppl's ticks, so a signal may reach one as it
 * resumes) or sleep, sent with pthread_kill to each and kill to the
 * process, many rounds.  Under libppl a preempted thread's handler ran
 * above the tick's own signal frame and overflowed (Open POSIX
 * pthread_detach/4-3: "stack overflow (stack size 16384)"). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "tp_util.h"

#define NTHREADS 4
#ifndef ROUNDS
#define ROUNDS 20
#endif

static atomic_int handled;
static atomic_int stop;
static atomic_int ready;
static size_t depth;                 /* bytes the handler uses */
static atomic_long room_fn = LONG_MAX;   /* least room a thread function had */

static void handler(int sig)
{
	(void)sig;
	volatile char buf[depth];
	for (size_t i = 0; i < depth; i += 64)
		buf[i] = (char)i;
	buf[depth - 1] = 1;
	(void)buf[0];   /* a volatile read: the writes are used */
	atomic_fetch_add(&handled, 1);
}

static void *worker(void *arg)
{
	long id = (long)arg;
	volatile char here;
	long room = (long)((char *)&here - tp_stack_lo());
	long cur = atomic_load(&room_fn);
	while (room < cur && !atomic_compare_exchange_weak(&room_fn, &cur, room))
		;
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	CHECK_OK(pthread_sigmask(SIG_UNBLOCK, &s, NULL));   /* main's is kill's only */
	atomic_fetch_add(&ready, 1);
	volatile unsigned long spin = 0;
	while (!atomic_load(&stop)) {
		if (id == 0)
			usleep(500);
		else
			spin++;
	}
	return NULL;
}

int main(void)
{
	alarm(60);
	/* main blocks SIGUSR2: kill() goes to a worker (which unblock it) */
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	/* Measure the threads' room first (handlers blocked meanwhile). */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sigaddset(&sa.sa_mask, SIGUSR1);   /* one handler's frame at a time */
	sigaddset(&sa.sa_mask, SIGUSR2);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	CHECK(sigaction(SIGUSR2, &sa, NULL) == 0);
	pthread_attr_t a;
	CHECK_OK(pthread_attr_init(&a));
	CHECK_OK(pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN));
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &s, NULL));
	pthread_t t[NTHREADS];
	for (long i = 0; i < NTHREADS; i++)
		CHECK_OK(pthread_create(&t[i], &a, worker, (void *)i));
	while (atomic_load(&ready) < NTHREADS)
		usleep(1000);
	long frame = (long)getauxval(AT_MINSIGSTKSZ);
	if (frame <= 0)
		frame = 3072;
	long nptl_room = atomic_load(&room_fn) - frame;
	CHECK(nptl_room > 2048);
	depth = (size_t)(nptl_room * 6 / 10);
	int sent = 0;
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < NTHREADS; i++) {
			CHECK_OK(pthread_kill(t[i], SIGUSR1));
			sent++;
		}
		CHECK(kill(getpid(), SIGUSR2) == 0);
		sent++;
		/* Each pthread_kill is handled; kill's may merge with one
		 * pending: wait for the thread ones at least. */
		long long end = tp_now_ns() + 5000000000LL;
		while (atomic_load(&handled) < sent - (r + 1) && tp_now_ns() < end)
			usleep(200);
		CHECK(atomic_load(&handled) >= sent - (r + 1));
		usleep(r % 3 == 0 ? 3000 : 300);   /* let ticks preempt the spinners */
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < NTHREADS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	printf("ok: depth %zu of %ld, %d handled\n", depth, nptl_room, atomic_load(&handled));
	return 0;
}
