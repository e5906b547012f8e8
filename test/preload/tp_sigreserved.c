/* libppl's own signals (cancellation, the preemption tick) lie above
 * SIGRTMAX as programs see it, as glibc's lie below SIGRTMIN: every signal
 * from SIGRTMIN to SIGRTMAX is the program's, and libppl's two are refused
 * with EINVAL by everything that would install, send or block them in this
 * process.  libppl used to reserve SIGRTMAX itself: sigaction(SIGRTMAX)
 * failed with EINVAL, and pthread_kill(t, SIGRTMAX) then delivered it with
 * the default action, killing the process (exit status 192). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "tp_util.h"

/* sigset and siginterrupt are what is being tested. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

extern int __libc_allocate_rtsig(int high);

static pthread_t waiter;
static sem_t go, parked;
static atomic_int in_waiter, in_main, value_seen, code_seen;

static void on_rt(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (pthread_equal(pthread_self(), waiter))
		atomic_fetch_add(&in_waiter, 1);
	else
		atomic_fetch_add(&in_main, 1);
	atomic_store(&value_seen, si->si_value.sival_int);
	atomic_store(&code_seen, si->si_code);
}

static void *wait_go(void *arg)
{
	(void)arg;
	CHECK(sem_post(&parked) == 0);
	while (sem_wait(&go) != 0)
		CHECK(errno == EINTR);
	return NULL;
}

static void install(int sig)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_rt;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(sig, &sa, NULL) == 0);
}

/* Every sender and installer refuses sig (one of libppl's own). */
static void refused(int sig)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_rt;
	sa.sa_flags = SA_SIGINFO;
	errno = 0;
	CHECK(sigaction(sig, &sa, NULL) == -1 && errno == EINVAL);
	errno = 0;
	CHECK(sigaction(sig, NULL, &old) == -1 && errno == EINVAL);
	errno = 0;
	CHECK(signal(sig, SIG_IGN) == SIG_ERR && errno == EINVAL);
	errno = 0;
	CHECK(sigset(sig, SIG_IGN) == SIG_ERR && errno == EINVAL);
	errno = 0;
	CHECK(siginterrupt(sig, 1) == -1 && errno == EINVAL);
	union sigval v = { .sival_int = 7 };
	CHECK(pthread_kill(pthread_self(), sig) == EINVAL);
	CHECK(pthread_kill(waiter, sig) == EINVAL);
	CHECK(pthread_sigqueue(pthread_self(), sig, v) == EINVAL);
	CHECK(pthread_sigqueue(waiter, sig, v) == EINVAL);
	errno = 0;
	CHECK(raise(sig) == -1 && errno == EINVAL);
	errno = 0;
	CHECK(kill(getpid(), sig) == -1 && errno == EINVAL);
	errno = 0;
	CHECK(sigqueue(getpid(), sig, v) == -1 && errno == EINVAL);
	errno = 0;
	CHECK(tgkill(getpid(), gettid(), sig) == -1 && errno == EINVAL);
	/* Blocking them is silently left out, as glibc does with its own. */
	sigset_t s, cur;
	sigemptyset(&s);
	sigaddset(&s, sig);
	CHECK(sigprocmask(SIG_BLOCK, &s, NULL) == 0);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &s, NULL));
	CHECK(sigprocmask(SIG_BLOCK, NULL, &cur) == 0);
	CHECK(!sigismember(&cur, sig));
}

int main(void)
{
	/* glibc's two below, nothing taken at the top: 34..64 natively. */
	CHECK(SIGRTMIN == __SIGRTMIN + 2);
	CHECK(SIGRTMAX - SIGRTMIN >= 8);
	if (tp_expect_ult())
		CHECK(SIGRTMAX == __SIGRTMAX - 2);
	else
		CHECK(SIGRTMAX == __SIGRTMAX);

	/* The whole range is the program's. */
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		install(sig);

	CHECK(sem_init(&go, 0, 0) == 0);
	CHECK(sem_init(&parked, 0, 0) == 0);
	CHECK_OK(pthread_create(&waiter, NULL, wait_go, NULL));
	CHECK(sem_wait(&parked) == 0);

	/* To another thread, parked: its handler runs there. */
	int tops[] = { SIGRTMAX, SIGRTMAX - 1, SIGRTMIN };
	for (int i = 0; i < 3; i++) {
		atomic_store(&in_waiter, 0);
		CHECK_OK(pthread_kill(waiter, tops[i]));
		long long t0 = tp_now_ns();
		while (atomic_load(&in_waiter) == 0 && tp_now_ns() - t0 < 5000000000LL)
			sched_yield();
		CHECK(atomic_load(&in_waiter) == 1);
	}
	/* To itself, with a value; raise. */
	union sigval v = { .sival_int = 42 };
	atomic_store(&in_main, 0);
	CHECK_OK(pthread_sigqueue(pthread_self(), SIGRTMAX, v));
	CHECK(atomic_load(&in_main) == 1);
	CHECK(atomic_load(&value_seen) == 42 && atomic_load(&code_seen) == SI_QUEUE);
	CHECK(raise(SIGRTMAX - 1) == 0);
	CHECK(atomic_load(&in_main) == 2);
	CHECK(sigqueue(getpid(), SIGRTMAX, v) == 0);
	long long t0 = tp_now_ns();
	while (atomic_load(&in_main) + atomic_load(&in_waiter) < 4 &&
	       tp_now_ns() - t0 < 5000000000LL)
		sched_yield();
	CHECK(atomic_load(&in_main) + atomic_load(&in_waiter) == 4);

	if (tp_expect_ult()) {
		refused(__SIGRTMAX);
		refused(__SIGRTMAX - 1);
	}

	/* __libc_allocate_rtsig takes off the ends of the range programs see:
	 * "high" priority is the low end. */
	int hi = SIGRTMAX, lo = SIGRTMIN;
	CHECK(__libc_allocate_rtsig(1) == lo);
	CHECK(SIGRTMIN == lo + 1);
	CHECK(__libc_allocate_rtsig(0) == hi);
	CHECK(SIGRTMAX == hi - 1);

	CHECK(sem_post(&go) == 0);
	CHECK_OK(pthread_join(waiter, NULL));
	puts("ok");
	return 0;
}
