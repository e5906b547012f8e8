/* pthread_rwlock_* and pthread_rwlockattr_*.
 *
 * A spin lock guards the whole state: the readers count, the writer, and
 * (private locks) a queue of parked readers and one of parked writers.
 *
 * Invariants (private)
 *  - Ownership is handed over, never re-contended: the thread releasing the
 *    lock sets `writer` to the popped writer's token, or adds the popped
 *    readers to `readers`, under l->lock, then wakes them after dropping
 *    it.  A woken waiter therefore owns the lock when sched_park returns 0;
 *    a waiter that times out was removed from its queue by its timer, under
 *    l->lock, and owns nothing.
 *  - A thread waits only if it cannot take the lock now: a writer holds it,
 *    or (writer) readers hold it, or (reader) a writer is queued and the
 *    kind is PREFER_WRITER_NONRECURSIVE or that writer has a real-time
 *    priority at least the reader's (POSIX's rule for SCHED_FIFO and
 *    SCHED_RR threads; reader_barred).  So whenever l->lock is free, rq is
 *    non-empty only while a writer holds the lock or one is queued, and wq
 *    only while the lock is held.  A writer that times out re-checks that
 *    (it may have been the queued writer readers were waiting behind) and
 *    admits them.
 *  - On release, a writer is preferred if the kind is NONRECURSIVE, no
 *    reader waits or it bars the first reader; otherwise the waiting
 *    readers it does not bar are admitted together (all of them, unless
 *    real-time writers wait).
 *  - `writer` holds the owning writer's token (thread id; with the pid for
 *    process-shared locks) for EDEADLK; `kind` is glibc's __flags at 48.
 *
 * Process-shared locks cannot queue ULTs: waiters count themselves
 * (rwait/wwait), read a sequence word under l->lock and block on it with a
 * shared futex; every release with waiters bumps it and wakes them all, and
 * they re-contend (no hand-over). */
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "config.h"
#include "parklot.h"
#include "preempt.h"
#include "schedhooks.h"
#include "scheduler.h"
#include "ult.h"
#include "waitq.h"

#define MAX_READERS (UINT32_MAX - 1)

struct rwlock {
	spin_t lock;                  /* protects everything below but kind/pshared */
	uint32_t readers;             /* readers holding the lock */
	uint64_t writer;              /* token of the writer holding it, 0 if none */
	union {
		struct {              /* private */
			struct waitq rq;      /* parked readers */
			struct waitq wq;      /* parked writers */
		} p;
		struct {              /* process-shared */
			_Atomic uint32_t seq; /* bumped by each release with waiters */
			uint32_t rwait;       /* readers blocked or about to block */
			uint32_t wwait;       /* writers blocked or about to block */
		} s;
	} u;
	uint32_t kind;                /* glibc __flags (offset 48): PTHREAD_RWLOCK_PREFER_*; set at init */
	uint32_t pshared;             /* set at init */
};

_Static_assert(sizeof(struct rwlock) == sizeof(pthread_rwlock_t), "rwlock overlay size");
_Static_assert(_Alignof(struct rwlock) <= _Alignof(pthread_rwlock_t), "rwlock overlay alignment");
_Static_assert(offsetof(struct rwlock, kind) == 48, "__flags must stay at glibc's offset");

struct rwlockattr {
	int kind;
	int pshared;
};

_Static_assert(sizeof(struct rwlockattr) == sizeof(pthread_rwlockattr_t), "rwlockattr size");
_Static_assert(_Alignof(struct rwlockattr) <= _Alignof(pthread_rwlockattr_t), "rwlockattr align");

static inline struct rwlock *L(pthread_rwlock_t *l)
{
	return (struct rwlock *)l;
}

static uint64_t token_of(const struct rwlock *l, const struct ult *t)
{
	uint64_t id = t->id;
	if (l->pshared)
		id = ((uint64_t)vp_process_id() << 40) | (id & ((1ULL << 40) - 1));
	return id;
}

