/* Unnamed semaphores (sem_init & co.) over glibc's 32-byte sem_t.
 *
 * glibc 2.36's semaphore (64-bit atomics) is a word `data` holding the value
 * in its low 32 bits and the number of registered waiters in the high 32,
 * then `private` (0 for a process-private semaphore, 128 =
 * FUTEX_PRIVATE_FLAG's "shared" marker for a process-shared one), then 20
 * bytes glibc never touches.  libppl keeps that layout exactly, so a
 * semaphore made by sem_open (glibc's, it writes the 16 bytes itself) or by
 * a process running plain NPTL is used the same way.
 *
 * Invariants
 *  - A waiter registers (adds 1 to the high half) before it looks at the
 *    value for the last time, and unregisters when it leaves; a poster
 *    increments the value with one RMW on the same word and looks for
 *    waiters only if that RMW saw a registered one.  Both sides act on one
 *    atomic word, so either the waiter's registration sees the new value or
 *    the poster sees the registration.
 *  - Process-private semaphores keep a spin lock and a wait queue of parked
 *    threads in glibc's padding.  A waiter registers, checks the value and
 *    parks while holding `lock` (released after the switch), and a poster
 *    that saw a waiter pops one under `lock`: so a waiter is either seen on
 *    the queue or has seen the token.  No futex call between user threads.
 *  - A woken waiter is not handed the token: it competes again (a thread
 *    on the fast path may have taken it) and parks again if it loses.
 *  - Process-shared semaphores speak glibc's protocol on the low word:
 *    posters FUTEX_WAKE (shared) one waiter when they saw a registered one;
 *    waiters wait for the low word to leave 0 through pshared_wait
 *    (parklot.c), which polls as a ULT on a shared VP and futex-waits on a
 *    kernel thread of their own.  A plain NPTL process sharing the
 *    semaphore registers, waits and wakes the same way.
 *  - A thread that owns its kernel thread (foreign, or bound to a VP of its
 *    own) waits in the kernel on the value word, private or shared, as
 *    glibc does, so a signal interrupts it with EINTR.  A poster that saw
 *    a registered waiter but found no parked thread wakes that word.
 *
 * These functions set errno and return -1, as POSIX says for semaphores.
 * sem_wait, sem_timedwait and sem_clockwait are cancellation points: they
 * act on a pending request on entry, and pthread_cancel interrupts their
 * three blocking calls below (sem_park, sem_pshared_wait, sem_kernel_wait,
 * which return ECANCELED then).  The waiter unregisters before it unwinds,
 * as after a time-out, so the semaphore keeps no trace of it. */
#include <limits.h>
#include <semaphore.h>
#include <unistd.h>

#include "cancel.h"
#include "monitor.h"
#include "parklot.h"
#include "preempt.h"
#include "schedhooks.h"
#include "scheduler.h"
#include "ult.h"
#include "vproc.h"
#include "waitq.h"

#define SEM_VALUE_MASK     0xffffffffull
#define SEM_NWAITERS_SHIFT 32
#define SEM_WAITER         (1ull << SEM_NWAITERS_SHIFT)
#define SEM_SHARED         128    /* glibc's FUTEX_SHARED in `private` */

struct sem {
	_Atomic uint64_t data;     /* value (low 32 bits), waiters (high 32): glibc's */
	int private;               /* 0: process-private; SEM_SHARED: shared (glibc's) */
	spin_t lock;               /* private only: protects q (glibc's padding) */
	struct waitq q;            /* private only: parked threads, under lock */
};

_Static_assert(sizeof(struct sem) <= sizeof(sem_t), "struct sem overlays sem_t");
_Static_assert(_Alignof(struct sem) <= _Alignof(sem_t), "struct sem alignment");
_Static_assert(offsetof(struct sem, private) == 8, "glibc's private field");

#define S(s) ((struct sem *)(void *)(s))

/* The 32-bit half holding the value: the futex word glibc waits on. */
static _Atomic uint32_t *value_word(struct sem *s)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return (_Atomic uint32_t *)(void *)&s->data;
#else
	return (_Atomic uint32_t *)(void *)&s->data + 1;
#endif
}

static int fail(int err)
{
	errno = err;
	return -1;
}

/* ---- the blocking calls (cancellation points) ---------------------------- */

static void sem_kernel_wake(struct sem *s)
{
	futex_wake_word(value_word(s), 1, s->private != 0);
}

