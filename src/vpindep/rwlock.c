/* pthread_rwlock_* and pthread_rwlockattr_*.
 *
 * One atomic word, `state`, says who holds the lock: the readers' count,
 * RW_WRITER, and RW_WAITERS (a thread may wait).  While RW_WAITERS is
 * clear nobody waits, and a lock or unlock is one compare-and-swap on it,
 * as NPTL's; readers on different VPs never meet on a spin lock.  A thread
 * that must wait takes the spin lock `lock`, which guards the rest: the
 * queues of parked readers and writers (private locks) or the waiters'
 * counts (process-shared).
 *
 * Invariants
 *  - RW_WAITERS is set and cleared only under l->lock, set before a
 *    thread queues or counts itself, cleared only when no thread is queued
 *    or counted (it may stay set a while after: a waiter that timed out was
 *    taken off its queue by its timer).  While it is set, no fast path
 *    changes state, so every change happens under l->lock; while it is
 *    clear, a change under l->lock is a compare-and-swap too.
 *  - Setting RW_WAITERS is a compare-and-swap from the state the waiter
 *    found busy: a holder that released the lock meanwhile makes it fail,
 *    and the waiter looks again.  So no release misses a waiter.
 *  - Ownership is handed over, never re-contended (private locks): the
 *    thread releasing the lock sets RW_WRITER and `writer` for the popped
 *    writer, or counts the popped readers in, under l->lock, then wakes
 *    them after dropping it.  A woken waiter therefore owns the lock when
 *    sched_park returns 0; a waiter that times out (or is signalled) was
 *    removed from its queue under l->lock, and owns nothing.
 *  - A thread waits only if it cannot take the lock now: a writer holds it,
 *    or (writer) readers hold it, or (reader) a writer is queued and the
 *    kind is PREFER_WRITER_NONRECURSIVE or that writer has a real-time
 *    priority at least the reader's (POSIX's rule for SCHED_FIFO and
 *    SCHED_RR threads; reader_barred).  A writer that times out re-checks
 *    that (it may have been the queued writer readers were waiting behind)
 *    and admits them.
 *  - On release, a writer is preferred if the kind is NONRECURSIVE, no
 *    reader waits or it bars the first reader; otherwise the waiting
 *    readers it does not bar are admitted together (all of them, unless
 *    real-time writers wait).
 *  - `writer` holds the owning writer's token (thread id; with the pid for
 *    process-shared locks) for EDEADLK: only the owner sets or clears it,
 *    so a thread that reads its own token there holds the lock.  `kind` is
 *    glibc's __flags at 48.
 *
 * Process-shared locks cannot queue ULTs: waiters count themselves
 * (rwait/wwait), read a sequence word under l->lock and block on it with a
 * shared futex; every release that finds RW_WAITERS bumps it and wakes
 * them all, and they re-contend (no hand-over). */
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "config.h"
#include "parklot.h"
#include "preempt.h"
#include "runtime.h"
#include "schedhooks.h"
#include "scheduler.h"
#include "ult.h"
#include "waitq.h"

#define RW_WAITERS  (1u << 31)
#define RW_WRITER   (1u << 30)
#define RW_OPEN     (1u << 29)          /* with RW_WAITERS: see readers_open */
#define RW_READERS  (RW_OPEN - 1)       /* the readers' count */
#define MAX_READERS RW_READERS

