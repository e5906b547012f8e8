/* Asynchronous cancellation: of a thread in a busy loop that calls nothing
 * (with one VP, main runs to cancel it only because the loop is preempted), of
 * one parked in sleep, and of one blocked on a mutex (which is not a
 * cancellation point: only the asynchronous type ends that wait). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include "tp_util.h"

static atomic_int started, handled;
static atomic_long spins;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void handler(void *arg)
{
	atomic_fetch_add(&handled, 1);
}

static void go_async(void)
{
	int old;
	CHECK_OK(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old));
	CHECK(old == PTHREAD_CANCEL_DEFERRED);
}

static void *busy(void *arg)
{
	pthread_cleanup_push(handler, NULL);
	go_async();
	atomic_store(&started, 1);
	for (;;)
		atomic_fetch_add_explicit(&spins, 1, memory_order_relaxed);
	pthread_cleanup_pop(0);
	return NULL;
}

static void *sleeper(void *arg)
{
	pthread_cleanup_push(handler, NULL);
	go_async();
	atomic_store(&started, 1);
	for (;;)
		sleep(5);
	pthread_cleanup_pop(0);
	return NULL;
}

static void *locker(void *arg)
{
	pthread_cleanup_push(handler, NULL);
	go_async();
	atomic_store(&started, 1);
	pthread_mutex_lock(&m);
	atomic_store(&handled, -100);   /* must not get the mutex */
	pthread_cleanup_pop(0);
	return NULL;
}

static void run(void *(*fn)(void *), int rounds)
{
	for (int i = 0; i < rounds; i++) {
		pthread_t t;
		void *res;
		atomic_store(&started, 0);
		atomic_store(&handled, 0);
		CHECK_OK(pthread_create(&t, NULL, fn, NULL));
		/* Wait by yielding, which also exercises the run queues while
		 * the busy thread is preempted. */
		while (!atomic_load(&started))
			sched_yield();
		long long until = tp_now_ns() + 2000000;
		while (tp_now_ns() < until)
			sched_yield();
		CHECK_OK(pthread_cancel(t));
		CHECK_OK(pthread_join(t, &res));
		CHECK(res == PTHREAD_CANCELED);
		CHECK(atomic_load(&handled) == 1);
	}
}

int main(void)
{
	run(busy, 20);
	CHECK(atomic_load(&spins) > 0);
	run(sleeper, 5);
	CHECK_OK(pthread_mutex_lock(&m));
	run(locker, 5);
	CHECK_OK(pthread_mutex_unlock(&m));
	/* The mutex still works for others after its waiters were cancelled. */
	CHECK_OK(pthread_mutex_lock(&m));
	CHECK_OK(pthread_mutex_unlock(&m));
	return 0;
}
