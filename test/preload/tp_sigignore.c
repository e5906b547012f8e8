/* A pending signal whose action becomes "ignore" (SIG_IGN, or SIG_DFL of
 * one ignored by default) is discarded, blocked or not, as the kernel does:
 * sigpending no longer shows it, and a handler installed and unblocked
 * afterwards does not run.  libppl keeps some pending signals off the
 * kernel (a thread's own, the process's claims) and had kept them all:
 * the handler ran for a signal sent before SIG_IGN (and
 * preload/sighandler-mask's jumps part ran its siglongjmp handler for a
 * kill() left over from the part before it, before its sigsetjmp). */
/* The calls are obsolescent: testing them is the point. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "tp_util.h"

static atomic_int ran;
static sem_t parked, woken;

static void handler(int sig)
{
	(void)sig;
	atomic_fetch_add(&ran, 1);
}

static int pending(int sig)
{
	sigset_t s;
	CHECK(sigpending(&s) == 0);
	return sigismember(&s, sig);
}

static void settle(void)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	nanosleep(&ts, NULL);
}

enum how { TO_SELF, TO_PROCESS, QUEUED_TWICE };

/* sig sent `how`, blocked; ignored by `ignore`; a handler and the
 * signal unblocked again: nothing runs. */
static void one(int sig, enum how how, void (*ignore)(int sig))
{
	atomic_store(&ran, 0);
	tp_set_handler(sig, handler);
	tp_sigmask_one(SIG_BLOCK, sig);
	if (how == TO_SELF) {
		CHECK_OK(pthread_kill(pthread_self(), sig));
	} else if (how == TO_PROCESS) {
		CHECK(kill(getpid(), sig) == 0);
	} else {
		CHECK(sigqueue(getpid(), sig, (union sigval){ 1 }) == 0);
		CHECK(sigqueue(getpid(), sig, (union sigval){ 2 }) == 0);
	}
	settle();
	CHECK(pending(sig));
	ignore(sig);
	CHECK(!pending(sig));
	tp_set_handler(sig, handler);
	tp_sigmask_one(SIG_UNBLOCK, sig);
	settle();
	CHECK(atomic_load(&ran) == 0);
}

static void by_sigaction(int sig)
{
	tp_set_handler(sig, SIG_IGN);
}

static void by_default(int sig)
{
	tp_set_handler(sig, SIG_DFL);
}

static void by_signal(int sig)
{
	CHECK(signal(sig, SIG_IGN) != SIG_ERR);
}

static void by_sigignore(int sig)
{
	CHECK(sigignore(sig) == 0);
}

/* A thread parked with sig blocked and sig pending on it. */
static void *parker(void *arg)
{
	int sig = *(int *)arg;
	tp_sigmask_one(SIG_BLOCK, sig);
	CHECK(sem_post(&parked) == 0);
	while (sem_wait(&woken) != 0)
		;
	tp_sigmask_one(SIG_UNBLOCK, sig);   /* nothing left to run */
	settle();
	return NULL;
}

static void on_other_thread(int sig)
{
	atomic_store(&ran, 0);
	tp_set_handler(sig, handler);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, parker, &sig));
	while (sem_wait(&parked) != 0)
		;
	CHECK_OK(pthread_kill(t, sig));
	settle();
	tp_set_handler(sig, SIG_IGN);
	tp_set_handler(sig, handler);
	CHECK(sem_post(&woken) == 0);
	CHECK_OK(pthread_join(t, NULL));
	CHECK(atomic_load(&ran) == 0);
}

static void *blocks_all(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

int main(void)
{
	alarm(60);
	CHECK(sem_init(&parked, 0, 0) == 0 && sem_init(&woken, 0, 0) == 0);
	sigset_t all;
	sigfillset(&all);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &all, NULL));
	pthread_t other;   /* a thread that takes nothing */
	CHECK_OK(pthread_create(&other, NULL, blocks_all, NULL));
	CHECK_OK(pthread_sigmask(SIG_UNBLOCK, &all, NULL));
	one(SIGUSR1, TO_SELF, by_sigaction);
	one(SIGUSR1, TO_PROCESS, by_sigaction);
	one(SIGUSR2, TO_SELF, by_signal);
	one(SIGUSR2, TO_PROCESS, by_sigignore);
	one(SIGURG, TO_SELF, by_default);
	one(SIGURG, TO_PROCESS, by_default);
	one(SIGCHLD, TO_PROCESS, by_default);
	one(SIGRTMIN + 1, TO_SELF, by_sigaction);
	one(SIGRTMIN + 1, QUEUED_TWICE, by_sigaction);
	on_other_thread(SIGUSR1);
	puts("ok");
	return 0;
}
