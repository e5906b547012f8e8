/* Per-thread CPU-time clocks: a thread that spins sees its own clock
 * advance; a thread that sleeps meanwhile (on one VP, on the same kernel
 * thread as the spinner) is charged nothing for the spinner's time; main
 * reads another thread's clock; clock_getres works on these clocks. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "tp_util.h"

static _Atomic clockid_t sleeper_clock;
static atomic_int sleeper_ready, sleeper_done;

static long long ns(clockid_t c)
{
	struct timespec ts;
	CHECK(clock_gettime(c, &ts) == 0);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *sleeper(void *arg)
{
	clockid_t c;
	CHECK_OK(pthread_getcpuclockid(pthread_self(), &c));
	atomic_store(&sleeper_clock, c);
	atomic_store(&sleeper_ready, 1);
	/* Asleep until main has read its clock for the last time: its clock
	 * ends with it, and a loaded machine may stretch the spinner's 50 ms. */
	while (!atomic_load(&sleeper_done)) {
		struct timespec d = {0, 20000000};
		while (nanosleep(&d, &d) != 0)
			CHECK(errno == EINTR);
	}
	return NULL;
}

static void *spinner(void *arg)
{
	clockid_t c;
	CHECK_OK(pthread_getcpuclockid(pthread_self(), &c));
	long long start = ns(c), prev = start;
	while (prev - start < 50000000) {   /* 50 ms of this thread's CPU time */
		long long now = ns(c);
		CHECK(now >= prev);
		prev = now;
	}
	return NULL;
}

int main(void)
{
	pthread_t s, p;
	CHECK_OK(pthread_create(&s, NULL, sleeper, NULL));
	while (!atomic_load(&sleeper_ready))
		usleep(1000);
	clockid_t sc = atomic_load(&sleeper_clock);
	long long before = ns(sc);
	CHECK_OK(pthread_create(&p, NULL, spinner, NULL));
	CHECK_OK(pthread_join(p, NULL));
	/* The spinner's 50 ms are not the sleeper's. */
	long long slept = ns(sc) - before;
	CHECK(slept >= 0 && slept < 20000000);
	struct timespec res;
	CHECK(clock_getres(sc, &res) == 0 && res.tv_sec == 0 && res.tv_nsec > 0);
	atomic_store(&sleeper_done, 1);
	CHECK_OK(pthread_join(s, NULL));

	clockid_t mine;
	CHECK_OK(pthread_getcpuclockid(pthread_self(), &mine));
	CHECK(ns(mine) >= 0);
	printf("cpuclock: ok (sleeper charged %lld ns)\n", slept);
	return 0;
}
