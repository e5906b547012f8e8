#define _GNU_SOURCE 1
/* Semaphores between threads: ping-pong, a counting producer/consumer
 * run, timed waits and the error cases glibc reports. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdint.h>

#include "tp_util.h"

#define ROUNDS 20000
#define PRODUCERS 4
#define CONSUMERS 4
#define ITEMS 5000   /* per producer */

static sem_t ping, pong;
static int ball;

static void *ponger(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		CHECK(sem_wait(&ping) == 0);
		CHECK(ball == 2 * i + 1);
		ball++;
		CHECK(sem_post(&pong) == 0);
	}
	return NULL;
}

static void ping_pong(void)
{
	CHECK(sem_init(&ping, 0, 0) == 0);
	CHECK(sem_init(&pong, 0, 0) == 0);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, ponger, NULL));
	for (int i = 0; i < ROUNDS; i++) {
		CHECK(ball == 2 * i);
		ball++;
		CHECK(sem_post(&ping) == 0);
		CHECK(sem_wait(&pong) == 0);
	}
	CHECK_OK(pthread_join(t, NULL));
	CHECK(ball == 2 * ROUNDS);
	CHECK(sem_destroy(&ping) == 0);
	CHECK(sem_destroy(&pong) == 0);
}

/* Bounded buffer: `slots` counts free slots, `items` full ones. */
static sem_t slots, items;
static pthread_mutex_t buf_lock = PTHREAD_MUTEX_INITIALIZER;
static long buf[8];
static int head, tail;
static long consumed_sum;

