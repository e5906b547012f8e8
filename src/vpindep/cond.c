/* pthread_cond_* and pthread_condattr_*.
 *
 * A private condition variable is a spin lock and a FIFO of parked waiters.
 *
 * Invariants
 *  - A waiter takes c->lock, releases the mutex, pushes itself on c->q and
 *    parks; c->lock is dropped only once it is switched out.  A signaller
 *    must hold the mutex (or have changed the predicate under it) and then
 *    takes c->lock, so it either finds the waiter on c->q or ran before the
 *    waiter released the mutex: no wake-up is lost.
 *  - Lock order: c->lock, then the mutex's internal lock (released while
 *    holding c->lock).  Nothing takes them in the other order.
 *  - signal pops one waiter, broadcast pops all, under c->lock; a popped
 *    thread is woken after c->lock is dropped and never touches c again, so
 *    c may be destroyed as soon as its waiters are gone from c->q.
 *  - A timed-out waiter is removed from c->q by its timer, under c->lock
 *    (sched_park), so it cannot also be popped: each wake-up goes to a
 *    thread that returns 0.  There are no spurious wake-ups.
 *  - nwaiters >= the number of threads on q, and is raised before the
 *    waiter releases the mutex: signal and broadcast return at once on 0.
 *  - Every wait re-acquires the mutex before returning, ETIMEDOUT included.
 *  - Process-shared: a sequence word bumped by each signal, waited on with
 *    a shared kernel futex; the waiter reads it before releasing the mutex.
 *    nwaiters lets signal skip the system call.
 *  - Private, but in memory another process shares (undefined behaviour):
 *    q_stamp names the process whose threads are on q (each push stamps
 *    it, under c->lock); another process never follows q's links
 *    (q_ours), which are TCB pointers of the stamping process. */
#include <string.h>

#include "cancel.h"
#include "fork.h"
#include "mutex.h"
#include "parklot.h"
#include "preempt.h"
#include "schedhooks.h"
#include "scheduler.h"
#include "ult.h"
#include "waitq.h"

/* pthread_condattr_t, glibc's encoding */
#define CA_PSHARED     1u
#define CA_CLOCK_SHIFT 1

struct cond {
	spin_t lock;                  /* protects q */
	uint32_t attr;                /* condattr word: CA_PSHARED | clock << 1; set at init */
	struct waitq q;               /* parked waiters (private only) */
	_Atomic uint32_t seq;         /* bumped by every signal and broadcast (private:
				       * under lock, when a thread waits) */
	_Atomic uint32_t nwaiters;    /* private: threads on q, counted in before the mutex is
				       * released, out by whoever pops them (or by themselves
				       * on time-out); pshared: threads between reading seq and
				       * leaving */
	uint64_t q_stamp;             /* private: proc_stamp() of the last push, so of the
				       * process whose threads are on q */
	uint64_t unused;
};

_Static_assert(sizeof(struct cond) == sizeof(pthread_cond_t), "cond overlay size");
_Static_assert(_Alignof(struct cond) <= _Alignof(pthread_cond_t), "cond overlay alignment");

struct condattr {
	uint32_t value;
};

_Static_assert(sizeof(struct condattr) == sizeof(pthread_condattr_t), "condattr size");
_Static_assert(_Alignof(struct condattr) <= _Alignof(pthread_condattr_t), "condattr align");

static inline struct cond *C(pthread_cond_t *c)
{
	return (struct cond *)c;
}

/* Under c->lock: may this process follow the links of c->q?  Not if
 * another process sharing the memory has its threads there (a private
 * cond used across processes, undefined behaviour): their TCB pointers
 * belong to its address space.  Such a cond reads as having no waiters of
 * ours, so a signal from here reaches none of them, as a private futex
 * wake-up on NPTL does not cross processes. */
static inline bool q_ours(struct cond *c)
{
	return c->q.head == NULL || proc_relation(c->q_stamp) != PROC_FOREIGN;
}

/* A wait on a private cond whose queue holds another process's threads:
 * this thread cannot join them, so it returns at once as a spurious
 * wake-up (after giving the mutex up for a moment), or ETIMEDOUT once the
 * deadline has passed. */
static int wait_foreign(pthread_mutex_t *m, const struct timespec *abstime, clockid_t clk)
{
	mutex_cond_enter(m);
	int err = ppl_pthread_mutex_unlock(m);
	if (err != 0) {
		mutex_cond_leave(m);
		return err;
	}
	(void)ppl_sched_yield();
	err = mutex_cond_relock(m);
	mutex_cond_leave(m);
	if (err == 0 && abstime &&
	    clock_now_ns(CLOCK_MONOTONIC) >= deadline_mono_ns(abstime, clk))
		err = ETIMEDOUT;
	return err;
}

