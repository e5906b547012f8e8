/* Time as signed 64-bit nanoseconds: the unit of every deadline in libppl.
 * ±292 years around each clock's origin; conversions saturate beyond that,
 * which turns absurd deadlines (tv_sec = LONG_MAX) into "never". */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "vpdep.h"

#define NS_PER_S 1000000000LL

int vp_clock_gettime(clockid_t clk, struct timespec *ts)
{
	static void *_Atomic slot;
	return ((int (*)(clockid_t, struct timespec *))vp_libc_fn(&slot, "clock_gettime", NULL))(
		clk, ts);
}

int64_t clock_now_ns(clockid_t clk)
{
	struct timespec ts;
	/* Callers pass only clocks they validated: failing here is a libppl
	 * bug, and no value returned would be safe to compute a deadline with. */
	if (ppl_unlikely(vp_clock_gettime(clk, &ts) != 0))
		abort();
	return timespec_to_ns(&ts);
}

int64_t clock_coarse_ns(void)
{
	/* The C library's clock_gettime (the vDSO), not libppl's own, which
	 * tells thread CPU clocks apart first: this is on every park. */
	struct timespec ts;
	if (vp_clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0)
		return 0;
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

int64_t timespec_to_ns(const struct timespec *ts)
{
	int64_t s = ts->tv_sec, ns = ts->tv_nsec, r;
	/* Below zero, borrow the nanoseconds from the next second up, so that
	 * the most negative representable values do not overflow on the way. */
	if (s < 0 && ns > 0) {
		s += 1;
		ns -= NS_PER_S;
	}
	if (__builtin_mul_overflow(s, NS_PER_S, &r) || __builtin_add_overflow(r, ns, &r))
		return s < 0 ? INT64_MIN : INT64_MAX;
	return r;
}

struct timespec ns_to_timespec(int64_t ns)
{
	/* C division truncates toward zero; tv_nsec must lie in [0, 1e9), so
	 * a negative remainder borrows one second: -1 ns is {-1, 999999999}. */
	int64_t s = ns / NS_PER_S;
	int64_t r = ns % NS_PER_S;
	if (r < 0) {
		r += NS_PER_S;
		s -= 1;
	}
	return (struct timespec){ .tv_sec = (time_t)s, .tv_nsec = (long)r };
}
