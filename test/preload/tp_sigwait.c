/* sigwait, sigwaitinfo and sigtimedwait in threads: a pthread_kill sent
 * while the thread waits, or before it waits (pending on it), a kill() to
 * the process that only the waiting thread takes, a timeout, and
 * cancellation of a thread blocked in sigwait.  All signals are blocked in
 * every thread, as sigwait requires. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include "tp_util.h"

static atomic_int ready;

static sigset_t only(int sig)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	return s;
}

static void *waiter(void *arg)
{
	sigset_t s = only((int)(long)arg);
	atomic_store(&ready, 1);
	int sig = 0;
	CHECK_OK(sigwait(&s, &sig));
	CHECK(sig == (int)(long)arg);
	return NULL;
}

static void *info_waiter(void *arg)
{
	sigset_t s = only(SIGUSR2);
	atomic_store(&ready, 1);
	siginfo_t si;
	CHECK(sigwaitinfo(&s, &si) == SIGUSR2);
	CHECK(si.si_signo == SIGUSR2 && si.si_code == SI_USER && si.si_pid == getpid());
	return NULL;
}

static void *pending_first(void *arg)
{
	pthread_barrier_t *b = arg;
	pthread_barrier_wait(b);   /* main signals us now */
	pthread_barrier_wait(b);
	sigset_t s = only(SIGUSR1), p;
	CHECK(sigpending(&p) == 0 && sigismember(&p, SIGUSR1));
	int sig = 0;
	CHECK_OK(sigwait(&s, &sig));
	CHECK(sig == SIGUSR1);
	CHECK(sigpending(&p) == 0 && !sigismember(&p, SIGUSR1));
	return NULL;
}

static void *cancelled(void *arg)
{
	sigset_t s = only(SIGHUP);
	atomic_store(&ready, 1);
	int sig;
	sigwait(&s, &sig);
	return (void *)1;   /* not reached */
}

static void start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	atomic_store(&ready, 0);
	CHECK_OK(pthread_create(t, NULL, fn, arg));
	while (!atomic_load(&ready))
		usleep(1000);
	usleep(20000);   /* well inside the wait by now */
}

int main(void)
{
	sigset_t all;
	sigemptyset(&all);
	sigaddset(&all, SIGUSR1);
	sigaddset(&all, SIGUSR2);
	sigaddset(&all, SIGHUP);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &all, NULL));   /* inherited */

	/* Sent while the thread waits in sigwait. */
	pthread_t t;
	start(&t, waiter, (void *)(long)SIGUSR1);
	CHECK_OK(pthread_kill(t, SIGUSR1));
	CHECK_OK(pthread_join(t, NULL));

	/* Sent before it waits: pending on that thread, taken at once. */
	pthread_barrier_t b;
	CHECK_OK(pthread_barrier_init(&b, NULL, 2));
	CHECK_OK(pthread_create(&t, NULL, pending_first, &b));
	pthread_barrier_wait(&b);
	CHECK_OK(pthread_kill(t, SIGUSR1));
	pthread_barrier_wait(&b);
	CHECK_OK(pthread_join(t, NULL));
	CHECK_OK(pthread_barrier_destroy(&b));

	/* To the process: every thread blocks it, one waits for it. */
	start(&t, info_waiter, NULL);
	CHECK(kill(getpid(), SIGUSR2) == 0);
	CHECK_OK(pthread_join(t, NULL));

	/* A timeout. */
	struct timespec ts = {0, 20000000};
	sigset_t one = only(SIGUSR1);
	CHECK(sigtimedwait(&one, NULL, &ts) == -1 && errno == EAGAIN);

	/* sigwait is a cancellation point. */
	start(&t, cancelled, NULL);
	CHECK_OK(pthread_cancel(t));
	void *r;
	CHECK_OK(pthread_join(t, &r));
	CHECK(r == PTHREAD_CANCELED);
	puts("sigwait: ok");
	return 0;
}
