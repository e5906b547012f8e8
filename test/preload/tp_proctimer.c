/* The process's timers and CPU time are the program's whatever kernel
 * thread a call runs on (docs/vpdep.md, the process backend): POSIX timers
 * on CLOCK_REALTIME and CLOCK_MONOTONIC (SIGEV_SIGNAL, SIGEV_THREAD) made
 * by threads off the initial kernel thread, armed, read and deleted by
 * main after those threads ended and the program was back to one thread
 * for a while (libppl's helper kernel threads retire then), their signals
 * taken by main; ualarm set on one kernel thread is seen and cancelled on
 * another, and its SIGALRM reaches main; getrusage(RUSAGE_SELF), times,
 * clock(), CLOCK_PROCESS_CPUTIME_ID and the clocks clock_getcpuclockid
 * gives for getpid() and 0 count every thread's CPU time, also after the
 * threads ended, and RUSAGE_CHILDREN none with no child. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/times.h>
#include <time.h>
#include <unistd.h>

#include "tp_util.h"

static pid_t initial_ktid;

/* Spin (yielding) until the caller runs off the initial kernel thread,
 * at most 1 s (with one VP it never does). */
static void move_off_initial(void)
{
	long long end = tp_now_ns() + 1000000000LL;
	while (syscall(SYS_gettid) == initial_ktid && tp_now_ns() < end)
		sched_yield();
}

/* fn(arg) on a thread, with another one that keeps the first kernel
 * thread busy meanwhile so that fn's can move off it. */
static atomic_int busy_stop;

static void *busy(void *arg)
{
	(void)arg;
	long long end = tp_now_ns() + 2000000000LL;
	while (!atomic_load(&busy_stop) && tp_now_ns() < end)
		sched_yield();
	return NULL;
}

static void run_off_initial(void *(*fn)(void *), void *arg)
{
	pthread_t b, t;
	atomic_store(&busy_stop, 0);
	CHECK_OK(pthread_create(&b, NULL, busy, NULL));
	CHECK_OK(pthread_create(&t, NULL, fn, arg));
	CHECK_OK(pthread_join(t, NULL));
	atomic_store(&busy_stop, 1);
	CHECK_OK(pthread_join(b, NULL));
}

