/* Process-directed signals (setitimer, alarm, kill(getpid())) while the
 * main thread is parked in a blocking call and another thread exists.
 *
 * The other thread blocks the signal, so the main thread is the only one
 * that takes it: its handler must run there, promptly (the timer fires
 * after 50 ms, the call would wait 3 s), and the call must behave as on
 * NPTL: sem_wait, sem_timedwait, sem_clockwait, nanosleep and
 * clock_nanosleep fail with EINTR; pthread_mutex_timedlock, pthread_join
 * and pthread_cond_timedwait resume after the handler (no EINTR on glibc:
 * they time out, return when the joined thread ends, or wake spuriously),
 * so the test checks the handler ran long before they return.
 *
 * Then the reverse: main blocks the signal and ten threads parked in
 * pthread_mutex_lock each unblock one signal of their own; kill(getpid())
 * of each must run its handler in the thread that unblocks it, with that
 * thread's TLS.  libppl used to run the handlers on whichever VP the
 * kernel chose, in no user thread: the parked call waited for its
 * time-out, or forever. */

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/time.h>
#include <time.h>

#include "tp_util.h"

#define LONG_NS 3000000000LL   /* how long each blocking call would wait */
#define PROMPT_NS 2000000000LL  /* the handler must have run before (a loaded
				 * machine delays it by a second at times) */

static pthread_t main_th;
static atomic_int handled;
static atomic_int in_main;
static atomic_llong handled_at;
static const char *_Atomic now_running = "start";   /* for the watchdog's report */
static sem_t sem, helper_go;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void on_sig(int sig)
{
	(void)sig;
	if (pthread_equal(pthread_self(), main_th))
		atomic_store(&in_main, 1);
	atomic_store(&handled_at, tp_now_ns());
	atomic_store(&handled, 1);
}

/* The other thread: blocks the test's signals and waits to be told to end. */
static void *helper(void *arg)
{
	(void)arg;
	while (sem_wait(&helper_go) != 0)
		CHECK(errno == EINTR);
	return NULL;
}

enum sender { TIMER, ALARM, KILL };

/* A thread that blocks SIGALRM and SIGUSR1 (so that main is the only
 * thread to take them), running fn. */
static void spawn_blocking(pthread_t *t, void *(*fn)(void *))
{
	tp_sigmask_one(SIG_BLOCK, SIGALRM);
	tp_sigmask_one(SIG_BLOCK, SIGUSR1);
	CHECK_OK(pthread_create(t, NULL, fn, NULL));
	tp_sigmask_one(SIG_UNBLOCK, SIGALRM);
	tp_sigmask_one(SIG_UNBLOCK, SIGUSR1);
}

static void *killer(void *arg)
{
	(void)arg;
	struct timespec d = { 0, 50000000 };
	nanosleep(&d, NULL);
	kill(getpid(), SIGUSR1);
	return NULL;
}

/* Start the sender; returns the signal it sends. */
static int send_later(enum sender how, pthread_t *k)
{
	if (how == TIMER) {
		struct itimerval it = { { 0, 0 }, { 0, 50000 } };
		CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
		return SIGALRM;
	}
	if (how == ALARM) {
		alarm(1);
		return SIGALRM;
	}
	spawn_blocking(k, killer);
	return SIGUSR1;
}

/* Ends once the handler has run (or after LONG_NS). */
static void *joinee(void *arg)
{
	(void)arg;
	struct timespec d = { 0, 10000000 };
	for (long long t0 = tp_now_ns(); !atomic_load(&handled) && tp_now_ns() - t0 < LONG_NS;)
		nanosleep(&d, NULL);
	return NULL;
}

/* The call main parks in; returns its result as 0 or an errno value.
 * want_eintr: whether glibc's call fails with EINTR there. */
