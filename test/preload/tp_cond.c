/* Condition variables: a bounded buffer with several producers and
 * consumers, broadcast to many waiters, timed waits on both clocks. */
#include <errno.h>
#include <pthread.h>

#include "tp_util.h"

#define SLOTS 8
#define PRODUCERS 4
#define CONSUMERS 4
#define ITEMS 20000 /* per producer */

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static long buf[SLOTS];
static int head, count, producers_left = PRODUCERS;
static long long consumed_sum;
static long consumed_n;

static void *producer(void *arg)
{
	long base = (long)(size_t)arg * ITEMS;
	for (long i = 1; i <= ITEMS; i++) {
		pthread_mutex_lock(&m);
		while (count == SLOTS)
			CHECK_OK(pthread_cond_wait(&not_full, &m));
		buf[(head + count++) % SLOTS] = base + i;
		pthread_cond_signal(&not_empty);
		pthread_mutex_unlock(&m);
	}
	pthread_mutex_lock(&m);
	if (--producers_left == 0)
		pthread_cond_broadcast(&not_empty);
	pthread_mutex_unlock(&m);
	return NULL;
}

static void *consumer(void *arg)
{
	long long sum = 0;
	long n = 0;
	pthread_mutex_lock(&m);
	for (;;) {
		while (count == 0 && producers_left > 0)
			CHECK_OK(pthread_cond_wait(&not_empty, &m));
		if (count == 0)
			break;
		sum += buf[head];
		head = (head + 1) % SLOTS;
		count--;
		n++;
		pthread_cond_signal(&not_full);
	}
	consumed_sum += sum;
	consumed_n += n;
	pthread_mutex_unlock(&m);
	return arg;
}

#define WAITERS 50
static pthread_cond_t go_cv = PTHREAD_COND_INITIALIZER;
static int waiting, go, woken;

static void *waiter(void *arg)
{
	pthread_mutex_lock(&m);
	waiting++;
	pthread_cond_signal(&not_empty); /* reused: "one more is waiting" */
	while (!go)
		CHECK_OK(pthread_cond_wait(&go_cv, &m));
	woken++;
	pthread_mutex_unlock(&m);
	return arg;
}

static void timed_wait(clockid_t clk, pthread_cond_t *cv)
{
	struct timespec dl;
	clock_gettime(clk, &dl);
	dl.tv_nsec += 30 * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	long long t0 = tp_now_ns();
	pthread_mutex_lock(&m);
	int err;
	do
		err = pthread_cond_timedwait(cv, &m, &dl);
	while (err == 0); /* a spurious wake-up is allowed */
	pthread_mutex_unlock(&m);
	CHECK(err == ETIMEDOUT);
	CHECK(tp_now_ns() - t0 >= 25 * 1000000LL);
}

int main(void)
{
	pthread_t p[PRODUCERS], c[CONSUMERS];
	for (int i = 0; i < CONSUMERS; i++)
		CHECK_OK(pthread_create(&c[i], NULL, consumer, NULL));
	for (int i = 0; i < PRODUCERS; i++)
		CHECK_OK(pthread_create(&p[i], NULL, producer, (void *)(size_t)i));
	for (int i = 0; i < PRODUCERS; i++)
		CHECK_OK(pthread_join(p[i], NULL));
	for (int i = 0; i < CONSUMERS; i++)
		CHECK_OK(pthread_join(c[i], NULL));
	long long total = (long long)PRODUCERS * ITEMS;
	CHECK(consumed_n == total);
	CHECK(consumed_sum == total * (total + 1) / 2);

	/* Broadcast wakes every waiter. */
	pthread_t w[WAITERS];
	for (int i = 0; i < WAITERS; i++)
		CHECK_OK(pthread_create(&w[i], NULL, waiter, NULL));
	pthread_mutex_lock(&m);
	while (waiting < WAITERS)
		pthread_cond_wait(&not_empty, &m);
	go = 1;
	CHECK_OK(pthread_cond_broadcast(&go_cv));
	pthread_mutex_unlock(&m);
	for (int i = 0; i < WAITERS; i++)
		CHECK_OK(pthread_join(w[i], NULL));
	CHECK(woken == WAITERS);

	/* Timed waits that nobody signals. */
	pthread_cond_t rt;
	CHECK_OK(pthread_cond_init(&rt, NULL));
	timed_wait(CLOCK_REALTIME, &rt);
	CHECK_OK(pthread_cond_destroy(&rt));
	pthread_condattr_t ca;
	CHECK_OK(pthread_condattr_init(&ca));
	CHECK_OK(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC));
	clockid_t clk;
	CHECK_OK(pthread_condattr_getclock(&ca, &clk));
	CHECK(clk == CLOCK_MONOTONIC);
	pthread_cond_t mono;
	CHECK_OK(pthread_cond_init(&mono, &ca));
	timed_wait(CLOCK_MONOTONIC, &mono);
	CHECK_OK(pthread_cond_destroy(&mono));
	CHECK_OK(pthread_condattr_destroy(&ca));
	puts("cond: ok");
	return 0;
}