static int wait_pshared(struct cond *c, pthread_mutex_t *m, const struct timespec *abstime,
			clockid_t clk)
{
	uint32_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
	atomic_fetch_add_explicit(&c->nwaiters, 1, memory_order_seq_cst);
	mutex_cond_enter(m);
	int err = ppl_pthread_mutex_unlock(m);
	bool unlocked = err == 0;
	if (unlocked) {
		err = pshared_wait_cp(&c->seq, seq, abstime, clk);
	}
	/* The last one out lets a pending pthread_cond_destroy return. */
	if (atomic_fetch_sub_explicit(&c->nwaiters, 1, memory_order_release) == 1)
		pshared_wake(&c->nwaiters, INT_MAX);
	if (!unlocked) {
		mutex_cond_leave(m);
		return err;
	}
	int err2 = mutex_cond_relock(m);
	mutex_cond_leave(m);
	/* A cancellation point: the mutex is held again for the handlers. */
	if (ppl_unlikely(err == ECANCELED))
		cancel_act();
	return err2 != 0 ? err2 : err;
}

static int wait_common(struct cond *c, pthread_mutex_t *m, const struct timespec *abstime,
		       clockid_t clk)
{
	cancel_point();
	if ((c->attr & CA_PSHARED) != 0)
		return wait_pshared(c, m, abstime, clk);
	struct ult *self = ult_self();
	spin_lock(&c->lock);
	if (ppl_unlikely(!q_ours(c))) {
		spin_unlock(&c->lock);
		return wait_foreign(m, abstime, clk);
	}
	/* Counted in before the mutex is released (its release orders it). */
	atomic_fetch_add_explicit(&c->nwaiters, 1, memory_order_relaxed);
	mutex_cond_enter(m);
	int err = ppl_pthread_mutex_unlock(m);
	if (ppl_unlikely(err != 0)) {
		mutex_cond_leave(m);
		atomic_fetch_sub_explicit(&c->nwaiters, 1, memory_order_relaxed);
		spin_unlock(&c->lock);
		return err;
	}
	uint32_t seq = atomic_load_explicit(&c->seq, memory_order_relaxed);
	for (;;) {
		waitq_push(&c->q, self);
		c->q_stamp = proc_stamp();
		err = sched_park_flags(&c->lock, &c->q, abstime, clk, PARK_CP | PARK_INTR);
		if (err != EINTR)
			break;
		/* A handler ran (a process-directed signal may pick a waiter):
		 * wait on, as NPTL's futex wait does (glibc's tst-eintr5), unless
		 * a signal or broadcast came meanwhile, which may have found
		 * nobody queued: then return, a wake-up POSIX allows. */
		spin_lock(&c->lock);
		if (atomic_load_explicit(&c->seq, memory_order_relaxed) != seq) {
			spin_unlock(&c->lock);
			break;
		}
	}
	/* Not popped (timed out, cancelled, interrupted): the waker did not
	 * count us out. */
	if (err != 0)
		atomic_fetch_sub_explicit(&c->nwaiters, 1, memory_order_relaxed);
	if (err == EINTR)
		err = 0;
	int err2 = mutex_cond_relock(m);
	mutex_cond_leave(m);
	/* POSIX: the mutex is held again when the cleanup handlers run. */
	if (ppl_unlikely(err == ECANCELED))
		cancel_act();
	return err2 != 0 ? err2 : err;
}

static inline clockid_t cond_clock(const struct cond *c)
{
	return (clockid_t)(c->attr >> CA_CLOCK_SHIFT);
}

int ppl_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	sched_point();
	return wait_common(C(c), m, NULL, CLOCK_REALTIME);
}

int ppl_pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
			       const struct timespec *ts)
{
	sched_point();
	if (clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC)
		return EINVAL;
	if (ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000L)
		return EINVAL;
	return wait_common(C(c), m, ts, clk);
}

int ppl_pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *ts)
{
	return ppl_pthread_cond_clockwait(c, m, cond_clock(C(c)), ts);
}

int ppl_pthread_cond_signal(pthread_cond_t *pc)
{
	sched_point();
	struct cond *c = C(pc);
	if ((c->attr & CA_PSHARED) != 0) {
		if (atomic_load_explicit(&c->nwaiters, memory_order_seq_cst) != 0) {
			atomic_fetch_add_explicit(&c->seq, 1, memory_order_release);
			pshared_wake(&c->seq, 1);
		}
		return 0;
	}
	/* A waiter counts itself before it releases the mutex: a caller that
	 * holds the mutex (or changed the predicate under it) sees the count. */
	if (atomic_load_explicit(&c->nwaiters, memory_order_relaxed) == 0)
		return 0;
	spin_lock(&c->lock);
	atomic_fetch_add_explicit(&c->seq, 1, memory_order_relaxed);   /* for interrupted waiters */
	struct ult *t = q_ours(c) ? waitq_pop(&c->q) : NULL;
	if (t)
		atomic_fetch_sub_explicit(&c->nwaiters, 1, memory_order_relaxed);
	spin_unlock(&c->lock);
	if (t)
		sched_wake(t);
	preempt_point();
	return 0;
}

