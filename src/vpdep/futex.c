/* Futex wait/wake: VP sleep, blocking of kernel threads libppl did not
 * create (process-private words), and the kernel side of
 * PTHREAD_PROCESS_SHARED objects (shared words, parklot.c). */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "futex.h"

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449   /* Linux 5.16, the same number on every architecture */
#endif
#include "vpdep.h"

int futex_wait(_Atomic uint32_t *addr, uint32_t val, const struct timespec *abstime,
	       clockid_t clk)
{
	if (abstime == NULL)
		return futex_sys(addr, FUTEX_WAIT_PRIVATE, val, NULL, 0);
	if (abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)
		return EINVAL;
	/* The kernel rejects a negative tv_sec as invalid, but a deadline
	 * before the epoch has simply passed. */
	if (abstime->tv_sec < 0)
		return ETIMEDOUT;
	/* FUTEX_WAIT_BITSET takes an absolute time, so a wait that is
	 * interrupted and retried by the caller keeps its deadline. */
	if (clk == CLOCK_REALTIME)
		return futex_sys(addr, FUTEX_WAIT_BITSET_PRIVATE | FUTEX_CLOCK_REALTIME, val,
				 abstime, FUTEX_BITSET_MATCH_ANY);
	if (clk == CLOCK_MONOTONIC)
		return futex_sys(addr, FUTEX_WAIT_BITSET_PRIVATE, val, abstime,
				 FUTEX_BITSET_MATCH_ANY);
	/* Any other clock: the kernel cannot wait on it, so translate the
	 * deadline to CLOCK_MONOTONIC once.  Good enough for the clocks that
	 * advance with real time (CLOCK_BOOTTIME, CLOCK_TAI); a CPU-time clock
	 * is refused. */
	if (clk == CLOCK_PROCESS_CPUTIME_ID || clk == CLOCK_THREAD_CPUTIME_ID || clk < 0)
		return EINVAL;
	struct timespec now;
	if (vp_clock_gettime(clk, &now) != 0)
		return EINVAL;
	int64_t left = timespec_to_ns(abstime) - timespec_to_ns(&now);
	if (left <= 0)
		return ETIMEDOUT;
	int64_t mono = clock_now_ns(CLOCK_MONOTONIC);
	struct timespec dl = ns_to_timespec(left > INT64_MAX - mono ? INT64_MAX : mono + left);
	return futex_sys(addr, FUTEX_WAIT_BITSET_PRIVATE, val, &dl, FUTEX_BITSET_MATCH_ANY);
}

void futex_wake(_Atomic uint32_t *addr, int n)
{
	/* Errors are impossible for a valid private futex address; a bad
	 * address is the caller's bug and shows up as a lost wake-up in tests. */
	(void)futex_sys(addr, FUTEX_WAKE_PRIVATE, (uint32_t)(n < 0 ? INT_MAX : n), NULL, 0);
}

int futex_wait_shared(_Atomic uint32_t *addr, uint32_t val, const struct timespec *abstime)
{
	/* No FUTEX_PRIVATE_FLAG: the kernel keys the wait by the page, so a
	 * waker in another process finds it. */
	return futex_sys(addr, FUTEX_WAIT_BITSET, val, abstime, FUTEX_BITSET_MATCH_ANY);
}

int futex_wait_either(_Atomic uint32_t *addr, uint32_t val, _Atomic uint32_t *intr,
		      uint32_t intr_val, const struct timespec *abstime)
{
	struct futex_waitv w[2] = {
		{ .val = val, .uaddr = (uintptr_t)addr, .flags = FUTEX_32 },
		{ .val = intr_val, .uaddr = (uintptr_t)intr, .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG },
	};
	/* Returns the index of the word woken; the deadline is absolute. */
	long r = vp_syscall(SYS_futex_waitv, w, 2, 0, abstime, CLOCK_MONOTONIC);
	return r < 0 ? errno : 0;
}

void futex_wake_shared(_Atomic uint32_t *addr, int n)
{
	(void)futex_sys(addr, FUTEX_WAKE, (uint32_t)(n < 0 ? INT_MAX : n), NULL, 0);
}

int futex_robust_register(void *head, size_t len)
{
	return vp_syscall(SYS_set_robust_list, head, len) == 0 ? 0 : errno;
}

int vp_gettid(void)
{
	return (int)vp_syscall(SYS_gettid);
}

int futex_wait_word(_Atomic uint32_t *addr, uint32_t val, bool shared,
		    const struct timespec *abstime, clockid_t clk)
{
	int op = FUTEX_WAIT_BITSET | (shared ? 0 : FUTEX_PRIVATE_FLAG);
	if (abstime && clk == CLOCK_REALTIME)
		op |= FUTEX_CLOCK_REALTIME;
	return futex_sys(addr, op, val, abstime, FUTEX_BITSET_MATCH_ANY);
}

void futex_wake_word(_Atomic uint32_t *addr, int n, bool shared)
{
	int saved = errno;
	(void)futex_sys(addr, FUTEX_WAKE | (shared ? 0 : FUTEX_PRIVATE_FLAG),
			(uint32_t)(n < 0 ? INT_MAX : n), NULL, 0);
	errno = saved;
}