static int park(int which, bool *want_eintr)
{
	struct timespec abs, rel = { LONG_NS / 1000000000LL, 0 };
	*want_eintr = true;
	switch (which) {
	case 0:
		return sem_wait(&sem) == 0 ? 0 : errno;
	case 1:
		clock_gettime(CLOCK_REALTIME, &abs);
		abs.tv_sec += LONG_NS / 1000000000LL;
		return sem_timedwait(&sem, &abs) == 0 ? 0 : errno;
	case 2:
		clock_gettime(CLOCK_MONOTONIC, &abs);
		abs.tv_sec += LONG_NS / 1000000000LL;
		return sem_clockwait(&sem, CLOCK_MONOTONIC, &abs) == 0 ? 0 : errno;
	case 3:
		return nanosleep(&rel, NULL) == 0 ? 0 : errno;
	case 4:
		return clock_nanosleep(CLOCK_MONOTONIC, 0, &rel, NULL);
	case 5: {
		*want_eintr = false;
		clock_gettime(CLOCK_REALTIME, &abs);
		abs.tv_sec += LONG_NS / 1000000000LL;
		int err = pthread_mutex_timedlock(&held, &abs);
		return err == ETIMEDOUT ? 0 : err;
	}
	case 6: {
		*want_eintr = false;
		pthread_t j;
		spawn_blocking(&j, joinee);
		return pthread_join(j, NULL);
	}
	default: {
		*want_eintr = false;
		clock_gettime(CLOCK_REALTIME, &abs);
		abs.tv_sec += LONG_NS / 1000000000LL;
		CHECK_OK(pthread_mutex_lock(&cm));
		int err = pthread_cond_timedwait(&cv, &cm, &abs);
		CHECK_OK(pthread_mutex_unlock(&cm));
		return err == ETIMEDOUT ? 0 : err;
	}
	}
}

#define NPARKS 8
static const char *const park_name[NPARKS] = {
	"sem_wait", "sem_timedwait", "sem_clockwait", "nanosleep", "clock_nanosleep",
	"pthread_mutex_timedlock", "pthread_join", "pthread_cond_timedwait",
};

static void one(int which, enum sender how)
{
	atomic_store(&handled, 0);
	atomic_store(&in_main, 0);
	static char what[96];
	snprintf(what, sizeof what, "%s, sent by %s", park_name[which],
		 how == TIMER ? "setitimer" : how == ALARM ? "alarm" : "kill");
	atomic_store(&now_running, what);
	pthread_t k;
	long long t0 = tp_now_ns();
	int sig = send_later(how, &k);
	bool want_eintr;
	int err = park(which, &want_eintr);
	long long took = tp_now_ns() - t0;
	if (!atomic_load(&handled) || !atomic_load(&in_main) ||
	    atomic_load(&handled_at) - t0 > PROMPT_NS + (how == ALARM ? 1000000000LL : 0) ||
	    (want_eintr && err != EINTR) || (!want_eintr && err != 0)) {
		fprintf(stderr,
			"%s, signal %d from %s: handled %d, in main %d, after %lld ms, "
			"call returned %d (%s) after %lld ms\n",
			park_name[which], sig, how == TIMER ? "setitimer" : how == ALARM ? "alarm" : "kill",
			atomic_load(&handled), atomic_load(&in_main),
			(atomic_load(&handled_at) - t0) / 1000000, err, strerror(err), took / 1000000);
		exit(1);
	}
	if (how == KILL)
		CHECK_OK(pthread_join(k, NULL));
}

/* ---- ten threads, each the only one to take its own signal ------------------------ */

#define NT 10
static __thread int my_index = -1;
static atomic_int got[NT];
static atomic_int wrong;
static sem_t done;

static int sig_of(int i)
{
	return SIGRTMIN + i;
}

static void on_rt(int sig)
{
	int i = sig - SIGRTMIN;
	/* The thread's own TLS: its index, set by itself. */
	if (my_index != i)
		atomic_fetch_add(&wrong, 1);
	else
		atomic_fetch_add(&got[i], 1);
	sem_post(&done);
}

static void *locker(void *arg)
{
	int i = (int)(long)arg;
	my_index = i;
	tp_sigmask_one(SIG_UNBLOCK, sig_of(i));
	CHECK_OK(pthread_mutex_lock(&held));
	CHECK_OK(pthread_mutex_unlock(&held));
	return NULL;
}

