/* nanosleep, clock_nanosleep, usleep, sleep and sched_yield from many
 * threads at once.  Every sleep lasts at least what was asked, and the
 * threads sleep in parallel: under libppl a sleeping thread parks and frees
 * its VP, so 100 threads sleeping 1.1 s each still finish in about 1.1 s. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include "tp_util.h"

#define THREADS 100
#define MS 1000000LL

static void add_ns(struct timespec *ts, long long ns)
{
	ns += ts->tv_nsec;
	ts->tv_sec += ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
}

static void *sleeper(void *arg)
{
	long long t0 = tp_now_ns();
	for (int i = 0; i < 5; i++) {
		struct timespec ts = { 0, 10 * MS };
		CHECK(nanosleep(&ts, NULL) == 0);
	}
	CHECK(tp_now_ns() - t0 >= 50 * MS);

	long long t1 = tp_now_ns();
	for (int i = 0; i < 5; i++)
		CHECK(usleep(10000) == 0);
	CHECK(tp_now_ns() - t1 >= 50 * MS);

	long long t2 = tp_now_ns();
	struct timespec rel = { 0, 10 * MS };
	CHECK_OK(clock_nanosleep(CLOCK_MONOTONIC, 0, &rel, NULL));
	struct timespec abs;
	clock_gettime(CLOCK_MONOTONIC, &abs);
	add_ns(&abs, 10 * MS);
	CHECK_OK(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &abs, NULL));
	clock_gettime(CLOCK_REALTIME, &abs);
	add_ns(&abs, 10 * MS);
	CHECK_OK(clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &abs, NULL));
	CHECK(tp_now_ns() - t2 >= 30 * MS);

	for (int i = 0; i < 100; i++)
		CHECK(sched_yield() == 0);

	long long t3 = tp_now_ns();
	CHECK(sleep(1) == 0);
	CHECK(tp_now_ns() - t3 >= 1000 * MS);
	return arg;
}

int main(void)
{
	/* Invalid requests fail without sleeping. */
	struct timespec bad = { 0, 1000000000 };
	errno = 0;
	CHECK(nanosleep(&bad, NULL) == -1 && errno == EINVAL);
	CHECK(clock_nanosleep(CLOCK_MONOTONIC, 0, &bad, NULL) == EINVAL);

	long long t0 = tp_now_ns();
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, sleeper, NULL));
	for (int i = 0; i < THREADS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	long long elapsed = tp_now_ns() - t0;
	printf("%d threads slept 1.13 s each in %.2f s\n", THREADS, elapsed / 1e9);
	/* Serialised sleeps would take THREADS / VPs times longer. */
	CHECK(elapsed < 5000 * MS);
	puts("sleep: ok");
	return 0;
}