/* Wake one waiter, private or shared, parked or in the kernel. */
static void wake_one(struct sem *s)
{
	if (s->private != 0) {
		pshared_wake(value_word(s), 1);
		return;
	}
	spin_lock(&s->lock);
	struct ult *t = waitq_pop(&s->q);
	spin_unlock(&s->lock);
	if (t)
		sched_wake(t);
	else
		sem_kernel_wake(s);   /* the waiter waits in the kernel */
}

/* A registered waiter that is cancelled: unregister, as after a time-out.
 * A post may have woken it (and only it) just before: pass the wake-up on
 * if a token and another waiter are left, or that waiter could sleep on a
 * positive semaphore. */
static void cancelled(void *arg)
{
	struct sem *s = arg;
	uint64_t d = atomic_fetch_sub_explicit(&s->data, SEM_WAITER, memory_order_acq_rel) -
		     SEM_WAITER;
	if ((d & SEM_VALUE_MASK) > 0 && (d >> SEM_NWAITERS_SHIFT) > 0)
		wake_one(s);
}

/* Park on a private semaphore's queue; s->lock is held and self queued. */
static int sem_park(struct sem *s, const struct timespec *abstime, clockid_t clk)
{
	/* A signal interrupts the wait (EINTR), as a sem_wait in the kernel. */
	return sched_park_flags(&s->lock, &s->q, abstime, clk, PARK_CP | PARK_INTR);
}

/* Wait for the value word of a shared semaphore to leave 0. */
static int sem_pshared_wait(struct sem *s, const struct timespec *abstime, clockid_t clk)
{
	return pshared_wait_cp(value_word(s), 0, abstime, clk);
}

/* A kernel-level wait on the value word while it is 0: 0 (woken, changed
 * or spurious), EINTR, ETIMEDOUT or ECANCELED (a cancel interrupted it). */
static int sem_kernel_wait(struct sem *s, const struct timespec *abstime, clockid_t clk)
{
	if (abstime && abstime->tv_sec < 0)
		return ETIMEDOUT;
	int saved = errno;
	struct vproc *cv = cancel_syscall_enter(cancelled, s);
	int err = futex_wait_word(value_word(s), 0, s->private != 0, abstime, clk);
	errno = saved;
	cancel_syscall_leave(cv, false);
	return err == EINTR || err == ETIMEDOUT ? err : 0;
}

/* ---- init, destroy, value ---------------------------------------------------- */

int ppl_sem_init(sem_t *sem, int pshared, unsigned value)
{
	if (value > SEM_VALUE_MAX)
		return fail(EINVAL);
	struct sem *s = S(sem);
	atomic_store_explicit(&s->data, value, memory_order_relaxed);
	s->private = pshared ? SEM_SHARED : 0;
	spin_init(&s->lock);
	s->q.head = s->q.tail = NULL;
	return 0;
}

int ppl_sem_destroy(sem_t *sem)
{
	/* Nothing to release (glibc's does nothing either); destroying a
	 * semaphore threads still wait on is undefined. */
	(void)sem;
	return 0;
}

int ppl_sem_getvalue(sem_t *restrict sem, int *restrict sval)
{
	uint64_t d = atomic_load_explicit(&S(sem)->data, memory_order_relaxed);
	*sval = (int)(d & SEM_VALUE_MASK);
	return 0;
}

/* ---- post ---------------------------------------------------------------------- */

int ppl_sem_post(sem_t *sem)
{
	struct sem *s = S(sem);
	uint64_t d = atomic_load_explicit(&s->data, memory_order_relaxed);
	do {
		if ((d & SEM_VALUE_MASK) == SEM_VALUE_MAX)
			return fail(EOVERFLOW);
	} while (!atomic_compare_exchange_weak_explicit(&s->data, &d, d + 1, memory_order_release,
							memory_order_relaxed));
	if ((d >> SEM_NWAITERS_SHIFT) != 0) {
		wake_one(s);
		preempt_point();
	}
	return 0;
}

/* ---- wait ------------------------------------------------------------------------ */

/* Take a token if the value is positive, without registering. */
static bool try_take(struct sem *s)
{
	uint64_t d = atomic_load_explicit(&s->data, memory_order_relaxed);
	while ((d & SEM_VALUE_MASK) > 0)
		if (atomic_compare_exchange_weak_explicit(&s->data, &d, d - 1, memory_order_acquire,
							  memory_order_relaxed))
			return true;
	return false;
}

