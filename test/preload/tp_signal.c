/* Per-thread signals: pthread_kill to oneself, to a thread blocked on a
 * barrier (its handler runs, the wait goes on), to a thread that blocks the
 * signal (pending until it unblocks, in that thread); pthread_sigmask is per
 * thread and inherited by new threads; error codes. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "tp_util.h"

static atomic_int usr1, usr2;
static _Atomic(pthread_t) usr2_thread;
static pthread_barrier_t bar;
static atomic_int phase;

static void on_usr1(int sig)
{
	atomic_fetch_add(&usr1, 1);
}

static void on_usr2(int sig)
{
	atomic_store(&usr2_thread, pthread_self());
	atomic_fetch_add(&usr2, 1);
}

static void wait_for(atomic_int *v, int want)
{
	for (int i = 0; i < 5000 && atomic_load(v) < want; i++)
		usleep(1000);
	CHECK(atomic_load(v) >= want);
}

static void *barrier_waiter(void *arg)
{
	atomic_store(&phase, 1);
	int r = pthread_barrier_wait(&bar);
	CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
	atomic_store(&phase, 2);
	return NULL;
}

static void *masker(void *arg)
{
	sigset_t s, cur;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &s, NULL));
	atomic_store(&phase, 1);
	/* Switch a lot while main sends SIGUSR2: it must stay pending. */
	while (atomic_load(&phase) < 2)
		sched_yield();
	for (int i = 0; i < 200; i++)
		sched_yield();
	CHECK(atomic_load(&usr2) == 0);
	CHECK_OK(pthread_sigmask(SIG_SETMASK, NULL, &cur));
	CHECK(sigismember(&cur, SIGUSR2));
	CHECK_OK(pthread_sigmask(SIG_UNBLOCK, &s, NULL));
	/* Delivered to this thread by the time pthread_sigmask returns. */
	CHECK(atomic_load(&usr2) == 1);
	CHECK(pthread_equal(atomic_load(&usr2_thread), pthread_self()));
	return NULL;
}

static void *inherits(void *arg)
{
	sigset_t cur;
	CHECK_OK(pthread_sigmask(SIG_BLOCK, NULL, &cur));
	CHECK(sigismember(&cur, SIGUSR1));
	CHECK(!sigismember(&cur, SIGUSR2));
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	sa.sa_handler = on_usr2;
	CHECK(sigaction(SIGUSR2, &sa, NULL) == 0);

	/* To oneself: handled before pthread_kill returns. */
	CHECK_OK(pthread_kill(pthread_self(), SIGUSR1));
	CHECK(atomic_load(&usr1) == 1);
	CHECK(pthread_kill(pthread_self(), 0) == 0);
	CHECK(pthread_kill(pthread_self(), -1) == EINVAL);
	CHECK(pthread_kill(pthread_self(), 65) == EINVAL);
	CHECK(pthread_sigmask(12345, NULL, NULL) == 0);   /* how is ignored without a set */
	sigset_t none;
	sigemptyset(&none);
	CHECK(pthread_sigmask(12345, &none, NULL) == EINVAL);

	/* To a thread blocked on a barrier: the handler runs, the wait goes on. */
	pthread_t t;
	CHECK_OK(pthread_barrier_init(&bar, NULL, 2));
	CHECK_OK(pthread_create(&t, NULL, barrier_waiter, NULL));
	wait_for(&phase, 1);
	usleep(20000);
	CHECK_OK(pthread_kill(t, SIGUSR1));
	wait_for(&usr1, 2);
	usleep(20000);
	CHECK(atomic_load(&phase) == 1);
	int r = pthread_barrier_wait(&bar);
	CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
	CHECK_OK(pthread_join(t, NULL));
	CHECK(atomic_load(&phase) == 2);
	CHECK_OK(pthread_barrier_destroy(&bar));

	/* A blocked signal stays pending on its thread until unblocked. */
	atomic_store(&phase, 0);
	CHECK_OK(pthread_create(&t, NULL, masker, NULL));
	wait_for(&phase, 1);
	CHECK_OK(pthread_kill(t, SIGUSR2));
	atomic_store(&phase, 2);
	CHECK_OK(pthread_join(t, NULL));
	CHECK(atomic_load(&usr2) == 1);

	/* Masks are inherited by new threads, and main's own is its own. */
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &s, NULL));
	CHECK_OK(pthread_create(&t, NULL, inherits, NULL));
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(pthread_kill(pthread_self(), SIGUSR1));
	CHECK(atomic_load(&usr1) == 2);
	CHECK_OK(pthread_sigmask(SIG_UNBLOCK, &s, NULL));
	CHECK(atomic_load(&usr1) == 3);
	puts("signal: ok");
	return 0;
}