static void *moved(void *arg)
{
	move_off_initial();
	return arg;
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ---- POSIX timers ------------------------------------------------------------------- */

#define NSIG_TIMERS 2   /* CLOCK_REALTIME -> SIGUSR1, CLOCK_MONOTONIC -> SIGUSR2 */
#define NTHR_TIMERS 2   /* SIGEV_THREAD on each clock */
static timer_t sig_timer[NSIG_TIMERS], thr_timer[NTHR_TIMERS];
static atomic_int thr_fired[NTHR_TIMERS];
static const clockid_t clocks[2] = { CLOCK_REALTIME, CLOCK_MONOTONIC };

static void notified(union sigval v)
{
	atomic_fetch_add(&thr_fired[v.sival_int], 1);
}

static void *make_timers(void *arg)
{
	(void)arg;
	move_off_initial();
	for (int i = 0; i < NSIG_TIMERS; i++) {
		struct sigevent ev;
		memset(&ev, 0, sizeof ev);
		ev.sigev_notify = SIGEV_SIGNAL;
		ev.sigev_signo = i == 0 ? SIGUSR1 : SIGUSR2;
		ev.sigev_value.sival_int = 100 + i;
		CHECK(timer_create(clocks[i], &ev, &sig_timer[i]) == 0);
	}
	for (int i = 0; i < NTHR_TIMERS; i++) {
		struct sigevent ev;
		memset(&ev, 0, sizeof ev);
		ev.sigev_notify = SIGEV_THREAD;
		ev.sigev_notify_function = notified;
		ev.sigev_value.sival_int = i;
		CHECK(timer_create(clocks[i], &ev, &thr_timer[i]) == 0);
	}
	return NULL;
}

static void check_timers(void)
{
	run_off_initial(make_timers, NULL);
	nap_ms(200);   /* back to one thread: libppl's helpers may retire */
	struct itimerspec every5 = { { 0, 5000000 }, { 0, 5000000 } }, cur;
	for (int i = 0; i < NSIG_TIMERS; i++) {
		CHECK(timer_settime(sig_timer[i], 0, &every5, NULL) == 0);
		CHECK(timer_gettime(sig_timer[i], &cur) == 0);
		CHECK(cur.it_interval.tv_nsec == 5000000);
	}
	for (int i = 0; i < NTHR_TIMERS; i++)
		CHECK(timer_settime(thr_timer[i], 0, &every5, NULL) == 0);
	/* Each signal timer's signal, three times, with its value. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	int got[NSIG_TIMERS] = { 0 };
	long long end = tp_now_ns() + 10000000000LL;
	while ((got[0] < 3 || got[1] < 3) && tp_now_ns() < end) {
		siginfo_t si;
		struct timespec ts = { 0, 100000000 };
		int s = sigtimedwait(&set, &si, &ts);
		if (s < 0)
			continue;
		int i = s == SIGUSR1 ? 0 : 1;
		CHECK(si.si_code == SI_TIMER);
		CHECK(si.si_value.sival_int == 100 + i);
		got[i]++;
	}
	if (got[0] < 3 || got[1] < 3) {
		fprintf(stderr, "timer signals: REALTIME %d, MONOTONIC %d of 3 in 10 s\n", got[0],
			got[1]);
		exit(1);
	}
	while ((atomic_load(&thr_fired[0]) < 3 || atomic_load(&thr_fired[1]) < 3) &&
	       tp_now_ns() < end)
		nap_ms(5);
	if (atomic_load(&thr_fired[0]) < 3 || atomic_load(&thr_fired[1]) < 3) {
		fprintf(stderr, "SIGEV_THREAD timers: REALTIME %d, MONOTONIC %d of 3 in 10 s\n",
			atomic_load(&thr_fired[0]), atomic_load(&thr_fired[1]));
		exit(1);
	}
	for (int i = 0; i < NSIG_TIMERS; i++) {
		CHECK(timer_getoverrun(sig_timer[i]) >= 0);
		CHECK(timer_delete(sig_timer[i]) == 0);
	}
	for (int i = 0; i < NTHR_TIMERS; i++)
		CHECK(timer_delete(thr_timer[i]) == 0);
	/* What was queued meanwhile goes. */
	struct timespec zero = { 0, 0 };
	while (sigtimedwait(&set, NULL, &zero) > 0)
		;
}

/* ---- ualarm --------------------------------------------------------------------------- */

static void *set_ualarm(void *arg)
{
	move_off_initial();
	CHECK(ualarm((useconds_t)(uintptr_t)arg, 0) == 0);
	return NULL;
}

static void check_ualarm(void)
{
	run_off_initial(set_ualarm, (void *)(uintptr_t)900000);
	struct itimerval v;
	CHECK(getitimer(ITIMER_REAL, &v) == 0);
	CHECK(v.it_value.tv_sec > 0 || v.it_value.tv_usec > 0);
	useconds_t left = ualarm(0, 0);
	CHECK(left > 0 && left <= 900000);
	CHECK(getitimer(ITIMER_REAL, &v) == 0);
	CHECK(v.it_value.tv_sec == 0 && v.it_value.tv_usec == 0);
	/* One that expires: main takes its SIGALRM. */
	run_off_initial(set_ualarm, (void *)(uintptr_t)20000);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	struct timespec ts = { 5, 0 };
	siginfo_t si;
	CHECK(sigtimedwait(&set, &si, &ts) == SIGALRM);
}

/* ---- CPU time ----------------------------------------------------------------------- */

#define NSPIN 2
#define SPIN_NS 400000000LL

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static int64_t tv_ns(const struct timeval *tv)
{
	return (int64_t)tv->tv_sec * 1000000000 + (int64_t)tv->tv_usec * 1000;
}

static int64_t process_cpu_ns(void)
{
	struct timespec ts;
	CHECK(clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0);
	return ts_ns(&ts);
}

/* Until the program has used SPIN_NS more CPU time (both threads at
 * once, on as many kernel threads as there are). */
static int64_t spin_until;

static void *spin(void *arg)
{
	(void)arg;
	do
		for (volatile int i = 0; i < 100000; i++)
			;
	while (process_cpu_ns() < spin_until);
	return NULL;
}

/* The program's CPU time by getrusage and times: at least 60 % of its CPU
 * clock's (the kernel samples them at its ticks: an ended thread's are not
 * scaled to its run time), and none of it a child's.  The CPU clock's. */
static int64_t check_cputime(const char *when, int64_t before)
{
	int64_t c = process_cpu_ns();
	struct rusage ru;
	CHECK(getrusage(RUSAGE_SELF, &ru) == 0);
	int64_t r = tv_ns(&ru.ru_utime) + tv_ns(&ru.ru_stime);
	struct tms tm;
	CHECK(times(&tm) != (clock_t)-1);
	int64_t tick = 1000000000 / sysconf(_SC_CLK_TCK);
	int64_t t = (int64_t)(tm.tms_utime + tm.tms_stime + 1) * tick;
	clock_t k = clock();
	CHECK(k != (clock_t)-1);
	int64_t cl = (int64_t)k * (1000000000 / CLOCKS_PER_SEC);
	clockid_t pid_clk, zero_clk;
	struct timespec ts;
	CHECK_OK(clock_getcpuclockid(getpid(), &pid_clk));
	CHECK_OK(clock_getcpuclockid(0, &zero_clk));
	CHECK(clock_gettime(pid_clk, &ts) == 0);
	int64_t p = ts_ns(&ts);
	CHECK(clock_gettime(zero_clk, &ts) == 0);
	int64_t z = ts_ns(&ts);
	if (c < before || r < c / 10 * 6 || t < c / 10 * 6 || cl < c / 10 * 6 || p < c / 10 * 6 ||
	    z < c / 10 * 6) {
		fprintf(stderr,
			"%s: CLOCK_PROCESS_CPUTIME_ID %lld ms (%lld ms before), getrusage %lld ms, "
			"times %lld ms, clock() %lld ms, clock_getcpuclockid(getpid()) %lld ms, "
			"(0) %lld ms\n",
			when, (long long)(c / 1000000), (long long)(before / 1000000),
			(long long)(r / 1000000), (long long)(t / 1000000), (long long)(cl / 1000000),
			(long long)(p / 1000000), (long long)(z / 1000000));
		exit(1);
	}
	/* No child: nothing of the program's own counts as a child's. */
	CHECK(getrusage(RUSAGE_CHILDREN, &ru) == 0);
	int64_t ch = tv_ns(&ru.ru_utime) + tv_ns(&ru.ru_stime);
	if (ch > 10000000 || tm.tms_cutime + tm.tms_cstime > 1) {
		fprintf(stderr, "%s: RUSAGE_CHILDREN %lld ms, tms_cutime+cstime %ld ticks, no child\n",
			when, (long long)(ch / 1000000), (long)(tm.tms_cutime + tm.tms_cstime));
		exit(1);
	}
	return c;
}

struct check_arg {
	const char *when;
	int64_t before, c;
};

static void *check_cputime_thread(void *arg)
{
	struct check_arg *a = arg;
	move_off_initial();
	a->c = check_cputime(a->when, a->before);
	return NULL;
}

static void check_cpu(void)
{
	pthread_t t[NSPIN];
	spin_until = process_cpu_ns() + SPIN_NS;
	for (int i = 0; i < NSPIN; i++)
		CHECK_OK(pthread_create(&t[i], NULL, spin, NULL));
	for (int i = 0; i < NSPIN; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	int64_t c = check_cputime("main, threads joined", spin_until);
	struct check_arg a = { "another thread", c, 0 };
	run_off_initial(check_cputime_thread, &a);
	nap_ms(200);   /* back to one thread: libppl's helpers may retire */
	check_cputime("main, after 200 ms alone", a.c);
}

int main(void)
{
	initial_ktid = (pid_t)syscall(SYS_gettid);
	/* The timers' signals are taken by sigtimedwait: blocked everywhere. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGALRM);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &set, NULL));
	run_off_initial(moved, NULL);   /* libppl's first: its VPs start meanwhile */
	check_cpu();
	check_timers();
	check_ualarm();
	puts("ok");
	return 0;
}