static void ten_lockers(void)
{
	atomic_store(&now_running, "ten lockers");
	sigset_t all;
	sigemptyset(&all);
	for (int i = 0; i < NT; i++) {
		tp_set_handler(sig_of(i), on_rt);
		sigaddset(&all, sig_of(i));
	}
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &all, NULL));
	CHECK(sem_init(&done, 0, 0) == 0);
	pthread_t th[NT];
	for (int i = 0; i < NT; i++)
		CHECK_OK(pthread_create(&th[i], NULL, locker, (void *)(long)i));
	struct timespec d = { 0, 100000000 };   /* let them park in the lock */
	nanosleep(&d, NULL);
	for (int i = 0; i < NT; i++)
		CHECK(kill(getpid(), sig_of(i)) == 0);
	for (int i = 0; i < NT; i++) {
		struct timespec abs;
		clock_gettime(CLOCK_REALTIME, &abs);
		abs.tv_sec += 3;
		int r;
		while ((r = sem_timedwait(&done, &abs)) != 0 && errno == EINTR)
			;
		if (r != 0) {
			fprintf(stderr, "only %d of %d handlers ran\n", i, NT);
			exit(1);
		}
	}
	CHECK(atomic_load(&wrong) == 0);
	for (int i = 0; i < NT; i++)
		CHECK(atomic_load(&got[i]) == 1);
	CHECK_OK(pthread_mutex_unlock(&held));
	for (int i = 0; i < NT; i++)
		CHECK_OK(pthread_join(th[i], NULL));
	CHECK_OK(pthread_sigmask(SIG_UNBLOCK, &all, NULL));
}

/* Every thread blocks it: it waits, pending, and runs in main the moment
 * main unblocks it (before pthread_sigmask returns, as POSIX says). */
static void blocked_by_all(void)
{
	atomic_store(&now_running, "blocked by all");
	tp_set_handler(SIGUSR2, on_sig);
	atomic_store(&handled, 0);
	atomic_store(&in_main, 0);
	tp_sigmask_one(SIG_BLOCK, SIGUSR2);
	CHECK(kill(getpid(), SIGUSR2) == 0);
	struct timespec d = { 0, 100000000 };
	nanosleep(&d, NULL);
	CHECK(atomic_load(&handled) == 0);
	sigset_t pend;
	CHECK(sigpending(&pend) == 0 && sigismember(&pend, SIGUSR2));
	tp_sigmask_one(SIG_UNBLOCK, SIGUSR2);
	CHECK(atomic_load(&handled) == 1 && atomic_load(&in_main) == 1);
	CHECK(sigpending(&pend) == 0 && !sigismember(&pend, SIGUSR2));
}

/* Bounded whatever happens (SIGALRM has a handler: alarm cannot do it). */
static void *watchdog(void *arg)
{
	(void)arg;
	struct timespec d = { 60, 0 };
	while (nanosleep(&d, &d) != 0)
		;
	fprintf(stderr, "timed out in %s (handled %d, in main %d)\n", atomic_load(&now_running),
		atomic_load(&handled), atomic_load(&in_main));
	_exit(1);
}

int main(void)
{
	sigset_t every, old;
	sigfillset(&every);
	CHECK_OK(pthread_sigmask(SIG_SETMASK, &every, &old));
	pthread_t wd;
	CHECK_OK(pthread_create(&wd, NULL, watchdog, NULL));
	CHECK_OK(pthread_sigmask(SIG_SETMASK, &old, NULL));
	main_th = pthread_self();
	tp_set_handler(SIGALRM, on_sig);
	tp_set_handler(SIGUSR1, on_sig);
	CHECK(sem_init(&sem, 0, 0) == 0);
	CHECK(sem_init(&helper_go, 0, 0) == 0);
	CHECK_OK(pthread_mutex_lock(&held));

	/* The helper blocks them: main is the one thread that takes them. */
	pthread_t h;
	spawn_blocking(&h, helper);

	for (int which = 0; which < NPARKS; which++) {
		one(which, TIMER);
		one(which, KILL);
	}
	one(0, ALARM);

	CHECK(sem_post(&helper_go) == 0);
	CHECK_OK(pthread_join(h, NULL));

	ten_lockers();
	blocked_by_all();
	puts("ok");
	return 0;
}