static inline bool writer_preferred(const struct rwlock *l)
{
	return l->kind == PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP;
}

/* abstime checks done before anything else, as glibc does; no abstime
 * (NULL) is no time limit there, clock or not. */
static int check_time(clockid_t clk, const struct timespec *abstime)
{
	if (abstime == NULL)
		return 0;
	if (clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC)
		return EINVAL;
	if (abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)
		return EINVAL;
	return 0;
}

/* POSIX's rule for real-time threads (Thread Execution Scheduling): a
 * reader of priority `prio` does not get the lock while a writer of a
 * real-time priority at least as high waits.  The queues are ordered by
 * priority, so the first writer is the one that counts.  Priority-0
 * writers bar nobody: SCHED_OTHER threads keep glibc's reader preference.
 * Private locks only (l->lock held). */
static inline bool reader_barred(struct rwlock *l, int prio)
{
	struct ult *w = l->u.p.wq.head;
	if (ppl_likely(w == NULL) || waitq_empty(&l->u.p.wq))
		return false;
	w = l->u.p.wq.head;
	return w->prio > 0 && w->prio >= prio;
}

/* Pop the waiting readers that may read now (no writer holds the lock)
 * into chain, highest priority first. */
static struct ult *admit_readers(struct rwlock *l, struct ult *chain)
{
	struct ult *t;
	while (l->readers < MAX_READERS && !waitq_empty(&l->u.p.rq) &&
	       !reader_barred(l, l->u.p.rq.head->prio)) {
		t = waitq_pop(&l->u.p.rq);
		l->readers++;
		/* Popped threads stay BLOCKED until sched_wake: their link is ours. */
		t->next = chain;
		chain = t;
	}
	return chain;
}

/* Pop what may run now into a chain to wake, l->lock held, lock free. */
static struct ult *grant(struct rwlock *l)
{
	if (!waitq_empty(&l->u.p.wq) &&
	    (writer_preferred(l) || waitq_empty(&l->u.p.rq) ||
	     reader_barred(l, l->u.p.rq.head->prio))) {
		struct ult *t = waitq_pop(&l->u.p.wq);
		l->writer = token_of(l, t);
		t->next = NULL;
		return t;
	}
	return admit_readers(l, NULL);
}

static void wake_chain(struct ult *chain)
{
	while (chain) {
		struct ult *t = chain;
		chain = t->next;
		sched_wake(t);
	}
}

/* ---- process-shared ------------------------------------------------------ */

/* l->lock held; returns with it held.  0 or ETIMEDOUT. */
static int wait_pshared(struct rwlock *l, uint32_t *counter, int64_t deadline)
{
	(*counter)++;
	uint32_t seq = atomic_load_explicit(&l->u.s.seq, memory_order_relaxed);
	spin_unlock(&l->lock);
	int err = pshared_wait(&l->u.s.seq, seq, deadline);
	spin_lock(&l->lock);
	(*counter)--;
	return err;
}

static void wake_pshared(struct rwlock *l)
{
	/* l->lock held */
	if (l->u.s.rwait == 0 && l->u.s.wwait == 0)
		return;
	atomic_fetch_add_explicit(&l->u.s.seq, 1, memory_order_release);
	pshared_wake(&l->u.s.seq, INT_MAX);
}

/* ---- lock ------------------------------------------------------------------ */

