/* The C library's sleeps and sched_yield, for user threads: they park the
 * thread on a timer of its VP instead of blocking the VP.  A kernel thread
 * libppl did not create sleeps in the kernel as usual. */
#include <errno.h>
#include <unistd.h>

#include "cancel.h"
#include "preempt.h"
#include "scheduler.h"

#define NS 1000000000LL

int ppl_sched_yield(void)
{
	sched_yield_user();
	cancel_async_check();
	/* A thread polling a flag with sched_yield and nothing else to run
	 * is nearly always in libppl: a signal held there (its handler sets
	 * the flag) comes in here, also without preemption ticks. */
	preempt_point();
	return 0;
}

/* The kernel reads *req (EFAULT if it cannot) and writes *rem only when a
 * signal interrupts a relative sleep (EFAULT then if it cannot). */
int ppl_clock_nanosleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem)
{
	cancel_point();
	/* glibc's own answer: the kernel's would be ENOTSUP. */
	if (clk == CLOCK_THREAD_CPUTIME_ID)
		return EINVAL;
	if (vp_current() == NULL || (clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC &&
				     clk != CLOCK_BOOTTIME && clk != CLOCK_TAI)) {
		/* Not a user thread, or a clock the timers do not follow (CPU
		 * clocks: the kernel decides, EINVAL/ENOTSUP as in glibc). */
		return vp_kthread_sleep(clk, flags, req, rem);
	}
	struct timespec ts;
	if (vp_copy_in(&ts, req, sizeof ts) != 0)
		return EFAULT;
	if (ts.tv_nsec < 0 || ts.tv_nsec >= NS)
		return EINVAL;
	int64_t deadline, realtime = -1;
	if (flags & TIMER_ABSTIME) {
		if (ts.tv_sec < 0)
			return 0;
		int64_t now = clock_now_ns(clk);
		deadline = clock_now_ns(CLOCK_MONOTONIC) + (timespec_to_ns(&ts) - now);
		/* Not to end before that clock reads ts, as the kernel's sleep
		 * would not if it was set back (CLOCK_TAI moves with it). */
		if (clk == CLOCK_REALTIME)
			realtime = timespec_to_ns(&ts);
		else if (clk == CLOCK_TAI)
			realtime = timespec_to_ns(&ts) - (now - clock_now_ns(CLOCK_REALTIME));
	} else {
		if (ts.tv_sec < 0)
			return EINVAL;
		deadline = clock_now_ns(CLOCK_MONOTONIC) + timespec_to_ns(&ts);
	}
	int err = sched_sleep_until_cp(deadline, realtime);
	if (err == ECANCELED)
		cancel_act();
	if (err == EINTR && rem && !(flags & TIMER_ABSTIME)) {
		/* The time left, as the kernel reports it. */
		int64_t left = deadline - clock_now_ns(CLOCK_MONOTONIC);
		if (left < 0)
			left = 0;
		struct timespec r = { left / NS, left % NS };
		if (vp_copy_out(rem, &r, sizeof r) != 0)
			return EFAULT;
	}
	return err;
}

int ppl_nanosleep(const struct timespec *req, struct timespec *rem)
{
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
