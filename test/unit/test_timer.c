/* Timer heaps: firing order, cancel, cancel-while-firing, run from another
 * thread.  The calling kernel thread is adopted as a VP so timer_arm finds
 * its heap. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "pthread_impl.h"


static struct vproc vp;

static int fired[64], nfired;
static struct timer tms[64];

static void record(struct timer *tm)
{
	fired[nfired++] = (int)(tm - tms);
}

static int setup(void **state)
{
	vp.vp.id = 0;
	atomic_store(&vp.next_deadline, INT64_MAX);
	vp_adopt(&vp.vp);
	return 0;
}

static void test_order(void **state)
{
	nfired = 0;
	int64_t now = clock_now_ns(CLOCK_MONOTONIC);
	/* Deadlines in a scrambled order, all already due. */
	for (int i = 0; i < 64; i++)
		timer_arm(&tms[i], now - 1000000 + ((i * 37) % 64) * 10, -1, record);
	assert_int_equal(timer_run_expired(&vp), -1);
	assert_int_equal(nfired, 64);
	for (int i = 1; i < 64; i++)
		assert_true(tms[fired[i - 1]].deadline <= tms[fired[i]].deadline);
	assert_int_equal(atomic_load(&vp.next_deadline), INT64_MAX);
}

static void test_future_and_cancel(void **state)
{
	nfired = 0;
	int64_t now = clock_now_ns(CLOCK_MONOTONIC);
	timer_arm(&tms[0], now + 10000000000LL, -1, record);
	timer_arm(&tms[1], now - 1, -1, record);
	timer_arm(&tms[2], now + 20000000000LL, -1, record);
	int64_t left = timer_run_expired(&vp);
	assert_int_equal(nfired, 1);
	assert_int_equal(fired[0], 1);
	assert_true(left > 0 && left <= 10000000000LL);
	timer_cancel(&tms[0]);
	assert_int_equal(atomic_load(&vp.next_deadline), tms[2].deadline);
	timer_cancel(&tms[2]);
	timer_cancel(&tms[2]);     /* idempotent */
	assert_int_equal(atomic_load(&vp.next_deadline), INT64_MAX);
	assert_int_equal(timer_run_expired(&vp), -1);
	assert_int_equal(nfired, 1);
}

/* A canceller must wait until a firing callback has returned. */
static _Atomic int in_fire, release_fire;
static void slow(struct timer *tm)
{
	atomic_store(&in_fire, 1);
	while (!atomic_load(&release_fire))
		;
	atomic_store(&in_fire, 2);
}

static void *runner(void *arg)
{
	timer_run_expired(&vp);
	return NULL;
}

static void test_cancel_waits_for_fire(void **state)
{
	atomic_store(&in_fire, 0);
	timer_arm(&tms[5], clock_now_ns(CLOCK_MONOTONIC) - 1, -1, slow);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, runner, NULL), 0);
	while (atomic_load(&in_fire) == 0)
		;
	atomic_store(&release_fire, 1);
	timer_cancel(&tms[5]);
	assert_int_equal(atomic_load(&in_fire), 2);
	assert_int_equal(atomic_load(&tms[5].state), TIMER_IDLE);
	pthread_join(th, NULL);
}

/* A deadline on CLOCK_REALTIME fires once that clock has reached it, not
 * at its CLOCK_MONOTONIC equivalent alone: here the monotonic deadline is
 * due at once (as after the realtime clock was set back, or any early
 * conversion) and the realtime one 30 ms away.  Before, it fired at once.
 * How soon after the realtime deadline it fires is not checked: a realtime
 * clock that steps forward meanwhile (CI's machines do, by hundreds of
 * microseconds) still waits out the moved monotonic deadline (timer.h). */
static int64_t fired_realtime;
static void record_realtime(struct timer *tm)
{
	fired_realtime = clock_now_ns(CLOCK_REALTIME);
	record(tm);
}

static void test_realtime_not_before(void **state)
{
	nfired = 0;
	int64_t rt = clock_now_ns(CLOCK_REALTIME) + 30000000;
	timer_arm(&tms[10], clock_now_ns(CLOCK_MONOTONIC) - 1, rt, record_realtime);
	int64_t left = timer_run_expired(&vp);
	assert_int_equal(nfired, 0);
	assert_true(left > 0 && left <= 30000000);
	assert_int_equal(atomic_load(&tms[10].state), TIMER_PENDING);
	int64_t give_up = clock_now_ns(CLOCK_MONOTONIC) + 5000000000;
	while ((left = timer_run_expired(&vp)) != -1) {
		assert_true(left > 0 && clock_now_ns(CLOCK_MONOTONIC) < give_up);
		struct timespec ts = { 0, left < 1000000 ? left : 1000000 };
		nanosleep(&ts, NULL);
	}
	assert_int_equal(nfired, 1);
	assert_int_equal(fired[0], 10);
	assert_true(fired_realtime >= rt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_future_and_cancel),
		cmocka_unit_test(test_cancel_waits_for_fire),
		cmocka_unit_test(test_realtime_not_before),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
