/* A thread made ready with a higher priority than a running one preempts
 * it at once, whatever woke it, as the kernel does for NPTL's threads.  The
 * process pins itself to one CPU (sched_setaffinity, as real-time programs
 * do) and runs with two VPs unless PPL_VPS says otherwise; main runs at
 * SCHED_FIFO 20.  Two SCHED_RR 5 threads spin (so every VP is busy) until a
 * SCHED_RR 10 thread, blocked, is woken and says so, or 3 s pass:
 *  - sleep:     its nanosleep ends (a timer of the busy VP);
 *  - timedwait: its pthread_cond_timedwait times out;
 *  - signal:    a SIGALRM handler (setitimer) posts the semaphore it waits on;
 *  - waker:     a SCHED_FIFO 7 thread wakes from a sleep and posts it;
 *  - self:      a spinner posts it, and the high thread has run by the time
 *               sem_post returns (the waker's next instruction).
 * Then SCHED_FIFO never shares by time slice (three SCHED_FIFO 5 threads
 * that compute 60 ms each never all run at once: one CPU, at most two VPs)
 * and SCHED_RR does (three SCHED_RR 5 threads that compute until all three
 * have started get there).  Orderings only; the 3 s bound is a failure.
 * Needs root for the real-time policies: without it, exit 77 (skipped). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "tp_util.h"

#define LIMIT_NS 3000000000LL

enum mode { SLEEP, TIMEDWAIT, SIGNAL, WAKER, SELF, NMODES };
static const char *const names[NMODES] = { "sleep", "timedwait", "signal", "waker", "self" };

static enum mode mode;
static atomic_int woken, spinning, timed_out, self_late;
static sem_t sem;
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

static void sleep_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void on_alarm(int sig)
{
	(void)sig;
	sem_post(&sem);
}

static void *high(void *arg)
{
	(void)arg;
	if (mode == SLEEP) {
		sleep_ms(50);
	} else if (mode == TIMEDWAIT) {
		struct timespec ts = tp_in_ms(CLOCK_REALTIME, 50);
		CHECK_OK(pthread_mutex_lock(&mtx));
		int err;
		while ((err = pthread_cond_timedwait(&cond, &mtx, &ts)) == 0)
			;
		CHECK(err == ETIMEDOUT);
		CHECK_OK(pthread_mutex_unlock(&mtx));
	} else {
		while (sem_wait(&sem) != 0)
			CHECK(errno == EINTR);
	}
	atomic_store(&woken, 1);
	return NULL;
}

static void *waker(void *arg)
{
	(void)arg;
	sleep_ms(50);
	CHECK(sem_post(&sem) == 0);
	return NULL;
}

static void *spinner(void *arg)
{
	bool poster = arg != NULL;
	atomic_fetch_add(&spinning, 1);
	long long end = tp_now_ns() + LIMIT_NS;
	if (poster) {
		/* Both spinners busy: the high thread must take this VP. */
		while (atomic_load(&spinning) < 2 && tp_now_ns() < end)
			;
		CHECK(sem_post(&sem) == 0);
		if (!atomic_load(&woken))
			atomic_store(&self_late, 1);
	}
	while (!atomic_load(&woken) && tp_now_ns() < end)
		;
	if (!atomic_load(&woken))
		atomic_store(&timed_out, 1);
	return NULL;
}

static void run_mode(enum mode m)
{
	mode = m;
	atomic_store(&woken, 0);
	atomic_store(&spinning, 0);
	atomic_store(&timed_out, 0);
	atomic_store(&self_late, 0);
	CHECK(sem_init(&sem, 0, 0) == 0);
	if (m == SIGNAL) {
		struct sigaction sa = { .sa_handler = on_alarm };
		sigemptyset(&sa.sa_mask);
		CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
		struct itimerval it = { .it_value = { 0, 50000 } };
		CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
	}
	pthread_t h = tp_spawn_sched(SCHED_RR, 10, high, NULL), w;
	if (m == WAKER)
		w = tp_spawn_sched(SCHED_FIFO, 7, waker, NULL);
	pthread_t s1 = tp_spawn_sched(SCHED_RR, 5, spinner, m == SELF ? &mode : NULL);
	pthread_t s2 = tp_spawn_sched(SCHED_RR, 5, spinner, NULL);
	CHECK_OK(pthread_join(h, NULL));
	if (m == WAKER)
		CHECK_OK(pthread_join(w, NULL));
	CHECK_OK(pthread_join(s1, NULL));
	CHECK_OK(pthread_join(s2, NULL));
	if (atomic_load(&timed_out) || atomic_load(&self_late)) {
		fprintf(stderr, "prio-wake: %s: the woken high priority thread %s\n", names[m],
			atomic_load(&timed_out) ? "did not preempt a spinner in 3 s"
						: "had not run when sem_post returned");
		exit(1);
	}
	CHECK(sem_destroy(&sem) == 0);
}

/* ---- time slices: SCHED_FIFO none, SCHED_RR among its priority ---------------- */

static atomic_int running, max_running, started;
static int slice_policy;

static void *slicer(void *arg)
{
	(void)arg;
	int r = atomic_fetch_add(&running, 1) + 1;
	int mx = atomic_load(&max_running);
	while (r > mx && !atomic_compare_exchange_weak(&max_running, &mx, r))
		;
	atomic_fetch_add(&started, 1);
	long long t0 = tp_now_ns();
	if (slice_policy == SCHED_FIFO) {
		while (tp_now_ns() - t0 < 60000000LL)
			;
	} else {
		while (atomic_load(&started) < 3 && tp_now_ns() - t0 < LIMIT_NS)
			;
	}
	atomic_fetch_sub(&running, 1);
	return NULL;
}

static void run_slices(int policy)
{
	slice_policy = policy;
	atomic_store(&running, 0);
	atomic_store(&max_running, 0);
	atomic_store(&started, 0);
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		t[i] = tp_spawn_sched(policy, 5, slicer, NULL);
	for (int i = 0; i < 3; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	if (policy == SCHED_FIFO && atomic_load(&max_running) == 3) {
		fprintf(stderr, "prio-wake: three SCHED_FIFO threads ran at once on one CPU\n");
		exit(1);
	}
	if (policy == SCHED_RR && atomic_load(&max_running) != 3) {
		fprintf(stderr, "prio-wake: SCHED_RR threads of one priority did not share "
				"the CPU (at most %d of 3 at once)\n",
			atomic_load(&max_running));
		exit(1);
	}
}

int main(int argc, char **argv)
{
	(void)argc;
	if (getenv("PPL_VPS") == NULL) {
		setenv("PPL_VPS", "2", 1);
		execv("/proc/self/exe", argv);
		perror("prio-wake: execv");
		return 1;
	}
	alarm(60);
	struct sched_param sp = { .sched_priority = 20 };
	if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
		CHECK(errno == EPERM);
		printf("prio-wake: skipped, SCHED_FIFO needs privilege\n");
		return 77;
	}
	tp_pin_first_cpu();

	for (int m = 0; m < NMODES; m++)
		run_mode((enum mode)m);
	run_slices(SCHED_FIFO);
	run_slices(SCHED_RR);
	printf("prio-wake: ok\n");
	return 0;
}