static int rdlock(struct rwlock *l, bool try, const struct timespec *abstime, clockid_t clk)
{
	struct ult *self = ult_self();
	uint64_t me = token_of(l, self);
	int64_t deadline = -1;
	spin_lock(&l->lock);
	for (;;) {
		int err = 0;
		if (l->writer == me) {
			err = try ? EBUSY : EDEADLK;
		} else if (l->writer == 0 &&
			   !(writer_preferred(l) &&
			     (l->pshared ? l->u.s.wwait != 0 : !waitq_empty(&l->u.p.wq))) &&
			   (l->pshared || !reader_barred(l, self->prio))) {
			if (l->readers == MAX_READERS) {
				err = EAGAIN;
			} else {
				l->readers++;
			}
		} else if (try) {
			err = EBUSY;
		} else if (abstime && abstime->tv_sec < 0) {
			err = ETIMEDOUT;
		} else if (l->pshared) {
			if (abstime && deadline < 0)
				deadline = deadline_mono_ns(abstime, clk);
			if (wait_pshared(l, &l->u.s.rwait, deadline) == 0)
				continue;
			err = ETIMEDOUT;
		} else {
			waitq_push(&l->u.p.rq, self);
			err = sched_park_flags(&l->lock, &l->u.p.rq, abstime, clk, PARK_INTR);
			if (err != EINTR)
				return err;
			/* Signalled: off the queue, owning nothing; try again. */
			spin_lock(&l->lock);
			continue;
		}
		spin_unlock(&l->lock);
		return err;
	}
}

static int wrlock(struct rwlock *l, bool try, const struct timespec *abstime, clockid_t clk)
{
	struct ult *self = ult_self();
	uint64_t me = token_of(l, self);
	int64_t deadline = -1;
	spin_lock(&l->lock);
	for (;;) {
		int err = 0;
		if (l->writer == me) {
			err = try ? EBUSY : EDEADLK;
		} else if (l->writer == 0 && l->readers == 0) {
			l->writer = me;
		} else if (try) {
			err = EBUSY;
		} else if (abstime && abstime->tv_sec < 0) {
			err = ETIMEDOUT;
		} else if (l->pshared) {
			if (abstime && deadline < 0)
				deadline = deadline_mono_ns(abstime, clk);
			if (wait_pshared(l, &l->u.s.wwait, deadline) == 0)
				continue;
			err = ETIMEDOUT;
			/* Readers may have been waiting behind us only. */
			if (l->u.s.wwait == 0 && l->u.s.rwait != 0 && l->writer == 0)
				wake_pshared(l);
		} else {
			waitq_push(&l->u.p.wq, self);
			err = sched_park_flags(&l->lock, &l->u.p.wq, abstime, clk, PARK_INTR);
			if (err == 0)
				return 0;         /* handed over: l->writer == me */
			/* Timed out or signalled: readers may have been queued
			 * behind us only (or behind our priority, while readers
			 * hold the lock).  A signal ends the park, not the wait. */
			spin_lock(&l->lock);
			struct ult *chain = NULL;
			if (l->writer == 0)
				chain = admit_readers(l, NULL);
			spin_unlock(&l->lock);
			wake_chain(chain);
			if (err != EINTR)
				return err;
			spin_lock(&l->lock);
			continue;
		}
		spin_unlock(&l->lock);
		return err;
	}
}

int ppl_pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
	sched_point();
	return rdlock(L(l), false, NULL, CLOCK_REALTIME);
}

int ppl_pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
	sched_point();
	return rdlock(L(l), true, NULL, CLOCK_REALTIME);
}

int ppl_pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t clk, const struct timespec *ts)
{
	sched_point();
	int err = check_time(clk, ts);
	return err != 0 ? err : rdlock(L(l), false, ts, clk);
}

int ppl_pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *ts)
{
	return ppl_pthread_rwlock_clockrdlock(l, CLOCK_REALTIME, ts);
}

int ppl_pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	sched_point();
	return wrlock(L(l), false, NULL, CLOCK_REALTIME);
}

int ppl_pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
	sched_point();
	return wrlock(L(l), true, NULL, CLOCK_REALTIME);
}

int ppl_pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clk, const struct timespec *ts)
{
	sched_point();
	int err = check_time(clk, ts);
	return err != 0 ? err : wrlock(L(l), false, ts, clk);
}

int ppl_pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *ts)
{
	return ppl_pthread_rwlock_clockwrlock(l, CLOCK_REALTIME, ts);
}

