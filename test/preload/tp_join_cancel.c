/* Joins that glibc's tests check (tst-join5, -8, -10, -12, -15), with each
 * join function: pthread_join, pthread_timedjoin_np, pthread_clockjoin_np
 * on CLOCK_REALTIME and on CLOCK_MONOTONIC.
 *
 *  - A thread joins main; main cancels it and joins it.  The cancelled
 *    thread leaves its join, so main's join is no deadlock: glibc returns
 *    EDEADLK only if the thread joining us has no cancel request and is
 *    not exiting.  libppl said EDEADLK ("cannot join 1st thread: 35").
 *  - A join of oneself is EDEADLK, before and after.
 *  - Timed joins (100 ms, each clock) of a thread in pause(), which holds
 *    its kernel thread in a call libppl does not interpose: REALTIME and
 *    MONOTONIC time out, the other clocks are EINVAL.  libppl hung on one
 *    VP: the joiner's timer sat on the VP whose kernel thread was in
 *    pause(), and nothing watched it. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "tp_util.h"

enum { JOIN, TIMEDJOIN, CLOCKJOIN_REALTIME, CLOCKJOIN_MONOTONIC, NKINDS };
static const char *const names[NKINDS] = { "pthread_join", "pthread_timedjoin_np",
					   "pthread_clockjoin_np(REALTIME)",
					   "pthread_clockjoin_np(MONOTONIC)" };

static int join_kind(int kind, pthread_t t, void **res)
{
	struct timespec ts;
	switch (kind) {
	case JOIN:
		return pthread_join(t, res);
	case TIMEDJOIN:
		ts = tp_in_ms(CLOCK_REALTIME, 1000000);
		return pthread_timedjoin_np(t, res, &ts);
	case CLOCKJOIN_REALTIME:
		ts = tp_in_ms(CLOCK_REALTIME, 1000000);
		return pthread_clockjoin_np(t, res, CLOCK_REALTIME, &ts);
	default:
		ts = tp_in_ms(CLOCK_MONOTONIC, 1000000);
		return pthread_clockjoin_np(t, res, CLOCK_MONOTONIC, &ts);
	}
}

struct joiner_arg {
	int kind;
	pthread_t target;
};

static void *joiner(void *arg)
{
	struct joiner_arg *a = arg;
	int err = join_kind(a->kind, a->target, NULL);
	fprintf(stderr, "%s: the join of main returned %d instead of acting on the cancel\n",
		names[a->kind], err);
	exit(42);
}

static void check_self_join(int kind)
{
	int err = join_kind(kind, pthread_self(), NULL);
	if (err != EDEADLK) {
		fprintf(stderr, "%s: join of oneself: %d, not EDEADLK\n", names[kind], err);
		exit(1);
	}
}

static void cancel_joiner_of_main(int kind)
{
	check_self_join(kind);
	for (int round = 0; round < 2; round++) {
		struct joiner_arg a = { kind, pthread_self() };
		pthread_t t;
		CHECK_OK(pthread_create(&t, NULL, joiner, &a));
		usleep(200000);   /* into its join of main */
		CHECK_OK(pthread_cancel(t));
		void *res;
		int err = join_kind(kind, t, &res);
		if (err != 0) {
			fprintf(stderr, "%s: cannot join thread %d: %d\n", names[kind], round + 1,
				err);
			exit(1);
		}
		CHECK(res == PTHREAD_CANCELED);
		check_self_join(kind);
	}
}

static void *pauser(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static void handler(int sig)
{
	(void)sig;
}

static void timed_joins_of_paused_thread(void)
{
	static const clockid_t clocks[] = {
		CLOCK_REALTIME,          CLOCK_MONOTONIC,       CLOCK_PROCESS_CPUTIME_ID,
		CLOCK_THREAD_CPUTIME_ID, CLOCK_MONOTONIC_RAW,   CLOCK_REALTIME_COARSE,
		CLOCK_MONOTONIC_COARSE,  CLOCK_BOOTTIME,        CLOCK_REALTIME_ALARM,
		CLOCK_BOOTTIME_ALARM,    CLOCK_TAI,
	};
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, pauser, NULL));
	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < sizeof clocks / sizeof clocks[0]; i++) {
			struct timespec ts;
			if (clock_gettime(clocks[i], &ts) == 0)
				ts = tp_in_ms(clocks[i], 100);
			else
				ts = (struct timespec){ .tv_sec = -1 };
			int want = clocks[i] == CLOCK_REALTIME || clocks[i] == CLOCK_MONOTONIC ?
					   ETIMEDOUT : EINVAL;
			long long t0 = tp_now_ns();
			int err = pthread_clockjoin_np(t, NULL, clocks[i], &ts);
			long long ms = (tp_now_ns() - t0) / 1000000;
			if (err != want) {
				fprintf(stderr, "clock %d: pthread_clockjoin_np: %d, not %d\n",
					(int)clocks[i], err, want);
				exit(1);
			}
			if (want == ETIMEDOUT && (ms < 99 || ms > 5000)) {
				fprintf(stderr, "clock %d: timed out after %lld ms, not 100\n",
					(int)clocks[i], ms);
				exit(1);
			}
		}
		/* Once more with the thread just back from a signal handler
		 * and in pause() again: on libppl its kernel thread may be
		 * another VP's by now. */
		CHECK_OK(pthread_kill(t, SIGUSR1));
	}
}

int main(void)
{
	alarm(60);
	signal(SIGUSR1, handler);
	timed_joins_of_paused_thread();
	for (int kind = 0; kind < NKINDS; kind++)
		cancel_joiner_of_main(kind);
	/* glibc's pthread_tryjoin_np of a running thread (oneself included)
	 * is EBUSY. */
	CHECK(pthread_tryjoin_np(pthread_self(), NULL) == EBUSY);
	puts("join-cancel: ok");
	return 0;
}
