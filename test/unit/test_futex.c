/* futex_wait/futex_wake (vpdep.h): values, timeouts on each clock, wake-ups
 * across kernel threads. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "vpdep.h"

#define MS 1000000LL

static struct timespec in_ms(clockid_t clk, int64_t ms)
{
	return ns_to_timespec(clock_now_ns(clk) + ms * MS);
}

static void test_value_changed(void **state)
{
	_Atomic uint32_t w = 5;
	assert_int_equal(futex_wait(&w, 4, NULL, CLOCK_MONOTONIC), EAGAIN);
	struct timespec ts = in_ms(CLOCK_REALTIME, 1000);
	assert_int_equal(futex_wait(&w, 4, &ts, CLOCK_REALTIME), EAGAIN);
}

static void test_past_deadline(void **state)
{
	_Atomic uint32_t w = 0;
	struct timespec ts = in_ms(CLOCK_MONOTONIC, -10);
	assert_int_equal(futex_wait(&w, 0, &ts, CLOCK_MONOTONIC), ETIMEDOUT);
	ts = in_ms(CLOCK_REALTIME, -10);
	assert_int_equal(futex_wait(&w, 0, &ts, CLOCK_REALTIME), ETIMEDOUT);
	ts = (struct timespec){ .tv_sec = -1, .tv_nsec = 0 };
	assert_int_equal(futex_wait(&w, 0, &ts, CLOCK_REALTIME), ETIMEDOUT);
}

static void test_invalid(void **state)
{
	_Atomic uint32_t w = 0;
	struct timespec ts = { .tv_sec = 1, .tv_nsec = 1000000000L };
	assert_int_equal(futex_wait(&w, 0, &ts, CLOCK_MONOTONIC), EINVAL);
	ts.tv_nsec = -1;
	assert_int_equal(futex_wait(&w, 0, &ts, CLOCK_REALTIME), EINVAL);
	ts = in_ms(CLOCK_MONOTONIC, 1000);
	assert_int_equal(futex_wait(&w, 0, &ts, CLOCK_PROCESS_CPUTIME_ID), EINVAL);
}

/* Waits ~50 ms on clk and checks the kernel really slept that long. */
static void timeout_on(clockid_t clk)
{
	_Atomic uint32_t w = 0;
	int64_t t0 = clock_now_ns(CLOCK_MONOTONIC);
	struct timespec ts = in_ms(clk, 50);
	int r;
	/* EINTR is allowed by the contract; nothing here sends signals. */
	while ((r = futex_wait(&w, 0, &ts, clk)) == EINTR)
		;
	int64_t dt = clock_now_ns(CLOCK_MONOTONIC) - t0;
	assert_int_equal(r, ETIMEDOUT);
	assert_true(dt >= 49 * MS);
	assert_true(dt < 2000 * MS);
}

static void test_timeout_monotonic(void **state) { timeout_on(CLOCK_MONOTONIC); }
static void test_timeout_realtime(void **state) { timeout_on(CLOCK_REALTIME); }
static void test_timeout_boottime(void **state) { timeout_on(CLOCK_BOOTTIME); }

struct pingpong {
	_Atomic uint32_t turn;     /* even: main's turn, odd: the thread's */
	int rounds;
};

static void wait_for(_Atomic uint32_t *w, uint32_t want)
{
	uint32_t v;
	while ((v = atomic_load_explicit(w, memory_order_acquire)) != want) {
		struct timespec ts = in_ms(CLOCK_MONOTONIC, 5000);
		/* A lost wake-up turns into ETIMEDOUT, failing the test. */
		int r = futex_wait(w, v, &ts, CLOCK_MONOTONIC);
		assert_true(r == 0 || r == EAGAIN || r == EINTR);
	}
}

static void *ponger(void *arg)
{
	struct pingpong *p = arg;
	for (int i = 0; i < p->rounds; i++) {
		wait_for(&p->turn, 2 * (uint32_t)i + 1);
		atomic_store_explicit(&p->turn, 2 * (uint32_t)i + 2, memory_order_release);
		futex_wake(&p->turn, 1);
	}
	return NULL;
}

static void test_wake_pingpong(void **state)
{
	struct pingpong p = { .rounds = 20000 };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, ponger, &p), 0);
	for (int i = 0; i < p.rounds; i++) {
		atomic_store_explicit(&p.turn, 2 * (uint32_t)i + 1, memory_order_release);
		futex_wake(&p.turn, 1);
		wait_for(&p.turn, 2 * (uint32_t)i + 2);
	}
	assert_int_equal(pthread_join(t, NULL), 0);
}

struct sleeper {
	_Atomic uint32_t word;
	_Atomic int woken;
};

static void *sleep_until_set(void *arg)
{
	struct sleeper *s = arg;
	while (atomic_load_explicit(&s->word, memory_order_acquire) == 0)
		futex_wait(&s->word, 0, NULL, CLOCK_MONOTONIC);
	atomic_fetch_add_explicit(&s->woken, 1, memory_order_relaxed);
	return NULL;
}

static void test_wake_all(void **state)
{
	struct sleeper s = { 0 };
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&t[i], NULL, sleep_until_set, &s), 0);
	/* Let them block (the test is valid either way, but this is the
	 * interesting case). */
	struct timespec nap = { .tv_nsec = 20 * MS };
	nanosleep(&nap, NULL);
	atomic_store_explicit(&s.word, 1, memory_order_release);
	futex_wake(&s.word, INT_MAX);
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(atomic_load(&s.woken), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_value_changed),
		cmocka_unit_test(test_past_deadline),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_timeout_monotonic),
		cmocka_unit_test(test_timeout_realtime),
		cmocka_unit_test(test_timeout_boottime),
		cmocka_unit_test(test_wake_pingpong),
		cmocka_unit_test(test_wake_all),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
