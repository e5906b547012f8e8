/* A process-directed signal every thread blocks stays pending on the process,
 * whatever its action, until a thread takes it: here each thread blocks it
 * itself after the threads exist (a kernel thread that runs none of them,
 * an idle VP under libppl, must not take it: with the default action the
 * process died).  Then kill(getpid()) of it: not run, not fatal, shown by
 * sigpending, taken by sigwait; and unblocked in one thread, run there.
 *
 * Also the temporary masks of ppoll, pselect, epoll_pwait and
 * sigsuspend for a process-directed signal every thread blocks: a call
 * whose mask lets it through is interrupted by it, in that thread (EINTR,
 * its handler ran there); and a thread that does not block it but calls
 * with a mask that does is not interrupted: the signal waits until the
 * call returns, then runs in that thread. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_util.h"

#define NWORKERS 4
#define ROUNDS 12

static pthread_barrier_t bar;
static atomic_int stop;
static atomic_int ran;                 /* handler runs */
static _Atomic(pthread_t) ran_in;      /* the thread the last one ran in */
static sigset_t the_set;               /* the signal of the round */

static void handler(int sig)
{
	(void)sig;
	atomic_store(&ran_in, pthread_self());
	atomic_fetch_add(&ran, 1);
}

static bool pending(int sig)
{
	sigset_t p;
	CHECK(sigpending(&p) == 0);
	return sigismember(&p, sig);
}

/* Workers: each round, block the round's signal, meet, sleep or spin
 * while main sends it, and unblock it once main has taken it. */
static void *worker(void *arg)
{
	long id = (long)arg;
	for (;;) {
		pthread_barrier_wait(&bar);   /* the round's signal is set */
		if (atomic_load(&stop))
			break;
		sigset_t s = the_set;
		CHECK_OK(pthread_sigmask(SIG_BLOCK, &s, NULL));
		pthread_barrier_wait(&bar);   /* every thread blocks it */
		/* Sleep (the VPs are idle) or spin while it is sent. */
		long long end = tp_now_ns() + 30000000LL;
		while (tp_now_ns() < end) {
			if (id & 1)
				sched_yield();
			else
				usleep(2000);
		}
		pthread_barrier_wait(&bar);   /* main has looked */
		pthread_barrier_wait(&bar);   /* main took it */
		CHECK_OK(pthread_sigmask(SIG_UNBLOCK, &s, NULL));
	}
	return NULL;
}

static void blocked_everywhere(void)
{
	int sigs[] = { SIGUSR1, SIGTERM, SIGRTMIN + 2, SIGHUP, SIGUSR2 };
	pthread_t w[NWORKERS];
	CHECK_OK(pthread_barrier_init(&bar, NULL, NWORKERS + 1));
	for (long i = 0; i < NWORKERS; i++)
		CHECK_OK(pthread_create(&w[i], NULL, worker, (void *)i));
	usleep(20000);   /* the runtime and its VPs run */
	for (int r = 0; r < ROUNDS; r++) {
		int sig = sigs[r % 5];
		bool with_handler = r % 5 == 4 || r >= 10;
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = with_handler ? handler : SIG_DFL;
		CHECK(sigaction(sig, &sa, NULL) == 0);
		sigemptyset(&the_set);
		sigaddset(&the_set, sig);
		atomic_store(&ran, 0);
		pthread_barrier_wait(&bar);
		tp_sigmask_one(SIG_BLOCK, sig);
		pthread_barrier_wait(&bar);   /* every thread blocks it */
		CHECK(kill(getpid(), sig) == 0);
		usleep(20000);   /* long enough for any kernel thread to take it */
		CHECK(pending(sig));
		CHECK(atomic_load(&ran) == 0);
		pthread_barrier_wait(&bar);
		if (r % 2 == 0) {
			/* sigwait takes it. */
			int got = 0;
			CHECK_OK(sigwait(&the_set, &got));
			CHECK(got == sig);
		} else {
			/* sigtimedwait takes it. */
			struct timespec ts = { 1, 0 };
			siginfo_t si;
			CHECK(sigtimedwait(&the_set, &si, &ts) == sig);
			CHECK(si.si_code == SI_USER && si.si_pid == getpid());
		}
		CHECK(!pending(sig));
		CHECK(atomic_load(&ran) == 0);
		if (with_handler) {
			/* Sent again, then unblocked here: it runs here. */
			CHECK(kill(getpid(), sig) == 0);
			usleep(5000);
			CHECK(pending(sig) && atomic_load(&ran) == 0);
			tp_sigmask_one(SIG_UNBLOCK, sig);
			CHECK(atomic_load(&ran) == 1);
			CHECK(pthread_equal(atomic_load(&ran_in), pthread_self()));
		} else {
			tp_sigmask_one(SIG_UNBLOCK, sig);
		}
		pthread_barrier_wait(&bar);
	}
	atomic_store(&stop, 1);
	pthread_barrier_wait(&bar);
	for (int i = 0; i < NWORKERS; i++)
		CHECK_OK(pthread_join(w[i], NULL));
	pthread_barrier_destroy(&bar);
}

