/* clock.c: nanosecond conversions, including negatives and saturation. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "vpdep.h"

static void check(int64_t ns, time_t sec, long nsec)
{
	struct timespec ts = ns_to_timespec(ns);
	assert_int_equal(ts.tv_sec, sec);
	assert_int_equal(ts.tv_nsec, nsec);
	assert_int_equal(timespec_to_ns(&ts), ns);
}

static void test_conversions(void **state)
{
	check(0, 0, 0);
	check(1, 0, 1);
	check(999999999, 0, 999999999);
	check(1000000000, 1, 0);
	check(1500000000, 1, 500000000);
	/* tv_nsec stays in [0, 1e9) below zero: floor, not truncation. */
	check(-1, -1, 999999999);
	check(-999999999, -1, 1);
	check(-1000000000, -1, 0);
	check(-1500000000, -2, 500000000);
	check(INT64_MAX, INT64_MAX / 1000000000, INT64_MAX % 1000000000);
	check(INT64_MIN, -9223372037, 145224192);
	check(INT64_MIN + 1000000000, -9223372036, 145224192);
}

static void test_saturation(void **state)
{
	struct timespec far = { .tv_sec = LONG_MAX, .tv_nsec = 999999999 };
	assert_int_equal(timespec_to_ns(&far), INT64_MAX);
	struct timespec past = { .tv_sec = LONG_MIN, .tv_nsec = 0 };
	assert_int_equal(timespec_to_ns(&past), INT64_MIN);
}

static void test_now(void **state)
{
	int64_t a = clock_now_ns(CLOCK_MONOTONIC);
	struct timespec nap = { .tv_nsec = 2000000 };
	nanosleep(&nap, NULL);
	int64_t b = clock_now_ns(CLOCK_MONOTONIC);
	assert_true(b - a >= 2000000);
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	int64_t r = clock_now_ns(CLOCK_REALTIME);
	assert_true(r >= timespec_to_ns(&rt));
	assert_true(r - timespec_to_ns(&rt) < 1000000000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conversions),
		cmocka_unit_test(test_saturation),
		cmocka_unit_test(test_now),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