int ppl_pthread_rwlock_unlock(pthread_rwlock_t *pl)
{
	sched_point();
	struct rwlock *l = L(pl);
	spin_lock(&l->lock);
	if (l->writer != 0) {
#if PPL_DEBUG_CHECKS
		if (l->writer != token_of(l, ult_self()))
			ppl_fatal("pthread_rwlock_unlock: rwlock %p is write-locked by another thread",
				  (void *)pl);
#endif
		l->writer = 0;
	} else if (l->readers > 0) {
		if (--l->readers > 0) {
			spin_unlock(&l->lock);
			return 0;
		}
	} else {
		/* Not locked: undefined; glibc returns 0. */
#if PPL_DEBUG_CHECKS
		ppl_fatal("pthread_rwlock_unlock: rwlock %p is not locked", (void *)pl);
#endif
		spin_unlock(&l->lock);
		return 0;
	}
	if (l->pshared) {
		wake_pshared(l);
		spin_unlock(&l->lock);
		return 0;
	}
	struct ult *chain = grant(l);
	spin_unlock(&l->lock);
	/* From here on l may already be destroyed and freed. */
	wake_chain(chain);
	preempt_point();
	return 0;
}

/* ---- life cycle ------------------------------------------------------------ */

int ppl_pthread_rwlock_init(pthread_rwlock_t *pl, const pthread_rwlockattr_t *a)
{
	struct rwlock *l = L(pl);
	memset(l, 0, sizeof *l);
	if (a) {
		const struct rwlockattr *ra = (const struct rwlockattr *)a;
		l->kind = (uint32_t)ra->kind;
		l->pshared = ra->pshared == PTHREAD_PROCESS_SHARED;
	}
	return 0;
}

/* glibc does not check for holders or waiters either; take and drop the
 * lock so that a releasing thread is out of it before the memory is reused. */
int ppl_pthread_rwlock_destroy(pthread_rwlock_t *pl)
{
	struct rwlock *l = L(pl);
	spin_lock(&l->lock);
#if PPL_DEBUG_CHECKS
	if (l->writer != 0 || l->readers != 0)
		ppl_fatal("pthread_rwlock_destroy: rwlock %p is locked", (void *)pl);
#endif
	spin_unlock(&l->lock);
	return 0;
}

int ppl_pthread_rwlockattr_init(pthread_rwlockattr_t *a)
{
	struct rwlockattr *ra = (struct rwlockattr *)a;
	ra->kind = PTHREAD_RWLOCK_DEFAULT_NP;
	ra->pshared = PTHREAD_PROCESS_PRIVATE;
	return 0;
}

int ppl_pthread_rwlockattr_destroy(pthread_rwlockattr_t *a)
{
	(void)a;
	return 0;
}

int ppl_pthread_rwlockattr_setpshared(pthread_rwlockattr_t *a, int pshared)
{
	if (pshared != PTHREAD_PROCESS_PRIVATE && pshared != PTHREAD_PROCESS_SHARED)
		return EINVAL;
	((struct rwlockattr *)a)->pshared = pshared;
	return 0;
}

int ppl_pthread_rwlockattr_getpshared(const pthread_rwlockattr_t *a, int *pshared)
{
	*pshared = ((const struct rwlockattr *)a)->pshared;
	return 0;
}

int ppl_pthread_rwlockattr_setkind_np(pthread_rwlockattr_t *a, int kind)
{
	if (kind != PTHREAD_RWLOCK_PREFER_READER_NP && kind != PTHREAD_RWLOCK_PREFER_WRITER_NP &&
	    kind != PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP)
		return EINVAL;
	((struct rwlockattr *)a)->kind = kind;
	return 0;
}

int ppl_pthread_rwlockattr_getkind_np(const pthread_rwlockattr_t *a, int *kind)
{
	*kind = ((const struct rwlockattr *)a)->kind;
	return 0;
}