int ppl_pthread_cond_broadcast(pthread_cond_t *pc)
{
	sched_point();
	struct cond *c = C(pc);
	if ((c->attr & CA_PSHARED) != 0) {
		if (atomic_load_explicit(&c->nwaiters, memory_order_seq_cst) != 0) {
			atomic_fetch_add_explicit(&c->seq, 1, memory_order_release);
			pshared_wake(&c->seq, INT_MAX);
		}
		return 0;
	}
	if (atomic_load_explicit(&c->nwaiters, memory_order_relaxed) == 0)
		return 0;
	struct ult *chain = NULL, *t;
	uint32_t n = 0;
	spin_lock(&c->lock);
	atomic_fetch_add_explicit(&c->seq, 1, memory_order_relaxed);   /* for interrupted waiters */
	/* Popped threads stay BLOCKED until sched_wake: their link is ours. */
	if (q_ours(c)) {
		while ((t = waitq_pop(&c->q)) != NULL) {
			t->next = chain;
			chain = t;
			n++;
		}
	}
	atomic_fetch_sub_explicit(&c->nwaiters, n, memory_order_relaxed);
	spin_unlock(&c->lock);
	/* chain is newest first: wake in FIFO order by reversing it. */
	struct ult *fifo = NULL;
	while (chain) {
		t = chain;
		chain = t->next;
		t->next = fifo;
		fifo = t;
	}
	while (fifo) {
		t = fifo;
		fifo = t->next;
		sched_wake(t);
	}
	preempt_point();
	return 0;
}

int ppl_pthread_cond_init(pthread_cond_t *pc, const pthread_condattr_t *a)
{
	memset(pc, 0, sizeof *pc);
	if (a)
		C(pc)->attr = ((const struct condattr *)a)->value;
	return 0;
}

/* glibc waits for woken waiters to leave; ours never touch c once woken.
 * Blocked waiters are undefined behaviour: reported as EBUSY (POSIX allows
 * it) where glibc would block until they are signalled. */
int ppl_pthread_cond_destroy(pthread_cond_t *pc)
{
	struct cond *c = C(pc);
	if ((c->attr & CA_PSHARED) != 0) {
		uint32_t n;
		while ((n = atomic_load_explicit(&c->nwaiters, memory_order_acquire)) != 0)
			(void)pshared_wait(&c->nwaiters, n, NULL, CLOCK_MONOTONIC);
		return 0;
	}
	spin_lock(&c->lock);
	bool busy = !q_ours(c) || !waitq_empty(&c->q);
	spin_unlock(&c->lock);
	return busy ? EBUSY : 0;
}

/* ---- attributes ------------------------------------------------------------ */

int ppl_pthread_condattr_init(pthread_condattr_t *a)
{
	((struct condattr *)a)->value = 0;
	return 0;
}

int ppl_pthread_condattr_destroy(pthread_condattr_t *a)
{
	(void)a;
	return 0;
}

int ppl_pthread_condattr_setclock(pthread_condattr_t *a, clockid_t clk)
{
	if (clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC)
		return EINVAL;
	struct condattr *ca = (struct condattr *)a;
	ca->value = (ca->value & CA_PSHARED) | ((uint32_t)clk << CA_CLOCK_SHIFT);
	return 0;
}

int ppl_pthread_condattr_getclock(const pthread_condattr_t *a, clockid_t *clk)
{
	*clk = (clockid_t)(((const struct condattr *)a)->value >> CA_CLOCK_SHIFT);
	return 0;
}

int ppl_pthread_condattr_setpshared(pthread_condattr_t *a, int pshared)
{
	if (pshared != PTHREAD_PROCESS_PRIVATE && pshared != PTHREAD_PROCESS_SHARED)
		return EINVAL;
	struct condattr *ca = (struct condattr *)a;
	ca->value = (ca->value & ~CA_PSHARED) | (pshared == PTHREAD_PROCESS_SHARED ? CA_PSHARED : 0);
	return 0;
}

int ppl_pthread_condattr_getpshared(const pthread_condattr_t *a, int *pshared)
{
	*pshared = (((const struct condattr *)a)->value & CA_PSHARED) ? PTHREAD_PROCESS_SHARED
								       : PTHREAD_PROCESS_PRIVATE;
	return 0;
}