/* Registered waiter: take a token and unregister in one step, if d says
 * there is one.  On failure d is reloaded. */
static bool take_registered(struct sem *s, uint64_t *d)
{
	while ((*d & SEM_VALUE_MASK) > 0)
		if (atomic_compare_exchange_weak_explicit(&s->data, d, *d - 1 - SEM_WAITER,
							  memory_order_acquire, memory_order_relaxed))
			return true;
	return false;
}

static int wait_private(struct sem *s, const struct timespec *abstime, clockid_t clk)
{
	struct ult *self = ult_self();
	spin_lock(&s->lock);
	uint64_t d = atomic_fetch_add_explicit(&s->data, SEM_WAITER, memory_order_acq_rel) +
		     SEM_WAITER;
	for (;;) {
		if (take_registered(s, &d)) {
			spin_unlock(&s->lock);
			return 0;
		}
		waitq_push(&s->q, self);
		int err = sem_park(s, abstime, clk);
		if (err == ECANCELED) {
			/* Off the queue already (sched_park_cp). */
			cancelled(s);
			cancel_act();
		}
		if (err == EINTR) {
			/* A signal's handler has run: off the queue, unregister
			 * as a cancelled waiter does. */
			cancelled(s);
			return fail(EINTR);
		}
		if (err) {
			/* Timed out: off the queue already (sched_park). */
			atomic_fetch_sub_explicit(&s->data, SEM_WAITER, memory_order_relaxed);
			return fail(err);
		}
		spin_lock(&s->lock);
		d = atomic_load_explicit(&s->data, memory_order_relaxed);
	}
}

static int wait_shared(struct sem *s, const struct timespec *abstime, clockid_t clk)
{
	uint64_t d = atomic_fetch_add_explicit(&s->data, SEM_WAITER, memory_order_acq_rel) +
		     SEM_WAITER;
	for (;;) {
		if (take_registered(s, &d))
			return 0;
		int err = sem_pshared_wait(s, abstime, clk);
		if (err == ECANCELED) {
			cancelled(s);
			cancel_act();
		}
		if (err == ETIMEDOUT) {
			atomic_fetch_sub_explicit(&s->data, SEM_WAITER, memory_order_relaxed);
			return fail(ETIMEDOUT);
		}
		d = atomic_load_explicit(&s->data, memory_order_relaxed);
	}
}

static int wait_kernel(struct sem *s, const struct timespec *abstime, clockid_t clk)
{
	uint64_t d = atomic_fetch_add_explicit(&s->data, SEM_WAITER, memory_order_acq_rel) +
		     SEM_WAITER;
	for (;;) {
		if (take_registered(s, &d))
			return 0;
		int err = sem_kernel_wait(s, abstime, clk);
		if (err) {
			atomic_fetch_sub_explicit(&s->data, SEM_WAITER, memory_order_relaxed);
			return fail(err);
		}
		d = atomic_load_explicit(&s->data, memory_order_relaxed);
	}
}

static int sem_wait_common(sem_t *sem, const struct timespec *abstime, clockid_t clk)
{
	struct sem *s = S(sem);
	cancel_point();
	if (try_take(s))
		return 0;
	if (owns_kthread())
		return wait_kernel(s, abstime, clk);
	if (s->private != 0)
		return wait_shared(s, abstime, clk);
	return wait_private(s, abstime, clk);
}

int ppl_sem_wait(sem_t *sem)
{
	sched_point();
	return sem_wait_common(sem, NULL, CLOCK_REALTIME);
}

int ppl_sem_trywait(sem_t *sem)
{
	sched_point();
	return try_take(S(sem)) ? 0 : fail(EAGAIN);
}

int ppl_sem_timedwait(sem_t *restrict sem, const struct timespec *restrict abstime)
{
	sched_point();
	/* glibc checks the time before trying the semaphore. */
	if (abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)
		return fail(EINVAL);
	return sem_wait_common(sem, abstime, CLOCK_REALTIME);
}

int ppl_sem_clockwait(sem_t *restrict sem, clockid_t clk, const struct timespec *restrict abstime)
{
	sched_point();
	if (clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC)
		return fail(EINVAL);
	if (abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)
		return fail(EINVAL);
	return sem_wait_common(sem, abstime, clk);
}