static void *producer(void *arg)
{
	long base = (long)(intptr_t)arg * ITEMS;
	for (long i = 0; i < ITEMS; i++) {
		CHECK(sem_wait(&slots) == 0);
		CHECK_OK(pthread_mutex_lock(&buf_lock));
		buf[tail] = base + i;
		tail = (tail + 1) % 8;
		CHECK_OK(pthread_mutex_unlock(&buf_lock));
		CHECK(sem_post(&items) == 0);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	long n = (long)(intptr_t)arg, sum = 0;
	for (long i = 0; i < n; i++) {
		/* Mix the blocking and polling forms. */
		if (i % 3 == 0) {
			/* User threads are not preempted: yield while polling. */
			while (sem_trywait(&items) != 0) {
				CHECK(errno == EAGAIN);
				sched_yield();
			}
		} else {
			CHECK(sem_wait(&items) == 0);
		}
		CHECK_OK(pthread_mutex_lock(&buf_lock));
		sum += buf[head];
		head = (head + 1) % 8;
		CHECK_OK(pthread_mutex_unlock(&buf_lock));
		CHECK(sem_post(&slots) == 0);
	}
	CHECK_OK(pthread_mutex_lock(&buf_lock));
	consumed_sum += sum;
	CHECK_OK(pthread_mutex_unlock(&buf_lock));
	return NULL;
}

static void bounded_buffer(void)
{
	CHECK(sem_init(&slots, 0, 8) == 0);
	CHECK(sem_init(&items, 0, 0) == 0);
	pthread_t p[PRODUCERS], c[CONSUMERS];
	for (int i = 0; i < CONSUMERS; i++)
		CHECK_OK(pthread_create(&c[i], NULL, consumer,
					(void *)(intptr_t)(PRODUCERS * ITEMS / CONSUMERS)));
	for (int i = 0; i < PRODUCERS; i++)
		CHECK_OK(pthread_create(&p[i], NULL, producer, (void *)(intptr_t)i));
	for (int i = 0; i < PRODUCERS; i++)
		CHECK_OK(pthread_join(p[i], NULL));
	for (int i = 0; i < CONSUMERS; i++)
		CHECK_OK(pthread_join(c[i], NULL));
	long n = (long)PRODUCERS * ITEMS;
	CHECK(consumed_sum == n * (n - 1) / 2);
	int v;
	CHECK(sem_getvalue(&slots, &v) == 0 && v == 8);
	CHECK(sem_getvalue(&items, &v) == 0 && v == 0);
}

static sem_t late;

static void *late_poster(void *arg)
{
	(void)arg;
	struct timespec d = { 0, 30 * 1000000L };
	nanosleep(&d, NULL);
	CHECK(sem_post(&late) == 0);
	return NULL;
}

static void timed(void)
{
	sem_t s;
	CHECK(sem_init(&s, 0, 0) == 0);

	/* Times out, after the deadline, on both clocks. */
	long long t0 = tp_now_ns();
	struct timespec ts = tp_in_ms(CLOCK_REALTIME, 50);
	errno = 0;
	CHECK(sem_timedwait(&s, &ts) == -1 && errno == ETIMEDOUT);
	CHECK(tp_now_ns() - t0 >= 45000000LL);
	t0 = tp_now_ns();
	ts = tp_in_ms(CLOCK_MONOTONIC, 50);
	CHECK(sem_clockwait(&s, CLOCK_MONOTONIC, &ts) == -1 && errno == ETIMEDOUT);
	CHECK(tp_now_ns() - t0 >= 45000000LL);

	/* A deadline in the past still takes an available token... */
	ts.tv_sec = 0;
	ts.tv_nsec = 0;
	CHECK(sem_post(&s) == 0);
	CHECK(sem_timedwait(&s, &ts) == 0);
	/* ... and times out at once without one. */
	CHECK(sem_timedwait(&s, &ts) == -1 && errno == ETIMEDOUT);

	/* Bad times and clocks: EINVAL, checked even when a token is there. */
	CHECK(sem_post(&s) == 0);
	ts.tv_nsec = 1000000000L;
	CHECK(sem_timedwait(&s, &ts) == -1 && errno == EINVAL);
	ts.tv_nsec = -1;
	CHECK(sem_timedwait(&s, &ts) == -1 && errno == EINVAL);
	ts = tp_in_ms(CLOCK_MONOTONIC, 50);
	CHECK(sem_clockwait(&s, CLOCK_PROCESS_CPUTIME_ID, &ts) == -1 && errno == EINVAL);
	int v;
	CHECK(sem_getvalue(&s, &v) == 0 && v == 1);
	CHECK(sem_trywait(&s) == 0);
	CHECK(sem_trywait(&s) == -1 && errno == EAGAIN);

	/* A post before the deadline wakes a timed waiter. */
	CHECK(sem_init(&late, 0, 0) == 0);
	pthread_t t;
	CHECK_OK(pthread_create(&t, NULL, late_poster, NULL));
	ts = tp_in_ms(CLOCK_REALTIME, 10000);
	CHECK(sem_timedwait(&late, &ts) == 0);
	CHECK_OK(pthread_join(t, NULL));
	CHECK(sem_destroy(&s) == 0);
}

static void errors(void)
{
	sem_t s;
	errno = 0;
	CHECK(sem_init(&s, 0, (unsigned)SEM_VALUE_MAX + 1u) == -1 && errno == EINVAL);
	CHECK(sem_init(&s, 0, SEM_VALUE_MAX) == 0);
	CHECK(sem_post(&s) == -1 && errno == EOVERFLOW);
	int v;
	CHECK(sem_getvalue(&s, &v) == 0 && v == SEM_VALUE_MAX);
	CHECK(sem_wait(&s) == 0);
	CHECK(sem_post(&s) == 0);
	CHECK(sem_destroy(&s) == 0);
	/* A semaphore marked process-shared works between threads too. */
	CHECK(sem_init(&s, 1, 0) == 0);
	CHECK(sem_post(&s) == 0);
	CHECK(sem_wait(&s) == 0);
	CHECK(sem_destroy(&s) == 0);
}

int main(void)
{
	errors();
	ping_pong();
	bounded_buffer();
	timed();
	printf("semaphores ok\n");
	return 0;
}
