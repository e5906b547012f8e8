/* The C library's sleeps and sched_yield, for user threads: they park the
 * thread on a timer of its VP instead of blocking the VP.  A kernel thread
 * libppl did not create sleeps in the kernel as usual. */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pthread_impl.h"

#define NS 1000000000LL

int ppl_sched_yield(void)
{
	sched_yield_user();
	cancel_async_check();
	return 0;
}

static bool valid(const struct timespec *ts)
{
	return ts->tv_sec >= 0 && ts->tv_nsec >= 0 && ts->tv_nsec < NS;
}

int ppl_clock_nanosleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem)
{
	cancel_point();
	if (vp_current() == NULL || (clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC &&
				     clk != CLOCK_BOOTTIME && clk != CLOCK_TAI)) {
		/* Not a user thread, or a clock the timers do not follow (CPU
		 * clocks: the kernel decides, EINVAL/ENOTSUP as in glibc). */
		long r = syscall(SYS_clock_nanosleep, clk, flags, req, rem);
		return r == 0 ? 0 : errno;
	}
	if (req->tv_nsec < 0 || req->tv_nsec >= NS)
		return EINVAL;
	int64_t deadline;
	if (flags & TIMER_ABSTIME) {
		if (req->tv_sec < 0)
			return 0;
		deadline = clock_now_ns(CLOCK_MONOTONIC) + (timespec_to_ns(req) - clock_now_ns(clk));
	} else {
		if (req->tv_sec < 0)
			return EINVAL;
		deadline = clock_now_ns(CLOCK_MONOTONIC) + timespec_to_ns(req);
	}
	int err = sched_sleep_until_cp(deadline);
	if (err == ECANCELED)
		cancel_act();
	if (rem && !(flags & TIMER_ABSTIME)) {
		/* Interrupted by a signal: the time left, as the kernel reports it. */
		int64_t left = err == EINTR ? deadline - clock_now_ns(CLOCK_MONOTONIC) : 0;
		if (left < 0)
			left = 0;
		rem->tv_sec = left / NS;
		rem->tv_nsec = left % NS;
	}
	return err;
}

int ppl_nanosleep(const struct timespec *req, struct timespec *rem)
{
	cancel_point();
	if (!valid(req)) {
		errno = EINVAL;
		return -1;
	}
	int err = ppl_clock_nanosleep(CLOCK_REALTIME, 0, req, rem);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

int ppl_usleep(useconds_t us)
{
	struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000 };
	return ppl_nanosleep(&ts, NULL);
}

unsigned ppl_sleep(unsigned s)
{
	struct timespec ts = { s, 0 }, rem = { 0, 0 };
	if (ppl_nanosleep(&ts, &rem) != 0)
		return (unsigned)rem.tv_sec + (rem.tv_nsec != 0);
	return 0;
}