/* ---- temporary masks ---- */

enum call { PPOLL, PSELECT, EPOLL_PWAIT, SIGSUSPEND, NCALLS };
static const char *const names[] = { "ppoll", "pselect", "epoll_pwait", "sigsuspend" };

static atomic_int waiter_in;      /* the waiter is about to call */
static atomic_int waiter_rc;      /* its result: 0 timed out, EINTR */
static atomic_int waiter_ran;     /* the handler ran in the waiter during the call */
static _Atomic(pthread_t) waiter_id;

struct wait_arg {
	enum call call;
	bool lets_through;   /* the call's mask unblocks SIGUSR2 (else blocks it) */
};

/* One call with mask m and a timeout of ms (sigsuspend: interrupted only). */
static int call_with(enum call c, const sigset_t *m, int epfd, int ms)
{
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000L };
	int r;
	switch (c) {
	case PPOLL:
		r = ppoll(NULL, 0, &ts, m);
		break;
	case PSELECT:
		r = pselect(0, NULL, NULL, NULL, &ts, m);
		break;
	case EPOLL_PWAIT: {
		struct epoll_event ev;
		r = epoll_pwait(epfd, &ev, 1, ms, m);
		break;
	}
	default:
		r = sigsuspend(m);
		break;
	}
	return r < 0 ? errno : 0;
}

static void *waiter(void *arg)
{
	struct wait_arg *a = arg;
	int epfd = epoll_create1(EPOLL_CLOEXEC);
	CHECK(epfd >= 0);
	atomic_store(&waiter_id, pthread_self());
	sigset_t cur, m;
	CHECK_OK(pthread_sigmask(SIG_BLOCK, NULL, &cur));
	m = cur;
	if (a->lets_through) {
		tp_sigmask_one(SIG_BLOCK, SIGUSR2);
		sigdelset(&m, SIGUSR2);
	} else {
		tp_sigmask_one(SIG_UNBLOCK, SIGUSR2);
		sigaddset(&m, SIGUSR2);
	}
	atomic_store(&waiter_in, 1);
	/* Long enough for the signal under any load when the call lets it
	 * in; when it does not, the call times out, and the signal (which
	 * may come after that) runs here before the thread ends. */
	int rc = call_with(a->call, &m, epfd, a->lets_through ? 10000 : 300);
	atomic_store(&waiter_ran, atomic_load(&ran));
	atomic_store(&waiter_rc, rc);
	for (int i = 0; i < 5000 && atomic_load(&ran) == 0; i++)
		usleep(1000);
	close(epfd);
	return NULL;
}

static void *sleeper(void *arg)
{
	long id = (long)arg;
	while (!atomic_load(&stop)) {
		if (id & 1)
			sched_yield();
		else
			usleep(2000);
	}
	return NULL;
}

static void temporary_masks(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	CHECK(sigaction(SIGUSR2, &sa, NULL) == 0);
	tp_sigmask_one(SIG_BLOCK, SIGUSR2);   /* main blocks it (other threads inherit it) */
	pthread_t helpers[2];
	for (int i = 0; i < 2; i++)   /* more threads that block it, on other VPs */
		CHECK_OK(pthread_create(&helpers[i], NULL, sleeper, (void *)(long)i));
	for (int round = 0; round < 2 * NCALLS * 2; round++) {
		struct wait_arg a = { (enum call)(round / 2 % NCALLS), round % 2 == 0 };
		if (a.call == SIGSUSPEND && !a.lets_through)
			continue;   /* would wait for ever */
		atomic_store(&ran, 0);
		atomic_store(&waiter_in, 0);
		atomic_store(&waiter_rc, -1);
		pthread_t w;
		CHECK_OK(pthread_create(&w, NULL, waiter, &a));
		while (!atomic_load(&waiter_in))
			usleep(1000);
		usleep(30000);   /* in the call */
		CHECK(kill(getpid(), SIGUSR2) == 0);
		CHECK_OK(pthread_join(w, NULL));
		int rc = atomic_load(&waiter_rc);
		if (a.lets_through) {
			if (rc != EINTR || atomic_load(&waiter_ran) != 1)
				fprintf(stderr, "%s letting SIGUSR2 through: rc %d, ran %d\n",
					names[a.call], rc, atomic_load(&waiter_ran));
			CHECK(rc == EINTR && atomic_load(&waiter_ran) == 1);
		} else {
			/* Not interrupted (timed out): ran as its mask came back. */
			if (rc != 0 || atomic_load(&ran) != 1)
				fprintf(stderr, "%s blocking SIGUSR2: rc %d, ran %d\n",
					names[a.call], rc, atomic_load(&ran));
			CHECK(rc == 0 && atomic_load(&ran) == 1);
		}
		CHECK(pthread_equal(atomic_load(&ran_in), w));
		CHECK(!pending(SIGUSR2));
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		CHECK_OK(pthread_join(helpers[i], NULL));
}

int main(void)
{
	alarm(60);
	blocked_everywhere();
	atomic_store(&stop, 0);
	temporary_masks();
	puts("ok");
	return 0;
}