struct rwlock {
	spin_t lock;                  /* guards u, and state while RW_WAITERS is set */
	_Atomic uint32_t state;       /* readers | RW_WRITER | RW_WAITERS | RW_OPEN */
	_Atomic uint64_t writer;      /* token of the writer holding it, 0 if none */
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

static inline uint32_t state_of(struct rwlock *l)
{
	return atomic_load_explicit(&l->state, memory_order_relaxed);
}

/* Replace *s by s2 if state still holds *s; else *s is what it holds. */
static inline bool state_cas(struct rwlock *l, uint32_t *s, uint32_t s2)
{
	return atomic_compare_exchange_strong_explicit(&l->state, s, s2, memory_order_acq_rel,
						       memory_order_relaxed);
}

static inline uint64_t writer_of(struct rwlock *l)
{
	return atomic_load_explicit(&l->writer, memory_order_relaxed);
}

static inline void set_writer(struct rwlock *l, uint64_t token)
{
	atomic_store_explicit(&l->writer, token, memory_order_relaxed);
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

/* l->lock held: a thread is queued or counted as waiting. */
static bool has_waiters(struct rwlock *l)
{
	if (l->pshared)
		return l->u.s.rwait != 0 || l->u.s.wwait != 0;
	return !waitq_empty(&l->u.p.rq) || !waitq_empty(&l->u.p.wq);
}

/* l->lock held, waiters queued: while readers hold the lock, more may
 * join and leave it without l->lock (RW_OPEN), as a reader that took
 * l->lock would be let in.  True unless the kind prefers writers or the
 * first waiting writer bars readers (reader_barred; real-time writers).
 * Readers wait only behind a writer holding the lock, or such a writer. */
static bool readers_open(struct rwlock *l)
{
	if (writer_preferred(l))
		return false;
	return l->pshared || waitq_empty(&l->u.p.wq) || l->u.p.wq.head->prio == 0;
}

/* l->lock held: s with RW_WAITERS and RW_OPEN as the queues say. */
static uint32_t settled(struct rwlock *l, uint32_t s)
{
	s &= ~(RW_WAITERS | RW_OPEN);
	if (has_waiters(l))
		s |= readers_open(l) ? RW_WAITERS | RW_OPEN : RW_WAITERS;
	return s;
}

/* l->lock held, RW_WAITERS set and the lock free or write-locked: nobody
 * else changes state (no reader joins or leaves). */
static inline void state_store(struct rwlock *l, uint32_t s)
{
	atomic_store_explicit(&l->state, settled(l, s), memory_order_release);
}

/* l->lock held, the queues changed: RW_WAITERS and RW_OPEN after them
 * (clears a stale RW_WAITERS after a waiter timed out; readers may be
 * joining or leaving meanwhile). */
static void settle(struct rwlock *l)
{
	uint32_t s = state_of(l);
	while ((s & RW_WAITERS) != 0) {
		uint32_t s2 = settled(l, s);
		if (s2 == s || state_cas(l, &s, s2))
			break;
	}
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

/* l->lock held, no writer holding the lock: a reader of priority prio
 * waits behind a waiting writer all the same. */
static bool reader_waits(struct rwlock *l, int prio)
{
	if (l->pshared)
		return writer_preferred(l) && l->u.s.wwait != 0;
	if (writer_preferred(l) && !waitq_empty(&l->u.p.wq))
		return true;
	return reader_barred(l, prio);
}

/* Pop the waiting readers that may read now (no writer holds the lock)
 * into chain, highest priority first, counting them in *s. */
static struct ult *admit_readers(struct rwlock *l, uint32_t *s, struct ult *chain)
{
	struct ult *t;
	while ((*s & RW_READERS) < MAX_READERS && !waitq_empty(&l->u.p.rq) &&
	       !reader_barred(l, l->u.p.rq.head->prio)) {
		t = waitq_pop(&l->u.p.rq);
		(*s)++;
		/* Popped threads stay BLOCKED until sched_wake: their link is ours. */
		t->next = chain;
		chain = t;
	}
	return chain;
}

/* Pop what may run now into a chain to wake, l->lock held, lock free
 * (*s has neither RW_WRITER nor readers): hand it over in *s. */
static struct ult *grant(struct rwlock *l, uint32_t *s)
{
	if (!waitq_empty(&l->u.p.wq) &&
	    (writer_preferred(l) || waitq_empty(&l->u.p.rq) ||
	     reader_barred(l, l->u.p.rq.head->prio))) {
		struct ult *t = waitq_pop(&l->u.p.wq);
		set_writer(l, token_of(l, t));
		*s |= RW_WRITER;
		t->next = NULL;
		return t;
	}
	return admit_readers(l, s, NULL);
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

/* l->lock held, RW_WAITERS set; returns with it held.  0 or ETIMEDOUT. */
static int wait_pshared(struct rwlock *l, uint32_t *counter, const struct timespec *abstime,
			clockid_t clk)
{
	(*counter)++;
	settle(l);
	uint32_t seq = atomic_load_explicit(&l->u.s.seq, memory_order_relaxed);
	spin_unlock(&l->lock);
	int err = pshared_wait(&l->u.s.seq, seq, abstime, clk);
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

/* A reader may join without l->lock: nobody waits and no writer holds
 * the lock, or readers hold it and RW_OPEN lets more in. */
static inline bool reader_may_join(uint32_t s)
{
	if ((s & RW_WRITER) != 0 || (s & RW_READERS) == MAX_READERS)
		return false;
	return (s & RW_WAITERS) == 0 || ((s & RW_OPEN) != 0 && (s & RW_READERS) != 0);
}

/* A reader may leave without l->lock: nobody waits, or RW_OPEN and it is
 * not the last reader (the last one hands the lock to the waiters). */
static inline bool reader_may_leave(uint32_t s)
{
	return (s & RW_WAITERS) == 0 || ((s & RW_OPEN) != 0 && (s & RW_READERS) > 1);
}

/* The uncontended read lock. */
static inline bool rdlock_fast(struct rwlock *l)
{
	uint32_t s = state_of(l);
	while (reader_may_join(s)) {
		if (state_cas(l, &s, s + 1))
			return true;
	}
	return false;
}

/* The uncontended write lock: nobody holds it or waits. */
static inline bool wrlock_fast(struct rwlock *l)
{
	uint32_t s = 0;
	if (state_of(l) != 0 || !state_cas(l, &s, RW_WRITER))
		return false;
	set_writer(l, token_of(l, ult_self()));
	return true;
}

/* Polls of a busy lock before a thread waits, when the holder may run on
 * another VP: the lock's holders stay inside it a short while (a writer
 * in a read-mostly table), and a parked thread costs two switches and
 * sends the lock's other threads to the slow path while it waits.  Only
 * while nobody waits: a queued thread is handed the lock first.  (50 to
 * 4,000 polls measured the same in bench_rwlock.) */
#define RW_SPINS 200

static bool spin_for(struct rwlock *l, bool writer)
{
	if (ppl_rt.nvps < 2)
		return false;
	for (int i = 0; i < RW_SPINS; i++) {
		cpu_relax();
		if (writer ? wrlock_fast(l) : rdlock_fast(l))
			return true;
		if ((state_of(l) & RW_WAITERS) != 0)
			return false;
	}
	return false;
}

static int rdlock(struct rwlock *l, bool try, const struct timespec *abstime, clockid_t clk)
{
	struct ult *self = ult_self();
	if (writer_of(l) == token_of(l, self))
		return try ? EBUSY : EDEADLK;
	if (!try && spin_for(l, false))
		return 0;
	spin_lock(&l->lock);
	for (;;) {
		int err = 0;
		uint32_t s = state_of(l);
		if ((s & RW_WRITER) == 0 &&
		    ((s & RW_WAITERS) == 0 || !reader_waits(l, self->prio))) {
			if ((s & RW_READERS) == MAX_READERS)
				err = EAGAIN;
			else if (!state_cas(l, &s, settled(l, s + 1)))
				continue;  /* a fast path came first */
		} else if (try) {
			err = EBUSY;
		} else if (abstime && abstime->tv_sec < 0) {
			err = ETIMEDOUT;
		} else if ((s & RW_WAITERS) == 0 && !state_cas(l, &s, s | RW_WAITERS)) {
			continue;          /* changed: look again */
		} else if (l->pshared) {
			if (wait_pshared(l, &l->u.s.rwait, abstime, clk) == 0)
				continue;
			err = ETIMEDOUT;
			settle(l);
		} else {
			waitq_push(&l->u.p.rq, self);
			settle(l);
			err = sched_park_flags(&l->lock, &l->u.p.rq, abstime, clk, PARK_INTR);
			if (err == 0)
				return 0;  /* handed over: counted in */
			spin_lock(&l->lock);
			if (err == EINTR)
				continue;  /* signalled: off the queue, owning nothing */
			settle(l);
		}
		spin_unlock(&l->lock);
		return err;
	}
}

static int wrlock(struct rwlock *l, bool try, const struct timespec *abstime, clockid_t clk)
{
	struct ult *self = ult_self();
	uint64_t me = token_of(l, self);
	if (writer_of(l) == me)
		return try ? EBUSY : EDEADLK;
	if (!try && spin_for(l, true))
		return 0;
	spin_lock(&l->lock);
	for (;;) {
		int err = 0;
		uint32_t s = state_of(l);
		if ((s & (RW_WRITER | RW_READERS)) == 0) {
			if (!state_cas(l, &s, settled(l, s | RW_WRITER)))
				continue;
			set_writer(l, me);
		} else if (try) {
			err = EBUSY;
		} else if (abstime && abstime->tv_sec < 0) {
			err = ETIMEDOUT;
		} else if ((s & RW_WAITERS) == 0 && !state_cas(l, &s, s | RW_WAITERS)) {
			continue;
		} else if (l->pshared) {
			if (wait_pshared(l, &l->u.s.wwait, abstime, clk) == 0)
				continue;
			err = ETIMEDOUT;
			/* Readers may have been waiting behind us only. */
			if (l->u.s.wwait == 0 && l->u.s.rwait != 0 && (state_of(l) & RW_WRITER) == 0)
				wake_pshared(l);
			settle(l);
		} else {
			waitq_push(&l->u.p.wq, self);
			settle(l);  /* a real-time writer closes RW_OPEN */
			err = sched_park_flags(&l->lock, &l->u.p.wq, abstime, clk, PARK_INTR);
			if (err == 0)
				return 0;         /* handed over: writer == me */
			/* Timed out or signalled: readers may have been queued
			 * behind us only (or behind our priority, while readers
			 * hold the lock).  A signal ends the park, not the wait.
			 * RW_WAITERS clear: nobody is queued. */
			spin_lock(&l->lock);
			struct ult *chain = NULL;
			s = state_of(l);
			if ((s & RW_WAITERS) != 0) {
				/* Readers join meanwhile only if RW_OPEN: count ours in. */
				uint32_t n = 0;
				if ((s & RW_WRITER) == 0)
					chain = admit_readers(l, &n, NULL);
				while (!state_cas(l, &s, settled(l, s + n)))
					;
			}
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
	return rdlock_fast(L(l)) ? 0 : rdlock(L(l), false, NULL, CLOCK_REALTIME);
}

int ppl_pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
	sched_point();
	return rdlock_fast(L(l)) ? 0 : rdlock(L(l), true, NULL, CLOCK_REALTIME);
}

int ppl_pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t clk, const struct timespec *ts)
{
	sched_point();
	int err = check_time(clk, ts);
	if (err != 0)
		return err;
	return rdlock_fast(L(l)) ? 0 : rdlock(L(l), false, ts, clk);
}

int ppl_pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *ts)
{
	return ppl_pthread_rwlock_clockrdlock(l, CLOCK_REALTIME, ts);
}

int ppl_pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	sched_point();
	return wrlock_fast(L(l)) ? 0 : wrlock(L(l), false, NULL, CLOCK_REALTIME);
}

int ppl_pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
	sched_point();
	return wrlock_fast(L(l)) ? 0 : wrlock(L(l), true, NULL, CLOCK_REALTIME);
}

int ppl_pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clk, const struct timespec *ts)
{
	sched_point();
	int err = check_time(clk, ts);
	if (err != 0)
		return err;
	return wrlock_fast(L(l)) ? 0 : wrlock(L(l), false, ts, clk);
}

int ppl_pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *ts)
{
	return ppl_pthread_rwlock_clockwrlock(l, CLOCK_REALTIME, ts);
}

