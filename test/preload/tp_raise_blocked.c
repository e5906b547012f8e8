/* raise() of a signal the calling thread blocks, then unblocked (glibc's
 * tst-pthread-raise-blocked-self): raise is pthread_kill(pthread_self()),
 * so the signal stays pending on the calling thread, whichever kernel
 * thread it runs on later, and pthread_sigmask's unblock delivers it there
 * before it returns.  A thread that sleeps between the two may come back
 * on another kernel thread than the one raise ran on. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>

#include "tp_util.h"

#define ROUNDS 300

static volatile pthread_t got;
static atomic_int delivered;

static void handler(int sig)
{
	(void)sig;
	got = pthread_self();
	atomic_fetch_add(&delivered, 1);
}

static void *pauser(void *arg)
{
	for (;;)
		pause();   /* holds a kernel thread; cancelled at the end */
	return arg;
}

static void *spinner(void *arg)
{
	long long end = tp_now_ns() + 10LL * 1000000000;
	while (!atomic_load((atomic_int *)arg) && tp_now_ns() < end)
		sched_yield();
	return NULL;
}

int main(void)
{
	alarm(60);
	struct sigaction sa = { .sa_handler = handler };
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	sigset_t all;
	sigfillset(&all);
	pthread_t p, s;
	atomic_int stop = 0;
	CHECK_OK(pthread_create(&p, NULL, pauser, NULL));
	CHECK_OK(pthread_create(&s, NULL, spinner, &stop));
	for (int i = 0; i < ROUNDS; i++) {
		got = 0;
		int before = atomic_load(&delivered);
		CHECK_OK(pthread_sigmask(SIG_BLOCK, &all, NULL));
		CHECK(raise(SIGUSR1) == 0);
		CHECK(atomic_load(&delivered) == before);
		usleep(1000);
		CHECK(atomic_load(&delivered) == before);   /* not to another thread */
		CHECK_OK(pthread_sigmask(SIG_UNBLOCK, &all, NULL));
		if (atomic_load(&delivered) != before + 1 || !pthread_equal(got, pthread_self())) {
			fprintf(stderr, "round %d: %d deliveries, %s\n", i, atomic_load(&delivered) - before,
				got == 0 ? "none" : pthread_equal(got, pthread_self()) ? "to self" : "to another thread");
			return 1;
		}
	}
	atomic_store(&stop, 1);
	CHECK_OK(pthread_cancel(p));
	CHECK_OK(pthread_join(p, NULL));
	CHECK_OK(pthread_join(s, NULL));
	return 0;
}
