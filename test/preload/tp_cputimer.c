/* tp_cputimer: POSIX timers on the calling thread's CPU clock, as on NPTL,
 * in its three forms: CLOCK_THREAD_CPUTIME_ID, pthread_getcpuclockid of
 * pthread_self() and the kernel's clock id of gettid().  Robust under load:
 * only the thread's own CPU time is measured, never wall-clock time.
 *  - a thread computes beside another that computes too (on one VP they
 *    share it) and arms a 50 ms timer on its own clock: the signal comes
 *    (si_code SI_TIMER, its sigev_value) once the thread, not its VP, has
 *    used 50 ms (SIGEV_SIGNAL to the process, SIGEV_THREAD_ID to itself),
 *    and SIGEV_THREAD runs the function in another thread;
 *  - timer_settime (relative, TIMER_ABSTIME, interval, disarm, the old
 *    value), timer_gettime, timer_getoverrun after expiries while the
 *    signal was blocked, timer_delete, beside a CLOCK_MONOTONIC timer of
 *    the kernel's in the same program. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "tp_util.h"

#define MS 1000000LL

static long long self_ns(void)
{
	struct timespec ts;
	CHECK(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long its_ns(const struct timespec *ts)
{
	return ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

/* The calling thread's CPU clock, in form 0, 1 or 2. */
static clockid_t own_clock(int form)
{
	clockid_t c = CLOCK_THREAD_CPUTIME_ID;
	if (form == 1)
		CHECK_OK(pthread_getcpuclockid(pthread_self(), &c));
	if (form == 2)
		c = (clockid_t)((~(unsigned)gettid() << 3) | 6);
	return c;
}

static atomic_int fired, fired_code;
static void *_Atomic fired_value;
static _Atomic pthread_t fired_by;
static atomic_bool stop;
static int marker;

static void on_timer(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	atomic_store(&fired_code, si->si_code);
	atomic_store(&fired_value, si->si_value.sival_ptr);
	atomic_store(&fired, 1);
}

static clockid_t spinner_clock;
static _Atomic long long fn_cpu;   /* the spinner's CPU time when on_thread ran */

static void on_thread(union sigval v)
{
	struct timespec ts;
	CHECK(clock_gettime(spinner_clock, &ts) == 0);
	atomic_store(&fn_cpu, its_ns(&ts));
	atomic_store(&fired_by, pthread_self());
	atomic_store(&fired_value, v.sival_ptr);
	atomic_store(&fired, 1);
}

/* Computes until fired, or 2 s of its CPU time; the CPU time it took. */
static long long spin_until_fired(long long start)
{
	while (!atomic_load(&fired) && self_ns() - start < 2000 * MS)
		;
	return self_ns() - start;
}

static void *companion(void *arg)
{
	(void)arg;
	long long start = self_ns();
	while (!atomic_load(&stop) && self_ns() - start < 20000 * MS)
		;
	return NULL;
}

/* A 50 ms timer on the thread's own clock: it fires after 50 ms of the
 * thread's CPU time, not earlier, and not much later. */
static void one_shot(int form, int notify)
{
	struct sigevent ev = { .sigev_notify = notify, .sigev_signo = SIGUSR1 };
	ev.sigev_value.sival_ptr = &marker;
	if (notify == SIGEV_THREAD_ID)
		ev._sigev_un._tid = gettid();
	if (notify == SIGEV_THREAD) {
		ev.sigev_notify_function = on_thread;
		CHECK_OK(pthread_getcpuclockid(pthread_self(), &spinner_clock));
	}
	timer_t t;
	CHECK(timer_create(own_clock(form), &ev, &t) == 0);
	atomic_store(&fired, 0);
	atomic_store(&fired_code, 0);
	atomic_store(&fired_value, NULL);
	struct itimerspec v = { .it_value = { 0, 50 * MS } };
	long long start = self_ns();
	CHECK(timer_settime(t, 0, &v, NULL) == 0);
	long long used = spin_until_fired(start);
	/* SIGEV_THREAD: the thread's CPU time when the function ran, not when
	 * the spinner saw it (a new thread starts after a scheduling delay). */
	if (notify == SIGEV_THREAD && atomic_load(&fired))
		used = atomic_load(&fn_cpu) - start;
	if (!atomic_load(&fired) || used < 50 * MS || used > 400 * MS)
		fprintf(stderr, "form %d notify %d: fired %d after %lld ms of the thread's CPU time\n",
			form, notify, atomic_load(&fired), used / MS);
	CHECK(atomic_load(&fired));
	CHECK(used >= 50 * MS);
	if (notify != SIGEV_THREAD)
		CHECK(used <= 400 * MS);
	CHECK(atomic_load(&fired_value) == &marker);
	if (notify == SIGEV_THREAD)
		CHECK(!pthread_equal(atomic_load(&fired_by), pthread_self()));
	else
		CHECK(atomic_load(&fired_code) == SI_TIMER);
	/* A one-shot timer that expired is disarmed. */
	struct itimerspec cur;
	CHECK(timer_gettime(t, &cur) == 0);
	CHECK(its_ns(&cur.it_value) == 0 && its_ns(&cur.it_interval) == 0);
	CHECK(timer_delete(t) == 0);
}