/* l->lock held, RW_WAITERS set, s the state with the caller's hold
 * dropped and no holder left: hand the lock to its waiters. */
static void release_to_waiters(struct rwlock *l, uint32_t s)
{
	if (l->pshared) {
		state_store(l, s);
		wake_pshared(l);
		spin_unlock(&l->lock);
		return;
	}
	struct ult *chain = grant(l, &s);
	state_store(l, s);
	spin_unlock(&l->lock);
	/* From here on l may already be destroyed and freed. */
	wake_chain(chain);
}

/* The state with the caller's hold dropped: its write lock, or one read. */
static inline uint32_t drop_hold(uint32_t s)
{
	return (s & RW_WRITER) != 0 ? s & ~RW_WRITER : s - 1;
}

/* l->lock held, s read since: drop the caller's hold, and hand the lock
 * to the waiters if it was the last.  False (nothing done, l->lock still
 * held) if RW_WAITERS is clear; else l->lock is dropped. */
static bool release_locked(struct rwlock *l, uint32_t s)
{
	for (;;) {
		if ((s & RW_WAITERS) == 0)
			return false;
		uint32_t s2 = drop_hold(s);
		if ((s2 & (RW_WRITER | RW_READERS)) != 0) {
			/* Other readers hold it still; with RW_OPEN they may
			 * be joining and leaving. */
			if (!state_cas(l, &s, settled(l, s2)))
				continue;
			spin_unlock(&l->lock);
			return true;
		}
		/* Free with RW_WAITERS set: nobody else changes state now. */
		if (!state_cas(l, &s, s2))
			continue;
		release_to_waiters(l, s2);
		return true;
	}
}

