/* A process-directed signal sent as the only thread that takes it enters
 * its wait: kill(getpid(), sig) while every thread blocks sig, there is no
 * handler (the default action terminates) and one thread is about to wait
 * for it in sigwait, sigwaitinfo or sigtimedwait, or (with a handler) to
 * unblock it in sigsuspend.  On NPTL the signal is pending on the process
 * until the wait takes it; it must never kill the process, nor be lost.
 * Yielding threads switch the waiter in and out around its wait, and other
 * threads block in the kernel and in parks, so that VPs, their spares and
 * their idle loops take turns.  libppl's sigsuspend waited for ever for a
 * signal its catcher had claimed just before the call (every run). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "tp_util.h"

#define ROUNDS 400
#define NOISE 3

enum { WAIT, WAITINFO, TIMEDWAIT, SUSPEND, MODES };

static atomic_int round_ready;   /* the round the waiter is about to wait in */
static atomic_int round_done;    /* the last round whose signal it took */
static atomic_int handled;       /* SIGUSR2's handler ran */
static atomic_bool stop;
static int mode;

static void on_usr2(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled, 1);
}

static void spin(unsigned n)
{
	for (volatile unsigned i = 0; i < n; i++)
		;
}

static void *waiter(void *arg)
{
	(void)arg;
	sigset_t usr1, all_but_usr2;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigfillset(&all_but_usr2);
	sigdelset(&all_but_usr2, SIGUSR2);
	struct timespec long_wait = { 20, 0 };
	for (int r = 1; r <= ROUNDS; r++) {
		int before = atomic_load(&handled);
		if (r % 3 == 0)
			sched_yield();   /* switched out and in just before it waits */
		atomic_store(&round_ready, r);
		switch (mode) {
		case WAIT: {
			int sig = 0;
			CHECK_OK(sigwait(&usr1, &sig));
			CHECK(sig == SIGUSR1);
			break;
		}
		case WAITINFO: {
			siginfo_t si;
			int sig;
			while ((sig = sigwaitinfo(&usr1, &si)) == -1 && errno == EINTR)
				;
			CHECK(sig == SIGUSR1 && si.si_signo == SIGUSR1 && si.si_pid == getpid());
			break;
		}
		case TIMEDWAIT: {
			int sig;
			while ((sig = sigtimedwait(&usr1, NULL, &long_wait)) == -1 && errno == EINTR)
				;
			CHECK(sig == SIGUSR1);
			break;
		}
		case SUSPEND:
			while (atomic_load(&handled) == before) {
				CHECK(sigsuspend(&all_but_usr2) == -1 && errno == EINTR);
			}
			break;
		}
		atomic_store(&round_done, r);
	}
	return NULL;
}

/* Threads that block SIGUSR1 too and keep the VPs switching: yields,
 * short sleeps (a park), a blocking system call (a hand-off to a spare). */
static void *noise(void *arg)
{
	long kind = (long)arg;
	while (!atomic_load(&stop)) {
		if (kind == 0)
			sched_yield();
		else if (kind == 1)
			usleep(50);
		else
			CHECK(poll(NULL, 0, 1) == 0 || errno == EINTR);
	}
	return NULL;
}

static void run(int m)
{
	mode = m;
	atomic_store(&round_ready, 0);
	atomic_store(&round_done, 0);
	atomic_store(&stop, false);
	pthread_t w, n[NOISE];
	for (long i = 0; i < NOISE; i++)
		CHECK_OK(pthread_create(&n[i], NULL, noise, (void *)i));
	CHECK_OK(pthread_create(&w, NULL, waiter, NULL));
	int sig = m == SUSPEND ? SIGUSR2 : SIGUSR1;
	for (int r = 1; r <= ROUNDS; r++) {
		while (atomic_load(&round_ready) != r)
			sched_yield();
		spin((unsigned)(r * 7919) % 4000);   /* anywhere in its way into the wait */
		CHECK(kill(getpid(), sig) == 0);
		while (atomic_load(&round_done) != r)
			sched_yield();
	}
	atomic_store(&stop, true);
	CHECK_OK(pthread_join(w, NULL));
	for (int i = 0; i < NOISE; i++)
		CHECK_OK(pthread_join(n[i], NULL));
}

int main(void)
{
	alarm(60);   /* a lost signal hangs a round */
	sigset_t block;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGUSR2);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &block, NULL));
	struct sigaction sa = { .sa_handler = on_usr2 };
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR2, &sa, NULL) == 0);
	for (int m = 0; m < MODES; m++)
		run(m);
	return 0;
}