static void settime_gettime(void)
{
	/* A kernel timer beside ours: both work, neither disturbs the other. */
	struct sigevent none = { .sigev_notify = SIGEV_NONE };
	timer_t k, t;
	CHECK(timer_create(CLOCK_MONOTONIC, &none, &k) == 0);
	CHECK(timer_create(CLOCK_THREAD_CPUTIME_ID, &none, &t) == 0);
	CHECK(k != t);
	struct itimerspec kv = { .it_value = { 100, 0 } }, cur, old;
	CHECK(timer_settime(k, 0, &kv, NULL) == 0);

	CHECK(timer_gettime(t, &cur) == 0);
	CHECK(its_ns(&cur.it_value) == 0 && its_ns(&cur.it_interval) == 0);
	struct itimerspec v = { .it_value = { 1, 0 }, .it_interval = { 0, 100 * MS } };
	CHECK(timer_settime(t, 0, &v, &old) == 0);
	CHECK(its_ns(&old.it_value) == 0 && its_ns(&old.it_interval) == 0);
	CHECK(timer_gettime(t, &cur) == 0);
	CHECK(its_ns(&cur.it_value) > 500 * MS && its_ns(&cur.it_value) <= 1000 * MS);
	CHECK(its_ns(&cur.it_interval) == 100 * MS);
	/* Disarm: the old value is what was left. */
	struct itimerspec zero = { { 0, 0 }, { 0, 0 } };
	CHECK(timer_settime(t, 0, &zero, &old) == 0);
	CHECK(its_ns(&old.it_value) > 500 * MS && its_ns(&old.it_value) <= 1000 * MS);
	CHECK(its_ns(&old.it_interval) == 100 * MS);
	CHECK(timer_gettime(t, &cur) == 0);
	CHECK(its_ns(&cur.it_value) == 0);
	/* Interval reload: after 100 ms of CPU time a 30 ms timer with a 30 ms
	 * interval has less than 30 ms left, and the same interval. */
	v = (struct itimerspec){ .it_value = { 0, 30 * MS }, .it_interval = { 0, 30 * MS } };
	CHECK(timer_settime(t, 0, &v, NULL) == 0);
	long long start = self_ns();
	while (self_ns() - start < 100 * MS)
		;
	CHECK(timer_gettime(t, &cur) == 0);
	CHECK(its_ns(&cur.it_value) > 0 && its_ns(&cur.it_value) <= 30 * MS);
	CHECK(its_ns(&cur.it_interval) == 30 * MS);
	/* Bad values: EINVAL, the timer unchanged. */
	struct itimerspec bad = { .it_value = { 0, 1000000000 } };
	errno = 0;
	CHECK(timer_settime(t, 0, &bad, NULL) == -1 && errno == EINVAL);
	CHECK(timer_gettime(t, &cur) == 0 && its_ns(&cur.it_interval) == 30 * MS);

	CHECK(timer_gettime(k, &cur) == 0);
	CHECK(its_ns(&cur.it_value) > 50LL * 1000 * MS && its_ns(&cur.it_value) <= 100LL * 1000 * MS);
	CHECK(timer_delete(t) == 0);
	CHECK(timer_delete(k) == 0);
	errno = 0;
	CHECK(timer_gettime(t, &cur) == -1 && errno == EINVAL);
}

/* TIMER_ABSTIME: at a value of the clock, and at once for one passed. */
static void absolute(void)
{
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1 };
	ev.sigev_value.sival_ptr = &marker;
	timer_t t;
	CHECK(timer_create(own_clock(1), &ev, &t) == 0);
	atomic_store(&fired, 0);
	long long at = self_ns() + 40 * MS;
	struct itimerspec v = { .it_value = { at / 1000000000, at % 1000000000 } };
	CHECK(timer_settime(t, TIMER_ABSTIME, &v, NULL) == 0);
	spin_until_fired(self_ns());
	CHECK(atomic_load(&fired));
	CHECK(self_ns() >= at);
	atomic_store(&fired, 0);
	long long start = self_ns();
	v.it_value = (struct timespec){ 0, 1 };   /* long past */
	CHECK(timer_settime(t, TIMER_ABSTIME, &v, NULL) == 0);
	long long used = spin_until_fired(start);
	CHECK(atomic_load(&fired));
	CHECK(used < 100 * MS);
	CHECK(timer_delete(t) == 0);
}

/* Expiries while the signal is blocked and pending count as overruns. */
static void overrun(void)
{
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR2 };
	ev.sigev_value.sival_ptr = &marker;
	timer_t t;
	CHECK(timer_create(own_clock(0), &ev, &t) == 0);
	struct itimerspec v = { .it_value = { 0, 5 * MS }, .it_interval = { 0, 5 * MS } };
	CHECK(timer_settime(t, 0, &v, NULL) == 0);
	long long start = self_ns();
	while (self_ns() - start < 100 * MS)
		;
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	siginfo_t si;
	struct timespec wait = { 5, 0 };
	CHECK(sigtimedwait(&s, &si, &wait) == SIGUSR2);
	CHECK(si.si_code == SI_TIMER && si.si_value.sival_ptr == &marker);
	int n = timer_getoverrun(t);
	if (n < 5)
		fprintf(stderr, "overrun %d after 20 periods\n", n);
	CHECK(n >= 5);
	CHECK(timer_delete(t) == 0);
}

static void *timed(void *arg)
{
	(void)arg;
	for (int form = 0; form < 3; form++)
		one_shot(form, SIGEV_SIGNAL);
	one_shot(2, SIGEV_THREAD_ID);
	one_shot(1, SIGEV_THREAD);
	settime_gettime();
	absolute();
	overrun();
	return NULL;
}

int main(void)
{
	alarm(60);
	struct sigaction sa = { .sa_sigaction = on_timer, .sa_flags = SA_SIGINFO | SA_RESTART };
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	/* SIGUSR2 is taken by sigtimedwait only: blocked in every thread. */
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &s, NULL));
	pthread_t c, t;
	CHECK_OK(pthread_create(&c, NULL, companion, NULL));
	CHECK_OK(pthread_create(&t, NULL, timed, NULL));
	CHECK_OK(pthread_join(t, NULL));
	atomic_store(&stop, true);
	CHECK_OK(pthread_join(c, NULL));
	puts("ok");
	return 0;
}