int ppl_pthread_rwlock_unlock(pthread_rwlock_t *pl)
{
	sched_point();
	struct rwlock *l = L(pl);
	uint32_t s = state_of(l);
	if ((s & RW_WRITER) != 0) {
#if PPL_DEBUG_CHECKS
		if (writer_of(l) != token_of(l, ult_self()))
			ppl_fatal("pthread_rwlock_unlock: rwlock %p is write-locked by another thread",
				  (void *)pl);
#endif
		set_writer(l, 0);  /* before RW_WRITER goes: the next writer sets its own */
	} else if ((s & RW_READERS) == 0) {
		/* Not locked: undefined; glibc returns 0. */
#if PPL_DEBUG_CHECKS
		ppl_fatal("pthread_rwlock_unlock: rwlock %p is not locked", (void *)pl);
#endif
		return 0;
	}
	for (;;) {
		if ((s & RW_WRITER) != 0 ? (s & RW_WAITERS) == 0 : reader_may_leave(s)) {
			if (state_cas(l, &s, drop_hold(s)))
				break;
			continue;
		}
		spin_lock(&l->lock);
		s = state_of(l);
		if (release_locked(l, s))
			break;
		spin_unlock(&l->lock);  /* settled meanwhile: nobody waits */
		s = state_of(l);
	}
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
 * lock so that a releasing thread is out of it before the memory is reused
 * (a release that found waiters stores the state before it drops l->lock). */
int ppl_pthread_rwlock_destroy(pthread_rwlock_t *pl)
{
	struct rwlock *l = L(pl);
	spin_lock(&l->lock);
#if PPL_DEBUG_CHECKS
	if ((state_of(l) & (RW_WRITER | RW_READERS)) != 0)
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
